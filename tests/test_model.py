"""The model against docs/model.md §2 worked numbers, hand calculations and properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.equations import kvhit as m

GQA, MLA = "gqa", "mla"


def S(layers, kv_heads, head_dim, kv_bytes, tp, attention=GQA, mla_kv_dim=0):
    return float(m.kv_bytes_per_token_gpu(attention, layers, kv_heads, head_dim, mla_kv_dim, kv_bytes, tp))


# ----------------------------------------------------------------------------- docs/model.md §2 worked numbers
@pytest.mark.parametrize("tp, expected", [
    (1, 2 * 80 * 8 * 128 * 2),   # hand calc: 2*80*8*128*2 = 327,680
    (2, 2 * 80 * 4 * 128 * 2),   # 163,840: the seed note's "160 KB" is this tp=2 value
    (4, 2 * 80 * 2 * 128 * 2),   # 81,920 (docs/model.md §2 corrects the note)
    (8, 2 * 80 * 1 * 128 * 2),   # 40,960
    (16, 2 * 80 * 1 * 128 * 2),  # 40,960: tp > kv_heads replicates one head per GPU, not 8/16
])
def test_qwen72b_llama70b_bytes_per_token(tp, expected):
    assert S(80, 8, 128, 2, tp) == expected
    assert S(80, 8, 128, 2, 4) == 81_920


def test_fp8_at_tp8():
    assert S(80, 8, 128, 1, 8) == 20_480  # hand calc: 2*80*1*128*1


def test_llama8b():
    assert S(32, 8, 128, 2, 1) == 131_072  # hand calc: 2*32*8*128*2


@pytest.mark.parametrize("tp", [1, 2, 8, 16])
def test_deepseek_v3_mla_any_tp(tp):
    # MLA: 61 layers * (512 + 64) * 2 B, no K/V pair, no division by tp
    assert S(61, 0, 0, 2, tp, attention=MLA, mla_kv_dim=576) == 61 * 576 * 2 == 70_272


def test_four_bit_kv():
    assert S(32, 8, 128, 0.5, 1) == 32_768  # hand calc: 2*32*8*128*0.5


def test_uneven_heads_round_up():
    assert float(m.kv_heads_per_gpu(8, 3)) == 3  # ceil(8/3)


def test_peak_kv_tp4_batch32():
    # docs/model.md §2: batch 32 x 8,192 tokens x 81,920 B = 21,474,836,480 B = 20 GiB (not 40)
    assert float(m.kv_peak_gib(32, 8192, 81_920)) == 20.0


def test_attention_after_half_hit():
    # 8,192 of 16,384 tokens hit: attention work 1 - 0.5^2 = 0.75 of the 0-hit work
    assert float(m.compute_ms(8192 / 16384, 100.0, 0.0, 0.0, "const")) == pytest.approx(75.0)


@pytest.mark.parametrize("h", [0.1, 0.25, 0.5, 0.9])
def test_attention_scaling_is_the_limit_of_the_exact_causal_count(h):
    # docs/model.md §2: the package's attention factor (compute_ms with only t_attn0 = 1 ms) must
    # approach the exact causal count (M*H + M(M+1)/2) / (N(N+1)/2) as N grows
    errors = []
    for n in (100, 1_000, 10_000, 100_000):
        hit = round(h * n)
        miss = n - hit
        exact = (miss * hit + miss * (miss + 1) / 2) / (n * (n + 1) / 2)
        errors.append(abs(exact - float(m.compute_ms(hit / n, 1.0, 0.0, 0.0, "const"))))
    assert errors == sorted(errors, reverse=True)  # shrinks as N grows
    assert errors[-1] < 1e-4


# ----------------------------------------------------------------------------- hand-calculated case
# isl 1000, osl 200, Llama-3.1-8B BF16 tp 1 (S = 131,072 B), PCIe 25 GB/s,
# t_attn0 40, t_ffn0 60, t_other0 10 (linear), t_fixed 5, t_decode 100 ms, alpha 0.5,
# hit_measured 0.2 with tpm_measured 400,000, hit_target 0.5.
ISL, OSL, S8B, B = 1000, 200, 131_072, 25.0
FULL_LOAD = 1000 * 131_072 / 25e9 * 1000  # = 5.24288 ms to load the whole prompt's KV


def test_hand_case_load_and_compute():
    assert float(m.kv_load_ms(0.5, ISL, S8B, B)) == pytest.approx(2.62144, rel=1e-12)  # 0.5*5.24288
    # 40*(1-0.25) + 60*(1-0.5) + 10*(1-0.5) = 30 + 30 + 5
    assert float(m.compute_ms(0.5, 40, 60, 10, "linear")) == pytest.approx(65.0, rel=1e-12)
    assert float(m.compute_ms(0.5, 40, 60, 10, "quadratic")) == pytest.approx(30 + 30 + 7.5)
    assert float(m.compute_ms(0.5, 40, 60, 10, "const")) == pytest.approx(30 + 30 + 10)


def test_hand_case_ttft():
    load, comp = 2.62144, 65.0
    assert float(m.ttft_ms(5, load, comp, 0.0)) == pytest.approx(72.62144)       # 5 + 2.62144 + 65
    assert float(m.ttft_ms(5, load, comp, 1.0)) == pytest.approx(70.0)           # 5 + max(2.62144, 65)
    assert float(m.ttft_ms(5, load, comp, 0.5)) == pytest.approx(71.31072)       # 72.62144 - 0.5*2.62144


def test_alpha1_is_fixed_plus_max():
    for load, comp in [(3.0, 10.0), (10.0, 3.0), (4.0, 4.0)]:
        assert float(m.ttft_ms(7.0, load, comp, 1.0)) == 7.0 + max(load, comp)


def test_hand_case_first_order():
    t0 = float(m.prefill0_ms(5, 40, 60, 10))
    assert t0 == 115.0
    d = float(m.delta(ISL, S8B, B, t0))
    assert d == pytest.approx(5.24288 / 115, rel=1e-12)  # = 0.04559026...
    assert float(m.h_star(d)) == pytest.approx(1 / (1 + 5.24288 / 115), rel=1e-12)
    # below h*: 1/(1-h); above: 1/(delta h); at h*: 1 + 1/delta
    assert float(m.first_order_gain(0.5, d)) == pytest.approx(2.0)
    assert float(m.first_order_gain(1.0, d)) == pytest.approx(115 / 5.24288)
    assert float(m.first_order_gain(m.h_star(d), d)) == pytest.approx(1 + 1 / d)


def test_hand_case_tpm_and_rehit():
    chip_t = 71.31072 + 100                                   # TTFT(0.5, 0.5) + decode
    # measured at 0.2: load 0.2*5.24288 = 1.048576; compute 40*0.96 + 60*0.8 + 10*0.8 = 94.4
    chip_m = 5 + 1.048576 + 94.4 - 0.5 * 1.048576 + 100       # = 199.924288
    assert float(m.chip_ms(m.ttft_ms(5, m.kv_load_ms(0.2, ISL, S8B, B),
                                     m.compute_ms(0.2, 40, 60, 10, "linear"), 0.5), 100)) == pytest.approx(chip_m)
    assert float(m.tpm_delivered(ISL, OSL, chip_t)) == pytest.approx(1200 * 60000 / 171.31072)
    assert float(m.tpm_physical(ISL, OSL, 0.5, chip_t)) == pytest.approx(700 * 60000 / 171.31072)
    target = float(m.tpm_delivered_target(400_000, chip_m, chip_t, np.nan))
    assert target == pytest.approx(400_000 * 199.924288 / 171.31072)        # = 466,812.6...
    assert float(m.tpm_physical_from_delivered(target, ISL, OSL, 0.5)) == pytest.approx(target * 700 / 1200)
    # no measurement: the model's own value
    assert float(m.tpm_delivered_target(np.nan, chip_m, chip_t, 123.0)) == 123.0


def test_rehit_same_hit_returns_measured():
    assert float(m.tpm_delivered_target(555_555.0, 180.0, 180.0, 1.0)) == 555_555.0


def test_instances_gpus_cost():
    assert float(m.instances_needed(1_000_001, 100_000)) == 11   # ceil(10.00001)
    assert float(m.instances_needed(3 * 0.1 * 1e6, 0.1 * 1e6)) == 3  # 3.0000000000000004 snaps to 3
    assert math.isnan(float(m.instances_needed(np.nan, 100_000)))
    assert float(m.instances_needed(1e-300, 1e9)) == 1  # a tiny demand still needs one instance
    assert float(m.gpus_needed(11, 4)) == 44
    # $2.50/GPU-h * 4 GPUs * 1e6 tokens / (500,000 tokens/min * 60 min/h) = $0.3333/Mtok
    assert float(m.cost_per_mtok(2.5, 4, 500_000)) == pytest.approx(10 / 30)


def test_weights_headroom_and_batch_fit():
    w = float(m.weights_gib_per_gpu(72.7, 2, 4))
    assert w == pytest.approx(72.7e9 * 2 / 4 / 2**30)   # 33.85 GiB
    assert float(m.hbm_headroom_gib(80, w, 20)) == pytest.approx(80 - w - 20)
    # (80 - w) GiB of room / (8192 tokens * 81,920 B) per request
    assert float(m.max_batch_fit(80, w, 8192, 81_920)) == math.floor((80 - w) * 2**30 / (8192 * 81_920))
    assert float(m.max_batch_fit(10, 40, 8192, 81_920)) == 0  # weights alone do not fit


def test_regime():
    assert list(m.regime(np.array([1.0, 5.0, 5.0]), np.array([2.0, 2.0, 5.0]))) == [
        "compute-bound", "load-bound", "compute-bound"]


def test_vectorised_over_arrays():
    hits = np.linspace(0, 1, 11)
    out = m.compute_ms(hits, 40.0, 60.0, 10.0, np.array(["const", "linear", "quadratic"] * 3 + ["const"] * 2))
    assert out.shape == (11,)
    assert out[0] == 110.0 and out[-1] == 10.0  # h=1, const: only t_other0 stays


# ----------------------------------------------------------------------------- properties
pos = st.floats(0.0, 1e4, allow_nan=False)
frac = st.floats(0.0, 1.0, allow_nan=False)
scaling = st.sampled_from(["const", "linear", "quadratic"])


@settings(max_examples=300, deadline=None)
@given(fixed=pos, attn=pos, ffn=pos, other=pos, sc=scaling, h=frac, a1=frac, a2=frac,
       isl=st.integers(1, 200_000), s=st.floats(1, 1e6), bw=st.floats(1, 1000))
def test_ttft_non_increasing_in_alpha(fixed, attn, ffn, other, sc, h, a1, a2, isl, s, bw):
    lo, hi = sorted((a1, a2))
    load = m.kv_load_ms(h, isl, s, bw)
    comp = m.compute_ms(h, attn, ffn, other, sc)
    assert m.ttft_ms(fixed, load, comp, hi) <= m.ttft_ms(fixed, load, comp, lo) + 1e-9 * (1 + load + comp)
    # bounds: max(load, compute) <= TTFT - fixed <= load + compute
    t = m.ttft_ms(fixed, load, comp, lo) - fixed
    assert max(load, comp) - 1e-9 * (1 + load + comp) <= t <= load + comp + 1e-9 * (1 + load + comp)


@settings(max_examples=300, deadline=None)
@given(isl=st.floats(1, 1e6), osl=st.floats(0, 1e5), h=frac, chip=st.floats(1e-3, 1e7))
def test_physical_le_delivered(isl, osl, h, chip):
    assert m.tpm_physical(isl, osl, h, chip) <= m.tpm_delivered(isl, osl, chip) * (1 + 1e-12)
    d = m.tpm_delivered(isl, osl, chip)
    assert m.tpm_physical_from_delivered(d, isl, osl, h) <= d * (1 + 1e-12)


@settings(max_examples=300, deadline=None)
@given(h=frac, d=st.floats(1e-6, 1e6))
def test_first_order_gain_bounded(h, d):
    g = m.first_order_gain(h, d)
    assert g <= (1 + 1 / d) * (1 + 1e-9)
    assert g >= 1 / max(1.0, d) * (1 - 1e-9)  # never below the worse of compute-only and load-only
