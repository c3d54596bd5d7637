"""Issue 20, red team 7: a finance workbook built from ``planner template`` as an analyst would (README
walk-through), with hit ratios by period, growth, demand per day, two models, two GPU types and a load test;
every Fleet_By_Period and Summary number checked against a hand calculation written here (its own
arithmetic, not the planner's functions).

The workbook (filled into the template's sheets cell by cell, the headers as the template writes them):

* ``chat-8b-h100``: Llama-3.1-8B on 1x H100-SXM (USD 2.50/h), isl 1,000, osl 200, typed times t_attn0 10,
  t_ffn0 90, t_decode 1,000 ms; a load test of 60,000 tokens/min at hit_measured 0.2; hit_target 0.3,
  hit_baseline 0.2, demand 5,000,000 tokens/min; Demand: 60% from 2027-Q2 (typed in Q2, Q3, Q4, demand
  blank: grown), 2027-Q4 demand 8,640,000,000 tokens/day (= 6,000,000 tokens/min).
* ``rag-72b-h200``: Qwen2.5-72B on 4x H200 (USD 3.50/h), isl 4,000, osl 300, hit_target 0.5, hit_baseline 0.3,
  demand 2,000,000 tokens/min, its own growth 20% a period; times blank: calibrated from a Measurements
  load test of 7 points made from the law t_fixed 20 ms + 2e-6 ms/token^2 N^2 (1 - h^2) + 0.05 ms/token
  N (1 - h) + h N S / 50 GB/s (alpha 0), S = 2 x 80 x 8 x 128 x 2 / 4 = 81,920 B/token/GPU, and
  tpot 12 ms at concurrency 1 (t_decode = 300 x 12 = 3,600 ms).
* Settings: target_utilization 0.8, periods 2027-Q1..2027-Q4, demand_growth 10% a period.

By hand, chip time C(h) = TTFT(h) + t_decode:

* chat: load = h x 1,000 x 131,072 / 50e9 s; compute = 10 (1 - h^2) + 90 (1 - h); C(0.2) = 1,082.124288
  ms; TPM(h) = 60,000 x C(0.2) / C(h) (re-hit corrected from the load test); instances = ceil(d / (0.8 TPM)).
* rag: TTFT(h) = 20 + 32 (1 - h^2) + 200 (1 - h) + h x 4,000 x 81,920 / 50e9 s (the law of the points; the
  fit's alpha and B_eff are a ridge, (1 - alpha) / B = 1/50, and give the same TTFT while load < compute);
  TPM = 4,300 x 60,000 / C(h); GPUs = 4 ceil(d / (0.8 TPM)).
"""

from __future__ import annotations

import math

import openpyxl
import pytest

from conftest import value_book
from planner.examples.build import write_template
from planner.plan.build import build_plan
from planner.workbook.writer import write_output

H = 730.0
PRICE = {"H100-SXM": 2.5, "H200": 3.5}
PERIODS = ["2027-Q1", "2027-Q2", "2027-Q3", "2027-Q4"]


def _chat_c(h):   # [ms]
    return h * 1000 * 131_072 / 50e9 * 1e3 + 10 * (1 - h * h) + 90 * (1 - h) + 1000


def _rag_c(h):    # [ms]
    return 20 + 32 * (1 - h * h) + 200 * (1 - h) + h * 4000 * 81_920 / 50e9 * 1e3 + 3600


def chat_gpus(d, h):
    return math.ceil(d / (0.8 * 60_000 * _chat_c(0.2) / _chat_c(h)))


def rag_gpus(d, h):
    return 4 * math.ceil(d / (0.8 * 4300 * 60_000 / _rag_c(h)))


# per period: (chat demand, chat hit), (rag demand); rag at 0.5 everywhere, baselines 0.2 and 0.3
CHAT = {"2027-Q1": (5e6, 0.3), "2027-Q2": (5e6 * 1.1, 0.6), "2027-Q3": (5e6 * 1.1 ** 2, 0.6),
        "2027-Q4": (8.64e9 / 1440, 0.6)}
RAG = {p: 2e6 * 1.2 ** k for k, p in enumerate(PERIODS)}


def hand_rows():
    """Fleet_By_Period by hand: (period, gpu) -> (gpus, cost, gpus_baseline, cost_baseline, saved)."""
    out = {}
    for p in PERIODS:
        d, h = CHAT[p]
        g, gb = chat_gpus(d, h), chat_gpus(d, 0.2)
        out[(p, "H100-SXM")] = (g, g * 2.5 * H, gb, gb * 2.5 * H, (gb - g) * 2.5 * H)
        g, gb = rag_gpus(RAG[p], 0.5), rag_gpus(RAG[p], 0.3)
        out[(p, "H200")] = (g, g * 3.5 * H, gb, gb * 3.5 * H, (gb - g) * 3.5 * H)
    return out


def test_hand_rows_are_the_ones_written_here():
    # the hand numbers themselves, so a change of the derivation is seen: chat Q1 5e6 / (0.8 x 60,516.6) =
    # 103.3 -> 104 (baseline 5e6 / 48,000 = 104.2 -> 105); rag Q1 2e6 / (0.8 x 68,850.1) = 36.3 -> 37 -> 148
    rows = hand_rows()
    assert [rows[(p, "H100-SXM")][0] for p in PERIODS] == [104, 111, 122, 121]
    assert [rows[(p, "H100-SXM")][2] for p in PERIODS] == [105, 115, 127, 125]
    assert [rows[(p, "H200")][0] for p in PERIODS] == [148, 176, 212, 252]
    assert [rows[(p, "H200")][2] for p in PERIODS] == [148, 180, 212, 256]


def _fill(ws, rows):
    cols = {str(c.value).split(" [")[0]: c.column for c in ws[1] if c.value}
    for r in range(2, ws.max_row + 1):
        for c in range(1, ws.max_column + 1):
            ws.cell(r, c).value = None
    for i, row in enumerate(rows):
        for k, v in row.items():
            ws.cell(2 + i, cols[k]).value = v


def _law(n, h):
    return 20 + 2e-6 * n * n * (1 - h * h) + 0.05 * n * (1 - h) + h * n * 81_920 / 50e9 * 1e3


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    d = tmp_path_factory.mktemp("rt7fin")
    src = d / "q.xlsx"
    write_template(src)
    wb = openpyxl.load_workbook(src)
    _fill(wb["Models"], [{"model": "Llama-3.1-8B", "kv_bytes": 2, "weight_bytes": 2},
                         {"model": "Qwen2.5-72B", "kv_bytes": 2, "weight_bytes": 2}])
    _fill(wb["GPUs"], [{"gpu": g, "hourly_cost": c} for g, c in PRICE.items()])
    _fill(wb["Workloads"], [
        {"workload": "chat-8b-h100", "model": "Llama-3.1-8B", "gpu": "H100-SXM", "tp": 1, "isl": 1000, "osl": 200,
         "hit_measured": 0.2, "hit_target": 0.3, "t_attn0_ms": 10, "t_ffn0_ms": 90, "t_decode_ms": 1000,
         "tpm_measured": 60000, "demand_tpm": 5_000_000, "hit_baseline": 0.2},
        {"workload": "rag-72b-h200", "model": "Qwen2.5-72B", "gpu": "H200", "tp": 4, "isl": 4000, "osl": 300,
         "hit_target": 0.5, "hit_baseline": 0.3, "demand_tpm": 2_000_000, "demand_growth": 0.2}])
    ws = wb["Settings"]
    keys = {ws.cell(r, 1).value: r for r in range(2, ws.max_row + 1)}
    for k, v in {"target_utilization": 0.8, "periods": "2027-Q1..2027-Q4", "demand_growth": 0.1}.items():
        r = keys.get(k) or ws.max_row + 1
        ws.cell(r, 1).value, ws.cell(r, 2).value = k, v
    _fill(wb["Demand"], [
        {"workload": "chat-8b-h100", "period": "2027-Q2", "hit_target": 0.6},
        {"workload": "chat-8b-h100", "period": "2027-Q3", "hit_target": 0.6},
        {"workload": "chat-8b-h100", "period": "2027-Q4", "demand_tpm": 8_640_000_000, "demand_unit": "tokens/day",
         "hit_target": 0.6}])
    _fill(wb["Measurements"], [{"model": "Qwen2.5-72B", "gpu": "H200", "tp": 4, "isl": n, "hit": h,
                                "ttft_ms": round(_law(n, h), 6), "osl": 300, "tpot_ms": 12, "concurrency": 1}
                               for n, h in [(1000, 0), (2000, 0), (4000, 0), (8000, 0), (4000, 0.5), (8000, 0.5),
                                            (8000, 0.8)]])
    wb.save(src)
    plan = build_plan(src)
    o = d / "plan.xlsx"
    write_output(plan, o)
    return plan, o


def test_the_load_test_calibrates_the_law_it_was_made_from(out):
    plan, _ = out
    res = plan.resolved.set_index("workload")
    assert res.at["rag-72b-h200", "t_attn0_ms"] == pytest.approx(32.0, rel=1e-4)   # 2e-6 x 4,000^2
    assert res.at["rag-72b-h200", "t_ffn0_ms"] == pytest.approx(200.0, rel=1e-4)   # 0.05 x 4,000
    assert res.at["rag-72b-h200", "t_fixed_ms"] == pytest.approx(20.0, rel=1e-4)
    assert res.at["rag-72b-h200", "t_decode_ms"] == pytest.approx(3600.0, rel=1e-12)  # 300 x 12 / 1
    r = plan.results.set_index("workload")
    # TTFT at 0.5 by the law: 20 + 32 x 0.75 + 200 x 0.5 + 0.5 x 4,000 x 81,920 / 50e9 s = 147.2768 ms
    assert r.at["rag-72b-h200", "ttft_ms"] == pytest.approx(147.2768, rel=1e-4)


def test_fleet_by_period_by_hand(out):
    _, o = out
    rows = list(value_book(o, "Fleet_By_Period")["Fleet_By_Period"].iter_rows(values_only=True))
    head = [str(h).split(" [")[0] if h else h for h in rows[0]]
    got = {(r[0], r[1]): dict(zip(head, r)) for r in rows[1:] if r[0] in PERIODS}
    want = hand_rows()
    assert set(got) == set(want)
    for key, (g, c, gb, cb, saved) in want.items():
        row = got[key]
        assert (row["gpus_needed"], row["gpus_baseline"]) == (g, gb), key
        assert row["cost_per_month"] == pytest.approx(c, abs=1e-6), key
        assert row["cost_per_month_baseline"] == pytest.approx(cb, abs=1e-6), key
        assert row["cost_saved_per_month"] == pytest.approx(saved, abs=1e-6), key


def test_summary_by_hand(out):
    _, o = out
    rows = [r for r in value_book(o, "Summary")["Summary"].iter_rows(values_only=True) if r and r[0] is not None]
    by = {}
    for r in rows:
        by.setdefault(r[0], r)
    want = hand_rows()
    # today's fleet is the first period's (today's demand and hit): 104 + 148 = 252 GPUs,
    # 104 x 2.5 x 730 + 148 x 3.5 x 730 = 189,800 + 378,140 = USD 567,940 a month
    assert by["Total"][2] == 252 and by["Total"][3] == pytest.approx(567_940.0)
    assert by["Cost per hour [USD]"][1] == pytest.approx(104 * 2.5 + 148 * 3.5)            # 778
    assert by["Cost per month [USD] (730 h)"][1] == pytest.approx(567_940.0)
    assert by["Cost per quarter [USD]"][1] == pytest.approx(567_940.0 * 3)
    assert by["Cost per year [USD]"][1] == pytest.approx(567_940.0 * 12)
    # savings at today's demand: baselines 105 + 148 = 253 GPUs, USD 569,765; saved 1 GPU, USD 1,825
    assert by["GPUs"][1:4] == (253, 252, 1)
    assert by["Cost per month [USD]"][1:4] == pytest.approx((569_765.0, 567_940.0, 1_825.0))
    # demand 5,000,000 + 2,000,000 tokens/min
    assert by["Demand [tokens/min]"][1] == pytest.approx(7_000_000.0)
    for p in PERIODS:
        g = sum(want[(p, t)][0] for t in PRICE)
        gb = sum(want[(p, t)][2] for t in PRICE)
        assert by[p][1] == g and by[p][3] == gb, p
        assert by[p][2] == pytest.approx(sum(want[(p, t)][1] for t in PRICE)), p
        assert by[p][4] == pytest.approx(sum(want[(p, t)][3] for t in PRICE)), p
        assert by[p][5] == pytest.approx(sum(want[(p, t)][4] for t in PRICE)), p
    # 2027-Q1: 252 GPUs, USD 567,940; 2027-Q4: 121 + 252 = 373 GPUs, 121 x 1,825 + 252 x 2,555 = USD 864,685
    assert (by["2027-Q1"][1], by["2027-Q4"][1], by["2027-Q4"][2]) == (252, 373, pytest.approx(864_685.0))


def test_the_memo_headline_and_subject_by_hand(out):
    from planner.memo.render import build_memo

    plan, o = out
    m = build_memo(plan, o, charts=False)
    # savings over the periods: (1,825 + 17,520 + 9,125 + 17,520) / 4 = USD 11,497.5 on average
    saved = [sum(hand_rows()[(p, t)][4] for t in PRICE) for p in PERIODS]
    assert saved == [1825.0, 17520.0, 9125.0, 17520.0]
    assert ("For 2027-Q1–Q4, the plan needs 252 GPUs (USD 567,940 per month) in 2027-Q1 and 373 GPUs "
            "(USD 864,685 per month) in 2027-Q4; against the baseline hit ratios the hit targets save USD 11,498 "
            "per month on average over the periods.") in m.markdown
    assert "252 to 373 GPUs, USD 567,940 to 864,685 per month" in m.subject
