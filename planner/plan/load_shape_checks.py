"""A Measurements row whose load shape contradicts its own throughput (red team 4).

A row with ``concurrency`` blank and no ``request_rate`` is read as one request at a time
(:mod:`planner.plan.load_tests`: ``float(r.get("concurrency") or 1)``). A load-test file that names
no load (a guidellm ``throughput`` benchmark without a cap, a vLLM ``--ramp-up-strategy`` run, a
trace replay: ``planner measurements`` writes them with the shape blank and a note) pasted as it is
would then be planned as if its TTFT were a request-alone prefill.

Little's law gives the requests in flight of any stable run: ``N = X L`` with ``X`` the completed
requests per second and ``L`` the time each spends in the system. A row read at concurrency 1 whose
throughput and latency give ``N`` well above 1 did not run one request at a time.
"""

from __future__ import annotations

import math

import numpy as np

from planner.core.errors import Problem
from planner.core.places import Place

# One request at a time gives N <= 1 (the client's gaps between requests only lower it); 1.5 leaves
# room for a latency measured as a mean of skewed requests.
IN_FLIGHT_MAX = 1.5


def requests_in_flight(rps, ttft_ms, osl, tpot_ms):
    """Requests in flight by Little's law, from a row's throughput and latency.

    Parameters
    ----------
    rps : array_like
        Completed requests per second [requests/s].
    ttft_ms : array_like
        Time to first token [ms].
    osl : array_like
        Output tokens per request [tokens] (NaN: unknown, the decode is left out).
    tpot_ms : array_like
        Time per output token after the first [ms] (NaN: unknown, the decode is left out).

    Returns
    -------
    numpy.ndarray
        ``N = X (TTFT + (osl - 1) TPOT) / 1000`` [requests]; a lower bound when the decode is unknown.

    Notes
    -----
    Little's law (J. D. C. Little, "A Proof for the Queuing Formula L = lambda W", Operations
    Research 9(3), 1961). The request latency is vLLM's ``e2el = ttft + (osl - 1) tpot``
    (``vllm/benchmarks/serve.py``: ``tpot = (latency - ttft) / (output_len - 1)``).
    """
    rps, ttft, osl, tpot = (np.asarray(v, dtype=float) for v in (rps, ttft_ms, osl, tpot_ms))
    decode = np.where(np.isnan(osl) | np.isnan(tpot), 0.0, np.maximum(osl - 1.0, 0.0) * tpot)
    return rps * (ttft + decode) / 1000.0


def _num(rec, col) -> float:
    v = rec.get(col)
    return math.nan if v is None else float(v)


def row_rps(rec) -> float:
    """Completed requests/s of a row, from the first throughput given, else for a typed row (no ``file``)
    ``num_requests / duration_s`` (how ``vllm bench serve`` computes its request throughput; NaN: none)."""
    x = _num(rec, "request_throughput")
    if not math.isnan(x):
        return x
    osl, isl = _num(rec, "osl"), _num(rec, "isl")
    if rec.get("output_throughput") is not None and osl > 0:
        return float(rec["output_throughput"]) / osl
    if rec.get("total_throughput") is not None and isl > 0:
        return float(rec["total_throughput"]) / (isl + (0.0 if math.isnan(osl) else osl))
    n, dur = _num(rec, "num_requests"), _num(rec, "duration_s")
    if n > 0 and dur > 0 and not rec.get("file"):
        # typed from a tool's printout: the requests completed over the run's duration, as vllm bench serve
        # computes request_throughput (a result file's duration may be another span, inference-perf's
        # send_duration: its readers fill the throughput the file states)
        return n / dur
    return math.nan


# A test whose completed rate is within 5% of its arrival rate kept up with its arrivals.
KEPT_UP = 0.95


def paced_by_arrivals(rec, x: float) -> bool:
    """Whether a row's throughput ``x`` [requests/s] is its arrival rate, not its capacity.

    An open-loop test (``request_rate`` typed, ``concurrency`` blank) completes requests as fast as
    they arrive while the server keeps up, so its throughput is the rate it was sent, whatever the
    chip time per request: read as capacity (``1000 / X`` ms of chip time) it put the idle time
    between arrivals into the decode (inference-perf's 1 request/s stage of 33 ms prefills and 3.5 ms
    steps gave 15.6 ms a token). A capped open loop (both typed) is paced by its arrivals unless it
    completed fewer than :data:`KEPT_UP` of them per second (then the cap bound it: a closed loop).
    """
    rate = rec.get("request_rate")
    if rate is None or math.isnan(x):
        return False
    return rec.get("concurrency") is None or x >= KEPT_UP * float(rate)


def load_shape_warnings(plan) -> list[Problem]:
    """A located warning per Measurements row read at concurrency 1 (blank or typed 1, no
    ``request_rate``) whose throughput and latency put more than :data:`IN_FLIGHT_MAX` requests in flight."""
    meas = plan.input.optional.get("Measurements")
    if meas is None:
        return []
    out = []
    for i, r in enumerate(meas.records):
        conc = r.get("concurrency")
        x = row_rps(r)
        if paced_by_arrivals(r, x):
            out.append(Problem(Place.of_table(meas, "request_rate", i),
                               f"the row's throughput ({x:,.4g} requests/s) is its arrival rate (request_rate "
                               f"{float(r['request_rate']):,.4g}): the server kept up, so it says nothing of the chip "
                               f"time per request and is not used for the decode time"))
        if (conc is not None and float(conc) != 1) or r.get("ttft_ms") is None or math.isnan(x):
            continue
        if r.get("request_rate") is not None and conc is None:
            n = float(requests_in_flight(x, float(r["ttft_ms"]), _num(r, "osl"), _num(r, "tpot_ms")))
            if n > IN_FLIGHT_MAX:
                out.append(Problem(Place.of_table(meas, "ttft_ms", i),
                                   f"ttft_ms {float(r['ttft_ms']):,.4g} of an open loop at {float(r['request_rate']):,.4g} "
                                   f"requests/s is read as one request at a time, but {n:,.1f} requests were in flight "
                                   f"(Little's law: {x:,.4g} requests/s x {1000 * n / x:,.4g} ms): its TTFT includes "
                                   f"queueing the calibration does not take out; use a closed-loop test "
                                   f"(max_concurrency) or one at a rate with about one request in flight"))
            continue
        n = float(requests_in_flight(x, float(r["ttft_ms"]), _num(r, "osl"), _num(r, "tpot_ms")))
        if n > IN_FLIGHT_MAX:
            said = "is blank (read as one request at a time)" if conc is None else "is 1"
            out.append(Problem(Place.of_table(meas, "concurrency", i),
                               f"concurrency {said}, but the row's {x:,.4g} requests/s over a latency of "
                               f"{1000 * n / x:,.4g} ms (TTFT + (osl - 1) x TPOT) is {n:,.1f} requests in flight "
                               f"(Little's law): the load test did not run one request at a time; type its "
                               f"concurrency or request_rate"))
    return out
