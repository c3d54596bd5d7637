"""Issue 20 red team, item 7: header rows of the finance sheets high enough for their wrapped text,
so the unit in brackets prints (it was cut on the third line of a 30 pt row: Fleet's
``cost_per_month_for_latency [USD/month]``, the Summary's ``Saved by the target [USD/month]``)."""

from __future__ import annotations

import openpyxl
import pytest

from planner.workbook.fleet_sheets import header_lines
from test_redteam_finance import finance_out  # noqa: F401 (the module's planned finance workbook)


@pytest.mark.parametrize("text, width, lines", [
    # 0.9 x 18 = 16 characters a line: 'cost_per_month_f' | 'or_latency' | '[USD/month]'
    ("cost_per_month_for_latency [USD/month]", 18, 3),
    # 15 a line: 'Saved by the' | 'target' | '[USD/month]'
    ("Saved by the target [USD/month]", 17, 3),
    # 16 a line: 'cost_per_month' | '[USD/month]'
    ("cost_per_month [USD/month]", 18, 2),
    ("gpu", 22, 1),
])
def test_header_lines_by_hand(text, width, lines):
    assert header_lines(text, width) == lines


def test_finance_header_rows_fit_their_text(finance_out):  # noqa: F811
    _src, out, _r = finance_out
    wb = openpyxl.load_workbook(out)
    for sheet in ("Fleet", "Fleet_By_Period"):
        ws = wb[sheet]
        heads = [c.value for c in ws[1] if c.value]
        assert heads[-1].endswith("[USD/month]"), heads
        # the longest header wraps onto three lines at these widths: 3 x 15 pt
        assert ws.row_dimensions[1].height == 45, (sheet, ws.row_dimensions[1].height)


def test_side_notes_wrap_within_their_column_and_rows_fit_them(example_output):
    """The notes beside the tables of Fleet, Fleet_By_Period and Scenario_Compare ran past the print
    area, unwrapped, and printed cut. Now each wraps in its column and its row is as high as the
    wrapped text. By hand for Fleet's first note: 212 characters in a 90-character column, at
    0.9 x 90 = 81 characters a line, fill 3 lines (81 + 81 + 50, words kept whole: still 3), 45 pt."""
    wb = openpyxl.load_workbook(example_output)
    ws = wb["Fleet"]
    first = ws["N2"]
    assert first.value.startswith("Per GPU type") and len(first.value) == 212
    assert first.alignment.wrap_text and ws.column_dimensions["N"].width >= 90
    assert ws.row_dimensions[2].height == 45
    checked = 0
    for sheet in ("Fleet", "Fleet_By_Period", "Scenario_Compare"):
        ws = wb[sheet]
        for row in ws.iter_rows(min_row=2):
            for c in row:
                if c.font.i and isinstance(c.value, str) and not c.value.startswith("=") and len(c.value) > 80:
                    width = ws.column_dimensions[c.column_letter].width
                    # at least 0.9 x width characters a line are needed; a row of h pt holds h / 15 lines
                    lines = -(-len(c.value) // int(0.9 * width))  # ceiling: fewer lines than this cannot hold it
                    assert c.alignment.wrap_text, (sheet, c.coordinate)
                    assert (ws.row_dimensions[c.row].height or 15) >= 15 * lines, (sheet, c.coordinate)
                    checked += 1
    assert checked >= 10, checked
