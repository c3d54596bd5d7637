"""Load-test result files -> Measurements rows (issue 18).

Every fixture in tests/data/loadtests/ was written by hand from its writer's source schema (cited in
the docstring of the module that reads it, planner/loadtests/*.py) with consistent numbers; each
test states the expected row with its derivation from the file's own figures, so a wrong key, a
wrong unit or a wrong statistic shows as a wrong number.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import openpyxl
import pytest

from planner.core import schema
from planner.cli.main import main
from planner.loadtests import load
from planner.loadtests.rows import Options, build_rows

DATA = Path(__file__).parent / "data" / "loadtests"


def rows_of(*names, **opts):
    res = load([DATA / n for n in names])
    assert not res.problems, [str(p) for p in res.problems]
    rows, notes, problems = build_rows(res.runs, Options(**opts))
    assert not problems, [str(p) for p in problems]
    return rows


def check(row: dict, expected: dict) -> None:
    """Every expected column equal (numbers to 1e-12 relative), every other schema column blank."""
    for name, want in expected.items():
        got = row.get(name)
        if isinstance(want, float):
            assert got == pytest.approx(want, rel=1e-12), name
        else:
            assert got == want, name
    blank = {c.name for c in schema.columns("Measurements")} - set(expected) - {"source", "alpha"}
    assert {k: row.get(k) for k in blank if row.get(k) is not None} == {}


# ------------------------------------------------------------------------------ vLLM
def test_vllm_bench_serve_save_result():
    (row,) = rows_of("vllm_bench_serve.json", gpu="H100", tp=1, hit=0.0)
    check(row, {
        "model": "Llama-3.1-8B-Instruct",    # model_id meta-llama/Llama-3.1-8B-Instruct -> the catalog entry
        "gpu": "H100 SXM", "tp": 1, "hit": 0.0,
        "isl": 81920 / 20,                   # total_input_tokens / completed = 4096
        "osl": 2560 / 20,                    # total_output_tokens / completed = 128
        "ttft_ms": 310.5, "ttft_stat": "mean",  # mean_ttft_ms
        "ttft_p50_ms": 305.0, "ttft_p99_ms": 402.0,  # median_ttft_ms, p99_ttft_ms (no p90: default percentiles 99)
        "tpot_ms": 7.2, "itl_ms": 7.1,
        "concurrency": 1,                    # max_concurrency 1 (request_rate "inf": no rate)
        "num_requests": 20, "duration_s": 25.0,
        "request_throughput": 0.8,           # 20 / 25 s
        "output_throughput": 102.4,          # 2560 / 25 s
        "total_throughput": 3379.2,          # (81920 + 2560) / 25 s
    })
    assert row["source"] == "vllm_bench_serve.json (vllm bench serve)"
    assert "hit 0 from --hit" in row["note"]


def test_vllm_append_result_two_runs_with_metadata():
    """--append-result: two objects, one per line; --metadata tp=4 gpu="H100 SXM" fills gpu and tp."""
    r1, r2 = rows_of("vllm_append.jsonl", hit=0.0)
    check(r1, {"model": "Llama-3.1-70B-Instruct", "gpu": "H100 SXM", "tp": 4, "hit": 0.0,
               "isl": 409600 / 50, "osl": 6400 / 50, "ttft_ms": 640.0, "ttft_stat": "mean", "ttft_p50_ms": 630.0,
               "ttft_p90_ms": 655.0, "ttft_p99_ms": 700.0, "tpot_ms": 15.5, "itl_ms": 15.3, "concurrency": 1,
               "num_requests": 50, "duration_s": 40.0, "request_throughput": 1.25, "output_throughput": 160.0,
               "total_throughput": 10400.0})
    check(r2, {"model": "Llama-3.1-70B-Instruct", "gpu": "H100 SXM", "tp": 4, "hit": 0.0,
               "isl": 204800 / 100, "osl": 12800 / 100, "ttft_ms": 180.25, "ttft_stat": "mean", "ttft_p50_ms": 170.0,
               "ttft_p90_ms": 230.0, "ttft_p99_ms": 290.0, "tpot_ms": 9.5, "itl_ms": 9.4,
               "concurrency": 4, "request_rate": 2.0,  # max_concurrency 4 at request_rate 2.0
               "num_requests": 100, "duration_s": 50.0, "request_throughput": 2.0, "output_throughput": 256.0,
               "total_throughput": 4352.0})
    assert r1["source"] == "vllm_append.jsonl, line 1 (vllm bench serve)"
    assert r2["source"] == "vllm_append.jsonl, line 2 (vllm bench serve)"


def test_vllm_old_benchmark_serving():
    """The older benchmarks/benchmark_serving.py: 'request_goodput:' key, no 'failed', unlimited
    rate without max_concurrency: all 10 prompts at once."""
    (row,) = rows_of("vllm_benchmark_serving_old.json", gpu="L40S", tp=1, hit=0.0)
    check(row, {"model": "Qwen2.5-7B-Instruct", "gpu": "L40S", "tp": 1, "hit": 0.0, "isl": 10240 / 10,
                "osl": 1280 / 10, "ttft_ms": 95.0, "ttft_stat": "mean", "ttft_p50_ms": 90.0, "ttft_p99_ms": 120.0,
                "tpot_ms": 22.0, "itl_ms": 21.8, "concurrency": 10, "num_requests": 10, "duration_s": 4.0,
                "request_throughput": 2.5, "output_throughput": 320.0, "total_throughput": 2880.0})
    assert row["source"].endswith("(vllm benchmark_serving.py)")
    assert "all 10 requests were sent at once" in row["note"]


def test_vllm_failed_requests_kept_only_when_allowed():
    res = load([DATA / "vllm_failed.json"])
    _, _, problems = build_rows(res.runs, Options(gpu="H100", tp=1, hit=0.0))
    assert [str(p) for p in problems] == [
        "vllm_failed.json: 3 of 50 requests failed; the statistics cover only the 47 completed: rerun the test, "
        "or give --allow-failed to keep the row (its note says so)"]
    (row,) = rows_of("vllm_failed.json", gpu="H100", tp=1, hit=0.0, allow_failed=True)
    assert row["num_requests"] == 47 and row["isl"] == 96256 / 47 == 2048
    assert "3 of 50 requests failed" in row["note"]


# ------------------------------------------------------------------------------ SGLang
def test_sglang_jsonl_infinity_and_cache_report():
    r1, r2 = rows_of("sglang_bench_serving.jsonl", model="meta-llama/Llama-3.1-8B-Instruct", gpu="H200",
                     tp=1, hit=0.25)
    check(r1, {"model": "Llama-3.1-8B-Instruct", "gpu": "H200", "tp": 1,
               "hit": 819200 / 1638400,          # cache_report total_cached_tokens / total_prompt_tokens = 0.5
               "isl": 1638400 / 200, "osl": 51200 / 200, "ttft_ms": 850.0, "ttft_stat": "mean",
               "ttft_p50_ms": 820.0, "ttft_p99_ms": 1400.0, "tpot_ms": 25.0, "itl_ms": 24.8,
               "concurrency": 8,                 # max_concurrency (not the measured 'concurrency' 7.9)
               "num_requests": 200, "duration_s": 40.0, "request_throughput": 5.0, "output_throughput": 1280.0,
               "total_throughput": 40960.0 + 1280.0,  # input_throughput + output_throughput
               "scheduler": "prefill_first"})    # backend sglang: the native /generate API, an SGLang server
    assert "device 37.5%, host 12.5%" in r1["note"]
    assert "scheduler prefill_first from backend sglang" in r1["note"]      # 614400 / 1638400, 204800 / 1638400
    assert "--hit 0.25 not used" in r1["note"]
    check(r2, {"model": "Llama-3.1-8B-Instruct", "gpu": "H200", "tp": 1, "hit": 0.25,  # no cache_report: --hit
               "isl": 491520 / 120, "osl": 15360 / 120, "ttft_ms": 420.0, "ttft_stat": "mean", "ttft_p50_ms": 400.0,
               "ttft_p99_ms": 610.0, "tpot_ms": 13.2, "itl_ms": 13.1, "request_rate": 4.0,  # open loop, no cap
               "num_requests": 120, "duration_s": 30.0, "request_throughput": 4.0, "output_throughput": 512.0,
               "total_throughput": 16384.0 + 512.0, "scheduler": "prefill_first"})


def test_sglang_scheduler_only_from_the_server():
    """bench_serving's backend names the client, not the server: only its native sglang backend (SGLang's
    /generate API) and a server_info block (the server's own ServerArgs) say SGLang, prefill first
    (python/sglang/srt/managers/scheduler.py get_next_batch_to_run: "Run prefill first if possible");
    enable_mixed_chunk mixes a prefill chunk into the decode batch, which neither law states."""
    from planner.loadtests.sglang import server_scheduler

    assert server_scheduler({"backend": "sglang"}, {})[0] == "prefill_first"
    assert server_scheduler({"backend": "sglang-oai"}, {"tp_size": 2})[0] == "prefill_first"
    for backend in ("sglang-oai", "vllm", "openai", "lmdeploy", None):
        assert server_scheduler({"backend": backend}, {}) == (None, "")
    assert server_scheduler({"backend": "sglang"}, {"enable_mixed_chunk": True}) == (None, "")


# ------------------------------------------------------------------------------ AIPerf / GenAI-Perf
AIPERF = {"model": "Qwen2.5-7B-Instruct", "gpu": "H100 SXM", "tp": 1, "hit": 0.0, "isl": 1024.0, "osl": 256.0,
          "ttft_ms": 95.5, "ttft_stat": "mean", "ttft_p50_ms": 90.0, "ttft_p90_ms": 130.0, "ttft_p99_ms": 180.0,
          "tpot_ms": 12.5, "itl_ms": 12.5,   # inter_token_latency = (latency - ttft) / (osl - 1): a TPOT
          "num_requests": 600, "duration_s": 30.0, "request_throughput": 20.0, "output_throughput": 5120.0}


def test_aiperf_json():
    (row,) = rows_of("profile_export_aiperf.json", gpu="H100", tp=1, hit=0.0)
    check(row, {**AIPERF, "concurrency": 16})  # input_config.loadgen.concurrency
    assert row["source"] == "profile_export_aiperf.json (aiperf)"


def test_aiperf_csv_same_numbers_as_its_json():
    (row,) = rows_of("profile_export_aiperf.csv", model="Qwen/Qwen2.5-7B-Instruct", gpu="H100", tp=1, hit=0.0)
    check(row, AIPERF)  # the CSV carries no load shape: concurrency blank (said in the note)
    assert "no model or load shape" in row["note"]


def test_genai_perf_json_in_nanoseconds():
    (row,) = rows_of("llama70b_genai_perf.json", gpu="H100", tp=4, hit=0.0)
    check(row, {"model": "Llama-3.1-70B-Instruct", "gpu": "H100 SXM", "tp": 4, "hit": 0.0, "isl": 2000.0,
                "osl": 128.0,
                "ttft_ms": 250000000.0 * 1e-6,   # 'unit': 'ns' -> 250 ms
                "ttft_stat": "mean", "ttft_p50_ms": 240.0, "ttft_p90_ms": 300.0, "ttft_p99_ms": 350.0,
                "tpot_ms": 15.0, "itl_ms": 15.0,  # 15,000,000 ns
                "concurrency": 4, "num_requests": 64,
                "duration_s": 64 / 3.2,          # request_count / request_throughput = 20 s (no benchmark_duration)
                "request_throughput": 3.2, "output_throughput": 409.6})  # 'per sec'
    assert row["source"].endswith("(genai-perf)")


def test_genai_perf_csv_thousands_separators():
    (row,) = rows_of("llama70b_genai_perf.csv", model="Llama-3.1-70B-Instruct", gpu="H100", tp=8, hit=0.0)
    check(row, {"model": "Llama-3.1-70B-Instruct", "gpu": "H100 SXM", "tp": 8, "hit": 0.0,
                "isl": 16384.0,                   # "16,384.00"
                "osl": 128.0, "ttft_ms": 1234.5,  # "1,234.50"
                "ttft_stat": "mean", "ttft_p50_ms": 1200.0, "ttft_p90_ms": 1450.0, "ttft_p99_ms": 1580.0,
                "tpot_ms": 18.25, "itl_ms": 18.25, "num_requests": 480, "duration_s": 480 / 8.0,
                "request_throughput": 8.0, "output_throughput": 1024.0})  # "1,024.00"


# ------------------------------------------------------------------------------ guidellm
def test_guidellm_sweep_one_row_per_benchmark():
    rows = rows_of("guidellm_benchmarks.json", gpu="H100", tp=1, hit=0.0)
    assert len(rows) == 3
    common = {"model": "Llama-3.1-8B-Instruct", "gpu": "H100 SXM", "tp": 1, "hit": 0.0, "isl": 1024.0,
              "osl": 128.0, "ttft_stat": "mean", "duration_s": 60.0}
    check(rows[0], {**common, "concurrency": 1,  # synchronous
                    "ttft_ms": 80.0, "ttft_p50_ms": 78.0, "ttft_p90_ms": 95.0, "ttft_p99_ms": 120.0, "tpot_ms": 7.5,
                    "itl_ms": 7.4, "num_requests": 57, "request_throughput": 0.95, "output_throughput": 121.6,
                    "total_throughput": 1094.4})
    check(rows[1], {**common, "concurrency": 4,  # concurrent, streams 4
                    "ttft_ms": 110.0, "ttft_p50_ms": 105.0, "ttft_p90_ms": 140.0, "ttft_p99_ms": 190.0,
                    "tpot_ms": 9.0, "itl_ms": 8.9, "num_requests": 192, "request_throughput": 3.2,
                    "output_throughput": 409.6, "total_throughput": 3686.4})
    check(rows[2], {**common, "request_rate": 2.5,  # constant, rate 2.5
                    "ttft_ms": 95.0, "ttft_p50_ms": 92.0, "ttft_p90_ms": 120.0, "ttft_p99_ms": 150.0,
                    "tpot_ms": 8.2, "itl_ms": 8.1, "num_requests": 150, "request_throughput": 2.5,
                    "output_throughput": 320.0, "total_throughput": 2880.0})
    assert rows[1]["source"] == "guidellm_benchmarks.json, benchmark 2 of 3 (concurrent) (guidellm)"


def test_guidellm_yaml_without_pyyaml_says_so(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "yaml", None)  # import yaml -> ImportError, as without PyYAML
    f = tmp_path / "benchmarks.yaml"
    f.write_text("benchmarks: []\n")
    (p,) = load([f]).problems
    assert str(p).startswith("benchmarks.yaml: is YAML, which needs PyYAML (pip install pyyaml")


# ------------------------------------------------------------------------------ LLMPerf, inference-perf
def test_llmperf_summary_in_seconds():
    (row,) = rows_of("meta-llama-Llama-3-1-8B-Instruct_550_150_summary.json", gpu="A100 80GB", tp=1, hit=0.0)
    check(row, {"model": "Llama-3.1-8B-Instruct", "gpu": "A100 80GB", "tp": 1, "hit": 0.0,
                "isl": 552.5,                  # results_number_input_tokens_mean (measured, not the requested 550)
                "osl": 150.0, "ttft_ms": 0.125 * 1000, "ttft_stat": "mean", "ttft_p50_ms": 0.12 * 1000,
                "ttft_p90_ms": 0.15 * 1000, "ttft_p99_ms": 0.2 * 1000,
                # inter_token_latency_s counts the TTFT in (llmperf f1d6bed4): TPOT from the means instead,
                # (e2e 1.77 s - ttft 0.125 s) / (150 - 1); itl_ms blank
                "tpot_ms": (1770.0 - 125.0) / 149, "concurrency": 2, "num_requests": 100,
                "request_throughput": 240.0 / 60,  # results_num_completed_requests_per_min / 60
                "duration_s": 100 / 4.0, "output_throughput": 600.0})


def test_inference_perf_new_report_hit_from_cached_prompt_tokens():
    (row,) = rows_of("inference_perf_new/summary_lifecycle_metrics.json", model="Llama-3.1-8B-Instruct",
                     gpu="H100", tp=1)
    check(row, {"model": "Llama-3.1-8B-Instruct", "gpu": "H100 SXM", "tp": 1,
                "hit": 300000.0 / 1200000.0,     # successes.prompt_tokens cached / total = 0.25
                "isl": 2000.0, "osl": 128.0, "ttft_ms": 0.0425 * 1000, "ttft_stat": "mean",
                "ttft_p50_ms": 0.04 * 1000, "ttft_p90_ms": 0.055 * 1000, "ttft_p99_ms": 0.07 * 1000,
                "tpot_ms": 0.0061 * 1000, "itl_ms": 0.006 * 1000, "request_rate": 10.0, "num_requests": 600,
                "duration_s": 60.0, "request_throughput": 10.0, "output_throughput": 1280.0,
                "total_throughput": 21280.0})


def test_inference_perf_old_stage_hit_from_prometheus_summary_beside_it():
    (row,) = rows_of("inference_perf_old/stage_0_lifecycle_metrics.json", model="Llama-3.1-8B-Instruct",
                     gpu="H100", tp=1)
    check(row, {"model": "Llama-3.1-8B-Instruct", "gpu": "H100 SXM", "tp": 1,
                "hit": 37.5 / 100,               # stage_0_prometheus_metrics.json prefix_cache_hit_percent
                "isl": 200.0, "osl": 62.5, "ttft_ms": 0.0333 * 1000, "ttft_stat": "mean",
                "ttft_p50_ms": 0.0329 * 1000, "ttft_p90_ms": 0.039 * 1000, "ttft_p99_ms": 0.0425 * 1000,
                "tpot_ms": 0.0035 * 1000, "itl_ms": 0.0034776 * 1000, "request_rate": 5.0, "num_requests": 300,
                "duration_s": 59.8,              # no benchmark_time_seconds in the old report: send_duration
                "request_throughput": 5.0, "output_throughput": 312.5, "total_throughput": 1312.5})


# ------------------------------------------------------------------------------ Prometheus scrapes
def test_vllm_scrapes_give_hit_and_offload_bandwidth():
    (row,) = rows_of("vllm_bench_serve.json", "vllm_metrics_before.prom", "vllm_metrics_after.prom",
                     gpu="H100", tp=1)
    # Δqueries = (140960 - 100000) + (90960 - 50000) = 81920 tokens (two engines summed);
    # Δhits = (40480 - 20000) + (30480 - 10000) = 40960 -> 0.5; the _created series are not counters
    assert row["hit"] == 40960 / 81920
    # Δkv_offload_load_bytes / Δkv_offload_load_time = 5e9 B / 0.25 s = 20 GB/s
    assert row["kv_load_gbps"] == pytest.approx(5e9 / 0.25 / 1e9, rel=1e-12)
    assert row["ttft_ms"] == 310.5


def test_sglang_gauge_scrape():
    (row,) = rows_of("vllm_bench_serve.json", "sglang_metrics_before.prom", "sglang_metrics_after.prom",
                     gpu="H100", tp=1)
    assert row["hit"] == 0.42  # sglang:cache_hit_rate of the after scrape


# ------------------------------------------------------------------------------ the command
def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_cli_writes_measurements_sheet_and_leaves_inputs(tmp_path, capsys):
    files = [DATA / n for n in ("vllm_bench_serve.json", "vllm_metrics_before.prom", "vllm_metrics_after.prom",
                                "guidellm_benchmarks.json")]
    before = [_sha(f) for f in files]
    out = tmp_path / "meas.xlsx"
    code = main(["measurements", *map(str, files), "-o", str(out), "--gpu", "H100 SXM", "--tp", "1", "--hit", "0"])
    assert code == 0, capsys.readouterr().err
    assert [_sha(f) for f in files] == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["meas.xlsx"]  # no temporary file left
    wb = openpyxl.load_workbook(out, read_only=True)
    assert wb.sheetnames == ["Measurements"]
    values = list(wb["Measurements"].values)
    headers = [c.header for c in schema.columns("Measurements")]
    assert list(values[0]) == headers + ["kv_load_gbps", "note"]
    assert len(values) == 1 + 1 + 3
    col = {h.split(" [")[0]: j for j, h in enumerate(values[0])}
    assert values[1][col["hit"]] == 0.5 and values[1][col["ttft_stat"]] == "mean"
    assert values[2][col["hit"]] == 0  # --hit for the guidellm runs
    assert values[3][col["concurrency"]] == 4
    assert "wrote 4 Measurements rows" in capsys.readouterr().out


def test_cli_lists_every_problem_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "meas.xlsx"
    names = ["vllm_truncated.json", "sglang_truncated.jsonl", "unknown.json", "notes.txt", "vllm_failed.json",
             "vllm_all_failed.json", "vllm_bench_serve.json", "vllm_bench_serve_copy.json",
             "vllm_metrics_truncated.prom", "sglang_bench_serving.jsonl", "vllm_metrics_after.prom",
             "vllm_metrics_before.prom"]
    code = main(["measurements", *(str(DATA / n) for n in names), "-o", str(out), "--tp", "1"])
    err = capsys.readouterr().err
    assert code == 2
    assert not out.exists() and list(tmp_path.iterdir()) == []
    assert "Traceback" not in err
    expected = [
        "vllm_truncated.json: the JSON ends before it is complete at line 1, column 701 (a truncated file",
        "sglang_truncated.jsonl line 2: the last line is cut short (a truncated file",
        "unknown.json: is JSON but not a load-test result the planner knows (keys: foo, bar)",
        "notes.txt: is of no load-test format the planner knows",
        "vllm_metrics_truncated.prom line 11: is not a Prometheus sample line",
        "vllm_bench_serve_copy.json: is the same run as vllm_bench_serve.json",
        # a key path of a JSON file (issue 21): the key that says it
        "vllm_all_failed.json: completed: is 0, no request completed (all 10 failed): its statistics are zeros, "
        "not measurements",
        "vllm_failed.json: 3 of 50 requests failed",
        "vllm_bench_serve.json: the file does not say its GPU (--gpu NAME): give it as option",
        "sglang_bench_serving.jsonl line 1: names no model: give --model NAME",
        # a scrape pair after a file of two runs cannot say which run it measured
        "vllm_metrics_after.prom -> vllm_metrics_before.prom: bracket sglang_bench_serving.jsonl, which holds 2 runs",
    ]
    for e in expected:
        assert e in err, e
    assert err.startswith("planner: the input has ")


def test_cli_same_file_twice_and_lone_scrape(tmp_path, capsys):
    f = str(DATA / "vllm_bench_serve.json")
    code = main(["measurements", f, f, str(DATA / "vllm_metrics_before.prom"), "-o", str(tmp_path / "m.xlsx"),
                 "--gpu", "H100", "--tp", "1"])
    err = capsys.readouterr().err
    assert code == 2
    assert "vllm_bench_serve.json: is given twice" in err
    assert "vllm_metrics_before.prom: is one Prometheus scrape: give two" in err


def test_scrapes_in_the_wrong_order(tmp_path, capsys):
    code = main(["measurements", str(DATA / "vllm_bench_serve.json"), str(DATA / "vllm_metrics_after.prom"),
                 str(DATA / "vllm_metrics_before.prom"), "-o", str(tmp_path / "m.xlsx"), "--gpu", "H100", "--tp", "1"])
    err = capsys.readouterr().err
    assert code == 2
    assert ("vllm_metrics_after.prom -> vllm_metrics_before.prom: vllm:prefix_cache_queries went down from 231920 "
            "to 150000: the server restarted between the scrapes, or they are in the wrong order") in err


def test_cli_unknown_model_did_you_mean(tmp_path, capsys):
    code = main(["measurements", str(DATA / "vllm_bench_serve.json"), "-o", str(tmp_path / "m.xlsx"),
                 "--model", "Llama-3.1-8B-Instrukt", "--gpu", "H100", "--tp", "1"])
    err = capsys.readouterr().err
    assert code == 2
    assert "model 'Llama-3.1-8B-Instrukt' is not in the model catalog; closest: 'Llama-3.1-8B-Instruct'" in err


def _input_workbook(path: Path, measurements: list[dict] | None = None, tp: int = 2) -> Path:
    from planner.workbook.input_sheets import write_input_workbook

    models = [{"model": "llama8b", "catalog": "Llama-3.1-8B-Instruct", "kv_bytes": 2, "params_b": 8.03}]
    gpus = [{"gpu": "h100-team", "catalog": "H100 SXM", "pcie_gen": 5, "hourly_cost": 3.0}]
    workloads = [{"workload": "chat", "model": "llama8b", "gpu": "h100-team", "tp": tp, "isl": 2048, "osl": 128,
                  "hit_target": 0.0}]
    optional = {"Measurements": measurements} if measurements is not None else None
    write_input_workbook(path, models, gpus, workloads, {s.key: s.default for s in schema.SETTING_KEYS},
                         optional=optional)
    return path


def test_cli_input_workbook_names_and_deployment(tmp_path, capsys):
    wb = _input_workbook(tmp_path / "plan.xlsx")
    out = tmp_path / "m.xlsx"
    code = main(["measurements", str(DATA / "vllm_bench_serve.json"), "-o", str(out), "--input", str(wb),
                 "--hit", "0"])
    assert code == 0, capsys.readouterr().err
    vals = list(openpyxl.load_workbook(out, read_only=True)["Measurements"].values)
    # the model row whose catalog cell names the file's model; gpu and tp of its one Workloads deployment
    assert vals[1][:3] == ("llama8b", "h100-team", 2)


# ------------------------------------------------------------------------------ round trip
# The same five measured points typed by hand, each derived from its file (not from the code); the
# load shape and throughput too, since the calibration pins the decode from them (issue 16):
TYPED = [
    # vllm_bench_serve.json: 81920/20 input tokens, mean_ttft_ms, 2560/20 output tokens, mean_tpot_ms, max_concurrency
    {"model": "Llama-3.1-8B-Instruct", "gpu": "H100 SXM", "tp": 1, "isl": 4096, "hit": 0, "ttft_ms": 310.5,
     "osl": 128, "tpot_ms": 7.2, "concurrency": 1, "num_requests": 20, "duration_s": 25,
     "request_throughput": 0.8, "output_throughput": 102.4},  # completed, duration, request_/output_throughput
    # LLMPerf summary: results_number_input_tokens_mean, results_ttft_s_mean 0.125 s, inter_token_latency 0.011 s
    {"model": "Llama-3.1-8B-Instruct", "gpu": "H100 SXM", "tp": 1, "isl": 552.5, "hit": 0, "ttft_ms": 125,
     "osl": 150, "tpot_ms": 11, "concurrency": 2, "num_requests": 100, "duration_s": 25,
     "request_throughput": 4, "output_throughput": 600},  # 240 completed/min = 4/s; 4 x 150 output tokens
    # guidellm benchmarks 1-3: prompt_token_count 1024, time_to_first_token_ms / time_per_output_token_ms means
    {"model": "Llama-3.1-8B-Instruct", "gpu": "H100 SXM", "tp": 1, "isl": 1024, "hit": 0, "ttft_ms": 80,
     "osl": 128, "tpot_ms": 7.5, "concurrency": 1, "num_requests": 57, "duration_s": 60,
     "request_throughput": 0.95, "output_throughput": 121.6},
    {"model": "Llama-3.1-8B-Instruct", "gpu": "H100 SXM", "tp": 1, "isl": 1024, "hit": 0, "ttft_ms": 110,
     "osl": 128, "tpot_ms": 9.0, "concurrency": 4, "num_requests": 192, "duration_s": 60,
     "request_throughput": 3.2, "output_throughput": 409.6},
    {"model": "Llama-3.1-8B-Instruct", "gpu": "H100 SXM", "tp": 1, "isl": 1024, "hit": 0, "ttft_ms": 95,
     "osl": 128, "tpot_ms": 8.2, "request_rate": 2.5, "num_requests": 150, "duration_s": 60,
     "request_throughput": 2.5, "output_throughput": 320},
]


def test_round_trip_rows_from_files_calibrate_like_typed_rows(tmp_path, capsys):
    from planner.workbook.input_sheets import write_input_workbook
    from planner.plan.build import build_plan

    out = tmp_path / "m.xlsx"
    files = ["vllm_bench_serve.json", "meta-llama-Llama-3-1-8B-Instruct_550_150_summary.json",
             "guidellm_benchmarks.json"]
    assert main(["measurements", *(str(DATA / f) for f in files), "-o", str(out), "--gpu", "H100 SXM",
                 "--tp", "1", "--hit", "0"]) == 0, capsys.readouterr().err
    vals = list(openpyxl.load_workbook(out, read_only=True)["Measurements"].values)
    heads = [str(h).split(" [")[0] for h in vals[0]]
    loaded = [{h: v for h, v in zip(heads, row) if v is not None} for row in vals[1:]]
    plans = []
    for name, meas in (("files", loaded), ("typed", TYPED)):
        p = tmp_path / f"{name}.xlsx"
        models = [{"model": "Llama-3.1-8B-Instruct", "kv_bytes": 2}]
        gpus = [{"gpu": "H100 SXM", "hourly_cost": 3.0}]
        workloads = [{"workload": "chat", "model": "Llama-3.1-8B-Instruct", "gpu": "H100 SXM", "tp": 1,
                      "isl": 2048, "osl": 128, "hit_target": 0.5, "demand_tpm": 1e6}]
        write_input_workbook(p, models, gpus, workloads, {s.key: s.default for s in schema.SETTING_KEYS},
                             optional={"Measurements": meas})
        plans.append(build_plan(p))
    (fa,), (fb,) = (pl.calibration.fits for pl in plans)
    assert len(fa.points) == len(fb.points) == 5
    wa, wb_ = (pl.resolved.iloc[0] for pl in plans)
    ra, rb = (pl.results.iloc[0] for pl in plans)
    assert ra["breakdown_source"] == rb["breakdown_source"] == "calibrated"
    for c in ("t_attn0_ms", "t_ffn0_ms", "t_fixed_ms", "t_decode_ms"):
        assert wa[c] == pytest.approx(wb_[c], rel=1e-9), c
    for c in ("ttft_ms", "tpm_delivered_target", "gpus_needed"):
        assert ra[c] == pytest.approx(rb[c], rel=1e-9), c


def test_ttft_statistic_named_when_the_file_has_no_mean(tmp_path):
    import json

    doc = json.loads((DATA / "vllm_bench_serve.json").read_text())
    del doc["mean_ttft_ms"]
    f = tmp_path / "no-mean.json"
    f.write_text(json.dumps(doc))
    res = load([f])
    (row,), _, problems = build_rows(res.runs, Options(gpu="H100", tp=1, hit=0.0))
    assert not problems
    assert (row["ttft_ms"], row["ttft_stat"], row["ttft_p50_ms"]) == (305.0, "median", 305.0)  # median_ttft_ms
    assert "ttft_ms is the median: the file has no mean TTFT" in row["note"]


def test_aiperf_json_and_csv_of_one_run_are_one_run():
    res = load([DATA / "profile_export_aiperf.json", DATA / "profile_export_aiperf.csv"])
    assert [str(p) for p in res.problems] == [
        "profile_export_aiperf.csv: is the same run as profile_export_aiperf.json (same tool, duration, request "
        "count and TTFT): one row per run"]


def test_binary_and_empty_files(tmp_path):
    b = tmp_path / "r.json"
    b.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe")
    e = tmp_path / "empty.json"
    e.write_text("  \n")
    msgs = [str(p) for p in load([b, e]).problems]
    assert msgs[0].startswith("r.json: is not a text file")
    assert msgs[1] == "empty.json: is empty"


def test_sglang_errors_list_without_count_is_a_failure(tmp_path):
    """SGLang versions that write "errors": the first distinct error messages (not one per request)."""
    import json

    doc = json.loads((DATA / "sglang_bench_serving.jsonl").read_text().splitlines()[1])
    doc["errors"] = ["ClientConnectorError: Cannot connect to host"]
    f = tmp_path / "s.jsonl"
    f.write_text(json.dumps(doc) + "\n")
    _, _, problems = build_rows(load([f]).runs, Options(model="Llama-3.1-8B-Instruct", gpu="H100", tp=1, hit=0.0))
    assert [str(p) for p in problems] == [
        "s.jsonl: the file reports failed requests (errors: 'ClientConnectorError: Cannot connect to host'): "
        "rerun the test, or give --allow-failed to keep the row"]


def test_folder_argument_reads_the_summaries_in_it(tmp_path):
    (row,) = rows_of("inference_perf_new", model="Llama-3.1-8B-Instruct", gpu="H100", tp=1)
    assert row["source"] == "summary_lifecycle_metrics.json (inference-perf)"
    (p,) = load([tmp_path]).problems
    assert str(p).startswith(f"{tmp_path}: is a folder with no result file the planner knows by name")


def test_cli_input_workbook_with_problems(tmp_path, capsys):
    bad = tmp_path / "bad.xlsx"
    bad.write_text("not a workbook")
    code = main(["measurements", str(DATA / "vllm_bench_serve.json"), "-o", str(tmp_path / "m.xlsx"),
                 "--input", str(bad)])
    err = capsys.readouterr().err
    assert code == 2 and "bad.xlsx" in err and "Traceback" not in err
    assert not (tmp_path / "m.xlsx").exists()


def test_odd_layout_is_located_not_an_internal_error(tmp_path):
    import json

    doc = json.loads((DATA / "inference_perf_new" / "summary_lifecycle_metrics.json").read_text())
    doc["successes"]["throughput"] = [10.0, 1280.0]  # a list where inference-perf writes a table
    f = tmp_path / "summary_lifecycle_metrics.json"
    f.write_text(json.dumps(doc))
    (p,) = load([f]).problems
    assert str(p).startswith("summary_lifecycle_metrics.json: has an unexpected layout (AttributeError:")


def test_cli_replaces_its_own_earlier_output(tmp_path, capsys):
    out = tmp_path / "m.xlsx"
    args = ["measurements", str(DATA / "vllm_bench_serve.json"), "-o", str(out), "--gpu", "H100", "--tp", "1"]
    assert main(args + ["--hit", "0"]) == 0
    assert main(args + ["--hit", "0.25"]) == 0, capsys.readouterr().err
    vals = list(openpyxl.load_workbook(out, read_only=True)["Measurements"].values)
    assert vals[1][4] == 0.25 and sorted(p.name for p in tmp_path.iterdir()) == ["m.xlsx"]


# ------------------------------------------------------------------------------ real-shaped files (loadverify)
# Each fixture below follows its writer's code key for key and in its key order, extras included
# (the per-request arrays of --save-detailed, server_info, telemetry_stats, ...); the writer read is
# named in the test and in the module docstring.

def test_vllm_save_detailed_per_request_arrays_and_metadata():
    """vllm/benchmarks/serve.py (vllm-project/vllm 009e6d4a) with --save-detailed --metadata tp=2 gpu=H100
    --max-concurrency 8 --request-rate 4 --metric-percentiles 50,90,99 --goodput ttft:500: ttfts/itls/
    latencies/errors arrays (the failed request's ttft 0.0, itl []), failed 1, p50/p90/p99 keys,
    client_queue_time and e2el_including_client_queue statistics, max_concurrent_requests (a peak, not
    the cap)."""
    (row,) = rows_of("vllm_bench_serve_detailed.json", hit=0.0, allow_failed=True)
    check(row, {"model": "Qwen2.5-7B-Instruct", "gpu": "H100 SXM", "tp": 2, "hit": 0.0,
                "isl": 2048 / 4, "osl": 16 / 4,        # totals over the 4 completed
                "ttft_ms": (100 + 120 + 140 + 160) / 4, "ttft_stat": "mean",  # mean_ttft_ms 130, not the 0.0
                "ttft_p50_ms": 130.0, "ttft_p90_ms": 154.0, "ttft_p99_ms": 159.4,
                "tpot_ms": 10.0, "itl_ms": 10.0,
                "concurrency": 8, "request_rate": 4.0,  # max_concurrency 8 (max_concurrent_requests 2 is a peak)
                "num_requests": 4, "duration_s": 2.0, "request_throughput": 2.0, "output_throughput": 8.0,
                "total_throughput": 1032.0})
    assert "1 of 5 requests failed" in row["note"]


def test_vllm_ramp_up_is_not_all_at_once():
    """--ramp-up-strategy linear 1 -> 10 rps: request_rate stays "inf" and max_concurrency null, yet the
    requests were not all sent at once (serve.py main_async adds ramp_up_strategy/start/end_rps)."""
    (row,) = rows_of("vllm_ramp_up.json", gpu="H100", tp=1, hit=0.0)
    check(row, {"model": "Qwen2.5-7B-Instruct", "gpu": "H100 SXM", "tp": 1, "hit": 0.0,
                "isl": 102400 / 100, "osl": 12800 / 100, "ttft_ms": 60.0, "ttft_stat": "mean",
                "ttft_p50_ms": 58.0, "ttft_p99_ms": 80.0, "tpot_ms": 9.0, "itl_ms": 8.9,
                "num_requests": 100, "duration_s": 25.0, "request_throughput": 4.0, "output_throughput": 512.0,
                "total_throughput": 4608.0})   # no concurrency, no request_rate: the load shape is typed by hand
    assert "ramped linear from 1 to 10 requests/s" in row["note"]
    assert "sent at once" not in row["note"]


def test_vllm_append_result_with_bom_and_crlf():
    """--append-result twice (json.dump, a newline between), then saved on Windows: BOM and CRLF."""
    r1, r2 = rows_of("vllm_append_bom_crlf.jsonl", gpu="H100", tp=1, hit=0.0)
    common = {"model": "Llama-3.1-8B-Instruct", "gpu": "H100 SXM", "tp": 1, "hit": 0.0, "isl": 1000.0,
              "osl": 100.0, "ttft_stat": "mean", "tpot_ms": 5.0, "itl_ms": 5.0}
    check(r1, {**common, "ttft_ms": 40.0, "ttft_p50_ms": 40.0, "ttft_p99_ms": 40.0, "concurrency": 2,
               "num_requests": 20, "duration_s": 10.0, "request_throughput": 2.0, "output_throughput": 200.0,
               "total_throughput": 2200.0})
    check(r2, {**common, "ttft_ms": 75.0, "ttft_p50_ms": 75.0, "ttft_p99_ms": 75.0, "concurrency": 16,
               "request_rate": 8.0, "num_requests": 160, "duration_s": 20.0, "request_throughput": 8.0,
               "output_throughput": 800.0, "total_throughput": 8800.0})
    assert r1["source"] == "vllm_append_bom_crlf.jsonl, line 1 (vllm bench serve)"


def test_sglang_newer_serving_server_info_cache_report_and_trace():
    """python/sglang/benchmark/serving.py (sgl-project/sglang 00f9ec47): server_info gives the model
    (model_path) and tp (tp_size); cache_report; request_rate Infinity; then a trace replay whose
    request_rate is the string "trace"."""
    r1, r2 = rows_of("sglang_serving_new.jsonl", gpu="H100", hit=0.0)
    common = {"model": "Qwen2.5-7B-Instruct", "gpu": "H100 SXM", "tp": 2, "isl": 2048.0, "osl": 256.0,
              "ttft_stat": "mean", "tpot_ms": 11.0, "itl_ms": 10.9,
              "scheduler": "prefill_first"}       # server_info: the server's own ServerArgs, an SGLang server
    check(r1, {**common, "hit": 163840 / (320 * 2048),   # total_cached_tokens / total_prompt_tokens = 0.25
               "ttft_ms": 200.0, "ttft_p50_ms": 200.0 * 0.98, "ttft_p90_ms": 200.0 * 1.2, "ttft_p99_ms": 200.0 * 1.5,
               "concurrency": 16,                        # max_concurrency, not the measured 15.2
               "num_requests": 320, "duration_s": 64.0, "request_throughput": 5.0, "output_throughput": 1280.0,
               "total_throughput": 320 * 2304 / 64.0})   # total_throughput as written
    assert "device 20.0%, host 5.0%" in r1["note"]       # 131072 and 32768 of 655360 prompt tokens
    check(r2, {**common, "hit": 0.0, "ttft_ms": 150.0, "ttft_p50_ms": 150.0 * 0.98, "ttft_p90_ms": 150.0 * 1.2,
               "ttft_p99_ms": 150.0 * 1.5, "num_requests": 50, "duration_s": 100.0, "request_throughput": 0.5,
               "output_throughput": 128.0, "total_throughput": 1152.0})   # no concurrency, no rate
    assert "trace's timestamps" in r2["note"] and "sent at once" not in r2["note"]


GENAI_NEW = {"model": "Llama-3.1-8B-Instruct", "gpu": "H100 SXM", "tp": 1, "hit": 0.0, "isl": 3000.0,
             "osl": 256.0, "ttft_ms": 180.0, "ttft_stat": "mean", "ttft_p50_ms": 175.0, "ttft_p90_ms": 220.0,
             "ttft_p99_ms": 260.0, "tpot_ms": 11.5, "itl_ms": 11.5, "num_requests": 320,
             "duration_s": 320 / 10.24,              # request_count / request_throughput (no benchmark_duration)
             "request_throughput": 10.24, "output_throughput": 2621.44}


def test_genai_perf_newer_config_layout():
    """GenAI-Perf's newer input_config (ConfigCommand.to_json_dict, perf_analyzer 263c5f6e): an
    'endpoint' section like AIPerf's, the load under perf_analyzer.stimulus, and analyze.sweep_parameters
    .concurrency = {min 1, max 1024} before it (the default sweep range, not the load)."""
    (row,) = rows_of("llama8b_new_config_genai_perf.json", gpu="H100", tp=1, hit=0.0)
    check(row, {**GENAI_NEW, "concurrency": 32})  # perf_analyzer.stimulus.concurrency
    assert row["source"].endswith("(genai-perf)")


def test_genai_perf_csv_crlf_and_na():
    """The CSV beside it as csv.writer writes it (CRLF), 'N/A' where fetch_stat has no statistic,
    'tokens/sec' and 'per sec' rate units, 'Request Count (count)' as '320.00'."""
    raw = (DATA / "llama8b_new_config_genai_perf.csv").read_bytes()
    assert b"\r\n" in raw and b"N/A" in raw
    (row,) = rows_of("llama8b_new_config_genai_perf.csv", model="meta-llama/Llama-3.1-8B-Instruct", gpu="H100",
                     tp=1, hit=0.0)
    check(row, GENAI_NEW)


def test_csv_na_in_a_metric_read_is_blank_not_an_error(tmp_path):
    text = (DATA / "llama8b_new_config_genai_perf.csv").read_bytes().decode("utf-8")
    lines = text.split("\r\n")
    lines = ["Inter Token Latency (ms)," + ",".join(["N/A"] * 12) if ln.startswith("Inter Token Latency") else ln
             for ln in lines]
    f = tmp_path / "na_genai_perf.csv"
    f.write_bytes("\r\n".join(lines).encode("utf-8"))
    res = load([f])
    assert not res.problems, [str(p) for p in res.problems]
    (run,) = res.runs
    assert run.tpot_ms is None and run.itl_ms is None and run.ttft["mean"] == 180.0


def test_inference_perf_concurrent_stage_and_run_summary():
    """inference_perf/reportgen/base.py (kubernetes-sigs/inference-perf 7de5ef2e): a CONCURRENT stage's
    load_summary has concurrency and a requested_rate the load generator set itself (not a load the test
    asked for); the run-wide summary_lifecycle_metrics.json has no rate at all."""
    (stage,) = rows_of("inference_perf_concurrent/stage_0_lifecycle_metrics.json", model="Llama-3.1-8B-Instruct",
                       gpu="H100", tp=1, hit=0.0, allow_failed=True)
    common = {"model": "Llama-3.1-8B-Instruct", "gpu": "H100 SXM", "tp": 1, "hit": 0.0, "isl": 1024.0,
              "osl": 128.0, "ttft_ms": 0.21 * 1000, "ttft_stat": "mean", "ttft_p50_ms": 0.2 * 1000,
              "ttft_p90_ms": 0.3 * 1000, "ttft_p99_ms": 0.45 * 1000, "tpot_ms": 0.011 * 1000,
              "itl_ms": 0.0109 * 1000, "num_requests": 320, "duration_s": 40.0, "request_throughput": 8.0,
              "output_throughput": 1024.0, "total_throughput": 9216.0}
    check(stage, {**common, "concurrency": 16})     # no request_rate 8.0
    assert "2 of 322 requests failed" in stage["note"]
    # the run-wide summary pools every stage and names no load: refused, naming the stage report beside it
    res = load([DATA / "inference_perf_concurrent" / "summary_lifecycle_metrics.json"])
    assert not res.runs
    (p,) = res.problems
    assert "is the run-wide summary" in str(p) and "stage_0_lifecycle_metrics.json" in str(p)


def test_guidellm_v0_3_report_args_strategy_worker_model():
    """guidellm v0.3.1 (tag v0.3.1: benchmark/benchmark.py, output.py, scheduler/strategy.py,
    scheduler/worker.py): the strategy under args.strategy, request_totals beside metrics, the model
    in worker.backend_model, start_time/end_time/duration on the benchmark. Errored requests are
    failures; incomplete ones (cut off at the end of a timed benchmark) are not."""
    r1, r2 = rows_of("guidellm_v0_3_benchmarks.json", gpu="H100", tp=1, hit=0.0, allow_failed=True)
    common = {"model": "Llama-3.1-8B-Instruct", "gpu": "H100 SXM", "tp": 1, "hit": 0.0, "isl": 512.0,
              "osl": 128.0, "ttft_stat": "mean", "tpot_ms": 10.0, "itl_ms": 9.8, "duration_s": 60.0}
    check(r1, {**common, "request_rate": 3.0,          # poisson, rate 3.0
               "ttft_ms": 70.0, "ttft_p50_ms": 65.0, "ttft_p90_ms": 100.0, "ttft_p99_ms": 130.0,
               "num_requests": 178,                      # request_totals.successful (2 incomplete not failures)
               "request_throughput": 178 / 60.0, "output_throughput": 178 / 60.0 * 128,
               "total_throughput": 178 / 60.0 * 640})
    check(r2, {**common, "ttft_ms": 900.0, "ttft_p50_ms": 895.0, "ttft_p90_ms": 930.0, "ttft_p99_ms": 960.0,
               "num_requests": 600, "request_throughput": 10.0, "output_throughput": 1280.0,
               "total_throughput": 6400.0})              # throughput, no max_concurrency: load shape blank
    assert "3 of 603 requests failed" in r2["note"]
    assert r2["source"] == "guidellm_v0_3_benchmarks.json, benchmark 2 of 2 (throughput) (guidellm)"


def test_llmperf_single_request_nan_stddev_and_string_min_max():
    """token_benchmark_ray.py (ray-project/llmperf f1d6bed4): one completed request, one 429: pandas'
    std of one value is NaN (json.dump writes a bare NaN), np.int64 min/max are written as strings
    (default=str), additional_sampling_params flattened; the summary's duration is
    completed / (completed per minute / 60)."""
    (row,) = rows_of("mistralai-Mistral-7B-Instruct-v0-3_1024_256_summary.json", gpu="H100", tp=1, hit=0.0,
                     allow_failed=True)
    check(row, {"model": "Mistral-7B-Instruct-v0.3", "gpu": "H100 SXM", "tp": 1, "hit": 0.0,
                "isl": 1030.0, "osl": 256.0,            # measured means, not the requested 1024
                "ttft_ms": 180.0, "ttft_stat": "mean", "ttft_p50_ms": 180.0, "ttft_p90_ms": 180.0,
                "ttft_p99_ms": 180.0, "tpot_ms": (3400.0 - 180.0) / 255, "concurrency": 1, "num_requests": 1,
                "duration_s": 6.8, "request_throughput": 1 / 6.8, "output_throughput": 256 / 6.8})
    assert "1 of 2 requests failed" in row["note"]


def test_vllm_older_offload_counters_with_transfer_type(tmp_path):
    """The OffloadingConnector's labelled counters (vllm:kv_offload_total_bytes/_time with
    transfer_type CPU_to_GPU / GPU_to_CPU, as vLLM 0.24 serves them): only the CPU_to_GPU loads count."""
    def scrape(q, h, load_b, load_t, store_b, store_t):
        return "\n".join([
            "# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried tokens.",
            "# TYPE vllm:prefix_cache_queries_total counter",
            f'vllm:prefix_cache_queries_total{{engine="0",model_name="m"}} {q}',
            'vllm:prefix_cache_queries_created{engine="0",model_name="m"} 1.7645e+09',
            "# TYPE vllm:prefix_cache_hits_total counter",
            f'vllm:prefix_cache_hits_total{{engine="0",model_name="m"}} {h}',
            "# HELP vllm:kv_offload_total_bytes_total Number of bytes offloaded by KV connector",
            "# TYPE vllm:kv_offload_total_bytes_total counter",
            f'vllm:kv_offload_total_bytes_total{{engine="0",model_name="m",transfer_type="CPU_to_GPU"}} {load_b}',
            f'vllm:kv_offload_total_bytes_total{{engine="0",model_name="m",transfer_type="GPU_to_CPU"}} {store_b}',
            "# TYPE vllm:kv_offload_total_time_total counter",
            f'vllm:kv_offload_total_time_total{{engine="0",model_name="m",transfer_type="CPU_to_GPU"}} {load_t}',
            f'vllm:kv_offload_total_time_total{{engine="0",model_name="m",transfer_type="GPU_to_CPU"}} {store_t}',
            ""])
    (tmp_path / "before.prom").write_text(scrape(1000, 0, 0.0, 0.0, 1e9, 0.1))
    (tmp_path / "after.prom").write_text(scrape(82920, 20480, 4e9, 0.4, 9e9, 0.5))
    res = load([DATA / "vllm_bench_serve.json", tmp_path / "before.prom", tmp_path / "after.prom"])
    assert not res.problems, [str(p) for p in res.problems]
    (run,) = res.runs
    assert run.hit == 20480 / 81920
    assert run.kv_load_gbps == pytest.approx(4e9 / 0.4 / 1e9, rel=1e-12)   # 10 GB/s; stores (8e9 B) left out
    assert any('transfer_type="CPU_to_GPU"' in n for n in run.notes)


def test_vllm_old_benchmark_serving_always_writes_the_per_request_arrays():
    """benchmarks/benchmark_serving.py (vllm-project/vllm 0049e29c) deletes the detail fields from
    result_json before merging the benchmark result, so ttfts/itls/errors are always in the file; it
    has no 'failed': the 1 failure comes from the errors list (one message per request)."""
    (row,) = rows_of("vllm_benchmark_serving_old_arrays.json", gpu="H100", hit=0.0, allow_failed=True)
    check(row, {"model": "Llama-3.1-8B-Instruct", "gpu": "H100 SXM", "tp": 1, "hit": 0.0,  # --metadata tp=1
                "isl": 1280 / 5, "osl": 320 / 5, "ttft_ms": 60.0, "ttft_stat": "mean", "ttft_p50_ms": 60.0,
                "ttft_p99_ms": 70.0, "tpot_ms": 8.0, "itl_ms": 8.0, "request_rate": 2.0,
                "num_requests": 5, "duration_s": 5.0, "request_throughput": 1.0, "output_throughput": 64.0,
                "total_throughput": 320.0})
    assert "1 of 6 requests failed" in row["note"]
    assert row["source"].endswith("(vllm benchmark_serving.py)")


def test_aiperf_csv_as_written_crlf_and_bom_reads_the_same(tmp_path):
    """aiperf/exporters/csv_exporter.py writes through csv.writer (CRLF row ends) into a file opened
    with newline="": the real file has CRLF; a copy re-saved with a BOM reads the same too."""
    text = (DATA / "profile_export_aiperf.csv").read_bytes().decode("utf-8").replace("\r\n", "\n")
    crlf = tmp_path / "crlf" / "profile_export_aiperf.csv"
    crlf.parent.mkdir()
    crlf.write_bytes(text.replace("\n", "\r\n").encode("utf-8"))
    bom = tmp_path / "bom" / "profile_export_aiperf.csv"
    bom.parent.mkdir()
    bom.write_bytes(("\ufeff" + text.replace("\n", "\r\n")).encode("utf-8"))
    ref = load([DATA / "profile_export_aiperf.csv"]).runs[0]
    for f in (crlf, bom):
        res = load([f])
        assert not res.problems, [str(p) for p in res.problems]
        (run,) = res.runs
        assert run.fingerprint() == ref.fingerprint() and run.ttft == ref.ttft and run.tpot_ms == ref.tpot_ms


def test_null_and_nan_statistics_are_blank_not_zero(tmp_path):
    """json.dump writes NaN bare; a writer's None is null: both read as "not measured"."""
    doc = (DATA / "vllm_bench_serve_detailed.json").read_text(encoding="utf-8")
    doc = doc.replace('"mean_tpot_ms": 10.0', '"mean_tpot_ms": null').replace(
        '"median_ttft_ms": 130.0', '"median_ttft_ms": NaN').replace('"p50_ttft_ms": 130.0', '"p50_ttft_ms": NaN')
    f = tmp_path / "nan.json"
    f.write_text(doc, encoding="utf-8")
    (run,) = load([f]).runs
    assert run.tpot_ms is None and "median" not in run.ttft and run.ttft["mean"] == 130.0
    assert run.itl_ms == 10.0


def test_sglang_output_details_failure_counts_in_all_at_once(tmp_path):
    """sglang bench_serving.py (sgl-project/sglang 0033168) with --output-details: per-request errors
    ("" for a success) give the failed count; with an unlimited rate and no cap all requests, failed
    ones too, were sent at once (the result has no num_prompts)."""
    line = {"backend": "sglang", "dataset_name": "random", "request_rate": float("inf"), "max_concurrency": None,
            "sharegpt_output_len": None, "random_input_len": 1024, "random_output_len": 128,
            "random_range_ratio": 0.0, "duration": 4.0, "completed": 3, "total_input_tokens": 3072,
            "total_output_tokens": 384, "total_output_tokens_retokenized": 380, "request_throughput": 0.75,
            "input_throughput": 768.0, "output_throughput": 96.0, "mean_e2e_latency_ms": 2000.0,
            "median_e2e_latency_ms": 2000.0, "std_e2e_latency_ms": 10.0, "p99_e2e_latency_ms": 2010.0,
            "mean_ttft_ms": 300.0, "median_ttft_ms": 300.0, "std_ttft_ms": 5.0, "p99_ttft_ms": 310.0,
            "mean_tpot_ms": 13.0, "median_tpot_ms": 13.0, "std_tpot_ms": 0.1, "p99_tpot_ms": 13.2,
            "mean_itl_ms": 12.9, "median_itl_ms": 12.9, "std_itl_ms": 0.2, "p95_itl_ms": 13.1, "p99_itl_ms": 13.3,
            "concurrency": 1.5, "accept_length": None,
            "input_lens": [1024] * 4, "output_lens": [128, 128, 128, 0], "ttfts": [0.3, 0.3, 0.3, 0.0],
            "itls": [[0.0129] * 127] * 3 + [[]], "generated_texts": ["t"] * 3 + [""],
            "errors": ["", "", "", "Internal Server Error"]}
    import json
    f = tmp_path / "sglang_0101_4_1024_128.jsonl"
    f.write_text(json.dumps(line) + "\n", encoding="utf-8")
    (run,) = load([f]).runs
    assert run.failed == 1 and run.num_requests == 3
    assert run.concurrency == 4 and run.request_rate is None   # 3 completed + 1 failed, all at once
