"""Implausible magnitudes in Models and GPUs (issue 20): one pass over the schema's tables
:data:`planner.core.schema.PLAUSIBLE` (a value beyond every published model or GPU: a probable unit
mistake, warned at its cell) and :data:`planner.core.schema.RELATIONS` (two columns of a row out of
their order: refused when it is physically impossible, ``kv_heads`` above ``heads``; warned when
merely implausible, ``layers`` above ``hidden_size``).

Only typed cells are judged: a value the catalog filled is its source's. A relation is judged when
at least one of its cells is typed (a typed ``kv_heads`` against the catalog's ``heads``).
"""

from __future__ import annotations

import math

from planner.core import schema
from planner.core.errors import Problem
from planner.core.places import Place

_UNIT_WORD = {"1e9": "billion", "count": "", "B": "bytes"}


def _unit(sheet: str, name: str) -> str:
    u = schema.column(sheet, name).unit
    u = _UNIT_WORD.get(u, u)
    return f" {u}" if u else ""


def _typed(table, i: int, name: str) -> bool:
    filled = table.filled[i] if i < len(getattr(table, "filled", [])) else {}
    return table.records[i].get(name) is not None and name not in filled


def _number(v) -> float | None:
    if v is None or isinstance(v, bool):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def magnitude_warnings(tables: dict) -> list[Problem]:
    """A located warning for each typed Models/GPUs cell outside its :data:`~planner.core.schema.PLAUSIBLE`
    range: ``params_b 70,000 billion is beyond any published model (...): typed in millions of
    parameters (70 billion; 70,000 for a 70B)?``. ``tables`` maps sheet names to tables."""
    out: list[Problem] = []
    for p in schema.PLAUSIBLE:
        t = tables.get(p.sheet)
        if t is None:
            continue
        for i, rec in enumerate(t.records):
            v = _number(rec.get(p.name))
            if v is None or not _typed(t, i, p.name):
                continue
            if p.high is not None and v > p.high:
                says, hint, div = p.high_says, p.high_hint, p.high_div
            elif p.low is not None and v < p.low:
                says, hint, div = p.low_says, p.low_hint, p.low_div
            else:
                continue
            hint = hint.replace("{conv}", f"{v / div:,.4g}")
            out.append(Problem(Place.of_table(t, p.name, i),
                               f"{p.name} {v:,.6g}{_unit(p.sheet, p.name)} {says}" + (f": {hint}" if hint else "")))
    return out


def relation_problems(tables: dict, severity: str) -> list[Problem]:
    """Each :data:`~planner.core.schema.RELATIONS` entry that a row breaks, at the relation's cell, said
    as ``severity`` ("error": the refusals, impossible with every cell typed; "warning": the rest)."""
    out: list[Problem] = []
    for r in schema.RELATIONS:
        t = tables.get(r.sheet)
        if t is None or (severity == "error" and r.severity != "error"):
            continue
        names = r.small + r.large
        for i, rec in enumerate(t.records):
            if r.attention is not None and (rec.get("attention") or "gqa") != r.attention:
                continue
            vals = {n: _number(rec.get(n)) for n in names}
            if any(v is None for v in vals.values()) or not any(_typed(t, i, n) for n in names):
                continue
            small = math.prod(vals[n] for n in r.small)
            large = math.prod(vals[n] for n in r.large)
            if small <= (1 + schema.RELATION_SLACK) * r.large_scale * large:
                continue
            # an impossible order with a catalog value on one side is said, not refused: the row may
            # be another model's typed in part (params_b 7 on a 70B's row)
            theirs = [n for n in dict.fromkeys(names) if not _typed(t, i, n)]
            said = "warning" if r.severity == "warning" or theirs else "error"
            if said != severity:
                continue
            at = r.at or r.small[0]
            if len(r.small) == 1 and len(r.large) == 1 and r.large_scale == 1:
                a, b = r.small[0], r.large[0]
                head = f"{a} {vals[a]:,.6g} is more than {b} {vals[b]:,.6g}"
            else:
                head = (f"{' x '.join(r.large)} {large:,.6g} is below {' x '.join(r.small)} / {r.large_scale:g} "
                        f"= {small / r.large_scale:,.4g}")
            tail = (f" ({', '.join(theirs)} {'is' if len(theirs) == 1 else 'are'} the catalog's: type "
                    f"{'it' if len(theirs) == 1 else 'them'} too when the row is another model's)") if theirs else ""
            out.append(Problem(Place.of_table(t, at, i), f"{head}: {r.says}{tail}"))
    return out


def input_warnings(p_in) -> list[Problem]:
    """Every warning of this module for a read :class:`~planner.inputs.reader.PlanInput`."""
    tables = {schema.M: p_in.models, schema.G: p_in.gpus}
    return magnitude_warnings(tables) + relation_problems(tables, "warning")
