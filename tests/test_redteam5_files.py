"""The input file as users hand it over (red team 5, issue 20's angle of the CLI and files). Each
case was tried on a fresh copy of workbooks/example.xlsx; these are the ones that were silent or
unclear:

* the input open in Excel (its owner file ``~$name.xlsx`` beside it): the last saved version is
  read, which a user with unsaved edits does not expect: now a note;
* rows hidden in Excel (by hand or by a filter) and hidden sheets were planned like the others
  with nothing said: now a note each (a reader who hid a row often meant "not this one");
* an OpenDocument spreadsheet (LibreOffice's .ods, or one renamed .xlsx) was "a zip archive but
  not an Excel workbook": now named as what it is, with the way to save it;
* a title row above the header gave one "required column is missing" per column (8 on the
  example's Workloads): now one problem at the row that holds the names.
"""

from __future__ import annotations

import hashlib
import io
import shutil
import zipfile

import openpyxl
import pytest

from conftest import REPO
from planner.cli.main import main
from planner.core.errors import InputError
from planner.inputs.reader import read_input

EXAMPLE = REPO / "workbooks" / "example.xlsx"


def _copy(tmp_path, name="in.xlsx"):
    dst = tmp_path / name
    shutil.copy(EXAMPLE, dst)
    return dst


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_an_input_open_in_excel_is_said(tmp_path):
    src = _copy(tmp_path)
    assert not [n for n in read_input(src).notes if "open in Excel" in n]
    (tmp_path / "~$in.xlsx").write_bytes(b"\x05owner")
    notes = [n for n in read_input(src).notes if "open in Excel" in n]
    assert notes == ["in.xlsx: is open in Excel (~$in.xlsx beside it): the last saved version is read; edits not "
                     "saved yet are not in this plan"]


def test_hidden_rows_and_sheets_are_said(tmp_path):
    src = tmp_path / "hidden.xlsx"
    wb = openpyxl.load_workbook(EXAMPLE)
    wb["Workloads"].row_dimensions[3].hidden = True
    wb["Workloads"].row_dimensions[5].hidden = True
    wb["Scenarios"].sheet_state = "hidden"
    wb.save(src)
    notes = read_input(src).notes
    assert "Workloads rows 3, 5: hidden in Excel (by hand or by a filter), read and planned like the others " \
           "(delete a row to leave it out)" in notes
    assert any(n.startswith("Scenarios: the sheet is hidden in Excel; it is read and planned") for n in notes)
    assert not [n for n in read_input(EXAMPLE).notes if "hidden" in n]       # the example hides nothing


def _ods(path) -> None:
    """A minimal OpenDocument spreadsheet: the mimetype member first, stored, as ODF 1.2 §3.3 says."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(zipfile.ZipInfo("mimetype"), "application/vnd.oasis.opendocument.spreadsheet")
        z.writestr("content.xml", '<?xml version="1.0"?><office:document-content '
                                  'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"/>')
        z.writestr("META-INF/manifest.xml", "<manifest/>")
    path.write_bytes(buf.getvalue())


@pytest.mark.parametrize("name", ["plan.ods", "renamed.xlsx"])
def test_an_ods_is_named_exit_2_nothing_written(tmp_path, capsys, name):
    src = tmp_path / name
    _ods(src)
    before = _sha(src)
    out = tmp_path / "out" / "p.xlsx"
    assert main(["run", str(src), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{name}: is an OpenDocument spreadsheet (.ods), whatever its name says: save it as .xlsx" in err
    assert _sha(src) == before and not out.parent.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_a_title_row_above_the_header_is_one_problem(tmp_path):
    src = tmp_path / "title.xlsx"
    wb = openpyxl.load_workbook(EXAMPLE)
    wb["Workloads"].insert_rows(1)
    wb["Workloads"]["A1"] = "Workloads for Q1 (draft)"
    wb.save(src)
    with pytest.raises(InputError) as exc:
        read_input(src)
    on = [p for p in exc.value.problems if p.place.sheet == "Workloads"]
    assert [str(p.place) for p in on] == ["Workloads row 2"]
    assert on[0].message.startswith("holds the column names (workload, model, gpu, tp, ...): the header must be "
                                    "row 1; delete the row above it")
