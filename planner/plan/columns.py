"""The derived sheets, each column declared once for both Python and Excel.

A derived column is ``Out(name, unit, fmt, func, *args)``: its Python value is
``func(*values of args)`` and its Excel formula ``func.xl(*cell references of args)``
(the twin registered beside ``func`` in :mod:`planner.equations.kvhit`). Argument names are
looked up first in the sheet's own columns, then in ``Resolved`` (every input with its
default applied and its model/GPU looked up), then in ``Results``. So the same
declaration yields the Python evaluation and the live formula, and a reader sees which
inputs each quantity uses.

``Resolved`` is the calculation sheet between the input sheets and the results: one row
per workload, aligned with its ``Workloads`` row, referring to that row directly; lookups
by name (MATCH) go only into the small Models and GPUs tables, once per row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pandas as pd

from planner.core.arrays import coerced_floats
from planner.equations import fleet as fl
from planner.equations import kvhit as m
from planner.equations import tables as tb
from planner.core import schema
from planner.equations.kvhit import excel_twin
from planner.core.refs import defined_name, setting_name
from planner.core.schema import CHOICE, FMT_INT, FMT_PCT, TEXT
from planner.equations import decode_first as dfs
from planner.equations import decode_first_slo as dslo
from planner.equations import prefill_passes as pp
from planner.equations import queueing as q
from planner.equations import sizing as sz
from planner.equations import terms as tm

FMT_MS = "#,##0.00"
FMT_RATIO = "0.000"
FMT_BYTES = "#,##0"  # whole bytes (KV bytes per token)
FMT_GIB = "#,##0.00"
FMT_COST = "#,##0.0000"


def same(x):
    """The value itself (a copied column)."""
    return x


@excel_twin(same)
def _(x):
    return x


def ratio_change(before, after):
    r"""Relative change of a rate when chip time goes from ``before`` to ``after``.

    .. math:: \Delta = C(h_m) / C(h_t) - 1

    Parameters
    ----------
    before : numeric, chip time at the measured hit [ms]
    after : numeric, chip time at the target hit [ms]

    Returns
    -------
    numeric, change of TPM [fraction]
    """
    return np.asarray(before, dtype=float) / after - 1


@excel_twin(ratio_change)
def _(before, after):
    return f"{before}/{after}-1"


@dataclass(frozen=True)
class Out:
    name: str
    unit: str
    fmt: str | None
    func: Callable
    args: tuple[str, ...]
    description: str = ""
    text: bool = False
    label: str = ""       # readable name for people (Explorer, Checks, Summary, memo)

    @property
    def header(self) -> str:
        return f"{self.name} [{self.unit}]" if self.unit else self.name

    @property
    def title(self) -> str:
        """The readable label: ``label``, else the description with a capital first letter."""
        return readable(self.label or self.description or self.name)


def readable(text: str) -> str:
    return text[:1].upper() + text[1:]


def out(name, unit, fmt, func, *args, description="", text=False, label="") -> Out:
    return Out(name, unit, fmt, func, tuple(args), description, text, label)




# --------------------------------------------------------------------------- Results
def _baseline_columns() -> tuple[Out, ...]:
    """Results' columns of :data:`planner.equations.sizing.BASELINE_STEPS` but ``instances_baseline``
    (declared with the finance view): each the unit and format of the target's step, at hit_baseline."""
    units = {"instances": ("count", FMT_INT), "ttft_log_x": ("", FMT_RATIO), "ttft_rho_max": ("fraction", FMT_PCT),
             "burst_new_tokens": ("tokens", FMT_INT), "ttft_burst_slo_ms": ("ms", FMT_MS),
             "ttft_steady_slo_ms": ("ms", FMT_MS), "ttft_at_c_slo_ms": ("ms", FMT_MS),
             "concurrency_rps": ("requests/s", FMT_MS), "binding": ("", None)}
    # the readable labels of the target's steps (declared below in RESULTS)
    labels = {"instances_throughput": "Serving instances on throughput alone",
              "ttft_log_x": "TTFT target: Lambert W argument (ln)",
              "ttft_rho_max": "TTFT target: largest utilisation per instance",
              "burst_new_tokens": "New prompt tokens per request",
              "ttft_burst_slo_ms": "TTFT at the fixed concurrency, at the target's percentile",
              "ttft_steady_slo_ms": "Steady decode-first TTFT at the fixed concurrency, at the target's percentile",
              "ttft_at_c_slo_ms": "TTFT the target is held to at the fixed concurrency",
              "instances_ttft": "Instances the TTFT target needs", "instances_tpot": "Instances the TPOT target needs",
              "instances_hbm": "Instances for the decode batch to fit in HBM",
              "concurrency_rps": "Requests per second per instance at the fixed concurrency",
              "instances_concurrency": "Instances at the fixed concurrency", "binding": "What sets the instance count"}
    cols = []
    for name, func, args in sz.BASELINE_STEPS:
        if name == "instances_baseline":
            continue
        stem = name.removesuffix("_baseline")
        unit, fmt = units.get(stem, units["instances"])
        cols.append(out(name, unit, fmt, func, *args, text=stem == "binding",
                        description=f"{stem} of the sizing chain at the baseline hit ratio (hit_baseline, "
                        "ttft_ms_baseline, tpm_delivered_baseline): a step of instances_baseline",
                        label=f"{labels[stem]}, at the baseline hit"))
    return tuple(cols)


def sweep_terms(prefill: str, u: str, lnx: str | None, suffix: str = "") -> tuple[Out, ...]:
    """The sub-expressions of the pass-packing, decode-first and Lambert W formulas
    (:mod:`planner.equations.terms`) of a sheet whose request-alone prefill is ``prefill``, new
    prompt tokens ``u`` and Lambert W argument ``lnx``: declared after a table's own columns, they
    shorten its formulas (planner.workbook.shared_terms) and change no value. ``lnx`` None: a
    table without the TTFT target's Lambert W (no Lambert W terms)."""
    def term(name, unit, func, *args, what):
        return out(name + suffix, unit, FMT_MS, func, *args, description=what + " (a term of the formulas of this row)")
    budget, c = "max_num_batched_tokens", "concurrency"
    return (
        term("pass_tokens", "tokens", tm.pass_tokens, u, budget, what="new tokens per pass of a burst"),
        term("first_pass_tokens", "tokens", tm.first_pass_tokens, u, budget,
             what="prompt tokens of a burst's first pass"),
        term("pass_variable_ms", "ms", tm.pass_variable_ms, prefill, "pass_fixed_ms", u, budget,
             what="prefill time beyond the fixed cost of its passes"),
        term("loop_others", "requests", tm.loop_others, c, what="decodes beside a prompt in the closed loop"),
        term("loop_pass_tokens", "tokens", tm.loop_pass_tokens, u, budget, c, what="new tokens per step of the loop"),
        term("loop_variable_ms", "ms", tm.loop_variable_ms, prefill, "pass_fixed_ms", u, budget, c,
             what="prefill time beyond the fixed cost of its passes, in the loop"),
        term("loop_prompt_steps", "steps", tm.loop_prompt_steps, u, budget, c,
             what="steps of a prompt beside the loop's decodes"),
        term("loop_step_ms", "ms", tm.loop_step_ms, "step_weights_ms", "step_kv_ms", c,
             what="decode-step time of the loop's decodes"),
        term("loop_steady_decodes", "requests", tm.loop_steady_decodes, u, budget, "osl", c,
             what="decodes beside a full prefill chunk, steady"),
        term("loop_group_size", "requests", tm.loop_group_size, u, budget, c,
             what="whole prompts of one step beside the decodes"),
    ) + (() if lnx is None else (
        term("log_softplus", "", tm.log_softplus, lnx, what="ln(1 + x) of the TTFT target's Lambert W argument"),
        term("lambert_w_start", "", tm.lambert_w_start, lnx, what="Winitzki's start of the Lambert W"),
        term("lambert_w_step", "", tm.lambert_w_step, lnx, what="the Lambert W after one Newton step"),
    ))


def _results_terms() -> tuple[Out, ...]:
    target = sweep_terms("ttft_ms", "burst_new_tokens", "ttft_log_x")
    base = sweep_terms("ttft_ms_baseline", "burst_new_tokens_baseline", "ttft_log_x_baseline", suffix="_baseline")
    return target + tuple(c for c in base if c.name not in ("loop_others_baseline", "loop_step_ms_baseline"))


_ALPHA0, _ALPHA1 = defined_name("Constants", "alpha_none"), defined_name("Constants", "alpha_full")  # named cells 0 and 1 (Constants sheet)

RESULTS: tuple[Out, ...] = (
    out("workload", "", None, same, "workload", text=True,
        label="Workload"),
    out("model", "", None, same, "model", text=True,
        label="Model"),
    out("gpu", "", None, same, "gpu", text=True,
        label="GPU"),
    out("kv_bytes_per_token_gpu", "B", FMT_BYTES, m.kv_bytes_per_token_gpu,
        "attention", "layers", "kv_heads", "head_dim", "mla_kv_dim", "kv_bytes", "tp",
        description="KV-cache bytes per token held by one GPU, S",
        label="KV-cache bytes per token on one GPU"),
    out("kv_peak_gib", "GiB", FMT_GIB, m.kv_peak_gib, "batch", "max_seq_len", "kv_bytes_per_token_gpu",
        description="peak KV per GPU: batch x max_seq_len x S",
        label="Peak KV cache per GPU (batch x max length)"),
    out("weights_gib_per_gpu", "GiB", FMT_GIB, m.weights_gib_per_gpu, "params_b", "weight_bytes", "tp",
        description="model weights per GPU",
        label="Model weights per GPU"),
    out("hbm_headroom_gib", "GiB", FMT_GIB, m.hbm_headroom_gib, "hbm_gib", "weights_gib_per_gpu",
        "kv_peak_gib", description="HBM left after weights and peak KV (negative: does not fit)",
        label="HBM left after weights and peak KV"),
    out("max_batch_fit", "count", FMT_INT, m.max_batch_fit, "hbm_gib", "weights_gib_per_gpu",
        "max_seq_len", "kv_bytes_per_token_gpu", description="full-length requests whose KV fits",
        label="Full-length requests whose KV fits in HBM"),
    out("load_ms", "ms", FMT_MS, m.kv_load_ms, "hit_target", "isl", "kv_bytes_per_token_gpu", "kv_gbps",
        description="KV load time at hit_target (over kv_gbps: typed, calibrated B_eff, else pcie_gbps)",
        label="KV load time at the target hit"),
    out("compute_ms", "ms", FMT_MS, m.compute_ms, "hit_target", "t_attn0_ms", "t_ffn0_ms", "t_other0_ms",
        "other_scaling", description="prefill compute at hit_target",
        label="Prefill compute time at the target hit"),
    out("ttft_alpha0_ms", "ms", FMT_MS, m.ttft_ms, "t_fixed_ms", "load_ms", "compute_ms", "alpha_none",
        description="TTFT at hit_target without overlap",
        label="Time to first token at target hit, no overlap (α = 0)"),
    out("ttft_alpha1_ms", "ms", FMT_MS, m.ttft_ms, "t_fixed_ms", "load_ms", "compute_ms", "alpha_full",
        description="TTFT at hit_target with full overlap",
        label="Time to first token at target hit, full overlap (α = 1)"),
    out("ttft_ms", "ms", FMT_MS, m.ttft_ms, "t_fixed_ms", "load_ms", "compute_ms", "alpha",
        description="TTFT at hit_target and the row's alpha",
        label="Time to first token at target hit, α of the row"),
    out("regime", "", None, m.regime, "load_ms", "compute_ms", text=True,
        description="load-bound when load_ms > compute_ms",
        label="Bound by KV load or by compute at the target hit"),
    out("delta", "ratio", FMT_RATIO, m.delta, "isl", "kv_bytes_per_token_gpu", "kv_gbps", "t0_ms",
        description="full-KV load time / 0-hit prefill time",
        label="Full KV load time / prefill time at 0 hit (δ)"),
    out("h_star", "fraction", FMT_PCT, m.h_star, "delta", description="break-even hit ratio 1/(1+delta)",
        label="Break-even hit ratio h* (more hits beyond it slow prefill)"),
    out("first_order_gain", "ratio", FMT_RATIO, m.first_order_gain, "hit_target", "delta",
        description="first-order capacity multiplier 1/max(1-h, delta h)",
        label="First-order capacity gain from hits"),
    out("chip_ms_measured", "ms", FMT_MS, m.chip_ms, "ttft_ms_measured", "t_decode_ms",
        description="chip time per request at hit_measured",
        label="Chip time per request at the measured hit"),
    out("chip_ms_target", "ms", FMT_MS, m.chip_ms, "ttft_ms", "t_decode_ms",
        description="chip time per request at hit_target",
        label="Chip time per request at the target hit"),
    out("tpm_delivered_model", "tokens/min", FMT_INT, m.tpm_delivered, "isl", "osl", "chip_ms_target",
        description="delivered TPM from the model's chip time",
        label="Delivered tokens/min of one instance (model)"),
    out("tpm_physical_model", "tokens/min", FMT_INT, m.tpm_physical, "isl", "osl", "hit_target",
        "chip_ms_target", description="physical TPM from the model's chip time",
        label="Physical tokens/min of one instance (model)"),
    out("tpm_delivered_target", "tokens/min", FMT_INT, m.tpm_delivered_target, "tpm_measured",
        "chip_ms_measured", "chip_ms_target", "tpm_delivered_model",
        description="delivered TPM at target, re-hit corrected from tpm_measured when given",
        label="Delivered tokens/min of one instance at the target hit"),
    out("tpm_physical_target", "tokens/min", FMT_INT, m.tpm_physical_from_delivered,
        "tpm_delivered_target", "isl", "osl", "hit_target", description="physical TPM at target",
        label="Physical tokens/min of one instance at the target hit"),
    out("tpm_per_gpu", "tokens/min", FMT_INT, m.per_gpu, "tpm_delivered_target", "tp",
        description="delivered TPM at target per GPU",
        label="Delivered tokens/min per GPU at the target hit"),
    out("instances_needed", "count", FMT_INT, *sz.step("instances_needed"),
        description="serving instances for demand_tpm: the smallest count meeting throughput at "
        "target_utilization, the TTFT and TPOT targets and the HBM fit of the decode batch (binding says which "
        "set it; blank without demand)", label="Serving instances for the demand"),
    out("gpus_needed", "count", FMT_INT, *sz.step("gpus_needed"),
        description="GPUs for demand_tpm (blank without demand)",
        label="GPUs for the demand"),
    out("cost_per_mtok_delivered", "currency/Mtok", FMT_COST, m.cost_per_mtok, "hourly_cost", "tp",
        "tpm_delivered_target", description="cost per million delivered tokens (blank without cost)",
        label="Cost per million delivered tokens"),
    out("cost_per_mtok_physical", "currency/Mtok", FMT_COST, m.cost_per_mtok, "hourly_cost", "tp",
        "tpm_physical_target", description="cost per million physical tokens (blank without cost)",
        label="Cost per million physical tokens"),
    # extra columns: the intermediate steps, so every number above can be traced
    out("t0_ms", "ms", FMT_MS, m.prefill0_ms, "t_fixed_ms", "t_attn0_ms", "t_ffn0_ms", "t_other0_ms",
        description="whole prefill time at 0 hit, T0",
        label="Whole prefill time at 0 hit (T0)"),
    out("load_ms_measured", "ms", FMT_MS, m.kv_load_ms, "hit_measured", "isl", "kv_bytes_per_token_gpu",
        "kv_gbps", description="KV load time at hit_measured",
        label="KV load time at the measured hit"),
    out("compute_ms_measured", "ms", FMT_MS, m.compute_ms, "hit_measured", "t_attn0_ms", "t_ffn0_ms",
        "t_other0_ms", "other_scaling", description="prefill compute at hit_measured",
        label="Prefill compute time at the measured hit"),
    out("ttft_ms_measured", "ms", FMT_MS, m.ttft_ms, "t_fixed_ms", "load_ms_measured",
        "compute_ms_measured", "alpha", description="TTFT at hit_measured and the row's alpha",
        label="Time to first token at the measured hit, α of the row"),
    out("tpm_change_vs_measured", "fraction", FMT_PCT, ratio_change, "chip_ms_measured", "chip_ms_target",
        description="change of delivered TPM from hit_measured to hit_target",
        label="Change of delivered tokens/min from measured to target hit"),
    out("breakdown_source", "", None, same, "breakdown_source", text=True,
        description="where t_attn0/t_ffn0/t_fixed/t_decode come from: input, calibrated (Measurements) or "
                    "estimated (roofline)",
        label="Where the prefill and decode times come from"),
    # the finance view (Fleet, Summary): per-workload cost and capacity, and the fleet at hit_measured
    out("cost_per_hour", "currency/h", FMT_GIB, fl.cost_per_hour, "gpus_needed", "hourly_cost",
        description="cost of the workload's GPUs per hour: gpus_needed x hourly_cost (blank without "
                    "demand or price)"),
    out("tpm_capacity", "tokens/min", FMT_INT, fl.capacity_tpm, "instances_needed", "tpm_delivered_target",
        description="delivered capacity of the sized instances at full speed (blank without demand)"),
    # the savings of the hit target: the same demand at the planning baseline hit_baseline (blank:
    # hit_measured), its TPM re-hit corrected from tpm_measured as at the target
    out("load_ms_baseline", "ms", FMT_MS, m.kv_load_ms, "hit_baseline", "isl", "kv_bytes_per_token_gpu",
        "kv_gbps", description="KV load time at hit_baseline"),
    out("compute_ms_baseline", "ms", FMT_MS, m.compute_ms, "hit_baseline", "t_attn0_ms", "t_ffn0_ms",
        "t_other0_ms", "other_scaling", description="prefill compute at hit_baseline"),
    out("ttft_ms_baseline", "ms", FMT_MS, m.ttft_ms, "t_fixed_ms", "load_ms_baseline", "compute_ms_baseline",
        "alpha", description="TTFT at hit_baseline and the row's alpha"),
    out("chip_ms_baseline", "ms", FMT_MS, m.chip_ms, "ttft_ms_baseline", "t_decode_ms",
        description="chip time per request at hit_baseline"),
    out("tpm_delivered_model_baseline", "tokens/min", FMT_INT, m.tpm_delivered, "isl", "osl", "chip_ms_baseline",
        description="delivered TPM of one instance from the model's chip time at hit_baseline"),
    out("tpm_delivered_baseline", "tokens/min", FMT_INT, m.tpm_delivered_target, "tpm_measured",
        "chip_ms_measured", "chip_ms_baseline", "tpm_delivered_model_baseline",
        description="delivered TPM at hit_baseline, re-hit corrected from tpm_measured when given"),
    out("instances_baseline", "count", FMT_INT, *sz.step("instances_baseline"),
        description="instances for demand_tpm at the baseline hit ratio, sized through the same chain as "
        "instances_needed (throughput, TTFT and TPOT targets, HBM fit, concurrency) at hit_baseline"),
    out("gpus_baseline", "count", FMT_INT, m.gpus_needed, "instances_baseline", "tp",
        description="GPUs for demand_tpm at the baseline hit ratio"),
    out("cost_per_hour_baseline", "currency/h", FMT_GIB, fl.cost_per_hour, "gpus_baseline", "hourly_cost",
        description="cost per hour of the GPUs at the baseline hit ratio"),
    # latency at load (issue 16; planner.equations.queueing): ttft_ms above is the service time of a request alone,
    # these are what users see at the row's load
    out("instances_throughput", "count", FMT_INT, *sz.step("instances_throughput"),
        description="instances for demand_tpm at target_utilization on throughput alone "
        "(blank without demand)", label="Serving instances on throughput alone"),
    out("step_floor_ms", "ms", FMT_MS, q.step_floor_ms, "t_decode_batch", "isl", "osl", "kv_bytes_per_token_gpu",
        "params_b", "active_params_b", "weight_bytes", "tp", "hbm_tbps",
        description="HBM roofline of a decode step over t_decode_batch requests: weights + their KV read at "
        "the full hbm_tbps, the fastest any step can be (0 without hbm_tbps)", label="Decode step floor (HBM roofline)"),
    out("decode_step_ms", "ms", FMT_MS, q.decode_step_ms, "t_decode_ms", "t_decode_batch", "osl", "step_floor_ms",
        description="decode step over t_decode_batch (the batch t_decode_ms holds at): t_decode_ms x "
        "t_decode_batch / osl, at least step_floor_ms",
        label="Decode step time at the batch of the decode time"),
    out("step_weights_ms", "ms", FMT_MS, q.step_fixed_ms, "decode_step_ms", "weights_gib_per_gpu", "t_decode_batch",
        "isl", "osl", "kv_bytes_per_token_gpu", description="weight-reading part of a decode step, s0 (split of the "
        "step by the bytes read: weights vs the batch's KV)", label="Decode step: weights part s0"),
    out("step_kv_ms", "ms", FMT_RATIO, q.step_per_request_ms, "decode_step_ms", "step_weights_ms", "t_decode_batch",
        description="KV-reading part of a decode step per request in decode, s1",
        label="Decode step: KV part per request s1"),
    out("demand_rps", "requests/s", FMT_MS, *sz.step("demand_rps"),
        description="requests per second of the whole workload (blank without demand)",
        label="Requests per second of the workload"),
    out("demand_rps_open", "requests/s", FMT_MS, *sz.step("demand_rps_open"),
        description="the demand rate the latency targets size for (blank with a fixed concurrency)",
        label="Requests per second sized open loop"),
    out("ttft_log_x", "", FMT_RATIO, *sz.step("ttft_log_x"),
        description="ln of the Lambert W argument of a TTFT quantile target, ln(a phi (1-q)) + a (a step of "
        "instances_ttft; blank without a quantile target above ttft_ms)", label="TTFT target: Lambert W argument (ln)"),
    out("ttft_rho_max", "fraction", FMT_PCT, *sz.step("ttft_rho_max"),
        description="largest utilisation of one instance (arrival rate x ttft_ms) at which the TTFT target holds "
        "(a step of instances_ttft)", label="TTFT target: largest utilisation per instance"),
    out("burst_new_tokens", "tokens", FMT_INT, *sz.step("burst_new_tokens"),
        description="new prompt tokens of a request, isl x (1 - hit_target), at least 1 (a step of "
        "ttft_burst_slo_ms)", label="New prompt tokens per request"),
    out("ttft_burst_slo_ms", "ms", FMT_MS, *sz.step("ttft_burst_slo_ms"),
        description="at a fixed concurrency: the TTFT statistic the target applies to (slo_percentile; mean: "
        "the mean) of the burst, its prefills packed into passes of max_num_batched_tokens (blank without "
        "concurrency; a step of instances_ttft)", label="TTFT at the fixed concurrency, at the target's percentile"),
    out("ttft_steady_slo_ms", "ms", FMT_MS, *sz.step("ttft_steady_slo_ms"),
        description="at a fixed concurrency with scheduler decode_first: the steady loop's TTFT at the target's "
        "statistic (slo_percentile; planner.equations.decode_first; blank otherwise; a step of instances_ttft)",
        label="Steady decode-first TTFT at the fixed concurrency, at the target's percentile"),
    out("ttft_at_c_slo_ms", "ms", FMT_MS, *sz.step("ttft_at_c_slo_ms"),
        description="the TTFT at the fixed concurrency the target is held to: ttft_steady_slo_ms under "
        "decode_first, else ttft_burst_slo_ms (a step of instances_ttft)",
        label="TTFT the target is held to at the fixed concurrency"),
    out("instances_ttft", "count", FMT_INT, *sz.step("instances_ttft"),
        description="instances the TTFT target needs (open loop, M/G/1 prefill queue; scheduler decode_first "
        "without concurrency: the decode-first queue's count, DF_Search df_instances_ttft; unreachable: the target is "
        "below the request-alone TTFT, or the TTFT at the fixed concurrency misses it)",
        label="Instances the TTFT target needs"),
    out("instances_tpot", "count", FMT_INT, *sz.step("instances_tpot"),
        description="instances the TPOT target needs (unreachable: one request alone is slower, or the TPOT at the "
        "fixed concurrency misses it)", label="Instances the TPOT target needs"),
    out("instances_hbm", "count", FMT_INT, *sz.step("instances_hbm"),
        description="instances for the decode "
        "batch at load to fit in HBM (with a latency target only: throughput sizing assumes batch)",
        label="Instances for the decode batch to fit in HBM"),
    out("instances_concurrency", "count", FMT_INT, *sz.step("instances_concurrency"),
        description="instances when each holds Workloads concurrency requests in flight",
        label="Instances at the fixed concurrency"),
    out("binding", "", None, *sz.step("binding"),
        text=True,
        description="which constraint set instances_needed: throughput, ttft_slo, tpot_slo, hbm or concurrency",
        label="What sets the instance count"),
    out("concurrency_rps", "requests/s", FMT_MS, *sz.step("concurrency_rps"),
        description="requests/s one instance completes holding Workloads "
        "concurrency requests in flight (blank without concurrency)",
        label="Requests per second per instance at the fixed concurrency"),
    out("load_rps", "requests/s", FMT_MS, q.load_rate, "demand_tpm", "isl", "osl", "instances_needed",
        "chip_ms_target", "target_utilization", "concurrency_rps",
        description="requests/s one instance serves at the row's load: demand / instances, else "
        "target_utilization / chip time; with concurrency, the closed loop's throughput",
        label="Requests per second per instance at the planned load"),
    out("slo_q", "fraction", FMT_PCT, q.slo_quantile, "slo_percentile",
        description="quantile of slo_percentile (0: the mean)", label="Quantile of the TTFT target"),
    out("prefill_wait_ms", "ms", FMT_MS, q.wait_mean_ms, "load_rps", "ttft_ms", "t_decode_ms", "decode_step_ms",
        description="mean wait for the prefill at the load (M/G/1 with the request-alone prefill, prefills before "
        "decode steps; under decode_first without concurrency it stays this queue's wait while ttft_load_ms reads "
        "the decode-first queue, so ttft_load_ms is not ttft_ms + prefill_wait_ms there)",
        label="Mean wait for the prefill at the planned load"),
    out("ttft_steady_ms", "ms", FMT_MS, dfs.steady_mean_for, "scheduler", "ttft_ms", "pass_fixed_ms",
        "burst_new_tokens", "max_num_batched_tokens", "step_weights_ms", "step_kv_ms", "osl", "concurrency",
        description="at a fixed concurrency with scheduler decode_first (vLLM V1): the mean TTFT of the steady "
        "closed loop (planner.equations.decode_first; blank otherwise)",
        label="Steady decode-first TTFT at the fixed concurrency (mean)"),
    out("ttft_steady_p90_ms", "ms", FMT_MS, dfs.steady_p90_for, "scheduler", "ttft_ms", "pass_fixed_ms",
        "burst_new_tokens", "max_num_batched_tokens", "step_weights_ms", "step_kv_ms", "osl", "concurrency",
        description="90th percentile of ttft_steady_ms (blank unless decode_first at a fixed concurrency)",
        label="Steady decode-first TTFT at the fixed concurrency, p90"),
    out("ttft_load_ms", "ms", FMT_MS, dfs.ttft_load_sched_ms, "ttft_ms", "prefill_wait_ms", "concurrency",
        "pass_fixed_ms", "isl", "hit_target", "max_num_batched_tokens", "scheduler", "ttft_steady_ms",
        description="mean TTFT users see at the row's load: wait + the request-alone ttft_ms (at a fixed "
        "concurrency: the burst, or ttft_steady_ms under decode_first; decode_first without concurrency: the "
        "decode-first queue, DF_Search df_ttft_load_ms)",
        label="Time to first token at the planned load (mean)"),
    out("prefill_wait_p90_ms", "ms", FMT_MS, q.wait_p90_ms, "load_rps", "ttft_ms", "t_decode_ms",
        "decode_step_ms", description="90th percentile of the wait for the prefill (exponential tail; under "
        "decode_first without concurrency the request-alone queue's, as prefill_wait_ms: ttft_load_p90_ms reads the "
        "decode-first queue)",
        label="Wait for the prefill at the planned load, p90"),
    out("ttft_load_p90_ms", "ms", FMT_MS, dfs.ttft_load_p90_sched_ms, "ttft_ms", "prefill_wait_p90_ms",
        "concurrency", "pass_fixed_ms", "isl", "hit_target", "max_num_batched_tokens", "scheduler",
        "ttft_steady_p90_ms", description="90th percentile TTFT at the row's load (decode_first without "
        "concurrency: the decode-first queue, DF_Search df_ttft_load_p90_ms)",
        label="Time to first token at the planned load, p90"),
    out("tpot_load_ms", "ms", FMT_MS, q.tpot_load_ms, "load_rps", "ttft_ms", "osl", "step_weights_ms", "step_kv_ms",
        "prefill_wait_ms", "concurrency", "ttft_load_ms", description="mean time per output token at the row's load "
        "(decode-step law, prefills interleaved; at a fixed concurrency what a client's cycle c / load_rps leaves "
        "after ttft_load_ms, Little's law)", label="Time per output token at the planned load"),
    out("decode_batch", "requests", FMT_MS, q.decode_batch, "load_rps", "osl", "tpot_load_ms", "concurrency",
        description="requests in decode at the load (Little's law)", label="Decode batch at the planned load"),
    out("hbm_fit", "", None, q.hbm_fits, "decode_batch", "max_batch_fit", text=True,
        description="yes when the decode batch at load fits in HBM (max_batch_fit)",
        label="Decode batch at load fits in HBM"),
    out("gpus_throughput", "count", FMT_INT, *sz.step("gpus_throughput"),
        description="GPUs for demand_tpm on throughput alone (blank without demand)",
        label="GPUs on throughput alone"),
    out("gpus_for_latency", "count", FMT_INT, *sz.step("gpus_for_latency"),
        description="GPUs the latency targets (TTFT, TPOT, HBM fit at load, concurrency) add over throughput "
        "alone", label="GPUs the latency targets add"),
    out("cost_per_hour_for_latency", "currency/h", FMT_GIB, *sz.step("cost_per_hour_for_latency"),
        description="cost per hour of the GPUs the latency targets add (blank without demand or price)",
        label="Cost per hour of the GPUs the latency targets add"),
    # the sizing chain at the baseline hit ratio (planner.equations.sizing.BASELINE_STEPS): the steps of
    # instances_baseline, each the target's step with ttft_ms_baseline, tpm_delivered_baseline, hit_baseline
    *_baseline_columns(),
    # terms the formulas above would otherwise repeat (planner.workbook.shared_terms), at the target and the
    # baseline hit (the baseline's without the two that do not depend on the hit)
    *_results_terms(),
)

TERMS = frozenset(c.name for c in sweep_terms("", "", "")) | frozenset(c.name + "_baseline" for c in sweep_terms("", "", ""))


def without_terms(cols: tuple[Out, ...]) -> tuple[Out, ...]:
    """``cols`` without the term columns of :func:`sweep_terms` (a sheet whose formulas keep their text)."""
    return tuple(c for c in cols if c.name not in TERMS)


SENSITIVITY_HIT: tuple[Out, ...] = (
    out("load_ms", "ms", FMT_MS, m.kv_load_ms, "hit", "isl", "kv_bytes_per_token_gpu", "kv_gbps"),
    out("compute_ms", "ms", FMT_MS, m.compute_ms, "hit", "t_attn0_ms", "t_ffn0_ms", "t_other0_ms",
        "other_scaling"),
    out("ttft_alpha0_ms", "ms", FMT_MS, m.ttft_ms, "t_fixed_ms", "load_ms", "compute_ms", "alpha_none"),
    out("ttft_alpha1_ms", "ms", FMT_MS, m.ttft_ms, "t_fixed_ms", "load_ms", "compute_ms", "alpha_full"),
    out("ttft_ms", "ms", FMT_MS, m.ttft_ms, "t_fixed_ms", "load_ms", "compute_ms", "alpha"),
    out("chip_ms", "ms", FMT_MS, m.chip_ms, "ttft_ms", "t_decode_ms"),
    out("tpm_delivered", "tokens/min", FMT_INT, m.tpm_delivered, "isl", "osl", "chip_ms"),
    out("tpm_physical", "tokens/min", FMT_INT, m.tpm_physical, "isl", "osl", "hit", "chip_ms"),
    out("first_order_gain", "ratio", FMT_RATIO, m.first_order_gain, "hit", "delta"),
    # hits under load (issue 16): a hit shortens the prefill, and so the queue in front of it
    out("instances_throughput", "count", FMT_INT, m.instances_needed, "demand_tpm", "tpm_delivered",
        "target_utilization"),
    out("ttft_log_x", "", FMT_RATIO, *sz.step("ttft_log_x")),
    out("ttft_rho_max", "fraction", FMT_PCT, *sz.step("ttft_rho_max")),
    # the sizing chain's step with the sweep's own hit (not the planned hit_target)
    out("burst_new_tokens", "tokens", FMT_INT, pp.new_tokens, "isl", "hit"),
    out("ttft_burst_slo_ms", "ms", FMT_MS, pp.burst_ttft_u, "ttft_ms", "pass_fixed_ms", "burst_new_tokens",
        "concurrency", "max_num_batched_tokens", "slo_q"),
    out("ttft_steady_slo_ms", "ms", FMT_MS, dfs.steady_for, "scheduler", "ttft_ms", "pass_fixed_ms",
        "burst_new_tokens", "max_num_batched_tokens", "step_weights_ms", "step_kv_ms", "osl", "concurrency", "slo_q"),
    out("ttft_at_c_slo_ms", "ms", FMT_MS, dfs.by_scheduler, "scheduler", "ttft_steady_slo_ms", "ttft_burst_slo_ms"),
    out("instances_ttft", "count", FMT_INT, q.instances_for_rho, "demand_rps_open", "ttft_ms", "ttft_slo_ms",
        "ttft_rho_max", "concurrency", "ttft_at_c_slo_ms"),
    out("instances_tpot", "count", FMT_INT, q.instances_tpot, "demand_rps_open", "ttft_ms", "osl", "step_weights_ms",
        "step_kv_ms", "t_decode_ms", "decode_step_ms", "tpot_slo_ms", "concurrency"),
    out("instances_hbm", "count", FMT_INT, q.instances_hbm, "demand_rps_open", "ttft_ms", "osl", "step_weights_ms",
        "step_kv_ms", "t_decode_ms", "decode_step_ms", "max_batch_fit", "ttft_slo_ms", "tpot_slo_ms"),
    out("concurrency_rps", "requests/s", FMT_MS, q.closed_loop_rate, "concurrency", "ttft_ms", "osl",
        "step_weights_ms", "step_kv_ms", "pass_fixed_ms", "isl", "hit", "max_num_batched_tokens"),
    out("instances_concurrency", "count", FMT_INT, q.instances_concurrency, "demand_rps", "concurrency_rps",
        "concurrency"),
    out("instances_needed", "count", FMT_INT, q.instances_slo, "instances_throughput", "instances_ttft",
        "instances_tpot", "instances_hbm", "instances_concurrency",
        description="SLO-bound instances at this hit (model TPM for throughput)"),
    out("load_rps", "requests/s", FMT_MS, q.load_rate, "demand_tpm", "isl", "osl", "instances_needed", "chip_ms",
        "target_utilization", "concurrency_rps"),
    out("prefill_wait_ms", "ms", FMT_MS, q.wait_mean_ms, "load_rps", "ttft_ms", "t_decode_ms", "decode_step_ms",
        description="mean wait for the prefill at this hit's load, the request-alone queue's (a decode_first row "
        "planned open loop too: its ttft_load_ms is the decode-first queue, DF_Search_Hit, not ttft_ms + this)"),
    out("ttft_steady_ms", "ms", FMT_MS, dfs.steady_mean_for, "scheduler", "ttft_ms", "pass_fixed_ms",
        "burst_new_tokens", "max_num_batched_tokens", "step_weights_ms", "step_kv_ms", "osl", "concurrency"),
    out("ttft_steady_p90_ms", "ms", FMT_MS, dfs.steady_p90_for, "scheduler", "ttft_ms", "pass_fixed_ms",
        "burst_new_tokens", "max_num_batched_tokens", "step_weights_ms", "step_kv_ms", "osl", "concurrency"),
    out("ttft_load_ms", "ms", FMT_MS, dfs.ttft_load_sched_ms, "ttft_ms", "prefill_wait_ms", "concurrency",
        "pass_fixed_ms", "isl", "hit", "max_num_batched_tokens", "scheduler", "ttft_steady_ms",
        description="mean TTFT at the load this hit plans for"),
    out("prefill_wait_p90_ms", "ms", FMT_MS, q.wait_p90_ms, "load_rps", "ttft_ms", "t_decode_ms", "decode_step_ms",
        description="90th percentile of that wait, the request-alone queue's (a decode_first row planned open loop "
        "too: its ttft_load_p90_ms is the decode-first queue, DF_Search_Hit)"),
    out("ttft_load_p90_ms", "ms", FMT_MS, dfs.ttft_load_p90_sched_ms, "ttft_ms", "prefill_wait_p90_ms",
        "concurrency", "pass_fixed_ms", "isl", "hit", "max_num_batched_tokens", "scheduler", "ttft_steady_p90_ms"),
    out("tpot_load_ms", "ms", FMT_MS, q.tpot_load_ms, "load_rps", "ttft_ms", "osl", "step_weights_ms", "step_kv_ms",
        "prefill_wait_ms", "concurrency", "ttft_load_ms"),
    # terms the formulas above would otherwise repeat: each a column (planner.workbook.shared_terms)
    *sweep_terms("ttft_ms", "burst_new_tokens", "ttft_log_x"),
)

# Names that are not columns but named cells of the Constants sheet: name -> (Excel name,
# value, unit, description, editable).
ALPHA_GRID = (0.0, 0.25, 0.5, 0.75, 1.0)  # columns of the hit x alpha table
NAMED_VALUES = {
    "alpha_none": (_ALPHA0, 0.0, "fraction", "overlap alpha of the no-overlap columns", False),
    "alpha_full": (_ALPHA1, 1.0, "fraction", "overlap alpha of the full-overlap columns", False),
    "tornado_swing": (defined_name("Constants", "tornado_swing"), 0.2, "fraction",
                      "relative move of each driver in the Tornado sheet (clamped to its valid range)", True),
    **{f"alpha_g{int(a * 100)}": (defined_name("Constants", f"alpha_g{int(a * 100)}"), a, "fraction",
                                  f"alpha of the hit x alpha table column {a:g}", True) for a in ALPHA_GRID},
}


@dataclass(frozen=True)
class Lit:
    """A literal argument (a driver name compared in a formula), not a reference."""

    value: object

    @property
    def xl(self) -> str:
        return f'"{self.value}"' if isinstance(self.value, str) else repr(self.value)


# --------------------------------------------------------------------------- DF_Search
# The decode-first open loop (issue 16, "under load"): for a workload with scheduler decode_first planned open
# loop (no Workloads concurrency), its TTFT at the load and the TTFT target's count are those of the
# decode-first queue (planner.equations.decode_first_slo), whose count has no closed form. The DF_Search
# sheet (planner.workbook.df_search), row-aligned with Results and written only when the plan has such a
# row, holds the count's exact integer search live (a bit descent from the closed-form lower bound), the
# decode batch and TTFTs at the row's load and the search at hit_baseline; Results' instances_ttft,
# ttft_load_ms, ttft_load_p90_ms and instances_ttft_baseline of such a row refer to it (RESULTS_DF).
def _df_search_columns(load: bool = True, baseline: bool = True) -> tuple[Out, ...]:
    """DF_Search's columns: the row's inputs, the search at hit_target (Results instances_ttft), the load's
    batch and TTFTs (``load``; not on DF_Search_Periods, whose Demand_Calc rows have no load), then the same
    search at hit_baseline (Results instances_ttft_baseline; ``baseline``, not on DF_Search_Hit, whose
    sweep rows have no baseline)."""
    cols = [
        out("df_workload", "", None, dslo.searched_row, "scheduler", "concurrency", "@workload", text=True,
            description="the workload, on a row with scheduler decode_first and no concurrency (the rows this sheet "
            "writes and Results read; blank: Results keep the closed form)"),
        out("df_rate_total", "requests/s", FMT_MS, same, "demand_rps_open",
            description="Λ: the demand rate the TTFT target sizes for (Results demand_rps_open)"),
        out("df_prefill", "ms", FMT_MS, same, "ttft_ms", description="P: the request-alone prefill (Results ttft_ms)"),
        out("df_t_fixed", "ms", FMT_MS, dslo.zero_if_blank, "pass_fixed_ms",
            description="F: fixed cost per forward pass (Resolved pass_fixed_ms, 0 when blank)"),
        out("df_new_tokens", "tokens", FMT_INT, same, "burst_new_tokens",
            description="u: new prompt tokens per request (Results burst_new_tokens)"),
        out("df_budget", "tokens", FMT_INT, same, "max_num_batched_tokens",
            description="M: new tokens per step (Resolved max_num_batched_tokens; blank: one prompt a step)"),
        out("df_s0", "ms", FMT_MS, same, "step_weights_ms", description="s0: decode step, weights part"),
        out("df_s1", "ms", FMT_RATIO, same, "step_kv_ms", description="s1: decode step per request in decode"),
        out("df_osl", "tokens", FMT_INT, same, "osl", description="output tokens per request"),
        out("df_slo", "ms", FMT_MS, same, "ttft_slo_ms", description="the TTFT target (Resolved ttft_slo_ms)"),
        out("df_q", "fraction", FMT_PCT, dslo.zero_if_blank, "slo_q",
            description="quantile of the target (Results slo_q; 0: the mean)"),
    ]
    cols += _df_search("", "df_prefill", "df_new_tokens")
    cols += [] if not load else [
        out("df_load_batch", "requests", FMT_MS, dslo.load_batch_df, "scheduler", "concurrency", "load_rps",
            "df_prefill", "df_t_fixed", "df_new_tokens", "df_budget", "df_s0", "df_s1", "df_osl",
            description="decode batch at the row's load (Results load_rps), decode-first open loop"),
        out("df_load_service_ms", "ms", FMT_MS, dslo.service_df_ms, "df_prefill", "df_t_fixed", "df_new_tokens",
            "df_budget", "df_s0", "df_s1", "df_load_batch", description="a prompt's time beside that batch, P_df"),
        out("df_ttft_load_ms", "ms", FMT_MS, dslo.load_ttft_mean_df_ms, "load_rps", "df_s0", "df_s1", "df_osl",
            "df_load_batch", "df_load_service_ms",
            description="mean TTFT at the row's load (Results ttft_load_ms of this row)"),
        out("df_ttft_load_p90_ms", "ms", FMT_MS, dslo.load_ttft_p90_df_ms, "load_rps", "df_s0", "df_s1", "df_osl",
            "df_load_batch", "df_load_service_ms",
            description="p90 TTFT at the row's load (Results ttft_load_p90_ms of this row)"),
    ]
    if not baseline:
        return tuple(cols)
    cols += [
        # the baseline chain (instances_baseline) at hit_baseline: its request-alone prefill and new tokens
        out("df_prefill_baseline", "ms", FMT_MS, same, "ttft_ms_baseline",
            description="P at hit_baseline (Results ttft_ms_baseline)"),
        out("df_new_tokens_baseline", "tokens", FMT_INT, same, "burst_new_tokens_baseline",
            description="u at hit_baseline (Results burst_new_tokens_baseline)"),
    ]
    cols += _df_search("_baseline", "df_prefill_baseline", "df_new_tokens_baseline")
    return tuple(cols)


def _df_search(sfx: str, prefill: str, tokens: str) -> list[Out]:
    """The search of one TTFT count (``sfx`` "" at hit_target, "_baseline" at hit_baseline) with the
    request-alone prefill ``prefill`` and new tokens ``tokens`` (DF_Search column names)."""
    at = " at hit_baseline" if sfx else ""
    cols = [
        out("df_log_x" + sfx, "", FMT_RATIO, dslo.search_log_x, prefill, "df_slo", "df_q",
            description=f"ln of the Lambert W argument{at} of the request-alone queue with no decode term (a step of "
            "df_rho_up; blank for a mean target)"),
        out("df_rho_up" + sfx, "fraction", FMT_PCT, dslo.search_rho_up, prefill, "df_slo", "df_q", "df_log_x" + sfx,
            description="utilisation λ_up P at which the request-alone queue with no decode term meets the target: "
            "an upper bound of the decode-first rate"),
        out("df_floor" + sfx, "count", FMT_INT, dslo.search_floor, "scheduler", "concurrency", "df_rate_total",
            prefill, "df_t_fixed", tokens, "df_budget", "df_slo", "df_rho_up" + sfx,
            description="the search's lower bound n_lo = max(ceil(Λ/λ_up) - 1, 1) (unreachable: the target is not "
            "above a request alone; blank: not a decode-first row planned open loop with a target and demand)"),
        out("df_miss_start" + sfx, "count", FMT_INT, dslo.search_start, "df_floor" + sfx,
            description="the count known to miss the target the search starts from, n_lo - 1"),
    ]
    miss = "df_miss_start" + sfx
    for bit in dslo.SEARCH_BIT_VALUES:
        j = bit.bit_length() - 1
        b, p, t, m = (f"df_batch_{j}{sfx}", f"df_service_{j}_ms{sfx}", f"df_ttft_{j}_ms{sfx}",
                      f"df_miss_{j}{sfx}")
        cols += [
            out(b, "requests", FMT_MS, dslo.search_batch, miss, Lit(bit), "df_rate_total", prefill, "df_t_fixed",
                tokens, "df_budget", "df_s0", "df_s1", "df_osl",
                description=f"decode batch at the candidate count {miss} + 2^{j} (blank: saturated)"),
            out(p, "ms", FMT_MS, dslo.service_df_ms, prefill, "df_t_fixed", tokens, "df_budget", "df_s0",
                "df_s1", b, description="a prompt's time beside that batch, P_df"),
            out(t, "ms", FMT_MS, dslo.search_ttft, miss, Lit(bit), "df_rate_total", "df_s0", "df_s1", "df_osl", "df_q",
                b, p, description=f"TTFT statistic of the target at the candidate count {miss} + 2^{j}"),
            out(m, "count", FMT_INT, dslo.search_keep, miss, Lit(bit), t, "df_slo",
                description=f"the count known to miss the target after bit 2^{j}: the candidate where it misses, "
                f"else {miss}"),
        ]
        miss = m
    cols += [
        out("df_instances_ttft" + sfx, "count", FMT_INT, dslo.search_count, "df_floor" + sfx, miss, "df_rate_total",
            description="instances the TTFT target needs under decode first, open loop: the smallest count whose "
            f"TTFT statistic meets the target{at} (Results instances_ttft{sfx} of this row); unreachable where the "
            "target is not above a request alone, or every count tried misses it (the count is at least df_floor + "
            "16,777,215, beyond the search's reach)"),
    ]
    return cols


DF_SEARCH: tuple[Out, ...] = _df_search_columns()
DF_SEARCH_SHEET = "DF_Search"
# the same search for each (workload, period) row of Demand_Calc (planner.workbook.periods_sheet), its names read
# from the Demand_Calc row (ttft_ms and burst_new_tokens at the period's hit, its demand_rps_open, ...)
DF_SEARCH_PERIODS: tuple[Out, ...] = _df_search_columns(load=False)
DF_SEARCH_PERIODS_SHEET = "DF_Search_Periods"
# the same search for each row of Sensitivity_Hit's hit sweep (planner.plan.sensitivity.hit_table,
# planner.workbook.long_tables), its names read from the sweep row where the sweep has them (ttft_ms,
# burst_new_tokens and load_rps at the row's hit), else from Resolved/Results of the row's workload
DF_SEARCH_HIT: tuple[Out, ...] = _df_search_columns(baseline=False)
DF_SEARCH_HIT_SHEET = "DF_Search_Hit"


def _swap_df(table: tuple[Out, ...]) -> tuple[Out, ...]:
    """``table`` (:data:`RESULTS` or :data:`SENSITIVITY_HIT`) with instances_ttft, ttft_load_ms,
    ttft_load_p90_ms and instances_ttft_baseline of a decode-first row planned open loop taken from its
    search (DF_Search, DF_Search_Hit: the same names, units and order; every other row's formula as before)."""
    swap = {
        "instances_ttft": (dslo.instances_ttft_open_df, "df_instances_ttft"),
        "instances_ttft_baseline": (dslo.instances_ttft_open_df, "df_instances_ttft_baseline"),
        "ttft_load_ms": (dslo.ttft_load_open_df_ms, "df_ttft_load_ms"),
        "ttft_load_p90_ms": (dslo.ttft_load_p90_open_df_ms, "df_ttft_load_p90_ms"),
    }
    cols = []
    for c in table:
        if c.name in swap:
            func, extra = swap[c.name]
            args = c.args + ("df_workload", extra)
            c = Out(c.name, c.unit, c.fmt, func, args, c.description, c.text, c.label)
        cols.append(c)
    return tuple(cols)


RESULTS_DF: tuple[Out, ...] = _swap_df(RESULTS)
# the hit sweep of a plan with a decode-first row planned open loop: such a row's instances_ttft, ttft_load_ms and
# ttft_load_p90_ms at the sweep's hit from DF_Search_Hit (planner.plan.sensitivity.hit_table)
SENSITIVITY_HIT_DF: tuple[Out, ...] = _swap_df(SENSITIVITY_HIT)


def has_open_df(resolved) -> bool:
    """Whether a plan has a decode-first workload planned open loop (its workbook then holds DF_Search)."""
    sched = resolved["scheduler"].to_numpy() if "scheduler" in resolved else np.array([], dtype=object)
    conc = coerced_floats(resolved["concurrency"]) if "concurrency" in resolved else np.array([])
    return bool(np.any(dslo.open_loop_df(sched, conc))) if len(sched) else False


def results_columns(resolved) -> tuple[Out, ...]:
    """The Results declaration a plan's workbook is written with: :data:`RESULTS_DF` when it has a
    decode-first row planned open loop, else :data:`RESULTS` (so a plan without one is unchanged)."""
    return RESULTS_DF if has_open_df(resolved) else RESULTS


# --------------------------------------------------------------------------- Resolved
@dataclass(frozen=True)
class ResolvedCol:
    name: str
    source: str          # "Workloads", "Models", "GPUs" or "" (computed here)
    unit: str
    fmt: str | None
    text: bool


def resolved_columns() -> tuple[ResolvedCol, ...]:
    cols = [ResolvedCol("workload", "Workloads", "", None, True),
            ResolvedCol("model", "Workloads", "", None, True),
            ResolvedCol("gpu", "Workloads", "", None, True),
            ResolvedCol("model_row", "", "row", FMT_INT, False),
            ResolvedCol("gpu_row", "", "row", FMT_INT, False)]
    for sheet in ("Models", "GPUs", "Workloads"):
        for c in schema.columns(sheet):
            if c.key or not c.calc or c.name in ("model", "gpu", "pcie_gen"):
                continue
            text = c.kind in (TEXT,) or (c.kind == CHOICE and isinstance(c.choices[0], str))
            cols.append(ResolvedCol(c.name, sheet, c.unit, c.fmt, text))
    cols.append(ResolvedCol("breakdown_source", "", "", None, True))  # input / calibrated / estimated
    return tuple(cols)


RESOLVED = resolved_columns()


def batch_fit(res) -> np.ndarray:
    """``max_batch_fit`` of Resolved rows (the Results column, from the same inputs)."""
    s_kv = m.kv_bytes_per_token_gpu(res["attention"], res["layers"], res["kv_heads"], res["head_dim"],
                                    res["mla_kv_dim"], res["kv_bytes"], res["tp"])
    return m.max_batch_fit(res["hbm_gib"], m.weights_gib_per_gpu(res["params_b"], res["weight_bytes"], res["tp"]),
                           res["max_seq_len"], s_kv)


def default_batch(res) -> np.ndarray:
    """Resolved ``batch``: typed, else :func:`planner.equations.queueing.default_batch`."""
    return np.asarray(q.default_batch(np.asarray(res["batch"], dtype=float),
                                      np.asarray(res["concurrency"], dtype=float), batch_fit(res)), dtype=float)


def batch_formula(ref: Callable[[str], str], x: str) -> str:
    """Excel twin of :func:`default_batch` over this Resolved row's cells (``x``: the Workloads cell)."""
    s_kv = m.kv_bytes_per_token_gpu.xl(ref("attention"), ref("layers"), ref("kv_heads"), ref("head_dim"),
                                       ref("mla_kv_dim"), ref("kv_bytes"), ref("tp"))
    fit = m.max_batch_fit.xl(ref("hbm_gib"), m.weights_gib_per_gpu.xl(ref("params_b"), ref("weight_bytes"), ref("tp")),
                             ref("max_seq_len"), s_kv)
    return q.default_batch.xl(x, ref("concurrency"), fit)


# Workloads columns whose blank takes a Settings value (the named Settings cell s_<key>).
SETTING_DEFAULTS = {key: setting_name(key) for key in ("target_utilization", "demand_growth",
                                                       "max_num_batched_tokens")}


def schema_setting(key: str) -> schema.Setting:
    return next(s for s in schema.SETTING_KEYS if s.key == key)


# Optional inputs without a default: blank stays blank (their results are blank too).
OPTIONAL_BLANK = frozenset({"hourly_cost", "tpm_measured", "demand_tpm", "concurrency", "ttft_slo_ms", "tpot_slo_ms"})


class _Row:
    """What a Resolved rule reads in Python, for one column over every workload: the input
    cell of the column (``raw``, looked up in Models/GPUs for their columns), its blanks, its
    numbers, the Resolved columns computed before it (``out``) and the frames and settings."""

    def __init__(self, rc, models, gpus, workloads, idx, out, settings, columns):
        self.rc, self.models, self.gpus, self.workloads, self.idx, self.out = rc, models, gpus, workloads, idx, out
        self.settings = settings or {}
        self.c = schema.column(rc.source, rc.name) if rc.source else None
        if self.c is not None:
            i = idx[rc.source]
            col = columns[rc.source].get(rc.name)  # resolve's once-made object arrays of the three frames
            self.raw = col[i] if col is not None else np.full(len(i), None)
            self.blank = pd.isna(self.raw)

    @property
    def num(self) -> np.ndarray:
        return coerced_floats(self.raw)

    def typed_else(self, fallback) -> np.ndarray:
        """The typed number, else ``fallback`` (an array or a number): :func:`planner.equations.tables.typed_or`."""
        return tb.typed_or(self.num, fallback)


class _Cell:
    """What a Resolved rule reads in Excel, for one cell: ``x`` the input cell (a Workloads cell,
    or INDEX into the Models/GPUs column at this row's model_row/gpu_row), ``ref(name)`` this
    row's Resolved cell of ``name``, ``wl(name)`` this row's Workloads cell, ``table(sheet, name)``
    a whole input column."""

    def __init__(self, rc, ref, wl, table):
        self.rc, self.ref, self.wl, self.table = rc, ref, wl, table
        self.c = schema.column(rc.source, rc.name) if rc.source else None
        if self.c is None:
            self.x = ""
        elif rc.source == "Workloads":
            self.x = wl(rc.name)
        else:
            self.x = tb.at_row.xl(table(rc.source, rc.name), ref("model_row" if rc.source == "Models" else "gpu_row"))

    def typed_else(self, fallback: str, test: str = "ISNUMBER") -> str:
        """The input cell when typed (a number, or text for ``test="ISTEXT"``), else ``fallback``
        (the twins :func:`planner.equations.tables.typed_or` / :func:`~planner.equations.tables.text_or`)."""
        return (tb.text_or if test == "ISTEXT" else tb.typed_or).xl(self.x, fallback)


@dataclass(frozen=True)
class ResolvedRule:
    """How a Resolved column gets its value, in Python (``py(row)``, an array over the workloads)
    and in Excel (``xl(cell)``, one cell's formula without ``=``): one declaration, so the two
    cannot take their special cases in different orders. ``applies(rc, c)``: the rule is this
    column's (the first rule of :data:`RESOLVED_RULES` that applies is)."""

    what: str
    applies: Callable[[ResolvedCol, Any], bool]
    py: Callable[[_Row], np.ndarray]
    xl: Callable[[_Cell], str]


def _breakdown_py(r: _Row) -> np.ndarray:
    # set by planner.plan.calibrate.fill_breakdown; rows filled by calibration/estimate get their own
    # formula (planner.workbook.calibration_sheet)
    bs = r.workloads["breakdown_source"] if "breakdown_source" in r.workloads else "input"
    return np.broadcast_to(np.asarray(bs, dtype=object), (len(r.workloads),)).copy()


def _pcie_py(r: _Row) -> np.ndarray:
    i = r.idx["GPUs"]
    gen = r.gpus["pcie_gen"].to_numpy(dtype=object)[i] if "pcie_gen" in r.gpus else np.full(len(i), None)
    return r.typed_else(m.pcie_gbps_of_gen(gen))


def _pcie_xl(k: _Cell) -> str:
    gen = tb.at_row.xl(k.table("GPUs", "pcie_gen"), k.ref("gpu_row"))
    return k.typed_else(m.pcie_gbps_of_gen.xl(gen))


def _setting_py(r: _Row) -> np.ndarray:
    fallback = float(r.settings.get(r.rc.name, schema_setting(r.rc.name).default))
    return np.where(r.blank, fallback, pd.to_numeric(pd.Series(r.raw, dtype=object)).to_numpy(dtype=float))


def _text_xl(k: _Cell) -> str:
    return k.typed_else(k.c.default_name if k.c.default is not None else '""', "ISTEXT")


def _named(*names: str) -> Callable[[ResolvedCol, Any], bool]:
    return lambda rc, c: rc.name in names


RESOLVED_RULES: tuple[ResolvedRule, ...] = (
    ResolvedRule("the key columns, copied from Workloads", _named("workload", "model", "gpu"),
                 lambda r: r.workloads[r.rc.name].to_numpy(), lambda k: k.wl(k.rc.name)),
    ResolvedRule("the row of the model / GPU in its table (1-based)", _named("model_row", "gpu_row"),
                 lambda r: r.idx["Models" if r.rc.name == "model_row" else "GPUs"] + 1,
                 lambda k: tb.position.xl(k.table("Models" if k.rc.name == "model_row" else "GPUs", k.rc.name[:-4]),
                                          k.wl(k.rc.name[:-4]))),
    ResolvedRule("where the prefill times come from: input or missing (calibration fills its own)",
                 _named("breakdown_source"), _breakdown_py,
                 lambda k: tb.both_typed_or.xl(k.wl("t_attn0_ms"), k.wl("t_ffn0_ms"), '"missing"')),
    ResolvedRule("pcie_gbps: typed, else by PCIe generation (the Gen5 / Gen4 bandwidth of the Constants sheet)",
                 _named("pcie_gbps"), _pcie_py, _pcie_xl),
    ResolvedRule("kv_gbps, the effective KV load bandwidth: typed (or calibrated), else pcie_gbps",
                 _named("kv_gbps"), lambda r: r.typed_else(r.out["pcie_gbps"].to_numpy(dtype=float)),
                 lambda k: k.typed_else(k.ref("pcie_gbps"))),
    ResolvedRule("max_seq_len: typed, else isl + osl", _named("max_seq_len"),
                 lambda r: r.typed_else(r.out["isl"].to_numpy() + r.out["osl"].to_numpy()),
                 lambda k: k.typed_else(f"{k.ref('isl')}+{k.ref('osl')}")),
    ResolvedRule("batch: typed, else the workload's concurrency, else the full-length requests whose KV fits in HBM "
                 "(at most the MAX_NUM_SEQS constant); the Python side is filled once concurrency is resolved (resolve)",
                 _named("batch"), lambda r: r.num, lambda k: batch_formula(k.ref, k.x)),
    ResolvedRule("t_decode_batch, the batch t_decode_ms holds at: typed (or calibrated), else batch",
                 _named("t_decode_batch"), lambda r: r.typed_else(r.out["batch"].to_numpy(dtype=float)),
                 lambda k: k.typed_else(k.ref("batch"))),
    ResolvedRule("pass_fixed_ms, the fixed cost of a forward pass: typed (or calibrated), else t_fixed_ms",
                 _named("pass_fixed_ms"), lambda r: r.typed_else(r.out["t_fixed_ms"].to_numpy(dtype=float)),
                 lambda k: k.typed_else(k.ref("t_fixed_ms"))),
    ResolvedRule("hit_baseline, the planning baseline: typed, else the load test's hit ratio", _named("hit_baseline"),
                 lambda r: r.typed_else(r.out["hit_measured"].to_numpy(dtype=float)),
                 lambda k: k.typed_else(k.ref("hit_measured"))),
    ResolvedRule("a Workloads column whose blank takes a Settings value (s_<key>)",
                 lambda rc, c: rc.name in SETTING_DEFAULTS, _setting_py,
                 lambda k: k.typed_else(SETTING_DEFAULTS[k.rc.name], "ISTEXT" if k.rc.text else "ISNUMBER")),
    ResolvedRule("a text column: typed, else its default (d_<name>), else blank", lambda rc, c: rc.text,
                 lambda r: np.where(r.blank, r.c.default if r.c.default is not None else "", r.raw).astype(object),
                 _text_xl),
    ResolvedRule("a number with a default: typed, else the default (d_<name>)", lambda rc, c: c.default is not None,
                 lambda r: r.typed_else(float(r.c.default)), lambda k: k.typed_else(k.c.default_name)),
    ResolvedRule("an optional number without a default: blank stays blank", lambda rc, c: rc.name in OPTIONAL_BLANK,
                 lambda r: r.num, lambda k: k.typed_else('""')),
    ResolvedRule("a required number: as typed (the reader refuses a blank)", lambda rc, c: c.required is True,
                 lambda r: r.num, lambda k: k.x),
    ResolvedRule("a conditional number (kv_heads of an MLA model): blank counts as 0, never used then",
                 lambda rc, c: True, lambda r: r.typed_else(0.0), lambda k: k.typed_else("0")),
)


def resolved_rule(rc: ResolvedCol) -> ResolvedRule:
    """The rule of Resolved column ``rc``: the first of :data:`RESOLVED_RULES` that applies."""
    c = schema.column(rc.source, rc.name) if rc.source else None
    return next(rule for rule in RESOLVED_RULES if rule.applies(rc, c))


def resolve(models: pd.DataFrame, gpus: pd.DataFrame, workloads: pd.DataFrame,
            settings: dict | None = None) -> pd.DataFrame:
    """Python twin of the ``Resolved`` sheet: one row per workload, every input with its
    default applied (a :data:`SETTING_DEFAULTS` column from ``settings``), model and GPU
    attributes looked up; optional blanks stay NaN. Each column by its :func:`resolved_rule`."""
    mi = {name: i for i, name in enumerate(models["model"])}
    gi = {name: i for i, name in enumerate(gpus["gpu"])}
    idx = {"Models": workloads["model"].map(mi).to_numpy(), "GPUs": workloads["gpu"].map(gi).to_numpy(),
           "Workloads": np.arange(len(workloads))}
    # each frame's columns as object arrays once, and the Resolved columns collected in a dict and framed at the
    # end: a column inserted into a DataFrame one at a time, and a frame column read anew per Resolved column,
    # cost about 0.4 ms each, 34 ms a resolve (a third of build_plan's time in the tests)
    columns = {sheet: {name: frame[name].to_numpy(dtype=object) for name in frame.columns}
               for sheet, frame in (("Models", models), ("GPUs", gpus), ("Workloads", workloads))}
    index = pd.RangeIndex(len(workloads))
    out = _Columns(index)
    for rc in RESOLVED:
        out[rc.name] = _rule_of(rc).py(_Row(rc, models, gpus, workloads, idx, out, settings, columns))
        if rc.name == "concurrency":  # every input batch's default needs is resolved by now
            out["batch"] = default_batch(out)
    return pd.DataFrame(out.values_by_name(), index=index)


class _Columns:
    """The Resolved columns computed so far (``resolve``): ``out[name]`` a Series over the workloads, as a
    DataFrame column reads; the values kept as the rules gave them, framed once at the end."""

    def __init__(self, index: pd.Index):
        self._index, self._values = index, {}

    def __setitem__(self, name: str, value) -> None:
        self._values[name] = value

    def __getitem__(self, name: str) -> pd.Series:
        return pd.Series(self._values[name], index=self._index, name=name)

    def __contains__(self, name: str) -> bool:
        return name in self._values

    def values_by_name(self) -> dict:
        return self._values


_RULES: dict = {}


def _rule_of(rc: ResolvedCol) -> ResolvedRule:
    """:func:`resolved_rule`, once per column."""
    rule = _RULES.get(rc)
    if rule is None:
        rule = _RULES[rc] = resolved_rule(rc)
    return rule


def resolved_formula(rc: ResolvedCol, ref: Callable[[str], str], wl: Callable[[str], str],
                     table: Callable[[str, str], str]) -> str:
    """Excel formula (without ``=``) of one ``Resolved`` cell, by its :func:`resolved_rule`.

    ``ref(name)`` is this row's Resolved cell of ``name``; ``wl(name)`` this row's
    Workloads cell; ``table(sheet, name)`` the whole column range of Models or GPUs.
    """
    return resolved_rule(rc).xl(_Cell(rc, ref, wl, table))


# --------------------------------------------------------------------------- Python evaluation
class Values:
    """Lazy namespace: column values of one derived sheet, computed on first use."""

    def __init__(self, cols: tuple[Out, ...], base: dict[str, np.ndarray]):
        self._cols = {c.name: c for c in cols}
        self._base = base
        self.values: dict[str, np.ndarray] = {}

    def __getitem__(self, name: str) -> np.ndarray:
        return self.get(name)

    def get(self, name, skip: str = "") -> np.ndarray:
        """Value of ``name``; a column's argument of its own name (``workload`` copied
        from Resolved) and a name written ``@name`` skip the sheet's own columns."""
        if isinstance(name, Lit):
            return np.asarray(name.value)
        if name.startswith("@"):
            name = skip = name[1:]
        if name in self.values and name != skip:
            return self.values[name]
        if name in self._cols and name != skip:
            c = self._cols[name]
            self.values[name] = np.asarray(c.func(*(self.get(a, skip=name) for a in c.args)))
            return self.values[name]
        if name in NAMED_VALUES:
            return np.asarray(NAMED_VALUES[name][1])
        return self._base[name]


def evaluate(cols: tuple[Out, ...], base: dict[str, np.ndarray], n: int, helpers: tuple[Out, ...] = ()) -> pd.DataFrame:
    """Evaluate every column of ``cols`` over ``base`` (a dict of arrays of length n); ``helpers``: columns
    of another sheet that ``cols`` read (Results reads DF_Search's), evaluated as needed, not returned."""
    v = Values(helpers + cols, base)
    numeric = [c for c in cols if not c.text]
    # one Fortran-ordered block for the numbers: pandas wraps it without another copy
    block = np.empty((n, len(numeric)), dtype=float, order="F")
    for j, c in enumerate(numeric):
        block[:, j] = v[c.name]
    frame = pd.DataFrame(block, columns=[c.name for c in numeric])
    for loc, c in enumerate(cols):
        if c.text:
            x = np.asarray(v[c.name], dtype=object)
            x = np.broadcast_to(x, (n,)).copy() if x.ndim == 0 else x
            frame.insert(loc, c.name, pd.Series(x, dtype=object, copy=False))
    return frame
