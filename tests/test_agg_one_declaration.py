"""The declared aggregations (planner/finance/aggregations.py) give a group row's Python value and
its formula from one walk of the declaration (issue 21): the values here are hand calculations,
the formulas the SUMIFS twins over the same columns; and a Summary cell that only refers to a
Fleet cell stores that cell's value (not a second sum of the same numbers).
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from conftest import value_book
from planner.equations import tables as tb
from planner.equations.fleet import per_month
from planner.finance.aggregations import Agg, GroupCell, group_table, keys_of

NAN = math.nan

# Results of four workloads: two on H100 (one typed in lower case: SUMIFS ignores case), one on
# A100, one on L40S without demand (blank: NaN)
RESULTS = pd.DataFrame({"gpu": ["H100", "h100", "A100", "L40S"], "gpus_needed": [2.0, 3.0, 4.0, NAN],
                        "cost_per_hour": [5.0, 7.5, NAN, NAN]})
TABLE = (
    Agg("gpu", total=None),
    Agg("gpus_needed", sum_of=("Results", "gpus_needed")),
    Agg("cost_per_hour", sum_of=("Results", "cost_per_hour"), priced=True, total="priced"),
    Agg("cost_per_month", twin=per_month, args=("cost_per_hour", "@hours_per_month"), total="priced"),
    Agg("gpu_hours", sum_of=("Results", "gpus_needed"), scale="@hours_per_month"),
)
TYPES = ["H100", "A100", "L40S"]
PRICE = np.array([2.5, NAN, 1.0])  # A100 has no hourly_cost


def test_group_values_are_the_hand_sums():
    cols = group_table(TABLE, {"Results": RESULTS}, {"hours_per_month": 730.0}, {"gpu": TYPES}, PRICE)
    # H100: 2 + 3 = 5 GPUs (H100 and h100: SUMIFS ignores case); A100: 4; L40S: only a blank, 0
    assert cols["gpus_needed"].tolist() == [5.0, 4.0, 0.0]
    # cost per hour: H100 5 + 7.5 = 12.5; A100 unpriced: blank; L40S priced, nothing summed: 0
    assert cols["cost_per_hour"][0] == 12.5 and math.isnan(cols["cost_per_hour"][1]) and cols["cost_per_hour"][2] == 0
    # per month: 12.5 x 730 = 9125; blank stays blank
    assert cols["cost_per_month"][0] == 9125.0 and math.isnan(cols["cost_per_month"][1])
    # GPU hours: 5 x 730 = 3650, 4 x 730 = 2920, 0
    assert cols["gpu_hours"].tolist() == [3650.0, 2920.0, 0.0]
    # Total row: GPUs 5 + 4 + 0 = 9; the priced types' cost only, 12.5 + 0
    assert TABLE[1].total_value(cols["gpus_needed"]) == 9.0
    assert TABLE[2].total_value(cols["cost_per_hour"]) == 12.5
    assert math.isnan(TABLE[2].total_value(np.array([NAN, NAN])))  # none priced: blank, not 0


def test_group_formulas_follow_the_same_declaration():
    at = GroupCell(key_source="GPUs!$A$2", price="GPUs!$D$2", me=lambda c: {"gpu": "$A2", "cost_per_hour": "$C2"}[c])
    keys = keys_of(TABLE)
    assert keys == ("gpu",)
    f = {a.name: a.formula(at, keys) for a in TABLE}
    crit = '"="&SUBSTITUTE(SUBSTITUTE(SUBSTITUTE($A2,"~","~~"),"*","~*"),"?","~?")'  # the exact-text criterion
    assert f["gpu"] == "GPUs!$A$2"
    assert f["gpus_needed"] == f'SUMIFS(results_gpus_needed,results_gpu,{crit})'
    assert f["cost_per_hour"] == f'IF(ISNUMBER(GPUs!$D$2),SUMIFS(results_cost_per_hour,results_gpu,{crit}),"")'
    assert f["cost_per_month"] == 'IF(ISNUMBER($C2),$C2*s_hours_per_month,"")'
    assert f["gpu_hours"] == f'SUMIFS(results_gpus_needed,results_gpu,{crit})*s_hours_per_month'


def test_sum_where_all_over_many_groups_is_each_groups_sum():
    """The vectorised form (every group row at once) against the one-group form, and by hand."""
    values, per, gpu = [1.0, 2.0, NAN, 4.0, 8.0], ["q1", "Q1", "q1", "q2", "q2"], ["a", "a", "b", "A", "b"]
    many = tb.sum_where_all(values, per, ["q1", "q1", "q2", "q2", "q3"], gpu, ["a", "b", "a", "b", "a"])
    # q1/a: 1 + 2; q1/b: blank only, 0; q2/a: 4 (A, case ignored); q2/b: 8; q3: no row, 0
    assert many.tolist() == [3.0, 0.0, 4.0, 8.0, 0.0]
    one = [tb.sum_where_all(values, per, p, gpu, g) for p, g in (("q1", "a"), ("q1", "b"), ("q2", "a"))]
    assert one == [3.0, 0.0, 4.0]


_REF = re.compile(r"^=(Fleet)!\$([A-Z]+)\$(\d+)$")


def test_summary_cells_that_refer_to_a_fleet_cell_store_its_value(example_output):
    """On the old code the Summary's cost per year stored the month's total x 12 (14,100,972.0)
    while the Fleet total it refers to holds the sum of the types' years (14,100,971.999999998)."""
    # the Summary's formulas, then the values of the sheets they name only (read-only reads)
    forms = value_book(example_output, "Summary", formulas=True)
    named = {m.group(1) for row in forms["Summary"].iter_rows(values_only=True) for v in row
             if isinstance(v, str) and (m := _REF.match(v))}
    vals = value_book(example_output, "Summary", *sorted(named - {"Summary"}))
    checked = 0
    for row in forms["Summary"].iter_rows():
        for c in row:
            m = _REF.match(str(c.value)) if isinstance(c.value, str) else None
            if m:
                target = vals[m.group(1)][f"{m.group(2)}{m.group(3)}"].value
                assert vals["Summary"][c.coordinate].value == target, (c.coordinate, c.value)
                checked += 1
    assert checked >= 10  # the types table and the cost, capacity and demand cells
