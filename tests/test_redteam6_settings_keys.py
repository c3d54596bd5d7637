"""A Settings key typed close to a setting's name is refused, not kept as a silent note row (red team 6).

Found as the issue 20 checker types a finance workbook: Settings ``target_utilisation`` 0.8 (the
British spelling) was kept as a note row, so the plan ran at the default ``target_utilization`` 1:
exit 0, no message, and fewer GPUs than asked for. By hand (the deployment of
tests/test_load_workbook.py: P = 400 ms, D = 400 ms, isl 4000, osl 200, so one instance delivers
4200 x 60,000 / 800 = 315,000 tokens/min): demand 6,000,000 tokens/min needs
ceil(6e6 / 315,000) = ceil(19.05) = 20 instances at utilisation 1 and ceil(19.05 / 0.8) = 24 at 0.8.
"""

from __future__ import annotations

import math

import openpyxl
import pytest

from planner.core.errors import InputError
from planner.inputs.reader import read_input
from planner.plan.build import build_plan
from test_hand_calc import write_input
from test_load_workbook import BASE, GPUS, MODELS

WL = [dict(workload="chat", demand_tpm=6_000_000, **BASE)]
TPM = 4200 * 60_000 / 800


def _input(tmp_path, rows):
    p = tmp_path / "in.xlsx"
    write_input(p, MODELS, GPUS, WL)
    wb = openpyxl.load_workbook(p)
    for r in rows:
        wb["Settings"].append(list(r))
    wb.save(p)
    return p


def test_hand_counts():
    assert math.ceil(6e6 / TPM) == 20 and math.ceil(6e6 / (TPM * 0.8)) == 24


def test_the_setting_typed_right_plans_at_it(tmp_path):
    plan = build_plan(_input(tmp_path, [("target_utilization", 0.8)]))
    assert float(plan.results.iloc[0]["instances_needed"]) == 24


@pytest.mark.parametrize("key, meant", [("target_utilisation", "target_utilization"),
                                        ("Target Utilisation", "target_utilization"),
                                        ("hours_per_mnth", "hours_per_month"),
                                        ("demand_grwth", "demand_growth"),
                                        ("period", "periods")])
def test_a_near_miss_key_is_refused_at_its_cell(tmp_path, key, meant):
    value = "2027-Q1..2027-Q2" if meant == "periods" else 0.8 if "util" in meant else 0.1 if "growth" in meant \
        else 720
    with pytest.raises(InputError) as e:
        read_input(_input(tmp_path, [(key, value)]))
    msgs = [str(p) for p in e.value.problems]
    assert any(m.startswith("Settings!A3:") and f"it looks like {meant}" in m for m in msgs), msgs


def test_notes_and_keys_beside_their_setting_stay_note_rows(tmp_path):
    # an unrelated note, a near key whose setting is typed too, and a near key with no value
    p_in = read_input(_input(tmp_path, [("owner", "capacity team"), ("target_utilization", 0.8),
                                        ("target_utilisation", "see row above"), ("hours_per_mnth", None)]))
    assert p_in.settings["target_utilization"] == 0.8
    assert [k for k, _v in p_in.settings_extra] == ["owner", "target_utilisation", "hours_per_mnth"]


def test_a_value_without_a_key_is_refused_at_its_cell(tmp_path):
    """A value whose key cell was left blank (a paste one column off, a key deleted) named no
    setting and was dropped without a word; it is now a located problem. A row blank in both
    cells stays a blank row."""
    p = _input(tmp_path, [(None, 0.8), (None, None)])
    with pytest.raises(InputError) as e:
        read_input(p)
    msgs = [str(x) for x in e.value.problems]
    assert any(m.startswith("Settings!B3:") and "has no key" in m and "0.8" in m for m in msgs), msgs
    assert not any("Settings!B4" in m for m in msgs), msgs
