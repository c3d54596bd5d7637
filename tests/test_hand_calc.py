"""Whole Results rows computed BY HAND, independently of planner.equations.kvhit.

Every other result test compares the code with itself (the Python value and the Excel
formula come from one ``Out(func, *args)`` declaration, so a wrong argument passes on
both sides). Here each expected number is written as plain arithmetic with its
derivation from the model (docs/model.md: equations, output contract), numpy-financial
style. Nothing from planner.equations.kvhit / planner.plan.columns is called to get an expected value.

Five workloads cover: GQA at tp=4 with hit_measured, tpm_measured, demand and price;
MLA; replication (tp > kv_heads); blank demand and price (blank cost/GPU columns) and a
load-bound row beyond the delta branch; other_scaling linear with 0 < alpha < 1.

Tolerance: relative 1e-9 (the arithmetic below is exact up to float rounding), counts
and text exactly, blanks as blank.
"""

from __future__ import annotations

import math

import openpyxl
import pytest

from conftest import header_index, run_cli
from planner.plan.build import build_plan

GIB = 2 ** 30          # bytes per GiB
REL = 1e-9             # relative tolerance of every float column

# ----------------------------------------------------------------------------- inputs
MODELS = [
    # Llama-3.1-70B shape: 80 layers, 8 KV heads, d_head 128, BF16 KV; 70e9 params in BF16
    dict(model="L70", layers=80, kv_heads=8, head_dim=128, kv_bytes=2, attention="gqa", params_b=70),
    # DeepSeek-V3 shape: MLA, 61 layers, latent 512 + rope 64 = 576, BF16 KV; 671e9 params in FP8
    dict(model="DSV3", layers=61, kv_bytes=2, attention="mla", mla_kv_dim=576, params_b=671, weight_bytes=1),
    # Llama-3.1-8B shape: 32 layers, 8 KV heads, d_head 128, BF16
    dict(model="L8", layers=32, kv_heads=8, head_dim=128, kv_bytes=2, params_b=8),
]
GPUS = [
    dict(gpu="H100", hbm_gib=80, pcie_gbps=50, hourly_cost=2.5),
    dict(gpu="H200", hbm_gib=141, pcie_gbps=50, hourly_cost=4.0),
    dict(gpu="H20", hbm_gib=96, pcie_gen=4),           # no pcie_gbps: Gen4 -> 25 GB/s; no price
]
WORKLOADS = [
    dict(workload="gqa-tp4", model="L70", gpu="H100", tp=4, isl=8192, osl=512, batch=32, max_seq_len=8192,
         hit_measured=0.2, hit_target=0.5, t_attn0_ms=400, t_ffn0_ms=600, t_other0_ms=100,
         other_scaling="const", t_fixed_ms=20, t_decode_ms=2000, alpha=0, tpm_measured=200_000,
         demand_tpm=10_000_000),
    dict(workload="mla-tp8", model="DSV3", gpu="H200", tp=8, isl=4096, osl=1024, batch=16,
         hit_target=0.8, t_attn0_ms=300, t_ffn0_ms=500, t_fixed_ms=10, t_decode_ms=1500, alpha=1,
         demand_tpm=5_000_000),
    dict(workload="replicated-tp16", model="L70", gpu="H100", tp=16, isl=2000, osl=200, batch=4,
         max_seq_len=32768, hit_measured=0, hit_target=0.3, t_attn0_ms=50, t_ffn0_ms=80, t_other0_ms=10,
         other_scaling="quadratic", t_fixed_ms=5, t_decode_ms=800, alpha=0.5, demand_tpm=1_000_000),
    dict(workload="no-price-no-demand", model="L8", gpu="H20", tp=1, isl=1024, osl=256,
         hit_measured=0.1, hit_target=0.95, t_attn0_ms=20, t_ffn0_ms=30, tpm_measured=50_000,
         t_decode_ms=0),  # typed 0: a blank decode beside a typed breakdown is estimated (issue 20)
    dict(workload="linear-alpha", model="L8", gpu="H100", tp=2, isl=16384, osl=128, batch=8,
         max_seq_len=20000, hit_measured=0.5, hit_target=0.75, t_attn0_ms=900, t_ffn0_ms=300,
         t_other0_ms=200, other_scaling="linear", t_fixed_ms=0, t_decode_ms=100, alpha=0.4,
         tpm_measured=1_500_000, demand_tpm=30_000_000),
]

# ----------------------------------------------------------------------------- expected rows
# Notation (docs/model.md): S KV bytes/token/GPU; load = h*N*S/B (B in GB/s = 1e9 B/s, times
# 1e3 for ms); compute = Ta*(1-h^2) + Tf*(1-h) + To*f(h); TTFT = fixed + load + compute
# - alpha*min(load, compute); chip C = TTFT + decode; TPM_del = (isl+osl)*60000/C;
# TPM_phys = (isl*(1-h)+osl)*60000/C; re-hit: TPM_del(t) = TPM_meas*C(hm)/C(ht);
# cost = price*tp*1e6/(TPM*60).


def _row1() -> dict:
    """gqa-tp4: L70 on H100 (80 GiB, 50 GB/s, 2.5/h), tp 4, N 8192, osl 512, hm 0.2, ht 0.5."""
    S = 2 * 80 * 2 * 128 * 2            # kv_heads/GPU = ceil(8/4) = 2 -> 81,920 B (docs/model.md §2)
    weights = 70e9 * 2 / 4 / GIB        # 140e9 B / 4 GPUs = 35e9 B = 32.596 GiB
    # kv_peak = 32 x 8192 x S / GIB -> 32 x 8192 x 81,920 = 21,474,836,480 B = 20 GiB exactly
    load = 0.5 * 8192 * S / 50e9 * 1e3  # 335,544,320 B / 50 GB/s = 6.7108864 ms
    compute = 400 * (1 - 0.5 ** 2) + 600 * (1 - 0.5) + 100 * 1  # 300 + 300 + 100 (const) = 700 ms
    ttft0 = 20 + load + compute         # 726.7108864 ms
    # ttft1 = 20 + max(load, compute) -> 720 ms
    ttft = ttft0                        # alpha 0
    t0 = 20 + 400 + 600 + 100           # 1120 ms
    delta = 8192 * S / 50e9 * 1e3 / t0  # 13.4217728 ms / 1120 ms = 0.011983726
    load_m = 0.2 * 8192 * S / 50e9 * 1e3                   # 2.68435456 ms
    compute_m = 400 * (1 - 0.04) + 600 * 0.8 + 100         # 384 + 480 + 100 = 964 ms
    ttft_m = 20 + load_m + compute_m                        # 986.68435456 ms (alpha 0)
    chip_m = ttft_m + 2000                                  # 2986.68435456 ms
    chip_t = ttft + 2000                                    # 2726.7108864 ms
    tpm_del_t = 200_000 * chip_m / chip_t                   # re-hit: 219,068.6 tokens/min
    tpm_phys_t = tpm_del_t * (8192 * 0.5 + 512) / (8192 + 512)  # x 4608/8704
    return dict(
        workload="gqa-tp4", model="L70", gpu="H100",
        kv_bytes_per_token_gpu=81_920, kv_peak_gib=20.0,
        weights_gib_per_gpu=weights,
        hbm_headroom_gib=80 - weights - 20.0,                # 27.404 GiB
        # (80 - 32.596) GiB / (8192 x 81,920 B = 0.625 GiB) = 75.85 -> 75
        max_batch_fit=75,
        load_ms=load, compute_ms=700.0, ttft_alpha0_ms=ttft0, ttft_alpha1_ms=720.0, ttft_ms=ttft,
        regime="compute-bound",                              # 6.71 ms < 700 ms
        delta=delta, h_star=1 / (1 + delta),                 # 0.98816
        first_order_gain=2.0,                                # 1/max(1-0.5, 0.012*0.5) = 1/0.5
        chip_ms_measured=chip_m, chip_ms_target=chip_t,
        tpm_delivered_model=(8192 + 512) * 60000 / chip_t,   # 8704 tokens per 2726.71 ms: 191,524
        tpm_physical_model=(8192 * 0.5 + 512) * 60000 / chip_t,
        tpm_delivered_target=tpm_del_t, tpm_physical_target=tpm_phys_t,
        tpm_per_gpu=tpm_del_t / 4,
        instances_needed=46,                                 # ceil(10,000,000 / 219,068.6) = ceil(45.65)
        gpus_needed=46 * 4,                                  # 184
        cost_per_mtok_delivered=2.5 * 4 * 1e6 / (tpm_del_t * 60),   # 10/h per instance: 0.7608
        cost_per_mtok_physical=2.5 * 4 * 1e6 / (tpm_phys_t * 60),   # 1.4371
        t0_ms=1120.0, load_ms_measured=load_m, compute_ms_measured=964.0, ttft_ms_measured=ttft_m,
        tpm_change_vs_measured=chip_m / chip_t - 1,          # TPM scales as 1/C: +9.53 %
    )


def _row2() -> dict:
    """mla-tp8: DSV3 on H200 (141 GiB, 50 GB/s, 4/h), tp 8, N 4096, osl 1024, hm 0 (blank), ht 0.8, alpha 1."""
    S = 61 * 576 * 2                    # MLA: L x mla_kv_dim x b, no tp division -> 70,272 B (docs/model.md §2)
    weights = 671e9 * 1 / 8 / GIB       # FP8 weights: 83.875e9 B per GPU = 78.115 GiB
    nmax = 4096 + 1024                  # max_seq_len blank -> isl + osl = 5120
    kv_peak = 16 * nmax * S / GIB       # 16 x 5120 x 70,272 = 5,756,682,240 B = 5.3613 GiB
    load = 0.8 * 4096 * S / 50e9 * 1e3  # 230,267,289.6 B / 50 GB/s = 4.605345792 ms
    compute = 300 * (1 - 0.64) + 500 * 0.2 + 0   # 108 + 100 (+ no other) = 208 ms
    ttft0 = 10 + load + compute         # 222.605345792 ms
    ttft1 = 10 + max(load, compute)     # 218 ms
    t0 = 10 + 300 + 500                 # 810 ms
    delta = 4096 * S / 50e9 * 1e3 / t0  # 5.75668224 ms / 810 ms = 0.0071070151
    ttft_m = 10 + 0 + 800 - 1 * 0       # hm 0: load 0, compute 300 + 500 = 800; alpha*min(0, 800) = 0
    # chip_m = ttft_m + 1500 -> 2310 ms
    chip_t = ttft1 + 1500               # alpha 1 -> TTFT = 218: 1718 ms
    tpm_del = (4096 + 1024) * 60000 / chip_t            # no tpm_measured: the model value, 178,812.6
    tpm_phys = (4096 * 0.2 + 1024) * 60000 / chip_t     # 1843.2 tokens computed per request
    return dict(
        workload="mla-tp8", model="DSV3", gpu="H200",
        kv_bytes_per_token_gpu=70_272, kv_peak_gib=kv_peak,
        weights_gib_per_gpu=weights,
        hbm_headroom_gib=141 - weights - kv_peak,          # 57.52 GiB
        # (141 - 78.115) GiB x 2^30 / (5120 x 70,272 = 359,792,640 B) = 187.67 -> 187
        max_batch_fit=187,
        load_ms=load, compute_ms=208.0, ttft_alpha0_ms=ttft0, ttft_alpha1_ms=218.0, ttft_ms=218.0,
        regime="compute-bound",
        delta=delta, h_star=1 / (1 + delta),
        first_order_gain=1 / 0.2,                          # max(1-0.8, 0.0071*0.8) = 0.2 -> 5
        chip_ms_measured=2310.0, chip_ms_target=1718.0,
        tpm_delivered_model=tpm_del, tpm_physical_model=tpm_phys,
        tpm_delivered_target=tpm_del,
        tpm_physical_target=tpm_del * (4096 * 0.2 + 1024) / (4096 + 1024),   # = tpm_phys
        tpm_per_gpu=tpm_del / 8,
        instances_needed=28,                               # ceil(5,000,000 / 178,812.6) = ceil(27.96)
        gpus_needed=28 * 8,
        cost_per_mtok_delivered=4.0 * 8 * 1e6 / (tpm_del * 60),   # 32/h per instance: 2.9827
        cost_per_mtok_physical=4.0 * 8 * 1e6 / (tpm_phys * 60),
        t0_ms=810.0, load_ms_measured=0.0, compute_ms_measured=800.0, ttft_ms_measured=ttft_m,
        tpm_change_vs_measured=2310 / 1718 - 1,            # +34.46 %
    )


def _row3() -> dict:
    """replicated-tp16: L70 on H100, tp 16 > 8 KV heads, N 2000, osl 200, hm 0, ht 0.3, quadratic other, alpha 0.5."""
    S = 2 * 80 * 1 * 128 * 2            # ceil(8/16) = 1 head per GPU (replicated) -> 40,960 B, not 20,480
    weights = 70e9 * 2 / 16 / GIB       # 8.75e9 B = 8.149 GiB
    # kv_peak = 4 x 32768 x S / GIB -> 4 x 32768 x 40,960 = 5,368,709,120 B = 5 GiB exactly
    load = 0.3 * 2000 * S / 50e9 * 1e3  # 24,576,000 B / 50 GB/s = 0.49152 ms
    compute = 50 * (1 - 0.09) + 80 * 0.7 + 10 * (1 - 0.09)  # 45.5 + 56 + 9.1 (quadratic) = 110.6 ms
    ttft0 = 5 + load + compute          # 116.09152 ms
    ttft1 = 5 + compute                 # 115.6 ms
    ttft = 5 + load + compute - 0.5 * load   # alpha 0.5, min = load: 115.84576 ms
    t0 = 5 + 50 + 80 + 10               # 145 ms
    delta = 2000 * S / 50e9 * 1e3 / t0  # 1.6384 ms / 145 ms = 0.011299310
    ttft_m = 5 + 0 + 140 - 0.5 * 0      # hm 0: compute 50 + 80 + 10 = 140 ms -> 145 ms
    # chip_m = ttft_m + 800 -> 945 ms
    chip_t = ttft + 800                 # 915.84576 ms
    tpm_del = (2000 + 200) * 60000 / chip_t          # no tpm_measured: model value, 144,129.1
    tpm_phys = (2000 * 0.7 + 200) * 60000 / chip_t   # 1600 tokens computed per request
    return dict(
        workload="replicated-tp16", model="L70", gpu="H100",
        kv_bytes_per_token_gpu=40_960, kv_peak_gib=5.0,
        weights_gib_per_gpu=weights,
        hbm_headroom_gib=80 - weights - 5.0,                # 66.85 GiB
        # (80 - 8.149) GiB / (32768 x 40,960 B = 1.25 GiB) = 57.48 -> 57
        max_batch_fit=57,
        load_ms=load, compute_ms=compute, ttft_alpha0_ms=ttft0, ttft_alpha1_ms=ttft1, ttft_ms=ttft,
        regime="compute-bound",
        delta=delta, h_star=1 / (1 + delta),
        first_order_gain=1 / 0.7,                          # max(0.7, 0.0034) = 0.7 -> 1.428571
        chip_ms_measured=945.0, chip_ms_target=chip_t,
        tpm_delivered_model=tpm_del, tpm_physical_model=tpm_phys,
        tpm_delivered_target=tpm_del,
        tpm_physical_target=tpm_del * 1600 / 2200,
        tpm_per_gpu=tpm_del / 16,
        instances_needed=7,                                # ceil(1,000,000 / 144,129.1) = ceil(6.94)
        gpus_needed=7 * 16,                                # 112
        cost_per_mtok_delivered=2.5 * 16 * 1e6 / (tpm_del * 60),  # 40/h per instance: 4.6256
        cost_per_mtok_physical=2.5 * 16 * 1e6 / (tpm_phys * 60),
        t0_ms=145.0, load_ms_measured=0.0, compute_ms_measured=140.0, ttft_ms_measured=ttft_m,
        tpm_change_vs_measured=945 / chip_t - 1,          # +3.18 %
    )


def _row4() -> dict:
    """no-price-no-demand: L8 on H20 (96 GiB, Gen4 -> 25 GB/s, no price), tp 1, N 1024, osl 256,
    hm 0.1, ht 0.95 (beyond h*: load-bound, the delta branch of the first-order gain)."""
    S = 2 * 32 * 8 * 128 * 2            # tp 1: all 8 heads -> 131,072 B (docs/model.md §2)
    weights = 8e9 * 2 / GIB             # 16e9 B = 14.901 GiB
    # max_seq_len blank -> nmax = 1024 + 256 = 1280; batch blank -> the HBM fit 519 (below) capped at 256
    # (slofix item 3: was 1); kv_peak = 256 x nmax x S / GIB -> 256 x 167,772,160 B = 40 GiB exactly
    load = 0.95 * 1024 * S / 25e9 * 1e3            # 127,506,841.6 B / 25 GB/s = 5.100273664 ms
    compute = 20 * (1 - 0.95 ** 2) + 30 * 0.05     # 20 x 0.0975 + 1.5 = 3.45 ms
    t0 = 20 + 30                        # 50 ms (no fixed, no other)
    delta = 1024 * S / 25e9 * 1e3 / t0  # 5.36870912 ms / 50 ms = 0.1073741824
    load_m = 0.1 * 1024 * S / 25e9 * 1e3            # 0.536870912 ms
    compute_m = 20 * (1 - 0.01) + 30 * 0.9          # 19.8 + 27 = 46.8 ms
    ttft_m = load_m + compute_m                     # alpha 0 (blank): 47.336870912 ms
    chip_t = load + compute             # decode typed 0: C = TTFT = 8.550273664 ms
    tpm_del_t = 50_000 * ttft_m / chip_t             # re-hit: x 5.5363 = 276,815 tokens/min
    return dict(
        workload="no-price-no-demand", model="L8", gpu="H20",
        kv_bytes_per_token_gpu=131_072, kv_peak_gib=40.0,
        weights_gib_per_gpu=weights,
        hbm_headroom_gib=96 - weights - 40.0,             # 41.10 GiB
        # (96 - 14.901) GiB / (1280 x 131,072 B = 0.15625 GiB) = 519.03 -> 519
        max_batch_fit=519,
        load_ms=load, compute_ms=compute, ttft_alpha0_ms=load + compute, ttft_alpha1_ms=load,
        ttft_ms=load + compute,
        regime="load-bound",                             # 5.10 ms > 3.45 ms
        delta=delta, h_star=1 / (1 + delta),              # 0.90304 < 0.95
        first_order_gain=1 / (delta * 0.95),              # max(0.05, 0.10201) = delta h -> 9.8029
        chip_ms_measured=ttft_m, chip_ms_target=chip_t,
        tpm_delivered_model=(1024 + 256) * 60000 / chip_t,
        tpm_physical_model=(1024 * 0.05 + 256) * 60000 / chip_t,   # 307.2 tokens computed
        tpm_delivered_target=tpm_del_t,
        tpm_physical_target=tpm_del_t * 307.2 / 1280,
        tpm_per_gpu=tpm_del_t / 1,
        instances_needed=None, gpus_needed=None,           # blank demand -> blank
        cost_per_mtok_delivered=None, cost_per_mtok_physical=None,   # blank price -> blank
        t0_ms=50.0, load_ms_measured=load_m, compute_ms_measured=46.8, ttft_ms_measured=ttft_m,
        tpm_change_vs_measured=ttft_m / chip_t - 1,        # +453.6 %
    )


def _row5() -> dict:
    """linear-alpha: L8 on H100, tp 2, N 16384, osl 128, hm 0.5, ht 0.75, other linear, alpha 0.4."""
    S = 2 * 32 * 4 * 128 * 2            # ceil(8/2) = 4 heads per GPU -> 65,536 B
    weights = 8e9 * 2 / 2 / GIB         # 8e9 B = 7.4506 GiB
    # kv_peak = 8 x 20000 x S / GIB -> 10,485,760,000 B = 9.765625 GiB
    load = 0.75 * 16384 * S / 50e9 * 1e3                  # 805,306,368 B / 50 GB/s = 16.10612736 ms
    compute = 900 * (1 - 0.5625) + 300 * 0.25 + 200 * 0.25   # 393.75 + 75 + 50 (linear) = 518.75 ms
    ttft = load + compute - 0.4 * load                    # fixed 0, min = load: 528.413676416 ms
    t0 = 900 + 300 + 200                # 1400 ms
    delta = 16384 * S / 50e9 * 1e3 / t0  # 21.47483648 ms / 1400 ms = 0.015339169
    load_m = 0.5 * 16384 * S / 50e9 * 1e3                 # 10.73741824 ms
    compute_m = 900 * 0.75 + 300 * 0.5 + 200 * 0.5       # 675 + 150 + 100 = 925 ms
    ttft_m = load_m + compute_m - 0.4 * load_m            # 931.442450944 ms
    chip_m = ttft_m + 100               # 1031.442450944 ms
    chip_t = ttft + 100                 # 628.413676416 ms
    tpm_del_t = 1_500_000 * chip_m / chip_t               # re-hit: 2,462,014.6 tokens/min
    tpm_phys_t = tpm_del_t * (16384 * 0.25 + 128) / (16384 + 128)   # x 4224/16512
    return dict(
        workload="linear-alpha", model="L8", gpu="H100",
        kv_bytes_per_token_gpu=65_536, kv_peak_gib=9.765625,
        weights_gib_per_gpu=weights,
        hbm_headroom_gib=80 - weights - 9.765625,         # 62.78 GiB
        # (80 - 7.4506) GiB x 2^30 / (20000 x 65,536 B = 1,310,720,000 B) = 59.43 -> 59
        max_batch_fit=59,
        load_ms=load, compute_ms=518.75, ttft_alpha0_ms=load + compute, ttft_alpha1_ms=518.75, ttft_ms=ttft,
        regime="compute-bound",
        delta=delta, h_star=1 / (1 + delta),
        first_order_gain=4.0,                             # 1/max(0.25, 0.0115) = 4
        chip_ms_measured=chip_m, chip_ms_target=chip_t,
        tpm_delivered_model=(16384 + 128) * 60000 / chip_t,
        tpm_physical_model=(16384 * 0.25 + 128) * 60000 / chip_t,
        tpm_delivered_target=tpm_del_t, tpm_physical_target=tpm_phys_t,
        tpm_per_gpu=tpm_del_t / 2,
        instances_needed=13,                              # ceil(30,000,000 / 2,462,014.6) = ceil(12.19)
        gpus_needed=13 * 2,
        cost_per_mtok_delivered=2.5 * 2 * 1e6 / (tpm_del_t * 60),   # 5/h per instance: 0.03385
        cost_per_mtok_physical=2.5 * 2 * 1e6 / (tpm_phys_t * 60),
        t0_ms=1400.0, load_ms_measured=load_m, compute_ms_measured=925.0, ttft_ms_measured=ttft_m,
        tpm_change_vs_measured=chip_m / chip_t - 1,       # +64.13 %
    )


EXPECTED = [_row1(), _row2(), _row3(), _row4(), _row5()]

# the Results contract of docs/model.md §4 plus the traced intermediate columns
COLUMNS = (
    "workload model gpu kv_bytes_per_token_gpu kv_peak_gib weights_gib_per_gpu hbm_headroom_gib "
    "max_batch_fit load_ms compute_ms ttft_alpha0_ms ttft_alpha1_ms ttft_ms regime delta h_star "
    "first_order_gain chip_ms_measured chip_ms_target tpm_delivered_model tpm_physical_model "
    "tpm_delivered_target tpm_physical_target tpm_per_gpu instances_needed gpus_needed "
    "cost_per_mtok_delivered cost_per_mtok_physical t0_ms load_ms_measured compute_ms_measured "
    "ttft_ms_measured tpm_change_vs_measured").split()
TEXT = {"workload", "model", "gpu", "regime"}
COUNTS = {"max_batch_fit", "instances_needed", "gpus_needed", "kv_bytes_per_token_gpu"}


def _blank(v) -> bool:
    return v is None or v == "" or (isinstance(v, float) and math.isnan(v))


def check(expected, got, column: str, workload: str) -> None:
    where = f"{workload}.{column}: expected {expected!r}, got {got!r}"
    if expected is None:
        assert _blank(got), where
    elif column in TEXT:
        assert got == expected, where
    elif column in COUNTS:
        assert not _blank(got) and float(got) == expected, where           # exact
    else:
        assert not _blank(got) and math.isclose(float(got), expected, rel_tol=REL, abs_tol=1e-12), where


def write_input(path, models, gpus, workloads) -> None:
    """The input workbook with openpyxl: one header row of column names per sheet."""
    wb = openpyxl.Workbook()
    wb.remove(wb.active)
    for sheet, records in (("Models", models), ("GPUs", gpus), ("Workloads", workloads)):
        ws = wb.create_sheet(sheet)
        names = list(dict.fromkeys(k for r in records for k in r))
        ws.append(names)
        for r in records:
            ws.append([r.get(n) for n in names])
    ws = wb.create_sheet("Settings")
    ws.append(["key", "value"])
    ws.append(["quarter", "hand-calc"])
    wb.save(path)


@pytest.fixture(scope="module")
def input_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("hand") / "hand.xlsx"
    write_input(path, MODELS, GPUS, WORKLOADS)
    return path


@pytest.fixture(scope="module")
def results(input_path):
    return build_plan(input_path).results


def test_expected_rows_cover_every_results_column(results):
    # the hand rows name every column of the §4 list and the traced extras, and the code has them
    for exp in EXPECTED:
        assert set(exp) == set(COLUMNS)
    assert set(COLUMNS) <= set(results.columns), set(COLUMNS) - set(results.columns)
    assert list(results["workload"]) == [w["workload"] for w in WORKLOADS]


@pytest.mark.parametrize("i", range(len(EXPECTED)), ids=[e["workload"] for e in EXPECTED])
def test_build_plan_row_matches_hand_calculation(results, i):
    row = results.iloc[i]
    exp = EXPECTED[i]
    for col in COLUMNS:
        check(exp[col], row[col], col, exp["workload"])


def test_hand_calculations_are_the_spec_test_vectors():
    # the worked numbers of docs/model.md §2: S at tp 4, replication at tp 16, MLA, 8B
    assert EXPECTED[0]["kv_bytes_per_token_gpu"] == 81_920
    assert EXPECTED[2]["kv_bytes_per_token_gpu"] == 40_960
    assert EXPECTED[1]["kv_bytes_per_token_gpu"] == 70_272
    assert EXPECTED[3]["kv_bytes_per_token_gpu"] == 131_072
    assert EXPECTED[0]["kv_peak_gib"] == 20.0   # batch 32 x 8192 at tp 4: 20 GiB, not 40


def test_written_workbook_stores_the_hand_values(input_path, tmp_path):
    # the CLI end to end: the Results sheet's stored (cached) values are the hand values too
    out = tmp_path / "hand-plan.xlsx"
    proc = run_cli("run", input_path, "-o", out, "--no-memo", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    wb = openpyxl.load_workbook(out, data_only=True, read_only=False)
    ws = wb["Results"]
    idx = header_index(ws)
    assert set(COLUMNS) <= set(idx), set(COLUMNS) - set(idx)
    for i, exp in enumerate(EXPECTED):
        for col in COLUMNS:
            check(exp[col], ws.cell(2 + i, idx[col]).value, col, exp["workload"])
    wb.close()
