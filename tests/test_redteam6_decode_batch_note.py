"""A decode measured at concurrency 1 planned at a larger batch is said, not silent (red team 6, issue 16's
checker: "c = 1 rows only, then Workloads concurrency 8/16", and the README's own load test).

The deployment: Workloads typed breakdown P = 400 ms at hit 0 (t_attn0 100 + t_ffn0 300, no fixed cost) on
tests/test_load_workbook.py's Llama-3.1-8B / H100 (80 GiB, 3.35 TB/s), isl 4000, osl 200, and a decode
measured at concurrency 1: t_decode_ms 1,600 (TPOT 8 ms x 200 tokens), t_decode_batch 1.

By hand (docs/model.md, "Service time and latency at load": the step split by bytes read):
  weights 8e9 x 2 B = 14.9012 GiB; one request holds isl + osl/2 = 4,100 tokens x 131,072 B = 0.50049 GiB
  s(1) = 8 ms -> s0 = 8 x 14.9012 / (14.9012 + 0.50049) = 7.74003 ms, s1 = 8 - s0 = 0.25997 ms
  at batch 16: s(16) = s0 + 16 s1 = 11.89949 ms; D(16) = 200 x s(16) / 16 = 148.744 ms of decode per request
  chip time planned: P + 1,600 = 2,000 ms; at batch 16: 400 + 148.744 = 548.744 ms
  demand 6e6 tokens/min, 4,200 tokens a request, utilisation 1: instances ceil(6e6 / (4200 x 60000 / 2000))
  = ceil(47.62) = 48 as planned; ceil(6e6 / (4200 x 60000 / 548.744)) = ceil(13.07) = 14 at batch 16.
"""

from __future__ import annotations

import math

import pytest

from planner.plan.build import build_plan
from planner.plan.load_notes import warnings
from test_hand_calc import write_input
from test_load_workbook import GPUS, MODELS

GIB = 2 ** 30
W = dict(model="L8", gpu="H100", tp=1, isl=4000, osl=200, hit_target=0, t_attn0_ms=100, t_ffn0_ms=300,
         t_fixed_ms=0, t_decode_ms=1600, t_decode_batch=1, demand_tpm=6_000_000)
W_GIB, KV1_GIB = 8e9 * 2 / GIB, 4100 * 131072 / GIB
S0 = 8 * W_GIB / (W_GIB + KV1_GIB)
S1 = 8 - S0
D16 = 200 * (S0 + 16 * S1) / 16


def _notes(tmp_path, **extra):
    p = tmp_path / "in.xlsx"
    write_input(p, MODELS, GPUS, [dict(workload="w", **dict(W, **extra))])
    plan = build_plan(p)
    return plan, [str(x) for x in warnings(plan) if "t_decode_batch" in str(x)]


def test_hand_numbers():
    assert S0 == pytest.approx(7.74003, abs=1e-5) and D16 == pytest.approx(148.744, abs=1e-3)
    assert math.ceil(6e6 / (4200 * 60000 / 2000)) == 48
    assert math.ceil(6e6 / (4200 * 60000 / (400 + D16))) == 14


def test_a_batch_above_the_decode_s_concurrency_is_warned_with_both_counts(tmp_path):
    plan, notes = _notes(tmp_path, batch=16)
    r = plan.results.iloc[0]
    assert float(r["chip_ms_target"]) == pytest.approx(2000, rel=1e-12)       # the count is left as measured
    assert float(r["instances_throughput"]) == 48
    assert float(r["step_weights_ms"]) == pytest.approx(S0, rel=1e-9)
    assert len(notes) == 1, notes
    assert notes[0].startswith("Workloads row 2 (w): t_decode_ms 1,600 holds at t_decode_batch 1")
    assert "plans 2,000 ms of chip time per request" in notes[0]
    assert f"at this row's batch 16 the decode-step law gives {D16:,.4g} ms of decode per request" in notes[0]
    assert f"({400 + D16:,.0f} ms of chip time, about 14 instances on throughput instead of 48)" in notes[0]


def test_a_count_the_batch_would_not_change_says_nothing(tmp_path):
    # demand 1,000 tokens/min: one instance either way (ceil(1000 / 126,000) = ceil(1000 / 459,230) = 1)
    _plan, notes = _notes(tmp_path, batch=16, demand_tpm=1000)
    assert notes == []


def test_the_decode_at_its_own_batch_says_nothing(tmp_path):
    _plan, notes = _notes(tmp_path, batch=1)
    assert notes == []
    _plan, notes = _notes(tmp_path, batch=16, t_decode_batch=16, t_decode_ms=D16)  # measured at the batch served
    assert notes == []
