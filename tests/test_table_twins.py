"""The table twins the declared sheets are built from (planner/equations/tables.py, demand.py):
each numpy function against a hand calculation, and each Excel twin recalculated by LibreOffice
on a small sheet holding the same data: the spreadsheet's value is the hand value too.

The data (sheet T, rows 2-5)::

    A gpus   3, blank, 5, 2          B cost  2.0, blank, 1.5, blank
    C name   H100, a100, L40S, h100  (H100 twice, in two cases: MATCH takes the first, SUMIFS both)
    E2 730 (hours)  E3 0  E4 120 (capacity)  E5 100 (demand)   F2 -4  F3 7   G2 " Tokens/Hour "  G3 blank
    H group  x, y, x, y
    J curve capacity 0, 1, 2, 4 [GiB]   K curve hit 0, 0.2, 0.5, 0.6   L2 3, L3 5, L4 0.5 (capacities looked up)
"""

from __future__ import annotations

import math

import numpy as np
import openpyxl
import pytest
import xlsxwriter

from planner.core.refs import cell, cell_range
from planner.equations import demand as dm
from planner.equations import fleet as fl
from planner.equations import tiers
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
GROUP = ["x", "y", "x", "y"]
CAPS, HITS, LOOKED = [0.0, 1.0, 2.0, 4.0], [0.0, 0.2, 0.5, 0.6], [3.0, 5.0, 0.5]
H = ref(GROUP, cell_range(1, 7, 4, 7))
J, K = ref(CAPS, cell_range(1, 9, 4, 9)), ref(HITS, cell_range(1, 10, 4, 10))
L = [ref(v, cell(1 + i, 11)) for i, v in enumerate(LOOKED)]
B2, K3, K4 = ref(2.0, cell(1, 1)), ref(0.2, cell(2, 10)), ref(0.5, cell(3, 10))
n = lambda v: ref(v, repr(v))  # noqa: E731 (a number typed into the formula)

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
    ("typed", of(tb.typed_or, A2, E[4]), 3.0),                               # A2 typed: 3
    ("typed, blank", of(tb.typed_or, A3, E[4]), 120.0),                      # A3 blank: the fall-back E4
    ("typed, blank, an expression", of(tb.typed_or, A3, ref(20.0, "$E$4-$E$5")), 20.0),  # 120 - 100
    ("text", of(tb.text_or, ref(" Tokens/Hour ", cell(1, 6)), ref("x", '"x"')), " Tokens/Hour "),
    ("text, blank", of(tb.text_or, ref(None, cell(2, 6)), ref("x", '"x"')), "x"),
    ("at row", of(tb.at_row, A, ref(np.array([3]), "3")), 5.0),              # the 3rd entry: A4
    ("position", of(tb.position, C, key(["L40S"], KEYS["L40S"])), 3),
    ("unit", of(dm.unit_or_default, ref(" Tokens/Hour ", cell(1, 6))), "tokens/hour"),
    ("unit, blank", of(dm.unit_or_default, ref(None, cell(2, 6))), "tokens/min"),
    # group sums of the Fleet tables
    ("sum where all", of(tb.sum_where_all, A, C, key("h100", KEYS["h100"]), H, ref("y", '"y"')), 2.0),  # row 5 only
    ("priced", of(tb.priced, B2, E[4]), 120.0),
    ("priced, no price", of(tb.priced, ref(NAN, cell(2, 1)), E[4]), ""),
    ("priced scaled", of(tb.priced_scaled, B2, F3, E[2]), 5110.0),           # 7 x 730
    ("times", of(tb.times, F3, F2), -28.0),
    ("priced total", of(tb.priced_total, B), 3.5),                           # 2.0 + 1.5
    ("priced total, none", of(tb.priced_total, ref([NAN], cell(2, 1))), ""),
    ("largest", of(tb.largest, A), 5.0),
    ("row of", of(tb.row_of, A, n(5.0)), 3),                                 # 5 is the 3rd entry
    ("both typed", of(tb.both_typed_or, A2, F2, ref("catalog", '"catalog"')), "input"),
    ("one blank", of(tb.both_typed_or, A3, F2, ref("catalog", '"catalog"')), "catalog"),
    ("gpu cost per month", of(fl.gpu_cost_per_month, A2, B2, E[2]), 4380.0),  # 3 x 2.0 x 730
    ("gpu cost, no demand", of(fl.gpu_cost_per_month, A3, B2, E[2]), ""),
    # the KV tiers' equations
    ("curve between", of(tiers.curve_hit, L[0], J, K, n(4)), 0.55),          # 0.5 + (3 - 2)(0.6 - 0.5)/(4 - 2)
    ("curve beyond", of(tiers.curve_hit, L[1], J, K, n(4)), 0.6),            # flat after the last point
    ("curve first step", of(tiers.curve_hit, L[2], J, K, n(4)), 0.1),        # 0 + 0.5 x 0.2 / 1
    ("effective bandwidth", of(tiers.effective_kv_gbps, K4, n(0.05), n(25.0)), 10.0),  # 0.5 / 0.05
    ("all in HBM", of(tiers.effective_kv_gbps, K4, n(0.0), n(25.0)), 1e290),
    ("no hit", of(tiers.effective_kv_gbps, n(0.0), n(0.0), n(25.0)), 25.0),
    ("units per instance", of(tiers.units_per_instance, A2), 3.0),
    ("units, no demand", of(tiers.units_per_instance, A3), 0.0),
    ("units per node", of(tiers.units_per_node, n(9.0), n(8.0)), 2.0),      # ceil(9 / 8)
    ("units, a full node", of(tiers.units_per_node, n(8.0), n(8.0)), 1.0),
    ("declared", of(tiers.declared_or_ceiling, B2, n(4.0)), 2.0),
    ("ceiling", of(tiers.declared_or_ceiling, E[3], n(4.0)), 4.0),
    ("curve last", of(tiers.curve_last, ref([NAN] + CAPS, "$J:$J"), n(2), n(4)), 4.0),  # J5: row 2 + 4 - 1
    ("saved or zero", of(tiers.saved_or_zero, E[4], E[5]), 20.0),           # 120 - 100
    ("saved or zero, blank with", of(tiers.saved_or_zero, A2, A3), 3.0),     # 3 - 0 (no demand: none)
    ("saved or zero, blank without", of(tiers.saved_or_zero, A3, F3), -7.0),  # 0 - 7
    ("break-even", of(tiers.break_even_price, E[4], B2, n(3.0)), 20.0),     # 120 / (2 x 3)
    ("break-even, none bought", of(tiers.break_even_price, E[4], E[3], n(3.0)), ""),
    ("per unit bought", of(tiers.per_unit_bought, E[4], ref(6.0, "2*3")), 20.0),
    ("minimum", of(tiers.minimum, A), 2.0),
    ("at minimum", of(tiers.at_minimum, C, A), "h100"),                      # A's lowest, 2, is row 5
    ("traced, tiers", of(tiers.kv_gbps_of_trace, A3, F3, E[4], E[5]), 100.0),
    ("typed hit and bandwidth", of(tiers.kv_gbps_of_trace, A2, F3, E[4], E[5]), 7.0),
    ("typed hit, PCIe", of(tiers.kv_gbps_of_trace, A2, A3, E[4], E[5]), 120.0),
    ("HBM free, none", of(tiers.hbm_free_gib, F2, F3), 0.0),                 # max(0, -4) x 7
    ("HBM free", of(tiers.hbm_free_gib, A2, F3), 21.0),                      # 3 x 7
    ("hits text", of(tiers.hits_text, K3, K4), "20% / 50%"),
    # the Explorer and the Checks sheet (kinds: H, the counts: A)
    ("shown", of(tb.shown_when, ref("x", cell(1, 7)), ref("x", '"x"'), E[4]), 120.0),
    ("not shown", of(tb.shown_when, ref("y", cell(2, 7)), ref("x", '"x"'), E[4]), ""),
    ("kind total", of(tb.kind_total, H, A, ref("y", '"y"')), 2.0),           # rows 3 (blank) and 5 (2)
    ("master status", of(tb.master_status, ref(["error", "warning"], '{"error","warning"}'),
                         ref([0.0, 3.0], "{0,3}")), "OK"),                 # 3 rows found by a warning only
    ("check ok", of(tb.check_status, E[3], ref("error", '"error"')), "OK"),
    ("check fails", of(tb.check_status, F3, ref("error", '"error"')), "FAIL"),
    ("check warns", of(tb.check_status, F3, ref("warning", '"warning"')), "WARN"),
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


def test_typed_or_parenthesises_an_expression_fall_back():
    """The fall-back of IF(ISNUMBER(x),x,fallback) in parentheses when it is an expression (the
    Resolved and Calibration cells), a cell, name, number or call as it is."""
    assert tb.typed_or.xl("Workloads!$H2", "$T2+$U2") == "IF(ISNUMBER(Workloads!$H2),Workloads!$H2,($T2+$U2))"
    assert tb.typed_or.xl("A1", "s_alpha") == "IF(ISNUMBER(A1),A1,s_alpha)"
    assert tiers.saved_or_zero.xl("A1", "B1") == "IF(ISNUMBER(A1),A1,0)-IF(ISNUMBER(B1),B1,0)"


def test_waterfall_zero_step_is_stored_as_0():
    """A zero step: -(0.0) is -0.0 in IEEE arithmetic, and the diff workbook stored it so (MAX(-K3,0)
    beside a stored -0.0); a spreadsheet has no -0, so the stored value is 0 (issue 21)."""
    assert str(float(tb.fall(0.0))) == "0.0" and str(float(tb.rise(-0.0))) == "0.0"
    assert str(float(tb.floating_base(-0.0, 0.0))) == "0.0" and str(float(tb.floating_base(0.0, -0.0))) == "0.0"
    assert float(tb.fall(-3.0)) == 3.0 and float(tb.floating_base(-4.0, 2.0)) == -4.0  # otherwise unchanged


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
    for r, (g, c, h) in enumerate(zip(GROUP, CAPS, HITS), start=1):
        ws.write_string(r, 7, g)
        ws.write_number(r, 9, c)
        ws.write_number(r, 10, h)
    for i, v in enumerate(LOOKED):
        ws.write_number(1 + i, 11, v)
    for i, (_label, both, _hand) in enumerate(CASES):
        ws.write_formula(i, 13, both.formula, None, "")  # no stored value: LibreOffice's own (column N)
    wb.close()
    out = openpyxl.load_workbook(recalc(path), data_only=True)["T"]
    for i, (label, _both, hand) in enumerate(CASES):
        got = out.cell(i + 1, 14).value
        got = "" if got is None else got
        if isinstance(hand, str):
            assert got == hand, label
        else:
            assert got == pytest.approx(hand, abs=1e-12), label


def test_pcie_bandwidth_of_the_generation():
    """A GPU without pcie_gbps: Gen5 x16 50 GB/s, Gen4 x16 (or no generation) 25 GB/s
    (planner/equations/constants.py; the Resolved pcie_gbps rule and the calibration read it)."""
    from planner.equations.kvhit import pcie_gbps_of_gen

    assert pcie_gbps_of_gen([5, 4, None, 5.0]).tolist() == [50.0, 25.0, 25.0, 50.0]
    assert float(pcie_gbps_of_gen(None)) == 25.0
    assert pcie_gbps_of_gen.xl("INDEX(gpus_pcie_gen,$E2)") == "IF(INDEX(gpus_pcie_gen,$E2)=5,c_pcie_gen5_gbps,c_pcie_gen4_gbps)"
