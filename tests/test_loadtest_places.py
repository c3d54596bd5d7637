"""Where a problem in a load-test file is (issue 21): one structured place
(planner/core/places.py) per format, built from the parts, never glued as text: a line of a
line-based file (``sglang.jsonl line 2``), a key path of a JSON file (``vllm.json: completed``),
a key of one JSON line (``b.jsonl line 2: completed``), a labelled run of a sweep, a line of a CSV.

Each case breaks one small copy of a real export (tests/data/loadtests) by hand; the expected
place is written out here, counted in the file by hand (1-based lines).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner.core.places import Place
from planner.loadtests import LoadTestError, load, load_file

DATA = Path(__file__).parent / "data" / "loadtests"


def _doc(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def _problem(path: Path) -> LoadTestError:
    with pytest.raises(LoadTestError) as e:
        load_file(path)
    return e.value


def test_vllm_json_names_the_key(tmp_path):
    doc = _doc("vllm_bench_serve.json")
    doc["completed"] = None  # the run was stopped before vLLM counted it
    (tmp_path / "vllm.json").write_text(json.dumps(doc))
    e = _problem(tmp_path / "vllm.json")
    assert str(e) == "vllm.json: completed: None is not a count: not a finished benchmark result"
    assert isinstance(e.place, Place) and (e.place.sheet, e.place.key, e.place.line) == ("vllm.json", "completed", None)


def test_vllm_appended_lines_name_the_line_and_key(tmp_path):
    """--append-result: one JSON object per line; the second line's run completed nothing."""
    good, bad = _doc("vllm_bench_serve.json"), dict(_doc("vllm_bench_serve.json"), completed=0, num_prompts=5)
    (tmp_path / "runs.jsonl").write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    e = _problem(tmp_path / "runs.jsonl")
    assert str(e).startswith("runs.jsonl line 2: completed: is 0, no request completed (all 5 failed)")
    assert (e.place.line, e.place.key) == (2, "completed")


def test_sglang_jsonl_cut_short_names_the_line(tmp_path):
    lines = (DATA / "sglang_bench_serving.jsonl").read_text().splitlines()
    (tmp_path / "sglang.jsonl").write_text(lines[0] + "\n" + lines[1][:40] + "\n")  # line 2 cut short
    e = _problem(tmp_path / "sglang.jsonl")
    assert str(e).startswith("sglang.jsonl line 2: the last line is cut short")
    assert (e.place.sheet, e.place.line, e.place.key) == ("sglang.jsonl", 2, None)


def test_a_json_list_names_the_item_by_its_key_path(tmp_path):
    good, bad = _doc("vllm_bench_serve.json"), dict(_doc("vllm_bench_serve.json"), completed="n/a")
    (tmp_path / "runs.json").write_text(json.dumps([good, bad]))
    e = _problem(tmp_path / "runs.json")
    assert str(e) == "runs.json: [1].completed: 'n/a' is not a count: not a finished benchmark result"  # 2nd item


def test_aiperf_json_names_the_metric_key(tmp_path):
    doc = _doc("profile_export_aiperf.json")
    doc["time_to_first_token"]["unit"] = "fortnights"
    (tmp_path / "profile_export_aiperf.json").write_text(json.dumps(doc))
    e = _problem(tmp_path / "profile_export_aiperf.json")
    assert str(e) == "profile_export_aiperf.json: time_to_first_token.unit: unknown time unit 'fortnights' in a time metric"
    doc = _doc("profile_export_aiperf.json")
    doc["request_count"]["avg"] = 0
    (tmp_path / "profile_export_aiperf.json").write_text(json.dumps(doc))
    assert str(_problem(tmp_path / "profile_export_aiperf.json")) == \
        "profile_export_aiperf.json: request_count.avg: is 0: no request completed"


def test_aiperf_csv_names_the_line(tmp_path):
    lines = (DATA / "profile_export_aiperf.csv").read_text().splitlines()
    lines[2] = lines[2].replace("1024,1024,1024", "1024,lots,1024", 1)  # line 3: Input Sequence Length
    (tmp_path / "profile_export_aiperf.csv").write_text("\n".join(lines) + "\n")
    e = _problem(tmp_path / "profile_export_aiperf.csv")
    assert str(e).startswith("profile_export_aiperf.csv line 3: 'Input Sequence Length (tokens)' ")
    assert str(e).endswith("'lots' is not a number") and e.place.line == 3


def test_llmperf_names_the_key(tmp_path):
    doc = _doc("meta-llama-Llama-3-1-8B-Instruct_550_150_summary.json")
    doc["results_num_completed_requests"] = 0
    (tmp_path / "x_summary.json").write_text(json.dumps(doc))
    assert str(_problem(tmp_path / "x_summary.json")) == \
        "x_summary.json: results_num_completed_requests: is 0, no request completed: its statistics are not measurements"


def test_inference_perf_names_the_key(tmp_path):
    doc = _doc("inference_perf_new/summary_lifecycle_metrics.json")
    doc["successes"]["count"] = 0
    (tmp_path / "summary_lifecycle_metrics.json").write_text(json.dumps(doc))
    assert str(_problem(tmp_path / "summary_lifecycle_metrics.json")) == \
        "summary_lifecycle_metrics.json: successes.count: is 0: no request succeeded"


def test_guidellm_names_the_benchmark_of_the_sweep(tmp_path):
    doc = _doc("guidellm_benchmarks.json")
    doc["benchmarks"][0]["metrics"] = None
    (tmp_path / "benchmarks.json").write_text(json.dumps(doc))
    e = _problem(tmp_path / "benchmarks.json")
    n = len(doc["benchmarks"])
    assert str(e) == f"benchmarks.json benchmark 1 of {n}: has no metrics"
    assert (e.place.sheet, e.place.label) == ("benchmarks.json", f"benchmark 1 of {n}")


def test_prometheus_scrape_names_the_line(tmp_path):
    lines = (DATA / "vllm_metrics_before.prom").read_text().splitlines()
    k = next(i for i, ln in enumerate(lines) if ln and not ln.startswith("#"))  # the first sample line
    lines[k] = lines[k].split(" ")[0] + " many"
    (tmp_path / "before.prom").write_text("\n".join(lines) + "\n")
    e = _problem(tmp_path / "before.prom")
    assert e.place == Place.file_line("before.prom", k + 1) and str(e.place) == f"before.prom line {k + 1}"


def test_problems_of_many_files_keep_their_structure(tmp_path):
    """``load`` gathers every file's problems at once; each keeps its parts (no text parsed back)."""
    doc = dict(_doc("vllm_bench_serve.json"), completed=None)
    (tmp_path / "a.json").write_text(json.dumps(doc))
    (tmp_path / "b.jsonl").write_text("{\n")
    got = load([tmp_path / "a.json", tmp_path / "b.jsonl"]).problems
    assert [(p.place.sheet, p.place.key) for p in got] == [("a.json", "completed"), ("b.jsonl", None)]


def test_a_scrape_pair_names_both_files_as_parts(tmp_path):
    """Two scrapes bracketing nothing (no result file before them): the problem is the pair's, a
    structured Place (issue 21), not the text "a.prom -> b.prom" glued by hand."""
    got = load([DATA / "vllm_metrics_before.prom", DATA / "vllm_metrics_after.prom"]).problems
    assert len(got) == 1
    place = got[0].place
    assert (place.sheet, place.second) == ("vllm_metrics_before.prom", "vllm_metrics_after.prom")
    assert str(got[0]) == ("vllm_metrics_before.prom -> vllm_metrics_after.prom: scrapes must follow the result "
                           "file of the run they bracket")
