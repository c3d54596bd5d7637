"""Measurements rows read as load tests at any concurrency (issue 16), for :mod:`planner.plan.calibrate`.

A row is a closed-loop load test of ``concurrency`` clients and ``num_requests`` requests (the way
``vllm bench serve --max-concurrency c`` runs). Its TTFT (the statistic ``ttft_stat`` names) is read
through :func:`planner.equations.queueing.closed_loop_ttft`: waves of ``c`` requests whose prefills
serialise, so the request-alone prefill is ``P = ttft / factor`` with ``factor`` fixed by
(c, R, stat); at concurrency 1 the factor is 1 and the row is read exactly as before.

Its measured throughput pins the chip time per request: ``C = 1000 / X`` ms for ``X`` completed
requests/s (``request_throughput``, else ``output_throughput / osl``, else ``total_throughput /
(isl + osl)``); the decode share per output token is ``(C - P) / osl`` with ``P`` the fitted
prefill at that row. Without throughput, ``tpot_ms`` at concurrency ``c`` gives the step time
``s(c) = tpot - (c-1) P / (2 osl)`` (the burst law, :func:`planner.equations.queueing.tpot_load_ms`) and the
per-token share ``s(c) / c`` (at c = 1: ``tpot``, as before).
"""

from __future__ import annotations

import math

import numpy as np

from planner.equations import queueing
from planner.core.places import Place


def _num(rec, name):
    v = rec.get(name)
    return math.nan if v is None else float(v)


def read_rows(recs: list[dict]) -> dict:
    """Per row: ``factor`` (TTFT statistic / request-alone prefill) and ``prefill_ms``."""
    conc = np.array([_num(r, "concurrency") if r.get("concurrency") is not None else 1.0 for r in recs])
    nreq = np.array([_num(r, "num_requests") for r in recs])
    stats = [str(r.get("ttft_stat") or "mean") for r in recs]
    factor = np.array([float(queueing.closed_loop_ttft(1.0, c, n, st)) if c > 1 else 1.0
                       for c, n, st in zip(conc, nreq, stats)])
    ttft = np.array([float(r["ttft_ms"]) for r in recs])
    return {"factor": factor, "prefill_ms": ttft / factor, "concurrency": conc, "num_requests": nreq,
            "stat": stats}


def read_warnings(recs: list[dict], rows: list[int], load: dict) -> list[tuple[str, str]]:
    """Located warnings for rows at concurrency > 1 read with an assumption."""
    out = []
    for rec, row, c, n, f in zip(recs, rows, load["concurrency"], load["num_requests"], load["factor"]):
        if c <= 1:
            continue
        place = Place.at_row("Measurements", row)
        what = f"TTFT {rec['ttft_ms']:,.1f} ms ({load['stat'][rows.index(row)]}) at concurrency {int(c)}"
        if math.isnan(n):
            out.append((place, f"{what} is read as one wave of {int(c)} requests whose prefills queue (request-alone "
                               f"prefill = TTFT / {f:.3g}); num_requests is blank: type it (and osl, tpot_ms or "
                               f"request_throughput) so the load test is read as run"))
        elif rec.get("request_throughput") is None and rec.get("output_throughput") is None \
                and rec.get("total_throughput") is None and rec.get("tpot_ms") is None:
            out.append((place, f"{what} is read as waves of {int(c)} requests (request-alone prefill = TTFT / "
                               f"{f:.3g}); the decode is not measured (no tpot_ms or throughput)"))
    return out


def _throughput(rec) -> float:
    """Completed requests/s of a row, from the first throughput given (NaN: none)."""
    if rec.get("request_throughput") is not None:
        return float(rec["request_throughput"])
    osl, isl = _num(rec, "osl"), float(rec["isl"])
    if rec.get("output_throughput") is not None and osl > 0:
        return float(rec["output_throughput"]) / osl
    if rec.get("total_throughput") is not None:
        return float(rec["total_throughput"]) / (isl + (0.0 if math.isnan(osl) else osl))
    return math.nan


def throughput_rows(recs: list[dict], rows: list[int]) -> list[dict]:
    """The rows with a measured throughput: shape, hit, concurrency, requests/s, row."""
    out = []
    for rec, row in zip(recs, rows):
        x = _throughput(rec)
        if not math.isnan(x):
            out.append({"isl": float(rec["isl"]), "osl": _num(rec, "osl"), "hit": float(rec["hit"]),
                        "concurrency": float(rec.get("concurrency") or 1), "rps": x, "row": row})
    return out


def decode_per_token(recs: list[dict], rows: list[int], fitted) -> tuple[float, list, float]:
    """Decode chip time per output token [ms], warnings, and the concurrency it holds at.

    Throughput rows at the highest concurrency that has one win (median over them); else the rows
    with ``tpot_ms`` at the highest concurrency that has one (median of ``s(c)/c``). ``fitted``: the
    fitted prefill per row (None: no fit). The concurrency ``c`` of the rows used is the batch at
    which the decode holds (Workloads ``t_decode_batch``): the step law gives ``s(c) = c d``, the
    measured step (issue 16: read at the row's ``batch`` instead, the step came out c times too fast).
    """
    warns = []
    d_tp, d_tpot = [], []
    conc = [float(r.get("concurrency") or 1) for r in recs]
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
            d = (1000.0 / x - p) / osl
            if d > 0:
                d_tp.append(d)
            else:
                warns.append((Place.at_row("Measurements", row), f"the measured throughput ({x:,.4g} requests/s, "
                              f"{1000 / x:,.1f} ms of chip time per request) leaves no time for decode after "
                              f"the fitted prefill ({p:,.1f} ms): not used for the decode time"))
        if rec.get("tpot_ms") is not None and c == top_t:
            t = float(rec["tpot_ms"])
            if c > 1 and osl > 0 and not math.isnan(p):
                t -= (c - 1) * p / (2 * osl)   # the prefills of the wave held the decode up
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
