"""A latency target no instance count meets is stored as the text "unreachable", never as a
number XlsxWriter would write as ``inf`` (an invalid .xlsx that openpyxl and Excel refuse)."""

from __future__ import annotations

import re
import zipfile

import openpyxl

from conftest import edited_example, header_index
from planner.cli.main import main


def test_unmeetable_ttft_target_gives_a_readable_workbook(tmp_path):
    def edit(wb):
        ws = wb["Workloads"]
        col = header_index(ws)["ttft_slo_ms"]
        ws.cell(2, col).value = 0.5  # far below any request-alone TTFT: no instance count meets it

    # three workloads: the unmeetable target is on the first row, and every sheet that carries its
    # instance counts (Results, the sensitivity sheets, Fleet, Summary, the charts) is written for
    # it as in the whole example; the other eleven rows only lengthen the XML scanned below
    src, _ = edited_example(tmp_path / "in.xlsx", edit, workloads=3)
    out = tmp_path / "out.xlsx"
    assert main(["run", str(src), "-o", str(out), "--no-memo", "-q"]) == 0
    with zipfile.ZipFile(out) as z:
        for name in z.namelist():
            if name.startswith("xl/worksheets/") and name.endswith(".xml"):
                xml = z.read(name).decode("utf8")
                bad = re.findall(r'<c [^>]*>(?:(?!</c>).)*<v>(-?inf|nan)</v>', xml, flags=re.S | re.I)
                assert not bad, (name, bad[:3])
    wb = openpyxl.load_workbook(out, data_only=True)  # raised ValueError on 'inf' before
    ws = wb["Results"]
    head = header_index(ws)
    assert ws.cell(2, head["instances_ttft"]).value == "unreachable"
