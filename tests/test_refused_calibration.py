"""A one-length calibration implying more than 100% of the dense peak (slofix item 4, notes/20.md:
a concurrency-8 TTFT read through the wave model implied 154% and the plan used it, 668 -> 44 GPUs)
is refused: the deployment falls back to the roofline at Settings prefill_mfu, with a located
warning at the Measurements row saying why."""

from __future__ import annotations

import pytest

from planner.plan.build import build_plan
from planner.workbook.input_sheets import write_input_workbook

MODELS = [{"model": "L70", "layers": 80, "kv_heads": 8, "head_dim": 128, "kv_bytes": 2, "params_b": 70,
           "heads": 64, "hidden_size": 8192, "intermediate_size": 28672}]
GPUS = [{"gpu": "H100", "hbm_gib": 80, "pcie_gen": 5, "hbm_tbps": 3.35, "bf16_tflops": 989.4}]
WL = dict(workload="w", model="L70", gpu="H100", tp=4, isl=2000, osl=200, batch=32, hit_target=0.0,
          demand_tpm=5_000_000)


def _plan(tmp_path, ttft, name):
    src = tmp_path / f"{name}.xlsx"
    meas = [{"model": "L70", "gpu": "H100", "tp": 4, "isl": 2000, "hit": 0.0, "ttft_ms": ttft, "concurrency": 8,
             "num_requests": 8}]
    write_input_workbook(src, MODELS, GPUS, [WL], {}, optional={"Measurements": meas})
    return build_plan(src)


def test_a_point_faster_than_the_peak_is_refused(tmp_path):
    # hand: a burst of 8 of 2,000 new tokens packed into passes of 8,192 (Settings max_num_batched_tokens,
    # no fixed cost read from a c > 1 point): request 1 alone ends at P; pass 2 (8,192 tokens, 4.096 P)
    # ends requests 2-5 at 5.096 P; the last pass (5,808 tokens) ends requests 6-8 at 8 P; mean
    # (1 + 4 x 5.096 + 3 x 8) / 8 = 5.673 P, so TTFT 100 ms is a request-alone prefill of 17.6 ms;
    # at 100% of 4 x 989.4 TFLOPS the linear layers alone (70e9 params less at most 2 x 128,256 x 8,192
    # = 2.1e9 of embedding and head) take 2 x 67.9e9 x 2000 / 3.9576e15 s = 68.6 ms > 17.6 ms: > 300%
    plan = _plan(tmp_path, 100.0, "fast")
    f = plan.calibration.fits[0]
    assert f.method == "refused" and not f.ok and f.efficiency > 68.6 / (100 / 5.673)
    assert plan.results["breakdown_source"].iat[0] == "estimated"
    alone = tmp_path / "alone.xlsx"               # the same workload with no Measurements: the roofline
    write_input_workbook(alone, MODELS, GPUS, [WL], {})
    ref = build_plan(alone)
    for col in ("t_attn0_ms", "t_ffn0_ms", "t_decode_ms"):
        assert plan.resolved[col].iat[0] == pytest.approx(ref.resolved[col].iat[0], rel=1e-12), col
    assert plan.results["gpus_needed"].iat[0] == ref.results["gpus_needed"].iat[0]
    text = [str(w) for w in plan.warnings]
    hit = [t for t in text if t.startswith("Measurements row 2 (L70 on 4x H100)") and "which no GPU reaches" in t]
    assert hit and "read as a load test at concurrency 8 (request-alone prefill = TTFT / 5.67)" in hit[0]
    assert f"{f.efficiency:.0%} of the dense peak" in hit[0]


def test_a_point_below_the_peak_still_scales_the_roofline(tmp_path):
    plan = _plan(tmp_path, 2000.0, "slow")   # P = 444 ms: well under the peak (68.6 ms is 100%)
    f = plan.calibration.fits[0]
    assert f.method == "roofline-scaled" and f.ok and f.efficiency < 1
    assert plan.results["breakdown_source"].iat[0] == "calibrated"
