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
