"""Issue 16, Measurements from load tests at any concurrency: the old ``batch`` header is read as
``concurrency`` (the shared contract of issues 16 and 18)."""

from __future__ import annotations

import numpy as np
import openpyxl
import pytest

from planner.core.errors import InputError
from planner.workbook.input_sheets import write_input_workbook
from planner.inputs.reader import read_input

MODELS = [{"model": "Llama-3.1-8B", "layers": 32, "kv_heads": 8, "head_dim": 128, "kv_bytes": 2, "params_b": 8.03}]
GPUS = [{"gpu": "H100", "hbm_gib": 80, "pcie_gen": 5, "hbm_tbps": 3.35, "bf16_tflops": 989.4}]
WORKLOADS = [{"workload": "w", "model": "Llama-3.1-8B", "gpu": "H100", "tp": 1, "isl": 4096, "osl": 200,
              "hit_target": 0.5, "t_attn0_ms": 40, "t_ffn0_ms": 200}]
MEAS = [{"model": "Llama-3.1-8B", "gpu": "H100", "tp": 1, "isl": n, "hit": 0.0, "ttft_ms": t, "concurrency": c}
        for n, t, c in ((1024, 80.0, 8), (4096, 300.0, 16))]


def _rename_header(path, old: str, new: str, keep_old: bool = False) -> None:
    wb = openpyxl.load_workbook(path)
    ws = wb["Measurements"]
    for cell in ws[1]:
        if cell.value and str(cell.value).split(" [")[0] == old:
            if keep_old:
                ws.cell(1, ws.max_column + 1, new)
            else:
                cell.value = new
    wb.save(path)


def test_old_batch_header_is_read_as_concurrency(tmp_path):
    src = tmp_path / "in.xlsx"
    write_input_workbook(src, MODELS, GPUS, WORKLOADS, {}, optional={"Measurements": MEAS})
    _rename_header(src, "concurrency", "batch")
    t = read_input(src).optional["Measurements"]
    assert [r["concurrency"] for r in t.records] == [8, 16]
    assert "batch" not in t.records[0] and t.extras == []


def test_batch_and_concurrency_both_is_a_located_error(tmp_path):
    src = tmp_path / "in.xlsx"
    write_input_workbook(src, MODELS, GPUS, WORKLOADS, {}, optional={"Measurements": MEAS})
    _rename_header(src, "concurrency", "batch", keep_old=True)
    with pytest.raises(InputError) as e:
        read_input(src)
    assert "Measurements!" in str(e.value) and "appears twice" in str(e.value)


# ----------------------------------------------------------------------------- calibration under load
from planner.equations.ttft_fit import ttft_law  # noqa: E402
from planner.plan.build import build_plan  # noqa: E402
from sim_instance import simulate  # noqa: E402

S_8B = 131_072.0                       # hand calc: 2*32*8*128*2 (Llama-3.1-8B, BF16, tp 1)
T_FIXED, K_ATTN, K_FFN, B_EFF = 15.0, 1.5e-6, 0.06, 18.0   # the deployment the load tests come from
S0, S1, OSL = 10.0, 0.2, 100           # its decode-step law [ms], [ms/request] and output length
# the simulated server packs prefills into passes of 8192 new tokens (Settings max_num_batched_tokens,
# default); tests at c > 1 alone read the fixed cost per request (pass_fixed 0), so it is simulated so
SIM = dict(budget=8192.0, pass_fixed=0.0, stagger=1e-7)
PTS = [(1024, 0.0), (4096, 0.0), (8192, 0.0), (16384, 0.0), (8192, 0.8), (16384, 0.5)]
WL = [{"workload": "chat", "model": "Llama-3.1-8B", "gpu": "H100", "tp": 1, "isl": 6000, "osl": OSL,
       "hit_target": 0.3, "batch": 8}]


def _plan(tmp_path, meas, workloads=WL):
    src = tmp_path / "in.xlsx"
    write_input_workbook(src, MODELS, GPUS, workloads, {}, optional={"Measurements": meas})
    return build_plan(src)


def _sim_rows(c, R, stat="mean", with_throughput=False):
    """Measurements from the discrete-event simulation of the deployment at concurrency c."""
    out = []
    for isl, hit in PTS:
        p = float(ttft_law(isl, hit, T_FIXED, K_ATTN, K_FFN, S_8B, B_EFF))
        ttft, _tpot, _b = simulate(p, S0, S1, OSL, clients=c, n=R, tokens=isl * (1 - hit), **SIM)
        value = float(np.mean(ttft)) if stat == "mean" else float(np.quantile(ttft, 0.9))
        row = {"model": "Llama-3.1-8B", "gpu": "H100", "tp": 1, "isl": isl, "hit": hit, "ttft_ms": value,
               "concurrency": c, "num_requests": R, "ttft_stat": stat, "osl": OSL}
        if with_throughput:
            # hand calc: a wave of c takes c*P + osl*(s0 + s1*c): X = c*1000 / that [requests/s]
            row["request_throughput"] = c * 1000 / (c * p + OSL * (S0 + S1 * c))
        out.append(row)
    return out


@pytest.mark.parametrize("c,R,stat", [(8, 8, "mean"), (16, 40, "mean"), (8, 24, "p90")])
def test_ttft_at_concurrency_recovers_the_prefill_law(tmp_path, c, R, stat):
    plan = _plan(tmp_path, _sim_rows(c, R, stat))
    r = plan.resolved.iloc[0]
    # hand calc (the law the simulated tests came from): t_attn0 = 1.5e-6*6000^2 = 54 ms,
    # t_ffn0 = 0.06*6000 = 360 ms, t_fixed 15 ms, B_eff 18 GB/s
    assert r["t_attn0_ms"] == pytest.approx(54.0, rel=1e-4)
    assert r["t_ffn0_ms"] == pytest.approx(360.0, rel=1e-4)
    assert r["t_fixed_ms"] == pytest.approx(15.0, rel=1e-3)
    assert r["kv_gbps"] == pytest.approx(18.0, rel=1e-3)
    # read as request-alone time it would be (c+1)/2 = 4.5x too slow: the old reading is gone
    text = "\n".join(map(str, plan.warnings))
    assert "num_requests is blank" not in text


def test_throughput_pins_the_decode_chip_time(tmp_path):
    plan = _plan(tmp_path, _sim_rows(8, 16, with_throughput=True))
    r = plan.resolved.iloc[0]
    # hand calc: chip time per request 1000/X = P + osl*s(c)/c, so the decode per output token is
    # s(8)/8 = (10 + 0.2*8)/8 = 1.45 ms and t_decode = 100 * 1.45 = 145 ms
    assert r["t_decode_ms"] == pytest.approx(145.0, rel=1e-6)


def test_old_way_row_at_concurrency_is_read_with_the_model_and_warned(tmp_path):
    rows = _sim_rows(16, 16)
    for row in rows:
        del row["num_requests"], row["ttft_stat"], row["osl"]
    plan = _plan(tmp_path, rows)
    r = plan.resolved.iloc[0]
    assert r["t_ffn0_ms"] == pytest.approx(360.0, rel=1e-4)     # one wave of 16, packed
    # hand calc, row 2 (1024 tokens, 16 requests, passes of 8192): the first request alone (1024
    # tokens done), requests 2-9 end in pass 2 (9216 done), 10-16 in pass 3 (16384 done): TTFT =
    # done / 1024 prefills at F = 0, mean (1 + 8 x 9 + 7 x 16) / 16 = 185 / 16 = 11.5625
    warns = [w for w in plan.warnings if "num_requests is blank" in str(w)]
    assert len(warns) == len(PTS) and "Measurements row 2" in str(warns[0])
    assert "one wave of 16 requests" in str(warns[0]) and "TTFT = 11.6 request-alone prefills" in str(warns[0])


def test_measured_throughput_feeds_the_re_hit_correction(tmp_path):
    # two load tests of the workload's own shape (6000 in, 100 out) at concurrency 8, hits 0 and 0.75
    rows = _sim_rows(8, 16)
    shape = []
    for hit in (0.0, 0.75):
        p = float(ttft_law(6000, hit, T_FIXED, K_ATTN, K_FFN, S_8B, B_EFF))
        ttft, _t, _b = simulate(p, S0, S1, OSL, clients=8, n=16, tokens=6000 * (1 - hit), **SIM)
        x = 8 * 1000 / (8 * p + OSL * (S0 + S1 * 8))
        shape.append({"model": "Llama-3.1-8B", "gpu": "H100", "tp": 1, "isl": 6000, "hit": hit,
                      "ttft_ms": float(np.mean(ttft)), "concurrency": 8, "num_requests": 16, "osl": OSL,
                      "request_throughput": x})
    wl = [{**WL[0], "hit_target": 0.75}]
    plan = _plan(tmp_path, rows + shape, wl)
    res = plan.resolved.iloc[0]
    # tpm_measured from the first same-shape test: (6000 + 100) * X(0) * 60, at its hit 0
    assert res["tpm_measured"] == pytest.approx(6100 * shape[0]["request_throughput"] * 60, rel=1e-9)
    assert res["hit_measured"] == 0.0
    # the re-hit correction predicts the 75% run's measured throughput
    got = float(plan.results["tpm_delivered_target"].iloc[0])
    assert got == pytest.approx(6100 * shape[1]["request_throughput"] * 60, rel=1e-3)


def test_calibration_filled_tpm_and_hit_measured_are_listed_and_styled(tmp_path, monkeypatch):
    # notes/20.md: tpm_measured and hit_measured filled from a same-shape load test were in Resolved
    # only; they are now planner-filled cells like the breakdown (comment, italic, "filled:" note)
    from planner.workbook.writer import write_output

    p = float(ttft_law(6000, 0.0, T_FIXED, K_ATTN, K_FFN, S_8B, B_EFF))
    x = 8 * 1000 / (8 * p + OSL * (S0 + S1 * 8))       # hand calc as in the test above [requests/s]
    shape = [{"model": "Llama-3.1-8B", "gpu": "H100", "tp": 1, "isl": 6000, "hit": 0.0, "ttft_ms": p * 4.5,
              "concurrency": 8, "num_requests": 16, "osl": OSL, "request_throughput": x}]
    plan = _plan(tmp_path, _sim_rows(8, 16) + shape)
    tpm = 6100 * x * 60                                  # (isl + osl) * X * 60 [tokens/min]
    assert plan.resolved["tpm_measured"].iat[0] == pytest.approx(tpm, rel=1e-9)
    note = plan.filled_note
    assert "tpm_measured 1 (Workloads!" in note and "hit_measured 1 (Workloads!" in note
    out = tmp_path / "out.xlsx"
    write_output(plan, out)
    ws = openpyxl.load_workbook(out)["Workloads"]
    col = {str(c.value).split(" [")[0]: c.column_letter for c in ws[1] if c.value}
    tc, hc = ws[f"{col['tpm_measured']}2"], ws[f"{col['hit_measured']}2"]
    assert tc.value is None and tc.font.i and hc.value is None and hc.font.i
    assert f"{tpm:,.0f} tokens/min" in tc.comment.text and "measured throughput of Measurements row" in tc.comment.text
    assert "uses 0 (measured throughput of Measurements row" in hc.comment.text
