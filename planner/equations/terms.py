"""Sub-expressions of the pass-packing, decode-first and queueing formulas, each a column of
its own so a long table's cells stay short (planner.workbook.shared_terms).

The twins of :mod:`planner.equations.prefill_passes` (``burst_ttft_u``),
:mod:`planner.equations.decode_first` (``steady_ttft_ms``) and :mod:`planner.equations.queueing`
(``ttft_rho_max``) hold these terms every time they use them: a Sensitivity_Hit cell held up
to 5.7 thousand characters, a third of it ``IF(ISNUMBER(M),M,u)``. Each function here computes one
such term; its twin is the term's text with a guard for blank inputs (a blank concurrency, a
blank ``ln x``), and ``func.xl_term`` the unguarded text the composite formulas hold, in the
branch where the guard holds (they test the same input first). The composite columns keep their
own Python values (the functions of those modules, unchanged): a term column only shortens the
formula text, and LibreOffice's recalculation of every cell holds both the same.

The composite twins take each term's text from here (``func.xl_term``, or ``func.xl`` where the
term has no guard), so a term's formula is written in one place and the composite text holds it
exactly; tests/test_shared_terms.py also finds every term in the example's formulas, so a term
that no longer matches is said there, not left as silently long formulas.
"""

from __future__ import annotations

import numpy as np

from planner.equations.constants import C, N
from planner.equations.kvhit import excel_twin

EPS = 1e-9   # the tolerance of CEILING on a whole number of passes (j u / M = 2 exactly is 2 passes; prefill_passes.EPS)


def _f(x):
    return np.asarray(x, dtype=float)


def _term(func, text):
    """Register ``text(*args)`` as the unguarded term of ``func``'s column."""
    func.xl_term = text
    return func


def _when_c(concurrency, text):
    return f'IF(ISNUMBER({concurrency}),{text},"")'


# --------------------------------------------------------------------------- a burst packed into passes
def pass_tokens(u, budget):
    """New tokens per forward pass of a burst, ``M`` (``max_num_batched_tokens``), or the request's
    own ``u`` where it is blank (one request per pass; :func:`planner.equations.prefill_passes.burst_ttft_u`).

    Parameters
    ----------
    u : numeric, new prompt tokens per request [tokens]
    budget : numeric, M, NaN when blank [tokens]

    Returns
    -------
    numeric, tokens per pass [tokens]
    """
    M = _f(budget)
    return np.where(np.isfinite(M), M, _f(u))


@excel_twin(pass_tokens)
def _(u, budget):
    return f"IF(ISNUMBER({budget}),{budget},{u})"


def first_pass_tokens(u, budget):
    """Prompt tokens of the first forward pass of a burst, ``min(u, M)`` (the first request alone).

    Parameters
    ----------
    u : numeric, new prompt tokens per request [tokens]
    budget : numeric, M, NaN when blank [tokens]

    Returns
    -------
    numeric, tokens [tokens]
    """
    return np.minimum(_f(u), pass_tokens(u, budget))


@excel_twin(first_pass_tokens)
def _(u, budget):
    return f"MIN({u},{pass_tokens.xl(u, budget)})"


def pass_variable_ms(prefill, t_fixed, u, budget):
    """The prefill's time beyond the fixed cost of its passes, ``V = max(P - ceil(u/M) F, 0)``
    (:func:`planner.equations.prefill_passes.burst_ttft_u`).

    Parameters
    ----------
    prefill : numeric, request-alone prefill P [ms]
    t_fixed : numeric, fixed cost per forward pass F [ms]
    u : numeric, new prompt tokens per request [tokens]
    budget : numeric, M, NaN when blank [tokens]

    Returns
    -------
    numeric, V [ms]
    """
    m = pass_tokens(u, budget)
    return np.maximum(_f(prefill) - np.ceil(_f(u) / m - EPS) * _f(t_fixed), 0.0)


@excel_twin(pass_variable_ms)
def _(prefill, t_fixed, u, budget):
    return f"MAX({prefill}-CEILING({u}/{pass_tokens.xl(u, budget)}-{EPS:g},1)*{t_fixed},0)"


# --------------------------------------------------------------------------- a decode-first closed loop
def _others(c):
    return np.maximum(_f(c) - 1, 0.0)


def _b(c):
    return f"MAX({c}-1,0)"


def _m(u, budget, c):
    return f"IF(ISNUMBER({budget}),{budget},{u}+{_b(c)})"


def _m_py(u, budget, c):
    M = _f(budget)
    return np.where(np.isfinite(M), M, _f(u) + _others(c))


def _guard_c(c, x):
    return np.where(np.isfinite(_f(c)), x, np.nan)


def loop_others(concurrency):
    """Decodes beside a prompt in a closed loop of ``c`` clients, ``b = max(c - 1, 0)``
    (:func:`planner.equations.decode_first.steady_ttft_ms`).

    Parameters
    ----------
    concurrency : numeric, c, NaN when blank [count]

    Returns
    -------
    numeric, b [requests] (NaN without concurrency)
    """
    return _guard_c(concurrency, _others(concurrency))


@excel_twin(loop_others)
def _(concurrency):
    return _when_c(concurrency, _b(concurrency))


_term(loop_others, _b)


def loop_pass_tokens(u, budget, concurrency):
    """New tokens per step of the loop, ``M``, or ``u + b`` where it is blank (one prompt per step
    beside the decodes; :func:`planner.equations.decode_first.steady_ttft_ms`).

    Parameters
    ----------
    u : numeric, new prompt tokens per request [tokens]
    budget : numeric, M, NaN when blank [tokens]
    concurrency : numeric, c, NaN when blank [count]

    Returns
    -------
    numeric, tokens per step [tokens] (NaN without concurrency)
    """
    return _guard_c(concurrency, _m_py(u, budget, concurrency))


@excel_twin(loop_pass_tokens)
def _(u, budget, concurrency):
    return _when_c(concurrency, _m(u, budget, concurrency))


_term(loop_pass_tokens, _m)


def _v(prefill, t_fixed, u, budget, c):
    return f"MAX({prefill}-CEILING({u}/{_m(u, budget, c)}-{EPS:g},1)*{t_fixed},0)"


def loop_variable_ms(prefill, t_fixed, u, budget, concurrency):
    """The prefill's time beyond the fixed cost of its passes alone, ``V = max(P - ceil(u/M) F, 0)``,
    with the loop's tokens per step (:func:`loop_pass_tokens`).

    Parameters
    ----------
    prefill : numeric, request-alone prefill P [ms]
    t_fixed : numeric, fixed cost per forward pass F [ms]
    u : numeric, new prompt tokens per request [tokens]
    budget : numeric, M, NaN when blank [tokens]
    concurrency : numeric, c, NaN when blank [count]

    Returns
    -------
    numeric, V [ms] (NaN without concurrency)
    """
    m = _m_py(u, budget, concurrency)
    return _guard_c(concurrency, np.maximum(_f(prefill) - np.ceil(_f(u) / m - EPS) * _f(t_fixed), 0.0))


@excel_twin(loop_variable_ms)
def _(prefill, t_fixed, u, budget, concurrency):
    return _when_c(concurrency, _v(prefill, t_fixed, u, budget, concurrency))


_term(loop_variable_ms, _v)


def _k(u, budget, c):
    return f"CEILING({u}/MAX({_m(u, budget, c)}-{_b(c)},1)-{EPS:g},1)"


def loop_prompt_steps(u, budget, concurrency):
    """Steps a prompt takes beside ``b`` decodes, ``k = ceil(u / max(M - b, 1))``.

    Parameters
    ----------
    u : numeric, new prompt tokens per request [tokens]
    budget : numeric, M, NaN when blank [tokens]
    concurrency : numeric, c, NaN when blank [count]

    Returns
    -------
    numeric, k [steps] (NaN without concurrency)
    """
    m = _m_py(u, budget, concurrency)
    k = np.ceil(_f(u) / np.maximum(m - _others(concurrency), 1.0) - EPS)
    return _guard_c(concurrency, k)


@excel_twin(loop_prompt_steps)
def _(u, budget, concurrency):
    return _when_c(concurrency, _k(u, budget, concurrency))


_term(loop_prompt_steps, _k)


def _s_b(s0, s1, c):
    b = _b(c)
    return f"IF({b}>0,{s0}+{s1}*{b},0)"


def loop_step_ms(s0, s1, concurrency):
    """Decode-step time of the loop's ``b`` decodes, ``s(b) = s0 + s1 b`` (0 without decodes).

    Parameters
    ----------
    s0 : numeric, step time of the weights (``step_weights_ms``) [ms]
    s1 : numeric, step time per request (``step_kv_ms``) [ms per request]
    concurrency : numeric, c, NaN when blank [count]

    Returns
    -------
    numeric, s(b) [ms] (NaN without concurrency)
    """
    b = _others(concurrency)
    return _guard_c(concurrency, np.where(b > 0, _f(s0) + _f(s1) * b, 0.0))


@excel_twin(loop_step_ms)
def _(s0, s1, concurrency):
    return _when_c(concurrency, _s_b(s0, s1, concurrency))


_term(loop_step_ms, _s_b)


def _b_s(u, budget, osl, c):
    return f"MAX(MIN({osl}*{_m(u, budget, c)}/({u}+{osl}),{_b(c)}),0)"


def loop_steady_decodes(u, budget, osl, concurrency):
    """Decodes beside a full prefill chunk in the steady state, ``b_s = min(osl M / (u + osl), b)``
    floored at 0 (:func:`planner.equations.decode_first.steady_ttft_ms`).

    Parameters
    ----------
    u : numeric, new prompt tokens per request [tokens]
    budget : numeric, M, NaN when blank [tokens]
    osl : numeric, output length [tokens]
    concurrency : numeric, c, NaN when blank [count]

    Returns
    -------
    numeric, b_s [requests] (NaN without concurrency)
    """
    m, L = _m_py(u, budget, concurrency), _f(osl)
    return _guard_c(concurrency, np.maximum(np.minimum(L * m / (_f(u) + L), _others(concurrency)), 0.0))


@excel_twin(loop_steady_decodes)
def _(u, budget, osl, concurrency):
    return _when_c(concurrency, _b_s(u, budget, osl, concurrency))


_term(loop_steady_decodes, _b_s)


def _n(u, budget, c):
    return f"FLOOR(({budget}-{_b(c)})/{u}+{EPS:g},1)"


def loop_group_size(u, budget, concurrency):
    """Whole prompts of one step beside the decodes, ``n = floor((M - b)/u)`` (the group law of
    :func:`planner.equations.decode_first.steady_ttft_ms`; blank where ``M`` is blank or below ``b``).

    Parameters
    ----------
    u : numeric, new prompt tokens per request [tokens]
    budget : numeric, M, NaN when blank [tokens]
    concurrency : numeric, c, NaN when blank [count]

    Returns
    -------
    numeric, n [requests] (NaN without concurrency or budget, or where M < b)
    """
    M, b = _f(budget), _others(concurrency)
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(_f(concurrency)) & np.isfinite(M) & (M - b >= 0)
        return np.where(ok, np.floor((M - b) / _f(u) + EPS), np.nan)


@excel_twin(loop_group_size)
def _(u, budget, concurrency):
    b = _b(concurrency)
    return (f'IF(AND(ISNUMBER({concurrency}),ISNUMBER({budget})),IF({budget}-{b}>=0,'
            f'{_n(u, budget, concurrency)},""),"")')


_term(loop_group_size, _n)


# --------------------------------------------------------------------------- the Lambert W of the TTFT target
def _when_lnx(lnx, text):
    return f'IF(ISNUMBER({lnx}),{text},"")'


def _ll(lnx):
    return f"IF({lnx}>{N.LOG_LIMIT},{lnx},LN(1+EXP({lnx})))"


def _ll_py(lnx):
    x = _f(lnx)
    with np.errstate(invalid="ignore", over="ignore"):
        big = x > C.LOG_LIMIT
        return np.where(big, x, np.log(1 + np.exp(np.where(big, 0.0, x))))


def log_softplus(lnx):
    """``ln(1 + x)`` from ``ln x``, the start of Winitzki's approximation of ``W0(x)`` (equal to
    ``ln x`` above ``log_limit``; :func:`planner.equations.queueing.ttft_rho_max`).

    Parameters
    ----------
    lnx : numeric, ln x of the Lambert W argument (:func:`planner.equations.queueing.ttft_log_x`) [1]

    Returns
    -------
    numeric, ln(1 + x) [1] (NaN where ln x is blank)
    """
    return _ll_py(lnx)


@excel_twin(log_softplus)
def _(lnx):
    return _when_lnx(lnx, _ll(lnx))


_term(log_softplus, _ll)


def _w0(lnx):
    ll = _ll(lnx)
    return f"(({ll})*(1-LN(1+{ll})/(2+{ll})))"


def _w0_py(lnx):
    ll = _ll_py(lnx)
    with np.errstate(invalid="ignore"):
        return ll * (1 - np.log(1 + ll) / (2 + ll))


def lambert_w_start(lnx):
    r"""Winitzki's approximation of ``W0(x)`` from ``ln x`` (LNCS 2667, 2003):
    ``w = L (1 - ln(1 + L)/(2 + L))``, ``L = ln(1 + x)``.

    Parameters
    ----------
    lnx : numeric, ln x [1]

    Returns
    -------
    numeric, w [1] (NaN where ln x is blank)
    """
    return _w0_py(lnx)


@excel_twin(lambert_w_start)
def _(lnx):
    return _when_lnx(lnx, _w0(lnx))


_term(lambert_w_start, _w0)


def _w1(lnx):
    w = _w0(lnx)
    return f"({w}*(1+{lnx}-LN({w}))/(1+{w}))"


def lambert_w_step(lnx):
    r"""One Newton step on ``w + ln w = ln x`` from :func:`lambert_w_start`:
    ``w (1 + ln x - ln w)/(1 + w)`` (the first of the two of :func:`planner.equations.queueing.ttft_rho_max`).

    Parameters
    ----------
    lnx : numeric, ln x [1]

    Returns
    -------
    numeric, w [1] (NaN where ln x is blank)
    """
    w = _w0_py(lnx)
    with np.errstate(invalid="ignore", divide="ignore"):
        return w * (1 + _f(lnx) - np.log(w)) / (1 + w)


@excel_twin(lambert_w_step)
def _(lnx):
    return _when_lnx(lnx, _w1(lnx))


_term(lambert_w_step, _w1)
