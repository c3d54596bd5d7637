"""Output size limits, checked on the input before anything is computed or written (issue 17).

The sheet sizes follow from the number of workloads and two Settings: ``hit_step`` (the
points of the Sensitivity_Hit grid) and ``pcie_sweep_gbps`` (the rows of Sensitivity_PCIe
per workload). Each limit is a located problem of the input with the resulting sheet
size in the message, so ``planner validate`` says it and ``planner run`` never starts a
write that would fail (or take hours) half-way.

Limits (Excel's own from :mod:`planner.workbook.layout`; the planner's chosen to keep a run in
minutes and a workbook openable):

* ``hit_step`` >= :data:`MIN_HIT_STEP` (1,001 grid points);
* ``pcie_sweep_gbps`` at most :data:`MAX_PCIE_SWEEP` values;
* Tornado: one sheet (``len(DRIVERS)`` rows per workload) within Excel's 1,048,576 rows;
* every long table at most :data:`MAX_TABLE_SHEETS` sheets of Excel's rows.
"""

from __future__ import annotations

import math

from planner.core.errors import Problem

MIN_HIT_STEP = 0.001
MAX_PCIE_SWEEP = 64
MAX_TABLE_SHEETS = 8


def grid_points(step: float) -> int:
    """Points of :func:`planner.plan.build.hit_grid` for ``step``: 0, step, ... and 1 (without building it)."""
    n = round(1.0 / step)
    if math.isclose(n * step, 1.0, rel_tol=1e-9):
        return n + 1          # 1 is a point of the grid: 0 .. n steps
    return math.floor(1.0 / step) + 2  # 0 .. floor(1/step) steps, then 1 appended


def output_problems(n_workloads: int, settings: dict, place) -> list[Problem]:
    """The size problems of an input with ``n_workloads`` workloads; ``place(key)`` is the
    Settings cell of a key (or ``Settings`` when it is not typed)."""
    from planner.core.excel import MAX_DATA_ROWS
    from planner.plan.sensitivity import DRIVERS, alpha_table, hit_alpha_table, pcie_table, tornado_calc_table

    rows = MAX_DATA_ROWS + 1
    problems: list[Problem] = []
    n = max(n_workloads, 0)
    step = settings.get("hit_step")
    k_hit = None
    if isinstance(step, (int, float)) and step > 0:
        k_hit = grid_points(float(step))
        if step < MIN_HIT_STEP:
            problems.append(Problem(place("hit_step"), (
                f"hit_step {step:g} makes a grid of {k_hit:,} hit ratios: Sensitivity_Hit would hold "
                f"{k_hit * n:,} rows ({k_hit:,} per workload x {n:,} workloads); the smallest step is "
                f"{MIN_HIT_STEP:g} ({grid_points(MIN_HIT_STEP):,} points)")))
            k_hit = None  # said once
    sweep = tuple(settings.get("pcie_sweep_gbps") or ())
    if len(sweep) > MAX_PCIE_SWEEP:
        problems.append(Problem(place("pcie_sweep_gbps"), (
            f"pcie_sweep_gbps lists {len(sweep)} bandwidths: Sensitivity_PCIe would hold {(3 + len(sweep)) * n:,} "
            f"rows ({3 + len(sweep)} per workload x {n:,} workloads); at most {MAX_PCIE_SWEEP} are allowed")))
        sweep = ()
    k_tornado = len(DRIVERS)
    if n * k_tornado > MAX_DATA_ROWS:
        problems.append(Problem("Workloads", (
            f"{n:,} workloads make a Tornado sheet of {n * k_tornado:,} rows ({k_tornado} drivers per workload), "
            f"above Excel's {rows:,}-row sheet: at most {MAX_DATA_ROWS // k_tornado:,} workloads per input "
            f"workbook; split them over several")))
    tables = [("Sensitivity_Alpha", alpha_table().k), ("Sensitivity_PCIe", pcie_table(sweep).k),
              ("Sensitivity_HitAlpha", hit_alpha_table().k), ("Tornado_Calc", tornado_calc_table().k)]
    if k_hit is not None:
        tables.insert(0, ("Sensitivity_Hit", k_hit))
    for sheet, k in tables:
        per_sheet = (MAX_DATA_ROWS // k) * k
        sheets_needed = math.ceil(n * k / per_sheet) if per_sheet else math.inf
        if sheets_needed > MAX_TABLE_SHEETS:
            where = place("hit_step") if sheet == "Sensitivity_Hit" else "Workloads"
            problems.append(Problem(where, (
                f"{sheet} would hold {n * k:,} rows ({k:,} per workload x {n:,} workloads): "
                f"{sheets_needed:,} sheets of {rows:,} rows, above the limit of {MAX_TABLE_SHEETS}; "
                f"plan fewer workloads per workbook" + (" or choose a larger hit_step" if sheet == "Sensitivity_Hit"
                                                        else ""))))
    return problems
