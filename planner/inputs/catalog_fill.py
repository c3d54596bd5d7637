"""Filling input tables from the catalogs (:mod:`planner.catalog.lookup`): a ``Models`` or
``GPUs`` row whose name (or whose ``catalog`` cell, when the row's own name is a team label)
matches an entry takes every **blank** cell from it; a typed cell always wins.
:func:`fill_table` is the reader's hook: it fills the blank cells of a
:class:`~planner.inputs.reader.Table` and records where each filled value came from in
``Table.filled`` (column -> provenance text), which the writer turns into styled, commented cells.
"""

from __future__ import annotations

from typing import Iterable

from planner.core.names import and_more
from planner.core import schema
from planner.core.errors import Problem
from planner.inputs.places import cell_place
from planner.catalog.lookup import CATALOG_KV_BYTES, GPU, KIND_OF, LABEL, MODEL, Entry, closest_text, find


# --------------------------------------------------------------------------- filling
def _cell(table, name: str, i: int) -> str:
    return cell_place(table, name, i)


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
    entry, in place on the table (a filled row becomes a new record, so the record read is not
    written into); set ``table.filled`` (one dict per record: column -> provenance).

    A ``catalog`` cell that names no entry is a problem at that cell, with the closest names.
    ``kv_bytes`` left blank on a catalog model becomes 2 (BF16), said once in ``notes``.
    """
    kind = KIND_OF.get(sheet)
    if kind is None:
        return
    cols = {c.name: c for c in schema.columns(sheet)}
    from planner.inputs.cells import parse_value  # local: the reader calls this module

    filled: list[dict[str, str]] = []
    kv_default: list[str] = []
    for i, typed in enumerate(table.records):
        got: dict[str, str] = {}
        filled.append(got)
        rec = dict(typed)  # the filled row is a new record: the one read keeps the values as typed
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
        if got:
            table.records[i] = rec
    table.filled = filled
    if kv_default:
        more = and_more(len(kv_default), 3)
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
