"""Red team 8: the decode-first open loop's live count search (DF_Search), against an independent search.

The independent count: the smallest n whose TTFT statistic at Λ/n (decode_first_slo.open_ttft_stat_ms)
meets the target, by doubling then integer bisection (the statistic falls with the count).
"""

from __future__ import annotations

import numpy as np
import pytest

from planner.equations import decode_first_slo as dslo

ROW = (300.0, 75.0, 2000.0, 8192.0, 20.0, 0.3, 200.0)               # P, F, u, M, s0, s1, osl


def _stat(rate, q):
    return float(dslo.open_ttft_stat_ms(rate, *ROW, q))


def _truth(R, slo, q):
    def ok(n):
        t = _stat(R / n, q)
        return np.isfinite(t) and t <= slo
    hi = 1
    while not ok(hi):
        hi *= 2
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        hi, lo = (mid, lo) if ok(mid) else (hi, mid)
    return hi


@pytest.mark.parametrize("R, slo, q", [(1000.0, 300.0003, 0.0), (1000.0, 300.0003, 0.9),
                                       (1e5, 300.01, 0.5), (1e5, 300.01, 0.99)])
def test_a_count_beyond_the_search_is_not_a_silent_wrong_count(R, slo, q):
    # a target barely above the request-alone prefill: the count is beyond n_lo + 16,777,215, which the
    # 24-bit descent cannot reach; it returned n_lo - 1 + 2^24 (a count that misses the target, e.g.
    # 16,777,814 for 270,667,087 at p90) where it must not give a count that misses
    want = _truth(R, slo, q)
    got = float(dslo.search_instances(R, *ROW, slo, q))
    assert want > 2 ** dslo.SEARCH_BITS
    if np.isfinite(got):
        assert got == want
    t = _stat(R / got, q) if np.isfinite(got) else np.inf
    assert not (np.isfinite(t) and t > slo), (got, want, t)


@pytest.mark.parametrize("R, slo, q", [(10.0, 300.0003, 0.0), (10.0, 300.01, 0.9), (10.0, 301.0, 0.99),
                                       (5000.0, 320.0, 0.0), (3000.0, 900.0, 0.99), (0.01, 350.0, 0.5)])
def test_the_count_within_the_search_is_the_independent_count(R, slo, q):
    assert float(dslo.search_instances(R, *ROW, slo, q)) == _truth(R, slo, q)


# ----------------------------------------------------------------------------- in the workbook, live
import math  # noqa: E402

from conftest import edit_output, header_index, value_book  # noqa: E402
from planner.plan.build import build_plan  # noqa: E402
from planner.workbook.input_sheets import write_input_workbook  # noqa: E402
from planner.workbook.writer import write_output  # noqa: E402
from test_decode_first_results import BASE, GPUS, MODELS  # noqa: E402

TPM_1 = 2200 * 60          # 1 request/s of 2,000 + 200 tokens; the engine is ROW (P = 300 ms at hit 0)
BEYOND = [dict(workload="df-beyond", demand_tpm=1e5 * TPM_1, ttft_slo_ms=300.01, slo_percentile="p90", **BASE)]


@pytest.fixture(scope="module")
def beyond(tmp_path_factory):
    d = tmp_path_factory.mktemp("rt8")
    src = d / "in.xlsx"
    write_input_workbook(src, MODELS, GPUS, BEYOND, {"hit_step": 0.25})
    plan = build_plan(src)
    out = d / "out.xlsx"
    write_output(plan, out)
    return plan, out


def test_the_results_say_unreachable_beyond_the_search(beyond):
    plan, _out = beyond
    r = plan.results.set_index("workload").loc["df-beyond"]
    # 812,041,888 instances by the independent search; 16,837,213 (a count that misses the target) before
    assert _truth(1e5, 300.01, 0.9) == 812041888
    assert float(r["instances_ttft"]) == np.inf and r["binding"] == "unreachable: ttft_slo"


@pytest.mark.libreoffice
def test_libreoffice_agrees_beyond_the_search_and_after_an_edit(beyond, recalc, tmp_path):
    plan, out = beyond

    def demand(wb):                     # 100,000 -> 10 requests/s: 81,205 instances, within the search
        ws = wb["Workloads"]
        assert ws.cell(2, 1).value == "df-beyond"
        ws.cell(2, header_index(ws)["demand_tpm"]).value = 10 * TPM_1

    edited = edit_output(out, tmp_path / "edited.xlsx", demand, "Workloads")
    got, got_e = recalc(out, edited)
    for sheet in ("Results", "DF_Search"):
        want, have = value_book(out, sheet)[sheet], value_book(got, sheet)[sheet]
        for rw, rh in zip(want.iter_rows(values_only=True), have.iter_rows(values_only=True)):
            for a, b in zip(rw, rh):
                if isinstance(a, (int, float)) and isinstance(b, (int, float)):
                    assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9), (sheet, rw[0], a, b)
                else:
                    assert (a in (None, "")) == (b in (None, "")) and (a in (None, "") or a == b), (sheet, a, b)
    res = value_book(got, "Results")["Results"]
    h = header_index(res)
    assert res.cell(2, h["instances_ttft"]).value == "unreachable"
    fresh = build_plan(edited).results.set_index("workload").loc["df-beyond"]
    assert float(fresh["instances_ttft"]) == _truth(10.0, 300.01, 0.9) == 81205
    res_e = value_book(got_e, "Results")["Results"]
    for name in ("instances_ttft", "instances_needed", "ttft_load_ms", "ttft_load_p90_ms"):
        assert float(res_e.cell(2, h[name]).value) == pytest.approx(float(fresh[name]), rel=1e-9), name


def test_the_note_says_the_count_is_beyond_the_search(beyond):
    from planner.plan import decode_first_note
    plan, _out = beyond
    (note,) = decode_first_note.warnings(plan)
    assert "beyond the DF_Search sheet's search" in note.message and "16,777,215" in note.message


def test_the_note_of_a_row_without_a_target(tmp_path):
    from planner.plan import decode_first_note
    src = tmp_path / "in.xlsx"
    write_input_workbook(src, MODELS, GPUS, [dict(workload="df-free", demand_tpm=10 * TPM_1, **BASE)], {"hit_step": 0.25})
    (note,) = decode_first_note.warnings(build_plan(src))
    assert "decode-first queue" in note.message and "TTFT target" not in note.message


def test_the_warnings_and_the_memo_do_not_say_the_target_is_below_a_request_alone(beyond):
    # 300.01 ms is above the request-alone 300 ms: the count is beyond the search, not a target below P
    from planner.plan import load_notes
    plan, _out = beyond
    texts = [p.message for p in load_notes.warnings(plan)]
    assert not any("is not above the request-alone TTFT" in t for t in texts), texts
    assert any("beyond its search" in t for t in texts), texts
    (un,) = [f for f in load_notes.findings(plan, limit=4) if f["kind"] == "unreachable"]
    assert "below what one request alone takes" not in un["text"] and "beyond the decode-first search" in un["text"]


def test_a_period_beyond_the_search_is_said(tmp_path):
    # today 10 requests/s: 81,205 instances; in 2027-Q3 100,000 requests/s: beyond the search, so that
    # period's count leaves the target out (61,000 by throughput, fewer than today's) -- said, not silent
    from planner.finance import periods as pr
    src = tmp_path / "in.xlsx"
    row = dict(workload="g", demand_tpm=10 * TPM_1, ttft_slo_ms=300.01, slo_percentile="p90", **BASE)
    dem = [dict(workload="g", period="2027-Q1", demand_tpm=10 * TPM_1),
           dict(workload="g", period="2027-Q3", demand_tpm=1e5 * TPM_1)]
    write_input_workbook(src, MODELS, GPUS, [row], {"hit_step": 0.25}, optional={"Demand": dem})
    from planner.finance.period_notes import with_period_notes
    plan = with_period_notes(build_plan(src))
    calc = pr.period_calc(plan).set_index("period")
    assert float(calc.loc["2027-Q1", "instances_ttft"]) == 81205
    assert float(calc.loc["2027-Q3", "instances_ttft"]) == np.inf
    assert float(calc.loc["2027-Q3", "instances"]) < 81205
    said = [p.message for p in plan.warnings if "2027-Q3" in p.message and "beyond" in p.message]
    assert len(said) == 1 and "DF_Search_Periods" in said[0], [p.message for p in plan.warnings]
    # the library's build_plan says it too, as planner run and validate do
    import planner

    assert [p.message for p in planner.build_plan(src).warnings if "2027-Q3" in p.message] == said


def test_a_baseline_beyond_the_search_is_not_said_to_be_unmeetable_at_any_count(tmp_path):
    from planner.plan import load_notes
    src = tmp_path / "in.xlsx"
    row = dict(workload="bb", demand_tpm=1e5 * TPM_1, ttft_slo_ms=300.01, slo_percentile="p90",
               **{**BASE, "hit_target": 0.5})
    write_input_workbook(src, MODELS, GPUS, [row], {"hit_step": 0.25})
    plan = build_plan(src)
    r = plan.results.iloc[0]
    assert np.isfinite(float(r["instances_ttft"])) and float(r["instances_ttft_baseline"]) == np.inf
    (f,) = [f for f in load_notes.findings(plan) if f["kind"] == "baseline-unreachable"]
    assert "decode-first search reaches" in f["text"]
