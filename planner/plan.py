"""The library API: read an input workbook, evaluate the model, write the outputs.

>>> from planner.plan import build_plan, write_plan
>>> p = build_plan("workbooks/example.xlsx")          # doctest: +SKIP
>>> p.results[["workload", "ttft_ms", "tpm_delivered_target"]]  # doctest: +SKIP
>>> write_plan(p, "out/example-plan.xlsx")            # doctest: +SKIP
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from . import schema, sheets
from .model import uneven_heads
from .reader import PlanInput, Table, read_input
from .sensitivity import Sensitivities, evaluate_all


@dataclass
class Warning_:
    place: str
    message: str

    def __str__(self) -> str:
        return f"{self.place}: {self.message}"


@dataclass
class Plan:
    input: PlanInput
    models: pd.DataFrame
    gpus: pd.DataFrame
    workloads: pd.DataFrame
    resolved: pd.DataFrame
    results: pd.DataFrame
    hit_grid: np.ndarray
    sens: Sensitivities
    warnings: list[Warning_] = field(default_factory=list)
    created: _dt.datetime = field(default_factory=lambda: _dt.datetime.now(_dt.timezone.utc))

    @property
    def settings(self) -> dict:
        return self.input.settings

    @property
    def sensitivity_hit(self) -> pd.DataFrame:
        return self.sens.frames["Sensitivity_Hit"]


def table_frame(t: Table, sheet: str) -> pd.DataFrame:
    """Canonical columns (every schema column, blank as None) then the extra columns."""
    names = [c.name for c in schema.columns(sheet)] + list(t.extras)
    return pd.DataFrame([[r.get(n) for n in names] for r in t.records], columns=names, dtype=object)


def hit_grid(step: float) -> np.ndarray:
    """0, step, 2 step, ... up to 1, with 1 always the last point."""
    n = int(np.floor(1.0 / step + 1e-9))
    grid = np.round(np.arange(n + 1) * step, 12)
    return grid if np.isclose(grid[-1], 1.0) else np.append(grid, 1.0)


def _base(resolved: pd.DataFrame) -> dict[str, np.ndarray]:
    base = {}
    for c in resolved.columns:
        col = resolved[c]
        base[c] = col.to_numpy(dtype=float) if pd.api.types.is_numeric_dtype(col) else col.to_numpy()
    return base


def evaluate_results(resolved: pd.DataFrame) -> pd.DataFrame:
    return sheets.evaluate(sheets.RESULTS, _base(resolved), len(resolved))


def _warnings(p_in: PlanInput, models: pd.DataFrame, resolved: pd.DataFrame,
              results: pd.DataFrame) -> list[Warning_]:
    """Warnings (not errors), in row order: the flags are vectorised, only the flagged rows
    are formatted."""
    wl_rows = np.asarray(p_in.workloads.rows)
    names = results["workload"].to_numpy()
    headroom = results["hbm_headroom_gib"].to_numpy(dtype=float)
    hit_t = resolved["hit_target"].to_numpy(dtype=float)
    h_star = results["h_star"].to_numpy(dtype=float)
    kv, tp = resolved["kv_heads"].to_numpy(dtype=float), resolved["tp"].to_numpy(dtype=float)
    uneven = uneven_heads(resolved["attention"].to_numpy(), kv, tp)
    raw_tpm = np.array([r.get("tpm_measured") is not None for r in p_in.workloads.records], dtype=bool)
    raw_hm = np.array([r.get("hit_measured") is not None for r in p_in.workloads.records], dtype=bool)
    flags = {
        "hbm": headroom < 0,
        "hstar": hit_t > h_star,
        "uneven": uneven,
        "tpm": raw_tpm & ~raw_hm,
    }
    out: list[Warning_] = []
    for i in np.flatnonzero(np.logical_or.reduce(list(flags.values()))):
        place = f"Workloads row {wl_rows[i]} ({names[i]})"
        r = results.iloc[i]
        if flags["hbm"][i]:
            out.append(Warning_(place, f"KV does not fit in HBM: weights {r['weights_gib_per_gpu']:,.1f} GiB + "
                                       f"peak KV {r['kv_peak_gib']:,.1f} GiB exceed "
                                       f"{resolved['hbm_gib'].iat[i]:,.1f} GiB by {-headroom[i]:,.1f} GiB"))
        if flags["hstar"][i]:
            out.append(Warning_(place, f"hit_target {hit_t[i]:.1%} is beyond the break-even h* {h_star[i]:.1%}: "
                                       f"more hits make prefill slower here"))
        if flags["uneven"][i]:
            out.append(Warning_(place, f"kv_heads {kv[i]:g} and tp {tp[i]:g} do not divide either way: "
                                       f"KV heads are spread unevenly over GPUs"))
        if flags["tpm"][i]:
            out.append(Warning_(place, "tpm_measured is given without hit_measured: taken as measured at 0 hit"))
    for j, rec in enumerate(p_in.models.records):
        if rec.get("params_b") is None:
            out.append(Warning_(f"Models row {p_in.models.rows[j]} ({rec.get('model')})",
                                "params_b is blank: weights taken as 0 GiB in the HBM check"))
    return out


def build_plan(source: str | Path | PlanInput) -> Plan:
    """Read (unless given a :class:`PlanInput`) and evaluate every workload."""
    p_in = source if isinstance(source, PlanInput) else read_input(source)
    models = table_frame(p_in.models, "Models")
    gpus = table_frame(p_in.gpus, "GPUs")
    workloads = table_frame(p_in.workloads, "Workloads")
    resolved = sheets.resolve(models, gpus, workloads, p_in.settings)
    results = evaluate_results(resolved)
    grid = hit_grid(float(p_in.settings["hit_step"]))
    sens = evaluate_all(resolved, results, grid, tuple(p_in.settings.get("pcie_sweep_gbps") or ()))
    warns = _warnings(p_in, models, resolved, results)
    return Plan(p_in, models, gpus, workloads, resolved, results, grid, sens, warns)
