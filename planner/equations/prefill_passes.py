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
  there, so the first pass holds only the first request's first ``min(u, M)`` tokens (a short
  prompt runs alone: its TTFT is the request-alone prefill ``P``);
* the others arrive during that pass; from then on every pass takes the next ``M`` prompt tokens
  of the queue in order (the rest of the first prompt, then the others), splitting prompts across
  passes; request ``j`` (0-based) ends in pass ``p_j = 1 + ceil(((j+1) u - min(u, M)) / M)``
  (pass 1 when that is not positive), with ``D_j = min(min(u, M) + (p_j - 1) M, c u)`` prompt
  tokens done by then;
* a pass costs a fixed ``F`` (``pass_fixed_ms``, by default ``t_fixed_ms`` of the calibrated law:
  launch, scheduling, sampling, paid once per pass, not once per request) plus the variable
  prefill work of the tokens it holds, ``V / u`` per token; a request alone takes
  ``K = ceil(u / M)`` passes, so ``V = P - K F`` (floored at 0);

.. math::
    TTFT_j = p_j F + D_j V / u \quad (j = 0..c-1)

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

from planner.core.arrays import floats
from planner.equations.kvhit import excel_twin
from planner.equations.constants import N
from planner.equations import terms as tm

EPS = tm.EPS          # tolerance of CEILING on a whole number of passes (j u / M = 2 exactly is 2 passes)
MAX_CONCURRENCY = 65536   # enumerated per request; Workloads and Measurements concurrency are capped at this


_f = floats  # planner.core.arrays


def _ceil(x):
    return np.ceil(np.asarray(x, dtype=float) - EPS)


def _tokens(isl, hit):
    """New prompt tokens of a request, at least one (a full hit still needs its last token)."""
    return np.maximum(_f(isl) * (1 - _f(hit)), 1.0)


def _passes(j, u, m_tok, c):
    """Pass in which request ``j`` (0-based) gets its first token, and the prompt tokens done by the
    end of that pass: the first pass holds the first request's first ``min(u, M)`` tokens alone,
    then every pass takes ``M`` tokens of the stream in order."""
    t1 = np.minimum(u, m_tok)
    s = (j + 1) * u - t1                       # the request's last token, counted after the first pass
    p = 1 + np.where(s > EPS, _ceil(np.maximum(s, 0.0) / m_tok), 0.0)
    done = np.minimum(t1 + (p - 1) * m_tok, c * u)
    return p, done


def burst_values(new_tokens: float, concurrency: int, budget: float) -> tuple[np.ndarray, np.ndarray]:
    """Per request of one burst, the coefficients ``(a_j, b_j)`` of ``TTFT_j = a_j P + b_j F``.

    Request ``j`` ends in pass ``p_j`` with ``D_j`` prompt tokens done by then:
    ``TTFT_j = p_j F + D_j V / u`` with ``V = P - K F`` (``K`` passes alone), so
    ``a_j = D_j / u`` and ``b_j = p_j - K D_j / u``.

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
    k_alone = float(_ceil(u / m_tok))
    p, done = _passes(np.arange(c, dtype=float), u, m_tok, c)
    return done / u, p - k_alone * done / u


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
    a_r, b_r = burst_values(new_tokens, rest, budget) if rest else (np.zeros(0), np.zeros(0))
    if stat == "mean":
        return (float((waves * a_full.sum() + a_r.sum()) / r_tot),
                float((waves * b_full.sum() + b_r.sum()) / r_tot))
    q = {"median": 0.5, "p50": 0.5, "p90": 0.9, "p95": 0.95, "p99": 0.99}[stat]
    # order statistics without listing R values: each value of the full burst occurs `waves`
    # times, each of the last burst once; within a burst TTFT = a P + b F is non-decreasing in j
    # (for P >= K F, F >= 0); across bursts the values are ordered by a, then b
    a = np.concatenate([a_full, a_r])
    b = np.concatenate([b_full, b_r])
    count = np.concatenate([np.full(len(a_full), waves), np.ones(len(a_r), dtype=int)])
    order = np.lexsort((b, a))
    a, b, cum = a[order], b[order], np.cumsum(count[order])
    x = q * (r_tot - 1)
    k0 = int(np.floor(x))
    k1 = min(k0 + 1, r_tot - 1)
    i0, i1 = (int(np.searchsorted(cum, k, side="right")) for k in (k0, k1))
    fr = x - k0
    return float(a[i0] + fr * (a[i1] - a[i0])), float(b[i0] + fr * (b[i1] - b[i0]))


def new_tokens(isl, hit):
    """New prompt tokens of a request, at least one (a full hit still needs its last token).

    Parameters
    ----------
    isl : numeric, input length N [tokens]
    hit : numeric, prefix-cache hit ratio h [fraction]

    Returns
    -------
    numeric, u = max(N (1 - h), 1) [tokens]
    """
    return _tokens(isl, hit)


@excel_twin(new_tokens)
def _(isl, hit):
    return f"MAX({isl}*(1-{hit}),1)"


def burst_ttft_ms(prefill, t_fixed, isl, hit, concurrency, budget, q=np.nan):
    r"""TTFT of a burst of ``c`` requests packed into forward passes of ``M`` new tokens.

    .. math::
        \overline{TTFT} = \frac{1}{c} \sum_{j=0}^{c-1} \big(p_j F + D_j V / u\big),\quad
        V = \max(P - \lceil u/M \rceil F,\ 0)

    with ``p_j``, ``D_j`` the pass and tokens done of request ``j`` (module docstring);
    a quantile ``q`` the linear interpolation of the ordered ``TTFT_j`` at position ``q (c-1)``.
    :func:`burst_ttft_u` with ``u`` = :func:`new_tokens`.

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
    return burst_ttft_u(prefill, t_fixed, _tokens(isl, hit), concurrency, budget, q)


def burst_ttft_u(prefill, t_fixed, u, concurrency, budget, q=np.nan):
    """:func:`burst_ttft_ms` from the new tokens per request ``u`` [tokens] (:func:`new_tokens`),
    a column of its own where the formula would otherwise repeat it (a spreadsheet formula holds at
    most 8,192 characters). Other parameters and the result as :func:`burst_ttft_ms`."""
    P, F, U, c, M, Q = np.broadcast_arrays(_f(prefill), _f(t_fixed), _f(u), _f(concurrency), _f(budget), _f(q))
    out = np.full(P.shape, np.nan)
    for i in np.ndindex(P.shape):
        if not (np.isfinite(c[i]) and np.isfinite(P[i])):
            continue
        u_i = float(U[i])
        m_tok = u_i if not np.isfinite(M[i]) else float(M[i])
        k_alone = float(_ceil(u_i / m_tok))
        p, done = _passes(np.arange(int(round(c[i])), dtype=float), u_i, m_tok, c[i])
        v = max(P[i] - k_alone * F[i], 0.0)   # floored: the fit's fixed cost may exceed the request's passes
        vals = p * F[i] + done * v / u_i
        qq = Q[i] if np.isfinite(Q[i]) else 0.0
        out[i] = vals.mean() if qq <= 0 else np.quantile(vals, qq)
    return out


def _xl_value_scalar(j, t_fixed, u, budget, c, v):
    """Excel text of TTFT_j for one request ``j`` (a number or a scalar expression, not an array):
    MAX and MIN may then take the place of the element-wise forms of :func:`_xl_value`, which keeps
    the quantile formulas short (a spreadsheet formula holds at most 8,192 characters)."""
    t1 = f"MIN({u},{budget})"
    sj = f"(({j}+1)*{u}-{t1})"
    p = f"(1+({sj}>{EPS:g})*CEILING(MAX({sj},0)/{budget}-{EPS:g},1))"
    done = f"MIN({t1}+({p}-1)*{budget},{c}*{u})"
    return f"({p}*{t_fixed}+{done}*{v}/{u})"


def _xl_value(j, t_fixed, u, budget, c, v):
    """Excel text of TTFT_j, request ``j`` (0-based; a number, a cell or an array expression)."""
    t1 = f"MIN({u},{budget})"
    sj = f"(({j}+1)*{u}-{t1})"
    p = f"(1+({sj}>{EPS:g})*CEILING(ABS({sj})/{budget}-{EPS:g},1))"   # ABS: element-wise (MAX is not)
    done = f"(({t1}+({p}-1)*{budget}<{c}*{u})*({t1}+({p}-1)*{budget})+({t1}+({p}-1)*{budget}>={c}*{u})*{c}*{u})"
    return f"({p}*{t_fixed}+{done}*{v}/{u})"


@excel_twin(burst_ttft_ms)
def _(prefill, t_fixed, isl, hit, concurrency, budget, q=None):
    return burst_ttft_u.xl(prefill, t_fixed, new_tokens.xl(isl, hit), concurrency, budget, q)


# the quantile constants of slo_percentile: known above 0, so their formulas need no mean branch
POSITIVE_Q = (N.Q_P50, N.Q_P90, N.Q_P95, N.Q_P99)


@excel_twin(burst_ttft_u)
def _(prefill, t_fixed, u, concurrency, budget, q=None):
    m = tm.pass_tokens.xl(u, budget)           # the burst's terms, as planner.equations.terms writes them
    c = concurrency
    v = tm.pass_variable_ms.xl(prefill, t_fixed, u, budget)
    j = f'(ROW(INDIRECT("1:"&{c}))-1)'
    mean = f"SUMPRODUCT({_xl_value(j, t_fixed, u, m, c, v)})/{c}"
    if q is None:
        body = mean
    else:
        x = f"({q}*({c}-1))"
        i0 = f"INT({x})"
        lo = _xl_value_scalar(i0, t_fixed, u, m, c, v)
        hi = _xl_value_scalar(f"MIN({i0}+1,{c}-1)", t_fixed, u, m, c, v)
        quantile = f"{lo}+({x}-{i0})*({hi}-{lo})"
        # q 0 (the mean target) or blank: the mean, as in Python
        body = quantile if q in POSITIVE_Q else f"IF({q}>0,{quantile},{mean})"
    return f'IF(ISNUMBER({c}),{body},"")'


def wave_prefill_ms(prefill, t_fixed, isl, hit, concurrency, budget):
    r"""GPU time the prefills of one burst of ``c`` hold the instance: until the last first token.

    .. math:: T = p_{c-1} F + c V, \quad p_{c-1} = 1 + \lceil (c u - \min(u, M)) / M \rceil

    (the last request's pass; ``c V`` the variable work of all ``c`` prompts). A budget of one
    prompt per pass gives ``c P``, the serial wave.

    Parameters
    ----------
    prefill, t_fixed, isl, hit, concurrency, budget : as :func:`burst_ttft_ms`

    Returns
    -------
    numeric, T [ms] (NaN without concurrency)
    """
    P, F, N, H, c, M = np.broadcast_arrays(_f(prefill), _f(t_fixed), _f(isl), _f(hit), _f(concurrency), _f(budget))
    u = _tokens(N, H)
    m_tok = np.where(np.isfinite(M), M, u)
    v = np.maximum(P - _ceil(u / m_tok) * F, 0.0)
    p_last, _done = _passes(c - 1, u, m_tok, c)
    return np.where(np.isfinite(c), p_last * F + c * v, np.nan)


@excel_twin(wave_prefill_ms)
def _(prefill, t_fixed, isl, hit, concurrency, budget):
    u = f"MAX({isl}*(1-{hit}),1)"
    m = tm.pass_tokens.xl(u, budget)
    v = tm.pass_variable_ms.xl(prefill, t_fixed, u, budget)
    s_last = f"({concurrency}*{u}-MIN({u},{m}))"
    p_last = f"(1+({s_last}>{EPS:g})*CEILING(ABS({s_last})/{m}-{EPS:g},1))"
    return f'IF(ISNUMBER({concurrency}),{p_last}*{t_fixed}+{concurrency}*{v},"")'
