"""The note on a decode-first workload planned open loop (planner.plan.decode_first_note, issue 16): the
Results read the decode-first queue there (planner.equations.decode_first_slo, the DF_Search sheet), and the
note gives the request-alone queue's figures beside them and names the tables that still read it.
Shape of tests/test_load_workbook.py (P = 400 ms, F = 0, osl 200, decode step 32 ms at batch 16 split into
S0 + 16 S1 by the bytes read; max_num_batched_tokens the Settings default 8192); the expected values are
planner.equations.decode_first_slo at those hand inputs (checked by hand in tests/test_decode_first_slo.py),
so this test checks which cells the note reads."""

from __future__ import annotations

from planner.equations import decode_first_slo as dslo
from planner.equations import queueing as qu
from planner.plan.build import build_plan
from test_hand_calc import write_input
from test_load_workbook import BASE, GPUS, LAM_TOTAL, MODELS, S0, S1

WORKLOADS = [
    dict(workload="df-open", demand_tpm=6_000_000, ttft_slo_ms=1000, scheduler="decode_first", **BASE),
    dict(workload="pf-open", demand_tpm=6_000_000, ttft_slo_ms=1000, scheduler="prefill_first", **BASE),
    dict(workload="df-conc", demand_tpm=6_000_000, concurrency=8, scheduler="decode_first", **BASE),
]


def test_the_note_is_on_the_decode_first_open_row_only(tmp_path):
    src = tmp_path / "in.xlsx"
    write_input(src, MODELS, GPUS, WORKLOADS)
    plan = build_plan(src)
    notes = [str(p) for p in plan.warnings if "scheduler decode_first, planned open loop" in str(p)]
    assert len(notes) == 1 and "df-open" in notes[0], notes
    r = plan.results.set_index("workload")
    rate = float(r.loc["df-open", "load_rps"])
    row = (400.0, 0.0, 4000.0, 8192.0, S0, S1, 200.0)
    mean, p90 = (float(dslo.open_ttft_stat_ms(rate, *row, q)) for q in (0.0, 0.9))
    n = float(dslo.instances_ttft_df(LAM_TOTAL, *row, 1000.0, 0.9))
    # the Results are the decode-first queue now, and the note says so with their values
    assert float(r.loc["df-open", "ttft_load_ms"]) == mean and float(r.loc["df-open", "ttft_load_p90_ms"]) == p90
    assert float(r.loc["df-open", "instances_ttft"]) == n
    assert f"ttft_load_ms {mean:,.0f} ms and ttft_load_p90_ms {p90:,.0f} ms are the decode-first queue" in notes[0]
    assert f"needs instances_ttft {n:,.0f} under decode first" in notes[0]
    # beside them, the request-alone queue's (what the prefill-first row of the same shape reads)
    old_mean = 400.0 + float(qu.wait_mean_ms(rate, 400.0, plan.resolved.set_index("workload").loc["df-open", "t_decode_ms"],
                                             r.loc["df-open", "decode_step_ms"]))
    old_n = float(qu.instances_for_rho(LAM_TOTAL, 400.0, 1000.0, r.loc["df-open", "ttft_rho_max"]))
    assert old_n == float(r.loc["pf-open", "instances_ttft"])
    assert f"gives {old_mean:,.0f} ms" in notes[0] and f"{old_n:,.0f} by the request-alone queue" in notes[0]
    assert "Sensitivity_Hit's hit sweep reads the decode-first search at each hit (the DF_Search_Hit sheet)" in notes[0]
    assert "the Tornado's TTFT at load still reads the request-alone queue for this row" in notes[0]
    assert "Demand_Calc" not in notes[0]
    # the decode-first queue is above the request-alone one here, as the simulation says of it
    assert mean > old_mean
    assert "Results are the request-alone" not in notes[0]


def test_the_memo_finding_names_the_decode_first_queue(tmp_path):
    # the memo's "latency at the planned load" finding says which rows read the decode-first queue; a plan
    # without such a row keeps its text (the example's memo goldens, tests/test_memo.py)
    from planner.plan import load_notes

    src = tmp_path / "in.xlsx"
    write_input(src, MODELS, GPUS, WORKLOADS)
    text = next(f["text"] for f in load_notes.findings(build_plan(src)) if f["kind"] == "latency-at-load")
    assert "under decode first without a fixed concurrency (df-open) a prompt is prefilled in steps" in text
    write_input(src, MODELS, GPUS, WORKLOADS[1:])
    text = next(f["text"] for f in load_notes.findings(build_plan(src)) if f["kind"] == "latency-at-load")
    assert "decode first" not in text and "(M/G/1 queue, prefills before decode steps)." in text
