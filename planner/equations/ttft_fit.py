"""The fitting math of the calibration (numpy, and the KV load time of :mod:`planner.equations.kvhit`):
the TTFT law (:func:`ttft_law`) and its fit to measured points (:func:`fit_points`);
:mod:`planner.plan.calibrate` fits each deployment of the ``Measurements`` sheet with it and
fills the workloads.

Fit method: the error minimised is the *relative* one,
``sum(((model - measured) / measured)^2)``, so a 32k-token point weighs as much as a 2k
one. For a given ``B`` the model is linear in ``(t_fixed, k_attn, k_ffn)`` once the
``min`` branch of each point is known, so the inner problem is a non-negative least
squares on the rows divided by the measured TTFT, solved exactly by trying every subset
of free parameters (3 parameters: 8 subsets) and keeping the best feasible one; the
``min`` branch is iterated to a fixed point (alpha = 0, the default, needs no iteration).
``B_eff`` is found by a 1-D search over ``log B`` (a grid, then golden-section refinement).
"""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np

from planner.equations import kvhit as m
from planner.equations.kvhit import excel_twin

B_MIN_GBPS, B_MAX_GBPS = 0.01, 1e5  # search range of B_eff [GB/s]
PARAMS = ("t_fixed", "k_attn", "k_ffn")


# --------------------------------------------------------------------------- the law
def ttft_law(isl, hit, t_fixed, k_attn, k_ffn, s_kv, b_gbps, alpha=0.0):
    """Modelled TTFT of a deployment at input length ``isl`` and hit ratio ``hit``.

    Parameters
    ----------
    isl : numeric, input length N [tokens]
    hit : numeric, prefix-cache hit ratio h [fraction]
    t_fixed : float, fixed prefill overhead [ms]
    k_attn : float, attention time per token squared at 0 hit [ms/token^2]
    k_ffn : float, linear-layer time per token at 0 hit [ms/token]
    s_kv : float, KV bytes per token per GPU, S [B]
    b_gbps : float, effective KV load bandwidth [GB/s]
    alpha : numeric, load/compute overlap [fraction]

    Returns
    -------
    numeric, TTFT [ms]
    """
    n, h = np.asarray(isl, dtype=float), np.asarray(hit, dtype=float)
    load = m.kv_load_ms(h, n, s_kv, b_gbps)
    comp = fitted_compute_ms(n, h, k_attn, k_ffn)
    return t_fixed + comp + load - np.asarray(alpha, dtype=float) * np.minimum(load, comp)


# --------------------------------------------------------------------------- the Calibration sheet's cells
# Each part of the fitted law as a twin (the Calibration sheet, and Resolved's calibrated cells, are
# built from these: planner.workbook.calibration_sheet holds no formula text of its own).
def fitted_compute_ms(isl, hit, k_attn, k_ffn):
    r"""The fitted law's prefill compute at input length ``isl`` and hit ratio ``hit``.

    .. math:: T_c = k_{attn} N^2 (1 - h^2) + k_{ffn} N (1 - h)

    Parameters
    ----------
    isl : numeric, input length N [tokens]
    hit : numeric, hit ratio h [fraction]
    k_attn : numeric, attention time per token squared at 0 hit [ms/token^2]
    k_ffn : numeric, linear-layer time per token at 0 hit [ms/token]

    Returns
    -------
    numeric [ms]

    Source: docs/model.md section 1 (T_attn0 = k_attn N^2, T_ffn0 = k_ffn N).
    """
    n, h = np.asarray(isl, dtype=float), np.asarray(hit, dtype=float)
    return k_attn * n**2 * (1 - h**2) + k_ffn * n * (1 - h)


@excel_twin(fitted_compute_ms)
def _(isl, hit, k_attn, k_ffn):
    return f"{k_attn}*{isl}^2*(1-{hit}^2)+{k_ffn}*{isl}*(1-{hit})"


def fixed_with_hit_cost(t_fixed, c_hit, hit):
    r"""The fixed prefill time of a request, with the per-request hit cost when it has hits.

    .. math:: t = t_{fixed} + c_{hit} \cdot [h > 0]

    Parameters
    ----------
    t_fixed : numeric, fixed prefill overhead [ms]
    c_hit : numeric, the fit's per-request hit cost (0 when not selected) [ms]
    hit : numeric, hit ratio [fraction]

    Returns
    -------
    numeric [ms]
    """
    return np.asarray(t_fixed, dtype=float) + np.asarray(c_hit, dtype=float) * (np.asarray(hit, dtype=float) > 0)


@excel_twin(fixed_with_hit_cost)
def _(t_fixed, c_hit, hit):
    return f"{t_fixed}+{c_hit}*({hit}>0)"


def attn0_ms(k_attn, isl):
    r"""Attention prefill time at 0 hit of a calibrated workload: :math:`T_{attn0} = k_{attn} N^2`.

    Parameters
    ----------
    k_attn : numeric [ms/token^2]
    isl : numeric, input length N [tokens]

    Returns
    -------
    numeric [ms]
    """
    return np.asarray(k_attn, dtype=float) * np.asarray(isl, dtype=float) ** 2


@excel_twin(attn0_ms)
def _(k_attn, isl):
    return f"{k_attn}*{isl}^2"


def ffn0_ms(k_ffn, isl):
    r"""Linear-layer prefill time at 0 hit of a calibrated workload: :math:`T_{ffn0} = k_{ffn} N`.

    Parameters
    ----------
    k_ffn : numeric [ms/token]
    isl : numeric, input length N [tokens]

    Returns
    -------
    numeric [ms]
    """
    return np.asarray(k_ffn, dtype=float) * np.asarray(isl, dtype=float)


@excel_twin(ffn0_ms)
def _(k_ffn, isl):
    return f"{k_ffn}*{isl}"


def decode_ms(osl, tpot_per_token_ms):
    r"""Decode time of a request from the measured time per output token: :math:`D = osl \cdot tpot`.

    Parameters
    ----------
    osl : numeric, output length [tokens]
    tpot_per_token_ms : numeric, measured time per output token [ms/token]

    Returns
    -------
    numeric [ms]
    """
    return np.asarray(osl, dtype=float) * np.asarray(tpot_per_token_ms, dtype=float)


@excel_twin(decode_ms)
def _(osl, tpot_per_token_ms):
    return f"{osl}*{tpot_per_token_ms}"


def request_alone_ms(ttft_ms, load_factor, taken_ms=0.0):
    r"""A measured TTFT at concurrency above 1 as the request-alone TTFT the law fits:
    :math:`(t - t_{off}) / f` (``load_factor`` from planner.plan.calib_extra; 1 at concurrency 1).

    Parameters
    ----------
    ttft_ms : numeric, the measured TTFT [ms]
    load_factor : numeric, the queueing factor of the test's load [ratio]
    taken_ms : numeric, the part of the measured TTFT the load-test model takes off before dividing
        (the per-pass fixed cost and constant of planner.plan.load_tests.prefill_given_fixed) [ms]

    Returns
    -------
    numeric [ms]
    """
    return (np.asarray(ttft_ms, dtype=float) - np.asarray(taken_ms, dtype=float)) / np.asarray(load_factor,
                                                                                                dtype=float)


@excel_twin(request_alone_ms)
def _(ttft_ms, load_factor, taken_ms=None):
    top = ttft_ms if taken_ms is None else f"({ttft_ms}-{taken_ms})"
    return f"{top}/{load_factor}"


def relative_error(fitted, measured):
    r"""The fit's relative error at a point: :math:`e = fitted / measured - 1`.

    Parameters
    ----------
    fitted, measured : numeric [ms]

    Returns
    -------
    numeric [ratio]
    """
    return np.asarray(fitted, dtype=float) / np.asarray(measured, dtype=float) - 1


@excel_twin(relative_error)
def _(fitted, measured):
    return f"{fitted}/{measured}-1"


def abs_error(error):
    """The size of a relative error, :math:`|e|` [ratio] (Excel ``ABS``).

    Parameters
    ----------
    error : numeric [ratio]

    Returns
    -------
    numeric [ratio]
    """
    return np.abs(np.asarray(error, dtype=float))


@excel_twin(abs_error)
def _(error):
    return f"ABS({error})"


def median_abs_error(abs_errors):
    """The median of a fit's absolute relative errors [ratio] (Excel ``MEDIAN``).

    Parameters
    ----------
    abs_errors : array of numeric [ratio]

    Returns
    -------
    float [ratio]
    """
    return float(np.median(np.asarray(abs_errors, dtype=float)))


@excel_twin(median_abs_error)
def _(abs_errors):
    return f"MEDIAN({abs_errors})"


def max_abs_error(abs_errors):
    """The largest of a fit's absolute relative errors [ratio] (Excel ``MAX``).

    Parameters
    ----------
    abs_errors : array of numeric [ratio]

    Returns
    -------
    float [ratio]
    """
    return float(np.max(np.asarray(abs_errors, dtype=float)))


@excel_twin(max_abs_error)
def _(abs_errors):
    return f"MAX({abs_errors})"


def nnls_small(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, float]:
    """Non-negative least squares ``min |a x - b|, x >= 0`` for a few columns, exactly:
    every subset of free columns is solved unconstrained and the best feasible kept."""
    k = a.shape[1]
    scale = np.linalg.norm(a, axis=0)
    scale[scale == 0] = 1.0
    a_s = a / scale
    best_x, best_r = np.zeros(k), float(b @ b)
    for size in range(1, k + 1):
        for cols in combinations(range(k), size):
            sub = a_s[:, cols]
            x_sub, *_ = np.linalg.lstsq(sub, b, rcond=None)
            if np.any(x_sub < 0):
                continue
            r = b - sub @ x_sub
            rr = float(r @ r)
            if rr < best_r - 1e-15:
                x = np.zeros(k)
                x[list(cols)] = x_sub
                best_x, best_r = x, rr
    return best_x / scale, best_r


def _fit_fixed_b(n, h, y, alpha, s_kv, b_gbps) -> tuple[np.ndarray, float]:
    """Best non-negative (t_fixed, k_attn, k_ffn) for a given B, relative error."""
    load = m.kv_load_ms(h, n, s_kv, b_gbps) if np.isfinite(b_gbps) else np.zeros_like(n)
    cols = np.column_stack([np.ones_like(n), n**2 * (1 - h**2), n * (1 - h)])
    load_bound = np.zeros(len(n), dtype=bool)  # branch of min(load, compute), start: compute-bound
    x = np.zeros(3)
    rr = math.inf
    for _ in range(20):
        # load <= compute: ttft = fixed + comp + (1-a) load; load > compute: fixed + (1-a) comp + load
        comp_coef = np.where(load_bound, 1 - alpha, 1.0)
        load_coef = np.where(load_bound, 1.0, 1 - alpha)
        a = cols.copy()
        a[:, 1:] *= comp_coef[:, None]
        a /= y[:, None]
        b = (y - load_coef * load) / y
        x, rr = nnls_small(a, b)
        comp = cols[:, 1:] @ x[1:]
        new = load > comp
        if np.array_equal(new, load_bound) or not np.any(alpha > 0):
            break
        load_bound = new
    return x, rr


def golden_section_min(f, lo: float, hi: float, iters: int = 60) -> float:
    g = (math.sqrt(5) - 1) / 2
    a, b = lo, hi
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(iters):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = f(d)
    return (a + b) / 2


def fit_points(isl, hit, ttft_ms, s_kv: float, b_default: float, alpha=0.0, fit_b: bool = True) -> dict:
    """Fit (t_fixed, k_attn, k_ffn[, B_eff]) to measured points, minimising relative error.

    Parameters
    ----------
    isl, hit, ttft_ms : array-like, the measured points [tokens], [fraction], [ms]
    s_kv : float, KV bytes per token per GPU [B]
    b_default : float, bandwidth used when no point has hit > 0 (or ``fit_b`` is False) [GB/s]
    alpha : array-like or float, overlap of each point [fraction]
    fit_b : bool, fit B_eff when points with hit > 0 exist

    Returns
    -------
    dict with t_fixed [ms], k_attn [ms/token^2], k_ffn [ms/token], b_gbps [GB/s],
    b_fitted (bool), b_at_bound (bool), sse (sum of squared relative errors)
    """
    n = np.asarray(isl, dtype=float)
    h = np.asarray(hit, dtype=float)
    y = np.asarray(ttft_ms, dtype=float)
    a = np.broadcast_to(np.asarray(alpha, dtype=float), n.shape)
    has_hit = bool(np.any(h > 0)) and s_kv > 0 and fit_b
    if not has_hit:
        x, rr = _fit_fixed_b(n, h, y, a, s_kv, b_default)
        return dict(t_fixed=x[0], k_attn=x[1], k_ffn=x[2], b_gbps=float(b_default), b_fitted=False,
                    b_at_bound=False, sse=rr)
    lo, hi = math.log(B_MIN_GBPS), math.log(B_MAX_GBPS)
    f = lambda lb: _fit_fixed_b(n, h, y, a, s_kv, math.exp(lb))[1]
    grid = np.linspace(lo, hi, 161)
    vals = np.array([f(g) for g in grid])
    i = int(np.argmin(vals))
    at_bound = i in (0, len(grid) - 1)
    lb = grid[i] if at_bound else golden_section_min(f, grid[i - 1], grid[i + 1])
    b = math.exp(lb)
    x, rr = _fit_fixed_b(n, h, y, a, s_kv, b)
    return dict(t_fixed=x[0], k_attn=x[1], k_ffn=x[2], b_gbps=b, b_fitted=True, b_at_bound=at_bound, sse=rr)
