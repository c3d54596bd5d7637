"""``planner diff`` between two quarters of an analyst's workbook, read as finance reads it (red team 7).

Found: the diff's "Warnings new in NEW" listed a warning OLD already had, because a number in it moved
with the new demand (the t_decode_batch note's "3,747 ms of chip time" became "3,701 ms"): a finance reader
takes it for a new problem. Now warnings are compared with their numbers masked; a warning of another
kind on the row is still new.

The bridge by hand (test_redteam7_baseline's docstring: TPM at hit h = 1,200 x 60,000 / C(h), C(0.5) =
1,053.81072 ms, C(0.7) = 1,033.935008 ms, C(0.8) = 1,023.697152 ms; utilisation 1, USD 2.50 a GPU-hour, 730 h):
OLD 'chat' at demand 10,000,000, hit 0.5: 147 GPUs; NEW demand 12,000,000: 1.2e7 / 68,323.47 = 175.64 -> 176,
+29 GPUs = +29 x 2.5 x 730 = USD 52,925 a month, all of it in the demand step.
"""

from __future__ import annotations

import pytest

import planner
from planner.workbook.input_sheets import write_input_workbook
from test_redteam7_baseline import GPUS, MODELS, ROW


def _pair(tmp_path, old_row, new_row):
    old, new = tmp_path / "q1.xlsx", tmp_path / "q2.xlsx"
    write_input_workbook(old, MODELS, GPUS, [old_row], {"quarter": "2027-Q1"})
    write_input_workbook(new, MODELS, GPUS, [new_row], {"quarter": "2027-Q2"})
    return planner.diff_plans(old, new)


def test_a_warning_whose_numbers_moved_is_not_new(tmp_path):
    # hit_baseline 0.7 above hit_target 0.5 in both: the cost of that baseline moves with the demand
    old = dict(ROW, hit_baseline=0.7, demand_tpm=10_000_000)
    d = _pair(tmp_path, old, dict(old, demand_tpm=12_000_000))
    steps = dict(d.bridge)
    assert d.new_warnings == [], d.new_warnings
    assert steps["demand"] == pytest.approx(52_925.0, abs=0.01)   # +29 GPUs x 2.5 x 730
    assert steps["hit"] == pytest.approx(0.0, abs=1e-9)


def test_a_warning_of_another_kind_is_still_new(tmp_path):
    old = dict(ROW, demand_tpm=10_000_000)
    d = _pair(tmp_path, old, dict(old, hit_baseline=0.7))
    assert len(d.new_warnings) == 1 and "hit_baseline 70.0% is above hit_target 50.0%" in d.new_warnings[0]
