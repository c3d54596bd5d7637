"""Issue 20 item 4: the roofline estimate (planner/equations/roofline.py) at the Settings defaults
against published cold (0% hit, concurrency 1) prefills, tests/data/published_prefill.csv, each row
cited in its ``source``. Rows are ``shaping`` and ``heldout`` (together they chose prefill_mfu,
prefill_layer_ms and prefill_request_ms by one minimax rule, as the tests below recompute; the held-out
ones are those the previous landing never used), ``biased`` (tenstorrent's DeepSeek-R1-AWQ sweep: its
means include a cached repeat, so it is no cold prefill; it chose the defaults until trust5), ``new`` (found after the defaults were chosen, used for
nothing) or ``excluded`` (outside what the roofline models, the reason in the row's source: 16 GPUs over
two nodes; a vision deployment decoding at 3.5x its HBM bound). ``python -m pytest -n 0 -s
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
    assert (est.PREFILL_MFU, est.PREFILL_MATMUL_EFF, est.PREFILL_LAYER_MS, est.PREFILL_REQUEST_MS, est.W4A16_EFF) == (
        DEFAULTS["prefill_mfu"], DEFAULTS["prefill_matmul_eff"], DEFAULTS["prefill_layer_ms"],
        DEFAULTS["prefill_request_ms"], DEFAULTS["prefill_w4a16_eff"])
    # the reference balance is the catalog's H100 SXM
    g = _rec("H100 SXM", "gpu")
    assert (est.REF_PEAK_TFLOPS, est.REF_HBM_TBPS) == (g["bf16_tflops"], g["hbm_tbps"])


def test_shaping_points_within_half_and_twice_with_margin():
    """Dense (QwQ-32B on 4x H100 by vLLM and SGLang, on 2x H20; Llama-3-8B and -70B on H100 and A100 by
    TensorRT-LLM in NIM) and MoE (DeepSeek-R1-AWQ on 8x H100)."""
    got = _report("shaping")
    assert {"ucm-qwq32b-4xh100", "sglang757-qwq32b-4xh100", "ucm-qwq32b-2xh20", "ucm-r1awq-8xh100"} <= set(got)
    assert sum(k.startswith("dli-nim") for k in got) == 12
    allr = np.concatenate(list(got.values()))
    assert len(allr) == 53
    assert np.all((allr >= 0.5) & (allr <= 2.0)), got
    dense = np.concatenate([r for k, r in got.items() if "r1" not in k])
    assert np.all((dense >= 0.8) & (dense <= 1.8)), got   # the dense points with a margin


def test_heldout_points_within_half_and_twice():
    """Llama-3.3-70B FP8 on 2x H100 (TensorRT-LLM in NVIDIA NIM): every point within [0.5, 2] at the
    defaults (before the per-layer cost the 500-token NIM point was 2.86x)."""
    got = _report("heldout")
    allr = np.concatenate(list(got.values()))
    assert len(allr) == 2
    assert np.all((allr >= 0.5) & (allr <= 2.0)), got


def test_biased_points_are_reported_and_within_half_and_twice():
    """DeepSeek-R1-0528-AWQ on 8x H100 (vLLM, tenstorrent issue #356): means over 4 or 2 requests of which
    one is a repeat served from vLLM's prefix cache (the rows' source: 4,096 tokens at 120.1 ms below
    3,072 at 131.7 ms), so the cold TTFT is above the published mean and the ratio an upper bound. Not in
    the rule that chooses the defaults; at them 0.76 1.03 1.36 1.91 1.85."""
    got = _report("biased")
    assert set(got) == {"tt356-r1awq-8xh100"}
    r = got["tt356-r1awq-8xh100"]
    assert len(r) == 5 and np.all((r >= 0.5) & (r <= 2.0)), r


# new points outside [0.5, 2], each explained in the README: Qwen3-30B-A3B on one A100 (tenstorrent #340), the
# MoE estimated too slow; its 4,096- and 8,192-token means include a cached repeat (the rows' source)
NEW_MISSES = {("tt340-qwen3-30b-a3b-1xa100", 3072), ("tt340-qwen3-30b-a3b-1xa100", 4096),
              ("tt340-qwen3-30b-a3b-1xa100", 8192)}


def test_new_points_within_half_and_twice_but_the_known_misses():
    """Points found after the defaults were chosen and never used to choose anything: QwQ-32B on 4x H20
    (UCM pull request #656, vLLM, 'recalculation'), Llama-3.3-70B on 4x H100 (vllm-project/vllm issue
    #12101), Qwen3-30B-A3B (MoE) on one A100 (tenstorrent issue #340). 7 of 10 within [0.5, 2]; the
    misses are the MoE's three longest (2.04, 3.17, 2.23x: the roofline adds the 30 ms read of its 61 GB
    of weights, which a single GPU streams under the 2k-8k-token compute, and two of the three are means
    of two requests, one a cached repeat); the README prints the ratios."""
    got = _report("new")
    missed = set()
    for name, rows in _rows("new").items():
        for p, r in zip(rows, got[name]):
            if not 0.5 <= r <= 2.0:
                missed.add((name, int(float(p["isl"]))))
    assert missed == NEW_MISSES, missed
    assert sum(len(v) for v in got.values()) == 10


def test_excluded_points_stay_what_the_readme_says():
    """DeepSeek-V3 on 16 H20 over two nodes and Llama-3.2-90B-Vision on 4x H100 beyond 128 tokens: far
    slower than any single-node roofline of a standard deployment (README; the reasons in the rows)."""
    got = _report("excluded")
    assert np.all(got["ucm-dsv3-16xh20"] < 0.5)
    assert np.all(got["tt379-llama32-90b-vision-4xh100"][1:] < 0.5)


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
    # t_fixed: 0 ms per request + 0.15 ms x 32 layers = 4.8 ms + one weight read, 8.03e9 x 0.5 B / 3.35
    # TB/s = 1.19851 ms (4-bit), 4.79403 ms (BF16); a dense model has no MoE padding
    assert m4["layers"] == 32 and m4["params_b"] == pytest.approx(8.03)
    assert v4["t_fixed_ms"] == pytest.approx(4.8 + 1.19851, abs=1e-4)
    assert v16["t_fixed_ms"] == pytest.approx(4.8 + 4.79403, abs=1e-4)


def test_published_intercepts_grow_with_depth_and_differ_by_engine():
    """Each sweep's two shortest lengths give a line; its value at 0 tokens is the sweep's fixed cost
    (with the weight read the roofline counts apart). By hand: UCM QwQ-32B 4x H100 (4000 223.05, 8000
    350.47): 223.05 - 127.42 = 95.63 ms; SGLang (192.38, 345.88): 38.88 ms; UCM H20 (2000 531.1, 4000
    1026.9): 35.3 ms; UCM R1-AWQ (429.3, 762.23): 96.37 ms; NIM Llama-3.3-70B FP8 (500 47.77, 5000
    406.77): 7.88 ms; NIM (DLI data) Llama-3-8B FP8 on one H100 (199.652 8.8732, 1999.67 34.6832):
    8.8732 - 25.81 x 199.652 / 1800.018 = 6.01 ms, Llama-3-8B FP16 on one A100 11.02 ms, Llama-3-70B FP16
    on 4x H100 20.60 ms, on 4x A100 29.99 ms. TensorRT-LLM's grow with the model (32 layers: 6-11 ms, 80
    layers: 18-30 ms, 0.2-0.4 ms per layer); vLLM's and SGLang's are 35-96 ms over 61-64 layers. One
    constant per request cannot hold both; a cost per layer, with prefill_mfu, is what the minimax picks."""
    got = {}
    for which in ("shaping", "heldout"):
        for name, rows in _rows(which).items():
            (a, b) = sorted(rows, key=lambda p: float(p["isl"]))[:2]
            n1, t1, n2, t2 = float(a["isl"]), float(a["ttft_ms"]), float(b["isl"]), float(b["ttft_ms"])
            got[name] = t1 - (t2 - t1) / (n2 - n1) * n1
    want = {"ucm-qwq32b-4xh100": 95.63, "sglang757-qwq32b-4xh100": 38.88, "ucm-qwq32b-2xh20": 35.3,
            "ucm-r1awq-8xh100": 96.37, "nim-llama33-70b-fp8-2xh100": 7.88, "dli-nim-llama3-8b-1xh100-fp8": 6.01,
            "dli-nim-llama3-8b-1xa100-fp16": 11.02, "dli-nim-llama3-70b-4xh100-fp16": 20.60,
            "dli-nim-llama3-70b-4xa100-fp16": 29.99}
    for name, ms in want.items():
        assert got[name] == pytest.approx(ms, abs=0.01), name


def _fixed_free(mfu: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(roofline without the per-request and per-layer costs [ms], layers, measured [ms]) of every
    shaping and held-out point at ``prefill_mfu`` ``mfu``, the other Settings at their defaults."""
    var, layers, meas = [], [], []
    st = dict(DEFAULTS, prefill_layer_ms=0.0, prefill_request_ms=0.0, prefill_mfu=mfu)
    for which in ("shaping", "heldout"):
        for rows in _rows(which).values():
            for p in rows:
                mod = _rec(p["model"], "model", weight_bytes=float(p["weight_bytes"]), kv_bytes=2)
                tp = int(p["tp"])
                v, _ = est.estimate_row({"tp": tp, "isl": float(p["isl"]), "osl": 1}, mod, _rec(p["gpu"], "gpu"),
                                        s_kv_of(mod, tp), mfu, st["decode_mbu"], catalog_raw(mod), st)
                var.append(v["t_attn0_ms"] + v["t_ffn0_ms"] + v["t_fixed_ms"])
                layers.append(float(mod["layers"]))
                meas.append(float(p["ttft_ms"]))
    return np.array(var), np.array(layers), np.array(meas)


MFU_GRID = np.round(np.arange(0.36, 0.601, 0.01), 2)
REQUEST_GRID = np.arange(0, 41, 1.0)                   # prefill_request_ms [ms]
LAYER_GRID = np.round(np.arange(0, 0.801, 0.01), 2)    # prefill_layer_ms [ms]


def _minimax_choice() -> tuple[float, float, float, float]:
    """The defaults' rule: over the grid of (prefill_mfu, prefill_request_ms, prefill_layer_ms) the
    largest |log(roofline / measured)| over every shaping and held-out point is least; among the
    triples within 1% of that least worst ratio, the one with the least root-mean-square log error.
    Returns (mfu, request_ms, layer_ms, worst ratio)."""
    out = []
    for mfu in MFU_GRID:
        var, layers, meas = _fixed_free(float(mfu))
        lr = np.log((var + LAYER_GRID[None, :, None] * layers + REQUEST_GRID[:, None, None]) / meas)
        worst, rms = np.max(np.abs(lr), axis=2), np.sqrt(np.mean(lr ** 2, axis=2))
        out += [(float(worst[i, j]), float(rms[i, j]), float(mfu), float(REQUEST_GRID[i]), float(LAYER_GRID[j]))
                for i, j in zip(*np.nonzero(worst <= worst.min() + np.log(1.01)))]
    best = min(o[0] for o in out)
    w, _, mfu, b, a = min((o for o in out if o[0] <= best + np.log(1.01)), key=lambda o: o[1])
    return mfu, b, a, float(np.exp(w))


def test_defaults_are_the_minimax_over_every_published_point():
    """prefill_mfu, prefill_request_ms and prefill_layer_ms together: the minimax rule of
    :func:`_minimax_choice` over the 55 shaping and held-out points (steps 0.01, 1 ms, 0.01 ms). Its
    worst ratio lies inside [0.5, 2] (1.91x: UCM's DeepSeek-R1-AWQ at 0.52 against NIM's Llama-3.3-70B
    FP8 at 1.90 bind it); the previous defaults (0.57, 1.05 ms per layer) gave 4.3x on these points (the
    200-token NIM Llama-3-8B FP8 point on one H100), the first change (0.51, 32 ms per request) 4.3x too.
    With the biased tenstorrent sweep in the rule (as until trust5) it chose 0.41, 0 ms, 0.16 ms."""
    var, layers, meas = _fixed_free(DEFAULTS["prefill_mfu"])
    assert len(meas) == 55
    assert _minimax_choice()[:3] == (DEFAULTS["prefill_mfu"], DEFAULTS["prefill_request_ms"], DEFAULTS["prefill_layer_ms"])
    here = np.exp(np.max(np.abs(np.log((var + DEFAULTS["prefill_layer_ms"] * layers + DEFAULTS["prefill_request_ms"])
                                       / meas))))
    assert 1.85 < here < 2.0
    for mfu, b, a in ((0.57, 0.0, 1.05), (0.51, 32.0, 0.0)):
        v, ly, m = _fixed_free(mfu)
        assert np.exp(np.max(np.abs(np.log((v + a * ly + b) / m)))) > 4.0


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


SETTINGS_EDITS = {"prefill_mfu": 0.5, "prefill_matmul_eff": 0.7, "prefill_layer_ms": 2.0,
                  "prefill_w4a16_eff": 0.5, "prefill_request_ms": 12.0}


def _settings_case(d: Path) -> dict:
    """The example's first two workloads and the estimated one (sheet row 15), planned, and
    SETTINGS_EDITS made in a copy of the output and in a copy of the input."""
    import openpyxl

    from conftest import edit_output, edited_example, trim_workloads
    from planner.plan.build import build_plan
    from planner.workbook.writer import write_output

    # hit_step 0.5: the test reads Resolved and Results, not the hit sweep (3 rows a workload, not 21)
    small, _ = edited_example(d / "small.xlsx",
                              lambda wb: (trim_workloads(wb, 2, also=(15,)), _set_setting(wb, "hit_step", 0.5)))
    out = d / "plan.xlsx"
    write_output(build_plan(small), out)
    edited, src_path = d / "settings-edited.xlsx", d / "in.xlsx"
    edit_output(out, edited, lambda wb: [_set_setting(wb, k, v) for k, v in SETTINGS_EDITS.items()], "Settings")
    wb = openpyxl.load_workbook(small)
    for k, v in SETTINGS_EDITS.items():
        _set_setting(wb, k, v)
    wb.save(src_path)
    return {"edited": edited, "src": src_path}


def _moe_case(d: Path) -> dict:
    """A MoE row estimated by the roofline (DeepSeek-R1, 4-bit weights, 8x H100) at 500 and 4,000
    tokens, planned; Settings edited in a copy of the output and of the input."""
    import openpyxl

    from conftest import edit_output
    from planner.plan.build import build_plan
    from planner.workbook.input_sheets import write_input_workbook
    from planner.workbook.writer import write_output

    models = [{"model": "DeepSeek-R1", "kv_bytes": 2, "weight_bytes": 0.5}]
    gpus = [{"gpu": "H100 SXM"}]
    wl = [{"workload": f"r1-{n}", "model": "DeepSeek-R1", "gpu": "H100 SXM", "tp": 8, "isl": n, "osl": 100,
           "hit_target": 0.5} for n in (500, 4000)]
    src = d / "in.xlsx"
    # hit_step 0.5: the test reads Resolved and Results, not the hit sweep (3 rows a workload, not 21)
    write_input_workbook(src, models, gpus, wl, {"hit_step": 0.5})
    plan = build_plan(src)
    out = d / "moe-plan.xlsx"  # the names of one LibreOffice batch differ
    write_output(plan, out)
    edits = {"prefill_request_ms": 10.0, "prefill_mfu": 0.6, "prefill_w4a16_eff": 0.5}
    edited, src2 = d / "moe-edited.xlsx", d / "in2.xlsx"
    edit_output(out, edited, lambda wb: [_set_setting(wb, k, v) for k, v in edits.items()], "Settings")
    wb = openpyxl.load_workbook(src)
    for k, v in edits.items():
        _set_setting(wb, k, v)
    wb.save(src2)
    return {"plan": plan, "out": out, "edited": edited, "src2": src2}


@pytest.fixture(scope="module")
def recalculated(lo_profile, tmp_path_factory) -> dict:
    """The workbooks of the two LibreOffice tests below recalculated by ONE LibreOffice process
    (libreoffice.recalculate_many: its start, ~1.3 s CPU, is paid once)."""
    from libreoffice import recalculate_many

    d = tmp_path_factory.mktemp("roofline-recalc")
    (d / "settings").mkdir()
    (d / "moe").mkdir()
    settings, moe = _settings_case(d / "settings"), _moe_case(d / "moe")
    done = recalculate_many([settings["edited"], moe["out"], moe["edited"]], d / "recalc", profile=lo_profile)
    settings["done"], moe["done"] = done[0], done[1:]
    return {"settings": settings, "moe": moe}


@pytest.mark.libreoffice
def test_new_settings_edited_in_the_output_recalculate_to_a_fresh_run(recalculated):
    """prefill_mfu, prefill_matmul_eff, prefill_layer_ms, prefill_request_ms and prefill_w4a16_eff edited in the OUTPUT,
    recalculated by LibreOffice: the estimated rows' t_attn0/t_ffn0/t_fixed and the Results equal a fresh
    run of the equally edited input. On three of the example's workloads, its first two and the
    estimated one (sheet row 15), as test_live_cache's prefill_mfu edit (the whole example's
    recalculation costs ~9 s CPU against ~5 s here, and proves nothing more for these cells)."""
    from conftest import same_value, sheet_values
    from planner.plan.build import build_plan

    case = recalculated["settings"]
    done = case["done"]
    fresh = build_plan(case["src"])
    est_rows = [i for i, s in enumerate(fresh.calibration.source) if s == "estimated"]
    assert est_rows
    live_res, live = sheet_values(done, "Resolved"), sheet_values(done, "Results")
    for i in est_rows:
        for col in ("t_attn0_ms", "t_ffn0_ms", "t_fixed_ms", "t_decode_ms"):
            assert same_value(float(fresh.resolved[col].iat[i]), live_res[i][col], rel=1e-9), (i, col)
    for i in range(len(fresh.results)):
        for col in ("ttft_ms", "tpm_delivered_target", "gpus_needed"):
            assert same_value(fresh.results[col].iat[i], live[i][col], rel=1e-9), (i, col)


def test_moe_block_and_padding_by_hand():
    """vLLM's fused MoE row block (fused_marlin_moe: the first of 8, 16, 32, 48, 64 with N k / E / block
    < 0.9) and the padding rows it costs. DeepSeek-R1 (E 256, k 8): 100 tokens -> 3.125 rows per expert,
    3.125 / 8 = 0.39 -> block 8; 500 -> 15.6: /8 = 1.95, /16 = 0.98, /32 = 0.49 -> 32; 4000 -> 125:
    /64 = 1.95, no block qualifies -> 64. Padding at block 64: 256 x 32 rows x 2 x 3 x 7168 x 2048 x 58
    layers = 4.1850161e13 FLOPs, at the W4A16 rate on 8 H100 SXM: the matrix part 4.1850161e13 / 8 /
    (989.4e12 x 0.8 x 0.6) = 11.01524 ms plus the memory part 4.1850161e13 / 8 x (1/0.40 - 1/0.8) /
    989.4e12 = 5.2312701e12 x 1.25 / 989.4e12 = 6.60914 ms = 17.62438 ms."""
    assert list(est.moe_block_m(np.array([100, 500, 4000]), 256, 8)) == [8.0, 32.0, 64.0]
    assert est.moe_pad_flops(64, 256, 58, 7168, 2048) == pytest.approx(4.1850161e13, rel=1e-7)
    t = est.prefill_part_ms(est.moe_pad_flops(64, 256, 58, 7168, 2048), 8, 989.4, 0.40, 0.8, 3.35, 0.6)
    assert float(t) == pytest.approx(11.01524 + 6.60914, abs=1e-4)
    # in the estimate: t_fixed = 0 per request + 0.15 x 61 layers = 9.15 ms + one read of the 4-bit
    # weights (671.03e9 x 0.5 / 8 / 3.35e12 = 12.51922 ms) + the padding
    mod = _rec("DeepSeek-R1", "model", weight_bytes=0.5, kv_bytes=2)
    v, _ = est.estimate_row({"tp": 8, "isl": 4000.0, "osl": 1}, mod, _rec("H100 SXM", "gpu"), s_kv_of(mod, 8),
                            DEFAULTS["prefill_mfu"], DEFAULTS["decode_mbu"], catalog_raw(mod), DEFAULTS)
    assert v["t_fixed_ms"] == pytest.approx(9.15 + 12.51922 + 17.62438, abs=1e-4)


def test_moe_experts_sharded_by_tensor_parallelism_one_assumption():
    """vLLM shards the experts by tensor parallelism unless --enable-expert-parallel (vllm/config/
    parallel.py, enable_expert_parallel: bool = False): the MoE layer ends in an all-reduce like a dense
    MLP, so DeepSeek-R1 on 8 GPUs pays 2 all-reduces per layer (4000 tokens: 4000 x 122 x 7168 x 2 B x
    2 x 7/8 = 12,242,944,000 B per GPU at 450 GB/s = 27.20654 ms) and no all-to-all; its routed activation
    traffic is every GPU's (moe_activation_ms, 25.52970 ms at 3.35 TB/s, test_moe_activation_traffic_by_hand).
    t_ffn0 = linear layers + the two: the linear part at the W4A16 rate, 2 x 35.69664192e9 x 4000 /
    8 = 3.5696642e13 FLOPs: / (989.4e12 x 0.48) = 75.16475 ms + x (1/0.40 - 1/0.8) / 989.4e12 = 3.5696642e13
    x 1.25 / 989.4e12 = 45.09885 ms."""
    assert float(est.tp_all_reduce_ms(4000, 122, 7168, 8)) == pytest.approx(12_242_944_000 / 450e9 * 1e3, rel=1e-12)
    mod = _rec("DeepSeek-R1", "model", weight_bytes=0.5, kv_bytes=2)
    v, _ = est.estimate_row({"tp": 8, "isl": 4000.0, "osl": 1}, mod, _rec("H100 SXM", "gpu"), s_kv_of(mod, 8),
                            DEFAULTS["prefill_mfu"], DEFAULTS["decode_mbu"], catalog_raw(mod), DEFAULTS)
    assert v["t_ffn0_ms"] == pytest.approx(75.16475 + 45.09885 + 27.20654 + 25.52970, abs=1e-3)


@pytest.mark.libreoffice
def test_moe_estimate_recalculates_to_a_fresh_run(recalculated):
    """A MoE row estimated by the roofline (DeepSeek-R1, 4-bit weights, 8x H100) at 500 and 4,000
    tokens (fused-MoE row blocks 32 and 64): its t_fixed_ms (per request, weight read, padding rows) and
    t_ffn0_ms (linear layers, routed activations, all-reduces) are live. Settings edited in the OUTPUT,
    recalculated by LibreOffice, equal a fresh run of the equally edited input; the unedited output
    equals the plan."""
    from conftest import same_value, sheet_values
    from planner.plan.build import build_plan

    case = recalculated["moe"]
    plan = case["plan"]
    assert list(plan.calibration.source) == ["estimated", "estimated"]
    fresh = build_plan(case["src2"])
    for path, want in zip(case["done"], (plan, fresh)):  # the stored output and the edited one
        live = sheet_values(path, "Resolved")
        for i in range(2):
            for col in ("t_attn0_ms", "t_ffn0_ms", "t_fixed_ms"):
                assert same_value(float(want.resolved[col].iat[i]), live[i][col], rel=1e-9), (path.name, i, col)
    assert fresh.resolved["t_fixed_ms"].iat[1] != plan.resolved["t_fixed_ms"].iat[1]
