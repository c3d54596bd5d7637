"""A located note on each decode-first workload planned open loop (issue 16): the Results' latency at load
(``ttft_load_ms``, ``ttft_load_p90_ms``, ``instances_ttft``) is the M/G/1 prefill queue with the
request-alone prefill ``P`` for both schedulers, which the independent simulation puts low under decode
first (median 6-14% at utilisations 0.3-0.7, worst -36%: tests/test_decode_first_open.py,
tests/test_decode_first_slo.py). The note says what the decode-first queue gives at the same load
(``planner.equations.decode_first_slo``: the prompt's time beside the decode batch, ``P_df``) and, with
a TTFT target, the instance count it needs, so that the difference is never silent while the Results'
formulas cannot hold that count live (docs/model.md, "The scheduler").
"""

from __future__ import annotations

import numpy as np

from planner.core.errors import Problem
from planner.core.places import Place
from planner.equations import decode_first as dfs
from planner.equations import decode_first_slo as dslo


def _f(frame, name) -> np.ndarray:
    return np.asarray(frame[name].to_numpy(), dtype=float)


def warnings(plan) -> list[Problem]:
    """One Problem per decode-first workload without a fixed concurrency and with a load to plan."""
    r, res = plan.results, plan.resolved
    sched = res["scheduler"].astype(str).str.strip().str.lower().to_numpy()
    conc, rate = _f(res, "concurrency"), _f(r, "load_rps")
    pick = (sched == "decode_first") & np.isnan(conc) & np.isfinite(rate) & (rate > 0)
    if not pick.any():
        return []
    args = (_f(r, "ttft_ms"), np.nan_to_num(_f(res, "pass_fixed_ms"), nan=0.0), _f(r, "burst_new_tokens"),
            _f(res, "max_num_batched_tokens"), _f(r, "step_weights_ms"), _f(r, "step_kv_ms"), _f(res, "osl"))
    with np.errstate(all="ignore"):
        b = dfs.open_batch(rate, *args)
        p_df = dfs.open_prefill_ms(*args[:6], np.nan_to_num(b, nan=0.0))
        mean = dslo.open_ttft_stat_ms(rate, *args, 0.0)
        p90 = dslo.open_ttft_stat_ms(rate, *args, 0.9)
        slo, q = _f(res, "ttft_slo_ms"), _f(r, "slo_q")
        n_df = dslo.instances_ttft_df(_f(r, "demand_rps_open"), *args, slo, q)
    n_res = r["instances_ttft"].to_numpy()
    rows = plan.input.workloads.rows
    out = []
    for i in np.flatnonzero(pick):
        place = Place.at_row("Workloads", rows[i], r["workload"].iat[i])
        shown = (f"ttft_load_ms {r['ttft_load_ms'].iat[i]:,.0f} ms and ttft_load_p90_ms "
                 f"{r['ttft_load_p90_ms'].iat[i]:,.0f} ms")
        if np.isfinite(mean[i]):
            df_text = (f"beside the decode batch of that load ({b[i]:,.1f} requests) a prompt takes "
                       f"{p_df[i]:,.0f} ms, not {args[0][i]:,.0f} ms, and the TTFT is {mean[i]:,.0f} ms mean, "
                       f"{p90[i]:,.0f} ms p90")
        else:
            df_text = "beside the decode batch the prompts saturate the instance at that load (no finite TTFT)"
        msg = (f"scheduler decode_first, planned open loop: {shown} are the prefill queue with the request-alone "
               f"prefill, which the simulation puts low under decode first; {df_text} "
               f"(planner.equations.decode_first_slo)")
        if np.isfinite(slo[i]) and not np.isnan(n_df[i]):
            need = "no instance count" if np.isinf(n_df[i]) else f"{n_df[i]:,.0f} instances"
            try:
                have = float(n_res[i])
                have = "unreachable" if np.isinf(have) else f"{have:,.0f}"
            except (TypeError, ValueError):
                have = str(n_res[i])
            msg += f"; the TTFT target {slo[i]:,.6g} ms needs {need} with it (instances_ttft {have})"
        out.append(Problem(place, msg))
    return out
