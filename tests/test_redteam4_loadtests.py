"""Red team 4: load-test files as the tools write them, read into Measurements rows.

Each case builds (or copies) a file the way the tool's current source writes it and states the
expected row from the file's own figures by hand; each failed on the code before this branch.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner.loadtests import expand, load
from planner.loadtests.rows import Options, build_rows

KUBECON = Path(__file__).parent / "data" / "redteam4" / "inference_perf_kubecon"


def rows(paths, **opts):
    files, problems = expand([Path(p) for p in paths])
    assert not problems, [str(p) for p in problems]
    res = load(files)
    assert not res.problems, [str(p) for p in res.problems]
    out, _, problems = build_rows(res.runs, Options(**opts))
    assert not problems, [str(p) for p in problems]
    return out


# ------------------------------------------------------------------------------ LLMPerf
def _llmperf_summary(requests: list[dict]) -> dict:
    """``*_summary.json`` as ray-project/llmperf f1d6bed4 writes it, from per-request records built
    the way its client measures them: ``openai_chat_completions_client.py`` appends the TTFT as the
    first entry of ``time_to_next_token`` and sums them all; ``token_benchmark_ray.py`` divides that
    sum by the output tokens (``INTER_TOKEN_LAT /= NUM_OUTPUT_TOKENS``); ``metrics_summary`` takes
    the means over requests and flattens with ``_`` (``results_<metric>_mean``)."""
    n = len(requests)
    mean = lambda key: sum(r[key] for r in requests) / n
    for r in requests:
        gaps = [r["ttft"]] + [r["tpot"]] * (r["osl"] - 1)
        r["e2e"] = sum(gaps)
        r["itl"] = sum(gaps) / r["osl"]
    dur = sum(r["e2e"] for r in requests) / 2  # two concurrent clients, back to back
    return {"version": "2023-08-31", "name": "m_2000_101_summary", "model": "meta-llama/Llama-3.1-8B-Instruct",
            "mean_input_tokens": 2000, "stddev_input_tokens": 0, "mean_output_tokens": 101,
            "stddev_output_tokens": 0, "num_concurrent_requests": 2,
            "results_inter_token_latency_s_mean": mean("itl"), "results_ttft_s_mean": mean("ttft"),
            "results_ttft_s_quantiles_p50": mean("ttft"), "results_end_to_end_latency_s_mean": mean("e2e"),
            "results_number_input_tokens_mean": 2000.0, "results_number_output_tokens_mean": mean("osl"),
            "results_num_requests_started": n, "results_number_errors": 0, "results_error_rate": 0.0,
            "results_mean_output_throughput_token_per_s": sum(r["osl"] for r in requests) / dur,
            "results_num_completed_requests": n, "results_num_completed_requests_per_min": n / dur * 60}


def test_llmperf_inter_token_latency_is_not_a_tpot(tmp_path):
    """A 2 s TTFT and a 20 ms step over 101 output tokens: the true TPOT is (e2e - ttft) / (osl - 1)
    = (2 + 100 x 0.02 - 2) / 100 = 20 ms. llmperf's inter_token_latency_s is e2e / osl = 4 / 101 =
    39.6 ms, which the old reader wrote as tpot_ms (and itl_ms): nearly twice the step."""
    reqs = [{"ttft": 2.0, "tpot": 0.020, "osl": 101} for _ in range(10)]
    doc = _llmperf_summary(reqs)
    assert doc["results_inter_token_latency_s_mean"] == pytest.approx(4.0 / 101)
    f = tmp_path / "m_2000_101_summary.json"
    f.write_text(json.dumps(doc))
    (row,) = rows([f], gpu="H100", tp=1, hit=0.0)
    assert row["tpot_ms"] == pytest.approx(20.0, rel=1e-9)
    assert row["itl_ms"] is None
    assert row["ttft_ms"] == pytest.approx(2000.0)
    assert "counts the TTFT in" in row["note"]


def test_llmperf_without_e2e_mean_leaves_tpot_blank(tmp_path):
    doc = _llmperf_summary([{"ttft": 0.5, "tpot": 0.01, "osl": 51} for _ in range(4)])
    del doc["results_end_to_end_latency_s_mean"]
    f = tmp_path / "x_summary.json"
    f.write_text(json.dumps(doc))
    (row,) = rows([f], gpu="H100", tp=1, hit=0.0)
    assert row["tpot_ms"] is None and row["itl_ms"] is None
    assert "no end-to-end latency mean" in row["note"]


# ------------------------------------------------------------------------------ inference-perf
def test_inference_perf_report_folder_reads_the_stages_not_the_pooled_summary():
    """The report folder of kubernetes-sigs/inference-perf's kubecon-na-2025 vllm+batch_size demo
    (7de5ef2e; stages 0 and 2 copied): the old reader took summary_lifecycle_metrics.json, which pools
    47,002 requests of seven rates (mean TTFT 1,543 ms) and names no load, so the row was read as one
    request at a time. Now the folder stands for its stage reports, one row each, at each stage's rate."""
    r0, r2 = rows([KUBECON], model="meta-llama/Llama-3.1-8B-Instruct", gpu="H100", tp=1, hit=0.0)
    # stage_0_lifecycle_metrics.json: requested_rate 1.0, 60 successes, TTFT mean 0.03331898592878133 s
    assert r0["source"].startswith("stage_0_lifecycle_metrics.json")
    assert (r0["request_rate"], r0["num_requests"]) == (1.0, 60)
    assert r0["ttft_ms"] == pytest.approx(33.31898592878133, rel=1e-12)
    assert r0["tpot_ms"] == pytest.approx(3.4775777890777705, rel=1e-12)
    # stage_2: requested_rate 74.94, 4,496 successes, TTFT mean 0.03857680595530863 s
    assert (r2["request_rate"], r2["num_requests"]) == (74.94, 4496)
    assert r2["ttft_ms"] == pytest.approx(38.57680595530863, rel=1e-12)
    assert r2["request_throughput"] == pytest.approx(74.2825679935283, rel=1e-12)
    assert r2["isl"] == pytest.approx(200.93016014234877) and r2["osl"] == pytest.approx(62.75177935943061)


def test_inference_perf_run_wide_summary_is_refused_with_the_stage_files_named():
    res = load([KUBECON / "summary_lifecycle_metrics.json"])
    assert not res.runs
    (p,) = res.problems
    assert str(p).startswith("summary_lifecycle_metrics.json: is the run-wide summary")
    assert "stage_0_lifecycle_metrics.json, stage_2_lifecycle_metrics.json" in str(p)


def test_inference_perf_unscraped_prometheus_zero_is_not_a_hit():
    """stage_N_prometheus_metrics.json with prefix_cache_hit_percent 0 and kv_cache_usage_percentage 0
    under 60-4,496 requests (the demo's prefix-caching run is the same): inference-perf's _ratio is 0
    when no query was counted. The old reader wrote hit 0; the hit is now left blank, said why."""
    res = load([KUBECON / "stage_2_lifecycle_metrics.json"])
    (run,) = res.runs
    assert run.hit is None
    assert any("were not scraped" in n for n in run.notes)
    (row,) = rows([KUBECON / "stage_2_lifecycle_metrics.json"], model="meta-llama/Llama-3.1-8B-Instruct",
                  gpu="H100", tp=1, hit=0.3)
    assert row["hit"] == 0.3 and "from --hit" in row["note"]


def test_inference_perf_prometheus_zero_with_cache_in_use_is_kept(tmp_path):
    """A 0 hit with the KV cache in use (the gauges were scraped) stays a measured 0, with its note."""
    for f in ("stage_2_lifecycle_metrics.json", "stage_2_prometheus_metrics.json"):
        (tmp_path / f).write_bytes((KUBECON / f).read_bytes())
    prom = json.loads((tmp_path / "stage_2_prometheus_metrics.json").read_text())
    prom["successes"]["kv_cache_usage_percentage"]["mean"] = 0.12
    (tmp_path / "stage_2_prometheus_metrics.json").write_text(json.dumps(prom))
    (run,) = load([tmp_path / "stage_2_lifecycle_metrics.json"]).runs
    assert run.hit == 0.0


# ------------------------------------------------------------------------------ a file-filled row with no load
def test_a_row_filled_from_a_file_with_no_load_shape_needs_one_typed(tmp_path):
    """vllm bench serve --ramp-up-strategy linear (request_rate "inf", ramp 1 -> 10 requests/s, no
    max_concurrency): no single load. Named in a Measurements `file` cell, the old reader filled the row
    with concurrency and request_rate blank, which planner/plan/load_tests.py reads as concurrency 1
    (``float(r.get("concurrency") or 1)``): a ramp to 10 requests/s planned as one request at a time.
    Now the concurrency cell is a located problem until one of the two is typed."""
    import shutil

    from planner.core import schema
    from planner.core.errors import InputError
    from planner.inputs.reader import read_input
    from planner.workbook.input_sheets import write_input_workbook

    data = Path(__file__).parent / "data" / "loadtests"
    (tmp_path / "r").mkdir()
    shutil.copy(data / "vllm_ramp_up.json", tmp_path / "r" / "ramp.json")
    models = [{"model": "Qwen2.5-7B-Instruct", "kv_bytes": 2}]
    gpus = [{"gpu": "H100 SXM", "hourly_cost": 3.0}]
    wl = [{"workload": "chat", "model": "Qwen2.5-7B-Instruct", "gpu": "H100 SXM", "tp": 1, "isl": 2048,
           "osl": 128, "hit_target": 0.5, "demand_tpm": 1e6}]
    settings = {s.key: s.default for s in schema.SETTING_KEYS}

    def book(row):
        p = tmp_path / "in.xlsx"
        write_input_workbook(p, models, gpus, wl, settings, optional={"Measurements": [row]})
        return p

    row = {"file": "r/ramp.json", "gpu": "H100 SXM", "tp": 1, "hit": 0}
    with pytest.raises(InputError) as e:
        read_input(book(row))
    msgs = [str(p) for p in e.value.problems]
    assert len(msgs) == 1 and msgs[0].startswith("Measurements!") and \
        "2: concurrency or request_rate is required: r/ramp.json does not give its load shape" in msgs[0], msgs
    # typed, the row reads
    plan_in = read_input(book({**row, "concurrency": 8}))
    (rec,) = plan_in.optional["Measurements"].records
    assert rec["concurrency"] == 8 and rec["ttft_ms"] is not None


# ------------------------------------------------------------------------------ vllm bench sweep serve
def test_vllm_sweep_warmup_run_is_refused_and_runs_read(tmp_path):
    """vllm bench sweep serve (vllm/benchmarks/sweep/serve.py, 0031557f): each combination's folder has
    warmup.json (run_number -1, from --warmup-num-prompts), run=0.json, run=1.json (a vllm bench serve
    result plus run_number and the overrides) and summary.json, the list of the measured runs. The
    warm-up was read as a measurement before; a folder glob of *.json took it in."""
    data = Path(__file__).parent / "data" / "loadtests"
    base = json.loads((data / "vllm_bench_serve.json").read_text())
    runs = []
    for n, (dur, ttft) in enumerate([(30.0, 100.0), (31.0, 104.0)]):
        d = dict(base, duration=dur, mean_ttft_ms=ttft, run_number=n, max_concurrency=base.get("max_concurrency"))
        (tmp_path / f"run={n}.json").write_text(json.dumps(d))
        runs.append(d)
    (tmp_path / "warmup.json").write_text(json.dumps(dict(base, num_prompts=5, completed=5, run_number=-1)))
    (tmp_path / "summary.json").write_text(json.dumps(runs))
    res = load([tmp_path / "warmup.json"])
    (p,) = res.problems
    assert str(p).startswith("warmup.json: is vllm bench sweep's warm-up run (run_number -1)")
    ok = load([tmp_path / "summary.json"])
    assert not ok.problems and [r.ttft["mean"] for r in ok.runs] == [100.0, 104.0]
    assert [r.run for r in ok.runs] == ["item 1", "item 2"]


def test_llmperf_individual_responses_named(tmp_path):
    """token_benchmark_ray.py writes <model>_<in>_<out>_individual_responses.json (a list of each
    request's metrics: ttft_s, end_to_end_latency_s, ...) beside the summary: refused, pointing at it."""
    f = tmp_path / "m_550_150_individual_responses.json"
    f.write_text(json.dumps([{"error_code": None, "error_msg": "", "inter_token_latency_s": 0.011, "ttft_s": 0.12,
                              "end_to_end_latency_s": 1.7, "number_input_tokens": 550,
                              "number_output_tokens": 150}] * 3))
    (p,) = load([f]).problems
    assert str(p) == ("m_550_150_individual_responses.json: is LLMPerf's per-request file "
                      "(*_individual_responses.json), one entry per request: give the *_summary.json beside it")
