"""A Measurements row with both ``request_rate`` and ``concurrency`` > 1 (red team 5, issue 16).

Such a test is an open loop capped at ``concurrency`` (``vllm bench serve --request-rate R
--max-concurrency C``; the importer of vLLM's result files fills both). The calibration reads the
row as a closed loop of ``concurrency`` clients (:mod:`planner.plan.load_tests`): every wave of
``C`` requests queued behind one another. That holds while the cap binds (``C`` requests in flight
all the time); when the arrivals are slower than the server, fewer are in flight, the TTFT queued
less than a wave of ``C`` would, and the request-alone prefill it calibrates comes out too short
(at 2 requests/s and a 268 ms prefill, about half a request in flight: a burst of 8 reads
268 / 4.95 = 54 ms).

Little's law gives the requests in flight, ``N = X L`` (planner.plan.load_shape_checks); with the
row's throughput (else its arrival rate, which a server that kept up completes) and its latency
(TTFT + (osl - 1) TPOT). ``N`` well below ``C`` is warned; without the decode ``N`` is a lower bound
and the row's reading is said plainly, with what to type.
"""

from __future__ import annotations

import math

from planner.core.errors import Problem
from planner.core.places import Place
from planner.plan.load_shape_checks import requests_in_flight, row_rps

# the cap binds when about C requests are in flight; below 3/4 of it the arrivals set the load
CAP_BOUND = 0.75


def capped_loop_warnings(plan) -> list[Problem]:
    """The warning of the module docstring, at the row's ``request_rate`` cell."""
    meas = plan.input.optional.get("Measurements")
    if meas is None:
        return []
    out = []
    for i, r in enumerate(meas.records):
        c, rate, ttft = r.get("concurrency"), r.get("request_rate"), r.get("ttft_ms")
        if c is None or rate is None or ttft is None or float(c) <= 1:
            continue
        c, rate = float(c), float(rate)
        x = row_rps(r)
        x = rate if math.isnan(x) else x
        osl, tpot = (math.nan if r.get(k) is None else float(r[k]) for k in ("osl", "tpot_ms"))
        n = float(requests_in_flight(x, float(ttft), osl, tpot))
        where = Place.of_table(meas, "request_rate", i)
        reading = (f"request_rate {rate:,.4g} with concurrency {c:,.0f} (an open loop capped at {c:,.0f}) is read as a "
                   f"closed loop of {c:,.0f} clients, each wave of {c:,.0f} queued")
        known = not (math.isnan(tpot) and (math.isnan(osl) or osl > 1))
        if known and n < CAP_BOUND * c:
            out.append(Problem(where, f"{reading}, but Little's law puts {n:,.2g} requests in flight ({x:,.4g} "
                                      f"requests/s x {1000 * n / x:,.4g} ms): the arrivals, not the cap, set the load, "
                                      f"so the TTFT queued less than that reading assumes and the calibrated prefill "
                                      f"is too short; leave concurrency blank to read it as an open loop, or use a "
                                      f"test where the cap binds"))
        elif not known and n < CAP_BOUND * c:
            out.append(Problem(where, f"{reading}; if fewer than {c:,.0f} were in flight (arrivals slower than the "
                                      f"server: at least {n:,.2g} by Little's law from the TTFT alone), the TTFT "
                                      f"queued less and the calibrated prefill is too short: type tpot_ms (or "
                                      f"itl_ms) so the load can be checked, or leave concurrency blank for an open "
                                      f"loop"))
    return out
