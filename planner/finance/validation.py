"""The whole input check: the input boundary's own checks (:mod:`planner.inputs.reader`) and,
in the same pass, those of the layers above it that can fail on the input: the output's sheet
sizes (:mod:`planner.plan.limits`), the calibration (rows neither calibrated nor estimable), and
each scenario's re-planned state (:func:`planner.finance.scenarios.check_scenarios`). ``planner validate``,
``planner run``, ``planner diff`` and the library's :func:`planner.read_input` all read through
:func:`read_checked`, so validate OK means run succeeds."""

from __future__ import annotations

from pathlib import Path

from planner.inputs.reader import BoundaryState, PlanInput, read_input


def _sizes(state: BoundaryState) -> list:
    from planner.plan.limits import output_problems  # sheet sizes: before anything is computed or written

    return output_problems(state.n_workloads, state.settings, state.setting_place)


def _calibration(state: BoundaryState) -> list:
    # on the rows the problems found so far leave whole (a row with a problem of its own, or one
    # depending on such a row, would only echo it): planner.inputs.clean_part
    if state.p_in is None:
        return []
    from planner.plan.calibration_checks import calibration_problems

    return calibration_problems(state.p_in, list(state.problems))


def _scenarios(p_in: PlanInput) -> list:
    from planner.finance.scenarios import check_scenarios

    return check_scenarios(p_in)


def read_checked(path: str | Path) -> PlanInput:
    """Read ``path`` and run every check that can fail on it; :class:`~planner.core.errors.InputError`
    lists every problem at its place."""
    return read_input(path, checks=(_sizes, _calibration), after=(_scenarios,))
