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
from planner.equations.constants import C, N

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
    p_df = dfs.open_prefill_ms(prefill, t_fixed, u, budget, s0, s1, np.nan_to_num(b, nan=0.0))
    return ttft_at_service_ms(rate, s0, s1, osl, q, b, p_df)


@excel_twin(open_ttft_stat_ms)
def _(rate, prefill, t_fixed, u, budget, s0, s1, osl, q, batch=None):
    p_df = f"({dfs.open_prefill_ms.xl(prefill, t_fixed, u, budget, s0, s1, batch)})"
    return ttft_at_service_ms.xl(rate, s0, s1, osl, q, batch, p_df)


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
    n = np.where(R > 0, n, 0.0)          # no demand: no instance (the closed form's ROUNDUP(0) too)
    out = np.where(np.isfinite(lam), n, np.inf)
    return np.where(np.isnan(_f(slo)) | np.isnan(R), np.nan, out)


# ----------------------------------------------------------------------------- the live search (DF_Search)
# The count of instances_ttft_df held live in a workbook: an exact integer search a spreadsheet can hold,
# one row per Results row (planner.workbook.df_search), each step a few cells. From the closed-form lower
# bound n_lo (the request-alone queue with no decode term meets the target at λ_up, so n* >= Λ/λ_up), a bit
# descent keeps the largest count known to miss the target, m (it starts at n_lo - 1): for each bit 2^j from
# the top down, the candidate m + 2^j is kept as the new m when it still misses at the rate Λ/(m + 2^j); the
# count is m + 1 (the TTFT decreases with the count, so every count above n* meets and every one below
# misses). SEARCH_BITS bits cover n_lo .. n_lo + 2^SEARCH_BITS - 2 (a count beyond: unreachable, search_count).
SEARCH_BITS = 24     # 16.7 million instances above the lower bound: beyond any count the planner sizes
SEARCH_BIT_VALUES = tuple(2 ** j for j in range(SEARCH_BITS - 1, -1, -1))   # the bits, top first
SEARCH_SPAN = 2 ** SEARCH_BITS - 1   # the last count tried is n_lo - 1 + SEARCH_SPAN


def open_loop_df(scheduler, concurrency):
    """Where a row is a decode-first workload planned open loop (``scheduler`` ``decode_first``, no
    Workloads ``concurrency``): the rows whose latency at load is the decode-first queue."""
    return (np.asarray(scheduler, dtype=object) == "decode_first") & np.isnan(_f(concurrency))


def search_log_x(prefill, slo, q):
    """ln of the Lambert W argument of the request-alone queue with no decode term at the target
    (:func:`planner.equations.queueing.ttft_log_x` with ``D = s = 0``; the first step of ``λ_up``).

    Parameters
    ----------
    prefill : numeric, P [ms]
    slo : numeric, TTFT target [ms]
    q : numeric, quantile (0: the mean) [fraction]

    Returns
    -------
    numeric, ln x (NaN without a quantile target above P)
    """
    return qu.ttft_log_x(prefill, 0.0, 0.0, slo, q)


@excel_twin(search_log_x)
def _(prefill, slo, q):
    return qu.ttft_log_x.xl(prefill, "0", "0", slo, q)


def search_rho_up(prefill, slo, q, lnx):
    """The largest utilisation ``λ_up P`` at which the request-alone queue with no decode term meets the
    target (:func:`planner.equations.queueing.ttft_rho_max` with ``D = s = 0``).

    Parameters
    ----------
    prefill, slo, q : as :func:`search_log_x`
    lnx : numeric, :func:`search_log_x`

    Returns
    -------
    numeric, ρ_up [fraction] (NaN without a target above P)
    """
    return qu.ttft_rho_max(prefill, 0.0, 0.0, slo, q, lnx)


@excel_twin(search_rho_up)
def _(prefill, slo, q, lnx):
    return qu.ttft_rho_max.xl(prefill, "0", "0", slo, q, lnx)


def search_floor(scheduler, concurrency, rate_total, prefill, t_fixed, u, budget, slo, rho_up):
    r"""The search's lower bound: the smallest count it tries, of a decode-first row planned open loop.

    .. math:: n_{lo} = \max(\lceil Λ / λ_{up} \rceil - 1, 1), \quad λ_{up} = 1000\,ρ_{up} / P

    (one below the ceiling: a margin for the rounding of ``Λ/λ_up`` where ``λ_up`` is the count's own
    rate, a queue with no decode time). ``inf`` (``unreachable``) where the target is not above the TTFT
    of a request alone, ``max(P, K F)`` (:func:`open_ttft_stat_ms` at rate 0), or ``λ_up`` is not positive.

    Parameters
    ----------
    scheduler : str or array of str, Workloads scheduler
    concurrency : numeric, Workloads concurrency, NaN when blank [count]
    rate_total : numeric, Λ requests/s of the workload (``demand_rps_open``)
    prefill, t_fixed, u, budget : as :func:`planner.equations.decode_first.open_batch`
    slo : numeric, TTFT target, NaN when blank [ms]
    rho_up : numeric, :func:`search_rho_up` [fraction]

    Returns
    -------
    numeric, n_lo [count]; NaN on a row not searched (not decode first open loop, no target or demand)
    """
    P, F, U, M = _f(prefill), _f(t_fixed), np.maximum(_f(u), 1.0), _f(budget)
    K = np.ceil(U / np.where(np.isfinite(M), M, U) - dfs.EPS)
    alone = np.maximum(P, K * F)
    R, slo_ = _f(rate_total), _f(slo)
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = _f(rho_up) / P * C.MS_PER_S
        n = np.maximum(np.ceil(qu.approx_as_spreadsheets(R / lam)) - 1, 1.0)
    ok = np.isfinite(lam) & (lam > 0) & (slo_ > alone)
    out = np.where(ok, n, np.inf)
    searched = open_loop_df(scheduler, concurrency) & np.isfinite(slo_) & np.isfinite(R)
    return np.where(searched, out, np.nan)


@excel_twin(search_floor)
def _(scheduler, concurrency, rate_total, prefill, t_fixed, u, budget, slo, rho_up):
    k = f"CEILING({u}/IF(ISNUMBER({budget}),{budget},{u})-{dfs.EPS:g},1)"
    alone = f"MAX({prefill},{k}*{t_fixed})"
    n = f"MAX(ROUNDUP({rate_total}/({rho_up}/{prefill}*{N.MS_PER_S}),0)-1,1)"
    ok = f"AND(ISNUMBER({rho_up}),N({rho_up})>0,{slo}>{alone})"
    return (f'IF(AND({scheduler}="decode_first",NOT(ISNUMBER({concurrency})),ISNUMBER({slo}),'
            f'ISNUMBER({rate_total})),IF({ok},{n},"unreachable"),"")')


def search_start(floor):
    """The count the search starts from as known to miss the target, ``n_lo - 1`` (NaN, blank, where
    :func:`search_floor` is blank or ``unreachable``).

    Parameters
    ----------
    floor : numeric, :func:`search_floor` [count]

    Returns
    -------
    numeric, m [count]
    """
    f = _f(floor)
    return np.where(np.isfinite(f), f - 1, np.nan)


@excel_twin(search_start)
def _(floor):
    return f'IF(ISNUMBER({floor}),{floor}-1,"")'


def search_batch(miss, bit, rate_total, prefill, t_fixed, u, budget, s0, s1, osl):
    """The decode batch (:func:`planner.equations.decode_first.open_batch`) at the candidate count
    ``miss + bit``, i.e. at the rate ``Λ / (miss + bit)`` per instance.

    Parameters
    ----------
    miss : numeric, the largest count known to miss the target so far (NaN: not searched) [count]
    bit : numeric, the step's bit, 2^j [count]
    rate_total : numeric, Λ [requests/s]
    prefill, t_fixed, u, budget, s0, s1, osl : as :func:`planner.equations.decode_first.open_batch`

    Returns
    -------
    numeric, b [requests] (NaN: not searched, or the candidate saturates)
    """
    m = _f(miss)
    with np.errstate(divide="ignore", invalid="ignore"):
        b = dfs.open_batch(_f(rate_total) / (m + _f(bit)), prefill, t_fixed, u, budget, s0, s1, osl)
    return np.where(np.isfinite(m), b, np.nan)


@excel_twin(search_batch)
def _(miss, bit, rate_total, prefill, t_fixed, u, budget, s0, s1, osl):
    rate = f"({rate_total}/({miss}+{bit}))"
    return f'IF(ISNUMBER({miss}),{dfs.open_batch.xl(rate, prefill, t_fixed, u, budget, s0, s1, osl)},"")'


def ttft_at_service_ms(rate, s0, s1, osl, q, batch, service):
    r"""The TTFT statistic of the decode-first open loop from its batch ``b`` and the prompt's service
    ``P_df`` in cells of their own: :func:`open_ttft_stat_ms` with ``P_df`` given,
    ``TTFT_q = P_df + W_q(λ, P_df, D, s̄(b))``, ``D = osl s̄ / b`` (kept apart so that no formula passes the
    8,192 characters a spreadsheet formula may hold: ``P_df`` appears some twenty times in the wait).

    Parameters
    ----------
    rate : numeric, requests/s per instance
    s0, s1 : numeric, decode-step law [ms], [ms per request]
    osl : numeric, output length [tokens]
    q : numeric, quantile in (0, 1), 0 or NaN: the mean [fraction]
    batch : numeric, b (:func:`planner.equations.decode_first.open_batch`; NaN: saturated) [requests]
    service : numeric, P_df (:func:`planner.equations.decode_first.open_prefill_ms` at ``b``) [ms]

    Returns
    -------
    numeric, TTFT [ms]; NaN where the batch is or the queue saturates
    """
    b = _f(batch)
    b0 = np.nan_to_num(b, nan=0.0)
    p_df = _f(service)
    s = dfs.open_step_ms(s0, s1, b0)
    qq = np.nan_to_num(_f(q), nan=0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        d = np.where(b0 > 0, _f(osl) * s / b0, 0.0)
        w = np.where(qq > 0, qu.wait_quantile_ms(rate, p_df, d, s, np.where(qq > 0, qq, 0.5)),
                     qu.wait_mean_ms(rate, p_df, d, s))
    return np.where(np.isfinite(b), p_df + w, np.nan)


@excel_twin(ttft_at_service_ms)
def _(rate, s0, s1, osl, q, batch, service):
    s = dfs.open_step_ms.xl(s0, s1, batch)
    d = f"IF({batch}>0,{osl}*{s}/{batch},0)"
    wq = qu.wait_quantile_ms.xl(rate, service, d, s, q)
    wm = qu.wait_mean_ms.xl(rate, service, d, s)
    w = f"IF(N({q})>0,{wq},{wm})"
    return f'IF(ISNUMBER({batch}),IF(ISNUMBER({w}),{service}+{w},""),"")'


def service_df_ms(prefill, t_fixed, u, budget, s0, s1, batch):
    """The prompt's service beside the decode batch, ``P_df``
    (:func:`planner.equations.decode_first.open_prefill_ms`), NaN (blank) where the batch is.

    Parameters
    ----------
    prefill, t_fixed, u, budget, s0, s1 : as :func:`planner.equations.decode_first.open_batch`
    batch : numeric, b (NaN: not searched or saturated) [requests]

    Returns
    -------
    numeric, P_df [ms]
    """
    b = _f(batch)
    return np.where(np.isfinite(b), dfs.open_prefill_ms(prefill, t_fixed, u, budget, s0, s1, np.nan_to_num(b)),
                    np.nan)


@excel_twin(service_df_ms)
def _(prefill, t_fixed, u, budget, s0, s1, batch):
    return f'IF(ISNUMBER({batch}),{dfs.open_prefill_ms.xl(prefill, t_fixed, u, budget, s0, s1, batch)},"")'


def search_ttft(miss, bit, rate_total, s0, s1, osl, q, batch, service):
    """The TTFT statistic (:func:`ttft_at_service_ms`) at the candidate count ``miss + bit``, i.e. at the
    rate ``Λ / (miss + bit)``, with its batch (:func:`search_batch`) and service (:func:`service_df_ms`).

    Parameters
    ----------
    miss, bit, rate_total : as :func:`search_batch`
    s0, s1, osl : as :func:`planner.equations.decode_first.open_batch`
    q : numeric, the target's quantile (0: the mean) [fraction]
    batch, service : numeric, b [requests] and P_df [ms] at the candidate

    Returns
    -------
    numeric, TTFT [ms] (NaN where the batch is blank)
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = _f(rate_total) / (_f(miss) + _f(bit))
    return ttft_at_service_ms(rate, s0, s1, osl, q, batch, service)


@excel_twin(search_ttft)
def _(miss, bit, rate_total, s0, s1, osl, q, batch, service):
    return ttft_at_service_ms.xl(f"({rate_total}/({miss}+{bit}))", s0, s1, osl, q, batch, service)


def search_keep(miss, bit, ttft, slo):
    """One step of the bit descent: the candidate ``miss + bit`` becomes the largest count known to miss
    the target when its TTFT (:func:`search_ttft`) is blank (saturated) or above ``slo``; else ``miss``.

    Parameters
    ----------
    miss : numeric, the count known to miss before the step (NaN: not searched) [count]
    bit : numeric, 2^j [count]
    ttft : numeric, :func:`search_ttft` [ms]
    slo : numeric, TTFT target [ms]

    Returns
    -------
    numeric, the count known to miss after the step [count]
    """
    m, t = _f(miss), _f(ttft)
    meets = np.isfinite(t) & (t <= _f(slo))
    return np.where(np.isfinite(m), np.where(meets, m, m + _f(bit)), np.nan)


@excel_twin(search_keep)
def _(miss, bit, ttft, slo):
    return f'IF(ISNUMBER({miss}),IF(AND(ISNUMBER({ttft}),N({ttft})<={slo}),{miss},{miss}+{bit}),"")'


def search_count(floor, miss, rate_total):
    """The count the search finds: one above the largest count that misses the target (``miss`` after
    the last bit), 0 without demand (``Λ = 0``, as the closed form); ``inf`` (``unreachable``) where
    :func:`search_floor` is, and where every candidate missed (``miss = n_lo - 1 + SEARCH_SPAN``: the count
    is at least ``n_lo + 16,777,215``, beyond the search, and ``miss + 1`` was never tried, so it is not given
    as a count); NaN (blank) where it is.

    Parameters
    ----------
    floor : numeric, :func:`search_floor` [count]
    miss : numeric, :func:`search_keep` after the last bit [count]
    rate_total : numeric, Λ [requests/s]

    Returns
    -------
    numeric, instances [count]
    """
    f, m = _f(floor), _f(miss)
    beyond = m >= f + SEARCH_SPAN - 1          # every candidate missed: the count is beyond the search
    n = np.where(beyond, np.inf, m + 1)
    return np.where(np.isfinite(f), np.where(_f(rate_total) > 0, n, 0.0), f)


@excel_twin(search_count)
def _(floor, miss, rate_total):
    n = f'IF({miss}>={floor}+{SEARCH_SPAN - 1},"unreachable",{miss}+1)'
    return f'IF(ISNUMBER({floor}),IF({rate_total}>0,{n},0),IF({floor}="unreachable","unreachable",""))'


def search_instances(rate_total, prefill, t_fixed, u, budget, s0, s1, osl, slo, q, scheduler="decode_first",
                     concurrency=np.nan):
    """The whole search of the DF_Search sheet in one call (the composition of its steps, for tests and
    notes): :func:`search_floor`, then :data:`SEARCH_BITS` steps of :func:`search_batch`,
    :func:`service_df_ms`, :func:`search_ttft`, :func:`search_keep`, then :func:`search_count`. Parameters as
    :func:`instances_ttft_df`.

    Returns
    -------
    numeric, instances [count] (NaN: not searched; ``inf``: unreachable)
    """
    args = (prefill, t_fixed, u, budget, s0, s1, osl)
    q0 = np.nan_to_num(_f(q), nan=0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        lnx = search_log_x(prefill, slo, q0)
        rho = search_rho_up(prefill, slo, q0, lnx)
        floor = search_floor(scheduler, concurrency, rate_total, prefill, t_fixed, u, budget, slo, rho)
        m = search_start(floor)
        for bit in SEARCH_BIT_VALUES:
            b = search_batch(m, bit, rate_total, *args)
            t = search_ttft(m, bit, rate_total, s0, s1, osl, q0, b, service_df_ms(*args[:6], b))
            m = search_keep(m, bit, t, slo)
    return search_count(floor, m, rate_total)


def load_batch_df(scheduler, concurrency, rate, prefill, t_fixed, u, budget, s0, s1, osl):
    """The decode batch at the row's load of a decode-first row planned open loop
    (:func:`planner.equations.decode_first.open_batch` at ``load_rps``), NaN (blank) on other rows.

    Parameters
    ----------
    scheduler, concurrency : as :func:`search_floor`
    rate : numeric, requests/s per instance at the load (``load_rps``)
    prefill, t_fixed, u, budget, s0, s1, osl : as :func:`planner.equations.decode_first.open_batch`

    Returns
    -------
    numeric, b [requests]
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        b = dfs.open_batch(rate, prefill, t_fixed, u, budget, s0, s1, osl)
    return np.where(open_loop_df(scheduler, concurrency), b, np.nan)


@excel_twin(load_batch_df)
def _(scheduler, concurrency, rate, prefill, t_fixed, u, budget, s0, s1, osl):
    b = dfs.open_batch.xl(rate, prefill, t_fixed, u, budget, s0, s1, osl)
    return f'IF(AND({scheduler}="decode_first",NOT(ISNUMBER({concurrency})),ISNUMBER({rate})),{b},"")'


def by_open_df(scheduler, concurrency, decode_first, other):
    """The decode-first open loop's value on a decode-first row planned open loop (:func:`open_loop_df`),
    else ``other``.

    Parameters
    ----------
    scheduler, concurrency : as :func:`search_floor`
    decode_first, other : numeric, the two values [any unit]

    Returns
    -------
    numeric
    """
    return np.where(open_loop_df(scheduler, concurrency), _f(decode_first), _f(other))


@excel_twin(by_open_df)
def _(scheduler, concurrency, decode_first, other):
    return f'IF(AND({scheduler}="decode_first",NOT(ISNUMBER({concurrency}))),{decode_first},{other})'


def zero_if_blank(x):
    """The value, 0 where blank (a per-pass fixed cost or a quantile left blank: 0, the mean).

    Parameters
    ----------
    x : numeric

    Returns
    -------
    numeric
    """
    return np.nan_to_num(_f(x), nan=0.0)


@excel_twin(zero_if_blank)
def _(x):
    return f"N({x})"


def load_ttft_mean_df_ms(rate, s0, s1, osl, batch, service):
    """Mean TTFT at the row's load of a decode-first row planned open loop (:func:`ttft_at_service_ms`
    with ``q = 0``); NaN (blank) where the batch is. Parameters as :func:`ttft_at_service_ms`.

    Returns
    -------
    numeric, TTFT [ms]
    """
    return ttft_at_service_ms(rate, s0, s1, osl, 0.0, batch, service)


@excel_twin(load_ttft_mean_df_ms)
def _(rate, s0, s1, osl, batch, service):
    return ttft_at_service_ms.xl(rate, s0, s1, osl, "0", batch, service)


def load_ttft_p90_df_ms(rate, s0, s1, osl, batch, service):
    """p90 TTFT at the row's load of a decode-first row planned open loop (:func:`ttft_at_service_ms`
    with ``q = 0.9``). Parameters as :func:`ttft_at_service_ms`.

    Returns
    -------
    numeric, TTFT [ms]
    """
    return ttft_at_service_ms(rate, s0, s1, osl, C.Q_P90, batch, service)


@excel_twin(load_ttft_p90_df_ms)
def _(rate, s0, s1, osl, batch, service):
    return ttft_at_service_ms.xl(rate, s0, s1, osl, N.Q_P90, batch, service)


def searched_row(scheduler, concurrency, workload):
    """The workload's name on a decode-first row planned open loop (:func:`open_loop_df`), the row DF_Search
    writes its search on, else blank: the Results read DF_Search only where this is filled (a row made
    decode first by an edit of the output, whose DF_Search row is empty, keeps the closed form).

    Parameters
    ----------
    scheduler, concurrency : as :func:`search_floor`
    workload : str or array of str, the workload's name

    Returns
    -------
    str or array of str
    """
    w = np.broadcast_to(np.asarray(workload, dtype=object), np.shape(_f(concurrency)))
    return np.where(open_loop_df(scheduler, concurrency), w, "").astype(object)


@excel_twin(searched_row)
def _(scheduler, concurrency, workload):
    return f'IF(AND({scheduler}="decode_first",NOT(ISNUMBER({concurrency}))),{workload},"")'


def _searched(searched):
    return np.asarray(searched, dtype=object) != ""


def instances_ttft_open_df(rate_total, prefill, slo, rho, concurrency, ttft_at_c, searched, df_count):
    """Results ``instances_ttft`` (and ``instances_ttft_baseline``) of a plan with a decode-first row
    planned open loop: on the rows DF_Search searches (``searched``, :func:`searched_row`, filled) the
    search's count (``df_count``, DF_Search ``df_instances_ttft``), on every other row the closed form
    :func:`planner.equations.queueing.instances_for_rho`.

    Parameters
    ----------
    rate_total, prefill, slo, rho, concurrency, ttft_at_c : as :func:`planner.equations.queueing.instances_for_rho`
    searched : str or array of str, :func:`searched_row`
    df_count : numeric, :func:`search_count` [count]

    Returns
    -------
    numeric, instances [count] (NaN: blank; ``inf``: unreachable)
    """
    return np.where(_searched(searched), _f(df_count),
                    qu.instances_for_rho(rate_total, prefill, slo, rho, concurrency, ttft_at_c))


@excel_twin(instances_ttft_open_df)
def _(rate_total, prefill, slo, rho, concurrency, ttft_at_c, searched, df_count):
    base = qu.instances_for_rho.xl(rate_total, prefill, slo, rho, concurrency, ttft_at_c)
    return f'IF({searched}<>"",{df_count},{base})'


def ttft_load_open_df_ms(prefill, wait, concurrency, t_fixed, isl, hit, budget, scheduler, steady, searched, df_ttft):
    """Results ``ttft_load_ms`` of a plan with a decode-first row planned open loop: on the rows DF_Search
    searches (``searched``) the decode-first queue (``df_ttft``, DF_Search ``df_ttft_load_ms``), on every
    other row :func:`planner.equations.decode_first.ttft_load_sched_ms`.

    Parameters
    ----------
    prefill, wait, concurrency, t_fixed, isl, hit, budget, scheduler, steady : as
        :func:`planner.equations.decode_first.ttft_load_sched_ms`
    searched : str or array of str, :func:`searched_row`
    df_ttft : numeric, :func:`load_ttft_mean_df_ms` [ms]

    Returns
    -------
    numeric, TTFT at the load [ms]
    """
    return np.where(_searched(searched), _f(df_ttft),
                    dfs.ttft_load_sched_ms(prefill, wait, concurrency, t_fixed, isl, hit, budget, scheduler, steady))


@excel_twin(ttft_load_open_df_ms)
def _(prefill, wait, concurrency, t_fixed, isl, hit, budget, scheduler, steady, searched, df_ttft):
    base = dfs.ttft_load_sched_ms.xl(prefill, wait, concurrency, t_fixed, isl, hit, budget, scheduler, steady)
    return f'IF({searched}<>"",{df_ttft},{base})'


def ttft_load_p90_open_df_ms(prefill, wait_p90, concurrency, t_fixed, isl, hit, budget, scheduler, steady_p90,
                             searched, df_ttft_p90):
    """Results ``ttft_load_p90_ms`` of a plan with a decode-first row planned open loop: as
    :func:`ttft_load_open_df_ms` with the p90 (DF_Search ``df_ttft_load_p90_ms``) and
    :func:`planner.equations.decode_first.ttft_load_p90_sched_ms`.

    Returns
    -------
    numeric, p90 TTFT at the load [ms]
    """
    return np.where(_searched(searched), _f(df_ttft_p90),
                    dfs.ttft_load_p90_sched_ms(prefill, wait_p90, concurrency, t_fixed, isl, hit, budget, scheduler,
                                               steady_p90))


@excel_twin(ttft_load_p90_open_df_ms)
def _(prefill, wait_p90, concurrency, t_fixed, isl, hit, budget, scheduler, steady_p90, searched, df_ttft_p90):
    base = dfs.ttft_load_p90_sched_ms.xl(prefill, wait_p90, concurrency, t_fixed, isl, hit, budget, scheduler,
                                         steady_p90)
    return f'IF({searched}<>"",{df_ttft_p90},{base})'


def open_df_count(closed, scheduler, concurrency, rate_total, prefill, t_fixed, u, budget, s0, s1, osl, slo, q):
    """The TTFT target's count of a sizing chain row (Demand_Calc's, planner.finance.periods): the search's
    (:func:`search_instances`, the DF_Search_Periods sheet's) on a decode-first row planned open loop, the
    closed form ``closed`` elsewhere (``t_fixed`` and ``q`` blank: 0, as DF_Search copies them).

    Parameters
    ----------
    closed : numeric, the closed-form count (:func:`planner.equations.queueing.instances_for_rho`) [count]
    scheduler, concurrency : as :func:`search_floor`
    rate_total, prefill, t_fixed, u, budget, s0, s1, osl, slo, q : as :func:`instances_ttft_df`

    Returns
    -------
    numeric, instances [count]
    """
    n = search_instances(rate_total, prefill, zero_if_blank(t_fixed), u, budget, s0, s1, osl, slo, zero_if_blank(q),
                         scheduler, concurrency)
    return np.where(open_loop_df(scheduler, concurrency), n, _f(closed))


def tornado_ttft_base(searched, ttft_load, prefill, wait):
    """The Tornado's TTFT at the planned load at the planned value (``ttft_load_base``): the Results'
    ``ttft_load_ms``, but on a decode-first row planned open loop (``searched``, :func:`searched_row`) the
    request-alone queue ``P + W`` at the same load, the queue the Tornado's low and high cases read
    (Tornado_Calc), so that the driver's swing is not the change of law.

    Parameters
    ----------
    searched : str or array of str, :func:`searched_row`
    ttft_load : numeric, Results ttft_load_ms [ms]
    prefill : numeric, P, Results ttft_ms [ms]
    wait : numeric, W, Results prefill_wait_ms (the request-alone queue's) [ms]

    Returns
    -------
    numeric, TTFT [ms]
    """
    return np.where(_searched(searched), _f(prefill) + _f(wait), _f(ttft_load))


@excel_twin(tornado_ttft_base)
def _(searched, ttft_load, prefill, wait):
    return f'IF({searched}<>"",{prefill}+{wait},{ttft_load})'
