"""Text stays text (issue 17): user names in chart titles and series names are written as
text, never as a reference (read back from the chart XML); formula-like text in the input
sheets carries quotePrefix, so editing the cell in Excel keeps it text."""

from __future__ import annotations

import re
import zipfile
from html import unescape

import openpyxl
import pytest

from conftest import edited_example, run_cli

EVIL = "=cmd|' /C calc'!A0"
INNOCENT = "EMEA!A1 chat"


def _rename(wb, workloads: dict[int, str], model: str | None = None):
    ws = wb["Workloads"]
    for row, name in workloads.items():
        ws.cell(row, 1).value = name
        ws.cell(row, 1).data_type = "s"  # text (openpyxl would store "=..." as a formula)
    if model:
        old = wb["Models"]["A2"].value
        wb["Models"]["A2"].value = model
        wb["Models"]["A2"].data_type = "s"
        wb["Models"]["J2"].value = old  # column 'catalog': the dimensions still come from the catalog
        for r in range(2, ws.max_row + 1):
            if ws.cell(r, 2).value == old:
                ws.cell(r, 2).value = model
                ws.cell(r, 2).data_type = "s"


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("text")
    # the example cut to 3 workloads: the two renamed rows are among the charted workloads
    src, _ = edited_example(tmp / "in.xlsx", lambda wb: _rename(wb, {2: EVIL, 3: INNOCENT}, model="+Evil!B2 model"),
                            workloads=3)
    out = tmp / "plan.xlsx"
    r = run_cli("run", src, "-o", out, "--no-memo", cwd=tmp)
    assert r.returncode == 0, r.stderr
    with zipfile.ZipFile(out) as z:
        charts = {n: z.read(n).decode("utf-8") for n in z.namelist() if n.startswith("xl/charts/chart")}
    return out, charts


def test_chart_titles_and_series_names_are_text_not_references(written):
    _, charts = written
    assert charts
    formulas = [unescape(f) for xml in charts.values() for f in re.findall(r"<c:f>(.*?)</c:f>", xml)]
    texts = [unescape(t) for xml in charts.values() for t in re.findall(r"<a:t>(.*?)</a:t>", xml)]
    for name in (EVIL, INNOCENT):
        assert not [f for f in formulas if name in f], name             # never inside a formula
        assert any(name in t for t in texts), name                      # shown as text, exactly
    # the titles built from the names, e.g. "TTFT vs hit: =cmd|' /C calc'!A0" (the per-workload charts)
    assert sum(t.endswith(f": {EVIL}") for t in texts) >= 1
    # the references the planner means are still references (the [sheet, row, col] list form)
    assert any(re.match(r"^'?\w+'?!\$[A-Z]+\$\d+", f) for f in formulas)


def test_formula_like_input_text_has_quote_prefix(written):
    out, _ = written
    wb = openpyxl.load_workbook(out)
    ws = wb["Workloads"]
    assert ws["A2"].value == EVIL and ws["A2"].data_type == "s" and ws["A2"].quotePrefix
    assert ws["A3"].value == INNOCENT and not ws["A3"].quotePrefix   # plain text: as before
    assert wb["Models"]["A2"].value == "+Evil!B2 model" and wb["Models"]["A2"].quotePrefix
    assert not wb["Models"]["A3"].quotePrefix
