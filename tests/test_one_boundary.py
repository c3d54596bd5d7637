"""Issue 21 item 2 / one input boundary: every problem that depends only on the input is listed by
the one read (``planner validate``, ``planner run``, ``planner diff``, ``planner measurements``,
:func:`planner.read_input`), all at once, sorted by place: a workbook with a problem found while the
cells are read AND a problem the calibration finds (a Measurements row naming no Models row, a blank
breakdown or decode time no roofline can estimate) shows both in one run, exits 2, writes nothing
and leaves the input as it was.

Before this change the calibration's problems waited until every Models, GPUs, Workloads, Settings
and Measurements problem was fixed (planner/finance/validation.py ``_calibration`` skipped it when
any problem touched those sheets), and a Measurements row naming an unknown model waited until the
Models sheet had no problem at all (planner/inputs/checks.py ``check_optional_refs``)."""

from __future__ import annotations

import pytest

from conftest import problem_lines, run_cli
from planner.core.errors import InputError
from planner.core.places import Place
from planner.finance.validation import read_checked
from planner.workbook.input_sheets import write_input_workbook

# Llama-3.1-8B and H100 with every field the roofline estimate needs (published configs: the model's
# config.json on Hugging Face, NVIDIA's H100 SXM datasheet: 3.35 TB/s, 989.4 dense BF16 TFLOPS)
MODEL = {"model": "Llama-3.1-8B", "layers": 32, "kv_heads": 8, "head_dim": 128, "kv_bytes": 2, "params_b": 8.03,
         "heads": 32, "hidden_size": 4096, "intermediate_size": 14336}
GPU = {"gpu": "H100", "hbm_gib": 80, "pcie_gen": 5, "hbm_tbps": 3.35, "bf16_tflops": 989.4}
# a model and a GPU no catalog knows, with only what the KV size needs: no roofline estimate
BARE_MODEL = {"model": "Bare-1", "layers": 32, "kv_heads": 8, "head_dim": 128, "kv_bytes": 2}
BARE_GPU = {"gpu": "Bare-GPU", "hbm_gib": 80, "pcie_gen": 5, "bf16_tflops": 989.4}  # no hbm_tbps: no decode
# active parameters but no params_b: the prefill estimate runs (active_params_b), the decode's weight read
# cannot (it needs params_b)
HALF_MODEL = {k: v for k, v in dict(MODEL, model="Half-8B", active_params_b=8.03).items() if k != "params_b"}
TYPED = {"t_attn0_ms": 3.6, "t_ffn0_ms": 143, "t_other0_ms": 5.9, "t_fixed_ms": 12, "t_decode_ms": 153}
GOOD = {"workload": "good", "model": "Llama-3.1-8B", "gpu": "H100", "tp": 1, "isl": 2048, "osl": 400, "batch": 32,
        "hit_target": 0.6, "demand_tpm": 1_000_000, **TYPED}
# Workloads row 2 (the first data row): hit_target 1.3 in column J, found while the cell is read
BAD_CELL = dict(GOOD, workload="bad-cell", hit_target=1.3)
BAD_CELL_PLACE = "Workloads!J2"

# each post-read problem: (extra Models, extra GPUs, the second workload (Workloads row 3), Measurements
# rows, the place the problem names, words of its message)
CASES = {
    "unknown Measurements model": (
        [], [], dict(GOOD, workload="w2"),
        [{"model": "Nope-70B", "gpu": "H100", "tp": 1, "isl": 2048, "hit": 0.0, "ttft_ms": 200.0}],
        "Measurements!A2", "model 'Nope-70B' is not in Models"),
    "blank breakdown, no estimate": (
        [BARE_MODEL], [], dict(GOOD, workload="w2", model="Bare-1", t_attn0_ms=None, t_ffn0_ms=None), None,
        "Workloads!K3", "t_attn0_ms/t_ffn0_ms are blank, there are no Measurements for Bare-1"),
    "blank breakdown, no fit, no estimate": (  # one length: only a roofline scaled to it, and Bare-1 has none
        [BARE_MODEL], [], dict(GOOD, workload="w2", model="Bare-1", t_attn0_ms=None, t_ffn0_ms=None),
        [{"model": "Bare-1", "gpu": "H100", "tp": 1, "isl": 2048, "hit": 0.0, "ttft_ms": 200.0}],
        "Workloads!K3", "t_attn0_ms/t_ffn0_ms are blank, its deployment's measurements cannot be fitted"),
    "blank decode, no estimate": (
        [HALF_MODEL], [], dict(GOOD, workload="w2", model="Half-8B", t_attn0_ms=None, t_ffn0_ms=None,
                                t_decode_ms=None), None,
        "Workloads!P3", "t_decode_ms is blank, its roofline estimate lacks Models.params_b"),
    "typed breakdown, blank decode, no estimate": (
        [], [BARE_GPU], dict(GOOD, workload="w2", gpu="Bare-GPU", t_decode_ms=None), None,
        "Workloads!P3", "t_decode_ms is blank, the breakdown is typed, and its roofline estimate lacks GPUs.hbm_tbps"),
}


def _workbook(path, case, first=BAD_CELL):
    models, gpus, second, meas, _, _ = CASES[case]
    write_input_workbook(path, [MODEL, *models], [GPU, *gpus], [first, second], {},
                         optional={"Measurements": meas} if meas else None)
    return path


@pytest.mark.parametrize("case", list(CASES))
def test_each_post_read_problem_alone_is_found(tmp_path, case):
    """The second problem alone, at its place (the baseline of the test below)."""
    src = _workbook(tmp_path / "in.xlsx", case, first=GOOD)
    with pytest.raises(InputError) as err:
        read_checked(src)
    place, words = CASES[case][4:]
    assert [(p.place, words in p.message) for p in err.value.problems] == [(place, True)]


@pytest.mark.parametrize("case", list(CASES))
def test_a_cell_problem_and_a_post_read_problem_in_one_run(tmp_path, case):
    src = _workbook(tmp_path / "in.xlsx", case)
    before = src.read_bytes()
    out = tmp_path / "out" / "plan.xlsx"
    r = run_cli("run", src, "-o", out, "--no-memo", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    lines = problem_lines(r.stderr)
    place, words = CASES[case][4:]
    assert len(lines) == 2, lines
    assert lines[0].startswith(f"{BAD_CELL_PLACE}: hit_target"), lines  # sorted: Workloads before Measurements,
    assert lines[1].startswith(f"{place}: ") and words in lines[1], lines  # row 2 before row 3
    assert not out.exists() and not out.parent.exists()
    assert src.read_bytes() == before
    # the library's one read says the same, with structured places
    with pytest.raises(InputError) as err:
        read_checked(src)
    got = [p.place for p in err.value.problems]
    assert got == [BAD_CELL_PLACE, place] and all(isinstance(p, Place) for p in got)
    assert got[0].sheet == "Workloads" and (got[0].column, got[0].row) == ("J", 2)


def test_a_models_problem_does_not_hide_an_unknown_measurements_model(tmp_path):
    """A bad Models cell that is not a name (layers -3 of a second model) leaves every Models name
    known: a Measurements row naming none of them is listed in the same run."""
    src = tmp_path / "in.xlsx"
    write_input_workbook(src, [MODEL, dict(MODEL, model="Other-8B", layers=-3)], [GPU], [GOOD], {},
                         optional={"Measurements": CASES["unknown Measurements model"][3]})
    with pytest.raises(InputError) as err:
        read_checked(src)
    got = [(p.place, p.message.split(":")[0]) for p in err.value.problems]
    assert [g[0] for g in got] == ["Models!B3", "Measurements!A2"], got
    assert err.value.problems[1].message == "model 'Nope-70B' is not in Models"


def test_diff_lists_both_files_problems_at_once(tmp_path):
    """OLD with a cell problem and a calibration problem, NEW with a Models cell problem and an unknown
    Measurements model: one ``planner diff`` lists all four, each naming its file."""
    old = _workbook(tmp_path / "old.xlsx", "blank breakdown, no estimate")
    new = tmp_path / "new.xlsx"
    write_input_workbook(new, [MODEL, dict(MODEL, model="Other-8B", layers=-3)], [GPU], [GOOD], {},
                         optional={"Measurements": CASES["unknown Measurements model"][3]})
    before = [old.read_bytes(), new.read_bytes()]
    r = run_cli("diff", old, new, "-o", tmp_path / "d" / "diff.xlsx", "--no-memo", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    lines = problem_lines(r.stderr)
    place, words = CASES["blank breakdown, no estimate"][4:]
    assert len(lines) == 4, lines
    assert lines[0].startswith(f"OLD {old}: {BAD_CELL_PLACE}: hit_target"), lines
    assert lines[1].startswith(f"OLD {old}: {place}: ") and words in lines[1], lines
    assert lines[2].startswith(f"NEW {new}: Models!B3: layers -3"), lines
    assert lines[3] == f"NEW {new}: Measurements!A2: model 'Nope-70B' is not in Models", lines
    assert not (tmp_path / "d").exists()
    assert [old.read_bytes(), new.read_bytes()] == before


def test_measurements_lists_the_workbooks_and_the_files_problems_at_once(tmp_path):
    """``planner measurements FILE --input WORKBOOK``: a workbook with a cell problem and a load-test
    file that is no result file are both listed in one answer (the workbook's problems used to stop
    the command before the files were read)."""
    book = _workbook(tmp_path / "in.xlsx", "unknown Measurements model")
    junk = tmp_path / "junk.json"
    junk.write_text("{}")
    out = tmp_path / "m" / "meas.xlsx"
    r = run_cli("measurements", junk, "-o", out, "--input", book, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    lines = problem_lines(r.stderr)
    assert lines[0].startswith(f"{BAD_CELL_PLACE}: hit_target"), lines
    assert lines[1] == "Measurements!A2: model 'Nope-70B' is not in Models", lines
    assert any(x.startswith("junk.json") for x in lines[2:]), lines
    assert not out.exists() and "Traceback" not in r.stderr


def test_the_boundary_respells_names_in_new_records(tmp_path):
    """A Workloads model typed " llama-3.1-8b" and a Demand row typed "2027 q1" / " GOOD": the
    validated input spells them as Models, Settings periods and Workloads do, in new records; the
    checks do not write into the records they are given (planner/inputs/checks.py and
    demand_checks.py once did: ``rec[col] = target``, ``rec["period"] = label``)."""
    from planner.inputs.checks import check_workloads
    from planner.inputs.demand_checks import check_demand
    from planner.inputs.reader import Table

    typed = {"workload": "good", "model": " llama-3.1-8b", "gpu": "h100", "t_attn0_ms": 1.0, "t_ffn0_ms": 1.0}
    w = Table("Workloads", [typed], [2], positions={"workload": 0, "model": 1, "gpu": 2})
    kept = dict(typed)
    problems, notes = [], []
    check_workloads(w, w.positions, {"Models": {"llama-3.1-8b": "Llama-3.1-8B"}, "GPUs": {"h100": "H100"}},
                    problems, notes)
    assert problems == [] and typed == kept  # the record given is as typed
    assert (w.records[0]["model"], w.records[0]["gpu"]) == ("Llama-3.1-8B", "H100")
    assert notes and "' llama-3.1-8b' -> 'Llama-3.1-8B'" in notes[0]
    row = {"workload": " GOOD", "period": "2027 q1", "demand_tpm": 5.0}
    dem = Table("Demand", [row], [2], positions={"workload": 0, "period": 1, "demand_tpm": 2})
    kept = dict(row)
    check_demand(dem, w, problems, frozenset(), notes, ("2027-Q1",))
    assert problems == [] and row == kept
    assert (dem.records[0]["workload"], dem.records[0]["period"]) == ("good", "2027-Q1")
    # read through the boundary: the same spellings
    src = tmp_path / "in.xlsx"
    write_input_workbook(src, [MODEL], [GPU], [dict(GOOD, model=" llama-3.1-8b")], {},
                         optional={"Demand": [{"workload": " GOOD", "period": "2027 q1", "demand_tpm": 5.0}]})
    p_in = read_checked(src)
    assert p_in.workloads.records[0]["model"] == "Llama-3.1-8B"
    assert (p_in.optional["Demand"].records[0]["workload"], p_in.optional["Demand"].records[0]["period"]) \
        == ("good", "2027-Q1")


def test_a_row_depending_on_a_row_with_a_problem_is_not_judged(tmp_path):
    """No echo: a Measurements row of Bare-1 on H100 with a bad ttft_ms leaves that deployment's
    fit unknown, so its workload with a blank breakdown is not said to have "no Measurements"
    (only the cell is listed); a workload on a Models row with a problem is not judged either."""
    meas = [{"model": "Bare-1", "gpu": "H100", "tp": 1, "isl": 2048, "hit": 0.0, "ttft_ms": -5.0}]
    blank = dict(GOOD, workload="w2", model="Bare-1", t_attn0_ms=None, t_ffn0_ms=None)
    src = tmp_path / "in.xlsx"
    write_input_workbook(src, [MODEL, BARE_MODEL], [GPU], [GOOD, blank], {}, optional={"Measurements": meas})
    with pytest.raises(InputError) as err:
        read_checked(src)
    assert [p.place for p in err.value.problems] == ["Measurements!F2"], err.value.problems
    src2 = tmp_path / "in2.xlsx"
    write_input_workbook(src2, [MODEL, dict(BARE_MODEL, kv_bytes=-1)], [GPU], [GOOD, blank], {})
    with pytest.raises(InputError) as err:
        read_checked(src2)
    assert [p.place.sheet for p in err.value.problems] == ["Models"], err.value.problems
