"""Measurements rows read as load tests at any concurrency (issue 16), for :mod:`planner.plan.calibrate`.

A row is a closed-loop load test of ``concurrency`` clients and ``num_requests`` requests (the way
``vllm bench serve --max-concurrency c`` runs). Its TTFT (the statistic ``ttft_stat`` names) is read
through :mod:`planner.equations.prefill_passes`: waves of ``c`` requests, the first prefilled alone
on the idle server and the others packed into forward passes of ``max_num_batched_tokens`` new
tokens, each pass paying the fixed cost ``F`` once; the statistic is ``factor P + fixed_coef F``
with both numbers fixed by (c, R, stat, new tokens, budget), so the request-alone prefill is
``P = (ttft - fixed_coef F) / factor`` once F is fitted (:mod:`planner.plan.calibrate` iterates
the fit to a fixed point). At concurrency 1 the factor is 1 and fixed_coef 0: the row is read
exactly as before. A row whose ``scheduler`` is ``decode_first`` (vLLM V1) is read as its first wave
(the burst above) and then the steady loop of :mod:`planner.equations.decode_first`: the statistic
is ``factor P + fixed_coef F + const``, the constant from the decode step beside the prompts; a
blank scheduler is ``prefill_first``, said at each row it changes (``c > 1`` over several waves).

Its measured throughput pins the chip time per request: ``C = 1000 / X`` ms for ``X`` completed
requests/s (``request_throughput``, else ``output_throughput / osl``, else ``total_throughput /
(isl + osl)``). The closed loop the throughput comes from completes a wave of ``c`` every
``T + osl s(c)`` (:func:`planner.equations.queueing.closed_loop_rate`), ``T`` the GPU time of the
wave's packed prefills (:func:`planner.equations.prefill_passes.wave_prefill_ms`, ``c P`` when each
pass holds one prompt), so the decode share per output token and request is
``d = s(c) / c = (C - T / c) / osl`` with ``P`` the fitted prefill at that row and ``F`` the per-pass
fixed cost; at concurrency 1, ``T = P`` and this is ``(C - P) / osl`` as before. The statement is the
inverse of the throughput the planner predicts at that concurrency, so a calibrated deployment gives
its measured throughput back. Without throughput, ``tpot_ms`` at concurrency ``c`` gives the step time
``s(c) = tpot - H / osl``, ``H`` the wave's hold-up of the decodes (:func:`planner.equations.queueing.burst_holdup_ms`,
``(c-1) P / 2`` for prefills one after another; the burst law, :func:`planner.equations.queueing.tpot_load_ms`) and the
per-token share ``s(c) / c`` (at c = 1: ``tpot``, as before).
"""

from __future__ import annotations

import math

import numpy as np

from planner.core.places import Place
from planner.equations import decode_first, prefill_passes, queueing


def _num(rec, name):
    v = rec.get(name)
    return math.nan if v is None else float(v)


def _decode_first_coefficients(rec, u, c, m_tok, n, stat, ttft):
    """``(factor, fixed_coef, const)`` of a decode-first row (:func:`planner.equations.decode_first.loop_coefficients`):
    the decode step beside the prompts is the row's measured ``tpot_ms`` less the other ``c - 1``
    prompts' prefills its ``osl`` steps hold, ``s = max(tpot - (c-1) P / osl, 0)`` (blank: 0, the
    prompts' own work only); ``P`` and the branch are those the row gives at ``F = 0`` (four
    substitutions from the wave's reading: each branch is linear, so the binding one settles)."""
    tpot = _num(rec, "tpot_ms")
    tpot = 0.0 if math.isnan(tpot) else tpot
    osl = _num(rec, "osl")
    osl = 1.0 if math.isnan(osl) or osl <= 0 else osl
    p0 = ttft / prefill_passes.burst_coefficients(u, c, m_tok, n, stat)[0]
    for _ in range(4):
        # a request's osl steps hold the other c - 1 prompts' prefill work (about P each): the rest of
        # the measured TPOT is the decode step itself
        step = max(tpot - (c - 1) * p0 / osl, 0.0)
        a, b, k0 = decode_first.loop_coefficients(u, c, m_tok, n, stat, step, 0.0, osl, p0, 0.0)
        p0 = max((ttft - k0) / a, 1e-9)
    return a, b, k0


def read_rows(recs: list[dict], budget: float = math.nan) -> dict:
    """Per row: the load-test model's coefficients, TTFT statistic ``= factor P + fixed_coef F + const``
    (prefill first, the row's ``scheduler`` blank or ``prefill_first``:
    :func:`planner.equations.prefill_passes.burst_coefficients`, waves of ``c`` requests, the
    first alone, the others packed into passes of ``max_num_batched_tokens`` new tokens, the row's
    own or ``budget``, the Settings value, const 0; ``decode_first``: a burst then the steady loop of
    :mod:`planner.equations.decode_first`), and ``prefill_ms`` at ``F = 0`` (``(ttft - const) / factor``;
    :func:`prefill_given_fixed` for the fitted F). Concurrency 1: factor 1, fixed_coef 0, const 0."""
    conc = np.array([_num(r, "concurrency") if r.get("concurrency") is not None else 1.0 for r in recs])
    nreq = np.array([_num(r, "num_requests") for r in recs])
    stats = [str(r.get("ttft_stat") or "mean") for r in recs]
    scheds = [str(r.get("scheduler") or "prefill_first") for r in recs]
    tokens = np.array([max(float(r["isl"]) * (1 - float(r["hit"])), 1.0) for r in recs])
    budgets = np.array([_num(r, "max_num_batched_tokens") if r.get("max_num_batched_tokens") is not None
                        else float(budget) for r in recs])
    ttft = np.array([float(r["ttft_ms"]) for r in recs])
    coef = []
    for rec, u, c, m_tok, n, st, sc, t in zip(recs, tokens, conc, budgets, nreq, stats, scheds, ttft):
        if c <= 1:
            coef.append((1.0, 0.0, 0.0))
        elif sc == "decode_first":
            coef.append(_decode_first_coefficients(rec, u, c, m_tok, n, st, t))
        else:
            coef.append(prefill_passes.burst_coefficients(u, c, m_tok, n, st) + (0.0,))
    factor = np.array([a for a, _, _ in coef])
    fixed_coef = np.array([b for _, b, _ in coef])
    const = np.array([k for _, _, k in coef])
    return {"factor": factor, "fixed_coef": fixed_coef, "const": const, "ttft_ms": ttft,
            "prefill_ms": (ttft - const) / factor, "concurrency": conc, "num_requests": nreq, "stat": stats,
            "budget": budgets, "scheduler": scheds, "scheduler_typed": [r.get("scheduler") is not None for r in recs]}


def prefill_given_fixed(load: dict, t_fixed: float) -> np.ndarray:
    """Request-alone prefill of each row once the per-pass fixed cost F is known:
    ``P = (ttft - fixed_coef F - const) / factor`` (exact at concurrency 1: P = ttft)."""
    return (load["ttft_ms"] - load["fixed_coef"] * float(t_fixed) - load["const"]) / load["factor"]


def read_warnings(recs: list[dict], rows: list[int], load: dict) -> list[tuple[str, str]]:
    """Located warnings for rows at concurrency > 1 read with an assumption."""
    out = []
    for rec, row, c, n, f in zip(recs, rows, load["concurrency"], load["num_requests"], load["factor"]):
        if c <= 1:
            continue
        place = Place.at_row("Measurements", row)
        what = f"TTFT {rec['ttft_ms']:,.1f} ms ({load['stat'][rows.index(row)]}) at concurrency {int(c)}"
        if math.isnan(n):
            out.append((place, f"{what} is read as one wave of {int(c)} requests whose prefills queue, packed "
                               f"into passes of {load['budget'][rows.index(row)]:,.0f} new tokens (TTFT = "
                               f"{f:.3g} request-alone prefills before the per-pass fixed cost); num_requests is blank: type it (and osl, tpot_ms or "
                               f"request_throughput) so the load test is read as run"))
        if not load["scheduler_typed"][rows.index(row)] and not (math.isnan(n) or n <= c):
            out.append((place, f"{what}: scheduler is blank, so the test is read with prefill first (SGLang: each "
                               f"wave of {int(c)} prefills, then decodes together); type decode_first for vLLM V1, "
                               f"whose steady loop queues differently (planner.equations.decode_first)"))
        if not math.isnan(n) and rec.get("request_throughput") is None and rec.get("output_throughput") is None \
                and rec.get("total_throughput") is None and rec.get("tpot_ms") is None:
            # fewer requests than clients: one wave of them (prefill_passes.burst_coefficients reads it so)
            shape = (f"waves of {int(c)} requests" if n >= c else
                     f"one wave of {int(round(n))} requests (num_requests {int(round(n))} is below the concurrency: "
                     f"no more were in flight)")
            out.append((place, f"{what} is read as {shape} (TTFT = {f:.3g} request-alone "
                               f"prefills before the per-pass fixed cost); the decode is not measured (no tpot_ms or throughput)"))
    return out


def in_flight(rec) -> float:
    """Requests in flight during a row's test [count]: its ``concurrency`` (blank: 1), but never more
    than its ``num_requests`` (``--max-concurrency 16 --num-prompts 8`` ran 8 at once: its decode
    batch, and the wave its throughput and TPOT hold, are 8)."""
    c = float(rec.get("concurrency") or 1)
    n = _num(rec, "num_requests")
    return c if math.isnan(n) else max(min(c, n), 1.0)


def _throughput(rec) -> float:
    """Completed requests/s of a row, from the first throughput given (NaN: none, or an open loop's:
    :func:`planner.plan.load_shape_checks.paced_by_arrivals`)."""
    from planner.plan.load_shape_checks import paced_by_arrivals, row_rps

    x = row_rps(rec)
    return math.nan if paced_by_arrivals(rec, x) else x


def throughput_rows(recs: list[dict], rows: list[int]) -> list[dict]:
    """The rows with a measured throughput: shape, hit, concurrency, requests/s, row."""
    out = []
    for rec, row in zip(recs, rows):
        x = _throughput(rec)
        if not math.isnan(x):
            out.append({"isl": float(rec["isl"]), "osl": _num(rec, "osl"), "hit": float(rec["hit"]),
                        "concurrency": in_flight(rec), "rps": x, "row": row})
    return out


def decode_per_token(recs: list[dict], rows: list[int], fitted, pass_fixed: float = 0.0,
                     budgets=None) -> tuple[float, list, float]:
    """Decode chip time per output token [ms], warnings, and the concurrency it holds at.

    ``pass_fixed``: the fixed cost per forward pass F [ms] of the packed prefills (0: all per-request
    work, the serial wave); ``budgets``: each row's new tokens per pass (None or NaN: one prompt per pass).

    Throughput rows at the highest concurrency that has one win (median over them); else the rows
    with ``tpot_ms`` at the highest concurrency that has one (median of ``s(c)/c``). ``fitted``: the
    fitted prefill per row (None: no fit). The concurrency ``c`` of the rows used is the batch at
    which the decode holds (Workloads ``t_decode_batch``): the step law gives ``s(c) = c d``, the
    measured step (issue 16: read at the row's ``batch`` instead, the step came out c times too fast).
    """
    warns = []
    d_tp, d_tpot = [], []
    conc = [in_flight(r) for r in recs]   # the batch the decode held: at most num_requests
    thr = [(_throughput(r), c) for r, c in zip(recs, conc)]
    with_x = [c for (x, c) in thr if not math.isnan(x)]
    top = max(with_x) if with_x else None
    with_t = [c for r, c in zip(recs, conc) if r.get("tpot_ms") is not None]
    top_t = max(with_t) if with_t else None
    for i, (rec, row) in enumerate(zip(recs, rows)):
        osl = _num(rec, "osl")
        p = float(fitted[i]) if fitted is not None else math.nan
        x, c = thr[i]
        if top is not None and not math.isnan(x) and c == top and osl > 0 and not math.isnan(p):
            m_tok = math.nan if budgets is None else float(budgets[i])
            # the wave's prefill GPU time per request, T / c (exactly P at concurrency 1)
            per = p if c <= 1 else float(prefill_passes.wave_prefill_ms(p, pass_fixed, float(rec["isl"]),
                                                                          float(rec["hit"]), c, m_tok)) / c
            d = (1000.0 / x - per) / osl
            if d > 0:
                d_tp.append(d)
            else:
                warns.append((Place.at_row("Measurements", row), f"the measured throughput ({x:,.4g} requests/s, "
                              f"{1000 / x:,.1f} ms of chip time per request) leaves no time for decode after "
                              f"the fitted prefill ({per:,.1f} ms per request of its wave): not used for the decode time"))
        if rec.get("tpot_ms") is not None and c == top_t:
            t = float(rec["tpot_ms"])
            if c > 1 and osl > 0 and not math.isnan(p):
                # the prefills of the wave held the decode up: planner.equations.queueing.burst_holdup_ms, the
                # hold-up tpot_load_ms gives at the test's concurrency ((c-1) P / 2 when each pass holds one prompt)
                m_tok = math.nan if budgets is None else float(budgets[i])
                t -= float(queueing.burst_holdup_ms(p, c, pass_fixed, float(rec["isl"]), float(rec["hit"]),
                                                    m_tok)) / osl
            if t > 0:
                d_tpot.append(t / c)
    if d_tp:
        return float(np.median(d_tp)), warns, float(top)
    return (float(np.median(d_tpot)), warns, float(top_t)) if d_tpot else (math.nan, warns, math.nan)


def measured_tpm(throughput: list[dict], isl: float, osl: float) -> dict | None:
    """Delivered TPM of the load test of this shape (isl, osl within 1%; the highest concurrency,
    then the first), for the re-hit correction: ``(isl + osl) x requests/s x 60``."""
    same = [t for t in throughput if abs(t["isl"] - isl) <= 0.01 * isl and not math.isnan(t["osl"])
            and abs(t["osl"] - osl) <= 0.01 * max(osl, 1.0)]
    if not same:
        return None
    best = max(same, key=lambda t: t["concurrency"])
    return {"tpm": (best["isl"] + best["osl"]) * best["rps"] * 60.0, "hit": best["hit"],
            "source": f"measured throughput of Measurements row {best['row']} ({best['rps']:,.4g} requests/s at "
                      f"concurrency {int(best['concurrency'])}, hit {best['hit']:.0%})"}
