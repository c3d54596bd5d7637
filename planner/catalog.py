"""Model and GPU catalogs shipped with the package (README "Catalogs"): lookup by name and filling.

``planner/data/models.json`` and ``planner/data/gpus.json`` hold one entry per model or GPU,
each citing its source (the model's ``config.json``, the vendor's datasheet). A ``Models`` or
``GPUs`` row whose name (or whose ``catalog`` cell, when the row's own name is a team label)
matches an entry takes every **blank** cell from it; a typed cell always wins.
:func:`fill_table` is the reader's hook: it fills the blank cells of a :class:`~planner.reader.Table`
and records where each filled value came from in ``Table.filled`` (column -> provenance text),
which the writer turns into styled, commented cells.

Matching (:func:`find`):

* models: case-insensitive, with or without the organisation prefix
  (``meta-llama/Llama-3.1-70B-Instruct`` = ``Llama-3.1-70B-Instruct``), spaces and underscores
  read as hyphens, the entry's aliases too; then base/instruct variants of one architecture
  (``-Instruct``, ``-Base``, ``-Chat``, ``-it`` dropped on both sides). A version is part of
  the name: ``Mistral-7B-v0.1`` is not ``Mistral-7B-v0.3``, ``DeepSeek-V2`` is not
  ``DeepSeek-V3`` (issue 17): a name that differs from an entry only in its trailing version
  (or lacks it) is not filled; the message names the entry as a did-you-mean
  (:func:`version_hint`);
* GPUs: case, spaces, hyphens and underscores ignored (``h100-sxm`` = ``H100 SXM``), and a
  leading vendor name (``NVIDIA H200``).
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any, Iterable

from . import schema
from .errors import Problem

MODEL, GPU = "model", "gpu"
SHEET_OF = {MODEL: "Models", GPU: "GPUs"}
KIND_OF = {"Models": MODEL, "GPUs": GPU}
LABEL = {MODEL: "model catalog", GPU: "GPU catalog"}

# catalog field -> schema column (1:1 names; every one a declared column of its sheet)
MODEL_FIELDS = ("attention", "layers", "kv_heads", "head_dim", "mla_kv_dim", "params_b", "heads",
                "hidden_size", "intermediate_size", "active_params_b", "experts", "experts_per_token")
GPU_FIELDS = ("hbm_gib", "pcie_gbps", "pcie_gen", "hbm_tbps", "bf16_tflops", "fp8_tflops")
FIELDS = {MODEL: MODEL_FIELDS, GPU: GPU_FIELDS}
CATALOG_KV_BYTES = 2  # kv_bytes blank on a catalog model: a BF16/FP16 KV cache (said in a note)

_VARIANT_TOKENS = frozenset({"instruct", "base", "chat", "it", "hf"})
_VERSION = re.compile(r"-v\d+(\.\d+)*$")
_VENDORS = ("nvidia", "amd", "instinct")


@dataclass(frozen=True)
class Entry:
    """One catalog entry: its name, the values of its fields and where they come from."""

    kind: str                      # "model" or "gpu"
    name: str
    values: dict[str, Any]         # schema column -> value (None: the catalog does not give it)
    source: str
    aliases: tuple[str, ...] = ()
    org: str = ""                  # organisation (models) or vendor (GPUs)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)  # the whole entry

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    def provenance(self) -> str:
        """Where a filled value came from: ``catalog: <entry> (<source>)``."""
        return f"catalog: {self.name} ({self.source})"


# --------------------------------------------------------------------------- loading
def _load(kind: str) -> tuple[Entry, ...]:
    fname, key = ("models.json", "models") if kind == MODEL else ("gpus.json", "gpus")
    text = resources.files("planner").joinpath("data", fname).read_text(encoding="utf-8")
    out = []
    for rec in json.loads(text)[key]:
        values = {f: rec.get(f) for f in FIELDS[kind]}
        org = rec.get("org") if kind == MODEL else rec.get("vendor")
        out.append(Entry(kind, str(rec["name"]), values, str(rec.get("source") or ""),
                         tuple(str(a) for a in rec.get("aliases") or ()), str(org or ""), dict(rec)))
    return tuple(out)


@cache
def entries(kind: str) -> tuple[Entry, ...]:
    """Every entry of the ``"model"`` or ``"gpu"`` catalog, in file order (loaded once)."""
    if kind not in FIELDS:
        raise ValueError(f"kind must be {MODEL!r} or {GPU!r}, not {kind!r}")
    return _load(kind)


# --------------------------------------------------------------------------- matching
def model_key(name: str) -> str:
    """``' meta-llama/Llama 3.1_70B-Instruct '`` -> ``'llama-3.1-70b-instruct'``."""
    text = str(name).strip().lower().rsplit("/", 1)[-1]
    return re.sub(r"[\s_\-]+", "-", text).strip("-")


def _variant_key(key: str) -> str:
    """A model key without its base/instruct marks: ``llama-3.1-70b-instruct`` -> ``llama-3.1-70b``."""
    return "-".join(t for t in key.split("-") if t not in _VARIANT_TOKENS)


def gpu_key(name: str) -> str:
    """``' H100-SXM_5 '`` -> ``'h100sxm5'``: case, spaces, hyphens and underscores ignored."""
    return re.sub(r"[\s_\-]+", "", str(name).lower())


def _gpu_vendorless(key: str) -> str:
    for v in _VENDORS:
        if key.startswith(v) and len(key) > len(v):
            key = key[len(v):]
    return key


@cache
def _index(kind: str) -> tuple[dict[str, Entry], ...]:
    """Lookup tables, most exact first: each maps a normalised name to the first entry with it."""
    levels: list[dict[str, Entry]] = [{}, {}]
    for e in entries(kind):
        for n in e.names:
            for level, key in zip(levels, _keys(n, kind)):
                level.setdefault(key, e)
    return tuple(levels)


def _keys(name: Any, kind: str) -> tuple[str, ...]:
    """The matching keys of a name, most exact first (the same for catalog names and typed ones)."""
    if kind == MODEL:
        k = model_key(name)
        return k, _variant_key(k)
    k = gpu_key(name)
    return k, _gpu_vendorless(k)


def find(name: Any, kind: str) -> Entry | None:
    """The catalog entry ``name`` names (see the module docstring for the rules), or None."""
    if name is None or not str(name).strip():
        return None
    for level, key in zip(_index(kind), _keys(name, kind)):
        if key in level:
            return level[key]
    return None


def closest(name: Any, kind: str, n: int = 3) -> list[str]:
    """Up to ``n`` catalog names most like ``name`` (difflib), for messages; aliases count
    but the entry's own name is returned."""
    norm = model_key if kind == MODEL else gpu_key
    by_key: dict[str, str] = {}
    for e in entries(kind):
        for alias in e.names:
            by_key.setdefault(norm(alias), e.name)
    out: list[str] = []
    for key in difflib.get_close_matches(norm(name), list(by_key), n=4 * n, cutoff=0.5):
        if by_key[key] not in out:
            out.append(by_key[key])
    return out[:n]


def version_hint(name: Any) -> list[str]:
    """Catalog models that differ from ``name`` only in the trailing version (``-v0.3``,
    ``-V3``) or its absence: never filled from, named in the message instead."""
    want = _VERSION.sub("", _variant_key(model_key(name)))
    out: list[str] = []
    for e in entries(MODEL):
        if any(_VERSION.sub("", _variant_key(model_key(n))) == want for n in e.names) and e.name not in out:
            out.append(e.name)
    return out


def closest_text(name: Any, kind: str) -> str:
    """``"closest: 'A', 'B'"`` or a pointer to ``planner catalog`` when nothing is close; a
    catalog model of another version is named first, as not the same model."""
    if kind == MODEL and (other := version_hint(name)):
        return f"did you mean {' or '.join(repr(x) for x in other)}? the catalog has that version, not this one"
    near = closest(name, kind)
    if near:
        return "closest: " + ", ".join(repr(x) for x in near)
    return f"`planner catalog --{SHEET_OF[kind].lower()}` lists the entries"


# --------------------------------------------------------------------------- filling
def _cell(table, name: str, i: int) -> str:
    """The place of a cell of ``table`` for messages (the reader's rule)."""
    from .input_checks import _cell as reader_cell  # local: the input checks import this module

    return reader_cell(table, table.positions, name, i)


def entry_of_row(table, sheet: str, i: int) -> tuple[Entry | None, bool]:
    """The entry row ``i`` names and whether it names one explicitly (its ``catalog`` cell)."""
    rec = table.records[i]
    kind = KIND_OF[sheet]
    explicit = rec.get("catalog")
    if explicit is not None:
        return find(explicit, kind), True
    return find(rec.get(kind), kind), False


def fill_table(table, sheet: str, problems: list[Problem], notes: list[str]) -> None:
    """Fill the blank cells of every row of a Models or GPUs ``table`` that names a catalog
    entry, in place; set ``table.filled`` (one dict per record: column -> provenance).

    A ``catalog`` cell that names no entry is a problem at that cell, with the closest names.
    ``kv_bytes`` left blank on a catalog model becomes 2 (BF16), said once in ``notes``.
    """
    kind = KIND_OF.get(sheet)
    if kind is None:
        return
    cols = {c.name: c for c in schema.columns(sheet)}
    from .cells import parse_value  # local: the reader calls this module

    filled: list[dict[str, str]] = []
    kv_default: list[str] = []
    for i, rec in enumerate(table.records):
        got: dict[str, str] = {}
        filled.append(got)
        entry, explicit = entry_of_row(table, sheet, i)
        if entry is None:
            if explicit:
                problems.append(Problem(_cell(table, "catalog", i),
                                        f"catalog {rec['catalog']!r} is not in the {LABEL[kind]}; "
                                        f"{closest_text(rec['catalog'], kind)}"))
            continue
        values = dict(entry.values)
        if kind == GPU and (rec.get("pcie_gbps") is not None or rec.get("pcie_gen") is not None):
            values["pcie_gbps"] = values["pcie_gen"] = None  # one host link: the typed one
        if kind == GPU and values.get("pcie_gen") not in (None, *cols["pcie_gen"].choices):
            values["pcie_gen"] = None  # e.g. a Gen6 or NVLink-C2C part: its pcie_gbps says it
        for name, value in values.items():
            if value is None or rec.get(name) is not None:
                continue
            v, err = parse_value(cols[name], value, None)
            if err:  # a catalog value the schema refuses: said, never used silently
                problems.append(Problem(_cell(table, name, i), f"the {LABEL[kind]} entry {entry.name!r} "
                                                               f"gives {err}"))
                continue
            rec[name] = v
            got[name] = entry.provenance()
        if kind == MODEL and rec.get("kv_bytes") is None:
            rec["kv_bytes"] = CATALOG_KV_BYTES
            got["kv_bytes"] = (f"default for a catalog model: {CATALOG_KV_BYTES} bytes per KV element "
                               f"(BF16/FP16 KV cache); type 1 for an FP8 KV cache")
            kv_default.append(f"{_cell(table, 'kv_bytes', i)} ({rec.get('model')})")
    table.filled = filled
    if kv_default:
        more = f" (and {len(kv_default) - 3} more)" if len(kv_default) > 3 else ""
        notes.append(f"{table.sheet}: kv_bytes blank for {len(kv_default)} catalog model(s), taken as "
                     f"{CATALOG_KV_BYTES} (a BF16 KV cache; type 1 for FP8): {'; '.join(kv_default[:3])}{more}")


def missing_problem(table, sheet: str, i: int, missing: list[str], condition: str = "") -> list[Problem]:
    """The problem(s) for row ``i`` of Models/GPUs whose ``missing`` cells the catalog did not fill.

    A row that names no catalog entry gets one problem at its name cell, with the closest
    catalog names; a catalog row still missing a cell gets one problem per cell.
    """
    kind = KIND_OF[sheet]
    rec = table.records[i]
    entry, explicit = entry_of_row(table, sheet, i)
    if entry is None and explicit:
        return []  # the unknown catalog cell is the problem, said there
    if entry is None:
        name = rec.get(kind)
        what = _and(missing)
        return [Problem(_cell(table, kind, i),
                        f"{kind} {name!r} has no {what} and is not in the {LABEL[kind]}; "
                        f"{closest_text(name, kind)} (type the values, or name an entry in the catalog column)")]
    why = f" for {condition}" if condition else ""
    return [Problem(_cell(table, m.split("/")[0], i),
                    f"{m} is required{why}: the {LABEL[kind]} entry {entry.name!r} does not give it")
            for m in missing]


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def filled_count(tables: Iterable) -> dict[str, int]:
    """Cells filled from the catalogs per sheet (``{"Models": 12, "GPUs": 3}``)."""
    counts = {t.sheet: sum(len(f) for f in t.filled) for t in tables if t is not None}
    return {sheet: n for sheet, n in counts.items() if n}


def filled_run_rows(p_in) -> dict[str, str]:
    """The Run sheet's line on catalog-filled cells (none when nothing was filled)."""
    counts = filled_count((p_in.models, p_in.gpus))
    if not counts:
        return {}
    total = sum(counts.values())
    per = ", ".join(f"{sheet} {n}" for sheet, n in counts.items())
    return {"cells filled from the catalogs": f"{total} ({per}): green italic cells, each with a comment "
                                              f"naming the catalog entry and its source"}
