"""Calibration of the prefill breakdown from measured load tests (README "Where do my numbers come from").

Per deployment (model, gpu, tp) the measured points of the ``Measurements`` sheet are
fitted to the seed's law with the input length made explicit::

    TTFT(N, h) = t_fixed + k_attn N^2 (1-h^2) + k_ffn N (1-h) + T_load - alpha min(T_load, T_compute)
    T_load     = h N S / B                      (S: KV bytes per token per GPU)

with ``t_fixed, k_attn, k_ffn >= 0`` and, when the deployment has points with ``hit > 0``,
an effective KV load bandwidth ``B_eff > 0``.

The fit (numpy only, minimising the relative error) is in :mod:`planner.equations.ttft_fit`; this
module fits each deployment with it, fills the workloads and says the warnings and memo lines.

Decode (see :mod:`planner.plan.load_tests` for load tests at concurrency > 1 and measured throughput): ``tpot_ms`` measured at concurrency ``c`` gives the amortised chip time per
output token ``tpot_ms / c``; a workload's ``t_decode_ms = osl * tpot_ms / c``
(assumption: the time per output token does not depend on the input or output length,
and the workload runs at the measured concurrency; the median over the deployment's
points with ``tpot_ms`` is used).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from planner.core.names import and_more, canonical_names
from planner.equations import kvhit as m
from planner.core.places import Place
from planner.inputs.checks import spelt_as
from planner.equations.ttft_fit import fit_points, ttft_law
from planner.equations.kvhit import pcie_gbps_of_gen
from planner.plan import columns as sheets
from planner.plan import load_tests
from planner.catalog.lookup import catalog_raw


@dataclass
class Fit:
    """One deployment's calibration."""

    model: str
    gpu: str
    tp: int
    s_kv: float                       # KV bytes per token per GPU [B]
    points: pd.DataFrame              # isl, hit, ttft_ms, alpha, row (+ fitted_ms, error, taken_ms)
    t_fixed: float = 0.0              # [ms]
    k_attn: float = 0.0               # [ms/token^2]
    k_ffn: float = 0.0                # [ms/token]
    b_gbps: float = math.nan          # B used in the fit [GB/s]
    b_fitted: bool = False            # True: B_eff fitted from hit > 0 points
    b_at_bound: bool = False          # the search ended at its range edge (B not identified)
    tpot_per_token_ms: float = math.nan  # amortised decode chip time per output token [ms]
    decode_concurrency: float = math.nan  # the load tests' concurrency that decode holds at [count]
    throughput: list = field(default_factory=list)  # load tests with a measured throughput (load_tests)
    ok: bool = True
    warnings: list[str] = field(default_factory=list)
    # issue 20 (planner.plan.calib_extra): how the fit was made, and the options the points called for
    method: str = "fit"               # "fit", or "roofline-scaled" (too few points: efficiency fitted)
    efficiency: float = math.nan      # roofline-scaled: fraction of the dense peak achieved
    alpha_fit: dict | None = None     # alpha fitted (alpha, lo, hi, identified, ...)
    c_hit_ms: float = 0.0             # per-request cost of a hit, when selected [ms]
    pass_fixed: float = math.nan      # fixed cost per forward pass of a packed burst (NaN: t_fixed) [ms]
    notes: list[str] = field(default_factory=list)  # what was fitted beyond the law, said once

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.model, self.gpu, self.tp)

    @property
    def label(self) -> str:
        return f"{self.model} on {self.tp}x {self.gpu}"

    @property
    def errors(self) -> np.ndarray:
        return self.points["error"].to_numpy(dtype=float)

    @property
    def median_abs_error(self) -> float:
        return float(np.median(np.abs(self.errors))) if len(self.points) else math.nan

    @property
    def max_abs_error(self) -> float:
        return float(np.max(np.abs(self.errors))) if len(self.points) else math.nan

    @property
    def isl_range(self) -> tuple[float, float]:
        n = self.points["isl"].to_numpy(dtype=float)
        return float(n.min()), float(n.max())

    def predict(self, isl, hit, alpha=None) -> np.ndarray:
        a = self.points["alpha"].to_numpy(dtype=float).max() if alpha is None else alpha
        return (ttft_law(isl, hit, self.t_fixed, self.k_attn, self.k_ffn, self.s_kv, self.b_gbps, a)
                + self.c_hit_ms * (np.asarray(hit, dtype=float) > 0))


# --------------------------------------------------------------------------- from the workbook
def gpu_pcie_gbps(gpu_rec: dict) -> float:
    if gpu_rec.get("pcie_gbps") is not None:
        return float(gpu_rec["pcie_gbps"])
    return float(pcie_gbps_of_gen(gpu_rec.get("pcie_gen")))


def s_kv_of(model_rec: dict, tp: int) -> float:
    """KV bytes per token per GPU of a Models record at tensor-parallel size ``tp`` [B]."""
    att = model_rec.get("attention") or "gqa"
    return float(m.kv_bytes_per_token_gpu(att, float(model_rec["layers"]), float(model_rec.get("kv_heads") or 0),
                                          float(model_rec.get("head_dim") or 0),
                                          float(model_rec.get("mla_kv_dim") or 0),
                                          float(model_rec["kv_bytes"]), float(tp)))


def fit_deployments(measurements, models: dict, gpus: dict,
                    budget: float = 8192.0) -> tuple[list[Fit], list[tuple[str, str]]]:
    """Fit every deployment of the Measurements table.

    Parameters
    ----------
    measurements : reader.Table of the Measurements sheet
    models, gpus : dict name -> record (the Models / GPUs rows)
    budget : Settings max_num_batched_tokens, for rows at concurrency > 1 that do not give theirs

    Returns
    -------
    (fits, warnings): the fits in order of first appearance, and (place, message) warnings
    """
    groups: dict[tuple, list[int]] = {}
    for i, rec in enumerate(measurements.records):
        key = (rec["model"], rec["gpu"], int(rec["tp"]))
        groups.setdefault(key, []).append(i)
    fits, warns = [], []
    for (model, gpu, tp), idx in groups.items():
        recs = [measurements.records[i] for i in idx]
        rows = [measurements.rows[i] for i in idx]
        s_kv = s_kv_of(models[model], tp)
        load = load_tests.read_rows(recs, budget)   # the load-test model: request-alone prefill from TTFT at c
        pts = pd.DataFrame({"row": rows,
                            "record": idx,  # the record: rows repeat when a row's load-test file holds several runs
                            "isl": [float(r["isl"]) for r in recs],
                            "hit": [float(r["hit"]) for r in recs],
                            "ttft_ms": load["prefill_ms"],
                            "alpha": [float(r.get("alpha") or 0.0) for r in recs]})
        pts["load_factor"] = load["factor"]
        fit = Fit(model, gpu, tp, s_kv, pts)
        place = Place.at_rows("Measurements", rows[0], rows[-1], fit.label)
        for w in load_tests.read_warnings(recs, rows, load):
            warns.append((w[0], w[1]))
        distinct = {(a, b) for a, b in zip(pts["isl"], pts["hit"])}
        n_par = 3 + (1 if (pts["hit"] > 0).any() else 0)
        if len(distinct) < 2:
            fit.ok = False
            fit.warnings.append("cannot be fitted: every point is at one input length and one hit ratio "
                                "(measure at least two lengths, e.g. 2k and 8k tokens at 0 hit)")
        else:
            hits = set(pts["hit"])
            one_hit = len(hits) == 1 and next(iter(hits)) > 0  # e.g. a load test at the production hit only
            r = fit_points(pts["isl"], pts["hit"], pts["ttft_ms"], s_kv, gpu_pcie_gbps(gpus[gpu]), pts["alpha"],
                           fit_b=not one_hit)
            # load tests at c > 1: their TTFT holds the per-pass fixed cost F of the packed passes
            # (factor P + fixed_coef F); refit on P = (TTFT - fixed_coef F) / factor until F settles
            # (a contraction: |fixed_coef / factor| < 1). Concurrency 1 only: nothing changes.
            # Only with points at concurrency 1, which pin F as the request-alone intercept; points at
            # c > 1 alone cannot tell a per-pass F from per-request work (the fit trades F against
            # B_eff and k_ffn), so there F is read per request: P = TTFT / factor, pass_fixed 0.
            with_c1 = bool(np.any(load["concurrency"] <= 1))
            if not with_c1 and np.any(load["fixed_coef"] != 0):
                fit.pass_fixed = 0.0
                fit.notes.append("every point is at concurrency > 1: a fixed cost per forward pass cannot be told "
                                 "from per-request work, so t_fixed is read per request (pass_fixed_ms 0); add "
                                 "points at concurrency 1 to tell them apart")
            if np.any(load["concurrency"] > 1):
                fit.notes.append(f"load tests at concurrency > 1 are read with the prefills of each wave packed into "
                                 f"forward passes of {', '.join(f'{b:,.0f}' for b in sorted(set(load['budget'])))} new "
                                 f"tokens (max_num_batched_tokens: the row's, else Settings; 8192 is vLLM's default "
                                 f"on GPUs of 70 GiB or more)")
                n_df = sum(1 for sc, c in zip(load["scheduler"], load["concurrency"]) if sc == "decode_first" and c > 1)
                if n_df:
                    fit.notes.append(f"{n_df} load test(s) with scheduler decode_first are read as their first wave, "
                                     f"then the steady decode-first loop (planner.equations.decode_first)")
            if with_c1 and np.any(load["fixed_coef"] != 0):
                r = _settle_pass_fixed(load, pts, r, lambda p: fit_points(
                    pts["isl"], pts["hit"], p, s_kv, gpu_pcie_gbps(gpus[gpu]), pts["alpha"], fit_b=not one_hit))
            if one_hit:
                n_par = 3
                fit.warnings.append(f"every point is at hit {next(iter(hits)):.0%}: B_eff cannot be told apart from "
                                    f"the FFN time, the GPU's pcie_gbps ({r['b_gbps']:,.3g} GB/s) is assumed; "
                                    f"TTFT at that hit is reproduced, other hit ratios rest on that assumption")
            fit.t_fixed, fit.k_attn, fit.k_ffn = r["t_fixed"], r["k_attn"], r["k_ffn"]
            fit.b_gbps, fit.b_fitted, fit.b_at_bound = r["b_gbps"], r["b_fitted"], r["b_at_bound"]
            if len(distinct) < n_par:
                fit.warnings.append(f"{len(distinct)} distinct points for {n_par} parameters: the split into "
                                    f"fixed/attention/FFN{'/B_eff' if n_par == 4 else ''} is not determined by the "
                                    f"data; add points at other lengths")
            if fit.b_at_bound:
                fit.warnings.append(f"B_eff ran to the edge of its search range ({fit.b_gbps:,.3g} GB/s): the KV "
                                    f"load time is not visible in these points")
            if fit.k_attn == 0 and fit.k_ffn == 0:
                fit.ok = False
                fit.warnings.append("degenerate fit: TTFT does not grow with the input length in these points")
        from planner.plan.calib_extra import extend_fit  # roofline scaled to too few points, alpha, hit cost (issue 20

        extend_fit(fit, recs, models[model], gpus[gpu], gpu_pcie_gbps(gpus[gpu]))
        fitted = fit.predict(pts["isl"], pts["hit"], pts["alpha"]) if fit.ok else np.full(len(pts), np.nan)
        pts["fitted_ms"] = fitted
        pts["error"] = fitted / pts["ttft_ms"].to_numpy() - 1
        # what the load-test model took off the measured TTFT before dividing by the factor
        # (fixed_coef F + const; 0 at concurrency 1): P = (ttft - taken_ms) / load_factor
        pts["taken_ms"] = load["ttft_ms"] - load["factor"] * pts["ttft_ms"].to_numpy()
        f_pass = fit.t_fixed if math.isnan(fit.pass_fixed) else fit.pass_fixed   # F of the packed passes
        fit.tpot_per_token_ms, dwarn, fit.decode_concurrency = load_tests.decode_per_token(
            recs, rows, fitted if fit.ok else None, 0.0 if math.isnan(f_pass) else f_pass, load["budget"])
        warns.extend(dwarn)
        fit.throughput = load_tests.throughput_rows(recs, rows)
        for w in fit.warnings + fit.notes:
            warns.append((place, w))
        fits.append(fit)
    return fits, warns


def _settle_pass_fixed(load: dict, pts: pd.DataFrame, r: dict, refit, rtol: float = 1e-12,
                       jitter: float = 1e-7, max_fits: int = 100) -> dict:
    """The fixed point ``F = g(F)`` of the refit on load tests at c > 1 beside points at c = 1.

    ``g(F)`` is the fitted ``t_fixed`` of the fit to ``P(F) = (ttft - fixed_coef F - const) / factor``
    (:func:`planner.plan.load_tests.prefill_given_fixed`); the initial points are ``P(0)`` and ``r``
    their fit. The plain iteration ``F <- g(F)`` contracts at the rate ``|g'|`` and took up to 100
    refits. Here the one scalar is solved by the secant on ``h(F) = g(F) - F`` (superlinear: 4-6
    refits). It stops when the points of the next step differ from the current ones by less than
    ``rtol`` relative (``max |P(g(F)) - P(F)| / P(g(F))``, the plain iteration's test), or, once
    ``|h| < jitter |F|``, when ``|h|`` stops decreasing: with hit points the B_eff search (grid and
    golden section on a flat minimum of the squared errors) resolves ``ln B`` to about the square root
    of the machine precision, so ``g`` jitters by about 1e-8 relative and no scheme settles below
    that; the step with the smallest ``|h|`` is kept. Sets ``pts["ttft_ms"]`` to the settled points
    and returns their fit.
    """
    f_cur, p_cur = 0.0, pts["ttft_ms"].to_numpy(dtype=float)
    prev = None                                     # (F, h(F)) of the step before
    best = None                                     # (|h|, points, fit) of the best step
    for _ in range(max_fits):
        g = float(r["t_fixed"])
        p_new = load_tests.prefill_given_fixed(load, g)
        if np.max(np.abs(p_new - p_cur) / p_new) < rtol:
            best = None
            break
        h = g - f_cur
        if best is not None and abs(h) >= best[0] and abs(h) < jitter * max(abs(g), 1.0):
            break                                   # at the fit's jitter floor
        if best is None or abs(h) < best[0]:
            best = (abs(h), p_cur, r)
        f_next = g if prev is None or h == prev[1] else f_cur - h * (f_cur - prev[0]) / (h - prev[1])
        prev, f_cur = (f_cur, h), f_next
        p_cur = load_tests.prefill_given_fixed(load, f_cur)
        r = refit(p_cur)
    if best is not None:
        _, p_cur, r = best
    pts["ttft_ms"] = p_cur
    return r


# --------------------------------------------------------------------------- filling the workloads
BREAKDOWN = ("t_attn0_ms", "t_ffn0_ms")
BATCH_FILLED = "_batch_filled"  # key of a record copy whose batch is the default (planner.equations.queueing.default_batch)

FILLED_COLUMNS = ("t_attn0_ms", "t_ffn0_ms", "t_fixed_ms", "t_decode_ms", "kv_gbps", "tpm_measured", "hit_measured",
                  "t_decode_batch", "pass_fixed_ms")


@dataclass
class Calibration:
    """What :func:`fill_breakdown` decided, for the Resolved/Calibration sheets and the memo."""

    fits: list[Fit]
    source: list[str]                        # per workload: input / calibrated / estimated
    fit_index: list[int | None]              # per workload: its fit (calibrated rows)
    filled: dict[tuple[int, str], str]       # (workload index, column) -> provenance text
    warnings: list[tuple[str, str]]          # (place, message)
    settings: dict = field(default_factory=dict)

    @property
    def counts(self) -> dict[str, int]:
        return {s: self.source.count(s) for s in ("input", "calibrated", "estimated")}


def _canon(names) -> dict[str, str]:
    return canonical_names(names)


# The input boundary's calibration check (planner.plan.calibration_checks) fills the breakdown of the same
# PlanInput that build_plan evaluates next: its result is kept for that one next call, when the input's
# content (every table's records and the settings) is still what it was, instead of fitting twice (0.3-0.6 s
# of a calibrated workbook's build_plan). One entry, taken by the first call that matches.
_KEPT: list = []


def _content_key(p_in) -> bytes | None:
    import pickle

    try:
        return pickle.dumps((p_in.models.records, p_in.gpus.records, p_in.workloads.records,
                             {k: t.records for k, t in sorted(p_in.optional.items())}, p_in.settings), protocol=5)
    except Exception:  # noqa: BLE001 - an unpicklable cell: no reuse, the fill runs again
        return None


def fill_breakdown(p_in, models: pd.DataFrame, gpus: pd.DataFrame,
                   workloads: pd.DataFrame, keep: bool = False) -> tuple[pd.DataFrame, Calibration]:
    """:func:`fill_breakdown_now`, or the result kept by the last call with ``keep`` on the same input (same
    object, same content, equal frames): see ``_KEPT``."""
    key = _content_key(p_in) if keep or (_KEPT and _KEPT[0][0] is p_in) else None  # pickled only when it can be used
    if _KEPT:
        (who, k0, frames, result), = _KEPT
        if who is p_in and key is not None and k0 == key and all(a.equals(b) for a, b in zip(frames, (models, gpus, workloads))):
            _KEPT.clear()  # taken once: the caller may change what it gets
            return result
        # another input in between (a scenario's re-planned copy): the kept fill waits for its own input
    result = fill_breakdown_now(p_in, models, gpus, workloads)
    if keep and key is not None:
        _KEPT[:] = [(p_in, key, (models, gpus, workloads), result)]
    return result


def fill_breakdown_now(p_in, models: pd.DataFrame, gpus: pd.DataFrame,
                       workloads: pd.DataFrame) -> tuple[pd.DataFrame, Calibration]:
    """Workloads with blank breakdowns filled: typed > calibrated > estimated.

    Returns the filled copy of ``workloads`` (with a ``breakdown_source`` column) and the
    :class:`Calibration`; raises :class:`~planner.core.errors.InputError` listing every located
    problem (unknown model/GPU in Measurements, rows that can be neither calibrated nor
    estimated).
    """

    from planner.equations import roofline as estimate
    from planner.core.errors import InputError, Problem

    model_recs = {r["model"]: r for r in p_in.models.records}
    gpu_recs = {r["gpu"]: r for r in p_in.gpus.records}
    settings = p_in.settings
    mfu, mbu = float(settings.get("prefill_mfu", estimate.PREFILL_MFU)), float(settings.get("decode_mbu", 0.6))
    problems: list[Problem] = []
    meas = p_in.optional.get("Measurements")
    fits: list[Fit] = []
    warns: list[tuple[str, str]] = []
    if meas is not None and len(meas.records):
        # the fit reads the rows with Models/GPUs' spelling of the names: a copy from the input
        # boundary, so planning leaves the validated input as it was read (tests/test_house_audit.py);
        # an unknown name is the boundary's problem too (found while reading, planner.inputs.checks)
        meas, problems = spelt_as(meas, {"model": ("Models", _canon(model_recs)), "gpu": ("GPUs", _canon(gpu_recs))})
        if problems:  # the rows of unknown deployments would only add follow-on errors
            raise InputError(problems)
        fits, warns = fit_deployments(meas, model_recs, gpu_recs,
                                      float(settings.get("max_num_batched_tokens", 8192.0)))
    by_key = {f.key: k for k, f in enumerate(fits)}
    filled = workloads.copy()
    n = len(workloads)
    source, fit_index, prov = ["input"] * n, [None] * n, {}
    wl_rows = p_in.workloads.rows
    batches = sheets.default_batch(sheets.resolve(models, gpus, workloads, settings))  # a blank batch's value
    for i in range(n):
        rec = p_in.workloads.records[i]
        if rec.get("batch") is None:  # the roofline decode is estimated at the batch the plan uses
            rec = dict(rec, batch=float(batches[i]), **{BATCH_FILLED: True})
        got = None
        blank = {c: rec.get(c) is None for c in FILLED_COLUMNS}
        if not (blank["t_attn0_ms"] or blank["t_ffn0_ms"]):
            if blank["t_decode_ms"] and float(rec["osl"]) > 0:  # a typed breakdown gets the others' decode (issue 20)
                _decode_for_typed(i, rec, p_in, fits, by_key, model_recs, gpu_recs, mbu, filled, prov, warns,
                                  problems)
            continue
        place = Place.at_row("Workloads", wl_rows[i], rec.get('workload'))
        key = (rec["model"], rec["gpu"], int(rec["tp"]))
        k = by_key.get(key)
        isl, osl = float(rec["isl"]), float(rec["osl"])
        if k is not None and fits[k].ok:
            f = fits[k]
            src = f"calibrated from Measurements ({f.label}, {len(f.points)} points)"
            if f.method == "roofline-scaled":
                src = (f"roofline scaled to the Measurements ({f.label}, {len(f.points)} point(s) at one length): "
                       f"fitted efficiency {f.efficiency:.1%} of peak")
            vals = {"t_attn0_ms": f.k_attn * isl**2, "t_ffn0_ms": f.k_ffn * isl, "t_fixed_ms": f.t_fixed}
            if f.b_fitted:
                vals["kv_gbps"] = f.b_gbps
            if not math.isnan(f.pass_fixed):   # fitted from load tests at c > 1 only (fit_deployments)
                vals["pass_fixed_ms"] = f.pass_fixed
            if f.c_hit_ms and float(rec["hit_target"]) > 0:  # the per-request hit cost rides on t_fixed
                vals["t_fixed_ms"] = f.t_fixed + f.c_hit_ms
            if not math.isnan(f.tpot_per_token_ms):
                vals["t_decode_ms"] = osl * f.tpot_per_token_ms
                if rec.get("t_decode_ms") is None:  # the batch the calibrated decode holds at (issue 16)
                    vals["t_decode_batch"] = f.decode_concurrency
            source[i], fit_index[i] = "calibrated", k
            lo, hi = f.isl_range
            if not lo <= isl <= hi:
                warns.append((place, f"isl {isl:,.0f} lies outside the measured lengths {lo:,.0f}-{hi:,.0f} of "
                                     f"{f.label}: the calibrated times are extrapolated"))
        else:
            s_kv = s_kv_of(model_recs[rec["model"]], int(rec["tp"]))
            vals, missing = estimate.estimate_row(rec, model_recs[rec["model"]], gpu_recs[rec["gpu"]], s_kv, mfu, mbu,
                                              catalog_raw(model_recs[rec["model"]]), settings)
            if missing:
                why = "its deployment's measurements cannot be fitted" if k is not None else \
                    f"there are no Measurements for {rec['model']} on {int(rec['tp'])}x {rec['gpu']}"
                wt = p_in.workloads
                col = "t_attn0_ms" if blank["t_attn0_ms"] else "t_ffn0_ms"
                where = Place.of_table(wt, col, i)
                problems.append(Problem(where, f"workload {rec.get('workload')!r}: t_attn0_ms/t_ffn0_ms are blank, "
                                               f"{why}, and the roofline estimate lacks {', '.join(missing)}: "
                                               f"type the times, add load-test points to Measurements, or fill "
                                               f"those columns"))
                continue
            st = estimate.prefill_settings(settings)
            src = (f"estimated by roofline (prefill_mfu {mfu:g}, prefill_matmul_eff {st['prefill_matmul_eff']:g}, "
                   f"prefill_layer_ms {st['prefill_layer_ms']:g}, prefill_request_ms {st['prefill_request_ms']:g}, "
                   f"decode_mbu {mbu:g})")
            source[i] = "estimated"
        if source[i] == "calibrated" and blank.get("tpm_measured", False):
            # a load test of this shape with a measured throughput feeds the re-hit correction
            got = load_tests.measured_tpm(fits[k].throughput, isl, osl)
            if got is not None:
                vals["tpm_measured"] = got["tpm"]
                if rec.get("hit_measured") is None:
                    vals["hit_measured"] = got["hit"]
                elif abs(float(rec["hit_measured"]) - got["hit"]) > 1e-9:
                    del vals["tpm_measured"]   # the typed hit_measured is another test's
        decode_src = src
        if blank["t_decode_ms"] and "t_decode_ms" not in vals and source[i] == "calibrated":
            # no tpot_ms measured: decode from the memory-bandwidth roofline, as for estimated rows
            s_kv = s_kv_of(model_recs[rec["model"]], int(rec["tp"]))
            est, _missing = estimate.estimate_row(rec, model_recs[rec["model"]], gpu_recs[rec["gpu"]], s_kv, mfu, mbu,
                                              catalog_raw(model_recs[rec["model"]]), settings)
            if "t_decode_ms" in est:
                vals["t_decode_ms"] = est["t_decode_ms"]
                decode_src = f"estimated by roofline (decode_mbu {mbu:g}): the Measurements have no tpot_ms"
        if blank["t_decode_ms"] and "t_decode_ms" not in vals and osl == 0:
            pass  # no output tokens: a decode time of 0 is exact, not a default
        elif blank["t_decode_ms"] and "t_decode_ms" not in vals:
            s_kv = s_kv_of(model_recs[rec["model"]], int(rec["tp"]))
            _, missing = estimate.estimate_decode(rec, model_recs[rec["model"]], gpu_recs[rec["gpu"]], s_kv, mbu)
            problems.append(_decode_problem(p_in, i, missing, "its Measurements have no tpot_ms"
                                            if source[i] == "calibrated" else ""))
            continue
        elif blank["t_decode_ms"] and (source[i] == "estimated" or decode_src != src):  # decode estimated
            s_kv = s_kv_of(model_recs[rec["model"]], int(rec["tp"]))
            warns.append((place, decode_batch_message(rec, model_recs[rec["model"]], gpu_recs[rec["gpu"]], s_kv, mbu,
                                                      vals["t_decode_ms"])))
            decode_src += f" at batch {int(rec.get('batch') or 1)}" + (" (batch blank: the default batch)"
                                                                       if rec.get(BATCH_FILLED) else "")
        if source[i] == "calibrated" and fits[fit_index[i]].alpha_fit and rec.get("alpha") is None:
            filled.iat[i, filled.columns.get_loc("alpha")] = fits[fit_index[i]].alpha_fit["alpha"]
            prov[(i, "alpha")] = f"fitted from the hit points of Measurements ({fits[fit_index[i]].label})"
        for col, v in vals.items():
            if blank[col]:
                filled.iat[i, filled.columns.get_loc(col)] = float(v)
                prov[(i, col)] = (decode_src if col == "t_decode_ms" else
                                  f"the concurrency of the load test the decode is calibrated from ({fits[k].label})"
                                  if col == "t_decode_batch" else
                                  got["source"] if col in ("tpm_measured", "hit_measured") else src)
    if problems:
        raise InputError(problems)
    filled["breakdown_source"] = source
    return filled, Calibration(fits, source, fit_index, prov, warns, {"prefill_mfu": mfu, "decode_mbu": mbu})



def _names(names: list[str], limit: int = 6) -> str:
    more = and_more(len(names), limit, brackets=False)
    return ", ".join(names[:limit]) + more


def memo_lines(plan) -> list[str]:
    """Memo lines on where each workload's prefill/decode times come from and how good each
    fit is; empty when every breakdown is typed (the memo then says nothing about it)."""
    calib = plan.calibration
    if calib is None or all(s == "input" for s in calib.source):
        return []
    wl = list(plan.results["workload"])
    out = []
    typed = [w for w, s in zip(wl, calib.source) if s == "input"]
    if typed:
        out.append(f"Typed in Workloads ({len(typed)}): {_names(typed)}.")
    for k, f in enumerate(calib.fits):
        rows = [w for w, j in zip(wl, calib.fit_index) if j == k]
        if not f.ok:
            out.append(f"Load test of {f.label} not used: {'; '.join(f.warnings)}.")
            continue
        if not rows:
            continue
        b = (f"B_eff {f.b_gbps:,.1f} GB/s fitted from the hit points" if f.b_fitted
             else f"KV load at the GPU's {f.b_gbps:,.0f} GB/s (no point with hits)")
        if f.method == "roofline-scaled":
            out.append(f"Roofline scaled to the load test of {f.label} ({len(f.points)} point(s) at one length and hit "
                       f"ratio): fitted prefill efficiency {f.efficiency:.1%} of the dense peak: {_names(rows)}.")
            continue
        extra = (" " + "; ".join(f.notes) + ".") if f.notes else ""
        out.append(f"Calibrated from the load test of {f.label} ({len(f.points)} points; fitted TTFT within "
                   f"{f.median_abs_error:.1%} of measured at the median, {f.max_abs_error:.1%} at worst): "
                   f"{_names(rows)}. Fixed {f.t_fixed:,.1f} ms, {f.k_ffn * 1000:,.1f} ms per 1k tokens, "
                   + (f"attention {f.k_attn * 1e6:,.3f} ms per (1k tokens) squared" if f.k_attn > 0 else
                      "no quadratic attention term (TTFT grows linearly over the measured lengths)")
                   + f"; {b}." + extra)
    est = [w for w, s in zip(wl, calib.source) if s == "estimated"]
    if est:
        st = calib.settings
        out.append(f"Estimated by a roofline (prefill at {st['prefill_mfu']:.0%} of peak FLOPS on an H100 SXM, other "
                   f"GPUs by their balance of FLOPS and memory bandwidth, plus a fixed cost per layer and request; decode at "
                   f"{st['decode_mbu']:.0%} of HBM bandwidth) for {len(est)}: {_names(est)}. Against published "
                   f"prefills such estimates lie within 0.5-2x of measured for most; a load test of these "
                   f"deployments would replace them.")
    return out


# --------------------------------------------------------------------------- decode of typed rows (issue 20)
def decode_batch_message(rec: dict, model_rec: dict, gpu_rec: dict, s_kv: float, mbu: float, decode: float) -> str:
    """What the row's ``batch`` does to its estimated decode, said with the numbers: the roofline
    decode shares each step's weight reads over ``batch`` requests, so the chip time per request
    falls with it (``estimate.decode_ms``)."""
    from planner.equations import roofline as estimate

    b = int(rec.get("batch") or 1)
    at1 = estimate.estimate_decode(rec, model_rec, gpu_rec, s_kv, mbu, batch=1)[0]["t_decode_ms"]
    said = ("typed" if not rec.get(BATCH_FILLED) else
            "blank, so the fixed concurrency" if rec.get("concurrency") is not None else
            "blank, so the full-length requests whose KV fits in HBM, at most 256")
    other = (f"{at1:,.1f} ms at batch 1" if b != 1 else
             f"{estimate.estimate_decode(rec, model_rec, gpu_rec, s_kv, mbu, batch=8)[0]['t_decode_ms']:,.1f} ms "
             f"at batch 8")
    return (f"t_decode_ms is estimated by the roofline at batch {b} ({said}): {decode:,.1f} ms per request "
            f"({other}); batch is the decode concurrency of this estimate as well as the peak-KV batch: type the "
            f"concurrency you will serve at, or a measured t_decode_ms")


def _decode_problem(p_in, i: int, missing: list[str], why: str = ""):
    """The error for a blank t_decode_ms that can be neither calibrated nor estimated."""
    from planner.core.errors import Problem

    wt = p_in.workloads
    where = Place.of_table(wt, "t_decode_ms", i)
    because = f"{why}, and " if why else ""
    return Problem(where, f"workload {wt.records[i].get('workload')!r}: t_decode_ms is blank, {because}its roofline "
                          f"estimate lacks {', '.join(missing)}: type t_decode_ms (0 leaves decode out of chip time "
                          f"and TPM), or fill {' and '.join(missing)}")


def _decode_for_typed(i, rec, p_in, fits, by_key, model_recs, gpu_recs, mbu, filled, prov, warns, problems) -> None:
    """A row with a typed breakdown and a blank ``t_decode_ms``: the calibrated decode of its
    deployment (``tpot_ms`` of its Measurements) when there is one, else the roofline decode;
    neither: an error naming the missing column (never a silent 0)."""
    from planner.equations import roofline as estimate

    place = Place.at_row("Workloads", p_in.workloads.rows[i], rec.get('workload'))
    k = by_key.get((rec["model"], rec["gpu"], int(rec["tp"])))
    if k is not None and fits[k].ok and not math.isnan(fits[k].tpot_per_token_ms):
        value = float(rec["osl"]) * fits[k].tpot_per_token_ms
        src = f"calibrated from Measurements ({fits[k].label}: osl x median tpot_ms / batch)"
    else:
        model_rec, gpu_rec = model_recs[rec["model"]], gpu_recs[rec["gpu"]]
        s_kv = s_kv_of(model_rec, int(rec["tp"]))
        est, missing = estimate.estimate_decode(rec, model_rec, gpu_rec, s_kv, mbu)
        if missing:
            problems.append(_decode_problem(p_in, i, missing, "the breakdown is typed"))
            return
        value = est["t_decode_ms"]
        src = (f"estimated by roofline (decode_mbu {mbu:g}) at batch {int(rec.get('batch') or 1)}: the breakdown "
               f"is typed, t_decode_ms is not")
        warns.append((place, decode_batch_message(rec, model_rec, gpu_rec, s_kv, mbu, value)))
    filled.iat[i, filled.columns.get_loc("t_decode_ms")] = float(value)
    prov[(i, "t_decode_ms")] = src
    if src.startswith("calibrated") and rec.get("t_decode_batch") is None:  # the batch it holds at (issue 16)
        filled.iat[i, filled.columns.get_loc("t_decode_batch")] = fits[k].decode_concurrency
        prov[(i, "t_decode_batch")] = f"the concurrency of the load test the decode is calibrated from ({fits[k].label})"
