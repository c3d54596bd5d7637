"""A located note on each decode-first workload planned open loop (issue 16): its Results' latency at load
(``ttft_load_ms``, ``ttft_load_p90_ms``) and the TTFT target's count (``instances_ttft``, hence
``instances_needed`` and ``binding``; at hit_baseline ``instances_ttft_baseline``, hence
``instances_baseline`` and the savings) are the decode-first queue (``planner.equations.decode_first_slo``: the
prompt's time beside the decode batch, ``P_df``; the count by the live search of the DF_Search sheet,
``planner.workbook.df_search``), not the M/G/1 prefill queue with the request-alone prefill ``P`` that
prefill first reads, which the independent simulation puts low under decode first (median 6-14% at
utilisations 0.3-0.7, worst -36%: tests/test_decode_first_open.py, tests/test_decode_first_slo.py). The note
gives the request-alone queue's figures beside them, and says what still reads that queue for the row (the
Tornado's TTFT at load, so that a driver's swing is not the change of law; Sensitivity_Hit's hit sweep reads
the decode-first search at each hit, DF_Search_Hit), so that neither the change nor what is left is silent
(docs/model.md, "The scheduler").
"""

from __future__ import annotations

import numpy as np

from planner.core.errors import Problem
from planner.core.places import Place
from planner.equations import decode_first_slo as dslo
from planner.equations import queueing as qu


def _f(frame, name) -> np.ndarray:
    return np.asarray(frame[name].to_numpy(), dtype=float)


def _count(x) -> str:
    x = float(x)
    return "blank" if np.isnan(x) else "unreachable" if np.isinf(x) else f"{x:,.0f}"


def beyond_search(plan, sfx: str = "") -> np.ndarray:
    """Where a decode-first row planned open loop has its TTFT count ``instances_ttft`` (``sfx``
    "_baseline": at hit_baseline) unreachable though its target is above a request alone (``max(P, K F)``):
    every count the DF_Search sheet's search tries misses the target, i.e. the count is beyond
    at least ``n_lo + 16,777,215`` (:func:`planner.equations.decode_first_slo.search_count`), not a target below
    what one request alone takes."""
    return beyond_rows(plan.results, plan.resolved, sfx)


def beyond_rows(r, res, sfx: str = "") -> np.ndarray:
    """:func:`beyond_search` on any frames that hold the Results (``r``) and Resolved (``res``) columns it
    reads: also Demand_Calc for both (:mod:`planner.finance.period_notes`)."""
    sched = res["scheduler"].astype(str).str.strip().str.lower().to_numpy()
    P = _f(r, "ttft_ms" + sfx) if "ttft_ms" + sfx in r else _f(r, "ttft_ms")
    with np.errstate(all="ignore"):
        u = _f(r, "burst_new_tokens" + sfx) if "burst_new_tokens" + sfx in r else _f(r, "burst_new_tokens")
        alone = dslo.open_ttft_stat_ms(0.0, P, np.nan_to_num(_f(res, "pass_fixed_ms"), nan=0.0), u,
                                       _f(res, "max_num_batched_tokens"), _f(r, "step_weights_ms"),
                                       _f(r, "step_kv_ms"), _f(res, "osl"), 0.0)
    n = _f(r, "instances_ttft" + sfx)
    return dslo.open_loop_df(sched, _f(res, "concurrency")) & np.isinf(n) & (_f(res, "ttft_slo_ms") > alone)


def warnings(plan) -> list[Problem]:
    """One Problem per decode-first workload without a fixed concurrency and with a load to plan."""
    r, res = plan.results, plan.resolved
    sched = res["scheduler"].astype(str).str.strip().str.lower().to_numpy()
    conc, rate = _f(res, "concurrency"), _f(r, "load_rps")
    pick = dslo.open_loop_df(sched, conc) & np.isfinite(rate) & (rate > 0)
    if not pick.any():
        return []
    P = _f(r, "ttft_ms")
    with np.errstate(all="ignore"):
        old_mean, old_p90 = P + _f(r, "prefill_wait_ms"), P + _f(r, "prefill_wait_p90_ms")
        old_n = qu.instances_for_rho(_f(r, "demand_rps_open"), P, _f(res, "ttft_slo_ms"), _f(r, "ttft_rho_max"))
        b = dslo.load_batch_df(sched, conc, rate, P, np.nan_to_num(_f(res, "pass_fixed_ms"), nan=0.0),
                               _f(r, "burst_new_tokens"), _f(res, "max_num_batched_tokens"), _f(r, "step_weights_ms"),
                               _f(r, "step_kv_ms"), _f(res, "osl"))
        p_df = dslo.service_df_ms(P, np.nan_to_num(_f(res, "pass_fixed_ms"), nan=0.0), _f(r, "burst_new_tokens"),
                                  _f(res, "max_num_batched_tokens"), _f(r, "step_weights_ms"), _f(r, "step_kv_ms"), b)
    slo = _f(res, "ttft_slo_ms")
    beyond = beyond_search(plan)
    rows = plan.input.workloads.rows
    out = []
    for i in np.flatnonzero(pick):
        place = Place.at_row("Workloads", rows[i], r["workload"].iat[i])
        mean, p90 = float(r["ttft_load_ms"].iat[i]), float(r["ttft_load_p90_ms"].iat[i])
        if np.isfinite(b[i]):
            shown = (f"ttft_load_ms {mean:,.0f} ms and ttft_load_p90_ms {p90:,.0f} ms are the decode-first queue "
                     f"(beside the decode batch of that load, {b[i]:,.1f} requests, a prompt takes {p_df[i]:,.0f} ms, "
                     f"not {P[i]:,.0f} ms)")
        else:
            shown = ("ttft_load_ms and ttft_load_p90_ms are blank: beside the decode batch the prompts saturate the "
                     "instance at that load")
        old = (f"the request-alone prefill queue (prefill first's) gives {old_mean[i]:,.0f} ms and "
               f"{old_p90[i]:,.0f} ms" if np.isfinite(old_mean[i]) else "the request-alone prefill queue saturates")
        msg = f"information: scheduler decode_first, planned open loop: {shown}; {old}"
        if np.isfinite(slo[i]):
            n_df = float(r["instances_ttft"].iat[i])
            if beyond[i]:
                # above a request alone, yet unreachable: every count the search tries misses the target
                said = (f"unreachable (at least {dslo.SEARCH_SPAN:,} instances above the search's lower bound: "
                        f"a count beyond the DF_Search sheet's search)")
            else:
                said = f"{_count(n_df)} under decode first (the DF_Search sheet's search)"
            msg += (f"; the TTFT target {slo[i]:,.6g} ms needs instances_ttft {said}, "
                    f"{_count(old_n[i])} by the request-alone queue")
        msg += ("; Sensitivity_Hit's hit sweep reads the decode-first search at each hit (the DF_Search_Hit "
                "sheet); the Tornado's TTFT at load still reads the request-alone queue for this row")
        out.append(Problem(place, msg))
    return out

