"""A blank Workloads ``batch`` (slofix item 3, notes/20.md test-drive): the workload's
``concurrency``, else the batch an instance runs at capacity, the full-length requests whose KV
fits in HBM (``max_batch_fit``) capped at 256 (vLLM's default ``max_num_seqs``), not batch 1.

By hand below: Llama-3.1-70B shape on 4xH100 at 5M tokens/min, isl 2000, osl 200, typed prefill
P = 20 + 140 = 160 ms, the decode estimated by the roofline (decode_mbu 0.6) at the batch.
"""

from __future__ import annotations

import math

import openpyxl
import pytest

from conftest import header_index, value_book
from planner.plan.build import build_plan
from planner.workbook.input_sheets import write_input_workbook
from planner.workbook.writer import write_output

GIB = 2 ** 30
MODELS = [{"model": "L70", "layers": 80, "kv_heads": 8, "head_dim": 128, "kv_bytes": 2, "params_b": 70}]
GPUS = [{"gpu": "H100", "hbm_gib": 80, "pcie_gen": 5, "hbm_tbps": 3.35, "bf16_tflops": 989.4}]
BASE = dict(model="L70", gpu="H100", isl=2000, osl=200, hit_target=0.0, t_attn0_ms=20.0, t_ffn0_ms=140.0,
            demand_tpm=5_000_000, target_utilization=0.8)
WLS = [dict(workload="blank", tp=4, **BASE),
       dict(workload="typed-1", tp=4, batch=1, **BASE),
       dict(workload="conc", tp=4, concurrency=8, **BASE),
       dict(workload="no-fit", tp=1, **BASE)]          # 130 GiB of weights on one 80 GiB GPU

S = 2 * 80 * 8 * 128 * 2 / 4                                    # 81,920 B of KV per token per GPU
W_B = 70e9 * 2 / 4                                              # 35e9 B of weights per GPU
FIT = math.floor((80 * GIB - W_B) / (2200 * S))                 # (85.90e9 - 35e9) / 180.2e6 = 282.4 -> 282
B = min(FIT, 256)                                               # the server's limit binds: 256


def decode(b):                                                   # roofline decode per request at batch b
    step = (W_B + b * (2000 + 100) * S) / (3.35e12 * 0.6) * 1000   # weights + KV of the batch per step [ms]
    return 200 * step / b


def gpus(b):
    chip = 160.0 + decode(b)                                      # P + D [ms]
    tpm = (2000 + 200) * 60000 / chip                             # delivered tokens/min of one instance
    return 4 * math.ceil(5_000_000 / (0.8 * tpm))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("batch")
    src = d / "in.xlsx"
    # hit_step 0.5: the hit sweep at 3 points (0, 0.5, 1), not 21: compare_all still holds every
    # sweep column of every workload to Python, at fewer rows
    write_input_workbook(src, MODELS, GPUS, WLS, {"hit_step": 0.5})
    plan = build_plan(src)
    out = d / "out.xlsx"
    write_output(plan, out)
    return plan, out


def test_hand_numbers():
    assert FIT == 282 and B == 256
    assert decode(256) == pytest.approx(30.72, abs=0.01) and decode(1) == pytest.approx(3499.7, abs=0.1)
    assert gpus(256) == 40 and gpus(1) == 696                     # 17x apart


def test_blank_batch_is_the_hbm_fit_capped(built):
    plan, _ = built
    res, r = plan.resolved.set_index("workload"), plan.results.set_index("workload")
    assert res.loc["blank", "batch"] == 256 and r.loc["blank", "max_batch_fit"] == FIT
    assert res.loc["blank", "t_decode_ms"] == pytest.approx(decode(256), rel=1e-12)
    assert r.loc["blank", "gpus_needed"] == gpus(256) == 40
    assert res.loc["typed-1", "batch"] == 1 and r.loc["typed-1", "gpus_needed"] == gpus(1)   # typed wins
    assert res.loc["conc", "batch"] == 8
    assert res.loc["conc", "t_decode_ms"] == pytest.approx(decode(8), rel=1e-12)
    assert r.loc["no-fit", "max_batch_fit"] == 0 and res.loc["no-fit", "batch"] == 1   # never below 1


def test_the_default_is_said(built):
    plan, out = built
    assert "batch 3 (Workloads!G2, Workloads!G4, Workloads!G5)" in plan.filled_note   # blank, conc, no-fit
    ws = openpyxl.load_workbook(out)["Workloads"]
    c = ws.cell(2, header_index(ws)["batch"])
    assert c.comment is not None and "batch 256" in c.comment.text and "fits in HBM" in c.comment.text
    warn = [str(w) for w in plan.warnings if "Workloads row 2 (blank)" in str(w) and "estimated by the roofline" in str(w)]
    assert warn and "at batch 256 (blank, so the full-length requests whose KV fits in HBM, at most 256)" in warn[0]
    assert f"{decode(1):,.1f} ms at batch 1" in warn[0]


def test_resolved_batch_is_live(built):
    _, out = built
    ws = openpyxl.load_workbook(out)["Resolved"]
    h = header_index(ws)
    f = ws.cell(2, h["batch"]).value
    assert isinstance(f, str) and f.startswith("=IF(ISNUMBER(Workloads!") and "c_max_num_seqs" in f
    cached = value_book(out, "Resolved")["Resolved"]
    assert [cached.cell(i, h["batch"]).value for i in range(2, 6)] == [256, 1, 8, 1]


@pytest.mark.libreoffice
def test_libreoffice_recalculates_the_batch(built, recalc):
    from test_recalc import compare_all

    plan, out = built
    again = recalc(out)
    assert compare_all(again, plan) > 0                       # every formula cell against its stored value
    wb = value_book(again, "Resolved", "Results")
    ws, wr = wb["Resolved"], wb["Results"]
    h, hr = header_index(ws), header_index(wr)
    assert [ws.cell(i, h["batch"]).value for i in range(2, 6)] == [256, 1, 8, 1]
    assert [wr.cell(i, hr["gpus_needed"]).value for i in range(2, 6)] == list(plan.results["gpus_needed"])
    assert ws.cell(2, h["t_decode_ms"]).value == pytest.approx(decode(256), rel=1e-9)
