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
