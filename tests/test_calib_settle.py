"""The per-pass fixed cost F of load tests at c > 1 beside concurrency-1 points, settled by the secant
(issue 16, item 2: calibration was slow when c = 1 and c > 1 points are mixed).

``planner.plan.calibrate._settle_pass_fixed`` solves ``F = g(F)``, ``g(F)`` the fitted t_fixed of the
fit to ``P(F) = (ttft - fixed_coef F - const) / factor``. The reference here is the scheme it replaces,
written out in the test: the plain iteration ``F <- g(F)`` until the points move by less than 1e-12
relative (at most 100 refits).

Points: UCM's QwQ-32B tables (ModelEngine-Group/unified-cache-management, ds3fs_store.md at commit
cdd44067 for the 2x H100 set; pipeline_store.md at commit 333a16a for the 4x H100 set, the rows of
tests/data/published_load.csv), mean TTFT.
"""

from __future__ import annotations

import numpy as np
import pytest

import planner.plan.calibrate as cal
from planner.equations.ttft_fit import fit_points
from planner.plan import load_tests
from planner.plan.build import build_plan
from planner.workbook.input_sheets import write_input_workbook

MODEL = dict(model="QwQ-32B", layers=64, kv_heads=8, head_dim=128, kv_bytes=2, params_b=32.8)
# 2x H100, 0% hit only: no B_eff search, g is smooth (tests/test_redteam5_calibration_points.py's points)
NO_HIT = [(4000, 0.0, 1, 268.28), (8000, 0.0, 1, 533.62), (16000, 0.0, 1, 1144.92), (4000, 0.0, 4, 776.34)]
# 4x H100, 0% and 80% hits at c = 1 and c = 8: seven points, B_eff fitted
SEVEN = [(4000, 0.0, 1, 223.05), (4000, 0.8, 1, 156.54), (8000, 0.0, 1, 350.47), (16000, 0.8, 1, 349.17),
         (4000, 0.0, 8, 908.52), (8000, 0.8, 8, 955.25), (16000, 0.0, 8, 3139.03)]


def _build(tmp_path, points, tp):
    gpu = dict(gpu="H100 SXM", hbm_gib=80, pcie_gen=5, hbm_tbps=3.35, bf16_tflops=989.4)
    meas = [dict(model="QwQ-32B", gpu="H100 SXM", tp=tp, isl=i, hit=h, ttft_ms=t, concurrency=c, ttft_stat="mean")
            for i, h, c, t in points]
    wl = [dict(workload="w", model="QwQ-32B", gpu="H100 SXM", tp=tp, isl=8000, osl=2, hit_target=0.0)]
    src = tmp_path / "in.xlsx"
    write_input_workbook(src, [MODEL], [gpu], wl, {}, optional={"Measurements": meas})
    calls = []
    orig = cal.fit_points

    def counted(*a, **k):
        calls.append(1)
        return orig(*a, **k)

    cal.fit_points = counted
    try:
        plan = build_plan(src)
    finally:
        cal.fit_points = orig
    return plan.calibration.fits[0], len(calls), src


def _recs(points):
    return [dict(isl=i, hit=h, ttft_ms=t, concurrency=c, ttft_stat="mean") for i, h, c, t in points]


def _plain_iteration(points, fit):
    """The scheme replaced, written out: F <- g(F) until the points move by < 1e-12 relative."""
    load = load_tests.read_rows(_recs(points), 8192.0)
    pts = fit.points
    b0 = cal.gpu_pcie_gbps(dict(pcie_gen=5))
    one_hit = False

    def refit(p):
        return fit_points(pts["isl"], pts["hit"], p, fit.s_kv, b0, pts["alpha"], fit_b=not one_hit)

    p = load["prefill_ms"]
    r, n = refit(p), 1
    for _ in range(100):
        p_new = load_tests.prefill_given_fixed(load, r["t_fixed"])
        if np.max(np.abs(p_new - p) / p_new) < 1e-12:
            break
        p, r, n = p_new, refit(p_new), n + 1
    return r, p, n


def test_without_hits_the_secant_lands_on_the_plain_fixed_point(tmp_path):
    fit, n_fits, src = _build(tmp_path, NO_HIT, 2)
    r, p, n_plain = _plain_iteration(NO_HIT, fit)
    for k in ("t_fixed", "k_attn", "k_ffn"):
        assert getattr(fit, k) == pytest.approx(r[k], rel=1e-9), k
    np.testing.assert_allclose(fit.points["ttft_ms"], p, rtol=1e-9)
    # F is consistent with its own points: refitting P(F) gives F back
    again = fit_points(fit.points["isl"], fit.points["hit"], load_tests.prefill_given_fixed(
        load_tests.read_rows(_recs(NO_HIT), 8192.0), fit.t_fixed),
        fit.s_kv, 50.0, 0.0)
    assert again["t_fixed"] == pytest.approx(fit.t_fixed, rel=1e-10)
    print(f"\nno hits: {n_fits} fits (plain iteration {n_plain})")
    assert n_fits <= 8 < n_plain


def test_with_hits_the_secant_settles_in_a_few_fits_within_the_fits_own_jitter(tmp_path):
    fit, n_fits, src = _build(tmp_path, SEVEN, 4)
    r, p, n_plain = _plain_iteration(SEVEN, fit)
    # The B_eff search resolves ln B to about sqrt(machine precision) (a flat minimum of squared
    # errors), so g(F) jitters by ~1e-8 relative: the plain iteration stopped where two refits happened
    # to land on one golden-section value. Both schemes agree within that jitter, well inside 1e-6.
    for k in ("t_fixed", "k_attn", "k_ffn", "b_gbps"):
        assert getattr(fit, k) == pytest.approx(r[k], rel=1e-7), k
    np.testing.assert_allclose(fit.points["ttft_ms"], p, rtol=1e-8)
    print(f"\nseven points with hits: {n_fits} fits (plain iteration {n_plain})")
    assert n_fits <= 10 < n_plain
