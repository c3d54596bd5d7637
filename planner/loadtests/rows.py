"""Measurements rows from normalised runs (the workbook is written by :mod:`planner.cli.measurements`;
the reader fills the rows that name a file, :mod:`planner.inputs.measurement_files`).

What a result file does not say comes from the options (``--model``, ``--gpu``, ``--tp``,
``--hit``), else from an existing input workbook (``--input``: its Models/GPUs rows, and the
gpu and tp of the one Workloads deployment of the model), else it is named as missing (a located
problem; nothing is written). ``hit`` left blank is allowed, with a note: the row then has to be
completed by hand before ``planner run`` reads it (``hit`` is required there).

Column filling (issue 18): ``ttft_ms`` is the mean TTFT when the file has it (``ttft_stat`` =
``mean``), else the median, p90 or p99 it has, named in ``ttft_stat``; the statistics the file has
are also in ``ttft_p50_ms``, ``ttft_p90_ms``, ``ttft_p99_ms``; ``tpot_ms`` and ``itl_ms`` are means;
``isl``/``osl`` are mean lengths per completed request; ``num_requests`` counts completed requests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from planner.catalog import lookup as catalog
from planner.catalog.lookup import GPU, MODEL
from planner.loadtests.common import LoadTestError, Run

STAT_ORDER = ("mean", "median", "p90", "p99")
EXTRAS = ("kv_load_gbps", "note")  # passed-through columns (the reader keeps extra columns)


@dataclass
class Options:
    model: str | None = None
    gpu: str | None = None
    tp: int | None = None
    hit: float | None = None
    allow_failed: bool = False
    workbook: Any = None  # a planner.inputs.reader.PlanInput (``--input``), or None


def _match_rows(name: str, table, kind: str) -> list[str]:
    """Names of the rows of a Models/GPUs table that ``name`` names: the same name ignoring case
    and spaces, or the same catalog entry (the row's name or its ``catalog`` cell)."""
    key = catalog.model_key if kind == MODEL else catalog.gpu_key
    col = "model" if kind == MODEL else "gpu"
    entry = catalog.find(name, kind)
    out = []
    for rec in table.records:
        row = rec.get(col)
        if row is None:
            continue
        same = key(str(row)) == key(name)
        if not same and entry is not None:
            same = catalog.find(rec.get("catalog") or row, kind) == entry
        if same and str(row) not in out:
            out.append(str(row))
    return out


def resolve(name: str, kind: str, opts: Options, place: str, what: str) -> str:
    """The Models/GPUs name to write for ``name``: the input workbook's row, else the catalog entry."""
    wb = opts.workbook
    if wb is not None:
        table = wb.models if kind == MODEL else wb.gpus
        rows = _match_rows(name, table, kind)
        if len(rows) == 1:
            return rows[0]
        if len(rows) > 1:
            raise LoadTestError(place, f"{what} {name!r} matches {len(rows)} rows of {table.sheet} "
                                       f"({', '.join(rows)}): give --{'model' if kind == MODEL else 'gpu'} with one")
    entry = catalog.find(name, kind)
    if entry is not None:
        return entry.name
    where = f" nor a row of {(wb.models if kind == MODEL else wb.gpus).sheet}" if wb is not None else ""
    hint = "" if wb is not None else f" (a team's own name: give --input WORKBOOK whose {kind.capitalize() + 's' if kind == MODEL else 'GPUs'} sheet has it)"
    raise LoadTestError(place, f"{what} {name!r} is not in the {kind} catalog{where}; "
                               f"{catalog.closest_text(name, kind)}{hint}")


def _deployments(opts: Options, model: str) -> list[tuple[str, int]]:
    wb = opts.workbook
    if wb is None:
        return []
    out = []
    for rec in wb.workloads.records:
        if str(rec.get("model", "")).strip().lower() == model.strip().lower() and rec.get("gpu") and rec.get("tp"):
            d = (str(rec["gpu"]), int(rec["tp"]))
            if d not in out:
                out.append(d)
    return out


def row_of(r: Run, opts: Options) -> tuple[dict, list[str]]:
    """One Measurements row (column -> value) and its notes; raises the first located problem."""
    notes = list(r.notes)
    place = r.place
    if r.failure_text and not r.failed:
        if not opts.allow_failed:
            raise LoadTestError(place, r.failure_text + ": rerun the test, or give --allow-failed to keep the row")
        notes.append(r.failure_text)
    if r.failed:
        total = (r.num_requests or 0) + r.failed
        msg = f"{r.failed} of {total} requests failed; the statistics cover only the {r.num_requests} completed"
        if not opts.allow_failed:
            raise LoadTestError(place, msg + ": rerun the test, or give --allow-failed to keep the row "
                                             "(its note says so)")
        notes.append(msg)
    if not r.ttft:
        raise LoadTestError(place, "has no TTFT statistic (the endpoint did not stream, or nothing completed)")
    if r.isl is None:
        raise LoadTestError(place, "has no input length (no total or mean input tokens)")
    model_name = opts.model or r.model
    if not model_name:
        raise LoadTestError(place, "names no model: give --model NAME (a Models row or a catalog model)")
    model = resolve(model_name, MODEL, opts, place, "model")
    fa, fb = (catalog.find(n, MODEL) if n else None for n in (r.model, opts.model))
    if opts.model and r.model and ((fa != fb) if (fa or fb) else r.model.lower() != opts.model.lower()):
        notes.append(f"model {opts.model} from --model; the file says {r.model}")
    deps = _deployments(opts, model)
    gpu_name = opts.gpu or r.gpu
    tp = opts.tp or r.tp
    if opts.tp and r.tp and opts.tp != r.tp:
        notes.append(f"tp {opts.tp} from --tp; the file's metadata says {r.tp}")
    if opts.gpu and r.gpu and catalog.gpu_key(opts.gpu) != catalog.gpu_key(r.gpu):
        notes.append(f"gpu {opts.gpu} from --gpu; the file's metadata says {r.gpu}")
    if (gpu_name is None or tp is None) and deps:
        cands = [d for d in deps if (gpu_name is None or catalog.gpu_key(d[0]) == catalog.gpu_key(gpu_name))
                 and (tp is None or d[1] == tp)]
        if len(cands) == 1:
            gpu_name = gpu_name or cands[0][0]
            tp = tp or cands[0][1]
            notes.append(f"gpu {cands[0][0]} and tp {cands[0][1]} from the Workloads of {opts.workbook.path.name}")
        elif len(cands) > 1:
            listed = ", ".join(f"{g} tp {t}" for g, t in cands)
            raise LoadTestError(place, f"the input workbook runs {model} on {listed}: give --gpu and --tp")
    missing = [w for w, v in (("GPU (--gpu NAME)", gpu_name), ("tp (--tp N)", tp)) if v is None]
    if missing:
        raise LoadTestError(place, f"the file does not say its {' and '.join(missing)}: give "
                                   f"{'them' if len(missing) > 1 else 'it'} as option{'s' if len(missing) > 1 else ''}"
                                   f", or --input WORKBOOK whose Workloads run {model} on one deployment")
    gpu = resolve(str(gpu_name), GPU, opts, place, "GPU")
    hit = r.hit
    if hit is not None and not 0 <= hit <= 1:
        raise LoadTestError(place, f"hit {hit:g} ({r.hit_source}) is outside [0, 1]")
    if hit is None and opts.hit is not None:
        hit = opts.hit
        notes.append(f"hit {opts.hit:g} from --hit (the file has no prefix-cache figure)")
    elif hit is not None and opts.hit is not None and abs(hit - opts.hit) > 1e-12:
        notes.append(f"hit {hit:.4g} from {r.hit_source}; --hit {opts.hit:g} not used")
    elif hit is None:
        notes.append("hit is blank: the file carries no prefix-cache hit ratio; type it (0 with prefix "
                     "caching off) or give --hit, before planner run reads this row")
    elif r.hit_source:
        notes.append(f"hit from {r.hit_source}")
    if r.scheduler:
        notes.append(f"scheduler {r.scheduler} from {r.scheduler_source}")
    stat = next(s for s in STAT_ORDER if s in r.ttft)
    if stat != "mean":
        notes.append(f"ttft_ms is the {stat}: the file has no mean TTFT")
    row = {
        "model": model, "gpu": gpu, "tp": int(tp), "isl": r.isl, "hit": hit, "ttft_ms": r.ttft[stat],
        "osl": r.osl, "tpot_ms": r.tpot_ms, "concurrency": r.concurrency, "ttft_stat": stat,
        "request_rate": r.request_rate, "num_requests": r.num_requests, "duration_s": r.duration_s,
        "ttft_p50_ms": r.ttft.get("median"), "ttft_p90_ms": r.ttft.get("p90"), "ttft_p99_ms": r.ttft.get("p99"),
        "itl_ms": r.itl_ms, "request_throughput": r.request_throughput, "output_throughput": r.output_throughput,
        "total_throughput": r.total_throughput, "source": r.source,
        "kv_load_gbps": r.kv_load_gbps, "scheduler": r.scheduler, "note": "; ".join(notes) or None,
    }
    return row, notes


def build_rows(runs: list[Run], opts: Options) -> tuple[list[dict], list[tuple[str, str]], list[LoadTestError]]:
    """Rows, (place, note) pairs, and every problem at once."""
    rows, notes, problems = [], [], []
    for r in runs:
        try:
            row, ns = row_of(r, opts)
        except LoadTestError as err:
            problems.append(err)
            continue
        rows.append(row)
        notes += [(r.place, n) for n in ns]
    return rows, notes, problems
