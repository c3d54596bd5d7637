"""Excel's 1904 date system (issue 20, trust5): a workbook saved with workbookPr date1904="1" (Excel
for Mac's old default) counts its serial days from 1904-01-01, 1,462 days after the 1900 system's
day 0 (1899-12-30; ECMA-376 Part 1, 18.17.4.1). A date typed without a date format arrives as its
serial: 44,926 in a 1904 workbook is 2027-01-01 (46,388 - 1,462), and was read as the 1900 system's
44,926, 2022-12-31 (four years and a day early: 2022-Q4 for 2027-Q1).

The workbooks are written by XlsxWriter with ``{'date_1904': True}`` (the input writer's options with
that one added), as the brief asks; a date cell (with its date format) is added by openpyxl, which
keeps the workbook's epoch when it saves.
"""

from __future__ import annotations

import datetime as dt
import zipfile

import openpyxl
import pytest

from planner.finance import periods as fp
from planner.inputs.period_labels import parse_periods, serial_date
from planner.plan.build import build_plan
from planner.workbook import input_sheets, styles

MODELS = [{"model": "Llama-3.1-8B", "kv_bytes": 2}]
GPUS = [{"gpu": "H100 SXM", "hourly_cost": 2.5}]
ROW = {"workload": "chat", "model": "Llama-3.1-8B", "gpu": "H100 SXM", "tp": 1, "isl": 1000, "osl": 200,
       "hit_target": 0.5, "t_attn0_ms": 10, "t_ffn0_ms": 90, "t_decode_ms": 1000, "demand_tpm": 1_000_000}
# 1904 serials: 2027-01-01 is 1900-system 46388 (tests/test_redteam_periods.py derives it), so
# 46388 - 1462 = 44926; 2027-04-01 is 46388 + 90 (Jan 31 + Feb 28 + Mar 31) - 1462 = 45016
Q1_1904, Q2_1904 = 44926, 45016


def _book(tmp_path, monkeypatch, settings, demand, date1904=True, edit=None):
    path = tmp_path / f"in{1904 if date1904 else 1900}.xlsx"
    monkeypatch.setattr(input_sheets, "WB_OPTIONS", dict(styles.WB_OPTIONS, date_1904=date1904))
    input_sheets.write_input_workbook(path, MODELS, GPUS, [dict(ROW)], settings, optional={"Demand": demand})
    if edit is not None:
        wb = openpyxl.load_workbook(path)
        edit(wb)
        wb.save(path)
    with zipfile.ZipFile(path) as z:
        assert ('date1904="1"' in z.read("xl/workbook.xml").decode()) == date1904
    return path


DEMAND = [{"workload": "chat", "period": Q1_1904, "demand_tpm": 2_000_000},
          {"workload": "chat", "period": Q2_1904, "demand_tpm": 3_000_000}]


def test_date_serials_of_a_1904_workbook_are_read_in_its_date_system(tmp_path, monkeypatch):
    path = _book(tmp_path, monkeypatch, {"periods": f"{Q1_1904}..{Q2_1904}", "quarter": Q1_1904}, DEMAND)
    plan = build_plan(path)
    totals = fp.period_totals(plan)
    assert list(totals["period"]) == ["2027-Q1", "2027-Q2"]  # was 2022-Q4, 2023-Q1
    assert plan.input.settings["quarter"] == "2027-Q1"
    assert parse_periods(plan.input.settings["periods"])[0] == ["2027-Q1", "2027-Q2"]
    notes = " ".join(plan.input.notes)
    assert ("'44926' is a date without a date format (Excel's serial day number of 2027-01-01 in the "
            "workbook's 1904 date system), read as its calendar quarter: 2027-Q1") in notes
    # the demand of each period is the typed one: 2,000,000 in Q1, 3,000,000 in Q2, in the same ratio of
    # GPUs as the same workbook typed with quarter labels
    right = build_plan(_book(tmp_path, monkeypatch, {"periods": "2027-Q1..2027-Q2"},
                             [dict(DEMAND[0], period="2027-Q1"), dict(DEMAND[1], period="2027-Q2")],
                             date1904=False))
    assert list(totals["gpus_needed"]) == list(fp.period_totals(right)["gpus_needed"])


def test_date_cells_of_a_1904_workbook_are_their_dates(tmp_path, monkeypatch):
    def edit(wb):
        assert wb.epoch == dt.datetime(1904, 1, 1)
        ws = wb["Demand"]
        for r, day in ((2, dt.datetime(2027, 1, 1)), (3, dt.datetime(2027, 4, 1))):
            ws.cell(r, 2).value = day
            ws.cell(r, 2).number_format = "yyyy-mm-dd"

    path = _book(tmp_path, monkeypatch, {"periods": "2027-Q1..2027-Q2"}, DEMAND, edit=edit)
    with zipfile.ZipFile(path) as z:  # stored as the 1904 serial, as Excel for Mac stores it
        assert any(f"<v>{Q1_1904}</v>" in z.read(n).decode() for n in z.namelist() if n.startswith("xl/worksheets/"))
    assert list(fp.period_totals(build_plan(path))["period"]) == ["2027-Q1", "2027-Q2"]


def test_a_1900_workbook_reads_the_same_serial_as_its_own_date(tmp_path, monkeypatch):
    path = _book(tmp_path, monkeypatch, {"periods": "2027-Q1..2027-Q2"},
                 [dict(DEMAND[0], period=46388), dict(DEMAND[1], period=46478)], date1904=False)
    assert list(fp.period_totals(build_plan(path))["period"]) == ["2027-Q1", "2027-Q2"]


@pytest.mark.parametrize("serial, date1904, day", [
    (35064, True, dt.date(2000, 1, 1)),     # 36526 - 1462
    (71588, True, dt.date(2099, 12, 31)),   # 73050 - 1462
    (35063, True, None), (71589, True, None),
    (44926, False, dt.date(2022, 12, 31)),  # the old reading of the 1904 serial, right in a 1900 workbook
    (0, True, None),
])
def test_serial_bounds_in_each_date_system(serial, date1904, day):
    assert serial_date(serial, date1904) == day
