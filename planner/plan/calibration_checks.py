"""The calibration's problems found while the input is read (issue 17): Measurements fits and rows
neither calibrated nor estimable are listed with every other problem, in one pass."""

from __future__ import annotations

import warnings

import numpy as np

from planner.core.errors import InputError, Problem


def calibration_problems(p_in, found=()) -> list[Problem]:
    """The problems of the calibration (Measurements fits, rows neither calibrated nor
    estimable: :func:`planner.plan.calibrate.fill_breakdown`), so that the reader lists them with
    every other problem in one pass instead of after the others are fixed.

    ``found``: the problems the reader found so far; the calibration then judges only the rows
    they leave whole (:func:`planner.inputs.clean_part.clean_part`: a row with a problem, or one
    that depends on such a row, would only echo it)."""
    from planner.inputs.clean_part import clean_part
    from planner.plan.calibrate import fill_breakdown
    from planner.plan.build import table_frame

    p_in = clean_part(p_in, found)
    if p_in is None:
        return []

    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            # keep=True: build_plan, next on this input, takes this fill instead of fitting again
            fill_breakdown(p_in, table_frame(p_in.models, "Models"), table_frame(p_in.gpus, "GPUs"),
                           table_frame(p_in.workloads, "Workloads"), keep=True)
        except InputError as err:
            return list(err.problems)
        except Exception:  # noqa: BLE001 - on rows the other problems leave whole, a fault of the
            if found:  # part: the others are listed; once they are fixed the whole input is judged
                return []
            raise
    return []
