"""Workloads ``scheduler`` in the workbook (issue 16): the TTFT at a fixed concurrency under a
decode-first engine (planner.equations.decode_first), computed BY HAND below, then recalculated by
LibreOffice. The shape is tests/test_load_workbook.py's (Llama-3.1-8B on one H100, isl 4000, osl 200,
P = 400 ms, no fixed cost: F = 0, decode step s(16) = 32 ms split into S0 + 16 S1 by the bytes read).
"""

from __future__ import annotations

import math

import openpyxl
import pytest

from conftest import header_index, value_book
from planner.plan.build import build_plan
from planner.workbook.writer import write_output
from test_hand_calc import write_input
from test_load_workbook import BASE, GPUS, MODELS, S0, S1

WORKLOADS = [
    dict(workload="df-conc", demand_tpm=6_000_000, concurrency=8, ttft_slo_ms=2000, scheduler="decode_first", **BASE),
    dict(workload="pf-conc", demand_tpm=6_000_000, concurrency=8, ttft_slo_ms=2000, scheduler="prefill_first",
         **BASE),
    dict(workload="blank-conc", demand_tpm=6_000_000, concurrency=8, ttft_slo_ms=2000, **BASE),
]

# ----------------------------------------------------------------------------- by hand
# decode first, c = 8: b = 7 decodes beside a prompt, room 8192 - 7 = 8185 >= 2 x 4000 new tokens:
# two whole prompts fit in a step, so the followers come back in groups of n = 2 (the group law of
# planner.equations.decode_first); alone K = 1 pass, V = P - K F = 400 ms; step(x) = s + F + x V.
S_B = S0 + 7 * S1                                  # the decode step beside the prompts
T_A = S_B + 0.0 + 1 * 400.0                        # the head: step(1)
STEP2 = S_B + 0.0 + 2 * 400.0                      # a step of a group of two
G_A = T_A + STEP2                                  # the first group (2): the head's step, then its own
G_B = 2 * STEP2                                    # the middle groups (2 x 2): the previous group's step, then own
G_C = STEP2 + T_A                                  # the last (7 - 3 x 2 = 1): after a group of two, alone
MEAN = (T_A + 2 * G_A + 4 * G_B + 1 * G_C) / 8
P90 = G_B                                          # ordered [T_A, G_A, G_A, G_C, G_B x 4]: position 6.3 is G_B
# prefill first (and blank): the burst of 8 with F = 0, TTFT_j = D_j x 0.1 with D_j the tokens done at the
# end of request j's pass: 4000, 12192, 12192, 20384, 20384, 28576, 28576, 32000
BURST = [d * 0.1 for d in (4000, 12192, 12192, 20384, 20384, 28576, 28576, 32000)]
BURST_MEAN = sum(BURST) / 8
BURST_P90 = BURST[6] + 0.3 * (BURST[7] - BURST[6])
EXPECTED = {
    "df-conc": dict(ttft_steady_ms=MEAN, ttft_steady_p90_ms=P90, ttft_load_ms=MEAN, ttft_load_p90_ms=P90,
                    ttft_steady_slo_ms=P90, ttft_at_c_slo_ms=P90, instances_ttft=math.nan),   # 1,651 < 2,000: met
    "pf-conc": dict(ttft_steady_ms=math.nan, ttft_load_ms=BURST_MEAN, ttft_load_p90_ms=BURST_P90,
                    ttft_at_c_slo_ms=BURST_P90, instances_ttft="unreachable"),               # 2,960 > 2,000
    "blank-conc": dict(ttft_steady_ms=math.nan, ttft_load_ms=BURST_MEAN, ttft_load_p90_ms=BURST_P90,
                       ttft_at_c_slo_ms=BURST_P90, instances_ttft="unreachable"),
}


def test_hand_numbers_are_what_they_say():
    assert 1600 < P90 < 2000 < BURST_P90
    assert BURST_MEAN == pytest.approx((400 + 2 * 1219.2 + 2 * 2038.4 + 2 * 2857.6 + 3200) / 8, rel=1e-12)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("sched")
    src = d / "in.xlsx"
    write_input(src, MODELS, GPUS, WORKLOADS)
    # hit_step 0.5: the hit sweep at 3 points (0, 0.5, 1), not 21; compare_all still holds every sweep
    # column of every workload to Python, at fewer rows
    wb = openpyxl.load_workbook(src)
    wb["Settings"].append(["hit_step", 0.5])
    wb.save(src)
    plan = build_plan(src)
    out = d / "out.xlsx"
    write_output(plan, out)
    return src, plan, out


def _check(expected, got, where):
    if isinstance(expected, float) and math.isnan(expected):
        assert got is None or got == "" or (isinstance(got, float) and math.isnan(got)) \
            or (isinstance(got, str) and got == ""), where
    elif isinstance(expected, str):
        assert got == expected, where
    else:
        assert math.isclose(float(got), expected, rel_tol=1e-9), where


def test_results_match_hand_calculation(built):
    _src, plan, _out = built
    r = plan.results.set_index("workload")
    for wl, cols in EXPECTED.items():
        for col, v in cols.items():
            got = r.loc[wl, col]
            if v == "unreachable":
                assert math.isinf(float(got)) or got == "unreachable", f"{wl}.{col}: {got!r}"
                continue
            _check(v, got, f"{wl}.{col}: expected {v!r}, got {got!r}")
    assert (r["ttft_ms"] == 400).all()


@pytest.mark.libreoffice
def test_libreoffice_recalculates_the_scheduler_cells(built, recalc):
    _src, plan, out = built
    from test_recalc import compare_all
    again = recalc(out)
    assert compare_all(again, plan) > 0
    ws = value_book(again, "Results")["Results"]
    h = header_index(ws)
    for i, (wl, cols) in enumerate(EXPECTED.items()):
        for col, v in cols.items():
            _check(v, ws.cell(i + 2, h[col]).value, f"LibreOffice {wl}.{col}")


def test_the_blank_scheduler_is_said_at_its_row(built):
    from planner.plan.load_notes import warnings

    _src, plan, _out = built
    said = [str(p) for p in warnings(plan) if "scheduler blank" in str(p)]
    assert len(said) == 1 and "blank-conc" in said[0]
    # the target the decode-first row meets, the prefill-first one misses, said with the number held to it
    missed = [str(p) for p in warnings(plan) if "above ttft_slo_ms" in str(p)]
    assert len(missed) == 2 and not any("df-conc" in m for m in missed)
    assert f"{BURST_P90:,.0f} ms" in missed[0]


def test_the_blank_scheduler_is_a_filled_cell(built):
    """A blank scheduler beside a fixed concurrency is a choice that changes the TTFT (prefill first: the
    burst's p90 2,960 ms against decode first's 1,651 ms above), so it is filled as the catalog fills: named
    by validate's note, green italic with a comment in the output's Workloads sheet, counted on the Run
    sheet. The two rows that type it are not."""
    src, plan, out = built
    typed = openpyxl.load_workbook(src)["Workloads"]   # validate's note names the cell of the input workbook
    in_cell = typed.cell(row=4, column=header_index(typed)["scheduler"])
    assert in_cell.value is None
    wb = openpyxl.load_workbook(out)
    ws = wb["Workloads"]
    col = header_index(ws)["scheduler"]
    cell = ws.cell(row=4, column=col)            # blank-conc, the third workload (row 4)
    assert cell.value is None and cell.font.i
    assert "prefill_first" in cell.comment.text and "decode_first for a vLLM V1 server" in cell.comment.text
    for r in (2, 3):                             # df-conc and pf-conc typed theirs
        assert ws.cell(row=r, column=col).comment is None
    assert f"scheduler 1 (Workloads!{in_cell.coordinate})" in plan.filled_note
    run = {r[0]: r[1] for r in wb["Run"].iter_rows(values_only=True) if r and r[0]}
    assert "scheduler 1" in run["Workloads cells filled by the planner"]
