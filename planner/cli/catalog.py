"""``planner catalog``: list the model and GPU catalogs, look a name up, write them as a workbook."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from planner.catalog import lookup as catalog
from planner.catalog.lookup import GPU, MODEL, Entry

EPILOG = """\
examples:
  planner catalog                          # both catalogs as tables, each entry with its source
  planner catalog --gpus                   # only the GPUs
  planner catalog "llama 3.1 70b"          # which entry a name finds (the rules the reader uses)
  planner catalog --xlsx catalogs.xlsx     # an input workbook holding every entry as a row

A Models or GPUs row whose name (or catalog cell) names an entry takes every blank cell
from it; typed cells win. Models match case-insensitively, with or without the organisation
prefix (meta-llama/...), base and instruct variants alike; GPU names ignore case, spaces,
hyphens and underscores.
"""

MODEL_COLS = (("name", "name"), ("attention", "attn"), ("layers", "layers"), ("heads", "heads"),
              ("kv_heads", "kv_heads"), ("head_dim", "head_dim"), ("mla_kv_dim", "mla_kv_dim"),
              ("params_b", "params_b"), ("active_params_b", "active_b"), ("experts", "experts"),
              ("kv_per_token", "KV B/token"))
GPU_COLS = (("name", "name"), ("vendor", "vendor"), ("hbm_gib", "hbm_gib"), ("hbm_tbps", "hbm_tbps"),
            ("bf16_tflops", "bf16_tflops"), ("fp8_tflops", "fp8_tflops"), ("host_link", "host link"),
            ("pcie_gbps", "pcie_gbps"))


def add_parser(sub) -> None:
    """Declare ``planner catalog`` on the CLI's subparsers."""
    p = sub.add_parser("catalog", help="list the model and GPU catalogs (or write them as a workbook)",
                       description="List the model and GPU catalogs shipped with the planner: the entries a "
                                   "Models or GPUs row can name to have its blank cells filled.",
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG)
    p.add_argument("name", nargs="?", help="show only the entry this name finds (or entries containing it)")
    p.add_argument("--models", action="store_true", help="only the model catalog")
    p.add_argument("--gpus", action="store_true", help="only the GPU catalog")
    p.add_argument("--xlsx", type=Path, metavar="PATH",
                   help="write the catalogs as an input workbook (Models and GPUs sheets with the input "
                        "headers: copy rows from it, or add Workloads rows and plan it)")
    p.add_argument("--force", action="store_true", help="with --xlsx: replace an existing file")


def _kinds(args) -> tuple[str, ...]:
    if args.models == args.gpus:
        return (MODEL, GPU)
    return (MODEL,) if args.models else (GPU,)


def kv_bytes_per_token(e: Entry) -> float:
    """KV bytes per token of a catalog model on one GPU (tp 1) with a BF16 cache, by the
    planner's own formula (:func:`planner.equations.kvhit.kv_bytes_per_token_gpu`)."""
    from planner.equations.kvhit import kv_bytes_per_token_gpu

    v = e.values
    return float(kv_bytes_per_token_gpu(v["attention"] or "gqa", v["layers"] or 0, v["kv_heads"] or 0,
                                        v["head_dim"] or 0, v["mla_kv_dim"] or 0, catalog.CATALOG_KV_BYTES, 1))


def _row(e: Entry) -> dict[str, Any]:
    r = {"name": e.name, **e.values}
    if e.kind == MODEL:
        r["kv_per_token"] = kv_bytes_per_token(e) if e.values.get("layers") else None
    else:
        r["vendor"], r["host_link"] = e.org, e.raw.get("host_link")
    return r


def _show(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.0f}" if v.is_integer() else f"{v:,.3g}" if abs(v) < 10 else f"{v:,.2f}".rstrip("0").rstrip(".")
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def table_text(kind: str, chosen: list[Entry]) -> str:
    """A catalog as an aligned text table, each entry followed by its aliases and source."""
    cols = MODEL_COLS if kind == MODEL else GPU_COLS
    rows = [[_show(_row(e)[k]) for k, _ in cols] for e in chosen]
    widths = [max([len(h)] + [len(r[j]) for r in rows]) for j, (_, h) in enumerate(cols)]
    fmt = lambda cells: "  ".join(c.ljust(w) if j == 0 else c.rjust(w)
                                  for j, (c, w) in enumerate(zip(cells, widths))).rstrip()
    label = catalog.LABEL[kind]
    title = f"{label[0].upper()}{label[1:]}: {len(chosen)} entr{'y' if len(chosen) == 1 else 'ies'}"
    if kind == MODEL:
        title += f" (KV B/token: one GPU, BF16 cache, {catalog.CATALOG_KV_BYTES} bytes per element)"
    lines = [title, fmt([h for _, h in cols])]
    for e, r in zip(chosen, rows):
        lines.append(fmt(r))
        if e.aliases:
            lines.append(f"    also: {', '.join(e.aliases)}")
        lines.append(f"    source: {e.source}")
    return "\n".join(lines)


def select(kind: str, name: str | None) -> list[Entry]:
    """Entries to show: all; or the one ``name`` finds; or those whose names contain it."""
    every = list(catalog.entries(kind))
    if not name:
        return every
    hit = catalog.find(name, kind)
    if hit is not None:
        return [hit]
    norm = catalog.model_key if kind == MODEL else catalog.gpu_key
    part = norm(name)
    return [e for e in every if any(part in norm(n) for n in e.names)]


def catalog_records(kind: str, chosen: list[Entry]) -> list[dict]:
    """Rows for an input workbook's Models or GPUs sheet (schema column names, then extras)."""
    out = []
    for e in chosen:
        rec: dict[str, Any] = {kind: e.name, **e.values}
        if kind == MODEL:
            rec["org"] = e.org
        else:
            rec["vendor"], rec["host_link"] = e.org, e.raw.get("host_link")
        rec["aliases"] = "; ".join(e.aliases)
        rec["source"] = e.source
        out.append(rec)
    return out


def write_catalog_workbook(path: Path, kinds: tuple[str, ...], name: str | None = None) -> None:
    from planner.workbook.input_sheets import write_input_workbook

    recs = {k: catalog_records(k, select(k, name)) if k in kinds else [] for k in (MODEL, GPU)}
    write_input_workbook(path, recs[MODEL], recs[GPU], [], {},
                         title="KV-hit capacity planner: model and GPU catalogs (copy rows into your input "
                               "workbook, or add Workloads rows here and plan it)")


def cmd_catalog(args) -> int:
    from planner.cli.options import EXIT_INPUT, EXIT_OK, UsageError

    kinds = _kinds(args)
    if args.xlsx is not None:
        if args.xlsx.suffix.lower() != ".xlsx":
            raise UsageError(f"{args.xlsx}: the catalog workbook must be an .xlsx file")
        if args.xlsx.exists() and not args.force:
            raise UsageError(f"{args.xlsx}: exists already; use --force to replace it")
    chosen = {k: select(k, args.name) for k in kinds}
    if args.name and not any(chosen.values()):
        near = [n for k in kinds for n in catalog.closest(args.name, k)]
        hint = ("closest: " + ", ".join(repr(n) for n in near)) if near else "`planner catalog` lists every entry"
        print(f"planner: {args.name!r} is not in the {' or the '.join(catalog.LABEL[k] for k in kinds)}; {hint}",
              file=sys.stderr)
        return EXIT_INPUT
    if args.xlsx is not None:
        from planner.core.fileio import save_atomic

        save_atomic(args.xlsx, lambda tmp: write_catalog_workbook(tmp, kinds, args.name))
        n = {k: len(v) for k, v in chosen.items()}
        print(f"planner: wrote {args.xlsx} ({n.get(MODEL, 0)} models, {n.get(GPU, 0)} GPUs; input headers)")
        return EXIT_OK
    print("\n\n".join(table_text(k, chosen[k]) for k in kinds if chosen[k]))
    return EXIT_OK
