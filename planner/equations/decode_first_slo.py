r"""The TTFT at a planned load and the TTFT target's instance count under a decode-first scheduler
(vLLM V1), open loop (Poisson arrivals from ``demand_tpm``), issue 16 items 3-4.

:mod:`planner.equations.decode_first` writes the open loop's queue (``open_batch``, ``open_prefill_ms``,
``open_step_ms``, ``open_ttft_ms``): the M/G/1 prefill queue of :mod:`planner.equations.queueing` with
the prompt's service beside the decode batch ``b``, ``P_df = k (s̄(b) + F) + V``, the decode part of
a step ``s̄(b) = (1 - e^{-b}) s0 + s1 b`` and the decode time ``D = osl s̄ / b``. Here:

* :func:`open_ttft_stat_ms`: its mean (q = 0) or quantile q TTFT at a rate, the wait quantile by the
  same exponential-tail form as :func:`planner.equations.queueing.wait_quantile_ms` (Excel twin:
  the batch a cell of its own);
* :func:`instances_ttft_df`: the smallest instance count whose TTFT statistic meets the target.

The count has no closed form here: ``P_df``, ``s̄`` and ``D`` depend on the rate through ``b``, and
``b`` on the rate through the chunk count ``k = ceil(u / (M - b))`` and ``e^{-b}``. The TTFT at a
rate is increasing in the rate (``b`` increases with it, and the wait with ``P_df``, ``s̄ D`` and
``λ``), so the largest rate that meets the target is found by bisection in Python
(:func:`max_rate_df`, 64 halvings of ``[0, λ_up]``, ``λ_up`` the rate at which the prefills alone
meet the target, a bound: the decode-first TTFT is never below that of the request-alone prefill
with no decode term), and the count is ``ceil(Λ / λ*)`` checked by the forward value at that count
and one fewer. ``tests/test_decode_first_slo.py`` measures why no fixed number of closed-form steps
(the M/G/1 inverse of :func:`planner.equations.queueing.ttft_rho_max` with ``P_df``, ``D``, ``s̄``
frozen at the batch of the previous step) gives the count: after 2, 3 and 4 such steps, 35%, 27%
and 25% of 150 random rows are off by at least one instance.
"""

from __future__ import annotations

import numpy as np

from planner.equations import decode_first as dfs
from planner.equations import queueing as qu
from planner.equations.kvhit import excel_twin

HALVINGS = 64   # bisection steps of max_rate_df: the bracket shrinks to 2^-64 of λ_up, below a double's resolution


def _f(x):
    return np.asarray(x, dtype=float)


def open_ttft_stat_ms(rate, prefill, t_fixed, u, budget, s0, s1, osl, q, batch=None):
    r"""The mean (``q`` = 0 or NaN) or quantile ``q`` TTFT of the decode-first open loop at ``rate``.

    .. math:: TTFT_q = P_{df} + W_q(λ, P_{df}, D, s̄), \quad D = osl\, s̄ / b

    ``W_q`` the M/G/1 wait of :func:`planner.equations.queueing.wait_mean_ms` (mean) or
    :func:`planner.equations.queueing.wait_quantile_ms` (quantile), ``b`` :func:`open_batch`.

    Parameters
    ----------
    rate : numeric, requests/s per instance
    prefill, t_fixed, u, budget, s0, s1, osl : as :func:`planner.equations.decode_first.open_batch`
    q : numeric, quantile in (0, 1), 0 or NaN: the mean [fraction]
    batch : numeric, b (default: :func:`planner.equations.decode_first.open_batch` at ``rate``) [requests]

    Returns
    -------
    numeric, TTFT [ms]; NaN when the instance saturates
    """
    b = dfs.open_batch(rate, prefill, t_fixed, u, budget, s0, s1, osl) if batch is None else _f(batch)
    b0 = np.nan_to_num(b, nan=0.0)
    p_df = dfs.open_prefill_ms(prefill, t_fixed, u, budget, s0, s1, b0)
    s = dfs.open_step_ms(s0, s1, b0)
    with np.errstate(divide="ignore", invalid="ignore"):
        d = np.where(b0 > 0, _f(osl) * s / b0, 0.0)
    qq = np.nan_to_num(_f(q), nan=0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        w = np.where(qq > 0, qu.wait_quantile_ms(rate, p_df, d, s, np.where(qq > 0, qq, 0.5)),
                     qu.wait_mean_ms(rate, p_df, d, s))
    return np.where(np.isfinite(b), p_df + w, np.nan)


@excel_twin(open_ttft_stat_ms)
def _(rate, prefill, t_fixed, u, budget, s0, s1, osl, q, batch=None):
    p_df = f"({dfs.open_prefill_ms.xl(prefill, t_fixed, u, budget, s0, s1, batch)})"
    s = dfs.open_step_ms.xl(s0, s1, batch)
    d = f"IF({batch}>0,{osl}*{s}/{batch},0)"
    wq = qu.wait_quantile_ms.xl(rate, p_df, d, s, q)
    wm = qu.wait_mean_ms.xl(rate, p_df, d, s)
    w = f"IF(N({q})>0,{wq},{wm})"
    return f'IF(ISNUMBER({batch}),IF(ISNUMBER({w}),{p_df}+{w},""),"")'


def _upper_rate(prefill, slo, q):
    """λ_up [requests/s]: the rate at which the request-alone prefill with no decode term meets the
    target (:func:`planner.equations.queueing.ttft_rho_max` with ``D s = 0``); the decode-first TTFT
    is at least that of this queue at every rate (``P_df >= P``, ``s̄ D >= 0``), so ``λ* <= λ_up``."""
    P = _f(prefill)
    lnx = qu.ttft_log_x(P, 0.0, 0.0, slo, q)
    rho = qu.ttft_rho_max(P, 0.0, 0.0, slo, q, lnx)
    return rho / P * 1000.0


def max_rate_df(prefill, t_fixed, u, budget, s0, s1, osl, slo, q):
    r"""The largest rate per instance [requests/s] whose decode-first TTFT statistic
    (:func:`open_ttft_stat_ms`) meets ``slo``: bisection over ``[0, λ_up]`` (:data:`HALVINGS` steps;
    the TTFT increases with the rate). NaN without a target above the request-alone ``P``.

    Parameters
    ----------
    prefill, t_fixed, u, budget, s0, s1, osl : as :func:`planner.equations.decode_first.open_batch`
    slo : numeric, TTFT target [ms]
    q : numeric, quantile (0 or NaN: the mean) [fraction]

    Returns
    -------
    numeric, λ* [requests/s] (the bracket's lower end: it meets the target)
    """
    args = np.broadcast_arrays(*(_f(a) for a in (prefill, t_fixed, u, budget, s0, s1, osl, slo, q)))
    P, F, U, M, S0, S1, O, slo_, q_ = args
    with np.errstate(divide="ignore", invalid="ignore"):
        hi = _upper_rate(P, slo_, np.nan_to_num(q_, nan=0.0))
    alone = open_ttft_stat_ms(0.0, P, F, U, M, S0, S1, O, q_)   # P, or K F when the passes' fixed cost exceeds it
    ok = np.isfinite(hi) & (slo_ > alone)
    hi = np.where(ok, hi, 0.0)
    lo = np.zeros_like(hi)
    for _ in range(HALVINGS):
        mid = (lo + hi) / 2
        t = open_ttft_stat_ms(mid, P, F, U, M, S0, S1, O, q_)
        meets = np.isfinite(t) & (t <= slo_)
        lo, hi = np.where(meets, mid, lo), np.where(meets, hi, mid)
    return np.where(ok, lo, np.nan)


def instances_ttft_df(rate_total, prefill, t_fixed, u, budget, s0, s1, osl, slo, q):
    r"""Smallest instance count whose decode-first TTFT statistic meets the target, open loop.

    .. math:: n = \lceil Λ / λ^* \rceil, \quad λ^* = \max\{λ : TTFT_q(λ) \le slo\}

    (:func:`max_rate_df`), then checked at the count: one more when ``Λ/n`` misses the target (a
    bracket end within rounding), one fewer when ``Λ/(n-1)`` meets it.

    Parameters
    ----------
    rate_total : numeric, Λ requests/s of the workload
    prefill, t_fixed, u, budget, s0, s1, osl : as :func:`planner.equations.decode_first.open_batch`
    slo : numeric, TTFT target, NaN when blank [ms]
    q : numeric, quantile (0 or NaN: the mean) [fraction]

    Returns
    -------
    numeric, instances [count]; NaN without a target or demand, ``inf`` when the target is not
    above the request-alone TTFT
    """
    lam = max_rate_df(prefill, t_fixed, u, budget, s0, s1, osl, slo, q)
    R = _f(rate_total)
    with np.errstate(divide="ignore", invalid="ignore"):
        n = np.maximum(np.ceil(R / lam), 1.0)
    n = np.where(np.isfinite(n), n, 1.0)

    def meets(k):
        t = open_ttft_stat_ms(R / k, prefill, t_fixed, u, budget, s0, s1, osl, q)
        return np.isfinite(t) & (t <= _f(slo))

    n = np.where(meets(n), n, n + 1)
    n = np.where((n > 1) & meets(np.maximum(n - 1, 1.0)), n - 1, n)
    out = np.where(np.isfinite(lam), n, np.inf)
    return np.where(np.isnan(_f(slo)) | np.isnan(R), np.nan, out)
