"""The checks of the input tables after reading: unique names, required cells, the
Models/GPUs columns each attention kind or GPU needs, and the Workloads' model/gpu
references (matched case- and space-insensitively) and 0-hit times.

Each adds :class:`~planner.core.errors.Problem` entries (or notes); :func:`planner.inputs.reader.read_input`
raises them all at once.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any


from planner.inputs import catalog_fill as catalog

from planner.core import schema
from planner.core.errors import Problem
from planner.core.names import and_more, fold_name
from planner.core.places import Place, column_letter
from planner.inputs.places import cell_place
from planner.inputs import typed_text as th

if TYPE_CHECKING:
    from planner.inputs.reader import Table

MIN_PREFILL_MS = 1e-3  # the 0-hit variable prefill time must add up to at least this (1 microsecond)


def _cell(table: Table, ws_cols: dict[str, int], name: str, i: int) -> str:
    return cell_place(table, name, i, ws_cols)


def check_keys(table: Table, pos: dict[str, int], key: str, problems: list[Problem]) -> dict[str, str]:
    """Unique names (case and surrounding spaces ignored); returns folded -> canonical name."""
    first: dict[str, int] = {}
    canon: dict[str, str] = {}
    for i, rec in enumerate(table.records):
        name = rec.get(key)
        where = _cell(table, pos, key, i)
        if name is None:
            if key in pos and not _had_error(problems, where):
                problems.append(Problem(where, f"{key} is required"))
            continue
        folded = fold_name(name)
        if folded in first:
            problems.append(Problem(where, f"{key} {name!r} duplicates row {table.rows[first[folded]]}"))
            continue
        first[folded] = i
        canon[folded] = name
    return canon


def check_required(table: Table, sheet: str, pos: dict[str, int], problems: list[Problem],
                    skip: set[str]) -> None:
    for c in schema.columns(sheet):
        if c.required is True and c.name in pos and c.name not in skip:
            for i, rec in enumerate(table.records):
                if c.name == "hit_target" and rec.get("trace"):
                    continue  # comes from the trace and the Tiers (planner.inputs.kv_tiers)
                if rec.get(c.name) is None and not _had_error(problems, _cell(table, pos, c.name, i)):
                    problems.append(Problem(_cell(table, pos, c.name, i), f"{c.name} is required"))


def _had_error(problems: list[Problem], place: str) -> bool:
    return any(p.place == place for p in problems)


def check_models(t: Table, pos: dict[str, int], problems: list[Problem]) -> None:
    for i, rec in enumerate(t.records):
        att = rec.get("attention") or "gqa"
        needs = ("layers", "kv_bytes") + (("kv_heads", "head_dim") if att == "gqa" else ("mla_kv_dim",))
        missing = [name for name in needs
                   if rec.get(name) is None and not _had_error(problems, _cell(t, pos, name, i))]
        if missing and rec.get("model") is not None:  # required unless the catalog supplies it
            problems.extend(catalog.missing_problem(t, "Models", i, missing, f"attention {att}"))


def check_gpus(t: Table, pos: dict[str, int], problems: list[Problem]) -> None:
    for i, rec in enumerate(t.records):
        missing = [] if rec.get("hbm_gib") is not None or _had_error(problems, _cell(t, pos, "hbm_gib", i)) \
            else ["hbm_gib"]
        if rec.get("pcie_gbps") is None and rec.get("pcie_gen") is None:
            where = _cell(t, pos, "pcie_gbps", i)
            if not _had_error(problems, where) and not _had_error(problems, _cell(t, pos, "pcie_gen", i)):
                if catalog.entry_of_row(t, "GPUs", i)[0] is not None or rec.get("gpu") is None:
                    problems.append(Problem(where, "pcie_gbps and pcie_gen are both blank: give the "
                                                   "bandwidth in GB/s or the PCIe generation (4 or 5)"))
                else:
                    missing.append("pcie_gbps/pcie_gen")
        if missing and rec.get("gpu") is not None:  # required unless the catalog supplies it
            problems.extend(catalog.missing_problem(t, "GPUs", i, missing))


def check_workloads(t: Table, pos: dict[str, int], canon: dict[str, dict[str, str]],
                     problems: list[Problem], notes: list[str]) -> None:
    fuzzy: list[str] = []
    spelt: dict[int, dict[str, str]] = {}  # record -> column -> the name as Models/GPUs spell it
    for i, rec in enumerate(t.records):
        for col, sheet in (("model", "Models"), ("gpu", "GPUs")):
            name = rec.get(col)
            if name is None or sheet not in canon:
                continue
            target = canon[sheet].get(fold_name(name))
            where = _cell(t, pos, col, i)
            if target is None:
                problems.append(Problem(where, th.not_found_message(col, name, sheet, list(canon[sheet].values()))))
            elif target != name:
                fuzzy.append(f"{where} {name!r} -> {target!r}")
                spelt.setdefault(i, {})[col] = target
        times = [rec.get(k) for k in ("t_attn0_ms", "t_ffn0_ms", "t_other0_ms")]
        total = sum(v or 0 for v in times)
        if all(v is not None for v in times[:2]) and total == 0:
            problems.append(Problem(Place.at_row(t.sheet, t.rows[i]), "t_attn0_ms, t_ffn0_ms and "
                                    "t_other0_ms are all 0: at least one 0-hit time must be positive"))
        elif all(v is not None for v in times[:2]) and total < MIN_PREFILL_MS:
            problems.append(Problem(Place.at_row(t.sheet, t.rows[i]), f"t_attn0_ms + t_ffn0_ms + t_other0_ms is "
                                    f"{total:g} ms: below {MIN_PREFILL_MS:g} ms, too small to plan with "
                                    f"(the times are in milliseconds)"))
    respell(t, spelt)
    if fuzzy:
        more = and_more(len(fuzzy), 3)
        notes.append(f"{t.sheet}: {len(fuzzy)} model/gpu reference(s) differ from their names only in "
                     f"case or surrounding spaces; matched them: {'; '.join(fuzzy[:3])}{more}")


def check_optional_refs(optional: dict, canon: dict[str, dict[str, str]], problems: list[Problem],
                        tables: dict | None = None) -> None:
    """The reference columns of the optional sheets (Measurements ``model``/``gpu``, and any
    ``ref`` column added to the schema later) against the Models/GPUs names, in the same pass
    as every other check (they used to wait for the calibration, after the others passed).
    Demand checks its own ``workload`` references (:mod:`planner.finance.demand`). A referenced sheet
    with a problem on its names (a name cell, the header, the whole sheet) is skipped: a renamed or
    refused name would only echo here. A problem in another of its cells leaves every name known
    (``tables``: the referenced tables, whose name column tells the one from the other; without
    them any problem on the sheet skips it)."""
    broken = {s for s in (schema.M, schema.G) if _names_broken(s, problems, (tables or {}).get(s))}
    for sheet, t in optional.items():
        if sheet == schema.DEM:
            continue
        for c in schema.columns(sheet):
            if c.ref not in (schema.M, schema.G) or c.ref not in canon or c.ref in broken or c.name not in t.positions:
                continue
            problems += [p for p in reference_problems(t, c.name, c.ref, canon[c.ref])
                         if not _had_error(problems, p.place)]


def _names_broken(sheet: str, problems: list[Problem], table) -> bool:
    """Whether a problem lies on the names of ``sheet`` (its key column, header or whole sheet);
    any problem on it when ``table`` is not given."""
    on = [p.place for p in problems if p.place.is_on((sheet,))]
    if table is None or not on:
        return bool(on)
    key = next(c.name for c in schema.columns(sheet) if c.key)
    letter = column_letter(table.positions[key] + 1) if key in table.positions else None
    return any(p.row is None or p.row <= 1 or p.column is None or p.column == letter for p in on)


def reference_problems(t: Table, col: str, sheet: str, canon: dict[str, str]) -> list[Problem]:
    """``col`` of each record of ``t`` naming no row of ``sheet`` (``canon``: folded -> spelt
    names): ``Measurements!A2: model 'x' is not in Models``, at the cell."""
    return [p for i in range(len(t.records)) for p in _unknown(t, i, col, sheet, canon)]


def _unknown(t: Table, i: int, col: str, sheet: str, canon: dict[str, str]) -> list[Problem]:
    name = t.records[i].get(col)
    return [] if name is None or fold_name(name) in canon else \
        [Problem(_cell(t, t.positions, col, i), f"{col} {name!r} is not in {sheet}")]


def spelt_as(t: Table, refs: dict[str, tuple[str, dict[str, str]]]) -> tuple[Table, list[Problem]]:
    """A copy of ``t`` whose reference columns name their rows as the referenced sheet spells them
    (``refs``: column -> (sheet, folded -> spelt names)), and the problems of names in no row,
    record by record; ``t`` and its records are left as read."""
    problems = [p for i in range(len(t.records)) for col, (sheet, canon) in refs.items()
                for p in _unknown(t, i, col, sheet, canon)]
    spelt = {i: {col: canon[fold_name(rec[col])] for col, (_, canon) in refs.items()
                 if rec.get(col) is not None and fold_name(rec[col]) in canon}
             for i, rec in enumerate(t.records)}
    copy = dataclasses.replace(t, records=list(t.records))
    respell(copy, spelt)
    return copy, problems


def respell(t: Table, spelt: dict[int, dict[str, Any]]) -> None:
    """Record ``i`` of ``t`` replaced by a new record with the values ``spelt[i]`` (the names as
    their sheet spells them, a period as the label it names): the record read is not written into,
    so whoever holds it keeps the values as typed."""
    for i, values in spelt.items():
        if any(t.records[i].get(k) != v for k, v in values.items()):
            t.records[i] = {**t.records[i], **values}
