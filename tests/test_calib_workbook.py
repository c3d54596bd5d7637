"""Calibration and estimate inside the planner: filled workloads, Resolved/Results/Calibration
sheets, located errors, and one LibreOffice recalculation."""

from __future__ import annotations

import math

import openpyxl
import pytest

from conftest import run_cli, same_value, sheet_values, value_book
from planner.equations.ttft_fit import ttft_law
from planner.core.errors import InputError
from planner.plan.build import build_plan
from planner.workbook.input_sheets import write_input_workbook
from planner.workbook.writer import write_output

S_8B = 131_072.0  # hand calc: 2*32*8*128*2
T_FIXED, K_ATTN, K_FFN, B_EFF = 15.0, 1.5e-6, 0.06, 18.0  # the deployment the Measurements were made from

MODELS = [
    {"model": "Llama-3.1-8B", "layers": 32, "kv_heads": 8, "head_dim": 128, "kv_bytes": 2, "params_b": 8.03,
     "heads": 32, "hidden_size": 4096, "intermediate_size": 14336},
    {"model": "Llama-3.1-70B", "layers": 80, "kv_heads": 8, "head_dim": 128, "kv_bytes": 2, "params_b": 70.6, "active_params_b": 70.6,
     "heads": 64},
]
GPUS = [{"gpu": "H100", "hbm_gib": 80, "pcie_gen": 5, "hbm_tbps": 3.35, "bf16_tflops": 989.4, "fp8_tflops": 1978.9}]
BASE = {"tp": 1, "osl": 200, "hit_target": 0.7, "hit_measured": 0}
WORKLOADS = [
    {"workload": "typed", "model": "Llama-3.1-8B", "gpu": "H100", "isl": 4096, "t_attn0_ms": 40, "t_ffn0_ms": 200,
     **BASE},
    {"workload": "calibrated", "model": "Llama-3.1-8B", "gpu": "H100", "isl": 6000, **BASE},
    {"workload": "outside", "model": "Llama-3.1-8B", "gpu": "H100", "isl": 64000, "kv_gbps": 40, **BASE},
    {"workload": "estimated", "model": "Llama-3.1-70B", "gpu": "H100", "isl": 4096, **{**BASE, "tp": 4}},
]


def _measurements():
    pts = [(1024, 0), (4096, 0), (8192, 0), (16384, 0), (8192, 0.8), (16384, 0.5)]
    out = []
    for isl, hit in pts:
        ttft = float(ttft_law(isl, hit, T_FIXED, K_ATTN, K_FFN, S_8B, B_EFF))
        out.append({"model": "Llama-3.1-8B", "gpu": "H100", "tp": 1, "isl": isl, "hit": hit, "ttft_ms": ttft,
                    "tpot_ms": 7.5, "concurrency": 1, "osl": 200})
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("calib")
    src = d / "in.xlsx"
    write_input_workbook(src, MODELS, GPUS, WORKLOADS, {}, optional={"Measurements": _measurements()})
    plan = build_plan(src)
    out = d / "out.xlsx"
    write_output(plan, out)
    return plan, out


def test_sources_and_filled_values(built):
    plan, _ = built
    r = plan.resolved.set_index("workload")
    assert list(plan.results["breakdown_source"]) == ["input", "calibrated", "calibrated", "estimated"]
    # typed row untouched; its load bandwidth is the GPU's (PCIe Gen5: 50 GB/s)
    assert r.loc["typed", "t_attn0_ms"] == 40 and r.loc["typed", "kv_gbps"] == 50
    # calibrated: hand calc t_attn0 = 1.5e-6*6000^2 = 54 ms, t_ffn0 = 0.06*6000 = 360 ms, t_fixed 15, B_eff 18
    assert r.loc["calibrated", "t_attn0_ms"] == pytest.approx(54.0, rel=1e-6)
    assert r.loc["calibrated", "t_ffn0_ms"] == pytest.approx(360.0, rel=1e-6)
    assert r.loc["calibrated", "t_fixed_ms"] == pytest.approx(15.0, rel=1e-6)
    assert r.loc["calibrated", "kv_gbps"] == pytest.approx(18.0, rel=1e-6)
    # decode: hand calc osl*tpot/batch = 200*7.5/1 = 1500 ms
    assert r.loc["calibrated", "t_decode_ms"] == pytest.approx(1500.0)
    # a typed kv_gbps wins over B_eff
    assert r.loc["outside", "kv_gbps"] == 40
    # Results load at hit_target over B_eff: hand calc 0.7*6000*131072/18e9*1000 = 30.583 ms
    res = plan.results.set_index("workload")
    assert res.loc["calibrated", "load_ms"] == pytest.approx(30.5835, abs=1e-3)
    # estimated (tp 4, BF16), issue 20: the embedding and LM head (catalog: vocab 128,256 x hidden
    # 8,192, untied: 2 x 1,050,673,152 = 2.101346304e9) are not per-token FLOPs:
    # 2*(70.6e9 - 2.101346304e9)*4096/4 = 1.40285243e14 FLOP per GPU at prefill_mfu 0.40 on the H100 SXM
    # (the roofline's reference GPU, issue 20 item 4): /(989.4e12 x 0.40) = 354.4705 ms (345.8249 at 0.41,
    # 248.7512 at 0.57, 315.0844 at 0.45); plus the tensor-parallel all-reduces, 2 per layer: 4096 tok x 160 x 8192 x 2 B x
    # 2*(3/4) = 16,106,127,360 B per GPU at 450 GB/s (NVLink 4) = 35.7914 ms
    assert r.loc["estimated", "t_ffn0_ms"] == pytest.approx(354.4705 + 35.7914, abs=2e-3)
    # t_fixed: prefill_request_ms 0 + prefill_layer_ms 0.15 x 80 layers = 12.0 ms + one read of the weights,
    # 70.6e9 x 2 B / 4 / 3.35 TB/s = 10.5373 ms (was 1.05 ms x 80 layers = 84 ms + the read)
    assert r.loc["estimated", "t_fixed_ms"] == pytest.approx(12.0 + 10.5373, abs=1e-3)


def test_warnings(built):
    plan, _ = built
    text = "\n".join(map(str, plan.warnings))
    assert "isl 64,000 lies outside the measured lengths 1,024-16,384" in text
    assert "(outside)" in text


def test_output_sheets(built):
    plan, out = built
    wb = openpyxl.load_workbook(out)
    assert "Calibration" in wb.sheetnames
    ws = wb["Resolved"]
    head = {c.value.split(" [")[0]: c.column for c in ws[1] if c.value}
    # the calibrated row's t_attn0 is a live formula over the Calibration parameters
    f = ws.cell(3, head["t_attn0_ms"]).value
    assert f.startswith("=IF(ISNUMBER(Workloads!") and "Calibration!" in f
    # the estimated row's t_attn0 is a live formula over Settings prefill_mfu and the GPU's peak
    # (issue 20 item 6), with its provenance
    cell = ws.cell(5, head["t_attn0_ms"])
    assert cell.value.startswith("=IF(ISNUMBER(Workloads!") and "s_prefill_mfu" in cell.value
    assert "gpus_bf16_tflops" in cell.value and "estimated by roofline" in cell.comment.text
    assert len(wb["Calibration"]._charts) == 1
    wb.close()


def _bad(tmp_path, meas, workloads=WORKLOADS):
    src = tmp_path / "bad.xlsx"
    write_input_workbook(src, MODELS, GPUS, workloads, {}, optional={"Measurements": meas})
    with pytest.raises(InputError) as e:
        build_plan(src)
    return [str(p) for p in e.value.problems]


def test_unknown_gpu_located(tmp_path):
    meas = _measurements()
    meas[2] = {**meas[2], "gpu": "H100x"}
    assert "Measurements!B4: gpu 'H100x' is not in GPUs" in _bad(tmp_path, meas)


def test_row_neither_calibrated_nor_estimable(tmp_path):
    # a team label the model catalog does not know, so nothing fills its heads
    wl = [dict(WORKLOADS[0]), {"workload": "lost", "model": "team-70b", "gpu": "H100", "isl": 4096,
                               **{**BASE, "tp": 2}}]
    models = [MODELS[0], {**{k: v for k, v in MODELS[1].items() if k != "heads"}, "model": "team-70b"}]
    src = tmp_path / "bad.xlsx"
    write_input_workbook(src, models, GPUS, wl, {})
    with pytest.raises(InputError) as e:
        build_plan(src)
    msg = str(e.value)
    assert "Workloads!" in msg and "3: workload 'lost'" in msg and "no Measurements for team-70b on 2x H100" in msg
    assert "Models.heads" in msg


def test_hit_out_of_range_and_zero_time_located(tmp_path):
    meas = _measurements()
    meas[0] = {**meas[0], "hit": 1.5}
    meas[1] = {**meas[1], "ttft_ms": 0}
    src = tmp_path / "bad.xlsx"
    write_input_workbook(src, MODELS, GPUS, WORKLOADS, {}, optional={"Measurements": meas})
    r = run_cli("run", src, "-o", tmp_path / "o.xlsx", "--no-memo", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert "Measurements!E2" in r.stderr and "Measurements!F3" in r.stderr
    assert not (tmp_path / "o.xlsx").exists()


def test_one_length_one_hit_scales_the_roofline(tmp_path):
    """Issue 20: one measured point (one length, one hit) is not thrown away: the roofline is scaled
    to it (a fitted efficiency), and the planner says so."""
    meas = [m for m in _measurements() if m["isl"] == 4096] * 2
    wl = [dict(WORKLOADS[1])]
    src = tmp_path / "one.xlsx"
    write_input_workbook(src, MODELS, GPUS, wl, {}, optional={"Measurements": meas})
    plan = build_plan(src)
    assert plan.results["breakdown_source"].iat[0] == "calibrated"
    # hand calc: measured TTFT(4096, 0) = 15 + 1.5e-6*4096^2 + 0.06*4096 = 15 + 25.165824 + 245.76
    # = 285.925824 ms. Roofline of Llama-3.1-8B at 100% of 989.4 TFLOPS on 1 GPU: linear params
    # 8.03e9 - 2*128,256*4,096 (embedding + LM head) = 6.979326848e9, 2*6.979326848e9*4096 FLOPs
    # = 57.17464e12 -> 57.7872 ms; attention 2*32*32*128*4096^2 = 4.398047e12 -> 4.44516 ms;
    # 62.2324 ms in all: efficiency 62.2324 / 285.925824 = 21.765% of peak
    attn1 = 2 * 32 * 32 * 128 * 4096**2 / 989.4e12 * 1e3
    ffn1 = 2 * (8.03e9 - 2 * 128_256 * 4096) * 4096 / 989.4e12 * 1e3
    measured = 15 + 1.5e-6 * 4096**2 + 0.06 * 4096
    fit = plan.calibration.fits[0]
    assert fit.method == "roofline-scaled"
    assert fit.efficiency == pytest.approx((attn1 + ffn1) / measured, rel=1e-9)
    assert fit.efficiency == pytest.approx(0.21765, abs=1e-5)
    # the workload (isl 6000) gets the scaled roofline: attention x (6000/4096)^2, linear x 6000/4096
    r = plan.resolved
    assert r["t_attn0_ms"].iat[0] == pytest.approx(attn1 / fit.efficiency * (6000 / 4096) ** 2, rel=1e-9)
    assert r["t_ffn0_ms"].iat[0] == pytest.approx(ffn1 / fit.efficiency * 6000 / 4096, rel=1e-9)
    text = "\n".join(map(str, plan.warnings))
    assert "the roofline is scaled to reproduce them instead, a fitted prefill efficiency of 21.8% of the dense peak" \
        in text


def test_production_hit_only_is_fitted_with_assumed_bandwidth(tmp_path):
    meas = []
    for isl in (2048, 8192, 16384):
        meas.append({"model": "Llama-3.1-8B", "gpu": "H100", "tp": 1, "isl": isl, "hit": 0.6,
                     "ttft_ms": float(ttft_law(isl, 0.6, T_FIXED, K_ATTN, K_FFN, S_8B, 50.0))})
    src = tmp_path / "prod.xlsx"
    write_input_workbook(src, MODELS, GPUS, [dict(WORKLOADS[1])], {}, optional={"Measurements": meas})
    plan = build_plan(src)
    f = plan.calibration.fits[0]
    assert f.ok and not f.b_fitted and f.b_gbps == 50.0 and f.max_abs_error < 1e-9
    assert any("cannot be told apart" in str(w) for w in plan.warnings)
    # no tpot_ms in these points: decode comes from the memory-bandwidth roofline, as for estimated rows
    # hand calc: batch blank -> the full-length requests whose KV fits (slofix item 3), max_seq_len 6200:
    #            floor((80 x 2^30 - 16.06e9) / (6200 x 131,072)) = floor(85.94) = 85 (< 256);
    #            200 steps x (8.03e9 params x 2 B + 85 x (6000 + 200/2) tokens x 131,072 B) / (3.35e12 B/s x 0.6)
    #            x 1000 ms/s / batch 85 = 98.36 ms
    b = math.floor((80 * 2**30 - 8.03e9 * 2) / (6200 * 131_072))
    assert b == 85 and plan.resolved["batch"].iat[0] == b
    want = 200 * (8.03e9 * 2 + b * (6000 + 200 / 2) * 131_072) / (3.35e12 * 0.6) * 1000 / b
    assert plan.resolved["t_decode_ms"].iat[0] == pytest.approx(want, rel=1e-12)
    assert "tpot_ms" in plan.calibration.filled[(0, "t_decode_ms")]
    # batch left blank: the estimate is at the HBM fit, and the planner says so
    assert any("t_decode_ms is estimated by the roofline at batch 85 (blank, so the full-length requests whose KV "
               "fits in HBM, at most 256)" in str(w) for w in plan.warnings)


@pytest.mark.libreoffice
def test_libreoffice_recalculation(built, recalc):
    """Every Resolved, Results and Calibration value recomputed by LibreOffice equals Python."""
    plan, out = built
    again = recalc(out)
    for sheet, frame in (("Resolved", plan.resolved), ("Results", plan.results)):
        rows = sheet_values(again, sheet)
        for i, row in enumerate(rows):
            for name, got in row.items():
                if name in frame:
                    assert same_value(frame[name].iat[i], got, rel=1e-7), (sheet, i, name, frame[name].iat[i], got)
    stored = value_book(out, "Calibration")["Calibration"]
    fresh = value_book(again, "Calibration")["Calibration"]
    n = 0
    for r_s, r_f in zip(stored.iter_rows(), fresh.iter_rows()):
        for a, b in zip(r_s, r_f):
            if isinstance(a.value, float):
                assert b.value == pytest.approx(a.value, rel=1e-7, abs=1e-12), a.coordinate
                n += 1
    assert n > 50
