"""The plan's flags, computed once, vectorised over its frames.

A flag marks a row the reader should look at, not an error: the run's warnings
(:func:`warnings_of`), the Python counts of the Checks sheet's warning checks
(:func:`planner.workbook.checks_sheet.checks_for`) and the memo's findings
(:func:`planner.memo.numbers.findings`) all read these arrays, so they cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from planner.core.arrays import coerced_floats
from planner.core.errors import Problem
from planner.core.places import Place
from planner.equations.kvhit import uneven_heads


_num = coerced_floats  # planner.core.arrays


@dataclass(frozen=True)
class Flags:
    """Boolean arrays, one entry per Workloads row (``params_missing``: per Models row)."""

    hbm_no_fit: np.ndarray       # weights + peak KV exceed HBM (hbm_headroom_gib < 0)
    beyond_h_star: np.ndarray    # hit_target > h*: more hits make prefill slower
    load_bound: np.ndarray       # regime at the target hit is load-bound
    uneven_heads: np.ndarray     # GQA kv_heads and tp do not divide either way
    tpm_without_hit: np.ndarray  # tpm_measured given, hit_measured blank
    params_missing: np.ndarray   # Models rows without params_b (weights taken as 0)


def flags_of(models: pd.DataFrame, workloads: pd.DataFrame, resolved: pd.DataFrame,
             results: pd.DataFrame) -> Flags:
    """Every flag of a plan from its frames (``Plan.models``, ``workloads``, ``resolved``, ``results``)."""
    return Flags(
        hbm_no_fit=_num(results["hbm_headroom_gib"]) < 0,
        beyond_h_star=_num(resolved["hit_target"]) > _num(results["h_star"]),
        load_bound=results["regime"].to_numpy() == "load-bound",
        uneven_heads=uneven_heads(resolved["attention"].to_numpy(), _num(resolved["kv_heads"]),
                                  _num(resolved["tp"])),
        tpm_without_hit=~np.isnan(_num(workloads["tpm_measured"])) & np.isnan(_num(workloads["hit_measured"])),
        params_missing=models["params_b"].isna().to_numpy(),
    )


def warnings_of(plan) -> list[Problem]:
    """The run's warnings, in row order (per row: HBM, h*, heads, TPM), then the models'; only
    the flagged rows are formatted."""
    fl, p_in, resolved, results = plan.flags, plan.input, plan.resolved, plan.results
    wl_rows = np.asarray(p_in.workloads.rows)
    names = results["workload"].to_numpy()
    headroom = _num(results["hbm_headroom_gib"])
    hit_t, h_star = _num(resolved["hit_target"]), _num(results["h_star"])
    kv, tp = _num(resolved["kv_heads"]), _num(resolved["tp"])
    out: list[Problem] = []
    rows = (fl.hbm_no_fit, fl.beyond_h_star, fl.uneven_heads, fl.tpm_without_hit)
    for i in np.flatnonzero(np.logical_or.reduce(rows)):
        place = Place.at_row("Workloads", wl_rows[i], names[i])
        r = results.iloc[i]
        if fl.hbm_no_fit[i]:
            out.append(Problem(place, f"KV does not fit in HBM: weights {r['weights_gib_per_gpu']:,.1f} GiB + "
                                      f"peak KV {r['kv_peak_gib']:,.1f} GiB exceed "
                                      f"{resolved['hbm_gib'].iat[i]:,.1f} GiB by {-headroom[i]:,.1f} GiB"))
        if fl.beyond_h_star[i]:  # what is true at the row's own alpha (planner.plan.trust, issue 20)
            from planner.plan.trust import h_star_message

            out.append(Problem(place, h_star_message(plan, i)[1]))
        if fl.uneven_heads[i]:
            out.append(Problem(place, f"kv_heads {kv[i]:g} and tp {tp[i]:g} do not divide either way: "
                                      f"KV heads are spread unevenly over GPUs"))
        if fl.tpm_without_hit[i]:
            out.append(Problem(place, "tpm_measured is given without hit_measured: taken as measured at 0 hit"))
    for j in np.flatnonzero(fl.params_missing):
        out.append(Problem(Place.at_row("Models", p_in.models.rows[j], p_in.models.records[j].get('model')),
                           "params_b is blank: weights taken as 0 GiB in the HBM check"))
    return out
