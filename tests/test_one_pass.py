"""Issue 17, the input side: the input read once; every check before anything is written,
all problems at once; ``validate`` runs exactly the checks ``run`` runs."""

from __future__ import annotations

import hashlib
import io
import os
from pathlib import Path

import openpyxl
import pytest

from conftest import EXAMPLE, edited_example, problem_lines, run_cli
from planner.errors import InputError
from planner.reader import read_input


def test_input_is_opened_once_and_hashed_from_those_bytes(tmp_path, monkeypatch):
    src, _ = edited_example(tmp_path / "in.xlsx")
    opened = []
    real_open = io.open

    def counting_open(file, *a, **k):
        if isinstance(file, (str, os.PathLike)) and Path(file) == src:
            opened.append(a[0] if a else k.get("mode", "r"))
        return real_open(file, *a, **k)

    monkeypatch.setattr(io, "open", counting_open)
    p = read_input(src)
    assert opened == ["rb"]                                   # one open, one read
    assert p.sha256 == hashlib.sha256(src.read_bytes()).hexdigest()


def test_input_replaced_after_reading_does_not_mix(tmp_path, monkeypatch):
    """The file is swapped for another workbook right after its bytes were read (a save from
    Excel, a sync client): the plan and the hash are both of the first file."""
    a, _ = edited_example(tmp_path / "a.xlsx")
    b, _ = edited_example(tmp_path / "b.xlsx", lambda wb: wb["Workloads"].delete_rows(3, 20))
    a_bytes, b_bytes = a.read_bytes(), b.read_bytes()
    import pathlib

    real = pathlib.Path.read_bytes

    def read_then_swap(self):
        data = real(self)
        if self == a:
            a.write_bytes(b_bytes)
        return data

    monkeypatch.setattr(pathlib.Path, "read_bytes", read_then_swap)
    p = read_input(a)
    assert p.sha256 == hashlib.sha256(a_bytes).hexdigest()
    assert len(p.workloads) == len(openpyxl.load_workbook(EXAMPLE)["Workloads"]["A"]) - 1  # all 14 rows of A


@pytest.mark.parametrize("twin", ["workloads ", " Workloads", "WORKLOADS "])
def test_sheet_names_differing_by_case_or_spaces_are_an_error_naming_both(tmp_path, twin):
    def edit(wb):
        ws = wb.create_sheet(twin)
        ws.append(["workload"])
    src, _ = edited_example(tmp_path / "in.xlsx", edit)
    r = run_cli("run", src, "-o", tmp_path / "plan.xlsx", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert problem_lines(r.stderr) == [f"Workloads: sheets 'Workloads' and {twin!r} differ only in case or "
                                       f"surrounding spaces: rename or delete all but one"]
    assert not (tmp_path / "plan.xlsx").exists()
