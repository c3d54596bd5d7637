"""Model and GPU names of OLD and NEW matched the way the catalog folds them (notes/20.md: the
example spells ``H100-SXM``, the README ``H100 SXM``, and GPU_Changes listed two GPU types).

The diff matches rows by name, case and surrounding spaces ignored (:func:`planner.diff.input_changes.fold`).
Before it does, :func:`align_names` gives NEW's Models and GPUs rows OLD's spelling where the two
name one thing for the catalog (:func:`planner.catalog.lookup.name_key`: organisation prefix,
spaces, hyphens and underscores, a leading GPU vendor), and every reference to them in NEW
(Workloads and Measurements ``model``/``gpu``, a Scenarios ``match`` on those sheets) with them.
Only a one-to-one pair is folded: a name NEW or OLD has in exactly that spelling already, or a key
two rows of one file share (``H100 SXM`` and ``h100-sxm`` both typed), is left as it is. Each
respelling is listed as an input change of the row's name cell, as a change of case is; the
numbers are those of NEW as read.
"""

from __future__ import annotations

import copy
import dataclasses

from planner.catalog.lookup import GPU, MODEL, name_key
from planner.core import schema
from planner.diff.input_changes import Change, cell_place, fold
from planner.inputs.reader import PlanInput

NAMED = ((schema.M, MODEL), (schema.G, GPU))  # sheet, its key column (= the catalog kind)


def _respellings(old: PlanInput, new: PlanInput, sheet: str, col: str) -> dict[str, str]:
    """fold(NEW name) -> OLD name, for the NEW names the catalog folds onto exactly one OLD name."""
    names_old = [str(r[col]) for r in old.table(sheet).records if r.get(col) is not None]
    names_new = [str(r[col]) for r in new.table(sheet).records if r.get(col) is not None]
    plain_old, plain_new = {fold(n) for n in names_old}, {fold(n) for n in names_new}

    def by_key(names):
        out: dict[str, list[str]] = {}
        for n in names:
            out.setdefault(name_key(n, col), []).append(n)
        return out

    ko, kn = by_key(names_old), by_key(names_new)
    out = {}
    for n in names_new:
        if fold(n) in plain_old:
            continue  # the same name in OLD: matched as it is
        olds, news = ko.get(name_key(n, col), []), kn.get(name_key(n, col), [])
        if len(olds) == 1 and len(news) == 1 and fold(olds[0]) not in plain_new:
            out[fold(n)] = olds[0]
    return out


def align_names(old: PlanInput, new: PlanInput) -> tuple[PlanInput, list[Change]]:
    """NEW with its model and GPU names spelled as OLD's where the catalog folds them together
    (NEW itself is not changed), and one :class:`Change` per respelled Models/GPUs row."""
    renames = {col: _respellings(old, new, sheet, col) for sheet, col in NAMED}
    if not any(renames.values()):
        return new, []
    changes = []
    for sheet, col in NAMED:
        t_old, t_new = old.table(sheet), new.table(sheet)
        at_old = {fold(r[col]): i for i, r in enumerate(t_old.records) if r.get(col) is not None}
        for j, r in enumerate(t_new.records):
            to = renames[col].get(fold(r.get(col, "")))
            if to is not None:
                changes.append(Change(sheet, to, col, to, r[col], cell_place(t_old, at_old.get(fold(to)), col),
                                      cell_place(t_new, j, col)))

    def renamed(t, cols):
        recs = copy.deepcopy(t.records)
        for r in recs:
            for c in cols:
                if r.get(c) is not None and fold(r[c]) in renames[c]:
                    r[c] = renames[c][fold(r[c])]
        return dataclasses.replace(t, records=recs)

    optional = dict(new.optional)
    if schema.MEAS in optional:
        optional[schema.MEAS] = renamed(optional[schema.MEAS], (MODEL, GPU))
    if schema.SCN in optional:  # a scenario row names a model or GPU in match (its row) or value (a ref)
        recs = copy.deepcopy(optional[schema.SCN].records)
        for r in recs:
            col = {"models": MODEL, "gpus": GPU}.get(str(r.get("sheet") or "").strip().lower())
            if col and r.get("match") is not None and fold(r["match"]) in renames[col]:
                r["match"] = renames[col][fold(r["match"])]
            ref = fold(r.get("column") or "")
            if ref in renames and isinstance(r.get("value"), str) and fold(r["value"]) in renames[ref]:
                r["value"] = renames[ref][fold(r["value"])]
        optional[schema.SCN] = dataclasses.replace(optional[schema.SCN], records=recs)
    aligned = dataclasses.replace(new, models=renamed(new.models, (MODEL,)), gpus=renamed(new.gpus, (GPU,)),
                                  workloads=renamed(new.workloads, (MODEL, GPU)), optional=optional)
    return aligned, changes
