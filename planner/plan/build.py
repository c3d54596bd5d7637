"""The library API: read an input workbook, evaluate the model, write the outputs.

>>> from planner.plan.build import build_plan
>>> from planner.workbook.writer import write_output
>>> from planner.memo.render import build_memo, write_memo
>>> p = build_plan("workbooks/example.xlsx")          # doctest: +SKIP
>>> p.results[["workload", "ttft_ms", "tpm_delivered_target"]]  # doctest: +SKIP
>>> write_output(p, "out/example-plan.xlsx")          # doctest: +SKIP
>>> write_memo(build_memo(p, "out/example-plan.xlsx"))  # doctest: +SKIP
"""

from __future__ import annotations

import datetime as _dt
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from planner.core import schema
from planner.inputs import kv_tiers

from planner.plan import columns as sheets
from planner.plan.calibrate import Calibration, fill_breakdown
from planner.plan import load_notes as load_memo
from planner.plan import decode_first_note
from planner.core.errors import Problem
from planner.plan.flags import Flags, flags_of, warnings_of
from planner.plan.frames import column_arrays
from planner.inputs.reader import PlanInput, Table, read_input
from planner.plan.sensitivity import Sensitivities, evaluate_all


@dataclass
class Plan:
    input: PlanInput
    models: pd.DataFrame
    gpus: pd.DataFrame
    workloads: pd.DataFrame
    resolved: pd.DataFrame
    results: pd.DataFrame
    hit_grid: np.ndarray
    sens: Sensitivities
    warnings: list[Problem] = field(default_factory=list)  # see flags.warnings_of
    created: _dt.datetime = field(default_factory=lambda: _dt.datetime.now(_dt.timezone.utc))
    flags: Flags | None = None  # computed once: warnings, Checks and memo read them
    calibration: "Calibration | None" = None  # planner.plan.calibrate: fits, breakdown_source, filled cells
    filled_note: str | None = None  # the Workloads blanks the planner filled, one line (planner.plan.trust)

    @property
    def settings(self) -> dict:
        return self.input.settings

    @property
    def sensitivity_hit(self) -> pd.DataFrame:
        return self.sens.frames["Sensitivity_Hit"]


def table_frame(t: Table, sheet: str) -> pd.DataFrame:
    """Canonical columns (every schema column, blank as None) then the extra columns."""
    names = [c.name for c in schema.columns(sheet)] + list(t.extras)
    return pd.DataFrame([[r.get(n) for n in names] for r in t.records], columns=names, dtype=object)


def hit_grid(step: float) -> np.ndarray:
    """0, step, 2 step, ... up to 1, with 1 always the last point."""
    n = int(np.floor(1.0 / step + 1e-9))
    grid = np.round(np.arange(n + 1) * step, 12)
    return grid if np.isclose(grid[-1], 1.0) else np.append(grid, 1.0)


def evaluate_results(resolved: pd.DataFrame) -> pd.DataFrame:
    # the decode-first open loop's rows read DF_Search's search (planner.plan.columns.RESULTS_DF; every other
    # row's value is RESULTS' own); a plan without such a row skips the search's 200 helper columns
    if not sheets.has_open_df(resolved):
        return sheets.evaluate(sheets.RESULTS, column_arrays(resolved), len(resolved))
    return sheets.evaluate(sheets.RESULTS_DF, column_arrays(resolved), len(resolved), helpers=sheets.DF_SEARCH)


def evaluate_input(p_in: PlanInput):
    """Frames of an input and its Resolved/Results (no sensitivity tables): the one path from a
    :class:`PlanInput` to numbers, shared by :func:`build_plan` and the scenario re-plans.

    Returns ``(models, gpus, workloads, resolved, results, calibration)``.
    """
    models = table_frame(p_in.models, "Models")
    gpus = table_frame(p_in.gpus, "GPUs")
    workloads = table_frame(p_in.workloads, "Workloads")
    filled, calib = fill_breakdown(p_in, models, gpus, workloads)  # typed > calibrated > estimated
    resolved = sheets.resolve(models, gpus, filled, p_in.settings)
    results = evaluate_results(resolved)
    p_in.kv_tiers = kv_tiers.apply(p_in, resolved, results)  # traced workloads: hit and KV bandwidth
    if p_in.kv_tiers is not None:
        results = evaluate_results(resolved)
    return models, gpus, workloads, resolved, results, calib


def build_plan(source: str | Path | PlanInput) -> Plan:
    """Read (unless given a :class:`PlanInput`) and evaluate every workload."""
    p_in = source if isinstance(source, PlanInput) else read_input(source)
    models, gpus, workloads, resolved, results, calib = evaluate_input(p_in)
    grid = hit_grid(float(p_in.settings["hit_step"]))
    sens = evaluate_all(resolved, results, grid, tuple(p_in.settings.get("pcie_sweep_gbps") or ()))
    plan = Plan(p_in, models, gpus, workloads, resolved, results, grid, sens,
                flags=flags_of(models, workloads, resolved, results), calibration=calib)
    # the warnings read the plan's flags: a new Plan with them, the first one is not changed
    plan = dataclasses.replace(plan, warnings=[Problem(pl, msg) for pl, msg in calib.warnings]
                               + warnings_of(plan) + load_memo.warnings(plan) + decode_first_note.warnings(plan)
                               # typed Measurements cells that differ from the file the row names
                               + [Problem(pl, msg) for t in p_in.optional.values() for pl, msg in t.warnings])
    from planner.plan.trust import apply_to_plan  # issue 20: filled blanks visible, demand, plausibility
    from planner.plan.typed_checks import typed_warnings  # issue 20 red team: typed mistakes that still plan

    from planner.plan.load_shape_checks import load_shape_warnings  # red team 4: a load read as 1 at a time
    from planner.plan.period_checks import hit_fallback_warnings  # red team 4: a period's hit that holds once

    from planner.plan.capped_loop_checks import capped_loop_warnings  # red team 5: a rate-paced capped loop
    from planner.plan.tier_checks import hbm_tier_warnings  # red team 5: an hbm tier above the HBM left
    from planner.plan.baseline_checks import baseline_warnings  # red team 7: a baseline above the target
    from planner.plan.link_checks import link_warnings  # red team 7: Gb/s for GB/s, max_seq_len in thousands
    from planner.plan.unused_load_tests import unused_load_test_warnings  # red team 7: a load test at another tp
    from planner.plan.settings_checks import settings_warnings  # red team 7: hours_per_month not a month
    from planner.plan.demand_scale import period_jump_warnings  # red team 7: a period's demand per day

    plan = apply_to_plan(plan)
    return dataclasses.replace(plan, warnings=list(plan.warnings) + typed_warnings(plan) + load_shape_warnings(plan)
                               + hit_fallback_warnings(plan) + hbm_tier_warnings(plan) + capped_loop_warnings(plan)
                               + baseline_warnings(plan) + link_warnings(plan) + unused_load_test_warnings(plan)
                               + settings_warnings(plan) + period_jump_warnings(plan))
