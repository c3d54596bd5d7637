"""The command line (docs/model.md §5), run as a subprocess: ``python -m planner ...``.

Wrong inputs are built from the bundled example by editing a copy with openpyxl; every
column letter is found from the header row, never hard-coded.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import openpyxl
import pytest

from conftest import EXAMPLE, SMALL_WORKLOADS, edited_example, problem_lines, run_cli, run_planner, value_book

OUTPUT_SHEETS = {"Results", "Sensitivity_Hit", "Models", "GPUs", "Workloads", "Settings", "Checks", "Run"}
OLD_OUTPUT = b"previous output, must survive a failed run"


# --------------------------------------------------------------------------- helpers
# In this process (planner.cli.main.main): a subprocess adds an interpreter start and nothing else
# here; the tests where the process itself matters call run_planner.
planner = run_cli


def base(header) -> str:
    """``'ttft_ms [ms]'`` -> ``'ttft_ms'``."""
    return str(header).split(" [")[0].strip()


def col(ws, name: str) -> str:
    """Column letter of ``name`` in row 1 of ``ws``."""
    for cell in ws[1]:
        if cell.value is not None and base(cell.value).lower() == name:
            return cell.column_letter
    raise KeyError(f"{ws.title}: no column {name!r}")


def col_index(ws, name: str) -> int:
    for cell in ws[1]:
        if cell.value is not None and base(cell.value).lower() == name:
            return cell.column
    raise KeyError(f"{ws.title}: no column {name!r}")


def sheet_rows(path: Path, sheet: str) -> list[dict]:
    """Non-blank data rows of ``sheet`` keyed by header (unit dropped), cached values."""
    wb = openpyxl.load_workbook(path, data_only=True, read_only=True)
    try:
        rows = list(wb[sheet].iter_rows(values_only=True))
    finally:
        wb.close()
    heads = [base(h) if h is not None else None for h in rows[0]]
    out = []
    for r in rows[1:]:
        if all(v is None or (isinstance(v, str) and not v.strip()) for v in r):
            continue
        out.append({h: v for h, v in zip(heads, r) if h is not None})
    return out


def example_workloads(path: Path = EXAMPLE) -> list[str]:
    return [r["workload"] for r in sheet_rows(path, "Workloads")]


def assert_input_error(r: subprocess.CompletedProcess, expected: list[str]) -> None:
    """Exit 2, no traceback, exactly the expected problems, each line starting with its place."""
    msg = f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    assert r.returncode == 2, msg
    assert "Traceback" not in r.stderr and "Traceback" not in r.stdout, msg
    assert "internal error" not in r.stderr, msg
    n = len(expected)
    assert f"the input has {n} problem{'s' if n != 1 else ''}; nothing was written" in r.stderr, msg
    lines = problem_lines(r.stderr)
    assert len(lines) == n, msg
    for frag in expected:
        assert any(line.startswith(frag) for line in lines), f"missing {frag!r}\n{msg}"
    assert "wrote" not in r.stdout, msg


@pytest.fixture(scope="module")
def small_plan(tmp_path_factory, small_example) -> Path:
    """The example cut to SMALL_WORKLOADS workloads (conftest.small_example) planned once
    (explicit input and output): the reference of the lenient-reading tests below, which edit
    the same small input (the same reader paths at a quarter of the example's run time)."""
    d = tmp_path_factory.mktemp("small-plan")
    out = d / "small-plan.xlsx"
    r = planner("run", small_example, "-o", out, "--no-memo", cwd=d)
    assert r.returncode == 0, r.stderr
    return out


# --------------------------------------------------------------------------- run
@pytest.mark.slow
def test_run_without_input_plans_the_example_into_out(tmp_path):
    # a real process end to end: default input, default output, memo
    example_before = EXAMPLE.read_bytes()
    r = run_planner("run", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    out = tmp_path / "out" / "example-plan.xlsx"
    assert out.is_file()
    assert sorted(os.listdir(tmp_path)) == ["out"]
    assert sorted(os.listdir(tmp_path / "out")) == [  # workbook and memo, no temporary left over
        "example-plan-memo.html", "example-plan-memo.md", "example-plan-tpm.png", "example-plan-ttft.png",
        "example-plan.xlsx"]
    assert "wrote" in r.stdout
    assert os.path.join("out", "example-plan.xlsx") in r.stdout  # says where it wrote
    assert "example.xlsx" in r.stdout  # and what it read
    assert EXAMPLE.read_bytes() == example_before

    wb = openpyxl.load_workbook(out, read_only=True)  # the sheet names only: no sheet parsed (0.8 s less)
    assert OUTPUT_SHEETS <= set(wb.sheetnames), wb.sheetnames
    wb.close()
    results = sheet_rows(out, "Results")
    names = example_workloads()
    assert len(results) == len(names) > 0
    assert [r["workload"] for r in results] == names  # one row per workload, input order
    for row in results:
        assert isinstance(row["ttft_ms"], (int, float)) and row["ttft_ms"] > 0
        assert row["regime"] in ("load-bound", "compute-bound")
    # Sensitivity_Hit: every workload at hit 0, 0.05, ..., 1 (hit_step of the example)
    sens = sheet_rows(out, "Sensitivity_Hit")
    assert len(sens) == 21 * len(names)
    assert {s["workload"] for s in sens} == set(names)
    assert value_book(out, "Checks")["Checks"]["B1"].value == "OK"


Q4_FILES = ["q4-memo.html", "q4-memo.md", "q4-tpm.png", "q4-ttft.png", "q4.xlsx"]


@pytest.mark.slow
def test_run_explicit_output_twice_replaces_it(tmp_path, small_example):
    src = tmp_path / "in.xlsx"
    src.write_bytes(small_example.read_bytes())  # the whole example: test_run_without_input_plans_the_example_into_out
    out_dir = tmp_path / "plans"
    out = out_dir / "q4.xlsx"

    r = planner("run", src, "-o", out, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert str(out) in r.stdout
    assert [x["workload"] for x in sheet_rows(out, "Results")] == example_workloads(small_example)
    assert sorted(os.listdir(out_dir)) == Q4_FILES

    # second run, from a changed input, onto the existing output
    src2, _ = edited_example(tmp_path / "in" / "in2.xlsx", lambda wb: _set(wb, W, "workload", 2, "renamed-workload"),
                             workloads=SMALL_WORKLOADS)
    r = planner("run", src2, "-o", out, "--no-memo", cwd=tmp_path)  # memo replacement: test_memo.py
    assert r.returncode == 0, r.stderr
    assert sheet_rows(out, "Results")[0]["workload"] == "renamed-workload"
    # replaced in place, no temporaries; the first run's memo and charts, which describe the old plan,
    # are removed with the same commit and named (issue 21)
    assert sorted(os.listdir(out_dir)) == ["q4.xlsx"]
    assert "planner: removed q4-memo.md, q4-memo.html, q4-ttft.png, q4-tpm.png beside q4.xlsx" in r.stdout

    # a stale or damaged file at the output path is replaced by a complete workbook
    out.write_bytes(b"stale")
    r = planner("run", src, "-o", out, "--no-memo", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert [x["workload"] for x in sheet_rows(out, "Results")] == example_workloads(small_example)
    assert sorted(os.listdir(out_dir)) == ["q4.xlsx"]
    assert src.read_bytes() == small_example.read_bytes()


def test_run_quiet_prints_nothing(tmp_path, small_example):
    out = tmp_path / "o.xlsx"
    r = planner("run", small_example, "-o", out, "-q", "--no-memo", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""
    assert out.is_file()


@pytest.mark.skipif(os.name != "posix", reason="POSIX permission bits")
def test_output_file_permissions_follow_umask(tmp_path, small_example):
    # the output is a document for people to share: it must get the usual permissions
    # (0o666 & ~umask, e.g. 0644), not the 0600 of a private temporary file
    umask = os.umask(0)
    os.umask(umask)
    out = tmp_path / "plan.xlsx"
    r = planner("run", small_example, "-o", out, "--no-memo", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert oct(out.stat().st_mode & 0o777) == oct(0o666 & ~umask)
    tpl = tmp_path / "t.xlsx"
    r = planner("template", tpl, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert oct(tpl.stat().st_mode & 0o777) == oct(0o666 & ~umask)


@pytest.mark.parametrize("how", ["same", "relative", "dotted"])
def test_output_may_not_be_the_input(tmp_path, how):
    src = tmp_path / "in.xlsx"
    src.write_bytes(EXAMPLE.read_bytes())
    before = src.read_bytes()
    (tmp_path / "sub").mkdir()
    target = {"same": src, "relative": Path("in.xlsx"), "dotted": Path("sub") / ".." / "in.xlsx"}[how]
    r = planner("run", src, "-o", target, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    assert "the output may not be the input itself" in r.stderr
    assert src.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["in.xlsx", "sub"]
    assert os.listdir(tmp_path / "sub") == []


def test_output_must_be_xlsx(tmp_path):
    r = planner("run", EXAMPLE, "-o", tmp_path / "plan.csv", cwd=tmp_path)
    assert r.returncode == 2
    assert "the output must be an .xlsx file" in r.stderr
    assert "Traceback" not in r.stderr
    assert os.listdir(tmp_path) == []


def test_output_open_in_excel_is_refused(tmp_path):
    out = tmp_path / "plan.xlsx"
    out.write_bytes(OLD_OUTPUT)
    lock = tmp_path / "~$plan.xlsx"
    lock.write_bytes(b"lock")
    r = planner("run", EXAMPLE, "-o", out, cwd=tmp_path)
    assert r.returncode == 2
    assert "open in Excel" in r.stderr
    assert out.read_bytes() == OLD_OUTPUT
    assert sorted(os.listdir(tmp_path)) == sorted(["plan.xlsx", "~$plan.xlsx"])


# --------------------------------------------------------------------------- template / validate
def test_template_validate_run(tmp_path):
    tpl = tmp_path / "T.xlsx"
    r = planner("template", tpl, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert str(tpl) in r.stdout
    assert tpl.is_file()
    assert sorted(os.listdir(tmp_path)) == ["T.xlsx"]
    wb = openpyxl.load_workbook(tpl)
    assert {"Models", "GPUs", "Workloads", "Settings"} <= set(wb.sheetnames)
    wb.close()
    tpl_bytes = tpl.read_bytes()

    r = planner("validate", tpl, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "is valid" in r.stdout and "1 workloads" in r.stdout
    assert tpl.read_bytes() == tpl_bytes
    assert sorted(os.listdir(tmp_path)) == ["T.xlsx"]  # validate writes nothing

    out = tmp_path / "X.xlsx"
    r = planner("run", tpl, "-o", out, "--no-memo", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert len(sheet_rows(out, "Results")) == 1
    assert tpl.read_bytes() == tpl_bytes


def test_template_refuses_to_overwrite_without_force(tmp_path):
    tpl = tmp_path / "T.xlsx"
    tpl.write_bytes(b"my precious workbook")
    r = planner("template", tpl, cwd=tmp_path)
    assert r.returncode != 0
    assert r.returncode == 2
    assert "exists already" in r.stderr and "--force" in r.stderr
    assert "Traceback" not in r.stderr
    assert tpl.read_bytes() == b"my precious workbook"
    assert os.listdir(tmp_path) == ["T.xlsx"]

    r = planner("template", tpl, "--force", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert tpl.read_bytes() != b"my precious workbook"
    assert planner("validate", tpl, cwd=tmp_path).returncode == 0
    assert os.listdir(tmp_path) == ["T.xlsx"]


def test_validate_example(tmp_path):
    r = planner("validate", EXAMPLE, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"({len(example_workloads())} workloads" in r.stdout
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("args", [["--help"], ["run", "--help"], ["template", "--help"],
                                  ["validate", "--help"]], ids=lambda a: " ".join(a))
def test_help(tmp_path, args):
    r = planner(*args, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "example" in r.stdout.lower()
    assert "usage: planner" in r.stdout


# --------------------------------------------------------------------------- wrong inputs
W = "Workloads"


def _set(wb, sheet: str, name: str, row: int, value, fmt: str | None = None) -> str:
    ws = wb[sheet]
    place = f"{col(ws, name)}{row}"
    ws[place] = value
    if fmt:
        ws[place].number_format = fmt
    return f"{sheet}!{place}"


def case_hit_target_13(wb):
    p = _set(wb, W, "hit_target", 3, 1.3)
    return [f"{p}: hit_target 1.3 is outside [0, 1]"]


def case_hit_target_85(wb):
    p = _set(wb, W, "hit_target", 4, 85)
    return [f"{p}: hit_target 85 is outside [0, 1] (a ratio: write 0.85 or 85%)"]


def case_isl_text(wb):
    p = _set(wb, W, "isl", 3, "abc")
    return [f"{p}: isl 'abc' is not a number"]


def case_tp_fraction(wb):
    p = _set(wb, W, "tp", 5, 2.5)
    return [f"{p}: tp 2.5 is not a whole number"]


def case_alpha_negative(wb):
    p = _set(wb, W, "alpha", 6, -0.1)
    return [f"{p}: alpha -0.1 is outside [0, 1]"]


def case_other_scaling(wb):
    p = _set(wb, W, "other_scaling", 3, "cubic")
    return [f"{p}: other_scaling 'cubic' is not one of const, linear, quadratic"]


def case_dangling_model(wb):
    p = _set(wb, W, "model", 7, "No-Such-Model")
    return [f"{p}: model 'No-Such-Model' is not in Models"]


def case_dangling_gpu(wb):
    p = _set(wb, W, "gpu", 2, "B200")
    return [f"{p}: gpu 'B200' is not in GPUs"]


def case_duplicate_workload(wb):
    ws = wb[W]
    first = ws[f"{col(ws, 'workload')}2"].value
    p = _set(wb, W, "workload", 5, first)
    return [f"{p}: workload {first!r} duplicates row 2"]


def case_duplicate_model_case(wb):
    # a copy of the first model appended under the same name in other case and spaces
    ws = wb["Models"]
    first = ws[f"{col(ws, 'model')}2"].value
    new_row = ws.max_row + 1
    for j in range(1, ws.max_column + 1):
        ws.cell(row=new_row, column=j, value=ws.cell(row=2, column=j).value)
    p = _set(wb, "Models", "model", new_row, f" {first.upper()} ")
    return [f"{p}: model {first.upper()!r} duplicates row 2"]


def case_missing_column(wb):
    ws = wb[W]
    ws.delete_cols(col_index(ws, "hit_target"))
    return [f"{W} row 1: required column 'hit_target' is missing"]


def case_missing_sheet(wb):
    wb.remove(wb["GPUs"])
    return ["GPUs: the sheet is missing"]


def case_excel_error(wb):
    p = _set(wb, W, "t_attn0_ms", 4, "#DIV/0!")
    return [f"{p}: t_attn0_ms holds the Excel error #DIV/0!"]


def case_required_blank(wb):
    p = _set(wb, W, "isl", 8, None)
    return [f"{p}: isl is required"]


def case_bad_setting(wb):
    ws = wb["Settings"]
    for row in ws.iter_rows(min_row=2):
        if row[0].value == "hit_step":
            row[1].value = 0
            return [f"Settings!{row[1].column_letter}{row[1].row}: hit_step 0 is outside (0, 1]"]
    raise AssertionError("no hit_step in the example's Settings")


def case_several(wb):
    ws = wb[W]
    first = ws[f"{col(ws, 'workload')}2"].value
    return (case_hit_target_13(wb) + case_tp_fraction(wb) + case_other_scaling(wb)
            + case_dangling_model(wb) + [f"{_set(wb, W, 'workload', 8, first)}: workload {first!r} "
                                         f"duplicates row 2"]
            + case_excel_error(wb)
            + [f"{_set(wb, 'Models', 'kv_bytes', 2, 'two')}: kv_bytes 'two' is not a number"]
            + [f"{_set(wb, 'GPUs', 'hbm_gib', 3, -80)}: hbm_gib -80 is outside (0, 1e+06]"])


CASES = {
    "hit_target 1.3": case_hit_target_13,
    "hit_target bare 85": case_hit_target_85,
    "isl abc": case_isl_text,
    "tp 2.5": case_tp_fraction,
    "alpha -0.1": case_alpha_negative,
    "other_scaling cubic": case_other_scaling,
    "dangling model": case_dangling_model,
    "dangling gpu": case_dangling_gpu,
    "duplicate workload": case_duplicate_workload,
    "duplicate model by case": case_duplicate_model_case,
    "missing column": case_missing_column,
    "missing sheet": case_missing_sheet,
    "#DIV/0!": case_excel_error,
    "required blank": case_required_blank,
    "bad setting": case_bad_setting,
    "several at once": case_several,
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_wrong_input(tmp_path, case):
    src, expected = edited_example(tmp_path / "in" / "wrong.xlsx", CASES[case])
    before = src.read_bytes()

    # run onto an existing output: exit 2, every problem listed, the output untouched
    out_dir = tmp_path / "plans"
    out_dir.mkdir()
    out = out_dir / "plan.xlsx"
    out.write_bytes(OLD_OUTPUT)
    r = planner("run", src, "-o", out, cwd=tmp_path)
    assert_input_error(r, expected)
    assert out.read_bytes() == OLD_OUTPUT
    assert os.listdir(out_dir) == ["plan.xlsx"]  # nothing written beside it either

    # run with the default output: nothing written (not even the out/ folder)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    r = planner("run", src, cwd=cwd)
    assert_input_error(r, expected)
    assert os.listdir(cwd) == []

    # validate reports the same problems
    r = planner("validate", src, cwd=cwd)
    assert_input_error(r, expected)
    assert "is valid" not in r.stdout
    assert os.listdir(cwd) == []

    assert src.read_bytes() == before
    assert sorted(os.listdir(src.parent)) == ["wrong.xlsx"]


def test_wrong_input_as_a_process_exits_2_without_traceback(tmp_path):
    # the real process status (the cases above run planner.cli.main.main in this process)
    src, expected = edited_example(tmp_path / "in" / "wrong.xlsx", case_several)
    for args in (["run", src, "-o", tmp_path / "plan.xlsx"], ["validate", src]):
        assert_input_error(run_planner(*args, cwd=tmp_path), expected)
    assert sorted(os.listdir(tmp_path)) == ["in"]


def test_not_a_zip(tmp_path):
    src = tmp_path / "hello.xlsx"
    src.write_bytes(b"hello")
    out = tmp_path / "plan.xlsx"
    out.write_bytes(OLD_OUTPUT)
    for args in (["run", src, "-o", out], ["validate", src]):
        r = planner(*args, cwd=tmp_path)
        assert_input_error(r, ["hello.xlsx: is not an .xlsx workbook"])
    assert src.read_bytes() == b"hello"
    assert out.read_bytes() == OLD_OUTPUT
    assert sorted(os.listdir(tmp_path)) == ["hello.xlsx", "plan.xlsx"]


def test_nonexistent_input(tmp_path):
    src = tmp_path / "nowhere.xlsx"
    for args in (["run", src, "-o", tmp_path / "plan.xlsx"], ["run", src], ["validate", src]):
        r = planner(*args, cwd=tmp_path)
        assert r.returncode == 2, r.stderr
        assert "Traceback" not in r.stderr
        assert f"{src}: no such file" in r.stderr
    assert os.listdir(tmp_path) == []


def test_row_numbers_are_the_sheets_after_a_blank_row(tmp_path):
    def edit(wb):
        ws = wb[W]
        ws.insert_rows(5)  # a blank row 5; the rows below move down by one
        return _set(wb, W, "hit_target", 7, 1.3)

    src, place = edited_example(tmp_path / "in" / "blank-then-bad.xlsx", edit)
    r = planner("validate", src, cwd=tmp_path)
    assert_input_error(r, [f"{place}: hit_target 1.3 is outside [0, 1]"])
    assert place.endswith("7")


# --------------------------------------------------------------------------- lenient reading
def _results_row(path: Path, workload: str) -> dict:
    rows = [r for r in sheet_rows(path, "Results") if r["workload"] == workload]
    assert len(rows) == 1
    return rows[0]


def test_percent_text_and_percent_format_give_identical_results(tmp_path, small_example, small_plan):
    ws = openpyxl.load_workbook(small_example)[W]
    workload = ws[f"{col(ws, 'workload')}3"].value
    original = ws[f"{col(ws, 'hit_target')}3"].value
    assert original != 0.85  # so the edit shows in the results

    outputs = {}
    for name, value, fmt in (("text", "85%", None), ("formatted", 0.85, "0%")):
        src, _ = edited_example(tmp_path / "in" / f"{name}.xlsx", lambda wb: _set(wb, W, "hit_target", 3, value, fmt),
                                 workloads=SMALL_WORKLOADS)
        r = planner("validate", src, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert "is valid" in r.stdout
        out = tmp_path / f"{name}-plan.xlsx"
        r = planner("run", src, "-o", out, "--no-memo", cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        outputs[name] = out
        w_row = [x for x in sheet_rows(out, W) if x["workload"] == workload]
        assert w_row[0]["hit_target"] == 0.85

    text_row = _results_row(outputs["text"], workload)
    fmt_row = _results_row(outputs["formatted"], workload)
    assert text_row == fmt_row
    assert "ttft_ms" in text_row and "tpm_delivered_target" in text_row
    assert text_row["ttft_ms"] != _results_row(small_plan, workload)["ttft_ms"]


def test_header_with_spaces_and_unit_in_parentheses(tmp_path, small_example, small_plan):
    def edit(wb):
        ws = wb[W]
        ws[f"{col(ws, 'isl')}1"] = " ISL (tokens) "

    src, _ = edited_example(tmp_path / "in" / "header.xlsx", edit, workloads=SMALL_WORKLOADS)
    r = planner("validate", src, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "plan.xlsx"
    r = planner("run", src, "-o", out, "--no-memo", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert sheet_rows(out, "Results") == sheet_rows(small_plan, "Results")
    assert [x["isl"] for x in sheet_rows(out, W)] == [x["isl"] for x in sheet_rows(small_example, W)]


def test_extra_column_is_passed_through(tmp_path):
    def edit(wb):
        ws = wb[W]
        j = ws.max_column + 1
        ws.cell(row=1, column=j, value="owner")
        owners = {}
        for i in range(2, ws.max_row + 1):
            name = ws[f"{col(ws, 'workload')}{i}"].value
            if name:
                owners[name] = f"team-{i}"
                ws.cell(row=i, column=j, value=f"team-{i}")
        return owners

    src, owners = edited_example(tmp_path / "in" / "owner.xlsx", edit, workloads=SMALL_WORKLOADS)
    out = tmp_path / "plan.xlsx"
    r = planner("run", src, "-o", out, "--no-memo", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    rows = sheet_rows(out, W)
    assert len(rows) == len(owners) > 0
    assert {x["workload"]: x.get("owner") for x in rows} == owners


def test_blank_row_in_the_middle_is_skipped(tmp_path, small_plan):
    def edit(wb):
        ws = wb[W]
        assert ws.max_row == SMALL_WORKLOADS + 1 == 4
        ws.insert_rows(4)  # between the second and the third workload
        return ws.max_row - 1  # data rows of the sheet, the blank one included

    src, sheet_data_rows = edited_example(tmp_path / "in" / "blank.xlsx", edit, workloads=SMALL_WORKLOADS)
    r = planner("validate", src, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "plan.xlsx"
    r = planner("run", src, "-o", out, "--no-memo", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    results = sheet_rows(out, "Results")
    wb = openpyxl.load_workbook(out, data_only=True, read_only=True)
    results_sheet_rows = wb["Results"].max_row - 1
    wb.close()
    assert len(results) == results_sheet_rows == sheet_data_rows - 1
    assert results == sheet_rows(small_plan, "Results")


def test_model_reference_in_other_case_and_spaces_is_matched_with_a_note(tmp_path, small_example, small_plan):
    ws = openpyxl.load_workbook(small_example)[W]
    workload = ws[f"{col(ws, 'workload')}3"].value
    canonical = ws[f"{col(ws, 'model')}3"].value
    assert canonical == "Qwen2.5-72B"
    src, place = edited_example(tmp_path / "in" / "fuzzy.xlsx", lambda wb: _set(wb, W, "model", 3, " qwen2.5-72b "),
                                workloads=SMALL_WORKLOADS)

    for args in (["validate", src], ["run", src, "-o", tmp_path / "plan.xlsx", "--no-memo"]):
        r = planner(*args, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        notes = [line for line in r.stderr.splitlines() if "note" in line.lower()]
        assert len(notes) == 1, r.stderr
        assert place in notes[0]
        assert "'Qwen2.5-72B'" in notes[0]
        assert r.stderr.count("qwen2.5-72b") == 1, r.stderr  # said once

    out = tmp_path / "plan.xlsx"
    row = _results_row(out, workload)
    assert row["model"] == "Qwen2.5-72B"
    assert row == _results_row(small_plan, workload)
    assert [x["model"] for x in sheet_rows(out, W) if x["workload"] == workload] == ["Qwen2.5-72B"]


def test_internal_errors_exit_1_without_traceback(tmp_path, small_example):
    # an output folder that cannot be created (a file is in the way) is not an input problem
    (tmp_path / "blocker").write_bytes(b"x")
    r = run_planner("run", small_example, "-o", tmp_path / "blocker" / "plan.xlsx", cwd=tmp_path)
    assert r.returncode == 1, r.stderr        # not an input problem (2): the target folder is blocked
    assert "Traceback" not in r.stderr
    assert "environment problem" in r.stderr and "nothing was written" in r.stderr
    assert str(tmp_path / "blocker") in r.stderr and "where a folder is expected" in r.stderr  # path and cause
    assert (tmp_path / "blocker").read_bytes() == b"x"
