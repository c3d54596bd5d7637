"""The whole input check: the input boundary's own checks (:mod:`planner.inputs.reader`) and,
in the same pass, those of the layers above it that can fail on the input: the output's sheet
sizes (:mod:`planner.plan.limits`), the calibration (rows neither calibrated nor estimable), and
each scenario's re-planned state (:func:`planner.finance.scenarios.check_scenarios`). ``planner validate``,
``planner run``, ``planner diff`` and the library's :func:`planner.read_input` all read through
:func:`read_checked`, so validate OK means run succeeds."""

from __future__ import annotations

from pathlib import Path

from planner.inputs.reader import BoundaryState, PlanInput, problems_touch, read_input

_CALIB_SHEETS = {"models", "gpus", "workloads", "settings", "measurements"}


def _sizes(state: BoundaryState) -> list:
    from planner.plan.limits import output_problems  # sheet sizes: before anything is computed or written

    return output_problems(state.n_workloads, state.settings, state.setting_place)


def _calibration(state: BoundaryState) -> list:
    # unless a sheet the calibration reads has problems of its own (its messages would only echo them)
    if state.p_in is None or problems_touch(state.problems, _CALIB_SHEETS):
        return []
    from planner.plan.calibration_checks import calibration_problems

    return calibration_problems(state.p_in)


def _scenarios(p_in: PlanInput) -> list:
    from planner.finance.scenarios import check_scenarios

    return check_scenarios(p_in)


def read_checked(path: str | Path) -> PlanInput:
    """Read ``path`` and run every check that can fail on it; :class:`~planner.core.errors.InputError`
    lists every problem at its place."""
    return read_input(path, checks=(_sizes, _calibration), after=(_scenarios,))
