"""The fast formula path writes exactly what XlsxWriter's own path would (tests the private
behaviour planner.workbook.xlfast relies on), and the output stays row-ordered and complete."""

from __future__ import annotations

import re
import zipfile

import pytest
import xlsxwriter
from xlsxwriter.worksheet import Worksheet

from conftest import EXAMPLE, edited_example, repeat_workloads
from planner.plan.build import build_plan
from planner.workbook.writer import write_output
from planner.core.refs import ROW, WL_ROW, cell, sheet_ref
from planner.workbook.xlfast import FastFormulaWorksheet, FormulaTemplate, needs_upstream


def _formulas(path) -> list[str]:
    with zipfile.ZipFile(path) as z:
        xml = "".join(z.read(n).decode("utf-8") for n in z.namelist() if n.startswith("xl/worksheets/sheet"))
    return re.findall(r"<f>([^<]*)</f>", xml)


@pytest.fixture(scope="module")
def example_formulas(example_output):
    return _formulas(example_output)


# The row number of a cell reference (digits after a column letter or "$", not followed by a
# digit, a letter, "(", "_" or "."): the formulas that differ only there have one shape.
_ROW_DIGITS = re.compile(r"(?<=[A-Z$])\d+(?![\d(A-Za-z_.])")
_CALL = re.compile(r"\S[A-Za-z0-9_.]*\(")  # a name and its "(" with the character before it


def test_fast_path_equals_upstream_on_every_formula_of_the_example(tmp_path, example_formulas):
    r"""Every formula shape of the example (24,910 distinct formulas, 564 shapes): the fast path
    and upstream give the formula itself. Both look only at the text's function calls
    (upstream: ``re.sub(r"\bNAME\(" ...)``, the "_xlfn." prefix and array braces; see
    Worksheet._prepare_formula), and a shape differs from its formulas only in row digits that
    are neither in a name nor before "(" and stay digits (so word boundaries stay): checked
    below on every formula, so one formula per shape stands for all of them (12 s CPU -> 1 s)."""
    wb = xlsxwriter.Workbook(str(tmp_path / "x.xlsx"))
    upstream = wb.add_worksheet("up")
    fast = wb.add_worksheet("fast", worksheet_class=FastFormulaWorksheet)
    assert len(example_formulas) > 10_000
    shapes: dict[str, str] = {}
    for f in set(example_formulas):
        shape = _ROW_DIGITS.sub("0", f)
        assert _CALL.findall(shape) == _CALL.findall(f) and ("_xlfn." in shape) == ("_xlfn." in f), f
        assert (shape[:1] == "{", shape[-1:] == "}") == (f[:1] == "{", f[-1:] == "}"), f  # array braces
        shapes.setdefault(shape, f)
    assert 100 < len(shapes) < len(set(example_formulas)) / 10
    for f in shapes.values():
        f = f.replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"')
        assert not needs_upstream("=" + f)
        assert fast._prepare_formula("=" + f) == upstream._prepare_formula("=" + f) == f
    wb.close()


@pytest.mark.parametrize("formula", ["=XLOOKUP(A1,B1:B3,C1:C3)", "=SORT(A1:A3)", "=_xlfn.STDEV.S(A1:A3)",
                                     "={1,2}", "=FILTER(A1:A3,A1:A3>0)", "=LET(x,1,x)"])
def test_formulas_that_need_upstream_take_it(tmp_path, formula):
    wb = xlsxwriter.Workbook(str(tmp_path / "x.xlsx"), {"use_future_functions": True})
    up = wb.add_worksheet("up")
    fast = wb.add_worksheet("fast", worksheet_class=FastFormulaWorksheet)
    assert fast._prepare_formula(formula) == up._prepare_formula(formula)
    wb.close()


def test_templates_refuse_formulas_needing_upstream():
    with pytest.raises(ValueError):
        FormulaTemplate(f"XLOOKUP({cell(ROW, 0)},B:B,C:C)")
    # the row holes are slots, not sentinel row numbers: a real row 1048576 stays as it is,
    # and braces in the text are kept
    t = FormulaTemplate(cell(ROW, 0, col_abs=True) + "*" + sheet_ref("Resolved", WL_ROW, 1) + '+c_ms_per_s+A1048576&"{0}"')
    assert t(4, 9) == '=$A5*Resolved!$B10+c_ms_per_s+A1048576&"{0}"'
    assert t.fill(5, 10) == t(4, 9) and t.slots == (0, 1)


def test_write_vetted_stores_what_upstream_stores(tmp_path, example_formulas):
    """write_vetted skips upstream's dynamic-array test: sound because every name that test looks for
    is one that a template's check refuses (needs_upstream), and it stores the same cell as
    upstream's write_formula on every formula shape of the example and on row changes."""
    from xlsxwriter.worksheet import re_dynamic_function

    names = re.findall(r"([A-Z][A-Z0-9_.]+)\\\(", re_dynamic_function.pattern)
    assert len(names) > 20 and all(needs_upstream(f"={n}(A1)") for n in names)
    wb = xlsxwriter.Workbook(str(tmp_path / "x.xlsx"), {"constant_memory": True})
    up = wb.add_worksheet("up", worksheet_class=FastFormulaWorksheet)
    fast = wb.add_worksheet("fast", worksheet_class=FastFormulaWorksheet)
    sample = sorted({_ROW_DIGITS.sub("0", f): f for f in set(example_formulas)}.values())
    for r, f in enumerate(sample):
        f = "=" + f.replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"')
        assert up.write_formula(r, 1, f, None, r) == fast.write_vetted(r, 1, f, None, r) == 0
        assert fast.table[r][1] == up.table[r][1]
    assert fast.write_vetted(1_048_576, 0, "=1") == up.write_formula(1_048_576, 0, "=1") == -1  # past the last row
    wb.close()


def test_upstream_still_has_the_private_method_we_override():
    assert callable(getattr(Worksheet, "_prepare_formula", None))
    assert callable(getattr(Worksheet, "_write_formula", None))
    major = int(xlsxwriter.__version__.split(".")[0])
    assert major == 3, "planner.workbook.xlfast is tested against XlsxWriter 3.x only (pyproject pins <4)"


def test_block_and_sheet_boundaries_keep_every_value(tmp_path, monkeypatch):
    """Small write blocks and small sheets: every stored value still lands in its cell. (Four
    workloads of the example: every sensitivity table still spans several 40-row sheets and
    many 7-row blocks, at a third of the whole example's write.)"""
    from planner.workbook import long_tables
    from test_recalc import compare_sheet
    from conftest import sheet_values

    monkeypatch.setattr(long_tables, "WRITE_BLOCK", 7)
    src, _ = edited_example(tmp_path / "four.xlsx", workloads=4)
    plan = build_plan(src)
    out = tmp_path / "blocks.xlsx"
    write_output(plan, out, max_rows=40)
    spans = []
    for table in plan.sens.tables:
        names = [table.sheet] + [f"{table.sheet}_{i}" for i in range(2, 40)]
        rows = []
        for name in names:
            try:
                rows += sheet_values(out, name)
            except KeyError:
                break
        frame = plan.sens.frames[table.sheet]
        assert len(rows) == len(frame)
        spans.append(-(-len(rows) // 39))  # sheets of 39 data rows under a header
        for i, rec in enumerate(frame.to_dict("records")):
            for k, v in rec.items():
                got = rows[i][k]
                assert (v != v and got in (None, "")) or got == v or abs(got - v) <= 1e-9 * max(1, abs(v)), (table.sheet, i, k)
    assert max(spans) >= 3 and min(spans) >= 1 and sum(s >= 2 for s in spans) >= 2, spans
    compare_sheet(out, "Tornado", plan.sens.tornado)
    compare_sheet(out, "Results", plan.results)


@pytest.mark.slow
def test_results_at_scale_equal_the_small_run(tmp_path):
    """No approximation for speed: 1,200 workloads (the example repeated) give, row for row,
    the example's own numbers in Results and in the sensitivity blocks."""
    import numpy as np

    src, _ = edited_example(tmp_path / "big.xlsx", lambda wb: repeat_workloads(wb, 1200, "{name}~{i}"))
    small, big = build_plan(EXAMPLE), build_plan(src)
    n = len(small.results)
    num = small.results.select_dtypes("number").columns
    for rep in (0, 7, 1200 // n - 1):  # the last whole repeat of the example
        part = big.results.iloc[rep * n:(rep + 1) * n].reset_index(drop=True)
        np.testing.assert_array_equal(part[num].to_numpy(), small.results[num].to_numpy())
    k = small.sens.table("Sensitivity_Hit").k
    blk = big.sens.block("Sensitivity_Hit", 7 * n, 8 * n).drop(columns="workload")
    np.testing.assert_array_equal(blk.to_numpy(), small.sensitivity_hit.drop(columns="workload").to_numpy())
    assert len(big.sensitivity_hit) == 1200 * k
