"""The rows of the Checks sheet, each declared once with its twins: the Python count of
offending rows, computed from the plan, and the Excel formula that recounts them live.

:data:`RULES` is the one table (planner.workbook.checks_sheet writes it). A rule's
``count(plan)`` reads the frames the output's input sheets are written from
(``plan.workloads``, ``plan.models``, ``plan.gpus``) and the plan's results and
flags (:mod:`planner.plan.flags`); ``formula(where)`` builds the Excel text from the
defined names of planner.core.refs. The stored count is what Python found when the planner
ran; the formula's recalculation by a spreadsheet equals it (tests/test_check_rules.py
recalculates a plan with offending rows in LibreOffice).

Excel semantics the Python side follows: MATCH(..., 0) and COUNTIF compare text without
regard to case; COUNTBLANK counts empty cells and empty text; COUNTA - COUNT counts the
cells that hold something other than a number (a text, a logical value); COUNTIF(">x")
sees numbers only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pandas as pd

from planner.core.arrays import coerced_floats
from planner.core import schema
from planner.core.excel import MAX_DATA_ROWS
from planner.core.refs import col_range, range_name, sheet_range
from planner.core.schema import FRACTION, INT, NUMBER
from planner.equations import checks as ck
from planner.equations import queueing as q
from planner.equations import tables as tb
from planner.equations.kvhit import uneven_heads

INPUT_TABLES = ("Workloads", "Models", "GPUs")
UNPLANNED_SCAN = 1000  # rows below a table searched for the name of a row added after the run
WHOLE_COLUMN_ROWS = MAX_DATA_ROWS  # data rows of a whole sheet column (planner.core.excel: one constant)


@dataclass(frozen=True)
class Where:
    """Where the Checks formulas look: the 0-based column of each input-sheet column, the rows
    of each table, the Results block, and whether Workloads rows may take hit_target from a trace."""

    pos: dict[str, dict[str, int]]
    rows: dict[str, int]
    results_cols: int
    traced: bool = False

    @classmethod
    def of(cls, plan, layout) -> "Where":
        """From the plan and its workbook layout (planner.workbook.layout.Layout)."""
        return cls({s: layout.pos[s] for s in INPUT_TABLES if s in layout.pos},
                   {"Workloads": layout.n, "Models": len(plan.models), "GPUs": len(plan.gpus)},
                   len(layout.pos["Results"]), plan.input.kv_tiers is not None)

    def results_block(self) -> str:
        return sheet_range("Results", 1, 0, max(self.rows["Workloads"], 1), self.results_cols - 1)


@dataclass(frozen=True)
class Rule:
    """One row of the Checks sheet. ``count(plan)``: the rows found, in Python; ``formula(where)``:
    the same count in Excel (without "="). ``first``/``first_mask``: the Excel text naming the
    first offending workload and the Python mask over the workload rows it reads (optional)."""

    name: str
    kind: str  # "error" (feeds the master check) or "warning"
    description: str
    count: Callable[[Any], int]
    formula: Callable[[Where], str]
    first: Callable[[Where], str] | None = None
    first_mask: Callable[[Any], np.ndarray] | None = None


# --------------------------------------------------------------------------- reading the plan
def _values(frame: pd.DataFrame, name: str) -> list:
    return list(frame[name]) if name in frame.columns else [None] * len(frame)


def _frame(plan, sheet: str) -> pd.DataFrame:
    return {"Workloads": plan.workloads, "Models": plan.models, "GPUs": plan.gpus}[sheet]


def _n(name: str) -> str:
    sheet, col = name.split(".")
    return range_name(sheet, col)


def _column(name: str) -> Callable[[Any], list]:
    """The cells of ``Sheet.column`` as the output's input sheet holds them."""
    sheet, col = name.split(".")
    return lambda plan: _values(_frame(plan, sheet), col)


# --------------------------------------------------------------------------- Python counts
def _total(*parts: Callable[[Any], int]) -> Callable[[Any], int]:
    return lambda plan: sum(p(plan) for p in parts)


def unresolved(sheet: str, key: str, table: str, table_key: str) -> Callable[[Any], int]:
    """Rows of ``sheet`` whose ``key`` names no row of ``table`` (MATCH is case-blind)."""
    return lambda plan: ck.count_unmatched(_values(_frame(plan, sheet), key), _values(_frame(plan, table), table_key))


def duplicated(sheet: str, key: str) -> Callable[[Any], int]:
    """Rows of ``sheet`` whose ``key`` appears more than once (COUNTIF is case-blind)."""
    return lambda plan: ck.count_repeated(_values(_frame(plan, sheet), key))


def blank_cells(sheet: str, names: list[str], traced_hit: bool = False) -> Callable[[Any], int]:
    """Blank cells of ``names``; with ``traced_hit`` a blank hit_target of a traced row does not count."""
    def count(plan) -> int:
        frame = _frame(plan, sheet)
        n = sum(ck.count_blank(_values(frame, name)) for name in names)
        if traced_hit and plan.input.kv_tiers is not None:
            n = ck.count_less(n, ck.count_blank_beside(_values(frame, "hit_target"), _values(frame, "trace")))
        return n
    return count


def not_numbers(cols: list) -> Callable[[Any], int]:
    """Cells of numeric columns that hold something other than a number."""
    return lambda plan: sum(ck.count_not_number(_values(_frame(plan, c.sheet), c.name)) for c in cols)


def outside(cols: list, upper: bool = True) -> Callable[[Any], int]:
    """Numbers below a column's minimum (at it, for an open minimum) or, with ``upper``, above its maximum."""
    def count(plan) -> int:
        n = 0
        for c in cols:
            v = _values(plan.workloads, c.name)
            if c.minimum is not None:
                n += ck.count_below(v, minimum=c.minimum, open_minimum=bool(c.min_open))
            if upper and c.maximum is not None:
                n += ck.count_above(v, maximum=c.maximum)
        return n
    return count


def not_whole(sheet: str, name: str) -> Callable[[Any], int]:
    return lambda plan: ck.count_not_whole(_values(_frame(plan, sheet), name))


def results_errors(plan) -> int:
    """Results cells Python found infinite (a division by zero, which Excel shows as #DIV/0!); a
    blank result (NaN) is written blank on purpose and is no error. In the SLO-bound sizing chain
    (planner.equations.sizing, the target's and the baseline's instance counts) ``inf`` is a target no instance count
    meets, written ``"unreachable"`` as its formula says: text, no error (the ``binding`` check counts it)."""
    from planner.equations import sizing as sz

    unreachable_text = {c for c in (*sz.NAMES, *sz.BASELINE_NAMES) if c.startswith("instances_")}
    return sum(ck.count_errors(coerced_floats(plan.results[name]))
               for name in plan.results.columns if name not in unreachable_text)


def unplanned(sheet: str, key: str) -> Callable[[Any], int]:
    """Names in the whole ``key`` column less the planned rows (COUNTA - ROWS, as the formula)."""
    def count(plan) -> int:
        frame = _frame(plan, sheet)
        return ck.count_beyond_table(_values(frame, key), len(frame))
    return count


def flag(name: str) -> Callable[[Any], np.ndarray]:
    """The mask of :class:`planner.plan.flags.Flags` ``name``."""
    return lambda plan: np.asarray(getattr(plan.flags, name), dtype=bool)


def _mask_count(mask: Callable[[Any], np.ndarray]) -> Callable[[Any], int]:
    return lambda plan: ck.count_true(mask(plan))


def missing_breakdown(plan) -> np.ndarray:
    return plan.resolved["breakdown_source"].to_numpy(dtype=object) == "missing"


# --------------------------------------------------------------------------- Excel formulas
def _outside_xl(c, upper: bool = True) -> str:
    """COUNTIF of the Workloads cells of ``c`` outside its schema range (bounds from the schema,
    never copied by hand: an open minimum counts the minimum itself)."""
    rng = _n("Workloads." + c.name)
    parts = []
    if c.minimum is not None:
        parts.append(ck.count_below.xl(rng, minimum=c.minimum, open_minimum=bool(c.min_open)))
    if upper and c.maximum is not None:
        parts.append(ck.count_above.xl(rng, maximum=c.maximum))
    return tb.sum_of.xl(*parts)


def first_row_xl(mask: str) -> str:
    """Array formula naming the first workload whose ``mask`` (an array over the workload rows)
    is true: ``Workloads row 7: chat-a`` (blank when none), for the Checks' first-row column."""
    return ck.first_row.xl(mask, _n("Resolved.workload"))


def _unplanned_first(sheet: str, key: str, planned: str) -> Callable[[Where], str]:
    def xl(where: Where) -> str:
        scan = col_range(sheet, where.pos[sheet][key], where.rows[sheet] + UNPLANNED_SCAN)
        return ck.first_unplanned_xl(scan, planned, sheet)
    return xl


def _unplanned_count_xl(sheet: str, key: str, planned: str) -> Callable[[Where], str]:
    return lambda where: ck.count_beyond_table.xl(col_range(sheet, where.pos[sheet][key], WHOLE_COLUMN_ROWS), planned)


# --------------------------------------------------------------------------- the table
_NUMERIC = [c for c in schema.COLUMNS if c.kind in (INT, NUMBER, FRACTION) and c.sheet in schema.SHEETS]
_REQUIRED_WL = [c for c in schema.columns("Workloads") if c.required is True]
_FRACTIONS = [c for c in schema.columns("Workloads") if c.kind == FRACTION]
_NONNEG = [c for c in schema.columns("Workloads") if c.kind in (NUMBER, INT) and c.minimum is not None]
_ISL, _TP = schema.column("Workloads", "isl"), schema.column("Workloads", "tp")
_TPM_NO_HIT = ck.typed_without.xl(_n("Workloads.tpm_measured"), _n("Workloads.hit_measured"))
_BEYOND = ck.above.xl(_n("Resolved.hit_target"), _n("Results.h_star"))
_UNREACHABLE = "unreachable"  # the start of Results.binding when no instance count meets the targets


def _required_xl(where: Where) -> str:
    blank = tb.sum_of.xl(*(ck.count_blank.xl(_n("Workloads." + c.name)) for c in _REQUIRED_WL))
    if not where.traced:
        return blank
    # a traced row may leave hit_target blank (planner.inputs.kv_tiers): not counted
    return ck.count_less.xl(blank, ck.count_blank_beside.xl(_n("Workloads.hit_target"), _n("Workloads.trace")))


ERROR_RULES: tuple[Rule, ...] = (
    Rule("model references resolve", "error", "every Workloads.model names a row of Models",
         unresolved("Workloads", "model", "Models", "model"),
         lambda w: ck.count_unmatched.xl(_n("Workloads.model"), _n("Models.model"))),
    Rule("gpu references resolve", "error", "every Workloads.gpu names a row of GPUs",
         unresolved("Workloads", "gpu", "GPUs", "gpu"),
         lambda w: ck.count_unmatched.xl(_n("Workloads.gpu"), _n("GPUs.gpu"))),
    Rule("model names unique", "error", "no model name appears twice in Models", duplicated("Models", "model"),
         lambda w: ck.count_repeated.xl(_n("Models.model"))),
    Rule("gpu names unique", "error", "no GPU name appears twice in GPUs", duplicated("GPUs", "gpu"),
         lambda w: ck.count_repeated.xl(_n("GPUs.gpu"))),
    Rule("required workload cells filled", "error",
         "blank cells in required Workloads columns: " + ", ".join(c.name for c in _REQUIRED_WL),
         blank_cells("Workloads", [c.name for c in _REQUIRED_WL], traced_hit=True), _required_xl),
    Rule("numeric cells hold numbers", "error", "text in numeric columns of Models, GPUs and Workloads",
         not_numbers(_NUMERIC),
         lambda w: tb.sum_of.xl(*(ck.count_not_number.xl(_n(c.sheet + "." + c.name)) for c in _NUMERIC))),
    Rule("ratios within their range", "error",
         "Workloads ratios within the schema's range: " + ", ".join(f"{c.name} {c.range_text()}" for c in _FRACTIONS),
         outside(_FRACTIONS), lambda w: tb.sum_of.xl(*(_outside_xl(c) for c in _FRACTIONS))),
    Rule("lengths and times not negative", "error", "Workloads lengths, times and TPM at or above their minimum",
         outside(_NONNEG, upper=False), lambda w: tb.sum_of.xl(*(_outside_xl(c, upper=False) for c in _NONNEG))),
    Rule("input length positive", "error", "isl above 0", outside([_ISL], upper=False),
         lambda w: _outside_xl(_ISL, upper=False)),
    Rule("tp is a whole number >= 1", "error", "tensor-parallel size is a positive integer",
         _total(outside([_TP], upper=False), not_whole("Workloads", "tp")),
         lambda w: tb.sum_of.xl(_outside_xl(_TP, upper=False), ck.count_not_whole.xl(_n("Workloads.tp")))),
    Rule("prefill times given", "error",
         "workloads whose t_attn0_ms / t_ffn0_ms are missing (breakdown_source 'missing': a typed time "
         "cleared after the run counts as 0); type them, or clear both and run the planner to calibrate "
         "or estimate them",
         _mask_count(missing_breakdown),
         lambda w: ck.count_equal.xl(_n("Resolved.breakdown_source"), text="missing"),
         lambda w: ck.first_equal_row.xl(_n("Resolved.breakdown_source"), _n("Resolved.workload"), text="missing"),
         missing_breakdown),
    Rule("results free of errors", "error", "no #DIV/0!, #N/A or other error in Results", results_errors,
         lambda w: ck.count_errors.xl(w.results_block())),
    Rule("latency targets reachable", "error",
         "workloads whose TTFT/TPOT target (or HBM fit) no instance count meets: binding says unreachable "
         "(a target below the request-alone latency, or missed at the fixed concurrency)",
         lambda plan: int(q.unreachable_count(plan.results["binding"])),
         lambda w: q.unreachable_count.xl(_n("Results.binding")),
         lambda w: first_row_xl(ck.starts_with.xl(_n("Results.binding"), prefix=_UNREACHABLE)),
         lambda plan: ck.starts_with(plan.results["binding"], prefix=_UNREACHABLE)),
)

UNPLANNED_RULES: tuple[Rule, ...] = tuple(
    Rule(f"every {sheet} row planned", "error",
         f"{what}: rows typed in after the planner ran are not in the results; run planner run on this workbook "
         f"to plan them",
         unplanned(sheet, key), _unplanned_count_xl(sheet, key, planned), _unplanned_first(sheet, key, planned))
    for sheet, key, planned, what in (
        ("Workloads", "workload", range_name("Resolved", "workload"), "Workloads rows without a Resolved/Results row"),
        ("Models", "model", _n("Models.model"), "Models rows outside the lookup range"),
        ("GPUs", "gpu", _n("GPUs.gpu"), "GPUs rows outside the lookup range")))

WARNING_RULES: tuple[Rule, ...] = (
    Rule("KV fits in HBM", "warning", "rows whose weights + peak KV exceed device memory",
         _mask_count(flag("hbm_no_fit")), lambda w: ck.count_negative.xl(_n("Results.hbm_headroom_gib")),
         lambda w: first_row_xl(ck.below.xl(_n("Results.hbm_headroom_gib"), 0)), flag("hbm_no_fit")),
    Rule("hit_target within break-even h*", "warning",
         "rows whose hit_target is beyond h*, where more hits make prefill slower",
         _mask_count(flag("beyond_h_star")), lambda w: ck.count_true.xl(_BEYOND),
         lambda w: first_row_xl(_BEYOND), flag("beyond_h_star")),
    Rule("kv_heads and tp divide", "warning",
         "GQA rows where neither kv_heads/tp nor tp/kv_heads is whole (uneven head split)",
         _mask_count(flag("uneven_heads")),
         lambda w: ck.count_true.xl(uneven_heads.xl(_n("Resolved.attention"), _n("Resolved.kv_heads"),
                                                     _n("Resolved.tp")))),
    Rule("params_b given", "warning", "models without params_b: weights taken as 0 in the HBM check",
         _mask_count(flag("params_missing")), lambda w: ck.count_blank.xl(_n("Models.params_b"))),
    Rule("tpm_measured has hit_measured", "warning",
         "rows with tpm_measured but no hit_measured (taken as measured at 0 hit)",
         _mask_count(flag("tpm_without_hit")), lambda w: ck.count_true.xl(_TPM_NO_HIT),
         lambda w: first_row_xl(_TPM_NO_HIT), flag("tpm_without_hit")),
    Rule("workloads have a demand_tpm", "warning",
         "rows without demand_tpm: they need no GPUs, so the fleet and its cost leave them out",
         blank_cells("Workloads", ["demand_tpm"]), lambda w: ck.count_blank.xl(_n("Workloads.demand_tpm"))),
)

RULES: tuple[Rule, ...] = ERROR_RULES + UNPLANNED_RULES + WARNING_RULES
