"""Every scenario's re-planned state checked like an input, at the input boundary (issue 17).

:func:`planner.inputs.scenario_checks.overrides` checks each Scenarios row on its own (the sheet, the
column, the value within the schema's range). A scenario is more than its rows: setting
every prefill time to 0, or ``attention`` to ``mla`` on a model without ``mla_kv_dim``,
gives a state the Workloads/Models checks would refuse. :func:`check_scenarios` builds each
scenario's state (:func:`planner.finance.scenarios.scenario_input`), runs the *same* row checks
the reader runs on the sheets (:mod:`planner.inputs.checks`: generic over the schema, so
columns added later are covered), then re-plans it and requires every number the base
plan has to stay finite. Each problem is placed at the scenario's first row on the
Scenarios sheet and names the row of the re-planned state.

The re-planned fleet totals are kept (:func:`cached_totals`), so ``Scenario_Compare`` is
written from the very numbers that were checked, and ``validate`` does exactly this work.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from planner.core import schema
from planner.core.errors import InputError, Problem

def _scenario_place(scn, name: str) -> str:
    from planner.inputs.demand_checks import _place

    i = next(i for i, r in enumerate(scn.records) if str(r.get("scenario")) == name)
    return _place(scn, "scenario", i)


def _row_problems(s_in) -> list[Problem]:
    from planner.inputs.checks import _check_gpus, _check_models, _check_workloads

    probs: list[Problem] = []
    m, g, w = s_in.models, s_in.gpus, s_in.workloads
    _check_models(m, m.positions, probs)
    _check_gpus(g, g.positions, probs)
    canon = {"Models": {str(r["model"]).strip().lower(): r["model"] for r in m.records if r.get("model")},
             "GPUs": {str(r["gpu"]).strip().lower(): r["gpu"] for r in g.records if r.get("gpu")}}
    _check_workloads(w, w.positions, canon, probs, [])
    return probs


def _non_finite(base: pd.DataFrame, got: pd.DataFrame, names) -> list[str]:
    """``row 'chat': ttft_ms`` for each number finite in the base plan and not in the scenario."""
    out = []
    for col in base.columns:
        b = pd.to_numeric(base[col], errors="coerce").to_numpy(dtype=float)
        if col not in got.columns or not np.isfinite(b).any():
            continue
        s = pd.to_numeric(got[col], errors="coerce").to_numpy(dtype=float)
        bad = np.isfinite(b) & ~np.isfinite(s)
        out += [f"Workloads {names[i]!r}: {col}" for i in np.flatnonzero(bad)]
    return out


def check_scenarios(p_in) -> list[Problem]:
    """The problems of every scenario's re-planned state (empty: all plan); the fleet totals
    are kept for :func:`cached_totals`."""
    from planner.finance.fleet import fleet_table
    from planner.inputs.scenario_checks import BASE, overrides
    from planner.finance.scenarios import _quick_plan, scenario_input

    scn = p_in.optional.get(schema.SCN)
    if scn is None:
        return []
    tables = {s: p_in.table(s) for s in schema.SHEETS}
    problems: list[Problem] = []
    ovs = overrides(scn, tables, p_in.settings, problems)
    if problems:  # the reader has reported these already
        return problems
    names = list(dict.fromkeys(o.scenario for o in ovs))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            base = _quick_plan(p_in).results
        except InputError:
            return []  # the base input's own problems: build_plan reports them, at their cells
    totals: dict[str, dict] = {}
    for name in names:
        where = _scenario_place(scn, name)
        s_in = scenario_input(p_in, name, ovs)
        rows = _row_problems(s_in)
        if rows:
            problems += [Problem(where, f"scenario {name!r} makes {p.place}: {p.message}") for p in rows]
            continue
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                lite = _quick_plan(s_in)
            except InputError as err:  # a calibration the scenario breaks
                problems += [Problem(where, f"scenario {name!r}: {p}") for p in err.problems]
                continue
            bad = _non_finite(base, lite.results, [str(x) for x in s_in.workloads.column("workload")])
            if bad:
                more = f" (and {len(bad) - 3} more)" if len(bad) > 3 else ""
                problems.append(Problem(where, f"scenario {name!r} cannot be planned: {'; '.join(bad[:3])}{more} "
                                               f"would not be a finite number"))
                continue
            t = fleet_table(lite).iloc[-1]
        totals[name] = {"scenario": name, "gpus_needed": float(t["gpus_needed"]),
                        "cost_per_month": float(t["cost_per_month"]), "tpm_capacity": float(t["tpm_capacity"])}
    assert BASE not in totals
    if not problems:
        # kept on the input object itself (dataclasses.replace does not copy it to a changed input)
        p_in._scenario_totals = (_fingerprint(p_in), [totals[n] for n in names])
    return problems


def _fingerprint(p_in) -> tuple:
    return (id(p_in.models), id(p_in.gpus), id(p_in.workloads), id(p_in.optional.get(schema.SCN)),
            repr(sorted(p_in.settings.items(), key=lambda kv: kv[0])))


def cached_totals(p_in) -> list[dict] | None:
    """The scenario rows :func:`check_scenarios` computed for exactly this input (None: not
    checked, or the input was changed since)."""
    hit = getattr(p_in, "_scenario_totals", None)
    if hit is None or hit[0] != _fingerprint(p_in):
        return None
    return hit[1]


def calibration_problems(p_in) -> list[Problem]:
    """The problems of the calibration (Measurements fits, rows neither calibrated nor
    estimable: :func:`planner.plan.calibrate.fill_breakdown`), so that the reader lists them with
    every other problem in one pass instead of after the others are fixed."""
    from planner.plan.calibrate import fill_breakdown
    from planner.plan.build import table_frame

    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fill_breakdown(p_in, table_frame(p_in.models, "Models"), table_frame(p_in.gpus, "GPUs"),
                           table_frame(p_in.workloads, "Workloads"))
        except InputError as err:
            return list(err.problems)
    return []
