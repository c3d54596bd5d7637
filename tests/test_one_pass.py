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
from planner.inputs.reader import read_input


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


# ----------------------------------------------------------------------------- output size limits
def _settings_cell(wb, key: str) -> str:
    ws = wb["Settings"]
    for row in ws.iter_rows(min_row=2):
        if str(row[0].value).strip().lower() == key:
            return f"B{row[0].row}"
    raise KeyError(key)


@pytest.mark.parametrize("step, points", [
    (1e-6, 1_000_001),       # 1/1e-6 = 1,000,000 steps, 1 is the last: 1,000,001 points
    (1e-9, 1_000_000_001),   # would be 8 GB of float64 for the grid alone: refused before it is built
    (0.0007, 1_430),         # floor(1/0.0007) = 1,428 steps reach 0.9996; 1 is appended: 1,430 points
])
def test_hit_step_below_the_bound_is_refused_with_the_sheet_size(tmp_path, step, points):
    import time

    cell = {}

    def edit(wb):
        cell["c"] = _settings_cell(wb, "hit_step")
        wb["Settings"][cell["c"]] = step
    src, _ = edited_example(tmp_path / "in.xlsx", edit)
    t0 = time.perf_counter()
    r = run_cli("validate", src, cwd=tmp_path)
    assert time.perf_counter() - t0 < 60  # refused up front (1e-6 ran for minutes before; ~1 s now)
    assert r.returncode == 2, r.stderr
    n = 14  # the example's workloads
    assert problem_lines(r.stderr) == [
        f"Settings!{cell['c']}: hit_step {step:g} makes a grid of {points:,} hit ratios: Sensitivity_Hit would "
        f"hold {points * n:,} rows ({points:,} per workload x {n} workloads); the smallest step is 0.001 "
        f"(1,001 points)"]


def test_grid_points_match_the_grid_built():
    from planner.plan.limits import grid_points
    from planner.plan.build import hit_grid

    for step in (0.001, 0.0013, 0.05, 0.07, 0.3, 0.5, 1.0):
        assert grid_points(step) == len(hit_grid(step)), step


def test_tornado_beyond_one_sheet_is_an_input_problem_not_an_internal_error():
    from planner.plan.limits import output_problems

    # 8 drivers: 131,071 x 8 = 1,048,568 rows fit below the 1,048,575 data rows; 131,072 x 8 = 1,048,576 do not
    ok = output_problems(131_071, {"hit_step": 0.5}, lambda k: "Settings")
    assert not [p for p in ok if "Tornado sheet" in p.message]
    bad = output_problems(131_072, {"hit_step": 0.5}, lambda k: "Settings")
    assert [p.message for p in bad if "Tornado sheet" in p.message] == [
        "131,072 workloads make a Tornado sheet of 1,048,576 rows (8 drivers per workload), above Excel's "
        "1,048,576-row sheet: at most 131,071 workloads per input workbook; split them over several"]


def test_long_pcie_sweep_is_refused_with_its_size(tmp_path):
    cell = {}

    def edit(wb):
        cell["c"] = _settings_cell(wb, "pcie_sweep_gbps")
        wb["Settings"][cell["c"]] = "; ".join(str(10 + i) for i in range(65))
    src, _ = edited_example(tmp_path / "in.xlsx", edit)
    r = run_cli("validate", src, cwd=tmp_path)
    assert r.returncode == 2
    # 3 fixed bandwidths (the GPU's own, PCIe 4, PCIe 5) + 65 = 68 rows per workload x 14 = 952
    assert problem_lines(r.stderr) == [f"Settings!{cell['c']}: pcie_sweep_gbps lists 65 bandwidths: Sensitivity_PCIe "
                                       f"would hold 952 rows (68 per workload x 14 workloads); at most 64 are allowed"]


# ----------------------------------------------------------------------------- line breaks
# (a CR or a vertical tab cannot stand raw in a cell's XML: Excel writes them as _x000D_ / _x000B_, which
# openpyxl reads back as the character; a raw CR is read as LF by any XML parser)
@pytest.mark.parametrize("brk, name", [("\n", "LF"), ("\u2028", "U+2028 line separator"),
                                       ("\x85", "U+0085 next line"), ("_x000D_", "CR"), ("_x000B_", "vertical tab")])
def test_names_and_labels_with_line_breaks_are_refused_with_their_place(tmp_path, brk, name):
    import corpus

    def edit(wb):
        wb["Workloads"]["A2"] = "chat@@evil"
        wb["Models"]["A2"] = "m@@x"
        wb["Settings"][_settings_cell(wb, "quarter")] = "2026-Q4@@Bcc: x@example.org"
    plain, _ = edited_example(tmp_path / "plain.xlsx", edit)
    src = tmp_path / "in.xlsx"  # the break put into the XML as Excel writes it (openpyxl would escape it)
    corpus.rezip(plain, src, lambda name, data: data.replace(b"@@", brk.encode()) if name.endswith(".xml") else data)
    plain.unlink()
    r = run_cli("run", src, "-o", tmp_path / "plan.xlsx", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    lines = problem_lines(r.stderr)
    ch = brk  # the escapes are read as written (openpyxl's read-only mode): refused all the same
    for place, col, text in (("Models!A2", "model", f"m{ch}x"), ("Workloads!A2", "workload", f"chat{ch}evil")):
        assert f"{place}: {col} {text!r} contains a line break ({name}): names and labels must be one line" in lines
    assert any(x.startswith("Settings!B") and "quarter" in x and f"({name})" in x for x in lines)
    assert not (tmp_path / "plan.xlsx").exists()


@pytest.mark.parametrize("opt", ["-o", "--eml", "--subject"])
def test_paths_and_subject_with_line_breaks_are_refused_before_reading(tmp_path, opt):
    bad = {"-o": ["-o", tmp_path / "a\nb.xlsx"], "--eml": ["--eml", tmp_path / "a\rb.eml"],
           "--subject": ["--eml", tmp_path / "x.eml", "--subject", "Q4\u2028Bcc: x@example.org"]}[opt]
    r = run_cli("run", EXAMPLE, *bad, cwd=tmp_path)
    assert r.returncode == 2 and "line break" in r.stderr, r.stderr
    assert os.listdir(tmp_path) == []


# ----------------------------------------------------------------------------- scenarios as inputs
def _with_scenarios(tmp_path, rows) -> Path:
    wb = openpyxl.load_workbook(EXAMPLE)  # the example with its Scenarios (rows 2-6) and these below
    for r in rows:
        wb["Scenarios"].append(r)
    path = tmp_path / "in.xlsx"
    wb.save(path)
    return path


def test_scenario_zeroing_prefill_is_refused_like_the_workloads_sheet(tmp_path):
    src = _with_scenarios(tmp_path, [["free prefill", "Workloads", c, None, "set", 0]
                                     for c in ("t_attn0_ms", "t_ffn0_ms", "t_other0_ms")])
    r = run_cli("run", src, "-o", tmp_path / "plan.xlsx", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    lines = problem_lines(r.stderr)
    # every one of the example's 14 workloads, placed at the scenario's first row (7), naming the state's row
    assert len(lines) == 14
    assert lines[0] == ("Scenarios!A7: scenario 'free prefill' makes Workloads row 2: t_attn0_ms, t_ffn0_ms and "
                        "t_other0_ms are all 0: at least one 0-hit time must be positive")
    assert not (tmp_path / "plan.xlsx").exists()
    v = run_cli("validate", src, cwd=tmp_path)           # validate: the same problems
    assert v.returncode == 2 and problem_lines(v.stderr) == lines


def test_scenario_mla_without_mla_kv_dim_is_refused_without_warnings(tmp_path):
    src = _with_scenarios(tmp_path, [["latent", "Models", "attention", "Qwen2.5-7B", "set", "mla"]])
    r = run_cli("validate", src, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    lines = problem_lines(r.stderr)
    assert len(lines) == 1 and lines[0].startswith("Scenarios!A7: scenario 'latent' makes Models")
    assert "mla_kv_dim" in lines[0], lines
    assert "Warning" not in r.stderr and "numpy" not in r.stderr


def test_scenario_totals_are_computed_once_and_written_as_checked(tmp_path, monkeypatch):
    """The reader re-plans each scenario (and keeps the totals); writing Scenario_Compare
    re-plans nothing."""
    from planner import build_plan  # the library reads a path with every check (read_input)
    from planner.finance import scenarios

    calls = []
    real = scenarios._quick_plan
    monkeypatch.setattr(scenarios, "_quick_plan", lambda p: calls.append(1) or real(p))
    plan = build_plan(EXAMPLE)
    n_scenarios = 3  # the example's: H100 price, hit_target on chat, utilisation
    assert len(calls) == n_scenarios + 1  # and the base once
    rows = scenarios.scenario_compare(plan)
    assert len(calls) == n_scenarios + 1 and list(rows["scenario"])[1:] == [
        "H100 price -10%", "hit_target +5 points on chat", "utilisation 70%"]


# ----------------------------------------------------------------------------- catalog versions
@pytest.mark.parametrize("name, other", [("Mistral-7B-v0.1", "Mistral-7B-Instruct-v0.3"),
                                         ("DeepSeek-V2", "DeepSeek-V3"), ("DeepSeek-V2.5", "DeepSeek-V3")])
def test_another_version_is_a_did_you_mean_not_a_fill(tmp_path, name, other):
    def edit(wb):
        ws = wb["Models"]
        ws.append([name, None, None, None, 2])  # dimensions blank: only the catalog could fill them
    src, _ = edited_example(tmp_path / "in.xlsx", edit)
    r = run_cli("validate", src, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    (line,) = problem_lines(r.stderr)
    assert line.startswith(f"Models!A9: model {name!r} has no ") and "is not in the model catalog" in line, line
    assert (f"is not in the model catalog; did you mean {other!r}? the catalog has that version, not this one "
            f"(type the values, or name an entry in the catalog column)") in line, line


def test_measurements_references_are_checked_with_everything_else(tmp_path):
    """One round: an unknown Measurements model and a wrong Workloads cell, both at once."""
    wb = openpyxl.load_workbook(EXAMPLE)
    ws = wb["Measurements"]
    ws.cell(2, 1).value = "No-Such-Model"
    ws.cell(3, 2).value = "No-Such-GPU"
    wb["Workloads"]["D2"] = -1  # tp
    path = tmp_path / "in.xlsx"
    wb.save(path)
    r = run_cli("validate", path, cwd=tmp_path)
    assert r.returncode == 2
    lines = problem_lines(r.stderr)
    assert "Measurements!A2: model 'No-Such-Model' is not in Models" in lines
    assert "Measurements!B3: gpu 'No-Such-GPU' is not in GPUs" in lines
    assert any(x.startswith("Workloads!D2: tp -1") for x in lines), lines


def test_undecodable_input_name_is_a_located_problem_not_an_internal_error(tmp_path):
    raw = os.fsencode(tmp_path) + b"/plan-\xff.xlsx"
    with open(raw, "wb") as f:
        f.write(EXAMPLE.read_bytes())
    name = Path(os.fsdecode(raw))
    for args in (["validate", name], ["run", name, "-o", tmp_path / "o.xlsx"]):
        r = run_cli(*args, cwd=tmp_path)
        assert r.returncode == 2, r.stderr
        assert "is not valid UTF-8" in r.stderr and "internal error" not in r.stderr


def test_calibration_problems_come_with_the_other_problems(tmp_path):
    """A row neither calibrated nor estimable (test_calib_workbook's case) and a Demand row
    naming an unknown workload: both in one answer (the calibration used to wait for the rest)."""
    from planner.workbook.input_sheets import write_input_workbook
    from test_calib_workbook import BASE, GPUS, MODELS, WORKLOADS

    wl = [dict(WORKLOADS[0]), {"workload": "lost", "model": "team-70b", "gpu": "H100", "isl": 4096,
                               **{**BASE, "tp": 2}}]
    models = [MODELS[0], {**{k: v for k, v in MODELS[1].items() if k != "heads"}, "model": "team-70b"}]
    src = tmp_path / "bad.xlsx"
    write_input_workbook(src, models, GPUS, wl, {}, optional={
        "Demand": [{"workload": "nobody", "period": "2027-Q1", "demand_tpm": 1000}]})
    r = run_cli("validate", src, cwd=tmp_path)
    assert r.returncode == 2
    lines = problem_lines(r.stderr)
    assert any("workload 'lost'" in x and "no Measurements for team-70b on 2x H100" in x for x in lines), lines
    assert any(x.startswith("Demand!A2:") and "'nobody'" in x for x in lines), lines
