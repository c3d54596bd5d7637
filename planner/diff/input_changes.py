"""The input changes of a diff, cell by cell: OLD and NEW's input tables (Models, GPUs,
Workloads, Settings and the optional sheets) matched by row name, case-insensitively and
ignoring surrounding spaces, as the reader matches references (:func:`input_changes`).

The bridge and the re-planning are in :mod:`planner.diff.bridge`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from planner.core.names import fold_name
from planner.core import schema
from planner.core.places import Place
from planner.inputs.reader import PlanInput, Table

KEY_OF = {"Models": "model", "GPUs": "gpu", "Workloads": "workload"}
# Row names of the optional sheets (no unique key column): the columns that identify a row,
# joined with " / "; a repeated name gets " #2", " #3" in order of appearance.
OPTIONAL_ROW_KEYS = {
    "Measurements": ("model", "gpu", "tp", "isl", "hit"),
    "Demand": ("workload", "period"),
    "Scenarios": ("scenario", "sheet", "column", "match"),
    "Tiers": ("tier",),
}


fold = fold_name  # a name as rows are matched (planner.core.names)


@dataclass
class Change:
    sheet: str
    name: str
    column: str
    old: Any
    new: Any
    old_place: str = ""
    new_place: str = ""


def cell_place(t: Table | None, i: int | None, col: str) -> str:
    if t is None or i is None:
        return ""
    return Place.of_table(t, col, i)


def _same(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, str) and isinstance(b, str):
        return a.strip() == b.strip()
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) \
            and not isinstance(b, bool):
        return float(a) == float(b)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def same_record(a: dict, b: dict, key: str) -> bool:
    """Two rows hold the same values (blanks alike), their name column aside."""
    return all(_same(None if _blank(a.get(c)) else a.get(c), None if _blank(b.get(c)) else b.get(c))
               for c in set(a) | set(b) if c != key)


def _blank(v: Any) -> bool:
    return v is None or (isinstance(v, str) and v.strip() == "") or (isinstance(v, (tuple, list)) and not v)


def row_names(t: Table, sheet: str) -> list[str]:
    """The name of each row of ``t``: its key for Models/GPUs/Workloads, for the optional
    sheets the :data:`OPTIONAL_ROW_KEYS` columns joined with `` / `` (numbers as ``%g``:
    ``Llama / H100 / 4 / 8192 / 0.5``), a repeated name numbered ``#2``, ``#3``."""
    if sheet in KEY_OF:
        return [str(r.get(KEY_OF[sheet])).strip() for r in t.records]
    seen: dict[str, int] = {}
    out = []
    for r in t.records:
        parts = []
        for c in OPTIONAL_ROW_KEYS[sheet]:
            v = r.get(c)
            parts.append("" if v is None else (f"{v:g}" if isinstance(v, float) else str(v).strip()))
        name = " / ".join(parts)
        k = fold(name)
        seen[k] = seen.get(k, 0) + 1
        out.append(name if seen[k] == 1 else f"{name} #{seen[k]}")
    return out


def _table_changes(sheet: str, a: Table | None, b: Table | None) -> list[Change]:
    """Changed cells of one table sheet, rows matched by name; an added (removed) row lists
    each of its non-blank cells with old (new) blank."""
    cols = [c.name for c in schema.columns(sheet)]
    extras = list(dict.fromkeys((a.extras if a else []) + (b.extras if b else [])))
    ra = dict(zip(map(fold, row_names(a, sheet)), range(len(a.records)))) if a else {}
    rb = dict(zip(map(fold, row_names(b, sheet)), range(len(b.records)))) if b else {}
    names_a = row_names(a, sheet) if a else []
    names_b = row_names(b, sheet) if b else []
    order = list(ra) + [k for k in rb if k not in ra]
    out: list[Change] = []
    for k in order:
        i, j = ra.get(k), rb.get(k)
        name = names_b[j] if j is not None else names_a[i]
        ra_rec = a.records[i] if i is not None else {}
        rb_rec = b.records[j] if j is not None else {}
        for c in cols + [x for x in extras if x not in cols]:
            va, vb = ra_rec.get(c), rb_rec.get(c)
            va = None if _blank(va) else va
            vb = None if _blank(vb) else vb
            if _same(va, vb):
                continue
            out.append(Change(sheet, name, c, va, vb, cell_place(a, i, c), cell_place(b, j, c)))
    return out


def _settings_map(p: PlanInput) -> dict[str, tuple[str, Any]]:
    out = {fold(k): (str(k), v) for k, v in p.settings.items()}
    for k, v in p.settings_extra:
        if k is not None and str(k).strip():
            out.setdefault(fold(k), (str(k).strip(), v))
    return out


def input_changes(old: PlanInput, new: PlanInput) -> list[Change]:
    """Every changed input cell: Models, GPUs, Workloads (rows by name), Settings (by key,
    values with their defaults applied, so a default typed out is no change), then the
    optional sheets present in either file (rows named by :func:`row_names`)."""
    out: list[Change] = []
    for sheet in schema.SHEETS:
        out += _table_changes(sheet, old.table(sheet), new.table(sheet))
    sa, sb = _settings_map(old), _settings_map(new)
    for k in list(sa) + [k for k in sb if k not in sa]:
        ka, va = sa.get(k, (None, None))
        kb, vb = sb.get(k, (None, None))
        va = None if _blank(va) else va
        vb = None if _blank(vb) else vb
        if not _same(va, vb):
            show = lambda v: "; ".join(f"{x:g}" for x in v) if isinstance(v, tuple) else v  # noqa: E731
            out.append(Change(schema.SETTINGS, kb or ka, "value", show(va), show(vb)))
    for sheet in schema.OPTIONAL_SHEETS:
        a, b = old.optional.get(sheet), new.optional.get(sheet)
        if a is not None or b is not None:
            out += _table_changes(sheet, a, b)
    return out
