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


def _rps(rec) -> float:
    x = _num(rec, "request_throughput")
    if not math.isnan(x):
        return x
    osl, isl = _num(rec, "osl"), _num(rec, "isl")
    if rec.get("output_throughput") is not None and osl > 0:
        return float(rec["output_throughput"]) / osl
    if rec.get("total_throughput") is not None and isl > 0:
        return float(rec["total_throughput"]) / (isl + (0.0 if math.isnan(osl) else osl))
    return math.nan


def load_shape_warnings(plan) -> list[Problem]:
    """A located warning per Measurements row read at concurrency 1 (blank or typed 1, no
    ``request_rate``) whose throughput and latency put more than :data:`IN_FLIGHT_MAX` requests in flight."""
    meas = plan.input.optional.get("Measurements")
    if meas is None:
        return []
    out = []
    for i, r in enumerate(meas.records):
        conc = r.get("concurrency")
        if r.get("request_rate") is not None or (conc is not None and float(conc) != 1) or r.get("ttft_ms") is None:
            continue
        x = _rps(r)
        if math.isnan(x):
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
