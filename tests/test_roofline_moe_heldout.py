"""Issue 20, the roofline on MoE models: published cold prefills of a MoE model the roofline had never
been compared with, tests/data/published_prefill_moe_heldout.csv (cited per row), read only after this
landing's law was fixed (the law of planner/equations/roofline.py and its Settings defaults unchanged:
the overlap of the weight read with compute was tried and not taken, README "Roofline against published
prefills"). Mixtral-8x7B (8 experts, 2 per token), 16-bit weights, TensorRT-LLM 0.9.0 at batch 1, on
2x A100, 2x H100, 2x H200 and 4x L40S, 128 and 2,048 input tokens.

Also the physical bounds that show which published MoE points are not cold prefills of real routing:
the tenstorrent Qwen3-30B-A3B means at 4,096 and 8,192 tokens are faster than the A100's dense peak
allows, and two of the 128-token Mixtral points (fake weights) are faster than one read of every
expert's weights. ``python -m pytest -n 0 -s tests/test_roofline_moe_heldout.py`` prints the ratios."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from planner.catalog.lookup import catalog_raw
from planner.equations import roofline as est
from planner.plan.calibrate import s_kv_of
from test_roofline_published import DEFAULTS, _rec

DATA = Path(__file__).parent / "data" / "published_prefill_moe_heldout.csv"


def _points() -> list[dict]:
    with open(DATA, newline="") as fh:
        return list(csv.DictReader(fh))


def _estimate(p: dict) -> float:
    """Roofline TTFT at 0 hit (t_fixed + t_attn0 + t_ffn0) at the Settings defaults [ms]."""
    mod = _rec(p["model"], "model", weight_bytes=float(p["weight_bytes"]), kv_bytes=2)
    tp = int(p["tp"])
    v, missing = est.estimate_row({"tp": tp, "isl": float(p["isl"]), "osl": 1}, mod, _rec(p["gpu"], "gpu"),
                                  s_kv_of(mod, tp), DEFAULTS["prefill_mfu"], DEFAULTS["decode_mbu"],
                                  catalog_raw(mod), DEFAULTS)
    assert not missing
    return v["t_attn0_ms"] + v["t_ffn0_ms"] + v["t_fixed_ms"]


# the one point outside [0.5, 2]: 4x L40S at 128 tokens, measured faster than one read of every expert
# (test_fake_weight_points_read_fewer_experts_than_real_routing)
KNOWN_MISSES = {("dli-trt090-mixtral8x7b-4xl40s", 128)}


def test_mixtral_points_within_half_and_twice_but_the_fake_weight_miss():
    """8 points; the 2,048-token ones are compute-bound and all within [0.8, 1.3] (0.89-1.27); of the
    128-token ones, dominated by the weight read, 3 of 4 lie within [0.5, 2] (1.55-1.95) and the L40S
    point (2.25) is a benchmark with fake weights reading fewer experts than real routing would."""
    got, missed = [], set()
    for p in _points():
        r = _estimate(p) / float(p["ttft_ms"])
        got.append((p["dataset"], int(p["isl"]), r))
        if not 0.5 <= r <= 2.0:
            missed.add((p["dataset"], int(p["isl"])))
    for name, isl, r in got:
        print(f"heldout {name} {isl}: roofline / measured {r:.2f}")
    assert len(got) == 8
    assert missed == KNOWN_MISSES, missed
    long = np.array([r for _, isl, r in got if isl == 2048])
    assert len(long) == 4 and np.all((long >= 0.8) & (long <= 1.3)), got


def test_fake_weight_points_read_fewer_experts_than_real_routing():
    """The DLI benchmark ran with 'Use Fake Weight' Yes. At 128 tokens with 2 of 8 experts per token an
    expert is missed by every token with probability 0.75^128 = 1.0e-16: real routing reads all 46.7e9
    weights. One such read at 100% of the HBM bandwidth takes, by hand, on 2x H100 SXM 46.7e9 x 2 B / 2 /
    3.35e12 B/s = 13.940 ms and on 4x L40S 46.7e9 x 2 / 4 / 0.864e12 = 27.025 ms; published: 13.42 and
    19.53 ms. Both are faster than reading every expert allows, so their routing (over fake weights)
    reached fewer experts; the roofline, which reads them all, is 1.95x and 2.25x there."""
    assert 0.75 ** 128 == pytest.approx(1.0182e-16, rel=1e-4)
    pts = {(p["gpu"], int(p["isl"])): p for p in _points()}
    for gpu, want_ms in (("H100 SXM", 13.940), ("L40S", 27.025)):
        p = pts[(gpu, 128)]
        mod = _rec(p["model"], "model")
        assert mod["params_b"] == pytest.approx(46.7)
        read = float(est.weight_read_ms(mod["params_b"], 2, int(p["tp"]), _rec(gpu, "gpu")["hbm_tbps"]))
        assert read == pytest.approx(want_ms, abs=1e-3)
        assert float(p["ttft_ms"]) < read


def test_tenstorrent_qwen3_moe_long_means_are_faster_than_the_peak():
    """tenstorrent issue #340 (tests/data/published_prefill.csv, set 'new'): Qwen3-30B-A3B on one A100
    at 4,096 and 8,192 tokens, 75.2 and 227.0 ms. A cold prefill's FLOPs, by hand: linear layers 2 x
    (3.35e9 active - 2 x 151,936 x 2,048 embedding and LM head = 2.727670e9) x N, attention 2 x 48 layers
    x 32 heads x 128 x N^2: at 4,096 tokens 2.234507e13 + 6.597070e12 = 2.894214e13 FLOPs, at the A100's
    dense BF16 peak (312 TFLOPS, every FLOP at 100%) 92.763 ms; at 8,192 tokens 4.469015e13 + 2.638828e13
    = 7.107843e13, 227.815 ms. Both published means are faster than the peak allows: they are not cold
    prefills (the rows' source: a cached repeat in each mean, and prompts of the same seed that share
    their prefixes across lengths), so the roofline's 3.17x and 2.23x there are no error of the law."""
    rows = [r for r in csv.DictReader(open(Path(__file__).parent / "data" / "published_prefill.csv"))
            if r["dataset"] == "tt340-qwen3-30b-a3b-1xa100"]
    mod = _rec("Qwen3-30B-A3B", "model")
    parts = est.roofline_parts(mod, _rec("A100 80GB", "gpu"), catalog_raw(mod))
    assert parts["linear_params_b"] == pytest.approx(2.727670144, abs=1e-9)
    for isl, want_ms in ((4096, 92.763), (8192, 227.815)):
        flops = (est.flops_linear(parts["linear_params_b"], isl)
                 + est.flops_attention(parts["layers"], parts["heads"], parts["width"], isl))
        peak_ms = float(flops) / 312e12 * 1e3
        assert peak_ms == pytest.approx(want_ms, abs=1e-3)
        published = float(next(r["ttft_ms"] for r in rows if int(r["isl"]) == isl))
        assert published < peak_ms
