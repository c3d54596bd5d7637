"""Print set-up, currency units, Explorer layout, Checks and dropdowns of the output workbook
(issue 13, workbook side), read back from the package XML."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import pytest


from conftest import EXAMPLE, run_cli

NS = {"m": "http://schemas.openxmlformats.org/spreadsheetml/2006/main"}
LONG = re.compile(r"^(Sensitivity_|Tornado|Resolved)")


@pytest.fixture(scope="module")
def out(example_output) -> Path:
    # the print set-up is the workbook writer's (the command line adds nothing to it): the
    # session's example output (conftest, written once; read-only here)
    return example_output


def parts(path: Path) -> dict[str, str]:
    with zipfile.ZipFile(path) as z:
        return {n: z.read(n).decode("utf-8") for n in z.namelist() if n.endswith((".xml", ".rels"))}


def sheet_files(xml: dict[str, str]) -> dict[str, str]:
    """Sheet name -> its worksheet part, from workbook.xml and its relationships."""
    rels = dict(re.findall(r'Id="(rId\d+)"[^>]*Target="([^"]+)"', xml["xl/_rels/workbook.xml.rels"]))
    rels.update({a: b for b, a in re.findall(r'Target="([^"]+)"[^>]*Id="(rId\d+)"',
                                            xml["xl/_rels/workbook.xml.rels"])})
    out = {}
    for name, rid in re.findall(r'<sheet name="([^"]+)" sheetId="\d+" r:id="(rId\d+)"', xml["xl/workbook.xml"]):
        out[name] = "xl/" + rels[rid].lstrip("/").removeprefix("xl/")
    return out


def defined(xml: dict[str, str], what: str) -> dict[str, str]:
    """Sheet name -> the value of its _xlnm.<what> defined name."""
    names = re.findall(r'<sheet name="([^"]+)"', xml["xl/workbook.xml"])
    out = {}
    for local, value in re.findall(rf'<definedName name="_xlnm\.{what}" localSheetId="(\d+)">([^<]+)<',
                                   xml["xl/workbook.xml"]):
        out[names[int(local)]] = value
    return out


@pytest.fixture(scope="module")
def xml(out) -> dict[str, str]:
    return parts(out)


def test_every_sheet_is_set_up_for_print(xml):
    from planner.workbook.print_setup import spec_for

    files = sheet_files(xml)
    assert {"Results", "Checks", "Explorer", "Workloads", "Tornado_Calc", "Resolved", "Run"} <= set(files)
    titles, areas = defined(xml, "Print_Titles"), defined(xml, "Print_Area")
    for name, part in files.items():
        sx = xml[part]
        setup = re.search(r"<pageSetup [^>]*/>", sx)
        assert setup, name
        assert 'orientation="landscape"' in setup[0] and 'paperSize="9"' in setup[0], (name, setup[0])
        scale = re.search(r'scale="(\d+)"', setup[0])
        assert scale is None or 70 <= int(scale[1]) <= 100, (name, setup[0])  # readable, not shrunk
        # never squeezed onto one page, but for the finance reader's pages declared to fit (the
        # Summary on one page, the fleet tables one page wide)
        assert "fitToPage" not in sx or spec_for(name).fit_pages, name
        head = re.search(r"<oddHeader>(.*?)</oddHeader>", sx)
        foot = re.search(r"<oddFooter>(.*?)</oddFooter>", sx)
        assert head and "2026-Q4" in head[1] and "&amp;A" in head[1], (name, head)  # quarter, sheet name
        assert foot and "Page &amp;P of &amp;N" in foot[1], name
        assert name in areas, name
        if name not in ("Charts", "Summary"):  # the Summary is one page: nothing to repeat
            assert name in titles, name
    # the header row repeated on Results, and the workload column on its every page
    assert titles["Results"] == "Results!$A:$A,Results!$1:$1"
    assert titles["Workloads"].startswith("Workloads!$A:$A")


def test_results_breaks_between_column_groups(xml):
    from planner.plan import columns as sheets
    from planner.workbook.print_setup import RESULTS_GROUPS

    sx = xml[sheet_files(xml)["Results"]]
    breaks = [int(b) for b in re.findall(r'<brk id="(\d+)"[^>]*man="1"', re.search(r"<colBreaks.*?</colBreaks>", sx)[0])]
    names = [c.name for c in sheets.RESULTS]
    starts = {names.index(first) for _label, first in RESULTS_GROUPS}
    assert breaks and set(breaks) <= starts  # every page break falls between two groups
    assert 'pageOrder="overThenDown"' in sx
    assert re.search(r'<pageSetup [^>]*scale="(7\d|8[0-5])"', sx)


def test_long_tables_print_only_their_head(xml):
    areas = defined(xml, "Print_Area")
    files = sheet_files(xml)
    long_sheets = [n for n in files if LONG.match(n)]
    assert {"Sensitivity_Hit", "Tornado_Calc", "Tornado", "Resolved"} <= set(long_sheets)
    for name in long_sheets:
        last_row = int(re.search(r"\$(\d+)$", areas[name])[1])
        assert last_row <= 31, (name, areas[name])  # header + 30 rows
        rows = len(re.findall(r"<row ", xml[files[name]]))
        if rows > last_row:
            head = re.search(r"<oddHeader>(.*?)</oddHeader>", xml[files[name]])[1]
            assert "not printed by default" in head, name


# The whole example printed to PDF (at most 75 pages) is checked in
# tests/test_print_pages.py::test_pdf_pages_and_the_readme, from the one PDF it prints.


def headers_of(path: Path, sheet: str) -> list[str]:
    import openpyxl

    wb = openpyxl.load_workbook(path, read_only=True)
    try:
        return [c.value for c in next(wb[sheet].iter_rows(max_row=1)) if c.value is not None]
    finally:
        wb.close()


def test_units_name_the_currency(out, tmp_path):
    """Settings currency is USD in the example: no header says 'currency' any more."""
    res = headers_of(out, "Results")
    assert "cost_per_mtok_delivered [USD/Mtok]" in res and "cost_per_mtok_physical [USD/Mtok]" in res
    assert "hourly_cost [USD/h]" in headers_of(out, "GPUs")
    assert "hourly_cost [USD/h]" in headers_of(out, "Resolved")
    for sheet in ("Results", "GPUs", "Resolved"):
        # (a unit naming "currency"; the column names concurrency / *_concurrency are not units)
        assert not any(re.search(r"\[[^\]]*currency", h) for h in headers_of(out, sheet)), sheet
    # the output is still a valid input (the reader drops the bracketed unit)
    proc = run_cli("validate", out, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr


def test_with_currency():
    from planner.core.refs import with_currency

    assert with_currency("hourly_cost [currency/h]", "EUR") == "hourly_cost [EUR/h]"
    assert with_currency("cost [currency]", "JPY") == "cost [JPY]"
    assert with_currency("hourly_cost [currency/h]", "") == "hourly_cost [currency/h]"
    assert with_currency("currency", "EUR") == "currency"  # a Settings key, not a unit


# ----------------------------------------------------------------------------- Explorer
def _anchors(xml: dict[str, str], sheet: str) -> list[tuple[int, int, int, int]]:
    """(from col, from row, to col, to row) of every chart on ``sheet``, 0-based."""
    part = sheet_files(xml)[sheet]
    rels = xml[part.replace("worksheets/", "worksheets/_rels/") + ".rels"]
    drawing = re.search(r'Target="\.\./drawings/(drawing\d+\.xml)"', rels)[1]
    d = xml[f"xl/drawings/{drawing}"]
    return [tuple(map(int, m)) for m in re.findall(
        r"<xdr:from><xdr:col>(\d+)</xdr:col>.*?<xdr:row>(\d+)</xdr:row>.*?"
        r"<xdr:to><xdr:col>(\d+)</xdr:col>.*?<xdr:row>(\d+)</xdr:row>", d, re.S)]


def _cells(sx: str) -> set[tuple[int, int]]:
    """0-based (row, col) of every non-empty cell of a worksheet part."""
    from xlsxwriter.utility import xl_cell_to_rowcol

    out = set()
    for ref, body in re.findall(r'<c r="([A-Z]+\d+)"[^>]*?(?:/>|>(.*?)</c>)', sx, re.S):
        if body:
            out.add(xl_cell_to_rowcol(ref))
    return out


def _hidden_cols(sx: str) -> set[int]:
    out = set()
    for lo, hi in re.findall(r'<col min="(\d+)" max="(\d+)"[^>]*hidden="1"', sx):
        out |= set(range(int(lo) - 1, int(hi)))
    return out


def test_explorer_charts_cover_no_cell(xml):
    anchors = _anchors(xml, "Explorer")
    assert len(anchors) == 4
    cells = _cells(xml[sheet_files(xml)["Explorer"]])
    for c0, r0, c1, r1 in anchors:
        covered = {(r, c) for (r, c) in cells if r0 <= r <= r1 and c0 <= c <= c1}
        assert not covered, (c0, r0, c1, r1, sorted(covered)[:5])
    # and no two charts overlap
    for i, a in enumerate(anchors):
        for b in anchors[i + 1:]:
            assert a[2] < b[0] or b[2] < a[0] or a[3] < b[1] or b[3] < a[1], (a, b)


def _row_strings(xml, sheet: str) -> dict[tuple[int, int], str]:
    """(row, col) -> text of the string cells of a sheet (0-based): inline strings (constant_memory
    mode) or shared strings."""
    import html

    from xlsxwriter.utility import xl_cell_to_rowcol

    sx = xml[sheet_files(xml)[sheet]]
    shared = [re.sub(r"<[^>]+>", "", si) for si in re.findall(r"<si>(.*?)</si>", xml.get("xl/sharedStrings.xml", ""), re.S)]
    out = {}
    for ref, attrs, body in re.findall(r'<c r="([A-Z]+\d+)"([^>]*)>(.*?)</c>', sx, re.S):
        if 't="inlineStr"' in attrs:
            out[xl_cell_to_rowcol(ref)] = html.unescape(re.sub(r"<[^>]+>", "", body))
        elif 't="s"' in attrs:
            out[xl_cell_to_rowcol(ref)] = html.unescape(shared[int(re.search(r"<v>(\d+)</v>", body)[1])])
    return out


def test_explorer_helpers_hidden_and_labels_shown(xml):
    from planner.workbook.explorer import EXPLORER_INPUTS_TOP

    sx = xml[sheet_files(xml)["Explorer"]]
    text = _row_strings(xml, "Explorer")
    hidden = _hidden_cols(sx)
    # tornado internals: every cell whose text is driver_no/direction/upper is on a hidden column
    for name in ("driver_no", "direction", "upper", "swing by driver", "rank by driver", "marker"):
        where = [c for (r, c), t in text.items() if t == name]
        assert where and all(c in hidden for c in where), (name, where, sorted(hidden)[:3])
    assert 'outlineLevel="1"' in sx and 'collapsed="1"' in sx  # a collapsed outline group
    # readable labels beside the identifiers of the name/value block
    block = {text[(r, 0)]: text.get((r, 2)) for (r, c) in text if c == 0 and r >= EXPLORER_INPUTS_TOP}
    assert block["ttft_ms"] == "Time to first token at target hit, α of the row [ms]"
    assert block["isl"] == "Input length per request [tokens]"
    assert block["cost_per_mtok_delivered"] == "Cost per million delivered tokens [USD/Mtok]"
    assert all(block.values()), [k for k, v in block.items() if not v]


def test_explorer_blank_for_quantities_that_do_not_apply(xml):
    """The example's first workload runs a GQA model (Qwen2.5-72B): mla_kv_dim shows blank
    (a live IF on the attention cell), not 0; kv_heads shows its value."""
    from xlsxwriter.utility import xl_cell_to_rowcol

    sx = xml[sheet_files(xml)["Explorer"]]
    text = _row_strings(xml, "Explorer")
    row = {t: r for (r, c), t in text.items() if c == 0}
    cells = {xl_cell_to_rowcol(ref): (f, v) for ref, f, v in
             re.findall(r'<c r="([A-Z]+\d+)"[^>]*><f>(.*?)</f>(?:<v>(.*?)</v>)?</c>', sx)}
    f, v = cells[(row["mla_kv_dim"], 1)]
    assert f.startswith("IF($B$") and "\"mla\"" in f and v in ("", None), (f, v)
    f, v = cells[(row["kv_heads"], 1)]
    assert "\"gqa\"" in f and float(v) == 8  # Qwen2.5-72B: 8 KV heads (config.json)


# ----------------------------------------------------------------------------- Checks
def test_checks_sheet_reads_and_prints(xml):
    sx = xml[sheet_files(xml)["Checks"]]
    text = _row_strings(xml, "Checks")
    assert [text[(4, j)] for j in range(5)] == ["check", "kind", "rows found", "status", "what it checks"]
    assert text[(0, 0)] == "Master check"
    # one page wide at a readable scale: no column breaks
    setup = re.search(r"<pageSetup [^>]*/>", sx)[0]
    assert "<colBreaks" not in sx and int(re.search(r'scale="(\d+)"', setup)[1]) >= 75, setup
    widths = {int(a): float(w) for a, w in re.findall(r'<col min="(\d+)" max="\1" width="([\d.]+)"', sx)}
    assert 30 <= widths[1] <= 40 and 55 <= widths[5] <= 70, widths
    # the warnings list: the message over B:E, wrapped, its row tall enough
    warn_row = next(r for (r, c), t in text.items() if c == 0 and t.startswith("Warnings found"))
    assert f"B{warn_row + 3}:E{warn_row + 3}" in re.findall(r'<mergeCell ref="([^"]+)"', sx)
    assert any("beyond the first-order break-even" in t for (r, c), t in text.items() if c == 1 and r > warn_row)


def test_wrapped_lines():
    from planner.workbook.checks_sheet import wrapped_lines

    assert wrapped_lines("short", 10) == 1
    assert wrapped_lines("aaaa bbbb cccc dddd", 10) == 2  # 11 characters fit a line of 10 x 1.1
    assert wrapped_lines("", 10) == 1


# ----------------------------------------------------------------------------- dropdowns
def _list_validations(xml: dict[str, str], sheet: str) -> dict[str, str]:
    """Column letter of the validated range -> formula1 of each list validation of ``sheet``."""
    out = {}
    for sq, f in re.findall(r'<dataValidation [^>]*type="list"[^>]*sqref="([A-Z]+)2:[A-Z]+\d+"[^>]*>'
                            r"<formula1>([^<]*)</formula1>", xml[sheet_files(xml)[sheet]]):
        out[sq] = f
    return out


@pytest.mark.parametrize("which", ["output", "template"])
def test_dropdowns(which, out):
    from planner.core import schema
    from planner.workbook.layout import sheet_columns
    from xlsxwriter.utility import xl_col_to_name

    xml = parts(out if which == "output" else EXAMPLE.parent / "template.xlsx")
    col = lambda sheet, name: xl_col_to_name(sheet_columns(sheet)[name])
    wl = _list_validations(xml, "Workloads")
    rows = lambda f: int(re.search(r"\$(\d+)$", f)[1])
    assert wl[col("Workloads", "model")].startswith("Models!$A$2:$A$") and rows(wl[col("Workloads", "model")]) >= 500
    assert wl[col("Workloads", "gpu")].startswith("GPUs!$A$2:$A$") and rows(wl[col("Workloads", "gpu")]) >= 500
    assert wl[col("Workloads", "other_scaling")] == '"const,linear,quadratic"'
    assert _list_validations(xml, "Models")[col("Models", "attention")] == '"gqa,mla"'
    assert _list_validations(xml, "GPUs")[col("GPUs", "pcie_gen")] == '"4,5"'
    # the validated cells reach past the data: rows a user adds get the dropdowns too
    sx = xml[sheet_files(xml)["Workloads"]]
    sq = re.search(rf'sqref="{col("Workloads", "model")}2:{col("Workloads", "model")}(\d+)"', sx)
    assert int(sq[1]) >= 500
    assert schema.column("Workloads", "model").ref == "Models"


# ----------------------------------------------------------------------------- the mechanism
def test_pack_groups_hand_calculated():
    from planner.workbook.print_setup import pack_groups

    # title column 0 (100 px) on every page; groups start at 0, 3, 6; pages 500 px:
    # page 1 = title + cols 1-2 (300), + group 3-5 would be 600 -> break at 3 (400 used),
    # + group 6-9 would be 800 -> break at 6, title + 6-9 = 500 fits exactly
    assert pack_groups([0, 3, 6], [100] * 10, 1, 100, 500) == ([3, 6], 0)
    # a group wider than a page (cols 2-9, 800 px on 400 px pages) is cut between columns
    assert pack_groups([0, 2], [100] * 10, 1, 100, 400) == ([2, 5, 8], 1)


def test_every_sheet_gets_a_spec():
    from planner.workbook.print_setup import PrintSpec, spec_for

    for name in ("Sensitivity_Hit", "Sensitivity_Hit_2", "Tornado_Calc_3", "Tornado", "Resolved"):
        assert spec_for(name).long, name
    assert spec_for("Measurements") == PrintSpec() and not spec_for("Results").long  # the default
    assert spec_for("Summary").fit_pages == (1, 1) and spec_for("Demand_Calc").long


def test_header_escapes_ampersands():
    from planner.workbook.print_setup import header_text

    assert header_text("Q4 R&D") == '&LKV-hit capacity plan Q4 R&&D: &"-,Bold"&A'
    assert header_text("", "x").endswith("&R&8x")
