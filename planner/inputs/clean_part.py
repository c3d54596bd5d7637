"""The part of an input that the problems found so far leave whole, so that the checks of the
layers above the boundary that need a valid input (the calibration: blank breakdowns or decode
times that can be neither calibrated nor estimated, :mod:`planner.plan.calibration_checks`) run
in the same pass on the rows they can judge, and their problems are listed with the others
instead of after the others are fixed (issue 21, one input boundary).

A row is left out when a problem lies on it, or on what it depends on: a Workloads row on its
Models and GPUs rows and on every Measurements row of its deployment (model, gpu, tp); a
Measurements row on its Models and GPUs rows. A problem on a sheet's header or on the sheet as a
whole (no row) leaves nothing of the calibration to judge (``None``); so does a problem in a
load-test file when a Measurements row names one (the file's rows are not sheet rows). Settings
problems leave everything: a refused Settings value keeps its default, and what the calibration
refuses is a missing Models/GPUs field, which no Settings value changes.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from planner.core import schema
from planner.core.names import fold_name


def _bad_rows(problems, sheet: str) -> tuple[set[int], bool]:
    """The sheet rows with a problem on ``sheet``, and whether a problem lies on its header or on
    the whole sheet."""
    rows: set[int] = set()
    whole = False
    for p in problems:
        place = p.place
        if not place.is_on((sheet,)):
            continue
        if place.row is None or place.row <= 1:
            whole = True
            continue
        rows.update(range(place.row, (place.last_row or place.row) + 1))
    return rows, whole


def _subset(table, keep: list[int]):
    """``table`` with only its records ``keep`` (indices, in order): records, sheet rows, the
    catalog's provenance, the plain-1 and percent cells renumbered; the records themselves are shared,
    never changed."""
    if len(keep) == len(table.records):
        return table
    new = {i: k for k, i in enumerate(keep)}
    filled = [table.filled[i] for i in keep] if len(table.filled) == len(table.records) else table.filled
    return dataclasses.replace(table, records=[table.records[i] for i in keep], rows=[table.rows[i] for i in keep],
                               filled=filled, plain_ones={(c, new[i]) for c, i in table.plain_ones if i in new},
                               percent_cells={(c, new[i]) for c, i in table.percent_cells if i in new})


def _deployment(rec: dict) -> tuple[str, str, Any]:
    return fold_name(rec.get("model")), fold_name(rec.get("gpu")), rec.get("tp")


def clean_part(p_in, problems) -> Any:
    """``p_in`` (a :class:`~planner.inputs.reader.PlanInput`) with only the rows no problem of
    ``problems`` touches (see the module's text); ``p_in`` itself when there is none, ``None``
    when nothing is left to judge. ``p_in`` and its records are not changed."""
    if p_in is None:
        return None
    if not problems:
        return p_in
    meas = p_in.optional.get(schema.MEAS)
    tables = {schema.M: p_in.models, schema.G: p_in.gpus, schema.W: p_in.workloads}
    if meas is not None:
        tables[schema.MEAS] = meas
    bad: dict[str, set[int]] = {}
    for sheet, t in tables.items():
        rows, whole = _bad_rows(problems, t.sheet)
        if whole:
            return None
        bad[sheet] = rows
    if meas is not None and any(r.get("file") not in (None, "") for r in meas.records) and any(
            p.place.outer is not None or p.place.line is not None or p.place.second is not None
            or p.place.key is not None for p in problems):
        return None  # a load-test file's problem: which Measurements row it spoils is not a sheet row

    def good_names(sheet: str, key: str) -> set[str]:
        t = tables[sheet]
        return {fold_name(r.get(key)) for r, row in zip(t.records, t.rows)
                if row not in bad[sheet] and r.get(key) is not None}

    models, gpus = good_names(schema.M, "model"), good_names(schema.G, "gpu")
    keep_meas: list[int] = []
    spoilt: set[tuple] = set()  # deployments with a Measurements row left out
    for i, (rec, row) in enumerate(zip(meas.records, meas.rows) if meas is not None else ()):
        dep = _deployment(rec)
        if row in bad[schema.MEAS] or dep[0] not in models or dep[1] not in gpus:
            if None in (rec.get("model"), rec.get("gpu"), dep[2]):
                return None  # a row of no known deployment: any workload's fit may have needed it
            spoilt.add(dep)
        else:
            keep_meas.append(i)
    w = p_in.workloads
    keep_wl = [i for i, (rec, row) in enumerate(zip(w.records, w.rows))
               if row not in bad[schema.W] and fold_name(rec.get("model")) in models
               and fold_name(rec.get("gpu")) in gpus and _deployment(rec) not in spoilt]
    if not keep_wl:
        return None
    keep_m = [i for i, (r, row) in enumerate(zip(p_in.models.records, p_in.models.rows)) if row not in bad[schema.M]]
    keep_g = [i for i, (r, row) in enumerate(zip(p_in.gpus.records, p_in.gpus.rows)) if row not in bad[schema.G]]
    optional = dict(p_in.optional)
    if meas is not None:
        optional[schema.MEAS] = _subset(meas, keep_meas)
    return dataclasses.replace(p_in, models=_subset(p_in.models, keep_m), gpus=_subset(p_in.gpus, keep_g),
                               workloads=_subset(w, keep_wl), optional=optional)
