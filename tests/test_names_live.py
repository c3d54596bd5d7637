"""Names are text, not patterns: Excel's wildcard characters in workload, model and GPU names
(``*``, ``?``, ``~``) must not change what the live lookups find after recalculation."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import openpyxl
import pytest

from planner.examples import build as example

from planner.examples import data as ed
from planner.workbook.input_sheets import write_input_workbook
from planner.plan.build import build_plan
from planner.workbook.writer import write_output
from conftest import same_value, value_book
from test_recalc import checks_counts, compare_all

pytestmark = pytest.mark.libreoffice


def _values(path, sheet: str) -> dict:
    """Every non-empty cached value of a sheet, by cell."""
    ws = openpyxl.load_workbook(path, data_only=True, read_only=True)[sheet]
    return {(r, c): v for r, row in enumerate(ws.iter_rows(values_only=True), 1)
            for c, v in enumerate(row, 1) if v not in (None, "")}


def wild_input(path):
    """The example plus a GPU 'H*' and a model 'Qwen2.5-7?B' placed AFTER the names their
    patterns would match ('H100-SXM', 'Qwen2.5-72B'), and a workload named with all three
    characters that uses both; their own numbers differ, so a wrong match changes results.
    Of the example's workloads only the first three are kept (they use both names the patterns
    would match, H100-SXM and Qwen2.5-72B), and the hit sweep is coarse (hit_step 0.25: 5 rows
    a workload on Sensitivity_Hit, not 21; at 0.05 it was a third of the workbook's formulas):
    a small workbook for LibreOffice."""
    models, gpus, wls = (copy.deepcopy(x) for x in (ed.MODELS, ed.GPUS, ed.WORKLOADS[:3]))
    gpus.append({**gpus[0], "gpu": "H*", "catalog": "H100 SXM", "hourly_cost": 9.99, "pcie_gbps": 7.0})
    models.append({**models[1], "model": "Qwen2.5-7?B", "catalog": "Qwen2.5-7B", "layers": 99})
    wls.append({**wls[0], "workload": "wild-?*~", "gpu": "H*", "model": "Qwen2.5-7?B"})
    wls.append({**wls[1], "workload": "~tilde", "gpu": "H100-SXM"})
    kept = {w["workload"] for w in wls}
    demand = [d for d in ed.DEMAND if d["workload"] in kept] + [{"workload": "wild-?*~", "period": p, "demand_tpm": 1e6} for p in ed.PERIODS]
    write_input_workbook(path, models, gpus, wls, {**example._settings(ed.SETTINGS), "hit_step": 0.25},
                         optional={"Measurements": ed.MEASUREMENTS, "Demand": demand})


def _wild_case(d: Path) -> dict:
    """wild_input planned and written, its stored finance values read, then the wildcard-named
    workload chosen in the Explorer (openpyxl keeps the formulas; LibreOffice recomputes every
    value)."""
    src = d / "wild.xlsx"
    wild_input(src)
    plan = build_plan(src)
    out = d / "wild-plan.xlsx"
    write_output(plan, out)
    stored = {sheet: _values(out, sheet) for sheet in ("Fleet", "Fleet_By_Period", "Demand_Calc", "Summary")}
    wb = openpyxl.load_workbook(out)
    wb["Explorer"]["B3"] = "wild-?*~"
    wb.save(out)
    return {"plan": plan, "stored": stored, "out": out}


TIE_X = 123456.789
TIE_UP = float(np.nextafter(TIE_X, np.inf))
TIE_CASES = [[1000.0, TIE_X, 5.0, TIE_UP], [1000.0, TIE_UP, 5.0, TIE_X], [7.0, 7.0, 7.0, 7.0]]


def _ties_case(d: Path) -> dict:
    """TIE_CASES in blocks of four rows with their rank_in_blocks_xl formulas, on a small sheet."""
    import xlsxwriter

    from planner.equations.constants import C, N
    from planner.equations.sensitivity import rank_in_blocks_xl

    path = d / "ties.xlsx"
    wb = xlsxwriter.Workbook(str(path))
    ws = wb.add_worksheet("T")
    ws.write_number(0, 5, C.SWING_TOLERANCE)
    wb.define_name(N.SWING_TOLERANCE, "=T!$F$1")
    for b, c in enumerate(TIE_CASES):
        top = b * 4
        block = f"$A${top + 1}:$A${top + 4}"
        for i, v in enumerate(c):
            ws.write_number(top + i, 0, v)
            ws.write_formula(top + i, 1, "=" + rank_in_blocks_xl(block, f"A{top + i + 1}"), None, 0)
    wb.close()
    return {"out": path}


def _rows_added_case(d: Path) -> dict:
    """Three workloads planned; a workload row appended below the Workloads table and a model
    appended to Models, in the output."""
    from conftest import edited_example, trim_workloads

    def edit(wb):
        # three workloads: the checks count rows of any table; the whole example proves nothing more;
        # hit_step 0.5: the test reads the Checks sheet, not the hit sweep (3 rows a workload, not 21)
        trim_workloads(wb, 3)
        for row in wb["Settings"].iter_rows(min_row=2):
            if row[0].value == "hit_step":
                row[1].value = 0.5

    src, _ = edited_example(d / "in.xlsx", edit)
    plan = build_plan(src)
    assert len(plan.sens.frames["Sensitivity_Hit"]) == 3 * 3  # hit 0, 0.5, 1 for each workload
    out = d / "plan.xlsx"
    write_output(plan, out)
    n = len(plan.results)
    wb = openpyxl.load_workbook(out)
    ws = wb["Workloads"]
    for j in range(1, ws.max_column + 1):  # appended below the table
        ws.cell(n + 2, j, ws.cell(2, j).value)
    ws.cell(n + 2, 1, "added-after-run")
    wm = wb["Models"]
    wm.cell(wm.max_row + 1, 1, "Added-Model")
    wb.save(out)
    return {"plan": plan, "out": out}


@pytest.fixture(scope="module")
def recalculated(lo_profile, tmp_path_factory) -> dict:
    """The workbooks of the three tests below recalculated by ONE LibreOffice process
    (libreoffice.recalculate_many: its start is paid once, 0.2-1.5 s CPU a workbook)."""
    from libreoffice import recalculate_many

    d = tmp_path_factory.mktemp("recalculated")
    cases = {}
    for name, make in (("wild", _wild_case), ("ties", _ties_case), ("rows_added", _rows_added_case)):
        (d / name).mkdir()
        cases[name] = make(d / name)
    done = recalculate_many([c["out"] for c in cases.values()], d / "recalc", profile=lo_profile)
    for case, path in zip(cases.values(), done):
        case["again"] = path
    return cases


def test_wildcard_names_recalculate_to_python(recalculated):
    plan, stored, again = (recalculated["wild"][k] for k in ("plan", "stored", "again"))
    # every cell of Results, Resolved, each sensitivity table and the Tornado (compare_sheet
    # holds each sheet to its frame's row count); the hit sweep: 5 workloads x hit 0, 0.25, .., 1
    assert len(plan.results) == 5 and len(plan.sens.frames["Sensitivity_Hit"]) == 5 * 5
    frames = [plan.results, plan.resolved.drop(columns=["model_row", "gpu_row"]), *plan.sens.frames.values(),
              plan.sens.tornado]
    assert compare_all(again, plan) == sum(f.size for f in frames)
    # the finance sheets' SUMIFS/MATCH over names find the wildcard-named GPU's own rows
    for sheet, before in stored.items():
        after = _values(again, sheet)
        bad = [(k, v, after.get(k)) for k, v in before.items() if not same_value(v, after.get(k))]
        assert not bad, (sheet, bad[:10])
    assert any(v == "H*" for v in stored["Fleet"].values())
    counts = checks_counts(again)
    assert counts["master"] == ("OK",), counts
    assert counts["gpu names unique"] == ("error", 0)
    assert counts["model names unique"] == ("error", 0)
    # the Explorer finds the wildcard-named workload itself, not the first name its pattern fits
    wb = value_book(again, "Explorer")
    row = list(plan.results["workload"]).index("wild-?*~") + 1
    assert wb["Explorer"]["B4"].value == row == len(plan.results) - 1


def test_tornado_ties_rank_by_driver_order_in_python_and_libreoffice(recalculated):
    """Two swings equal but for one ulp (as isl and alpha often are) tie: the earlier driver
    ranks first, in Python and in the spreadsheet formula alike (the sheet: :func:`_ties_case`)."""
    from planner.equations.sensitivity import rank_in_blocks

    x, up, cases = TIE_X, TIE_UP, TIE_CASES
    assert up > x and up == np.nextafter(x, np.inf)
    # hand ranks: the tied pair (123,456.789 tokens/min) widest, the earlier driver first; 1000 third; 5 last
    expected = [[3, 1, 4, 2], [3, 1, 4, 2], [1, 2, 3, 4]]
    got = [list(rank_in_blocks(np.array(c), 4)) for c in cases]
    assert got == expected
    again = openpyxl.load_workbook(recalculated["ties"]["again"], data_only=True)["T"]
    assert [[again.cell(b * 4 + i + 1, 2).value for i in range(4)] for b in range(3)] == expected


def test_rows_added_to_the_output_fail_the_master_check_and_are_named(recalculated):
    """A workload row appended to the output's Workloads sheet, one inserted inside the table
    and a model appended to Models are not planned: after recalculation the master check is
    ERROR and the Checks sheet names the first such row of each sheet (never a silent OK).
    The output: :func:`_rows_added_case`."""
    plan = recalculated["rows_added"]["plan"]
    assert len(plan.results) == 3
    n = len(plan.results)
    again = value_book(recalculated["rows_added"]["again"], "Checks")
    checks = again["Checks"]
    assert checks["B1"].value == "ERROR"
    rows = {checks.cell(r, 1).value: (checks.cell(r, 3).value, checks.cell(r, 4).value, checks.cell(r, 6).value or "")
            for r in range(6, checks.max_row + 1) if checks.cell(r, 2).value == "error"}
    assert rows["every Workloads row planned"] == (1, "FAIL", f"Workloads row {n + 2}: added-after-run")
    assert rows["every Models row planned"] == (1, "FAIL", f"Models row {len(plan.models) + 2}: Added-Model")
    assert rows["every GPUs row planned"] == (0, "OK", "")
