"""Calibration from load tests and the roofline estimate (issue 10 parts 2 and 3)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from planner.equations import roofline as est
from planner.equations.ttft_fit import fit_points, ttft_law

DATA = Path(__file__).parent / "data" / "published_ttft.csv"

# Llama-3.1-8B (config.json: 32 layers, 8 KV heads, head_dim 128), BF16 KV, tp 1
# hand calc: S = 2*32*8*128*2 = 131,072 B per token
S_8B = 131_072.0


# --------------------------------------------------------------------------- synthetic recovery
@pytest.mark.parametrize("alpha", [0.0, 0.6])
def test_recovers_known_parameters(alpha):
    t_fixed, k_attn, k_ffn, b = 12.0, 2.0e-6, 0.05, 20.0
    n = np.array([1024, 2048, 4096, 8192, 16384, 32768, 4096, 8192, 16384], dtype=float)
    h = np.array([0, 0, 0, 0, 0, 0, 0.5, 0.8, 0.9])
    # hand calc of one point, alpha 0: 12 + 2e-6*8192^2*(1-0.64) + 0.05*8192*0.2 + 0.8*8192*131072/20e9*1000
    #   = 12 + 48.318 + 81.92 + 42.950 = 185.188 ms
    if alpha == 0:
        assert ttft_law(8192, 0.8, t_fixed, k_attn, k_ffn, S_8B, b) == pytest.approx(185.188, abs=1e-3)
    y = ttft_law(n, h, t_fixed, k_attn, k_ffn, S_8B, b, alpha)
    r = fit_points(n, h, y, S_8B, 25.0, alpha)
    assert r["b_fitted"] and not r["b_at_bound"]
    assert r["t_fixed"] == pytest.approx(t_fixed, rel=1e-6)
    assert r["k_attn"] == pytest.approx(k_attn, rel=1e-6)
    assert r["k_ffn"] == pytest.approx(k_ffn, rel=1e-6)
    assert r["b_gbps"] == pytest.approx(b, rel=1e-6)


def test_relative_error_keeps_short_points():
    """A 1% miss at 32k must not buy a large miss at 1k: the fit weighs relative errors."""
    n = np.array([1024, 2048, 4096, 32768], dtype=float)
    y = ttft_law(n, 0 * n, 30.0, 1e-6, 0.04, S_8B, 25.0)
    y[-1] *= 1.02  # a noisy long point
    r = fit_points(n, 0 * n, y, S_8B, 25.0)
    pred = ttft_law(n, 0 * n, r["t_fixed"], r["k_attn"], r["k_ffn"], S_8B, 25.0)
    assert np.max(np.abs(pred[:3] / y[:3] - 1)) < 0.01


def test_without_hit_points_uses_default_bandwidth():
    n = np.array([2048, 8192, 16384], dtype=float)
    y = ttft_law(n, 0 * n, 5.0, 1e-6, 0.03, S_8B, 25.0)
    r = fit_points(n, 0 * n, y, S_8B, 25.0)
    assert not r["b_fitted"] and r["b_gbps"] == 25.0


# --------------------------------------------------------------------------- published load tests
def _published() -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    with open(DATA, newline="") as fh:
        for row in csv.DictReader(fh):
            out.setdefault(row["dataset"], []).append(
                {"isl": float(row["isl"]), "hit": float(row["hit"]), "ttft_ms": float(row["ttft_ms"])})
    return out


def _leave_out(points: list[dict], keep: int, s_kv: float) -> np.ndarray:
    """Fit on every 0-hit point plus the ``keep``-th hit point; relative errors on the other hit points."""
    zero = [p for p in points if p["hit"] == 0]
    hits = sorted((p for p in points if p["hit"] > 0), key=lambda p: p["isl"])
    train = zero + [hits[keep]]
    test = [p for k, p in enumerate(hits) if k != keep]
    col = lambda ps, k: np.array([p[k] for p in ps])
    r = fit_points(col(train, "isl"), col(train, "hit"), col(train, "ttft_ms"), s_kv, 25.0)
    pred = ttft_law(col(test, "isl"), col(test, "hit"), r["t_fixed"], r["k_attn"], r["k_ffn"], s_kv, r["b_gbps"])
    return pred / col(test, "ttft_ms") - 1


def test_published_leave_out_accuracy():
    """Issue 10's bar on published measurements (tests/data/published_ttft.csv, cited per row):
    calibrated from the 0-hit points at several lengths plus ONE hit point (the middle length,
    declared before looking: a production point sits mid-range), the other hit points are
    predicted with median error <= 8% and none worse than 20%. Every other choice of the one
    hit point must stay within 20% too (and is reported by the -s output)."""
    # Gemma-4 (d-inference): KV bytes per token only scale B_eff, which is fitted: any S serves
    s_kv = S_8B
    for name, points in _published().items():
        n_hits = sum(p["hit"] > 0 for p in points)
        if n_hits < 2:
            continue  # 0-hit only: see test_published_lengths_leave_one_out
        err = np.abs(_leave_out(points, n_hits // 2, s_kv))
        print(f"{name}: held-in middle hit point: median {np.median(err):.1%}, max {err.max():.1%}")
        assert np.median(err) <= 0.08 and err.max() <= 0.20
        for keep in range(n_hits):
            e = np.abs(_leave_out(points, keep, s_kv))
            print(f"  held-in hit point {keep}: median {np.median(e):.1%}, max {e.max():.1%}")
            assert e.max() <= 0.20


def test_published_lengths_leave_one_out():
    """The length scaling on published 0-hit sweeps: each inner length predicted from the
    others (fit without it) within 5%; the sweeps are cited per row in the csv."""
    checked = 0
    for name, points in _published().items():
        zero = sorted((p for p in points if p["hit"] == 0), key=lambda p: p["isl"])
        if len(zero) < 4:
            continue
        for k in range(1, len(zero) - 1):  # interpolation: the inner lengths
            train = [p for j, p in enumerate(zero) if j != k]
            col = lambda ps, key: np.array([p[key] for p in ps])
            r = fit_points(col(train, "isl"), col(train, "hit"), col(train, "ttft_ms"), S_8B, 25.0)
            pred = ttft_law(zero[k]["isl"], 0.0, r["t_fixed"], r["k_attn"], r["k_ffn"], S_8B, 25.0)
            err = abs(pred / zero[k]["ttft_ms"] - 1)
            print(f"{name}: isl {zero[k]['isl']:g} predicted within {err:.1%}")
            assert err <= 0.05
            checked += 1
    assert checked >= 6


# --------------------------------------------------------------------------- roofline by hand
def test_roofline_prefill_by_hand():
    # Llama-3.1-70B: 80 layers, 64 heads, head_dim 128, 70.6e9 params; 4x H100 SXM 989.4 dense BF16 TFLOPS
    # hand calc: 2*70.6e9*4096 FLOPs / (4*989.4e12*0.45) = 5.783552e14 / 1.78092e15 s = 324.7508 ms
    ffn = est.flops_ms(est.flops_linear(70.6, 4096), 4, 989.4, 0.45)
    assert ffn == pytest.approx(324.7508, abs=1e-3)
    # hand calc: 2*80*64*128*4096^2 = 1,310,720 * 16,777,216 = 2.19902e13 FLOPs; / 1.78092e15 = 12.348 ms
    attn = est.flops_ms(est.flops_attention(80, 64, 128, 4096), 4, 989.4, 0.45)
    assert attn == pytest.approx(12.3477, abs=1e-3)


def test_roofline_decode_by_hand():
    # Llama-3.1-8B (8.03e9 params, BF16) on one H100 SXM (3.35 TB/s), batch 1, isl 1000, osl 200, MBU 0.6
    # hand calc: weights 8.03e9*2 = 16.06e9 B; KV read per step 1*(1000+100)*131072 = 144,179,200 B
    #   step = 16.204179e9 / (3.35e12*0.6) s = 8.06178 ms; x 200 steps / batch 1 = 1612.36 ms
    d = est.decode_ms(200, 1, 1000, S_8B, 8.03, 8.03, 2, 1, 3.35, 0.6)
    assert d == pytest.approx(1612.356, abs=1e-2)
    # MoE reads at most batch*active parameters: DeepSeek-V3 671B total, 37B active, FP8, batch 4, tp 8
    # hand calc: min(671, 4*37) = 148e9 params * 1 B / 8 = 18.5e9 B per GPU per step (+ KV)
    step_w = est.decode_ms(1, 4, 0, 0.0, 671, 37, 1, 8, 4.8, 1.0) * 4  # osl 1, KV 0: one step, times batch
    assert step_w == pytest.approx(18.5e9 / 4.8e12 * 1000, rel=1e-9)
