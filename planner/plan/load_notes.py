"""Memo findings on latency at load (issue 16): service time vs what users see, and what the
latency targets cost over throughput alone. Numbers from the Results columns of
:mod:`planner.equations.queueing` (``ttft_load_ms``, ``ttft_load_p90_ms``, ``tpot_load_ms``, ``binding``,
``gpus_for_latency``, ``cost_per_hour_for_latency``)."""

from __future__ import annotations

import math

import numpy as np
from planner.core.arrays import floats
from planner.core.places import Place
from planner.equations import decode_first_slo as dslo


_f = floats  # planner.core.arrays


def _ms(v: float) -> str:
    return f"{v:,.0f} ms" if v >= 100 else f"{v:,.1f} ms"


def findings(plan, limit: int = 4) -> list[dict[str, str]]:
    """``{kind, title, text}`` findings: latency at the planned load, and the latency targets' cost."""
    r, res = plan.results, plan.resolved
    if len(r) == 0:
        return []
    out = []
    alone, mean, p90 = _f(r["ttft_ms"]), _f(r["ttft_load_ms"]), _f(r["ttft_load_p90_ms"])
    tpot = _f(r["tpot_load_ms"])
    ok = ~np.isnan(mean)
    order = [int(i) for i in np.argsort(-(np.where(ok, mean / alone, -np.inf)))][:limit]
    parts = []
    for i in order:
        if not ok[i]:
            continue
        t = f", TPOT {_ms(tpot[i])}" if not math.isnan(tpot[i]) else ""
        parts.append(f"{r['workload'].iat[i]} {_ms(mean[i])} mean, {_ms(p90[i])} p90 (alone {_ms(alone[i])}{t})")
    if parts:
        # a decode-first workload planned open loop (scheduler decode_first, no concurrency) reads another queue
        df_open = dslo.open_loop_df(res["scheduler"].to_numpy(dtype=object), _f(res["concurrency"]))
        df_text = ("; under decode first without a fixed concurrency (" + ", ".join(
            str(w) for w in r["workload"][df_open]) + ") a prompt is prefilled in steps beside the decode batch, "
            "which lengthens its service (the decode-first queue, DF_Search)") if df_open.any() else ""
        out.append({"kind": "latency-at-load", "title": "Latency users see at the planned load",
                    "text": "The TTFT columns of the plan are service times, a request alone on its instance; at "
                            "the planned load each waits for the prefills ahead of it (M/G/1 queue, prefills before "
                            "decode steps" + df_text + "). Largest waits: " + "; ".join(parts) + "."})
    saturated = [str(w) for w, m in zip(r["workload"], ok) if not m]
    if saturated:
        out.append({"kind": "saturated", "title": "Prefill saturates the instance",
                    "text": "At the planned load the prefills alone keep the instance busy, so the queue grows "
                            "without bound: " + ", ".join(saturated) + "."})
    unreach = [i for i, b in enumerate(r["binding"]) if str(b).startswith("unreachable")]
    if unreach:
        what = {"ttft_slo": "the TTFT target", "tpot_slo": "the TPOT target", "hbm": "the HBM fit"}
        conc = _f(res["concurrency"])
        from planner.plan.decode_first_note import beyond_search
        beyond = beyond_search(plan)

        def why(i):
            names = [what.get(n.strip(), n.strip()) for n in str(r["binding"].iat[i]).split(":", 1)[1].split(",")]
            at = (f"at its fixed concurrency {conc[i]:,.0f}" if not np.isnan(conc[i]) else
                  "beyond the decode-first search's reach, more than 16.7 million instances" if beyond[i] else
                  "below what one request alone takes")
            return f"{r['workload'].iat[i]} ({' and '.join(names)}, {at})"
        out.append({"kind": "unreachable", "title": "Latency targets no instance count meets",
                    "text": f"{len(unreach)} workload(s) have a target that no number of GPUs meets: "
                            + "; ".join(why(i) for i in unreach) + ". Their GPU counts leave that target out, "
                            "and the Checks sheet's master check is not OK until the target or the "
                            "deployment changes."})
    base = [i for i, b in enumerate(r["binding_baseline"]) if str(b).startswith("unreachable")
            and not str(r["binding"].iat[i]).startswith("unreachable")] if "binding_baseline" in r else []
    if base:
        from planner.plan.decode_first_note import beyond_search

        def beyond_base(rows):
            far = beyond_search(plan, "_baseline")
            names = [str(r["workload"].iat[i]) for i in rows if far[i]]
            return (" (" + ", ".join(names) + ": any count the decode-first search reaches, more than 16.7 million "
                    "instances; the target is above a request alone at the baseline)") if names else ""

        out.append({"kind": "baseline-unreachable", "title": "Latency targets the baseline hit ratio cannot meet",
                    "text": f"{len(base)} workload(s) meet their latency target at the target hit ratio but not at "
                            "the baseline one at any GPU count: " + ", ".join(str(r["workload"].iat[i]) for i in base)
                            + beyond_base(base) + ". Their baseline count leaves that target out, so the saving of the hit target "
                            "there is understated: without the hits the target is not met at all."})
    has_slo = ~np.isnan(_f(res["ttft_slo_ms"])) | ~np.isnan(_f(res["tpot_slo_ms"])) | \
        ~np.isnan(_f(res["concurrency"]))
    if has_slo.any():
        extra = _f(r["gpus_for_latency"])
        cost = _f(r["cost_per_hour_for_latency"])
        hours = float(plan.settings.get("hours_per_month", 730.0))
        rows = [int(i) for i in np.flatnonzero(has_slo)]
        gpus = float(np.nansum(extra[rows]))
        money = float(np.nansum(cost[rows])) * hours
        cur = plan.settings.get("currency", "USD")
        parts = [f"{r['workload'].iat[i]}: {r['binding'].iat[i] or 'no demand'}"
                 + (f", +{extra[i]:,.0f} GPUs" if extra[i] > 0 else "") for i in rows]
        out.append({"kind": "slo-cost", "title": "What the latency targets cost",
                    "text": f"Meeting the TTFT/TPOT targets at their percentile (and the HBM fit of the decode "
                            f"batch) takes {gpus:,.0f} GPUs more than throughput alone"
                            + (f", {money:,.0f} {cur} per month" if money > 0 else "")
                            + ". What sets each count: " + "; ".join(parts) + "."})
    return out


def _decode_batch_note(r, res, i: int) -> str | None:
    """The throughput count plans ``t_decode_ms`` as measured at ``t_decode_batch``; a warning when the row's
    ``batch`` is larger and the decode-step law (``s(B) = s0 + B s1``, Results ``step_weights_ms`` and
    ``step_kv_ms``) gives a much cheaper decode per request there (red team 6).

    Found on the README's own load test (concurrency 1, ``tpot_ms`` 8 at osl 200, so ``t_decode_ms`` 1,600
    at ``t_decode_batch`` 1) with Workloads ``batch`` blank (the HBM fit, 63) or ``concurrency`` 8: the chip
    time per request stays ``P + 1,600`` ms, an engine decoding one request at a time (docs/model.md,
    "Blank batch"), 80 instances where the step law at batch 63 gives ``D(63) = 200 (s0 + 63 s1) / 63``
    = 125 ms per request and about 21; and at concurrency 8 the row's own closed loop serves 1.45
    requests/s an instance (28 instances) while the throughput count, at 0.5 requests/s, binds at 80.
    Nothing said so. The count is left as it is (the measured decode is the evidence); the warning gives
    both numbers and what to measure."""
    d, osl = float(res["t_decode_ms"].iat[i]), float(res["osl"].iat[i])
    b_ref, batch = float(res["t_decode_batch"].iat[i]), float(res["batch"].iat[i])
    s0, s1 = float(r["step_weights_ms"].iat[i]), float(r["step_kv_ms"].iat[i])
    if not (d > 0 and osl > 0 and batch > b_ref and np.isfinite(s0 + s1)):
        return None
    d_b = osl * (s0 + batch * s1) / batch          # the decode share per request at the row's batch [ms]
    if not d_b < 0.9 * d:
        return None
    chip = float(r["chip_ms_target"].iat[i])
    chip_b = chip - d + d_b
    text = (f"t_decode_ms {d:,.6g} holds at t_decode_batch {b_ref:,.0f} (the decode's own concurrency), so the "
            f"throughput count plans {chip:,.0f} ms of chip time per request, as if each instance decoded "
            f"{b_ref:,.0f} request{'' if b_ref == 1 else 's'} at a time; at this row's batch {batch:,.0f} the "
            f"decode-step law gives {d_b:,.4g} ms of decode per request ({chip_b:,.0f} ms of chip time")
    dem, tpm = float(res["demand_tpm"].iat[i]), float(r["tpm_delivered_target"].iat[i])
    u, n = float(res["target_utilization"].iat[i]), float(r["instances_throughput"].iat[i])
    if np.isfinite(dem) and dem > 0 and tpm > 0 and u > 0 and np.isfinite(n):
        n_b = math.ceil(dem / (tpm * chip / chip_b * u) - 1e-9)
        if n_b >= n:   # the same count either way: nothing the plan would change
            return None
        text += f", about {n_b:,} instance{'' if n_b == 1 else 's'} on throughput instead of {n:,.0f}"
    return text + ("): measure the decode at the concurrency you serve at (a load test at that concurrency, or "
                   "t_decode_ms with t_decode_batch typed)")


# an unreachable latency target below this many ms that would be reachable read as seconds is most likely
# seconds (red team 7: a TTFT target of 0.5 for 500 ms): no service sets a TTFT target under 10 ms (one
# prefill pass of a small model) or a TPOT target under 1 ms (one decode step reads the weights); a 50 ms
# TTFT target that is too tight gets no hint
SECONDS_BELOW_MS = {"ttft_slo_ms": 10.0, "tpot_slo_ms": 1.0}


def _in_seconds(name: str, slo: float, floor: float) -> str:
    """The hint of an unreachable target that, read as seconds, would be reachable ('' if none)."""
    if 0 < slo < SECONDS_BELOW_MS[name] and slo * 1000.0 > floor:
        return f"; typed in seconds ({slo * 1000.0:,.6g} ms)? {name} is in milliseconds"
    return ""


def warnings(plan) -> list:
    """Located warnings on latency at load (planner.core.errors.Problem): targets no instance count meets,
    prefills that saturate an instance at the planned load, a fixed concurrency whose KV does not
    fit, targets without a demand to size."""
    from planner.core.errors import Problem
    from planner.equations.prefill_passes import burst_ttft_ms
    from planner.equations.queueing import tpot_load_ms

    from planner.plan.decode_first_note import beyond_search

    r, res = plan.results, plan.resolved
    rows = plan.input.workloads.rows
    out = []
    beyond = beyond_search(plan)
    alone, mean = _f(r["ttft_ms"]), _f(r["ttft_load_ms"])
    conc, fit = _f(res["concurrency"]), _f(r["max_batch_fit"])
    t_slo, p_slo, dem = _f(res["ttft_slo_ms"]), _f(res["tpot_slo_ms"]), _f(res["demand_tpm"])
    s1 = _f(r["step_weights_ms"]) + _f(r["step_kv_ms"])
    bref, floor = _f(res["t_decode_batch"]), _f(r["step_floor_ms"])
    with np.errstate(divide="ignore", invalid="ignore"):
        raw_step = np.where(_f(res["osl"]) > 0, _f(res["t_decode_ms"]) * bref / _f(res["osl"]), np.inf)
    for i in range(len(r)):
        place = Place.at_row("Workloads", rows[i], r['workload'].iat[i])
        b = str(r["binding"].iat[i])
        if "ttft_slo" in b and b.startswith("unreachable") and np.isnan(conc[i]) and beyond[i]:
            out.append(Problem(place, f"ttft_slo_ms {t_slo[i]:,.6g} is above the request-alone TTFT "
                                      f"{alone[i]:,.1f} ms, but under decode first it needs at least "
                                      f"{dslo.SEARCH_SPAN:,} instances above the DF_Search sheet's lower bound "
                                      "(beyond its search): no count is given (left out of instances_needed)"))
        elif "ttft_slo" in b and b.startswith("unreachable") and np.isnan(conc[i]):
            out.append(Problem(place, f"ttft_slo_ms {t_slo[i]:,.6g} is not above the request-alone TTFT "
                                      f"{alone[i]:,.1f} ms: no instance count meets it (left out of instances_needed)"
                                      + _in_seconds("ttft_slo_ms", t_slo[i], alone[i])))
        if "tpot_slo" in b and b.startswith("unreachable") and np.isnan(conc[i]):
            out.append(Problem(place, f"tpot_slo_ms {p_slo[i]:,.6g} is not above one request's decode step "
                                      f"{s1[i]:,.2f} ms: no instance count meets it (left out of instances_needed)"
                                      + _in_seconds("tpot_slo_ms", p_slo[i], s1[i])))
        if "hbm" in b and b.startswith("unreachable") and np.isnan(conc[i]):
            out.append(Problem(place, "not one full-length request fits in HBM beside the weights: the HBM bound "
                                      "is left out of instances_needed"))
        if raw_step[i] < floor[i] and _f(res["t_decode_ms"])[i] > 0:  # the step law raised to the HBM roofline
            out.append(Problem(place, f"t_decode_ms {_f(res['t_decode_ms'])[i]:,.6g} at t_decode_batch "
                                      f"{bref[i]:,.0f} is a decode step of {raw_step[i]:,.3g} ms, faster than "
                                      f"reading the weights and that batch's KV at the full HBM bandwidth "
                                      f"({floor[i]:,.3g} ms): the latency at load uses {floor[i]:,.3g} ms per step "
                                      f"(check the TPOT's unit and the concurrency it was measured at)"))
        if (why := _decode_batch_note(r, res, i)) is not None:
            out.append(Problem(place, why))
        if np.isnan(mean[i]):
            out.append(Problem(place, "at the planned load the prefills alone keep the instance busy: the prefill "
                                      "queue grows without bound (ttft_load_ms blank)"))
        if not np.isnan(conc[i]) and conc[i] > fit[i]:
            out.append(Problem(place, f"concurrency {conc[i]:,.0f} exceeds the {fit[i]:,.0f} full-length requests "
                                      f"whose KV fits in HBM"))
        if not np.isnan(conc[i]):   # a fixed concurrency: the targets are met or not, whatever the count
            qq = float(r["slo_q"].iat[i])
            ttft_c = float(burst_ttft_ms(alone[i], float(res["pass_fixed_ms"].iat[i]), float(res["isl"].iat[i]),
                                         float(res["hit_target"].iat[i]), conc[i],
                                         float(res["max_num_batched_tokens"].iat[i]), qq if qq > 0 else np.nan))
            if "ttft_at_c_slo_ms" in r:   # the TTFT the target is held to: the burst, or the steady decode-first loop
                ttft_c = float(r["ttft_at_c_slo_ms"].iat[i])
            if plan.input.workloads.records[i].get("scheduler") is None:
                out.append(Problem(place, f"TTFT at concurrency {conc[i]:,.0f} is read with prefill first (scheduler "
                                          f"blank: each cycle a burst of {conc[i]:,.0f}, as SGLang schedules); type "
                                          f"decode_first for a vLLM V1 server, whose steady loop queues differently"))
            if plan.input.workloads.records[i].get("max_num_batched_tokens") is None:
                out.append(Problem(place, f"TTFT at concurrency {conc[i]:,.0f} packs the burst's prefills into passes "
                                          f"of {float(res['max_num_batched_tokens'].iat[i]):,.0f} new tokens (Settings "
                                          f"max_num_batched_tokens; 8192 is vLLM's default on GPUs of 70 GiB or "
                                          f"more): type the server's --max-num-batched-tokens if it differs"))
            if ttft_c > t_slo[i]:
                out.append(Problem(place, f"at concurrency {conc[i]:,.0f} the TTFT ({res['slo_percentile'].iat[i]}) "
                                          f"is {ttft_c:,.0f} ms, above ttft_slo_ms {t_slo[i]:,.6g}: more instances do "
                                          f"not help, a lower concurrency does"))
            tp = float(r["tpot_load_ms"].iat[i])
            if tp > p_slo[i]:
                out.append(Problem(place, f"at concurrency {conc[i]:,.0f} the TPOT is {tp:,.1f} ms, above "
                                          f"tpot_slo_ms {p_slo[i]:,.6g}: a lower concurrency meets it, not more "
                                          f"instances"))
            # instances_tpot's verdict at a fixed concurrency still reads the serial burst (docs/model.md): where
            # it and tpot_load_ms (the loop's cycle, Little's law) fall on two sides of the target, say so
            serial = float(tpot_load_ms(np.nan, alone[i], float(res["osl"].iat[i]), float(r["step_weights_ms"].iat[i]),
                                        float(r["step_kv_ms"].iat[i]), np.nan, conc[i]))
            if not np.isnan(p_slo[i]) and np.isfinite(serial) and np.isfinite(tp) and (serial > p_slo[i]) != (tp > p_slo[i]):
                verdict = "unreachable" if serial > p_slo[i] else "met"
                out.append(Problem(place, f"at concurrency {conc[i]:,.0f} the TPOT target's check (instances_tpot) "
                                          f"reads the serial burst, {serial:,.1f} ms, and calls tpot_slo_ms "
                                          f"{p_slo[i]:,.6g} {verdict}, while tpot_load_ms, the loop's own cycle, is "
                                          f"{tp:,.1f} ms: trust tpot_load_ms (the check's law is the older one, "
                                          f"docs/model.md)"))
        if np.isnan(dem[i]) and not (np.isnan(t_slo[i]) and np.isnan(p_slo[i])):
            out.append(Problem(place, "latency targets without demand_tpm: latency is shown at target_utilization, "
                                      "no instance count is sized"))
    return out
