"""Sensitivity tables: how TTFT and TPM move with hit ratio, overlap α, PCIe bandwidth and
each driver (tornado). Every table is long format, one block of rows per workload, declared
with the same :class:`~planner.plan.columns.Out` columns as Results, so Python values and live
formulas come from one declaration.

A table's leading columns (``Lead``) say which point of the sweep a row is: a constant
(the hit or α of the grid), a text label, or a formula (a bandwidth taken from a named
cell). A lead column named like an input (``alpha``, ``pcie_gbps``, ``hit_target``)
shadows that input for the row's formulas: that is how a sweep varies one input.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
import numpy as np
import pandas as pd

from planner.equations import kvhit as m
from planner.plan import columns as sheets
from planner.equations.constants import C, N
from planner.plan.frames import column_arrays
from planner.core.arrays import coerced_floats
from planner.equations import decode_first_slo as dslo
from planner.equations.sensitivity import choose, override, rank_in_blocks, swing_of, vary  # the sweep helpers' twins
from planner.core.schema import FMT_INT, FMT_PCT
from planner.plan.columns import FMT_MS, Lit, Out, out

ALPHA_STEPS = tuple(round(0.1 * i, 10) for i in range(11))
HIT_ALPHA_STEPS = tuple(round(0.1 * i, 10) for i in range(11))


# --------------------------------------------------------------------------- table declarations
@dataclass(frozen=True)
class Lead:
    """A leading column of a long table: one value per point of the sweep."""

    name: str
    header: str
    fmt: str | None
    values: tuple          # one per point of the sweep (k entries)
    formulas: tuple | None = None  # Excel formula per point (None: write the value itself)
    text: bool = False


@dataclass(frozen=True)
class SweepTable:
    """A long sensitivity table: for each workload, one row per point of the sweep."""

    sheet: str
    leads: tuple[Lead, ...]
    cols: tuple[Out, ...]
    title: str = ""
    # columns of a helper sheet the table's columns read, row-aligned with the table (the hit sweep of a plan
    # with a decode-first row planned open loop: DF_Search_Hit), evaluated with the table, not its columns
    helpers: tuple[Out, ...] = ()
    helper_sheet: str = ""
    plain_cols: tuple[Out, ...] = ()   # the columns of a row the helper sheet does not search (cols: all)

    @property
    def k(self) -> int:
        return len(self.leads[0].values)

    @property
    def names(self) -> list[str]:
        return ["workload"] + [ld.name for ld in self.leads] + [c.name for c in self.cols]

    @property
    def headers(self) -> list[str]:
        return ["workload"] + [ld.header for ld in self.leads] + [c.header for c in self.cols]


def _results(*names: str) -> tuple[Out, ...]:
    by = {c.name: c for c in sheets.RESULTS}
    return tuple(by[n] for n in names)


def hit_table(grid: np.ndarray, open_df: bool = False) -> SweepTable:
    """The hit sweep; ``open_df`` (the plan has a decode-first row planned open loop,
    :func:`planner.plan.columns.has_open_df`): such a row's TTFT count and TTFTs at load at each hit from the
    decode-first search of the DF_Search_Hit sheet (:data:`planner.plan.columns.SENSITIVITY_HIT_DF`), as
    Results at hit_target; without one the table is as before."""
    leads = (Lead("hit", "hit [fraction]", FMT_PCT, tuple(grid)),)
    if not open_df:
        return SweepTable("Sensitivity_Hit", leads, sheets.SENSITIVITY_HIT, "TTFT and TPM versus hit ratio")
    return SweepTable("Sensitivity_Hit", leads, sheets.SENSITIVITY_HIT_DF, "TTFT and TPM versus hit ratio",
                      helpers=sheets.DF_SEARCH_HIT, helper_sheet=sheets.DF_SEARCH_HIT_SHEET,
                      plain_cols=sheets.SENSITIVITY_HIT)


def alpha_table() -> SweepTable:
    cols = (
        *_results("load_ms", "compute_ms"),
        out("ttft_ms", "ms", FMT_MS, m.ttft_ms, "t_fixed_ms", "load_ms", "compute_ms", "alpha",
            description="TTFT at hit_target and this alpha"),
        out("chip_ms", "ms", FMT_MS, m.chip_ms, "ttft_ms", "t_decode_ms"),
        out("tpm_delivered_model", "tokens/min", FMT_INT, m.tpm_delivered, "isl", "osl", "chip_ms"),
        out("tpm_physical_model", "tokens/min", FMT_INT, m.tpm_physical, "isl", "osl", "hit_target", "chip_ms"),
        out("tpm_delivered_target", "tokens/min", FMT_INT, m.tpm_delivered_target, "tpm_measured",
            "chip_ms_measured", "chip_ms", "tpm_delivered_model",
            description="re-hit corrected from the measurement (taken at the row's own alpha)"),
        out("tpm_physical_target", "tokens/min", FMT_INT, m.tpm_physical_from_delivered,
            "tpm_delivered_target", "isl", "osl", "hit_target"),
    )
    return SweepTable("Sensitivity_Alpha", (Lead("alpha", "alpha [fraction]", FMT_PCT, ALPHA_STEPS),), cols,
                 "TTFT and TPM at hit_target versus overlap alpha")


def pcie_table(extra_gbps: tuple[float, ...]) -> SweepTable:
    labels = ("as planned", "PCIe Gen4 x16", "PCIe Gen5 x16") + tuple(f"{g:g} GB/s (Settings)" for g in extra_gbps)
    values = (None, C.PCIE_GEN4_GBPS, C.PCIE_GEN5_GBPS) + tuple(float(g) for g in extra_gbps)
    formulas = ("@kv_gbps", N.PCIE_GEN4_GBPS, N.PCIE_GEN5_GBPS) + (None,) * len(extra_gbps)
    cols = (
        out("load_ms", "ms", FMT_MS, m.kv_load_ms, "hit_target", "isl", "kv_bytes_per_token_gpu", "pcie_gbps"),
        _results("compute_ms")[0],
        *_results("ttft_alpha0_ms", "ttft_alpha1_ms", "ttft_ms"),
        # the sweep's own link bandwidth (Results' delta uses the effective kv_gbps)
        out("delta", "ratio", sheets.FMT_RATIO, m.delta, "isl", "kv_bytes_per_token_gpu", "pcie_gbps", "t0_ms"),
        *_results("h_star"),
    )
    return SweepTable("Sensitivity_PCIe", (Lead("link", "link", None, labels, text=True),
                                      Lead("pcie_gbps", "pcie_gbps [GB/s]", "#,##0.0", values, formulas)),
                 cols, "TTFT and break-even h* versus host-to-device bandwidth")


def hit_alpha_table() -> SweepTable:
    cols = [out("load_ms", "ms", FMT_MS, m.kv_load_ms, "hit", "isl", "kv_bytes_per_token_gpu", "kv_gbps"),
            out("compute_ms", "ms", FMT_MS, m.compute_ms, "hit", "t_attn0_ms", "t_ffn0_ms", "t_other0_ms",
                "other_scaling")]
    for a in sheets.ALPHA_GRID:
        cols.append(out(f"ttft_alpha_{a:g}_ms", "ms", FMT_MS, m.ttft_ms, "t_fixed_ms", "load_ms", "compute_ms",
                        f"alpha_g{int(a * 100)}", description=f"TTFT at alpha {a:g}"))
    return SweepTable("Sensitivity_HitAlpha", (Lead("hit", "hit [fraction]", FMT_PCT, HIT_ALPHA_STEPS),), tuple(cols),
                 "TTFT over a grid of hit ratio x overlap alpha")


# Tornado drivers: name, upper bound (None: unbounded)
DRIVERS: tuple[tuple[str, float | None], ...] = (
    ("hit_target", 1.0), ("t_attn0_ms", None), ("t_ffn0_ms", None), ("t_fixed_ms", None),
    ("t_decode_ms", None), ("kv_gbps", None), ("isl", None), ("alpha", 1.0))


def tornado_calc_table() -> SweepTable:
    k = len(DRIVERS)
    drivers = tuple(d for d, _ in DRIVERS for _case in (0, 1))
    leads = (
        Lead("driver", "driver", None, drivers, text=True),
        Lead("case", "case", None, ("low", "high") * k, text=True),
        Lead("driver_no", "driver_no", FMT_INT, tuple(float(i + 1) for i in range(k) for _c in (0, 1))),
        Lead("direction", "direction", "+0;-0", (-1.0, 1.0) * k),
        Lead("upper", "upper", "0", tuple(np.nan if u is None else u for _d, u in DRIVERS for _c in (0, 1))),
    )
    cols = [
        out("base_value", "", "#,##0.####", choose, "driver_no", *(f"@{d}" for d, _ in DRIVERS),
            description="the driver's planned value"),
        out("value", "", "#,##0.####", vary, "base_value", "direction", "tornado_swing", "upper",
            description="the driver moved by the swing"),
    ]
    for d, _ in DRIVERS:
        cols.append(out(d, "", "#,##0.####", override, "driver", Lit(d), "value", f"@{d}"))
    cols += list(_results("load_ms", "compute_ms", "ttft_ms", "load_ms_measured", "compute_ms_measured",
                          "ttft_ms_measured", "chip_ms_measured", "chip_ms_target", "tpm_delivered_model",
                          "tpm_delivered_target"))
    # TTFT at the planned load (issue 16, slofix item 5): the planned fleet (Results instances_needed) held,
    # the driver moved through the decode-step law and the prefill queue
    cols += list(_results("step_floor_ms", "decode_step_ms", "step_weights_ms", "step_kv_ms", "concurrency_rps",
                          "load_rps", "prefill_wait_ms", "burst_new_tokens", "ttft_steady_ms", "ttft_load_ms"))
    # terms the TTFT formulas above would otherwise repeat (planner.workbook.shared_terms)
    cols += list(sheets.sweep_terms("ttft_ms", "burst_new_tokens", None))
    return SweepTable("Tornado_Calc", leads, tuple(cols), "every driver moved low and high, the TPM chain recomputed, "
                      "and the TTFT at the planned load with the planned instance count")


# --------------------------------------------------------------------------- Python evaluation
def base_arrays(resolved: pd.DataFrame, results: pd.DataFrame, k: int,
                rows: np.ndarray | None = None, columns: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """Resolved and Results columns, each value repeated for the k points of a sweep (``columns``: their
    :func:`column_arrays`, when the caller has them already)."""
    return {c: np.repeat(arr if rows is None else arr[rows], k)
            for c, arr in (columns if columns is not None else column_arrays(results, resolved)).items()}


def evaluate_table(t: SweepTable, resolved: pd.DataFrame, results: pd.DataFrame,
                   helpers: bool = False, columns: dict[str, np.ndarray] | None = None) -> pd.DataFrame:
    """The table's rows for the workloads of ``resolved``/``results`` (``helpers``: with the columns of
    its helper sheet, ``t.helpers``, after its own; ``columns``: as :func:`base_arrays`)."""
    n, k = len(resolved), t.k
    base = base_arrays(resolved, results, k, columns=columns)
    frame = {"workload": base["workload"]}
    for ld in t.leads:
        vals = np.tile(np.array(ld.values, dtype=object if ld.text else float), n)
        if ld.formulas is not None:  # a formula lead referring to an input: its planned value
            for j, f in enumerate(ld.formulas):
                if isinstance(f, str) and f.startswith("@"):
                    vals[j::k] = base[f[1:]][j::k]
        base[ld.name] = vals if ld.text else vals.astype(float)
        frame[ld.name] = base[ld.name]
    values = sheets.evaluate(t.cols + t.helpers if helpers else t.cols, base, n * k, helpers=()
                             if helpers else t.helpers)
    return pd.concat([pd.DataFrame(frame), values], axis=1)


def tornado_summary(calc: pd.DataFrame, results: pd.DataFrame, resolved: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per workload x driver: low/high values and TPM, swing and rank (1 = widest;
    ties ranked by driver order), and the mean TTFT at the planned load at the planned value and the
    driver's low/high (the planned instance count held; NaN where the prefills saturate)."""
    k = len(DRIVERS)
    low, high = calc.iloc[0::2].reset_index(drop=True), calc.iloc[1::2].reset_index(drop=True)
    swing = swing_of(low["tpm_delivered_target"].to_numpy(), high["tpm_delivered_target"].to_numpy())
    rank = rank_in_blocks(swing, k)
    return pd.DataFrame({
        "workload": low["workload"].to_numpy(),
        "driver": low["driver"].to_numpy(),
        "base_value": low["base_value"].to_numpy(),
        "low_value": low["value"].to_numpy(),
        "high_value": high["value"].to_numpy(),
        "tpm_base": np.repeat(results["tpm_delivered_target"].to_numpy(dtype=float), k),
        "tpm_low": low["tpm_delivered_target"].to_numpy(),
        "tpm_high": high["tpm_delivered_target"].to_numpy(),
        "swing": swing,
        "rank": rank,
        "ttft_load_base": np.repeat(_ttft_base(results, resolved), k),
        "ttft_load_low": low["ttft_load_ms"].to_numpy(dtype=float),
        "ttft_load_high": high["ttft_load_ms"].to_numpy(dtype=float),
    })


def _ttft_base(results: pd.DataFrame, resolved: pd.DataFrame | None) -> np.ndarray:
    """The Tornado's ttft_load_base: Results' ttft_load_ms, the request-alone queue on a decode-first row
    planned open loop (:func:`planner.equations.decode_first_slo.tornado_ttft_base`; Tornado_Calc's cases
    read that queue)."""
    base = results["ttft_load_ms"].to_numpy(dtype=float)
    if resolved is None:
        return base
    searched = dslo.searched_row(resolved["scheduler"].to_numpy(dtype=object), coerced_floats(resolved["concurrency"]),
                                 resolved["workload"].to_numpy(dtype=object))
    return np.asarray(dslo.tornado_ttft_base(searched, base, results["ttft_ms"].to_numpy(dtype=float),
                                             results["prefill_wait_ms"].to_numpy(dtype=float)), dtype=float)


class Sensitivities:
    """The sensitivity tables of a plan, evaluated on demand.

    ``frames[sheet]`` and ``tornado`` evaluate every workload (and keep the result);
    :meth:`block` and :meth:`tornado_block` evaluate a range of workloads only, which is
    how the writer keeps memory flat for tens of thousands of workloads.
    """

    def __init__(self, tables: list[SweepTable], resolved: pd.DataFrame, results: pd.DataFrame):
        self.tables = tables
        self._resolved, self._results = resolved, results
        self.frames = _LazyFrames(self)
        self._tornado: pd.DataFrame | None = None
        self._keep = False  # inside kept_columns()
        self._columns: tuple[tuple[int, int], dict[str, np.ndarray]] | None = None

    @contextlib.contextmanager
    def kept_columns(self):
        """Within: :meth:`columns` keeps the arrays of the last block asked (the writer evaluates every
        table on the same blocks of workloads, and the frames do not change while it writes); outside,
        every block reads the frames afresh, as a caller may have changed them in between."""
        self._keep, self._columns = True, None
        try:
            yield self
        finally:
            self._keep, self._columns = False, None

    def columns(self, w0: int, w1: int) -> dict[str, np.ndarray]:
        """:func:`column_arrays` of the Results and Resolved rows w0..w1-1 (within :meth:`kept_columns`:
        kept for the last range asked; one block, so memory stays flat)."""
        if self._columns is not None and self._columns[0] == (w0, w1):
            return self._columns[1]
        arrays = column_arrays(self._results.iloc[w0:w1], self._resolved.iloc[w0:w1])
        if self._keep:
            self._columns = ((w0, w1), arrays)
        return arrays

    def table(self, sheet: str) -> SweepTable:
        return next(t for t in self.tables if t.sheet == sheet)

    def block(self, sheet: str, w0: int, w1: int) -> pd.DataFrame:
        """Rows of table ``sheet`` for workloads w0..w1-1 (0-based, input order)."""
        return evaluate_table(self.table(sheet), self._resolved.iloc[w0:w1], self._results.iloc[w0:w1],
                              columns=self.columns(w0, w1))

    def helper_block(self, sheet: str, w0: int, w1: int) -> pd.DataFrame:
        """:meth:`block` with the columns of the table's helper sheet (DF_Search_Hit) after its own."""
        return evaluate_table(self.table(sheet), self._resolved.iloc[w0:w1], self._results.iloc[w0:w1],
                              helpers=True, columns=self.columns(w0, w1))

    def searched(self, sheet: str) -> np.ndarray | None:
        """Per workload, whether table ``sheet``'s helper sheet searches its rows (a decode-first row planned
        open loop, :func:`planner.equations.decode_first_slo.searched_row`); None: the table has no helper."""
        if not self.table(sheet).helpers:
            return None
        r = self._resolved
        return dslo.open_loop_df(r["scheduler"].to_numpy(dtype=object), coerced_floats(r["concurrency"]))

    def tornado_block(self, w0: int, w1: int) -> pd.DataFrame:
        return tornado_summary(self.block("Tornado_Calc", w0, w1), self._results.iloc[w0:w1],
                               self._resolved.iloc[w0:w1])

    @property
    def tornado(self) -> pd.DataFrame:
        if self._tornado is None:
            self._tornado = tornado_summary(self.frames["Tornado_Calc"], self._results, self._resolved)
        return self._tornado

    def rows(self, sheet: str) -> int:
        return len(self._results) * (len(DRIVERS) if sheet == "Tornado" else self.table(sheet).k)


class _LazyFrames(dict):
    def __init__(self, owner: Sensitivities):
        super().__init__()
        self._owner = owner

    def __missing__(self, sheet: str) -> pd.DataFrame:
        frame = self._owner.block(sheet, 0, len(self._owner._results))
        self[sheet] = frame
        return frame

    def keys(self):
        return [t.sheet for t in self._owner.tables]

    def items(self):
        return [(k, self[k]) for k in self.keys()]

    def values(self):
        return [self[k] for k in self.keys()]

    def __iter__(self):
        return iter(self.keys())

    def __len__(self):
        return len(self._owner.tables)


def evaluate_all(resolved: pd.DataFrame, results: pd.DataFrame, grid: np.ndarray,
                 extra_gbps: tuple[float, ...]) -> Sensitivities:
    """The sensitivity tables of a plan (evaluated lazily, see :class:`Sensitivities`)."""
    tables = [hit_table(grid, sheets.has_open_df(resolved)), alpha_table(), pcie_table(extra_gbps), hit_alpha_table(),
              tornado_calc_table()]
    return Sensitivities(tables, resolved, results)
