"""The table twins the declared sheets are built from (planner/equations/tables.py, demand.py):
each numpy function against a hand calculation, and each Excel twin recalculated by LibreOffice
on a small sheet holding the same data: the spreadsheet's value is the hand value too.

The data (sheet T, rows 2-5)::

    A gpus   3, blank, 5, 2          B cost  2.0, blank, 1.5, blank
    C name   H100, a100, L40S, h100  (H100 twice, in two cases: MATCH takes the first, SUMIFS both)
    E2 730 (hours)  E3 0  E4 120 (capacity)  E5 100 (demand)   F2 -4  F3 7   G2 " Tokens/Hour "  G3 blank
"""

from __future__ import annotations

import math

import numpy as np
import openpyxl
import pytest
import xlsxwriter

from planner.core.refs import cell, cell_range
from planner.equations import demand as dm
from planner.equations import tables as tb
from planner.finance.cells import of, ref

NAN = math.nan
GPUS = [3.0, NAN, 5.0, 2.0]
COST = [2.0, NAN, 1.5, NAN]
NAMES = ["H100", "a100", "L40S", "h100"]
A, B, C = (ref(v, cell_range(1, j, 4, j)) for j, v in enumerate((GPUS, COST, NAMES)))
E = {k: ref(v, cell(k - 1, 4, True, True)) for k, v in ((2, 730.0), (3, 0.0), (4, 120.0), (5, 100.0))}
F2, F3 = ref(-4.0, cell(1, 5)), ref(7.0, cell(2, 5))
A2, A3 = ref(3.0, cell(1, 0)), ref(NAN, cell(2, 0))
key = lambda text, row: ref(text, cell(row, 3))  # noqa: E731 (D column: the looked-up names)
KEYS = {"h100": 1, "a100": 2, "L40S": 3}   # D2, D3, D4

# (label, declared cell, hand value with its derivation); "" is a blank result
CASES = [
    ("count", of(tb.count_numbers, A), 3),                                   # 3, 5, 2
    ("counta", of(tb.count_filled, C), 4),
    ("total", of(tb.total, A), 10.0),                                        # 3 + 5 + 2
    ("per month", of(tb.priced_total_per_month, B, E[2]), 2555.0),           # (2.0 + 1.5) x 730
    ("per month, none priced", of(tb.priced_total_per_month, ref([NAN], cell(2, 1)), E[2]), ""),
    ("uncosted", of(tb.uncosted, A, B), 2.0),                                # 10 GPUs - (3 + 5) priced
    ("lookup", of(tb.lookup, A, C, key("h100", KEYS["h100"])), 3.0),         # first row, H100, case ignored
    ("saved", of(tb.saved, E[4], E[5]), 20.0),                               # 120 - 100
    ("saved, blank", of(tb.saved, A3, E[5]), ""),
    ("headroom", of(tb.headroom, E[4], E[5]), 0.2),                          # 120 / 100 - 1
    ("headroom, no demand", of(tb.headroom, E[4], E[3]), ""),
    ("warning, some", of(tb.demand_warning, of(tb.count_numbers, A), of(tb.count_filled, C)),
     "WARNING: 1 workload(s) without demand_tpm are left out of the fleet"),  # 4 - 3
    ("warning, none", of(tb.demand_warning, E[3], of(tb.count_filled, C)),
     "WARNING: no workload has a demand_tpm: the fleet is sized for nothing"),
    ("warning, all", of(tb.demand_warning, of(tb.count_filled, C), of(tb.count_filled, C)), ""),
    ("sum where", of(tb.sum_where, A, C, key("h100", KEYS["h100"])), 5.0),   # H100 3 + h100 2
    ("priced sum where", of(tb.priced_sum_where, B, C, key("h100", KEYS["h100"])), 2.0),  # 2.0 + blank
    ("priced sum where, none", of(tb.priced_sum_where, B, C, key("a100", KEYS["a100"])), ""),
    ("uncosted note", of(tb.uncosted_note, of(tb.uncosted, A, B)),
     "Total cost covers the priced GPU types only: 2 GPUs of types without hourly_cost are not costed"),
    ("uncosted note, none", of(tb.uncosted_note, E[3]), "Every GPU in the plan is priced: the total cost is complete"),
    ("change", of(tb.change, F3, F2), 11.0),                                 # 7 - (-4)
    ("change from blank", of(tb.change, A3, F3), -7.0),                      # blank counts 0: 0 - 7
    ("running", of(tb.running_total, F2, F3), 3.0),                          # -4 + 7
    ("base", of(tb.floating_base, F2, F3), -4.0),
    ("rise of a fall", of(tb.rise, F2), 0.0),
    ("rise", of(tb.rise, F3), 7.0),
    ("fall", of(tb.fall, F2), 4.0),
    ("fall of a rise", of(tb.fall, F3), 0.0),
    ("bridge check", of(tb.bridge_check, E[4], A, E[5]), 30.0),              # 120 + 10 - 100
    ("same", of(tb.same, E[4]), 120.0),
    ("number", of(tb.number_or_blank, A2), 3.0),
    ("number, blank", of(tb.number_or_blank, A3), ""),
    ("at row", of(tb.at_row, A, ref(np.array([3]), "3")), 5.0),              # the 3rd entry: A4
    ("position", of(tb.position, C, key(["L40S"], KEYS["L40S"])), 3),
    ("unit", of(dm.unit_or_default, ref(" Tokens/Hour ", cell(1, 6))), "tokens/hour"),
    ("unit, blank", of(dm.unit_or_default, ref(None, cell(2, 6))), "tokens/min"),
]


def _py(v):
    """A declared value as a plain scalar ('' for NaN)."""
    v = np.asarray(v, dtype=object).ravel()[0] if isinstance(v, (np.ndarray, list)) else v
    if isinstance(v, (float, np.floating)) and math.isnan(v):
        return ""
    return v.item() if hasattr(v, "item") else v


@pytest.mark.parametrize("label, both, hand", CASES, ids=[c[0] for c in CASES])
def test_python_value_is_the_hand_value(label, both, hand):
    got = _py(both.value)
    if isinstance(hand, str):
        assert got == hand
    else:
        assert got == pytest.approx(hand, abs=1e-12)


def test_waterfall_zero_step_keeps_pythons_order():
    """max(-0.0, 0.0) is -0.0 in Python (the first when equal): the stored value of a step of 0
    is what the diff workbook always stored."""
    assert str(float(tb.fall(0.0))) == str(max(-0.0, 0.0)) == "-0.0"
    assert str(float(tb.floating_base(0.0, -0.0))) == str(min(0.0, -0.0))


@pytest.mark.libreoffice
def test_twins_recalculated_by_libreoffice_are_the_hand_values(tmp_path, recalc):
    path = tmp_path / "twins.xlsx"
    wb = xlsxwriter.Workbook(str(path))
    ws = wb.add_worksheet("T")
    for r, (g, c, n) in enumerate(zip(GPUS, COST, NAMES), start=1):
        if not math.isnan(g):
            ws.write_number(r, 0, g)
        if not math.isnan(c):
            ws.write_number(r, 1, c)
        ws.write_string(r, 2, n)
    for name, r in KEYS.items():
        ws.write_string(r, 3, name)
    for k in E:
        ws.write_number(k - 1, 4, E[k].value)
    ws.write_number(1, 5, F2.value)
    ws.write_number(2, 5, F3.value)
    ws.write_string(1, 6, " Tokens/Hour ")
    for i, (_label, both, _hand) in enumerate(CASES):
        ws.write_formula(i, 8, both.formula, None, "")  # no stored value: LibreOffice's own
    wb.close()
    out = openpyxl.load_workbook(recalc(path), data_only=True)["T"]
    for i, (label, _both, hand) in enumerate(CASES):
        got = out.cell(i + 1, 9).value
        got = "" if got is None else got
        if isinstance(hand, str):
            assert got == hand, label
        else:
            assert got == pytest.approx(hand, abs=1e-12), label
