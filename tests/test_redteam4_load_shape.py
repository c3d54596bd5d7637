"""Red team 4: a Measurements row read as one request at a time whose own throughput says otherwise.

A guidellm sweep's ``throughput`` benchmark (no max_concurrency) written by ``planner measurements``
has ``concurrency`` and ``request_rate`` blank (with a note); pasted as it is, the planner read it at
concurrency 1 silently. Little's law (N = X L) on the row's own numbers now gives a located warning.
"""

from __future__ import annotations

import pytest

from planner.core import schema
from planner.inputs.reader import read_input
from planner.plan.build import build_plan
from planner.plan.load_shape_checks import requests_in_flight
from planner.workbook.input_sheets import write_input_workbook

MODELS = [{"model": "Llama-3.1-8B-Instruct", "kv_bytes": 2}]
GPUS = [{"gpu": "H100 SXM", "hourly_cost": 3.0}]
WL = [{"workload": "chat", "model": "Llama-3.1-8B-Instruct", "gpu": "H100 SXM", "tp": 1, "isl": 1024, "osl": 128,
       "hit_target": 0.5, "demand_tpm": 1e6}]
BASE = {"model": "Llama-3.1-8B-Instruct", "gpu": "H100 SXM", "tp": 1, "isl": 1024, "hit": 0.0, "osl": 128}


def _warnings(tmp_path, rows):
    p = tmp_path / "in.xlsx"
    write_input_workbook(p, MODELS, GPUS, WL, {s.key: s.default for s in schema.SETTING_KEYS},
                         optional={"Measurements": rows})
    plan = build_plan(read_input(p))
    return [str(w) for w in plan.warnings if "Little's law" in str(w)]


def test_requests_in_flight_by_hand():
    # 4 requests/s x (500 ms + 127 x 20 ms = 3,040 ms) = 12.16 requests in flight
    assert float(requests_in_flight(4.0, 500.0, 128.0, 20.0)) == pytest.approx(12.16)
    # decode unknown: the TTFT alone, a lower bound: 4 x 0.5 s = 2
    assert float(requests_in_flight(4.0, 500.0, float("nan"), float("nan"))) == pytest.approx(2.0)


def test_a_throughput_run_pasted_without_its_load_is_warned(tmp_path):
    rows = [
        # the throughput benchmark: 4 requests/s with a 3,040 ms latency, load shape blank -> warned
        {**BASE, "ttft_ms": 500.0, "tpot_ms": 20.0, "request_throughput": 4.0},
        # a synchronous benchmark: 1 / 3.04 s = 0.329 requests/s at concurrency 1 -> N = 1.0, not warned
        {**BASE, "ttft_ms": 100.0, "tpot_ms": 20.0, "request_throughput": 1 / 2.64, "concurrency": 1},
        # typed concurrency 16: its load is stated, not warned
        {**BASE, "ttft_ms": 500.0, "tpot_ms": 20.0, "request_throughput": 4.0, "concurrency": 16},
    ]
    (w,) = _warnings(tmp_path, rows)
    assert w.startswith("Measurements!") and "2: concurrency is blank (read as one request at a time)" in w
    assert "12.2 requests in flight" in w


def test_typed_one_with_output_throughput_only(tmp_path):
    # concurrency 1 typed, output_throughput 2,000 tokens/s over 128 tokens = 15.6 requests/s; the TTFT
    # alone (no tpot) gives 15.6 x 0.2 s = 3.1 in flight -> warned
    rows = [{**BASE, "ttft_ms": 200.0, "output_throughput": 2000.0, "concurrency": 1}]
    (w,) = _warnings(tmp_path, rows)
    assert "concurrency is 1" in w and "3.1 requests in flight" in w


# ------------------------------------------------------------------------------ an open loop's throughput
# inference-perf's stage 0 of its kubecon-na-2025 vllm+batch_size demo (kubernetes-sigs/inference-perf
# 7de5ef2e, tests/data/redteam4/inference_perf_kubecon/stage_0_lifecycle_metrics.json): 1 request/s sent,
# 0.996850670841712 completed per second, TTFT mean 33.31898592878133 ms, TPOT mean 3.4775777890777705 ms,
# 200.68 prompt and 62.35 output tokens per request.
STAGE0 = {**BASE, "isl": 200.68333333333334, "osl": 62.35, "ttft_ms": 33.31898592878133,
          "tpot_ms": 3.4775777890777705, "request_rate": 1.0, "request_throughput": 0.996850670841712,
          "num_requests": 60}
WL_SHORT = [{"workload": "chat", "model": "Llama-3.1-8B-Instruct", "gpu": "H100 SXM", "tp": 1, "isl": 200,
             "osl": 62, "hit_target": 0.0, "demand_tpm": 1e6}]


def test_an_open_loop_throughput_is_not_read_as_chip_time(tmp_path):
    """The old reading took 1000 / 0.99685 = 1,003.2 ms as the chip time of one request, so the decode
    per output token was (1,003.2 - 33.3) / 62.35 = 15.6 ms (4.5x the measured 3.48 ms TPOT) and the
    workload's t_decode_ms 62.35 x 15.6 = 970 ms: the idle second between arrivals planned as GPU time.
    The test kept up with its arrivals, so its throughput is the rate it was sent: the decode now comes
    from its TPOT at concurrency 1: for a workload of 62 output tokens t_decode_ms = 62 x 3.4776 = 215.6 ms
    (the old 62 x 15.6 = 964 ms)."""
    p = tmp_path / "in.xlsx"
    write_input_workbook(p, MODELS, GPUS, WL_SHORT, {s.key: s.default for s in schema.SETTING_KEYS},
                         optional={"Measurements": [STAGE0]})
    plan = build_plan(read_input(p))
    assert plan.resolved["t_decode_ms"].iat[0] == pytest.approx(62 * 3.4775777890777705, rel=1e-9)
    warns = [str(w) for w in plan.warnings]
    assert any("is its arrival rate (request_rate 1)" in w for w in warns), warns


def test_an_open_loop_ttft_with_queueing_is_warned(tmp_path):
    """Stage 2 of the same run (stage_2_lifecycle_metrics.json): 74.94 requests/s sent, 74.28 completed,
    TTFT 38.58 ms, TPOT 5.618 ms, 62.75 output tokens: N = 74.28 x (38.58 + 61.75 x 5.618) / 1000
    = 28.6 requests in flight, read as one request at a time."""
    n = 74.2825679935283 * (38.57680595530863 + (62.75177935943061 - 1) * 5.618064924319431) / 1000
    assert n == pytest.approx(28.63, abs=0.01)
    row = {**BASE, "isl": 200.93016014234877, "osl": 62.75177935943061, "ttft_ms": 38.57680595530863,
           "tpot_ms": 5.618064924319431, "request_rate": 74.94, "request_throughput": 74.2825679935283}
    (w,) = _warnings(tmp_path, [row])
    assert "of an open loop at 74.94 requests/s is read as one request at a time, but 28.6 requests were in flight" in w
