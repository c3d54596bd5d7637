"""The calibration's problems found while the input is read (issue 17): Measurements fits and rows
neither calibrated nor estimable are listed with every other problem, in one pass."""

from __future__ import annotations

import warnings

import numpy as np

from planner.core.errors import InputError, Problem


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
