"""Calibration beyond the three-term fit (issue 20, item 4), kept apart from :mod:`planner.plan.calibrate`
(which the under-load work also edits) so that each piece merges on its own.

* :func:`scale_roofline`: too few distinct points to fit the law (one length and one hit ratio)
  no longer throws the measurement away: the roofline estimate (:mod:`planner.equations.roofline`) is scaled
  to reproduce it, i.e. the deployment's prefill efficiency (the fraction of the dense peak it
  achieves) is fitted, and the row says so.
* :func:`fit_alpha`: the load/compute overlap alpha fitted, with a 95% interval, when the points
  have hits at several (length, hit) pairs and the Measurements leave alpha blank. With alpha fixed
  at 0 or 1 an overlapping stack's hidden load time is absorbed into an implausible B_eff.
* :func:`select_hit_cost`: a per-request cost of a hit (a fixed time a request with any cached
  prefix pays: lookup, transfer set-up), added only when the points call for it: kept when it
  lowers the small-sample Akaike information criterion (AICc, Hurvich & Tsai 1989) by more than 2.

Everything minimises the relative error, as :mod:`planner.equations.ttft_fit` does.
"""

from __future__ import annotations

import math

import numpy as np

from planner.equations import kvhit as m
from planner.equations.ttft_fit import B_MAX_GBPS, B_MIN_GBPS, golden_section_min, nnls_small

# two-sided 97.5% quantiles of Student's t for 1..30 degrees of freedom (any statistics table,
# e.g. NIST/SEMATECH e-Handbook of Statistical Methods, table 1.4.2.3); 1.96 beyond
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
         2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
         2.045, 2.042)


def t975(dof: int) -> float:
    """Student's t quantile 0.975 for ``dof`` degrees of freedom (table; 1.96 above 30)."""
    return _T975[dof - 1] if 1 <= dof <= len(_T975) else 1.96


# --------------------------------------------------------------------------- one point: scale the roofline
def scale_roofline(isl, hit, ttft_ms, attn1_ms, ffn1_ms, s_kv: float, b_gbps: float, alpha=0.0) -> float:
    """The factor ``x`` that scales a roofline prefill to measured points (least relative error).

    The roofline at 100% of peak gives ``attn1_ms`` and ``ffn1_ms`` at 0 hit for each point's length;
    the model of a point is ``x (attn1 (1-h^2) + ffn1 (1-h)) + load - alpha min(load, compute)``
    with ``load = h N S / B``; ``x`` is found in closed form per branch of the min and iterated.
    The fitted efficiency is ``1 / x`` (the fraction of the peak achieved).

    Parameters
    ----------
    isl, hit, ttft_ms : array-like, the points [tokens], [fraction], [ms]
    attn1_ms, ffn1_ms : array-like, roofline attention and linear times at 0 hit and 100% peak [ms]
    s_kv : float, KV bytes per token per GPU [B]
    b_gbps : float, KV load bandwidth [GB/s]
    alpha : array-like, overlap [fraction]

    Returns
    -------
    float, the scale x [1] (> 0)
    """
    n, h, y = (np.asarray(v, dtype=float) for v in (isl, hit, ttft_ms))
    comp1 = np.asarray(attn1_ms, dtype=float) * (1 - h**2) + np.asarray(ffn1_ms, dtype=float) * (1 - h)
    load = m.kv_load_ms(h, n, s_kv, b_gbps)
    a = np.broadcast_to(np.asarray(alpha, dtype=float), n.shape)
    x = 1.0
    for _ in range(20):
        load_bound = load > x * comp1
        coef = np.where(load_bound, 1 - a, 1.0) * comp1   # y = coef x + rest
        rest = np.where(load_bound, 1.0, 1 - a) * load
        w = 1 / y**2
        new = float(np.sum(w * coef * (y - rest)) / np.sum(w * coef**2))
        new = max(new, 1e-9)
        if abs(new - x) <= 1e-12 * x:
            x = new
            break
        x = new
    return x


# --------------------------------------------------------------------------- the law with options
def fit_law(n, h, y, s_kv: float, b_gbps: float, alpha: float, hit_cost: bool = False) -> tuple[np.ndarray, float]:
    """Non-negative ``(t_fixed, k_attn, k_ffn[, c_hit])`` for a given B and alpha, relative error.

    ``TTFT = t_fixed + c_hit [h > 0] + comp + load - alpha min(load, comp)`` with
    ``comp = k_attn N^2 (1-h^2) + k_ffn N (1-h)``, ``load = h N S / B`` (:func:`planner.equations.ttft_fit.ttft_law`
    plus the per-request hit cost). Returns the parameters and the sum of squared relative errors.
    """
    load = m.kv_load_ms(h, n, s_kv, b_gbps)
    cols = [np.ones_like(n), n**2 * (1 - h**2), n * (1 - h)] + ([(h > 0).astype(float)] if hit_cost else [])
    cols = np.column_stack(cols)
    load_bound = np.zeros(len(n), dtype=bool)
    x, rr = np.zeros(cols.shape[1]), math.inf
    for _ in range(20):
        comp_coef = np.where(load_bound, 1 - alpha, 1.0)
        load_coef = np.where(load_bound, 1.0, 1 - alpha)
        a = cols.copy()
        a[:, 1:3] *= comp_coef[:, None]
        a /= y[:, None]
        x, rr = nnls_small(a, (y - load_coef * load) / y)
        new = load > cols[:, 1:3] @ x[1:3]
        if np.array_equal(new, load_bound) or alpha == 0:
            break
        load_bound = new
    return x, rr


def _best_b(n, h, y, s_kv, alpha, hit_cost, grid_n: int = 25) -> tuple[float, np.ndarray, float]:
    """B_eff minimising the error at a given alpha: log grid then golden section."""
    lo, hi = math.log(B_MIN_GBPS), math.log(B_MAX_GBPS)
    f = lambda lb: fit_law(n, h, y, s_kv, math.exp(lb), alpha, hit_cost)[1]  # noqa: E731
    grid = np.linspace(lo, hi, grid_n)
    vals = [f(g) for g in grid]
    i = int(np.argmin(vals))
    lb = grid[i] if i in (0, grid_n - 1) else golden_section_min(f, grid[i - 1], grid[i + 1], iters=22)
    x, rr = fit_law(n, h, y, s_kv, math.exp(lb), alpha, hit_cost)
    return math.exp(lb), x, rr


def can_fit_alpha(isl, hit) -> bool:
    """Alpha can be told apart when there are points at 0 hit and at least three distinct
    (length, hit > 0) pairs (two hit points are matched exactly by B_eff and alpha together), and at
    least seven distinct points for the five parameters (t_fixed, k_attn, k_ffn, B_eff, alpha)."""
    pairs = {(float(a), float(b)) for a, b in zip(isl, hit)}
    hit_pairs = {p for p in pairs if p[1] > 0}
    return any(p[1] == 0 for p in pairs) and len(hit_pairs) >= 3 and len(pairs) >= 7


def fit_alpha(isl, hit, ttft_ms, s_kv: float, hit_cost: bool = False, grid_n: int = 11) -> dict:
    """Alpha fitted with the other parameters: a profile over alpha in [0, 1] (grid, then golden
    section), each alpha with its best B_eff and non-negative linear terms.

    The 95% interval is the set of alpha whose error stays within the profile-likelihood bound
    ``SSE(alpha) <= SSE_min (1 + t^2 / (n - p))`` (an F test with one degree of freedom, ``t`` the
    0.975 quantile of Student's t with ``n - p`` degrees of freedom, ``p`` the parameters).

    Returns
    -------
    dict: alpha, lo, hi (the interval, on the grid's resolution refined by linear interpolation),
    b_gbps, x (the linear terms), sse, identified (False when the interval is all of [0, 1])
    """
    n, h, y = (np.asarray(v, dtype=float) for v in (isl, hit, ttft_ms))
    grid = np.linspace(0.0, 1.0, grid_n)
    prof = np.array([_best_b(n, h, y, s_kv, a, hit_cost)[2] for a in grid])
    k = int(np.argmin(prof))
    if 0 < k < grid_n - 1:
        a_hat = golden_section_min(lambda a: _best_b(n, h, y, s_kv, a, hit_cost)[2], grid[k - 1], grid[k + 1], iters=12)
    else:
        a_hat = float(grid[k])
    b, x, sse = _best_b(n, h, y, s_kv, a_hat, hit_cost)
    if sse > prof[k]:
        a_hat, (b, x, sse) = float(grid[k]), _best_b(n, h, y, s_kv, float(grid[k]), hit_cost)
    p = 5 + (1 if hit_cost else 0)
    dof = max(len(n) - p, 1)
    bound = max(sse, len(n) * SSE_FLOOR) * (1 + t975(dof) ** 2 / dof)
    inside = prof <= bound
    prof_at = lambda a: _best_b(n, h, y, s_kv, a, hit_cost)[2]  # noqa: E731
    lo, hi = _edge(grid, prof, bound, a_hat, -1, prof_at), _edge(grid, prof, bound, a_hat, +1, prof_at)
    return {"alpha": float(a_hat), "lo": lo, "hi": hi, "b_gbps": b, "x": x, "sse": sse,
            "identified": not (inside.all())}


def _edge(grid, prof, bound, a_hat, step, prof_at, iters: int = 8) -> float:
    """Where the profile crosses ``bound`` walking from ``a_hat`` by ``step``: the first grid point
    outside, then bisection between it and ``a_hat`` (inside); the grid's end when none is outside."""
    outside = [g for g, p in zip(grid, prof) if p > bound and (g > a_hat if step > 0 else g < a_hat)]
    if not outside:
        return float(grid[-1] if step > 0 else grid[0])
    lo_in, hi_out = float(a_hat), float(min(outside) if step > 0 else max(outside))
    for _ in range(iters):
        mid = (lo_in + hi_out) / 2
        if prof_at(mid) > bound:
            hi_out = mid
        else:
            lo_in = mid
    return (lo_in + hi_out) / 2


# --------------------------------------------------------------------------- selection of the hit cost
SSE_FLOOR = 1e-4 ** 2  # squared relative error per point below which a fit is exact for the selection


def aicc(sse: float, n: int, k: int) -> float:
    """Small-sample Akaike criterion of a least-squares fit: ``n ln(SSE/n) + 2k + 2k(k+1)/(n-k-1)``
    (Hurvich & Tsai, Biometrika 76 (1989) 297); inf when ``n <= k + 1``."""
    if n <= k + 1:
        return math.inf
    # relative errors below 0.01% are below any load test's precision: an error sum under that floor
    # counts as the floor, so two fits that both reproduce the points are told apart by k alone
    return n * math.log(max(sse, n * SSE_FLOOR) / n) + 2 * k + 2 * k * (k + 1) / (n - k - 1)


def select_hit_cost(isl, hit, ttft_ms, s_kv: float, alpha: float, b_default: float | None = None) -> dict:
    """Fit with and without the per-request hit cost; keep it only when AICc falls by more than 2.

    Parameters
    ----------
    isl, hit, ttft_ms : array-like, the points [tokens], [fraction], [ms]
    s_kv : float, KV bytes per token per GPU [B]
    alpha : float, overlap used in both fits [fraction]
    b_default : float, B_eff to use (None: fitted in both)

    Returns
    -------
    dict: chosen (bool), c_hit_ms, aicc_without, aicc_with, b_gbps, x (the chosen fit's terms)
    """
    n, h, y = (np.asarray(v, dtype=float) for v in (isl, hit, ttft_ms))
    fits = {}
    for hc in (False, True):
        if b_default is None:
            b, x, sse = _best_b(n, h, y, s_kv, alpha, hc)
        else:
            b, (x, sse) = b_default, fit_law(n, h, y, s_kv, b_default, alpha, hc)
        k = 3 + (1 if b_default is None else 0) + (1 if hc else 0)
        fits[hc] = (b, x, sse, aicc(sse, len(n), k))
    chosen = bool(np.any(h > 0)) and fits[True][3] < fits[False][3] - 2 and fits[True][1][3] > 0
    b, x, _sse, _ = fits[chosen]
    return {"chosen": chosen, "c_hit_ms": float(x[3]) if chosen else 0.0, "aicc_without": fits[False][3],
            "aicc_with": fits[True][3], "b_gbps": b, "x": x}


# --------------------------------------------------------------------------- a scaling past the peak
# A scaled roofline may not run faster than 100% of the dense peak: no prefill does. When one length
# and hit ratio imply more (notes/20.md: a concurrency-8 TTFT read through the wave model implied
# 154% and the plan used it, 668 -> 44 GPUs), the points or their reading are wrong (TTFT in the
# wrong unit, another model/GPU/tp, hits the row does not record, a load-test shape the wave model
# misreads), and which side is right cannot be told from one point. The point is refused and the
# deployment's workloads fall back to the roofline at Settings prefill_mfu: the conservative side
# (more GPUs, not 15x fewer), said at the Measurements rows. An error was the alternative; it was not
# taken because the measurement may be right about a deployment the catalog describes wrongly, and
# the plan is still wanted.
MAX_EFFICIENCY = 1.0  # fraction of the dense peak a scaled roofline may reach


def refused_message(fit, recs: list[dict]) -> str:
    """The located warning of a refused one-length calibration (:data:`MAX_EFFICIENCY`)."""
    conc = sorted({int(r.get("concurrency") or 1) for r in recs})
    read = (f", read as a load test at concurrency {'/'.join(map(str, conc))} (request-alone prefill = TTFT / "
            f"{float(fit.points['load_factor'].iloc[0]):.3g})" if conc != [1] else "")
    return (f"{len(fit.points)} point(s) at one length and hit ratio{read} imply a prefill at "
            f"{fit.efficiency:.0%} of the dense peak, which no GPU reaches: the workloads of this "
            f"deployment fall back to the roofline at Settings prefill_mfu (the conservative side). Check the "
            f"TTFT's unit and statistic, the model/GPU/tp, hits during the test, and the test's concurrency and "
            f"num_requests; or add points at a second length so the law can be fitted")


# --------------------------------------------------------------------------- applied to one deployment
def extend_fit(fit, recs: list[dict], model_rec: dict, gpu_rec: dict, b_link: float) -> None:
    """Apply the options above to one deployment's :class:`planner.plan.calibrate.Fit`, in place.

    * the fit could not be made (``fit.ok`` False: one length and one hit ratio, or no growth with
      length): the roofline is scaled to the points (``fit.method = 'roofline-scaled'``,
      ``fit.efficiency`` the fraction of the peak achieved);
    * alpha blank on every point and :func:`can_fit_alpha`: alpha fitted (``fit.alpha_fit``);
    * points with hits at two or more (length, hit) pairs: the per-request hit cost tried and
      kept when AICc says so (``fit.c_hit_ms``).
    Each decision is one line in ``fit.notes`` (the memo and the run's warnings say them).
    """
    from planner.catalog.lookup import catalog_raw
    from planner.equations import roofline as estimate

    pts = fit.points
    n, h, y = (pts[c].to_numpy(dtype=float) for c in ("isl", "hit", "ttft_ms"))
    alpha_blank = all(r.get("alpha") is None for r in recs)
    if not fit.ok:
        parts = estimate.roofline_parts(model_rec, gpu_rec, catalog_raw(model_rec))
        if parts is None:
            return
        attn1 = estimate.flops_ms(estimate.flops_attention(parts["layers"], parts["heads"], parts["width"], n),
                                  fit.tp, parts["peak_tflops"], 1.0)
        ffn1 = estimate.flops_ms(estimate.flops_linear(parts["linear_params_b"], n), fit.tp, parts["peak_tflops"], 1.0)
        a = pts["alpha"].to_numpy(dtype=float)
        x = scale_roofline(n, h, y, attn1, ffn1, fit.s_kv, b_link, a)
        if 1.0 / x > MAX_EFFICIENCY:  # faster than the dense peak allows: refused (slofix item 4)
            fit.method, fit.efficiency = "refused", 1.0 / x
            fit.warnings[:] = [refused_message(fit, recs)]
            return
        fit.k_attn = float(attn1[0] / n[0] ** 2 * x)
        fit.k_ffn = float(ffn1[0] / n[0] * x)
        fit.t_fixed, fit.b_gbps, fit.b_fitted = 0.0, float(b_link), False
        fit.method, fit.efficiency, fit.ok = "roofline-scaled", 1.0 / x, True
        fit.warnings[:] = [f"{len(pts)} point(s) at one length and hit ratio cannot fit the law: the roofline is "
                           f"scaled to reproduce them instead, a fitted prefill efficiency of {1 / x:.1%} of the "
                           f"dense peak (the roofline's own Settings prefill_mfu is not used for this deployment); "
                           f"other lengths rest on the roofline's shape"]
        return
    distinct_hits = {(a, b) for a, b in zip(n, h) if b > 0}
    if alpha_blank and can_fit_alpha(n, h):
        r = fit_alpha(n, h, y, fit.s_kv)
        if not r["identified"]:
            fit.notes.append("alpha could not be told apart by these points (every alpha in [0, 1] fits as well): "
                             "alpha 0 is kept")
            r = None
    else:
        r = None
    if r is not None:
        fit.alpha_fit = r
        fit.t_fixed, fit.k_attn, fit.k_ffn = (float(v) for v in r["x"][:3])
        fit.b_gbps, fit.b_fitted = float(r["b_gbps"]), True
        pts["alpha"] = r["alpha"]
        ident = f"95% interval {r['lo']:.2f}-{r['hi']:.2f}"
        fit.notes.append(f"alpha fitted from the hit points: {r['alpha']:.2f} ({ident}); B_eff {r['b_gbps']:,.3g} GB/s "
                         f"at that alpha")
    if len(distinct_hits) >= 2:
        a = float(pts["alpha"].max())
        s = select_hit_cost(n, h, y, fit.s_kv, a, None if fit.b_fitted else fit.b_gbps)
        if s["chosen"]:
            fit.c_hit_ms = s["c_hit_ms"]
            fit.t_fixed, fit.k_attn, fit.k_ffn = (float(v) for v in s["x"][:3])
            fit.b_gbps = float(s["b_gbps"])
            fit.notes.append(f"a per-request hit cost of {s['c_hit_ms']:,.3g} ms is added to every request with hits "
                             f"(the points call for it: AICc {s['aicc_with']:,.1f} with it against "
                             f"{s['aicc_without']:,.1f} without)")
