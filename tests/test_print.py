"""Print set-up, currency units, Explorer layout, Checks and dropdowns of the output workbook
(issue 13, workbook side), read back from the package XML."""

from __future__ import annotations

import re
import subprocess
import zipfile
from pathlib import Path

import pytest

from planner.libreoffice import make_profile, soffice

from conftest import EXAMPLE, run_planner

NS = {"m": "http://schemas.openxmlformats.org/spreadsheetml/2006/main"}
LONG = re.compile(r"^(Sensitivity_|Tornado|Resolved)")


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("print")
    proc = run_planner("run", EXAMPLE, "-o", folder / "out.xlsx", "--no-memo", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    return folder / "out.xlsx"


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
        assert "fitToPage" not in sx, name  # never squeezed onto one page
        head = re.search(r"<oddHeader>(.*?)</oddHeader>", sx)
        foot = re.search(r"<oddFooter>(.*?)</oddFooter>", sx)
        assert head and "2026-Q4" in head[1] and "&amp;A" in head[1], (name, head)  # quarter, sheet name
        assert foot and "Page &amp;P of &amp;N" in foot[1], name
        assert name in areas, name
        if name not in ("Charts",):
            assert name in titles, name
    # the header row repeated on Results, and the workload column on its every page
    assert titles["Results"] == "Results!$A:$A,Results!$1:$1"
    assert titles["Workloads"].startswith("Workloads!$A:$A")


def test_results_breaks_between_column_groups(xml):
    from planner import sheets
    from planner.print_setup import RESULTS_GROUPS

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


def test_pdf_pages(out, tmp_path):
    """The whole example output printed by LibreOffice: 151 pages before this set-up (12
    workloads), 48 after; a bound with some slack for LibreOffice versions."""
    assert soffice(), "LibreOffice is required"
    profile = make_profile(tmp_path / "profile")
    subprocess.run([soffice(), f"-env:UserInstallation={profile.resolve().as_uri()}", "--headless",
                    "--convert-to", "pdf", "--outdir", str(tmp_path), str(out)],
                   capture_output=True, timeout=120, env={"HOME": str(profile), "PATH": "/usr/bin:/bin"})
    pdf = (tmp_path / "out.pdf").read_bytes()
    pages = len(re.findall(rb"/Type\s*/Page[^s]", pdf))
    assert 20 <= pages <= 60, pages


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
        assert not any("currency" in h for h in headers_of(out, sheet)), sheet
    # the output is still a valid input (the reader drops the bracketed unit)
    proc = run_planner("validate", out, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr


def test_with_currency():
    from planner.names import with_currency

    assert with_currency("hourly_cost [currency/h]", "EUR") == "hourly_cost [EUR/h]"
    assert with_currency("cost [currency]", "JPY") == "cost [JPY]"
    assert with_currency("hourly_cost [currency/h]", "") == "hourly_cost [currency/h]"
    assert with_currency("currency", "EUR") == "currency"  # a Settings key, not a unit
