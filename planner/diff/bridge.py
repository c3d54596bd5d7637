"""Quarter over quarter: compare two plans and bridge the fleet cost from OLD to NEW.

``planner diff OLD.xlsx NEW.xlsx`` (docs/model.md; README "Quarter over quarter"). Both files are read by the ordinary reader,
so an input workbook and a planner output (which carries its input sheets) are both
valid. Rows are matched by name (workload, model, GPU, Settings key) case-insensitively
and ignoring surrounding spaces, as the reader matches references.

The library part is here: the fleet cost definition (:func:`workload_cost_per_month`,
:func:`fleet_cost_per_month`, :func:`gpus_by_type`: the one place that defines them),
the input changes cell by cell (:func:`planner.diff.input_changes.input_changes`), the per-workload result changes
(:func:`workload_changes`) and the cost bridge (:func:`bridge`), built by re-planning
intermediate :class:`~planner.inputs.reader.PlanInput` states made with :func:`with_records`.
The workbook is written by :mod:`planner.diff.workbook`, the memo by :mod:`planner.diff.memo`.

Bridge steps, applied in this fixed order (each state is planned in full)::

    state0  = OLD
    removed : drop the workloads that are only in OLD
    added   : add the workloads that are only in NEW at their cost in NEW (issue 17: the
              step carries all of it, whatever else NEW changes; from here on they count at
              that cost, and the states re-plan only the workloads in both, from OLD's rows
              and OLD's Measurements, so every state is OLD changed step by step and passes
              the reader's row checks; the workloads in both keep OLD's definitions until
              ``price``/``other``)
    demand  : NEW's demand_tpm for the common workloads
    traffic : NEW's hit_target and hit_measured for the common workloads, and where NEW's hits
              come from: its traces (and trace_block_size), still at OLD's KV tiers (issue 19)
    capacity: NEW's Tiers sheet (the cache capacity the traces are replayed against; a typed
              hit_target does not depend on it, so without traces this step is 0)
    price   : NEW's hourly_cost for every GPU of the state that NEW has
    other   : everything else: the final state is NEW itself, planned as NEW
              (of which ``latency``: the price state with NEW's latency targets for the common
              workloads, ttft_slo_ms, tpot_slo_ms, slo_percentile and concurrency, issue 16; its
              change over the price state is the part of ``other`` the SLO-bound sizing of
              Results adds or saves when a target changes, ``Diff.latency``)

Each step is the change of fleet cost per month it makes, and of fleet GPUs (``Diff.gpu_bridge``:
Σ Results ``gpus_needed`` of each state, so OLD's and NEW's ends are each side's Results and Fleet). The stored costs are rounded to
a common binary quantum (a power of two about 2^-50 of the largest cost, far below a
cent), so that ``old + Σ steps == new`` and ``Σ steps == new - old`` hold exactly in
floating point, in any order of summation.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from planner.equations import fleet
from planner.core.places import Place
from planner.core import schema
from planner.inputs.kv_tiers import trace_path
from planner.core.errors import InputError, Problem
from planner.diff.input_changes import Change, same_record, fold, input_changes
from planner.diff.names import align_names
from planner.inputs.reader import PlanInput, Table

STEPS = ("removed", "added", "demand", "hit", "price", "other")
LATENCY_COLS = ("ttft_slo_ms", "tpot_slo_ms", "slo_percentile", "concurrency")  # `other`'s latency part
SPLITS = ("traffic", "latency")  # states that split a step (hit, other) and are not steps themselves


# --------------------------------------------------------------------------- fleet cost
# The fleet cost of the diff is the finance view's (planner.equations.fleet, Results cost_per_hour).
def hours_per_month(plan) -> float:
    """Settings ``hours_per_month`` [h/month]."""
    return float(plan.settings["hours_per_month"])


def workload_cost_per_month(plan) -> np.ndarray:
    """Cost per month of each workload [currency/month]: Results ``cost_per_hour`` (gpus_needed ·
    hourly_cost, the finance view's column) · Settings ``hours_per_month``; NaN without a demand
    (no GPU count) or without a price."""
    return fleet.per_month(plan.results["cost_per_hour"].to_numpy(dtype=float), hours_per_month(plan))


def fleet_cost_per_month(plan) -> float:
    """Fleet cost per month [currency/month]: Σ over workloads with a demand of
    ``gpus_needed · hourly_cost · hours_per_month``. A GPU type without a price adds 0.
    Summed with :func:`math.fsum` (exact, independent of the row order)."""
    c = workload_cost_per_month(plan)
    return math.fsum(c[~np.isnan(c)])


def gpus_by_type(plan) -> dict[str, dict[str, Any]]:
    """Per GPU type (GPUs sheet order, keyed by folded name): ``gpu`` (its name), ``gpus``
    (Σ gpus_needed over workloads with a demand), ``cost_per_month`` (Σ of their costs; 0
    when unpriced), ``priced`` (the type has an hourly_cost)."""
    out: dict[str, dict[str, Any]] = {}
    for rec in plan.input.gpus.records:
        out[fold(rec["gpu"])] = {"gpu": rec["gpu"], "gpus": 0.0, "cost_per_month": 0.0,
                                 "priced": rec.get("hourly_cost") is not None}
    gpus = plan.results["gpus_needed"].to_numpy(dtype=float)
    cost = workload_cost_per_month(plan)
    names = plan.results["gpu"].to_numpy()
    parts: dict[str, list[float]] = {k: [] for k in out}
    for g, n, c in zip(names, gpus, cost):
        k = fold(g)
        if not np.isnan(n):
            out[k]["gpus"] += n
        if not np.isnan(c):
            parts[k].append(float(c))
    for k, v in parts.items():
        out[k]["cost_per_month"] = math.fsum(v)
    return out


# --------------------------------------------------------------------------- states
def with_records(p_in: PlanInput, tables: dict[str, list[dict]] | None = None,
                 settings: dict | None = None) -> PlanInput:
    """A copy of ``p_in`` with the records of some sheets (and/or the settings) replaced.

    Parameters
    ----------
    p_in : PlanInput
        The input to copy (not modified).
    tables : dict, optional
        Sheet name (``Models``, ``GPUs``, ``Workloads`` or an optional sheet) -> its new
        records (list of dicts, as :class:`~planner.inputs.reader.Table` holds them). A replaced
        table keeps its extras and column positions; its rows are numbered 2, 3, ...
    settings : dict, optional
        The new settings (default: the old ones).

    Returns
    -------
    PlanInput
        References of Workloads (model, gpu) are matched to the names in the new Models and
        GPUs tables case-insensitively, as the reader does.
    """
    tables = tables or {}

    def table(t: Table, sheet: str) -> Table:
        if sheet not in tables:
            return t
        recs = [dict(r) for r in tables[sheet]]
        return dataclasses.replace(t, records=recs, rows=list(range(2, len(recs) + 2)))

    models, gpus = table(p_in.models, "Models"), table(p_in.gpus, "GPUs")
    workloads = table(p_in.workloads, "Workloads")
    if workloads is p_in.workloads:  # copied all the same: its references are re-matched below
        workloads = dataclasses.replace(p_in.workloads, records=[dict(r) for r in p_in.workloads.records])
    canon = {"model": {fold(r["model"]): r["model"] for r in models.records if r.get("model") is not None},
             "gpu": {fold(r["gpu"]): r["gpu"] for r in gpus.records if r.get("gpu") is not None}}
    for r in workloads.records:
        for col in ("model", "gpu"):
            if r.get(col) is not None:
                r[col] = canon[col].get(fold(r[col]), r[col])
    optional = {s: table(t, s) for s, t in p_in.optional.items()}
    return dataclasses.replace(p_in, models=models, gpus=gpus, workloads=workloads, optional=optional,
                               settings=dict(settings if settings is not None else p_in.settings))


def _by_name(t: Table, key: str) -> dict[str, dict]:
    return {fold(r[key]): r for r in t.records if r.get(key) is not None}


def bridge_states(old: PlanInput, new: PlanInput) -> list[tuple[str, PlanInput]]:
    """The intermediate inputs of the bridge: ``[("removed", s1), ..., ("price", s5)]``
    (state0 is OLD, the final state is NEW itself), with ``("traffic", s)`` before ``hit``: NEW's hit
    ratios and traces at OLD's Tiers (not a step; the part of ``hit`` the traffic makes, the rest
    being the capacity), and ``("latency", s)`` last: the price state with NEW's latency targets
    (not a step; the part of ``other`` they make)."""
    new_wl = _by_name(new.workloads, "workload")
    old_wl = _by_name(old.workloads, "workload")
    states = []
    # removed: OLD without its OLD-only workloads
    wl = [dict(r) for r in old.workloads.records if fold(r["workload"]) in new_wl]
    models = [dict(r) for r in old.models.records]
    gpus = [dict(r) for r in old.gpus.records]
    states.append(("removed", with_records(old, {"Workloads": wl})))
    # added: NEW-only workloads, with the models and GPUs they need from NEW
    # (a model or GPU OLD defines differently is added as a copy under a new name, so that the
    # added workloads cost here exactly what they cost in NEW, and the common ones are unchanged)
    new_models, new_gpus = _by_name(new.models, "model"), _by_name(new.gpus, "gpu")
    aliases: dict[tuple[str, str], str] = {}
    for r in new.workloads.records:
        if fold(r["workload"]) in old_wl:
            continue
        rec = dict(r)
        for col, have, pool in (("model", models, new_models), ("gpu", gpus, new_gpus)):
            k = fold(r[col])
            want = pool[k]
            cur = next((x for x in have if fold(x[col]) == k), None)
            if cur is None:
                have.append(dict(want))
            elif not same_record(cur, want, col):
                if (col, k) not in aliases:
                    name, n = f"{want[col]} (NEW)", 2
                    while any(fold(x[col]) == fold(name) for x in have):
                        name, n = f"{want[col]} (NEW {n})", n + 1
                    have.append(dict(want, **{col: name}))
                    aliases[(col, k)] = name
                rec[col] = aliases[(col, k)]
        wl.append(rec)
    states.append(("added", with_records(old, {"Workloads": wl, "Models": models, "GPUs": gpus})))
    # demand, then traffic: NEW's values for the common workloads (traffic, not a step, is the first
    # part of `hit`: NEW's hit ratios and where they come from, its traces, still at OLD's Tiers, issue 19)
    for step, cols in (("demand", ("demand_tpm",)),
                       ("traffic", ("hit_target", "hit_measured", "trace", "trace_block_size"))):
        wl = [dict(r) for r in wl]
        for r in wl:
            src = new_wl[fold(r["workload"])]
            for c in cols:
                r[c] = src.get(c)
                if c == "trace" and r[c]:  # NEW's trace, found beside NEW whichever folder OLD is in
                    r[c] = str(trace_path(new.path, r[c]))
        states.append((step, _with_tiers(with_records(old, {"Workloads": wl, "Models": models, "GPUs": gpus}), old)))
    # hit: the traffic state with NEW's KV tiers too (the capacity the traces are replayed against)
    states.append(("hit", _with_tiers(with_records(old, {"Workloads": wl, "Models": models, "GPUs": gpus}), new)))
    # price: NEW's hourly_cost for every GPU NEW has
    gpus = [dict(r) for r in gpus]
    for r in gpus:
        if fold(r["gpu"]) in new_gpus:
            r["hourly_cost"] = new_gpus[fold(r["gpu"])].get("hourly_cost")
    states.append(("price", _with_tiers(with_records(old, {"Workloads": wl, "Models": models, "GPUs": gpus}), new)))
    # not a step: the price state with NEW's latency targets, the latency part of `other`
    wl = [dict(r, **{c: new_wl[fold(r["workload"])].get(c) for c in LATENCY_COLS}) for r in wl]
    states.append(("latency", _with_tiers(with_records(old, {"Workloads": wl, "Models": models, "GPUs": gpus}),
                                          new)))
    return states


def _with_tiers(state: PlanInput, src: PlanInput) -> PlanInput:
    """``state`` with the Tiers sheet of ``src`` (or none when ``src`` has none)."""
    optional = {k: v for k, v in state.optional.items() if k != schema.TIERS}
    if schema.TIERS in src.optional:
        optional[schema.TIERS] = src.optional[schema.TIERS]
    return dataclasses.replace(state, optional=optional)


def exact_quantum(values: Iterable[float]) -> float:
    """A power of two ``q`` such that values rounded to multiples of ``q`` add exactly:
    ``q = 2^(e - 50)`` with ``2^e`` above every ``|value|`` (sums of up to 8 such values keep
    53 bits)."""
    m = max([abs(v) for v in values] + [1.0])
    return math.ldexp(1.0, math.frexp(m)[1] - 50)


def snap(v: float, q: float) -> float:
    """``v`` rounded to a multiple of ``q`` (exact: q is a power of two)."""
    return round(v / q) * q


# --------------------------------------------------------------------------- the diff
@dataclass
class Diff:
    old_path: Path
    new_path: Path
    old: Any                       # Plan of OLD
    new: Any                       # Plan of NEW
    changes: list[Change]
    workloads: list[dict]          # per workload: status and results old/new
    gpus: list[dict]               # per GPU type: gpus and cost old/new
    bridge: list[tuple[str, float]]  # ("old", c0), steps..., ("new", c_new)
    state_costs: dict[str, float] = field(default_factory=dict)  # unrounded cost after each step
    new_warnings: list[str] = field(default_factory=list)
    unpriced: list[str] = field(default_factory=list)  # GPU types with demand but no price
    gpu_bridge: list[tuple[str, float]] = field(default_factory=list)  # ("old", g0), GPU change per step, ("new", g)
    # the part of `other` NEW's latency targets make: {"cost_per_month": .., "gpus": ..} (0 when none changes)
    latency: dict[str, float] = field(default_factory=dict)
    # the parts of `hit` (issue 19): traffic (NEW's hit ratios and traces at OLD's Tiers) and capacity
    # (NEW's Tiers): {"traffic": .., "capacity": .., "traffic_gpus": .., "capacity_gpus": ..}
    hit_split: dict[str, float] = field(default_factory=dict)

    @property
    def total_change(self) -> float:
        return self.bridge[-1][1] - self.bridge[0][1]


RESULT_COLS = ("ttft_ms", "tpm_delivered_target", "instances_needed", "gpus_needed")


def _num(x: Any) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def workload_changes(old_plan, new_plan, changes: list[Change]) -> list[dict]:
    """Per workload (OLD's order, then NEW-only ones): ``workload, status, gpu_old, gpu_new,
    gpus_old, gpus_new, cost_per_month_old, cost_per_month_new, ttft_ms_old/new,
    tpm_delivered_target_old/new``. ``status``: ``added`` (only in NEW), ``removed`` (only
    in OLD), ``changed`` (a Workloads cell of it changed, or its GPUs, cost, TTFT or TPM
    differ), else ``same``."""
    def rows(plan):
        r = plan.results
        cost = workload_cost_per_month(plan)
        out = {}
        for i in range(len(r)):
            out[fold(r["workload"].iat[i])] = {
                "workload": str(r["workload"].iat[i]), "gpu": str(r["gpu"].iat[i]),
                "gpus": _num(r["gpus_needed"].iat[i]), "cost": _num(cost[i]),
                "ttft_ms": _num(r["ttft_ms"].iat[i]), "tpm": _num(r["tpm_delivered_target"].iat[i])}
        return out

    a, b = rows(old_plan), rows(new_plan)
    edited = {fold(c.name) for c in changes if c.sheet == "Workloads"}
    out = []
    for k in list(a) + [k for k in b if k not in a]:
        ra, rb = a.get(k), b.get(k)
        if ra is None:
            status = "added"
        elif rb is None:
            status = "removed"
        elif k in edited or any(ra[c] != rb[c] for c in ("gpu", "gpus", "cost", "ttft_ms", "tpm")):
            status = "changed"
        else:
            status = "same"
        g = lambda r, c: None if r is None else r[c]  # noqa: E731
        out.append({"workload": (rb or ra)["workload"], "status": status,
                    "gpu_old": g(ra, "gpu"), "gpu_new": g(rb, "gpu"),
                    "gpus_old": g(ra, "gpus"), "gpus_new": g(rb, "gpus"),
                    "cost_per_month_old": g(ra, "cost"), "cost_per_month_new": g(rb, "cost"),
                    "ttft_ms_old": g(ra, "ttft_ms"), "ttft_ms_new": g(rb, "ttft_ms"),
                    "tpm_delivered_target_old": g(ra, "tpm"), "tpm_delivered_target_new": g(rb, "tpm")})
    return out


def gpu_changes(old_plan, new_plan) -> list[dict]:
    """Per GPU type (OLD's GPUs order, then NEW-only types): ``gpu, gpus_old, gpus_new,
    cost_per_month_old, cost_per_month_new`` (a type absent from a file counts 0 there)."""
    a, b = gpus_by_type(old_plan), gpus_by_type(new_plan)
    out = []
    for k in list(a) + [k for k in b if k not in a]:
        ra, rb = a.get(k), b.get(k)
        out.append({"gpu": (rb or ra)["gpu"],
                    "gpus_old": ra["gpus"] if ra else 0.0, "gpus_new": rb["gpus"] if rb else 0.0,
                    "cost_per_month_old": ra["cost_per_month"] if ra else 0.0,
                    "cost_per_month_new": rb["cost_per_month"] if rb else 0.0})
    return out


STATE_OF = {"removed": "workload list, removed workloads dropped", "added": "added workloads",
            "demand": "demand_tpm", "hit": "hit_target, hit_measured, traces and Tiers",
            "traffic": "hit_target, hit_measured and traces (at OLD's Tiers)",
            "latency": "hourly_cost and latency targets (" + ", ".join(LATENCY_COLS) + ")", "price": "hourly_cost"}


def fleet_gpus(plan) -> float:
    """GPUs of the fleet: Σ Results ``gpus_needed`` over the workloads with a demand [count]."""
    g = plan.results["gpus_needed"].to_numpy(dtype=float)
    return float(np.nansum(g)) if len(g) else 0.0


def bridge(old_plan, new_plan, build, gpus: dict[str, float] | None = None,
           latency: dict[str, float] | None = None,
           hit_split: dict[str, float] | None = None) -> tuple[list[tuple[str, float]], dict[str, float]]:
    """The cost bridge: ``[("old", c0), ("removed", d1), ..., ("other", d6), ("new", c_new)]``
    and the unrounded fleet cost after each step. ``build`` plans a PlanInput. ``gpus``, when
    given, receives the fleet GPUs after each state (``old``, each step, ``other`` = NEW);
    ``latency`` the part of ``other`` NEW's latency targets make (``cost_per_month``, on the
    bridge's quantum, and ``gpus``); ``hit_split`` the parts of ``hit`` the traffic (NEW's hit ratios
    and traces at OLD's Tiers) and the capacity (NEW's Tiers) make: ``traffic``, ``capacity`` [cost
    per month] and ``traffic_gpus``, ``capacity_gpus``, each pair summing exactly to the step."""
    c_old, c_new = fleet_cost_per_month(old_plan), fleet_cost_per_month(new_plan)
    costs = {"old": c_old}
    gpus = {} if gpus is None else gpus
    gpus["old"] = fleet_gpus(old_plan)
    extra: dict[str, dict[str, float]] = {}
    # an added workload carries all of its NEW cost in the `added` step (issue 17): from that
    # step on it counts at its cost in NEW, and the states re-plan only the common workloads
    # (OLD's rows, OLD's Measurements: each state is OLD changed step by step, and consistent)
    old_names = set(_by_name(old_plan.input.workloads, "workload"))
    new_cost = workload_cost_per_month(new_plan)
    added = math.fsum(c for r, c in zip(new_plan.input.workloads.records, new_cost)
                      if fold(r["workload"]) not in old_names and not math.isnan(c))
    new_gpus = new_plan.results["gpus_needed"].to_numpy(dtype=float)
    added_gpus = float(np.nansum([g for r, g in zip(new_plan.input.workloads.records, new_gpus)
                                  if fold(r["workload"]) not in old_names]))
    for step, state in bridge_states(old_plan.input, new_plan.input):
        common = [r for r in state.workloads.records if fold(r["workload"]) in old_names]
        if len(common) != len(state.workloads):
            state = with_records(state, {"Workloads": common})
        from planner.finance.scenarios import row_problems  # the row checks of the reader, on the state

        try:
            if rows := row_problems(state):
                raise InputError(rows)
            planned = build(state) if len(state.workloads) else None
            cost = fleet_cost_per_month(planned) if planned is not None else 0.0
        except InputError as err:  # a state nobody wrote: say which step, and what it mixes
            if step in SPLITS:  # not a step: without it the step is simply not split
                continue
            raise InputError([Problem(f"NEW {new_plan.input.path}", f"bridge step {step!r} (OLD with NEW's "
                                      f"{STATE_OF[step]}): {x}") for x in err.problems]) from None
        g = (fleet_gpus(planned) if planned is not None else 0.0) + (added_gpus if step != "removed" else 0.0)
        c = cost + (added if step != "removed" else 0.0)
        if step in SPLITS:
            extra[step] = {"cost": c, "gpus": g}
            continue
        costs[step], gpus[step] = c, g
    costs["other"] = c_new
    gpus["other"] = fleet_gpus(new_plan)
    q = exact_quantum(list(costs.values()) + [e["cost"] for e in extra.values()])
    snapped = [snap(v, q) for v in costs.values()]
    if latency is not None and "latency" in extra:
        latency["cost_per_month"] = snap(extra["latency"]["cost"], q) - snap(costs["price"], q)
        latency["gpus"] = extra["latency"]["gpus"] - gpus["price"]
    if hit_split is not None and "traffic" in extra:  # hit = traffic + capacity, exactly (multiples of q)
        t_cost, t_gpus = snap(extra["traffic"]["cost"], q), extra["traffic"]["gpus"]
        hit_split.update(traffic=t_cost - snap(costs["demand"], q), capacity=snap(costs["hit"], q) - t_cost,
                         traffic_gpus=t_gpus - gpus["demand"], capacity_gpus=gpus["hit"] - t_gpus)
    steps = [(s, snapped[k + 1] - snapped[k]) for k, s in enumerate(STEPS)]  # exact: multiples of q
    return [("old", snapped[0])] + steps + [("new", snapped[-1])], costs


def _shape(message: str) -> str:
    """A warning's text with its numbers masked: the same warning of a row whose demand, price or
    times changed (``3,747 ms`` of chip time, then ``3,701 ms``) is not a new one (red team 7)."""
    return re.sub(r"[-+]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?", "#", message)


def new_warnings(old_plan, new_plan) -> list[str]:
    """Warnings of NEW whose message (its place aside) OLD does not have for the same row:
    compared as ``(row name, message with its numbers masked)`` so that a moved row, or the same
    warning with other numbers, is not a new warning."""
    def keyed(plan):
        out = []
        for w in plan.warnings:
            name = w.place.label if w.place.label is not None else w.place
            out.append((fold(name), _shape(w.message), str(w)))
        return out

    seen = {(k, m) for k, m, _ in keyed(old_plan)}
    return [s for k, m, s in keyed(new_plan) if (k, m) not in seen]


def read_pair(old_path: Path, new_path: Path) -> tuple[PlanInput, PlanInput]:
    """Read both files with every check (:func:`planner.finance.validation.read_checked`); every
    problem of both is raised at once, each naming its file."""
    from planner.finance.validation import read_checked

    problems: list[Problem] = []
    out = []
    for role, p in (("OLD", old_path), ("NEW", new_path)):
        try:
            out.append(read_checked(p))
        except InputError as err:
            problems += [Problem(Place.within(f"{role} {p}", x.place) if x.place not in (str(p), p.name)
                                 else f"{role} {p}", x.message) for x in err.problems]
        except OSError as err:  # not readable (permissions, a device error)
            problems.append(Problem(f"{role} {p}", f"cannot be read ({err.strerror or err})"))
    if problems:
        raise InputError(problems)
    return out[0], out[1]


def diff_plans(old_path: str | Path, new_path: str | Path) -> Diff:
    """Read, plan and compare OLD and NEW (raises :class:`InputError` naming each file)."""
    from planner.plan.build import build_plan

    old_path, new_path = Path(old_path), Path(new_path)
    old_in, new_in = read_pair(old_path, new_path)
    new_in, respelled = align_names(old_in, new_in)  # NEW's model/GPU names spelled as OLD's, as the catalog folds
    plans, problems = [], []
    for role, p_in in (("OLD", old_in), ("NEW", new_in)):  # calibration problems: named by file too
        try:
            plans.append(build_plan(p_in))
        except InputError as err:
            problems += [Problem(Place.within(f"{role} {p_in.path}", x.place), x.message) for x in err.problems]
    if problems:
        raise InputError(problems)
    old_plan, new_plan = plans
    changes = respelled + input_changes(old_in, new_in)
    state_gpus: dict[str, float] = {}
    lat: dict[str, float] = {}
    split: dict[str, float] = {}
    br, costs = bridge(old_plan, new_plan, build_plan, state_gpus, lat, split)
    g = list(state_gpus.values())  # whole GPU counts: exact differences
    gpu_br = [("old", g[0])] + [(s, g[k + 1] - g[k]) for k, s in enumerate(STEPS)] + [("new", g[-1])]
    unpriced = []
    for plan in (old_plan, new_plan):
        for v in gpus_by_type(plan).values():
            if v["gpus"] > 0 and not v["priced"] and v["gpu"] not in unpriced:
                unpriced.append(v["gpu"])
    return Diff(old_path, new_path, old_plan, new_plan, changes, workload_changes(old_plan, new_plan, changes),
                gpu_changes(old_plan, new_plan), br, costs, new_warnings(old_plan, new_plan), unpriced, gpu_br, lat,
                split)
