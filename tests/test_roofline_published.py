"""Issue 20 item 4: the roofline estimate (planner/equations/roofline.py) at the Settings defaults
against published cold (0% hit, concurrency 1) prefills, tests/data/published_prefill.csv, each row
cited in its ``source``. Rows are ``shaping`` (the defaults prefill_mfu and prefill_layer_ms were
chosen on them, as the tests below recompute), ``heldout`` (never used to choose anything) or ``excluded``
(outside what the roofline models: 16 GPUs over two nodes). ``python -m pytest -n 0 -s
tests/test_roofline_published.py`` prints the ratios the README quotes."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from planner.catalog import lookup as catalog
from planner.catalog.lookup import catalog_raw
from planner.core import schema
from planner.equations import roofline as est
from planner.plan.calibrate import s_kv_of

DATA = Path(__file__).parent / "data" / "published_prefill.csv"
DEFAULTS = {s.key: s.default for s in schema.SETTING_KEYS}


def _rows(which: str) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    with open(DATA, newline="") as fh:
        for row in csv.DictReader(fh):
            if row["set"] == which and float(row["hit"]) == 0:
                out.setdefault(row["dataset"], []).append(row)
    return out


def _rec(name: str, kind: str, **kw) -> dict:
    e = catalog.find(name, kind)
    if e is None and kind == "model":   # a model of the example's Models sheet, not in the catalog
        from planner.examples.data import MODELS

        r = dict(next(m for m in MODELS if m["model"] == name))
    else:
        r = dict(e.values)
        r[kind] = e.name
    r.update(kw)
    return r


def _ratio(rows: list[dict]) -> np.ndarray:
    """Roofline TTFT at 0 hit (t_fixed + t_attn0 + t_ffn0, Settings defaults) over the measured TTFT."""
    out = []
    for p in rows:
        mod = _rec(p["model"], "model", weight_bytes=float(p["weight_bytes"]), kv_bytes=2)
        tp = int(p["tp"])
        v, missing = est.estimate_row({"tp": tp, "isl": float(p["isl"]), "osl": 1}, mod, _rec(p["gpu"], "gpu"),
                                      s_kv_of(mod, tp), DEFAULTS["prefill_mfu"], DEFAULTS["decode_mbu"],
                                      catalog_raw(mod), DEFAULTS)
        assert not missing
        out.append((v["t_attn0_ms"] + v["t_ffn0_ms"] + v["t_fixed_ms"]) / float(p["ttft_ms"]))
    return np.array(out)


def _report(which: str) -> dict[str, np.ndarray]:
    got = {name: _ratio(rows) for name, rows in _rows(which).items()}
    for name, r in got.items():
        print(f"{which} {name}: roofline / measured {', '.join(f'{x:.2f}' for x in r)}")
    return got


def test_defaults_in_the_equations_are_the_schema_defaults():
    assert (est.PREFILL_MFU, est.PREFILL_MATMUL_EFF, est.PREFILL_LAYER_MS, est.W4A16_EFF) == (
        DEFAULTS["prefill_mfu"], DEFAULTS["prefill_matmul_eff"], DEFAULTS["prefill_layer_ms"],
        DEFAULTS["prefill_w4a16_eff"])
    # the reference balance is the catalog's H100 SXM
    g = _rec("H100 SXM", "gpu")
    assert (est.REF_PEAK_TFLOPS, est.REF_HBM_TBPS) == (g["bf16_tflops"], g["hbm_tbps"])


def test_shaping_points_within_half_and_twice_with_margin():
    """Dense (QwQ-32B on 4x H100 by vLLM and SGLang, on 2x H20) and MoE (DeepSeek-R1-AWQ on 8x H100)."""
    got = _report("shaping")
    assert {"ucm-qwq32b-4xh100", "sglang757-qwq32b-4xh100", "ucm-qwq32b-2xh20", "ucm-r1awq-8xh100"} <= set(got)
    allr = np.concatenate(list(got.values()))
    assert len(allr) == 17
    assert np.all((allr >= 0.5) & (allr <= 2.0)), got
    dense = np.concatenate([r for k, r in got.items() if "r1" not in k])
    assert np.all((dense >= 0.8) & (dense <= 1.5)), got   # the dense points with a wide margin


# held-out points outside [0.5, 2], each explained in the README ("what is left")
KNOWN_MISSES = {("nim-llama33-70b-fp8-2xh100", 500),           # TensorRT-LLM's fixed cost is ~8 ms
                ("tt379-llama32-90b-vision-4xh100", 1024), ("tt379-llama32-90b-vision-4xh100", 2048),
                ("tt379-llama32-90b-vision-4xh100", 3072), ("tt379-llama32-90b-vision-4xh100", 4096)}


def test_heldout_points_within_half_and_twice_but_the_known_misses():
    """Never used to choose a default: DeepSeek-R1-0528-AWQ on 8x H100 (vLLM, tenstorrent issue #356),
    Llama-3.3-70B FP8 on 2x H100 (TensorRT-LLM in NVIDIA NIM), Llama-3.2-90B-Vision on 4x H100 (vLLM,
    tenstorrent issue #379). Every point lies within [0.5, 2] except the README's known misses: the
    500-token NIM point (its engine's fixed cost is about 8 ms where the vLLM and SGLang sweeps the
    default comes from pay 35-96 ms) and the vision model beyond 128 tokens (measured at about 10% of
    the H100's peak, 4x slower per token than the dense 70B-class sweeps)."""
    got = _report("heldout")
    missed = set()
    for name, rows in _rows("heldout").items():
        for p, r in zip(rows, got[name]):
            if not 0.5 <= r <= 2.0:
                missed.add((name, int(float(p["isl"]))))
    assert missed == KNOWN_MISSES, missed
    assert sum(len(v) for v in got.values()) == 12


def test_excluded_multi_node_points_stay_what_the_readme_says():
    """DeepSeek-V3 on 16 H20 over two nodes: far slower than any single-node roofline (README)."""
    got = _report("excluded")
    assert np.all(got["ucm-dsv3-16xh20"] < 0.5)


def test_h20_runs_nearer_its_peak_than_an_h100_by_hand():
    # effective fraction of peak = 1 / (1/e + (1/mfu - 1/e) x (ref_hbm / ref_peak) x (peak / hbm)), e 0.8:
    # H100 SXM (the reference): 1 / (1.25 + 0.504386) = 0.57 exactly
    # H20: (1/0.57 - 1.25) x (3.35 / 989.4) x (148 / 4.0) = 0.504386 x 0.0033859 x 37 = 0.063188;
    #      1 / (1.25 + 0.063188) = 0.76151
    # A100 80GB: 0.504386 x 0.0033859 x (312 / 2.039) = 0.261323; 1 / 1.511323 = 0.66168
    for gpu, want in (("H100 SXM", 0.57), ("H20", 0.76151), ("A100 80GB", 0.66168)):
        g = _rec(gpu, "gpu")
        t = est.prefill_part_ms(1e15, 1, g["bf16_tflops"], 0.57, 0.8, g["hbm_tbps"])
        assert 1e15 / (g["bf16_tflops"] * 1e12) * 1e3 / t == pytest.approx(want, abs=5e-5)


def test_prefill_part_by_hand():
    # 1e15 FLOP on 4 H100 SXM (989.4 TFLOPS, 3.35 TB/s) at mfu 0.57: 2.5e14 / (989.4e12 x 0.57) s = 443.2954 ms;
    # the same with matrix products at 0.6 of the rate (W4A16): the matrix part 2.5e14 / (989.4e12 x 0.8 x
    # 0.6) = 526.4133 ms plus the memory part 2.5e14 x (1/0.57 - 1/0.8) / 989.4e12 = 127.4474 ms = 653.8607 ms
    assert est.prefill_part_ms(1e15, 4, 989.4, 0.57, 0.8, 3.35) == pytest.approx(443.2954, rel=1e-6)
    assert est.prefill_part_ms(1e15, 4, 989.4, 0.57, 0.8, 3.35, 0.6) == pytest.approx(653.8607, rel=1e-6)
    # prefill_mfu above the matrix efficiency: no memory term, the matrix products at prefill_mfu
    assert est.prefill_part_ms(1e15, 4, 989.4, 0.9, 0.8, 3.35) == pytest.approx(2.5e14 / (989.4e12 * 0.9) * 1e3)


def test_mla_prefill_counts_the_non_absorbed_widths():
    # DeepSeek-R1: keys qk_nope 128 + qk_rope 64 = 192 (head_dim), values v_head_dim 128: width (192+128)/2 = 160;
    # attention FLOPs at 4000 tokens 2 x 61 x 128 x 160 x 4000^2 = 3.99769e13 (absorbed 576 would be 3.6x)
    parts = est.roofline_parts(_rec("DeepSeek-R1", "model"), _rec("H100 SXM", "gpu"),
                               catalog_raw(_rec("DeepSeek-R1", "model")))
    assert parts["width"] == 160.0
    assert est.flops_attention(parts["layers"], parts["heads"], parts["width"], 4000) == pytest.approx(3.997696e13)


def test_w4a16_linear_layers_at_the_marlin_fraction_by_hand():
    # Llama-3.1-8B linear FLOPs on one H100: BF16 at 0.57 of peak; 4-bit weights: the matrix part at 0.8 x 0.6
    m4 = _rec("Llama-3.1-8B", "model", weight_bytes=0.5)
    m16 = _rec("Llama-3.1-8B", "model", weight_bytes=2)
    g = _rec("H100 SXM", "gpu")
    wl = {"tp": 1, "isl": 4096.0, "osl": 1}
    v4, _ = est.estimate_row(wl, m4, g, 1.0, 0.57, 0.6, catalog_raw(m4), DEFAULTS)
    v16, _ = est.estimate_row(wl, m16, g, 1.0, 0.57, 0.6, catalog_raw(m16), DEFAULTS)
    lin = est.flops_linear(est.roofline_parts(m16, g, catalog_raw(m16))["linear_params_b"], 4096)
    assert v16["t_ffn0_ms"] == pytest.approx(est.prefill_part_ms(lin, 1, 989.4, 0.57, 0.8, 3.35), rel=1e-12)
    assert v16["t_ffn0_ms"] == pytest.approx(lin / (989.4e12 * 0.57) * 1e3, rel=1e-12)   # the reference GPU
    assert v4["t_ffn0_ms"] == pytest.approx(est.prefill_part_ms(lin, 1, 989.4, 0.57, 0.8, 3.35, 0.6), rel=1e-12)
    assert v4["t_attn0_ms"] == v16["t_attn0_ms"]   # attention stays BF16
    # t_fixed: 1.05 ms x 32 layers = 33.6 ms + one weight read, 8.03e9 x 0.5 B / 3.35 TB/s = 1.19851 ms
    # (4-bit), 4.79403 ms (BF16)
    assert m4["layers"] == 32 and m4["params_b"] == pytest.approx(8.03)
    assert v4["t_fixed_ms"] == pytest.approx(33.6 + 1.19851, abs=1e-4)
    assert v16["t_fixed_ms"] == pytest.approx(33.6 + 4.79403, abs=1e-4)


def test_prefill_layer_ms_is_the_median_intercept_per_layer_of_the_shaping_sweeps():
    """Each shaping sweep's two shortest lengths give a line; its value at 0 tokens over the model's
    layers is the sweep's fixed cost per layer. By hand: UCM QwQ-32B 4x H100 (4000 223.05, 8000 350.47):
    223.05 - 127.42 = 95.63 ms / 64 = 1.4942; SGLang (192.38, 345.88): 38.88 / 64 = 0.6075; UCM H20
    (2000 531.1, 4000 1026.9): 35.3 / 64 = 0.5516; UCM R1-AWQ (429.3, 762.23): 96.37 / 61 = 1.5798;
    median (0.6075 + 1.4942) / 2 = 1.0509 -> 1.05."""
    per_layer = []
    for rows in _rows("shaping").values():
        (a, b) = sorted(rows, key=lambda p: float(p["isl"]))[:2]
        n1, t1, n2, t2 = float(a["isl"]), float(a["ttft_ms"]), float(b["isl"]), float(b["ttft_ms"])
        per_layer.append((t1 - (t2 - t1) / (n2 - n1) * n1) / _rec(a["model"], "model")["layers"])
    assert sorted(per_layer) == pytest.approx([0.5516, 0.6075, 1.4942, 1.5798], abs=1e-4)
    assert round(float(np.median(per_layer)), 2) == DEFAULTS["prefill_layer_ms"]


def test_prefill_mfu_is_the_least_squares_fit_on_the_dense_shaping_sweeps():
    """Sum of log(roofline / measured)^2 over the dense shaping rows is least at the default, among
    values 0.01 apart (every other Setting at its default)."""
    dense = [p for name, rows in _rows("shaping").items() if "r1" not in name for p in rows]

    def loss(mfu: float) -> float:
        global DEFAULTS
        keep = DEFAULTS
        try:
            DEFAULTS = dict(keep, prefill_mfu=mfu)
            return float(np.sum(np.log(_ratio(dense)) ** 2))
        finally:
            DEFAULTS = keep

    here = DEFAULTS["prefill_mfu"]
    assert loss(here) < loss(here - 0.01) and loss(here) < loss(here + 0.01)


def test_moe_activation_traffic_by_hand():
    # DeepSeek-R1 on 8 GPUs, 4000 tokens: 58 MoE layers x k 8 x (3 x 7168 + 6 x 2048 / 8) x 2 B
    # = 58 x 8 x 23,040 x 2 = 21,381,120 B per token; x 4000 = 85,524,480,000 B at 3.35 TB/s = 25.5297 ms
    assert est.moe_activation_ms(4000, 58, 8, 7168, 2048, 8, 3.35) == pytest.approx(85_524_480_000 / 3.35e12 * 1e3)
    parts = est.roofline_parts(_rec("DeepSeek-R1", "model"), _rec("H100 SXM", "gpu"),
                               catalog_raw(_rec("DeepSeek-R1", "model")))
    assert parts["moe"]["inter"] == 2048.0


# --------------------------------------------------------------------------- live in the workbook
def _set_setting(wb, key: str, value) -> None:
    ws = wb["Settings"]
    row = next((r for r in range(2, ws.max_row + 1) if ws.cell(r, 1).value == key), None)
    if row is None:             # an input made before the key existed: add its row
        row = ws.max_row + 1
        ws.cell(row, 1).value = key
    ws.cell(row, 2).value = value


@pytest.mark.libreoffice
def test_new_settings_edited_in_the_output_recalculate_to_a_fresh_run(recalc, tmp_path):
    """prefill_mfu, prefill_matmul_eff, prefill_layer_ms and prefill_w4a16_eff edited in the OUTPUT,
    recalculated by LibreOffice: the estimated rows' t_attn0/t_ffn0/t_fixed and the Results equal a fresh
    run of the equally edited input. On three of the example's workloads, its first two and the
    estimated one (sheet row 15), as test_live_cache's prefill_mfu edit (the whole example's
    recalculation costs ~9 s CPU against ~5 s here, and proves nothing more for these cells)."""
    import openpyxl

    from conftest import edited_example, same_value, sheet_values, trim_workloads
    from planner.plan.build import build_plan
    from planner.workbook.writer import write_output

    edits = {"prefill_mfu": 0.5, "prefill_matmul_eff": 0.7, "prefill_layer_ms": 2.0, "prefill_w4a16_eff": 0.5}
    small, _ = edited_example(tmp_path / "small.xlsx", lambda wb: trim_workloads(wb, 2, also=(15,)))
    out = tmp_path / "plan.xlsx"
    write_output(build_plan(small), out)
    wb = openpyxl.load_workbook(out)
    for k, v in edits.items():
        _set_setting(wb, k, v)
    edited = tmp_path / "edited.xlsx"
    wb.save(edited)
    done = recalc(edited)
    src = openpyxl.load_workbook(small)
    for k, v in edits.items():
        _set_setting(src, k, v)
    src_path = tmp_path / "in.xlsx"
    src.save(src_path)
    fresh = build_plan(src_path)
    est_rows = [i for i, s in enumerate(fresh.calibration.source) if s == "estimated"]
    assert est_rows
    live_res, live = sheet_values(done, "Resolved"), sheet_values(done, "Results")
    for i in est_rows:
        for col in ("t_attn0_ms", "t_ffn0_ms", "t_fixed_ms", "t_decode_ms"):
            assert same_value(float(fresh.resolved[col].iat[i]), live_res[i][col], rel=1e-9), (i, col)
    for i in range(len(fresh.results)):
        for col in ("ttft_ms", "tpm_delivered_target", "gpus_needed"):
            assert same_value(fresh.results[col].iat[i], live[i][col], rel=1e-9), (i, col)
