"""Issue 20, item 7: what prints. The example output and a diff printed to PDF by LibreOffice:
every chart's drawing anchor lies inside its sheet's print area (and no manual page break runs
through it), the diff's waterfall is on one page, and the README's page counts are the PDF's
(pages per sheet from the PDF outline, planner/pdf_pages.py)."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import openpyxl
import pytest
from openpyxl.utils import range_boundaries

from conftest import REPO, run_cli
from planner.examples.build import example_path
from pdf_pages import page_texts, pages_per_sheet, readme_sentence, to_pdf
from planner.plan.build import build_plan
from planner.workbook.writer import write_output


def chart_anchors(path: Path) -> list[tuple[str, tuple[int, int, int, int], str | None, str]]:
    """(sheet, (first col, first row, last col, last row) 1-based, print area, sheet XML) of
    every chart, from the drawing parts (independent of planner.workbook.print_setup)."""
    import posixpath

    z = zipfile.ZipFile(path)
    wbx = z.read("xl/workbook.xml").decode()
    sheets = re.findall(r'<sheet name="([^"]+)" sheetId="\d+" r:id="(rId\d+)"', wbx)
    rels = dict(re.findall(r'Id="(rId\d+)" Type="[^"]+" Target="([^"]+)"', z.read("xl/_rels/workbook.xml.rels").decode()))
    areas = {sheets[int(i)][0]: f for i, f in
             re.findall(r'<definedName name="_xlnm.Print_Area" localSheetId="(\d+)">([^<]+)</definedName>', wbx)}
    out = []
    for name, rid in sheets:
        sp = "xl/" + rels[rid]
        rp = posixpath.join(posixpath.dirname(sp), "_rels", posixpath.basename(sp) + ".rels")
        if rp not in z.namelist():
            continue
        for d in re.findall(r'Target="([^"]+drawing\d+\.xml)"', z.read(rp).decode()):
            dx = z.read(posixpath.normpath(posixpath.join(posixpath.dirname(sp), d))).decode()
            for a in re.findall(r"<xdr:twoCellAnchor.*?</xdr:twoCellAnchor>", dx, re.S):
                if "graphicFrame" not in a:
                    continue
                fc, fr = map(int, re.search(r"<xdr:from><xdr:col>(\d+)</xdr:col><xdr:colOff>-?\d+</xdr:colOff>"
                                            r"<xdr:row>(\d+)</xdr:row>", a).groups())
                tc, tco, tr, tro = map(int, re.search(r"<xdr:to><xdr:col>(\d+)</xdr:col><xdr:colOff>(\d+)</xdr:colOff>"
                                                      r"<xdr:row>(\d+)</xdr:row><xdr:rowOff>(\d+)</xdr:rowOff>", a).groups())
                box = (fc + 1, fr + 1, tc + (1 if tco else 0), tr + (1 if tro else 0))
                out.append((name, box, areas.get(name), z.read(sp).decode()))
    return out


def _inside(box, area: str) -> bool:
    c0, r0, c1, r1 = range_boundaries(area.split("!")[-1].replace("$", ""))
    return c0 <= box[0] and r0 <= box[1] and box[2] <= c1 and box[3] <= r1


def _no_break_through(box, sheet_xml: str) -> bool:
    cols = [int(b) for b in re.findall(r'<colBreaks.*?</colBreaks>', sheet_xml, re.S) and
            re.findall(r'<brk id="(\d+)"', re.search(r'<colBreaks.*?</colBreaks>', sheet_xml, re.S)[0])]
    rows = [int(b) for b in re.findall(r'<rowBreaks.*?</rowBreaks>', sheet_xml, re.S) and
            re.findall(r'<brk id="(\d+)"', re.search(r'<rowBreaks.*?</rowBreaks>', sheet_xml, re.S)[0])]
    # a break id k starts a page at (0-based) column/row k, i.e. 1-based k + 1
    return not any(box[0] < k + 1 <= box[2] for k in cols) and not any(box[1] < k + 1 <= box[3] for k in rows)


@pytest.fixture(scope="module")
def example_out(example_output) -> Path:
    return example_output  # conftest: written once for the session (read-only here)


@pytest.fixture(scope="module")
def example_pdf(example_out, lo_profile) -> bytes:
    return to_pdf(example_out, profile=lo_profile)  # LibreOffice (this worker's), once for the module


@pytest.fixture(scope="module")
def diff_out(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("diffpages")
    wb = openpyxl.load_workbook(example_path())
    ws = wb["GPUs"]
    head = {str(c.value).split(" [")[0]: c.column for c in ws[1]}
    ws.cell(2, head["hourly_cost"]).value = float(ws.cell(2, head["hourly_cost"]).value) * 1.1
    new = d / "new.xlsx"
    wb.save(new)
    out = d / "diff.xlsx"
    r = run_cli("diff", example_path(), new, "-o", out, "--no-memo", cwd=d)
    assert r.returncode == 0, r.stderr
    return out


def test_every_chart_lies_in_its_print_area(example_out, diff_out):
    for path in (example_out, diff_out):
        anchors = chart_anchors(path)
        assert anchors
        for sheet, box, area, xml in anchors:
            assert area is not None and _inside(box, area), (path.name, sheet, box, area)
            assert _no_break_through(box, xml), (path.name, sheet, box)


def test_diff_waterfalls_start_at_zero(diff_out):
    with zipfile.ZipFile(diff_out) as z:
        charts = [z.read(n).decode() for n in z.namelist() if n.startswith("xl/charts/chart")]
    assert len(charts) == 2
    for xml in charts:  # costs and GPU counts of the example: never negative
        assert '<c:min val="0"/>' in xml.split("<c:valAx>")[1].split("</c:valAx>")[0]


def test_diff_sheets_carry_units_and_the_print_setup(diff_out):
    wb = openpyxl.load_workbook(diff_out)
    assert [c.value for c in wb["Bridge"][1]][:2] == ["step", "cost_per_month [USD/month]"]
    heads = [c.value for c in wb["Workload_Changes"][1]]
    assert "gpus_old [count]" in heads and "ttft_ms_new [ms]" in heads
    with zipfile.ZipFile(diff_out) as z:
        for name in (n for n in z.namelist() if n.startswith("xl/worksheets/sheet")):
            sx = z.read(name).decode()
            assert 'orientation="landscape"' in sx and 'paperSize="9"' in sx, name


@pytest.mark.libreoffice
def test_pdf_pages_and_the_readme(example_pdf, diff_out, lo_profile):
    pdf = example_pdf
    # (was tests/test_print.py::test_pdf_pages, which printed the same workbook a second time)
    # The whole example output printed by LibreOffice: 151 pages before the print set-up (12
    # workloads), 55 after with 14 workloads and the finance, calibration and optional input
    # sheets (Summary 1, Results 7, Checks 1, Explorer 6, Charts 14, each long table 1); a bound
    # with some slack for LibreOffice versions and fonts.
    total = len(re.findall(rb"/Type\s*/Page[^s]", pdf))
    assert 20 <= total <= 90, total  # 61 before the latency-at-load columns; 77 with the SLO-bound steps of issue 16; 81 with the baseline's
    pages = pages_per_sheet(pdf)
    assert pages["Summary"] == 1 and pages["Fleet_By_Period"] == 1 and pages["Scenario_Compare"] == 1
    readme = " ".join((REPO / "README.md").read_text(encoding="utf-8").split())
    assert readme_sentence(pages) in readme, readme_sentence(pages)
    diff_pages = pages_per_sheet(to_pdf(diff_out, profile=lo_profile))
    assert diff_pages["Bridge"] == 1  # the waterfall on one page (31 portrait pages before)
    assert sum(diff_pages.values()) <= 10, diff_pages


@pytest.mark.libreoffice
def test_calibration_pages_read_whole(example_out, example_pdf):
    """Calibration prints across 4 pages with column A (the deployments) repeated on each: LibreOffice
    cut the title and the 480-character description, typed in A1 and A2 and running on to the right,
    at column A's edge on the continuation pages. Now column A holds only what fits it (the title
    'Calibration', 11 characters of 13 pt in a 37-character column; the 35-character deployment names,
    the column widened to 37), and the subtitle and description are wrapped in merged cells B1:E1 and
    B2:E2 that lie on the first page: by hand, A + B..E print 264 + 131 + 152 + 145 + 89 = 781 px, within
    the narrowest page the print set-up may choose (760 px at 85%: 894 px), and with F (131 px) they
    would not be (912). Rows as high as the wrapped text (tests/test_redteam_print.py's rule, 0.9 x width
    characters a line): the description's 480 characters in 71 characters (0.9 x 71 = 63 a line) take
    9 lines, 135 pt; the subtitle's 68 characters of 13 pt in 71 x 11/13 = 60.1 (54 a line) 2 lines,
    36 pt. In the PDF: the first page holds the subtitle and the description, the continuation pages
    across (2-4) neither (they held both, cut)."""
    wb = openpyxl.load_workbook(example_out)
    ws = wb["Calibration"]
    assert ws.print_title_cols == "$A:$A" and [b.id for b in ws.col_breaks.brk][:1] == [7]
    width_a = ws.column_dimensions["A"].width
    assert int(width_a) == 37, width_a  # 35 + 2 characters (XlsxWriter stores 37.71)
    for row in ws.iter_rows(min_col=1, max_col=1):
        c = row[0]
        if isinstance(c.value, str) and not c.alignment.wrap_text:
            size = c.font.sz or 11
            assert len(c.value) * size / 11 <= int(width_a), (c.coordinate, c.value)
    assert {str(r) for r in ws.merged_cells.ranges} == {"B1:E1", "B2:E2"}
    assert ws["B2"].value.startswith("Fit per deployment") and len(ws["B2"].value) == 480
    assert ws.row_dimensions[2].height == 135 and ws.row_dimensions[1].height == 36
    pages = page_texts(example_pdf)["Calibration"]
    assert len(pages) == 5
    assert "prefill times fitted to the measured load tests" in pages[0] and "Fit per deployment" in pages[0]
    for text in pages[1:4]:
        assert "Calibration" in text and "prefill times fitted" not in text and "Fit per deployment" not in text
