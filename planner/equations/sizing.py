"""SLO-bound sizing, declared once: the chain from a demand to the instance count that meets
throughput at ``target_utilization``, the TTFT and TPOT targets, the HBM fit of the decode batch at
load and a fixed concurrency (issue 16), with what the latency targets add over throughput alone.

Every place that sizes a demand uses this chain, with the same numpy functions in Python and the
same Excel twins in its formulas:

- Results (:data:`planner.plan.columns.RESULTS` takes its sizing columns from :func:`step`);
- each (workload, period) row of ``Demand_Calc`` (:func:`planner.finance.periods.period_calc` and
  :mod:`planner.workbook.periods_sheet`), at the period's demand and hit ratio;
- each scenario and each ``planner diff`` bridge state (re-planned in full, so through Results).

A step is ``(name, func, args)``: its value is ``func(*values of args)`` and its formula
``func.xl(*references of args)``; an argument is an earlier step or an input of the row
(:data:`INPUTS`). The closed forms themselves, with their sources, are in
:mod:`planner.equations.queueing` (M/G/1 prefill queue with non-preemptive priority, Cobham;
Kleinrock vol. 2 sec. 3.6) and :func:`planner.equations.kvhit.instances_needed`.
"""

from __future__ import annotations

from typing import Callable, Mapping

import numpy as np

from planner.equations import kvhit as m
from planner.equations import decode_first as df
from planner.equations import decode_first_slo as dslo
from planner.equations import prefill_passes as pp
from planner.equations import queueing as q
from planner.equations.fleet import cost_per_hour

# what a row supplies: the demand and the row's own service time (both vary per period: demand
# by growth, ttft_ms and tpm_delivered_target by the period's hit ratio), and the workload's
# shape and targets (the same for every period of a workload)
INPUTS = ("demand_tpm", "tpm_delivered_target", "target_utilization", "ttft_ms",      # per row
          "isl", "osl", "concurrency", "t_decode_ms", "decode_step_ms", "step_weights_ms", "step_kv_ms",
          "ttft_slo_ms", "tpot_slo_ms", "slo_q", "max_batch_fit", "tp", "hourly_cost",
          "pass_fixed_ms", "hit_target", "max_num_batched_tokens", "scheduler")  # per workload (hit_target: per row)

STEPS: tuple[tuple[str, Callable, tuple[str, ...]], ...] = (
    ("instances_throughput", m.instances_needed, ("demand_tpm", "tpm_delivered_target", "target_utilization")),
    ("demand_rps", q.demand_rate, ("demand_tpm", "isl", "osl")),
    ("demand_rps_open", q.open_loop_rate, ("demand_rps", "concurrency")),
    # the TTFT count (q.instances_ttft) in three steps, so that no formula exceeds the 8,192 characters a
    # spreadsheet formula may hold (Excel specifications and limits, "Length of formula contents":
    # https://support.microsoft.com/en-us/office/excel-specifications-and-limits-1672b34d-7043-467e-8e27-269d656771c3);
    # the one formula inlined the Lambert W argument 27 times (13,839 characters in Results)
    ("ttft_log_x", q.ttft_log_x, ("ttft_ms", "t_decode_ms", "decode_step_ms", "ttft_slo_ms", "slo_q")),
    ("ttft_rho_max", q.ttft_rho_max, ("ttft_ms", "t_decode_ms", "decode_step_ms", "ttft_slo_ms", "slo_q",
                                      "ttft_log_x")),
    # at a fixed concurrency: the TTFT statistic of the target (slo_percentile) of the burst, its prefills
    # packed into passes of max_num_batched_tokens (blank without concurrency)
    ("burst_new_tokens", pp.new_tokens, ("isl", "hit_target")),
    ("ttft_burst_slo_ms", pp.burst_ttft_u, ("ttft_ms", "pass_fixed_ms", "burst_new_tokens", "concurrency",
                                            "max_num_batched_tokens", "slo_q")),
    # under a decode-first scheduler (Workloads scheduler, planner.equations.decode_first) the loop at a fixed
    # concurrency runs steady instead: its TTFT at the target's statistic, and the one the target is held to
    ("ttft_steady_slo_ms", df.steady_for, ("scheduler", "ttft_ms", "pass_fixed_ms", "burst_new_tokens",
                                           "max_num_batched_tokens", "step_weights_ms", "step_kv_ms", "osl",
                                           "concurrency", "slo_q")),
    ("ttft_at_c_slo_ms", df.by_scheduler, ("scheduler", "ttft_steady_slo_ms", "ttft_burst_slo_ms")),
    ("instances_ttft", q.instances_for_rho, ("demand_rps_open", "ttft_ms", "ttft_slo_ms", "ttft_rho_max",
                                             "concurrency", "ttft_at_c_slo_ms")),
    ("instances_tpot", q.instances_tpot, ("demand_rps_open", "ttft_ms", "osl", "step_weights_ms", "step_kv_ms",
                                          "t_decode_ms", "decode_step_ms", "tpot_slo_ms", "concurrency")),
    ("instances_hbm", q.instances_hbm, ("demand_rps_open", "ttft_ms", "osl", "step_weights_ms", "step_kv_ms",
                                        "t_decode_ms", "decode_step_ms", "max_batch_fit", "ttft_slo_ms",
                                        "tpot_slo_ms")),
    # a closed loop of Workloads concurrency requests, their prefills batched in passes of
    # max_num_batched_tokens new tokens (planner.equations.prefill_passes)
    ("concurrency_rps", q.closed_loop_rate, ("concurrency", "ttft_ms", "osl", "step_weights_ms", "step_kv_ms",
                                             "pass_fixed_ms", "isl", "hit_target", "max_num_batched_tokens")),
    ("instances_concurrency", q.instances_concurrency, ("demand_rps", "concurrency_rps", "concurrency")),
    ("instances_needed", q.instances_slo, ("instances_throughput", "instances_ttft", "instances_tpot",
                                           "instances_hbm", "instances_concurrency")),
    ("binding", q.binding, ("instances_needed", "instances_throughput", "instances_ttft", "instances_tpot",
                            "instances_hbm", "instances_concurrency")),
    ("gpus_needed", m.gpus_needed, ("instances_needed", "tp")),
    ("gpus_throughput", m.gpus_needed, ("instances_throughput", "tp")),
    ("gpus_for_latency", q.extra_for_latency, ("gpus_needed", "gpus_throughput")),
    ("cost_per_hour_for_latency", cost_per_hour, ("gpus_for_latency", "hourly_cost")),
)
NAMES = tuple(s[0] for s in STEPS)
_BY_NAME = {s[0]: s for s in STEPS}


def step(name: str) -> tuple:
    """``(func, *args)`` of step ``name``, as :func:`planner.plan.columns.out` takes them."""
    _n, func, args = _BY_NAME[name]
    return (func, *args)


def _df_count(prefill: str, tokens: str) -> Callable:
    """The TTFT count of a decode-first row planned open loop by the search, from a row's values (the
    closed form elsewhere): :func:`planner.equations.decode_first_slo.open_df_count`."""
    def count(v, closed):
        return dslo.open_df_count(closed, v["scheduler"], v["concurrency"], v["demand_rps_open"], v[prefill],
                                  v["pass_fixed_ms"], v[tokens], v["max_num_batched_tokens"], v["step_weights_ms"],
                                  v["step_kv_ms"], v["osl"], v["ttft_slo_ms"], v["slo_q"])
    return count


# Demand_Calc's overrides of the closed-form TTFT counts (planner.finance.periods; the DF_Search_Periods sheet)
DF_OVERRIDE = {"instances_ttft": _df_count("ttft_ms", "burst_new_tokens")}
DF_OVERRIDE_BASELINE = {"instances_ttft_baseline": _df_count("ttft_ms_baseline", "burst_new_tokens_baseline")}


def size(inputs: Mapping[str, object], override: Mapping[str, Callable] | None = None) -> dict[str, np.ndarray]:
    r"""Size demands: every step of :data:`STEPS` from the row inputs, vectorised over rows.

    .. math:: n = \max(n_{throughput}, n_{ttft}, n_{tpot}, n_{hbm}, n_{concurrency}),
              \quad n_{throughput} = \lceil D / (TPM \cdot u) \rceil

    with each latency count from its closed-form inverse (:mod:`planner.equations.queueing`).

    Parameters
    ----------
    inputs : mapping of each name of :data:`INPUTS` to an array over the rows (NaN: blank);
        demand_tpm [tokens/min], tpm_delivered_target [tokens/min], target_utilization [fraction],
        ttft_ms (request alone) [ms], isl/osl [tokens], concurrency [requests], t_decode_ms,
        decode_step_ms, step_weights_ms [ms], step_kv_ms [ms/request], ttft_slo_ms, tpot_slo_ms [ms],
        slo_q [fraction], max_batch_fit [requests], tp [count], hourly_cost [currency/h]

    Returns
    -------
    dict, each step's name to its values: counts [count], rates [requests/s], ``binding`` text,
    cost_per_hour_for_latency [currency/h]. ``override``: a step's name to ``f(values, closed)``, its value
    in place of the closed form's (:data:`DF_OVERRIDE`)
    """
    missing = [n for n in INPUTS if n not in inputs]
    if missing:
        raise KeyError(f"size: missing inputs {missing}")
    vals: dict[str, object] = dict(inputs)
    out: dict[str, np.ndarray] = {}
    for name, func, args in STEPS:
        with np.errstate(divide="ignore", invalid="ignore"):
            out[name] = vals[name] = func(*(vals[a] for a in args))
            if override and name in override:
                out[name] = vals[name] = override[name](vals, out[name])
    return out


def size_xl(ref: Callable[[str], str]) -> dict[str, str]:
    """The Excel formula of every step (without ``=``), ``ref(name)`` giving the cell of an input or
    of a step's own column in the sheet being written."""
    return {name: func.xl(*(ref(a) for a in args)) for name, func, args in STEPS}


# ----------------------------------------------------------------------------- at the baseline hit ratio
# The savings of the hit target (instances_baseline, gpus_baseline, cost_saved_per_month) compare the target
# with the same demand at the planning baseline hit ratio ``hit_baseline``. Both ends are sized through the
# same chain: at hit_baseline the request-alone TTFT is ``ttft_ms_baseline`` and the delivered TPM
# ``tpm_delivered_baseline`` (Results), so a TTFT target that binds at the target binds, harder, at the
# baseline too (before, the baseline was sized on throughput alone and the saving mixed an SLO-bound
# count with a throughput-only one). Without a latency target or concurrency every step above throughput
# is blank and instances_baseline is the throughput count, as before.
BASELINE_INPUTS = {"ttft_ms": "ttft_ms_baseline", "tpm_delivered_target": "tpm_delivered_baseline",
                   "hit_target": "hit_baseline"}
BASELINE_AS = {"instances_needed": "instances_baseline"}


def _baseline_steps() -> tuple[tuple[str, Callable, tuple[str, ...]], ...]:
    """The steps of :data:`STEPS` up to ``binding`` that read (directly or through an earlier
    step) an input of :data:`BASELINE_INPUTS`, renamed ``<step>_baseline`` (``instances_needed``:
    ``instances_baseline``); the steps that do not (the demand rates) are read from the target's chain."""
    renamed = dict(BASELINE_INPUTS)
    out = []
    for name, func, args in STEPS:
        if any(a in renamed for a in args):
            renamed[name] = BASELINE_AS.get(name, f"{name}_baseline")
            out.append((renamed[name], func, tuple(renamed.get(a, a) for a in args)))
        if name == "binding":
            break
    return tuple(out)


BASELINE_STEPS = _baseline_steps()
BASELINE_NAMES = tuple(s[0] for s in BASELINE_STEPS)
_BY_NAME.update({s[0]: s for s in BASELINE_STEPS})


def size_baseline(inputs: Mapping[str, object], sized: Mapping[str, object],
                  override: Mapping[str, Callable] | None = None) -> dict[str, np.ndarray]:
    """The chain of :func:`size` at the baseline hit ratio: :data:`BASELINE_STEPS` from the row
    ``inputs`` (each name of :data:`INPUTS` with ``hit_target`` and the request-alone ``ttft_ms`` /
    ``tpm_delivered_target`` replaced by ``hit_baseline`` [fraction], ``ttft_ms_baseline`` [ms] and
    ``tpm_delivered_baseline`` [tokens/min]) and the target's steps ``sized`` (:func:`size`: the demand
    rates). Returns each baseline step's name to its values; ``instances_baseline`` [count]."""
    vals: dict[str, object] = {**dict(inputs), **dict(sized)}
    missing = [n for n in BASELINE_INPUTS.values() if n not in vals]
    if missing:
        raise KeyError(f"size_baseline: missing inputs {missing}")
    out: dict[str, np.ndarray] = {}
    for name, func, args in BASELINE_STEPS:
        with np.errstate(divide="ignore", invalid="ignore"):
            out[name] = vals[name] = func(*(vals[a] for a in args))
            if override and name in override:
                out[name] = vals[name] = override[name](vals, out[name])
    return out


def size_baseline_xl(ref: Callable[[str], str]) -> dict[str, str]:
    """The Excel formula of every baseline step (without ``=``), as :func:`size_xl`."""
    return {name: func.xl(*(ref(a) for a in args)) for name, func, args in BASELINE_STEPS}
