"""Every bad input gets a clear answer and nothing is lost (the corpus of tests/corpus.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import openpyxl
import pytest

import corpus
from conftest import (EXAMPLE, SMALL_WORKLOADS, edited_example, planner_env, problem_lines, repeat_workloads, run_cli, run_planner,
                      sheet_values, trim_workloads)
from planner.core.errors import MAX_LISTED

def planner(*args, cwd: Path) -> subprocess.CompletedProcess:
    """A real process: exit status, no traceback, nothing touched, whatever the input does."""
    return run_planner(*args, cwd=cwd, timeout=120)


def planner_here(*args, cwd: Path) -> subprocess.CompletedProcess:
    """In this process (planner.cli.main.main), where the process adds nothing."""
    return run_cli(*args, cwd=cwd)


# a real process for a few cases of each kind (file-level, zip-level, cell-level, many); the
# whole corpus in this process, where main() returns the status the process would exit with
AS_PROCESS = ("not_a_zip", "zip_bomb", "wrong_values", "many_problems")


@pytest.mark.parametrize("case", sorted(corpus.BAD))
def test_bad_input_exit_2_every_problem_nothing_touched(case, tmp_path):
    assert set(AS_PROCESS) <= set(corpus.BAD)
    src_dir, out_dir = tmp_path / "in", tmp_path / "out"
    src_dir.mkdir()
    out_dir.mkdir()
    path, expected = corpus.BAD[case](src_dir)
    before = path.read_bytes()
    out = out_dir / "plan.xlsx"
    out.write_bytes(b"last quarter's plan")
    r = (planner if case in AS_PROCESS else planner_here)("run", path, "-o", out, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and "Traceback" not in r.stdout
    lines = problem_lines(r.stderr)
    if len(expected) > MAX_LISTED:
        assert lines[:-1] == expected[:MAX_LISTED]
        assert lines[-1] == f"... and {len(expected) - MAX_LISTED} more problems not listed"
        assert f"the input has {len(expected)} problems" in r.stderr
    else:
        assert sorted(lines) == sorted(expected), r.stderr
        assert len(lines) == len(expected)
    assert path.read_bytes() == before                     # input byte-identical
    assert out.read_bytes() == b"last quarter's plan"      # existing output untouched
    assert sorted(os.listdir(out_dir)) == ["plan.xlsx"]     # no partial or temporary file
    # validate says the same and writes nothing
    r2 = planner_here("validate", path, cwd=tmp_path)
    assert r2.returncode == 2 and sorted(problem_lines(r2.stderr)) == sorted(lines)


def test_case_and_space_references_accepted_and_said_once(tmp_path):
    # the example cut to 3 workloads: the two edited references are in its rows 2 and 3
    path, _ = corpus.case_and_space_refs(tmp_path, workloads=SMALL_WORKLOADS)
    r = planner_here("run", path, "-o", tmp_path / "plan.xlsx", "--no-memo", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    notes = [line for line in r.stderr.splitlines() if "note:" in line]
    assert len(notes) == 1 and "2 model/gpu reference(s)" in notes[0]
    assert "Workloads!B2" in notes[0] and "Workloads!C3" in notes[0]
    plain = openpyxl.load_workbook(EXAMPLE, read_only=True)
    names = [row[1] for row in plain["Workloads"].iter_rows(min_row=2, max_row=3, values_only=True)]
    got = sheet_values(tmp_path / "plan.xlsx", "Workloads")
    assert [got[0]["model"], got[1]["model"]] == names  # written back as the canonical names


def test_xlsm_is_read_as_values_and_no_macro_is_carried(tmp_path, small_example):
    # (a "/tmp/pwned not created" check could not fail: nothing in Python runs VBA.) What can
    # go wrong: the .xlsm is refused, its values are read differently, or the VBA project
    # reaches the output.
    # made from the example cut to 3 workloads (conftest.small_example): the container and the
    # values' way through the reader are the same as for the whole example
    path, _ = corpus.xlsm_with_macros(tmp_path, source=small_example)
    with zipfile.ZipFile(path) as z:                      # the case really is a macro workbook
        assert "xl/vbaProject.bin" in z.namelist()
        assert b"macroEnabled" in z.read("[Content_Types].xml")
    r = planner_here("run", path, "--no-memo", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "out" / "macros-plan.xlsx"
    with zipfile.ZipFile(out) as z:
        assert not any("vba" in n.lower() for n in z.namelist())
        assert b"macroEnabled" not in z.read("[Content_Types].xml")
    from planner.plan.build import build_plan

    expected = build_plan(small_example).results  # the same cells as the plain workbook it was made from
    got = sheet_values(out, "Results")
    assert [g["workload"] for g in got] == list(expected["workload"])
    assert [g["ttft_ms"] for g in got] == pytest.approx(list(expected["ttft_ms"]), rel=1e-12)


def test_defusedxml_is_active():
    from openpyxl.xml import DEFUSEDXML

    assert DEFUSEDXML is True
    import openpyxl.xml.functions as f

    assert "defusedxml" in f.fromstring.__module__


def test_formula_looking_text_stays_text(tmp_path):
    wb = openpyxl.load_workbook(EXAMPLE)
    ws = wb["Workloads"]
    evil = '=HYPERLINK("http://example.com","x")'
    ws["A2"] = evil
    ws["A2"].data_type = "s"  # openpyxl would otherwise store it as a formula
    for sheet in ("Demand", "Scenarios"):  # they name the renamed workload
        del wb[sheet]
    trim_workloads(wb, SMALL_WORKLOADS)  # the text's way through reader and writer is the same on 3 rows
    src = tmp_path / "evil.xlsx"
    wb.save(src)
    r = planner_here("run", src, "-o", tmp_path / "plan.xlsx", "--no-memo", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    with zipfile.ZipFile(tmp_path / "plan.xlsx") as z:
        xml = "".join(z.read(n).decode("utf-8") for n in z.namelist() if n.startswith("xl/worksheets/"))
    assert not re.search(r"<f>[^<]*HYPERLINK", xml)          # never a formula
    wb = openpyxl.load_workbook(tmp_path / "plan.xlsx", read_only=True)  # one sheet parsed, formulas kept as such
    cell = wb["Workloads"]["A2"]
    assert cell.value == evil and cell.data_type == "s"     # but kept as text
    wb.close()
    got = sheet_values(tmp_path / "plan.xlsx", "Results")
    assert got[0]["workload"] == evil


def test_excel_lock_file_refused(tmp_path):
    out = tmp_path / "plan.xlsx"
    (tmp_path / "~$plan.xlsx").write_bytes(b"lock")
    r = planner_here("run", EXAMPLE, "-o", out, cwd=tmp_path)
    assert r.returncode == 2 and "open in Excel" in r.stderr and not out.exists()


def test_zip_limits_are_read_from_the_directory_not_inflated(tmp_path, monkeypatch):
    """The size check runs before openpyxl: a small limit refuses the normal example."""
    from planner.inputs import container as safety
    from planner.core.errors import InputError
    from planner.inputs.reader import read_input

    monkeypatch.setattr(safety, "MAX_TOTAL_INFLATED", 10_000)
    with pytest.raises(InputError) as e:
        read_input(EXAMPLE)
    assert "above the limit of 0.0 MiB" in str(e.value)


@pytest.fixture(scope="module")
def big_input(tmp_path_factory) -> Path:
    """The example with 1,000 workloads (read-only: made once for both signals): its writing
    lasts seconds, well beyond the 0.2 s after which the signal comes (a run that ended first
    would exit 0 and fail the test)."""
    path, _ = edited_example(tmp_path_factory.mktemp("big") / "big.xlsx", lambda wb: repeat_workloads(wb, 1000))
    return path


@pytest.mark.slow
@pytest.mark.parametrize("sig, code", [("SIGTERM", 143), ("SIGINT", 130)])
def test_interrupted_run_leaves_no_partial_file(tmp_path, big_input, sig, code):
    import signal

    src = big_input
    out_dir, tmpdir = tmp_path / "out", tmp_path / "tmp"
    out_dir.mkdir()
    tmpdir.mkdir()
    (out_dir / "plan.xlsx").write_bytes(b"previous")
    (out_dir / "plan-memo.md").write_bytes(b"previous memo")
    # --no-charts: the charts are drawn before the writing starts, and are not what is interrupted
    proc = subprocess.Popen([sys.executable, "-m", "planner", "run", str(src), "-o", str(out_dir / "plan.xlsx"),
                             "--no-charts"],
                            cwd=tmp_path, env=planner_env({"TMPDIR": str(tmpdir)}), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120

    def writing() -> bool:  # the staging folder holds a file: XlsxWriter's temporary files (the memo is
        # rendered in memory first, after the staging folder is made)
        stages = [out_dir / n for n in os.listdir(out_dir) if n.startswith(".planner-stage-")]
        return any(os.listdir(d) for d in stages if d.is_dir())

    while time.time() < deadline and not writing():
        assert proc.poll() is None, "the run ended before writing started"
        time.sleep(0.01)
    time.sleep(0.2)  # well inside the writing
    proc.send_signal(getattr(signal, sig))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert "no partial file" in err and "Traceback" not in err
    assert sorted(os.listdir(out_dir)) == ["plan-memo.md", "plan.xlsx"]
    assert (out_dir / "plan.xlsx").read_bytes() == b"previous" and (out_dir / "plan-memo.md").read_bytes() == b"previous memo"
    assert os.listdir(tmpdir) == []  # XlsxWriter's constant-memory files were in the staging folder (issue 17)
