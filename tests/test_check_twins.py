"""The Checks sheet's counting twins (planner/equations/checks.py), each on a small column counted
by hand here. The formulas' recalculation in LibreOffice over a plan with offending rows is
tests/test_check_rules.py::test_stored_counts_equal_the_recalculated_counts."""

from __future__ import annotations

import math

import numpy as np

from planner.equations import checks as ck

NAN = math.nan
# a column as the writer holds it: a number, a blank (None, NaN, ""), a text, a logical value
COL = [1.0, None, NAN, "", "n/a", True, 0.5, 2, -3.0]


def test_blank_and_not_number_by_hand():
    # blank: None, NaN, "" -> 3; not a number among the filled: "n/a", True -> 2
    assert ck.count_blank(COL) == 3
    assert ck.count_not_number(COL) == 2
    assert ck.count_blank.xl("wl_tp") == "COUNTBLANK(wl_tp)"
    assert ck.count_not_number.xl("wl_tp") == "(COUNTA(wl_tp)-COUNT(wl_tp))"


def test_bounds_count_numbers_only():
    # numbers: 1, 0.5, 2, -3 (True is no number). Below 0: -3 -> 1; at or below 0.5: 0.5, -3 -> 2;
    # above 1: 2 -> 1
    assert ck.count_below(COL, minimum=0) == 1
    assert ck.count_below(COL, minimum=0.5, open_minimum=True) == 2
    assert ck.count_above(COL, maximum=1) == 1
    assert ck.count_below.xl("wl_isl", minimum=0, open_minimum=True) == 'COUNTIF(wl_isl,"<=0")'
    assert ck.count_above.xl("wl_alpha", maximum=1) == 'COUNTIF(wl_alpha,">1")'
    assert ck.count_negative([0.0, -0.1, None, "x"]) == 1
    # 1.5 and 2.25 are not whole; 2 and 3.0 are; a text is not counted
    assert ck.count_not_whole([1.5, 2, 3.0, 2.25, "x", None]) == 2


def test_names_matched_and_repeated_case_blind():
    # "Llama" matches "llama"; "GPT" matches nothing; a blank key matches nothing -> 2
    assert ck.count_unmatched(["Llama", "GPT", None], ["llama", "qwen"]) == 2
    # "a" and "A" are one name twice: both count; "b" once -> 2
    assert ck.count_repeated(["a", "A", "b", None, ""]) == 2
    assert ck.count_unmatched.xl("wl_model", "models_model").startswith("SUMPRODUCT(--ISNA(MATCH(")


def test_traced_blank_and_the_rows_beyond_the_table():
    # rows (hit_target, trace): (blank, t.jsonl) counts, (0.3, t.jsonl) and (blank, blank) do not -> 1
    assert ck.count_blank_beside([None, 0.3, None], ["t.jsonl", "t.jsonl", ""]) == 1
    assert ck.count_less(7, 1) == 6 and ck.count_less.xl("A1+B1", "C1") == "(A1+B1)-C1"
    # 4 names in the whole column, 3 planned rows -> 1 typed in after the run; an empty table is 1 row
    assert ck.count_beyond_table(["a", "b", "c", "d", None], 3) == 1
    assert ck.count_beyond_table([], 0) == -1
    assert ck.count_errors([1.0, np.inf, NAN, -np.inf]) == 2


def test_masks_and_the_first_row():
    assert list(ck.typed_without([900.0, NAN, 5.0], [NAN, NAN, 0.2])) == [True, False, False]
    assert list(ck.above([0.5, 0.9], [0.8, 0.8])) == [False, True]
    assert list(ck.below([-1.0, 2.0], 0)) == [True, False]
    assert list(ck.starts_with(["unreachable: ttft", "ttft", None], prefix="unreachable")) == [True, False, False]
    assert ck.starts_with.xl("results_binding", prefix="unreachable") == '(LEFT(results_binding,11)="unreachable")'
    # the second workload is the first marked: sheet row 3 (row 2 is the first below the header)
    assert ck.first_row([False, True, True], ["a", "b", "c"]) == "Workloads row 3: b"
    assert ck.first_row([False, False], ["a", "b"]) == ""
    assert ck.first_equal_row(["fitted", "MISSING"], ["a", "b"], text="missing") == "Workloads row 3: b"
    assert ck.count_equal(["missing", "Missing", "typed", None], text="missing") == 2
    assert ck.count_true([True, False, True]) == 2 and ck.count_true.xl("(A1:A3>0)") == "SUMPRODUCT(--(A1:A3>0))"
