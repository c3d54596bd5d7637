"""Issue 18, last item: an input workbook's Measurements rows may name load-test result files
(column ``file``, a path relative to the workbook's folder); the reader fills the rows from them
(planner/inputs/measurement_files.py). The fixtures are those of tests/test_loadtests.py, whose
expected rows are derived by hand there from each file's own numbers."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import openpyxl
import pytest
from openpyxl.utils import get_column_letter

from conftest import run_cli, value_book
from planner.core import schema
from planner.core.errors import InputError
from planner.inputs.reader import read_input
from planner.plan.build import build_plan
from planner.workbook.input_sheets import write_input_workbook

DATA = Path(__file__).parent / "data" / "loadtests"
NAMES = [c.name for c in schema.columns("Measurements")]
FILE = get_column_letter(NAMES.index("file") + 1)   # the file column of a template-ordered sheet
MODELS = [{"model": "Llama-3.1-8B-Instruct", "kv_bytes": 2}]
GPUS = [{"gpu": "H100 SXM", "hourly_cost": 3.0}]
WL = [{"workload": "chat", "model": "Llama-3.1-8B-Instruct", "gpu": "H100 SXM", "tp": 1, "isl": 2048, "osl": 128,
       "hit_target": 0.5, "demand_tpm": 1e6}]
# the rows of the test: vLLM and guidellm (gpu/tp from the one Workloads deployment), SGLang (no model in it)
ROWS = [{"file": "results/vllm_bench_serve.json", "gpu": "H100 SXM", "tp": 1, "hit": 0},
        {"file": "results/sglang_bench_serving.jsonl", "model": "Llama-3.1-8B-Instruct", "gpu": "H100 SXM", "tp": 1,
         "hit": 0.5},
        {"file": "results/guidellm_benchmarks.json", "hit": 0}]


def _book(tmp_path: Path, meas: list[dict], files=("vllm_bench_serve.json", "sglang_bench_serving.jsonl",
                                                    "guidellm_benchmarks.json"), name="in.xlsx",
          settings: dict | None = None) -> Path:
    (tmp_path / "results").mkdir(exist_ok=True)
    for f in files:
        shutil.copy(DATA / f, tmp_path / "results" / f)
    p = tmp_path / name
    write_input_workbook(p, MODELS, GPUS, WL, {**{s.key: s.default for s in schema.SETTING_KEYS}, **(settings or {})},
                         optional={"Measurements": meas})
    return p


def _problems(path: Path) -> list[str]:
    with pytest.raises(InputError) as e:
        read_input(path)
    return [str(p) for p in e.value.problems]


def test_rows_naming_files_plan_exactly_as_planner_measurements_rows(tmp_path):
    src = _book(tmp_path, ROWS)
    # the same files through `planner measurements`, with the typed cells as its options
    m1, m2 = tmp_path / "m1.xlsx", tmp_path / "m2.xlsx"
    r = run_cli("measurements", DATA / "vllm_bench_serve.json", DATA / "guidellm_benchmarks.json", "-o", m1,
                "--gpu", "H100 SXM", "--tp", "1", "--hit", "0", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    r = run_cli("measurements", DATA / "sglang_bench_serving.jsonl", "-o", m2, "--model", "Llama-3.1-8B-Instruct",
                "--gpu", "H100 SXM", "--tp", "1", "--hit", "0.5", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    pasted = []
    for m in (m1, m2):
        vals = list(openpyxl.load_workbook(m, read_only=True)["Measurements"].values)
        heads = [str(h).split(" [")[0] for h in vals[0]]
        pasted += [{h: v for h, v in zip(heads, row) if v is not None and h in NAMES} for row in vals[1:]]
    pasted = [pasted[0], *pasted[4:], *pasted[1:4]]  # the rows' order: vLLM, SGLang x2, guidellm x3
    typed = tmp_path / "typed.xlsx"
    write_input_workbook(typed, MODELS, GPUS, WL, {s.key: s.default for s in schema.SETTING_KEYS},
                         optional={"Measurements": pasted})
    a, b = build_plan(src), build_plan(typed)
    ta = a.input.optional["Measurements"]
    # one row per run (1 + 2 + 3), each at the row that names its file
    assert ta.rows == [2, 3, 3, 4, 4, 4]
    # hand-derived in tests/test_loadtests.py: vllm_bench_serve.json 81920/20 input tokens, mean_ttft_ms 310.5,
    # 2560/20 output tokens, mean_tpot_ms 7.2, max_concurrency 1, 20 completed in 25 s
    v = ta.records[0]
    assert (v["isl"], v["ttft_ms"], v["osl"], v["tpot_ms"], v["concurrency"], v["num_requests"], v["duration_s"]) \
        == (4096, 310.5, 128, 7.2, 1, 20, 25)
    assert v["model"] == "Llama-3.1-8B-Instruct" and v["file"] == "results/vllm_bench_serve.json"
    for got, want in zip(ta.records, b.input.optional["Measurements"].records):
        assert {k: got.get(k) for k in NAMES if k != "file"} == {k: want.get(k) for k in NAMES if k != "file"}
    (fa,), (fb,) = a.calibration.fits, b.calibration.fits
    assert len(fa.points) == len(fb.points) == 6
    for c in ("t_attn0_ms", "t_ffn0_ms", "t_fixed_ms", "t_decode_ms", "kv_gbps"):
        assert a.resolved[c].iat[0] == pytest.approx(b.resolved[c].iat[0], rel=1e-12), c
    for c in ("ttft_ms", "tpm_delivered_target", "gpus_needed"):
        assert a.results[c].iat[0] == pytest.approx(b.results[c].iat[0], rel=1e-12), c
    assert a.results["breakdown_source"].iat[0] == "calibrated"


def test_filled_cells_are_styled_commented_counted_and_listed(tmp_path):
    from planner.workbook.writer import write_output

    src = _book(tmp_path, ROWS)
    before = hashlib.sha256(src.read_bytes()).hexdigest()
    plan = build_plan(src)
    out = tmp_path / "out.xlsx"
    write_output(plan, out)
    wb = openpyxl.load_workbook(out)
    ws = wb["Measurements"]
    col = {str(c.value).split(" [")[0]: c.column_letter for c in ws[1] if c.value}
    ttft = ws[f"{col['ttft_ms']}2"]
    assert ttft.value == 310.5 and ttft.font.i
    assert "from the load-test file results/vllm_bench_serve.json (vllm bench serve)" in ttft.comment.text
    assert ws[f"{col['gpu']}2"].comment is None and not ws[f"{col['gpu']}2"].font.i  # typed: as typed
    assert ws[f"{col['file']}2"].value == "results/vllm_bench_serve.json"  # the file named on the row
    g = ws[f"{col['gpu']}5"]  # guidellm's first benchmark: the gpu from the one Workloads deployment
    assert g.value == "H100 SXM" and "gpu H100 SXM and tp 1 from the Workloads of in.xlsx" in g.comment.text
    assert ws[f"{col['source']}7"].value == "guidellm_benchmarks.json, benchmark 3 of 3 (constant) (guidellm)"
    run = {r[0]: r[1] for r in wb["Run"].iter_rows(values_only=True) if r and r[0]}
    # filled: vLLM 16 cells (model + 15 measured), SGLang 16 + 16 (model typed; scheduler prefill_first from
    # backend sglang), guidellm 3 x 19 (+ gpu, tp)
    assert run["Measurements cells filled from load-test files"].startswith("105 in 6 row(s)")
    r = run_cli("validate", src, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    line = next(ln for ln in r.stderr.splitlines() if ln.startswith("planner: filled: Measurements:"))
    assert "105 cell(s) of 6 row(s) filled from the load-test files" in line
    assert f"ttft_ms 6 (Measurements!{col['ttft_ms']}2, Measurements!{col['ttft_ms']}3, " in line
    assert hashlib.sha256(src.read_bytes()).hexdigest() == before  # the input is never modified


def test_missing_broken_and_failed_files_are_located_all_at_once(tmp_path):
    rows = [{"file": "results/nothing.json", "gpu": "H100 SXM", "tp": 1, "hit": 0},
            {"file": "results/vllm_truncated.json", "gpu": "H100 SXM", "tp": 1, "hit": 0},
            {"file": "results/unknown.json", "gpu": "H100 SXM", "tp": 1, "hit": 0},
            {"file": "results/vllm_failed.json", "gpu": "H100 SXM", "tp": 1, "hit": 0},
            {"file": "results/sglang_bench_serving.jsonl", "gpu": "H100 SXM", "tp": 1, "hit": 0}]
    src = _book(tmp_path, rows, files=("vllm_truncated.json", "unknown.json", "vllm_failed.json",
                                       "sglang_bench_serving.jsonl"))
    out = tmp_path / "out.xlsx"
    r = run_cli("run", src, "-o", out, cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert not out.exists()
    for want in (
            f"Measurements!{FILE}2: results/nothing.json: no such file (looked for {tmp_path / 'results' / 'nothing.json'}",
            f"Measurements!{FILE}3: results/vllm_truncated.json: the JSON ends before it is complete at line 1, "
            f"column 701 (a truncated file",
            f"Measurements!{FILE}4: results/unknown.json: is JSON but not a load-test result the planner knows",
            f"Measurements!{FILE}5: results/vllm_failed.json: 3 of 50 requests failed; the statistics cover only "
            f"the 47 completed: rerun the test, or write the row with planner measurements --allow-failed",
            f"Measurements!{FILE}6: results/sglang_bench_serving.jsonl line 1: names no model: type it in this "
            f"row's model cell"):
        assert want in r.stderr, want


def test_typed_cells_win_and_a_contradiction_is_warned(tmp_path):
    rows = [dict(ROWS[0], ttft_ms=300, model="Llama-3.1-70B-Instruct")]
    src = _book(tmp_path, rows)
    models = MODELS + [{"model": "Llama-3.1-70B-Instruct", "kv_bytes": 2}]
    write_input_workbook(src, models, GPUS, WL, {s.key: s.default for s in schema.SETTING_KEYS},
                         optional={"Measurements": rows})
    t = read_input(src).optional["Measurements"]
    assert t.records[0]["ttft_ms"] == 300 and t.records[0]["isl"] == 4096  # typed kept, blank filled
    assert "ttft_ms" not in t.filled[0] and "isl" in t.filled[0]
    ttft_col = get_column_letter(NAMES.index("ttft_ms") + 1)
    model_col = get_column_letter(NAMES.index("model") + 1)
    assert t.warnings == [
        (f"Measurements!{ttft_col}2", "ttft_ms 300 is typed; results/vllm_bench_serve.json says 310.5: the typed "
                                      "value is used"),
        (f"Measurements!{model_col}2", "model 'Llama-3.1-70B-Instruct' is typed; results/vllm_bench_serve.json says "
                                       "'meta-llama/Llama-3.1-8B-Instruct': the typed model is used")]


def test_a_sheet_of_file_rows_needs_no_measured_columns_but_a_typed_row_does(tmp_path):
    def sheet(path, rows):
        wb = openpyxl.Workbook()
        ws = wb.active
        ws.title = "Measurements"
        heads = ["file", "gpu", "tp", "hit"]
        ws.append(heads)
        for r in rows:
            ws.append([r.get(h) for h in heads])
        src = openpyxl.load_workbook(path)
        del src["Measurements"]
        dst = src.create_sheet("Measurements")
        for row in ws.iter_rows(values_only=True):
            dst.append(row)
        src.save(path)

    src = _book(tmp_path, ROWS[:1])
    sheet(src, ROWS[:1])
    t = read_input(src).optional["Measurements"]
    assert t.records[0]["ttft_ms"] == 310.5 and t.records[0]["isl"] == 4096
    sheet(src, ROWS[:1] + [{"gpu": "H100 SXM", "tp": 1, "hit": 0}])
    probs = _problems(src)
    assert "Measurements row 1: required column 'model' is missing (row 3 names no load-test file to take it from)" \
        in probs
    assert "Measurements row 1: required column 'ttft_ms' is missing (row 3 names no load-test file to take it " \
           "from)" in probs


def test_one_file_in_two_rows_and_a_missing_hit(tmp_path):
    rows = [ROWS[0], dict(ROWS[0], gpu=None), {"file": "results/vllm_bench_serve.json; results/x.prom",
                                              "gpu": "H100 SXM", "tp": 1}]
    src = _book(tmp_path, rows)
    probs = _problems(src)
    assert (f"Measurements!{FILE}3: results/vllm_bench_serve.json: is the same run as row 2 "
            f"(results/vllm_bench_serve.json): one row per run") in probs
    assert any(p.startswith(f"Measurements!{FILE}4: results/x.prom: no such file") for p in probs)
    rows = [{"file": "results/vllm_bench_serve.json", "gpu": "H100 SXM", "tp": 1}]
    src = _book(tmp_path, rows, name="b.xlsx")
    hit_col = get_column_letter(NAMES.index("hit") + 1)
    assert (f"Measurements!{hit_col}2: hit is required: results/vllm_bench_serve.json carries no prefix-cache hit "
            f"ratio; type it (0 with prefix caching off)") in _problems(src)


def test_a_result_and_its_two_scrapes_in_one_cell(tmp_path):
    # tests/test_loadtests.py: the vLLM scrapes around vllm_bench_serve.json give its hit 0.5
    rows = [{"file": "results/vllm_bench_serve.json; results/vllm_metrics_before.prom; results/vllm_metrics_after.prom",
             "gpu": "H100 SXM", "tp": 1}]
    src = _book(tmp_path, rows, files=("vllm_bench_serve.json", "vllm_metrics_before.prom",
                                       "vllm_metrics_after.prom"))
    t = read_input(src).optional["Measurements"]
    assert t.records[0]["hit"] == 0.5 and "hit" in t.filled[0]


@pytest.mark.libreoffice
def test_libreoffice_recalculation_of_rows_filled_from_files(tmp_path, recalc):
    """The output of file-filled rows (one file row standing for several runs): every Calibration,
    Resolved and Results value LibreOffice recomputes from the written Measurements equals the stored one."""
    from conftest import same_value, sheet_values
    from planner.workbook.writer import write_output

    # hit_step 0.5: the test reads Calibration, Resolved and Results, not the hit sweep (3 rows, not 21)
    plan = build_plan(_book(tmp_path, ROWS, settings={"hit_step": 0.5}))
    out = tmp_path / "out.xlsx"
    write_output(plan, out)
    again = recalc(out)
    for sheet, frame in (("Resolved", plan.resolved), ("Results", plan.results)):
        for i, row in enumerate(sheet_values(again, sheet)):
            for name, got in row.items():
                if name in frame:
                    assert same_value(frame[name].iat[i], got, rel=1e-7), (sheet, i, name, frame[name].iat[i], got)
    stored = value_book(out, "Calibration")["Calibration"]
    fresh = value_book(again, "Calibration")["Calibration"]
    n = 0
    for r_s, r_f in zip(stored.iter_rows(), fresh.iter_rows()):
        for a, b in zip(r_s, r_f):
            if isinstance(a.value, float):
                assert b.value == pytest.approx(a.value, rel=1e-7, abs=1e-12), a.coordinate
                n += 1
    assert n > 30


def test_the_output_is_a_valid_input_again(tmp_path):
    # the output has one row per run, each naming its file and (in source) its run: read back, each
    # row takes that run only, every cell typed now, and plans the same
    from planner.workbook.writer import write_output

    plan = build_plan(_book(tmp_path, ROWS))
    out = tmp_path / "out.xlsx"
    write_output(plan, out)
    again = build_plan(out)
    t = again.input.optional["Measurements"]
    # no cell filled from a file now; the blank scheduler of a row over several waves stays a cell the
    # planner fills, as in the first plan (planner.plan.trust.measurements_filled)
    from planner.plan.trust import PLANNER_FILL
    assert t.rows == [2, 3, 4, 5, 6, 7] and t.warnings == []
    assert not any({k: v for k, v in c.items() if not v.startswith(PLANNER_FILL)} for c in t.filled)
    assert t.filled == [{k: v for k, v in c.items() if v.startswith(PLANNER_FILL)}
                        for c in plan.input.optional["Measurements"].filled]
    assert [r["source"] for r in t.records] == [r["source"] for r in plan.input.optional["Measurements"].records]
    for c in ("ttft_ms", "tpm_delivered_target", "gpus_needed"):
        assert again.results[c].iat[0] == pytest.approx(plan.results[c].iat[0], rel=1e-12), c


def test_a_complete_row_whose_file_is_elsewhere_is_read_as_typed(tmp_path):
    # an output written to another folder than the results: its rows hold every value
    from planner.workbook.writer import write_output

    plan = build_plan(_book(tmp_path, ROWS[:1]))
    (tmp_path / "out").mkdir()
    out = tmp_path / "out" / "plan.xlsx"
    write_output(plan, out)
    again = read_input(out)
    assert again.optional["Measurements"].records[0]["ttft_ms"] == 310.5
    assert any(n.startswith(f"Measurements!{FILE}2: results/vllm_bench_serve.json: no such file") and
               n.endswith("the row's typed values are used") for n in again.notes)
