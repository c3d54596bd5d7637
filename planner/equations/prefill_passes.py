r"""Batched prefill: how a burst of requests is packed into forward passes (issue 16, "under load").

A serving engine with chunked prefill does not run the prefills of waiting requests one after the
other: each scheduler step (one forward pass) takes up to ``M`` new prompt tokens from the waiting
requests, first come first served, splitting a prompt across steps when it does not fit
(vLLM V1 scheduler, ``max_num_batched_tokens``: vllm-project/vllm ``vllm/v1/core/sched/scheduler.py``,
``Scheduler.schedule``; default 8192 tokens for the OpenAI server on GPUs of 70 GiB or more,
H100/H200/H20, and 2048 on smaller ones, ``vllm/engine/arg_utils.py``,
``EngineArgs.get_batch_defaults``). The first token of a request comes when the pass holding the
last token of its prompt ends.

The model of one burst of ``c`` requests sent together (a closed-loop load test's wave, or a fixed
Workloads ``concurrency``), each with ``u = N (1 - h)`` new tokens:

* the engine is idle when the burst arrives and starts a pass as soon as the first request is
  there, so the first request runs **alone**: its TTFT is the request-alone prefill ``P``;
* the other ``n = c - 1`` requests wait for that pass and are then packed, in order, into passes
  of ``M`` new tokens; request ``j`` (``j = 1..n``) ends in pass ``p_j = ceil(j u / M)``;
* a pass costs a fixed ``F`` (``t_fixed_ms`` of the calibrated law: launch, scheduling,
  sampling, paid once per pass, not once per request) plus the variable prefill work of the
  tokens it holds; a request alone takes ``K = ceil(u / M)`` passes, so its variable work is
  ``V = P - K F`` (floored at 0);
* so pass ``p`` ends at ``P + p F + min(p M / u, n) V``, and

.. math::
    TTFT_0 = P, \qquad TTFT_j = P + p_j F + \min(p_j M/u,\ n)\, V \quad (j = 1..n)

  the mean TTFT is their average over the ``c`` requests, a quantile their linear interpolation
  (numpy's default, as ``vllm bench serve`` computes percentiles).

With ``M = u`` (blank budget: one request per pass) this is the serial burst of
:func:`planner.equations.queueing.closed_loop_ttft`, ``TTFT_j = (j+1) P``, mean ``P (c+1)/2``.
Packing does two things the serial burst misses: later requests pay the fixed cost once per pass
(short prompts queue less), and early requests of a pass wait for the whole pass (a pass of
several short prompts delivers them together). Checked against published load tests in
``tests/test_published_load.py`` and against an independent discrete-event simulation of the
scheduler in ``tests/sim_instance.py``.

Every statistic is linear in ``(P, F)`` for a given pass structure (``V >= 0``): ``a P + b F``,
which the calibration from a load test at concurrency ``c`` inverts
(:mod:`planner.plan.load_tests`).
"""

from __future__ import annotations

import numpy as np

from planner.equations.kvhit import excel_twin

EPS = 1e-9            # tolerance of CEILING on a whole number of passes (j u / M = 2 exactly is 2 passes)
MAX_CONCURRENCY = 65536   # enumerated per request; Workloads concurrency is capped at this in the schema


def _f(x):
    return np.asarray(x, dtype=float)


def _ceil(x):
    return np.ceil(np.asarray(x, dtype=float) - EPS)


def _tokens(isl, hit):
    """New prompt tokens of a request, at least one (a full hit still needs its last token)."""
    return np.maximum(_f(isl) * (1 - _f(hit)), 1.0)


def burst_values(new_tokens: float, concurrency: int, budget: float) -> tuple[np.ndarray, np.ndarray]:
    """Per request of one burst, the coefficients ``(a_j, b_j)`` of ``TTFT_j = a_j P + b_j F``.

    Parameters
    ----------
    new_tokens : float, u, new prompt tokens per request [tokens]
    concurrency : int, c, requests in the burst [count]
    budget : float, M, new tokens per forward pass (NaN: u, one request per pass) [tokens]

    Returns
    -------
    (a, b) : arrays of length c, in order of first token (non-decreasing TTFT)
    """
    c = int(round(concurrency))
    if c < 1 or c > MAX_CONCURRENCY:
        raise ValueError(f"concurrency {concurrency} is outside [1, {MAX_CONCURRENCY}]")
    u = max(float(new_tokens), 1.0)
    m_tok = u if not np.isfinite(budget) else float(budget)
    n = c - 1
    k_alone = float(_ceil(u / m_tok))
    j = np.arange(1, n + 1, dtype=float)
    p = _ceil(j * u / m_tok)
    done = np.minimum(p * m_tok / u, n)
    # TTFT_j = P + p F + done (P - K F) = (1 + done) P + (p - K done) F
    a = np.concatenate([[1.0], 1.0 + done])
    b = np.concatenate([[0.0], p - k_alone * done])
    return a, b


def burst_coefficients(new_tokens, concurrency, budget, num_requests=np.nan, stat="mean"):
    """``(a, b)`` with the load test's TTFT statistic ``= a P + b F``: waves of ``c`` requests.

    ``R`` requests are ``floor(R/c)`` full bursts of ``c`` and a last burst of ``R mod c``
    (``R`` blank: one burst); each burst starts on an idle engine (the wave before it has
    finished: with prefills first, the wave decodes together).

    Parameters
    ----------
    new_tokens : float, u [tokens]
    concurrency : float, c [count]
    budget : float, M [tokens] (NaN: one request per pass)
    num_requests : float, R [count] (NaN: c)
    stat : str, ``mean``, ``median``/``p50``, ``p90``, ``p95`` or ``p99``

    Returns
    -------
    (a, b) : floats
    """
    c = int(round(float(concurrency)))
    r_tot = c if not np.isfinite(num_requests) else int(round(float(num_requests)))
    c = max(1, min(c, r_tot))
    waves, rest = divmod(r_tot, c)
    a_full, b_full = burst_values(new_tokens, c, budget)
    parts_a, parts_b = [np.tile(a_full, waves)], [np.tile(b_full, waves)]
    if rest:
        a_r, b_r = burst_values(new_tokens, rest, budget)
        parts_a.append(a_r)
        parts_b.append(b_r)
    a, b = np.concatenate(parts_a), np.concatenate(parts_b)
    if stat == "mean":
        return float(a.mean()), float(b.mean())
    q = {"median": 0.5, "p50": 0.5, "p90": 0.9, "p95": 0.95, "p99": 0.99}[stat]
    # order statistics: within a burst TTFT is non-decreasing in j; across bursts sort by a value
    # at a representative F/P (the order is the same for every F, P >= 0 within a burst, and the
    # bursts are copies of one another but for the last)
    order = np.lexsort((b, a))
    a, b = a[order], b[order]
    x = q * (len(a) - 1)
    i0 = int(np.floor(x))
    i1 = min(i0 + 1, len(a) - 1)
    fr = x - i0
    return float(a[i0] + fr * (a[i1] - a[i0])), float(b[i0] + fr * (b[i1] - b[i0]))


def burst_ttft_ms(prefill, t_fixed, isl, hit, concurrency, budget, q=np.nan):
    r"""TTFT of a burst of ``c`` requests packed into forward passes of ``M`` new tokens.

    .. math::
        \overline{TTFT} = \frac{1}{c}\Big(cP + F \sum_{j=1}^{c-1} p_j + V \sum_{j=1}^{c-1}
        \min(p_j M/u,\ c-1)\Big),\quad p_j = \lceil j u / M \rceil,\ V = \max(P - \lceil u/M \rceil F, 0)

    a quantile ``q`` the linear interpolation of the ordered ``TTFT_j`` at position ``q (c-1)``.

    Parameters
    ----------
    prefill : numeric, request-alone prefill P (``ttft_ms``) [ms]
    t_fixed : numeric, fixed cost per forward pass F (``t_fixed_ms``) [ms]
    isl : numeric, input length N [tokens]
    hit : numeric, prefix-cache hit ratio h [fraction]
    concurrency : numeric, c, NaN when blank [count]
    budget : numeric, M, new tokens per pass (``max_num_batched_tokens``; NaN: one request per pass) [tokens]
    q : numeric, quantile (NaN or 0: the mean) [fraction]

    Returns
    -------
    numeric, TTFT [ms] (NaN without concurrency)
    """
    P, F, N, H, c, M, Q = np.broadcast_arrays(_f(prefill), _f(t_fixed), _f(isl), _f(hit), _f(concurrency),
                                              _f(budget), _f(q))
    out = np.full(P.shape, np.nan)
    for i in np.ndindex(P.shape):
        if not (np.isfinite(c[i]) and np.isfinite(P[i])):
            continue
        u = float(_tokens(N[i], H[i]))
        a, b = burst_values(u, c[i], M[i])
        k_alone = float(_ceil(u / (u if not np.isfinite(M[i]) else M[i])))
        v = P[i] - k_alone * F[i]
        if v < 0:   # the fit's fixed cost exceeds the request's own passes: no variable work left
            vals = np.concatenate([[P[i]], P[i] + (b[1:] + k_alone * (a[1:] - 1)) * F[i]])
        else:
            vals = a * P[i] + b * F[i]
        qq = Q[i] if np.isfinite(Q[i]) else 0.0
        out[i] = vals.mean() if qq <= 0 else np.quantile(vals, qq)
    return out


def _xl_value(j, prefill, t_fixed, u, budget, n, v):
    """Excel text of TTFT_j (j a number or an expression; 0: the first request)."""
    p = f"CEILING(MAX({j},1)*{u}/{budget}-{EPS:g},1)"
    return f"({prefill}+({j}>0)*({p}*{t_fixed}+MIN({p}*{budget}/{u},{n})*{v}))"


@excel_twin(burst_ttft_ms)
def _(prefill, t_fixed, isl, hit, concurrency, budget, q=None):
    u = f"MAX({isl}*(1-{hit}),1)"
    m = f"IF(ISNUMBER({budget}),{budget},{u})"
    n = f"({concurrency}-1)"
    v = f"MAX({prefill}-CEILING({u}/{m}-{EPS:g},1)*{t_fixed},0)"
    if q is None:
        j = f'ROW(INDIRECT("1:"&MAX(1,{n})))'
        p = f"CEILING({j}*{u}/{m}-{EPS:g},1)"
        d = f"({p}*{m}/{u})"
        sums = (f"({concurrency}>1)*(SUMPRODUCT({p})*{t_fixed}"
                f"+SUMPRODUCT(({d}<{n})*{d}+({d}>={n})*{n})*{v})")
        body = f"({concurrency}*{prefill}+{sums})/{concurrency}"
    else:
        x = f"({q}*{n})"
        i0 = f"INT({x})"
        lo = _xl_value(i0, prefill, t_fixed, u, m, n, v)
        hi = _xl_value(f"MIN({i0}+1,{n})", prefill, t_fixed, u, m, n, v)
        body = f"{lo}+({x}-{i0})*({hi}-{lo})"
    return f'IF(ISNUMBER({concurrency}),{body},"")'
