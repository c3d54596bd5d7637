"""Issue 20 item 4: the roofline estimate (planner/equations/roofline.py) at the Settings defaults
against published cold (0% hit, concurrency 1) prefills, tests/data/published_prefill.csv, each row
cited in its ``source``. Rows are ``shaping`` (the defaults prefill_flop_per_byte and
prefill_fixed_ms were chosen on them), ``heldout`` (never used to choose anything) or ``excluded``
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
    assert (est.PREFILL_MFU, est.PREFILL_FLOP_PER_BYTE, est.PREFILL_FIXED_MS, est.W4A16_EFF) == (
        DEFAULTS["prefill_mfu"], DEFAULTS["prefill_flop_per_byte"], DEFAULTS["prefill_fixed_ms"],
        DEFAULTS["prefill_w4a16_eff"])


def test_shaping_points_within_half_and_twice_with_margin():
    """Dense (QwQ-32B on 4x H100 by vLLM and SGLang, on 2x H20) and MoE (DeepSeek-R1-AWQ on 8x H100)."""
    got = _report("shaping")
    assert {"ucm-qwq32b-4xh100", "sglang757-qwq32b-4xh100", "ucm-qwq32b-2xh20", "ucm-r1awq-8xh100"} <= set(got)
    allr = np.concatenate(list(got.values()))
    assert len(allr) == 17
    assert np.all((allr >= 0.5) & (allr <= 2.0)), got
    dense = np.concatenate([r for k, r in got.items() if "r1" not in k])
    assert np.all((dense >= 0.8) & (dense <= 1.5)), got   # the dense points with a wide margin


def test_heldout_points_within_half_and_twice():
    """Never used to choose a default: DeepSeek-R1-0528-AWQ on 8x H100 (tenstorrent issue #356)."""
    got = _report("heldout")
    allr = np.concatenate(list(got.values()))
    assert len(allr) == 5
    assert np.all((allr >= 0.5) & (allr <= 2.0)), got


def test_excluded_multi_node_points_stay_what_the_readme_says():
    """DeepSeek-V3 on 16 H20 over two nodes: far slower than any single-node roofline (README)."""
    got = _report("excluded")
    assert np.all(got["ucm-dsv3-16xh20"] < 0.5)


def test_h20_runs_nearer_its_peak_than_an_h100_by_hand():
    # additive roofline, effective fraction of peak = 1 / (1/mfu + peak/(hbm x flop_per_byte)):
    # H100 SXM: 1 / (1/0.8 + 989.4/(3.35 x 336)) = 1 / (1.25 + 0.87901) = 0.46970
    # H20:      1 / (1/0.8 + 148/(4.0 x 336))    = 1 / (1.25 + 0.11012) = 0.73523
    for gpu, want in (("H100 SXM", 0.46970), ("H20", 0.73523)):
        g = _rec(gpu, "gpu")
        t = est.prefill_part_ms(1e15, 1, g["bf16_tflops"], 0.8, g["hbm_tbps"], 336.0)
        assert 1e15 / (g["bf16_tflops"] * 1e12) * 1e3 / t == pytest.approx(want, abs=5e-5)


def test_prefill_part_by_hand():
    # 1e15 FLOP on 4 GPUs of 989.4 TFLOPS at 0.8 and 3.35 TB/s at 336 FLOP/B:
    # 2.5e14 x (1/(989.4e12 x 0.8) + 1/(3.35e12 x 336)) s = 2.5e14 x (1.26339e-15 + 8.88415e-16) = 0.537952 s
    assert est.prefill_part_ms(1e15, 4, 989.4, 0.8, 3.35, 336.0) == pytest.approx(537.952, rel=1e-5)


def test_mla_prefill_counts_the_non_absorbed_widths():
    # DeepSeek-R1: keys qk_nope 128 + qk_rope 64 = 192 (head_dim), values v_head_dim 128: width (192+128)/2 = 160;
    # attention FLOPs at 4000 tokens 2 x 61 x 128 x 160 x 4000^2 = 3.99769e13 (absorbed 576 would be 3.6x)
    parts = est.roofline_parts(_rec("DeepSeek-R1", "model"), _rec("H100 SXM", "gpu"),
                               catalog_raw(_rec("DeepSeek-R1", "model")))
    assert parts["width"] == 160.0
    assert est.flops_attention(parts["layers"], parts["heads"], parts["width"], 4000) == pytest.approx(3.997696e13)


def test_w4a16_linear_layers_at_the_marlin_fraction_by_hand():
    # Llama-3.1-8B-class linear FLOPs at 0.5-byte weights on one H100: the same FLOPs at mfu 0.8 x 0.6 = 0.48
    m4 = _rec("Llama-3.1-8B", "model", weight_bytes=0.5)
    m16 = _rec("Llama-3.1-8B", "model", weight_bytes=2)
    g = _rec("H100 SXM", "gpu")
    wl = {"tp": 1, "isl": 4096.0, "osl": 1}
    v4, _ = est.estimate_row(wl, m4, g, 1.0, 0.8, 0.6, catalog_raw(m4), DEFAULTS)
    v16, _ = est.estimate_row(wl, m16, g, 1.0, 0.8, 0.6, catalog_raw(m16), DEFAULTS)
    lin = est.flops_linear(est.roofline_parts(m16, g, catalog_raw(m16))["linear_params_b"], 4096)
    assert v16["t_ffn0_ms"] == pytest.approx(est.prefill_part_ms(lin, 1, 989.4, 0.8, 3.35, 336.0), rel=1e-12)
    assert v4["t_ffn0_ms"] == pytest.approx(est.prefill_part_ms(lin, 1, 989.4, 0.48, 3.35, 336.0), rel=1e-12)
    assert v4["t_attn0_ms"] == v16["t_attn0_ms"]   # attention stays BF16
    # t_fixed: 70 ms + one weight read, 8.03e9 x 0.5 B / 3.35 TB/s = 1.19851 ms (4-bit), 4.79403 ms (BF16)
    params = m4["params_b"]
    assert v4["t_fixed_ms"] == pytest.approx(70.0 + params * 1e9 * 0.5 / 3.35e12 * 1e3, rel=1e-12)
    assert v16["t_fixed_ms"] == pytest.approx(70.0 + params * 1e9 * 2 / 3.35e12 * 1e3, rel=1e-12)
