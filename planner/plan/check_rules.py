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

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pandas as pd

from planner.core import schema
from planner.core.refs import col_range, exact_criteria, exact_text, range_name, sheet_range
from planner.core.schema import FRACTION, INT, NUMBER
from planner.equations import queueing as q

INPUT_TABLES = ("Workloads", "Models", "GPUs")
UNPLANNED_SCAN = 1000  # rows below a table searched for the name of a row added after the run
WHOLE_COLUMN_ROWS = 1_048_575  # data rows of a whole sheet column (Excel's 1,048,576 rows less the header)


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


# --------------------------------------------------------------------------- cell semantics
def _values(frame: pd.DataFrame, name: str) -> list:
    return list(frame[name]) if name in frame.columns else [None] * len(frame)


def _is_blank(v) -> bool:
    """An empty cell as written (None, NaN) or an empty text: what COUNTBLANK counts."""
    return v is None or (isinstance(v, float) and math.isnan(v)) or (isinstance(v, str) and v == "")


def _is_number(v) -> bool:
    """A cell COUNT counts: a number (a logical value is not one)."""
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_)) \
        and not math.isnan(float(v))


def _frame(plan, sheet: str) -> pd.DataFrame:
    return {"Workloads": plan.workloads, "Models": plan.models, "GPUs": plan.gpus}[sheet]


def _fold(v) -> str:
    return str(v).casefold()


def _n(name: str) -> str:
    sheet, col = name.split(".")
    return range_name(sheet, col)


def _sum(parts: list[str]) -> str:
    return "+".join(parts) if parts else "0"


# --------------------------------------------------------------------------- Python counts
def unresolved(sheet: str, key: str, table: str, table_key: str) -> Callable[[Any], int]:
    """Rows of ``sheet`` whose ``key`` names no row of ``table`` (MATCH is case-blind)."""
    def count(plan) -> int:
        names = {_fold(v) for v in _values(_frame(plan, table), table_key) if not _is_blank(v)}
        return sum(1 for v in _values(_frame(plan, sheet), key) if _is_blank(v) or _fold(v) not in names)
    return count


def duplicated(sheet: str, key: str) -> Callable[[Any], int]:
    """Rows of ``sheet`` whose ``key`` appears more than once (COUNTIF is case-blind)."""
    def count(plan) -> int:
        vals = [_fold(v) for v in _values(_frame(plan, sheet), key) if not _is_blank(v)]
        seen = Counter(vals)
        return sum(1 for v in vals if seen[v] > 1)
    return count


def blank_cells(sheet: str, names: list[str], traced_hit: bool = False) -> Callable[[Any], int]:
    """Blank cells of ``names``; with ``traced_hit`` a blank hit_target of a traced row does not count."""
    def count(plan) -> int:
        frame = _frame(plan, sheet)
        n = sum(1 for name in names for v in _values(frame, name) if _is_blank(v))
        if traced_hit and plan.input.kv_tiers is not None:
            n -= sum(1 for h, t in zip(_values(frame, "hit_target"), _values(frame, "trace"))
                     if _is_blank(h) and not _is_blank(t))
        return n
    return count


def not_numbers(cols: list) -> Callable[[Any], int]:
    """Cells of numeric columns that hold something other than a number."""
    def count(plan) -> int:
        return sum(1 for c in cols for v in _values(_frame(plan, c.sheet), c.name)
                   if not _is_blank(v) and not _is_number(v))
    return count


def outside(cols: list, upper: bool = True) -> Callable[[Any], int]:
    """Numbers below a column's minimum (at it, for an open minimum) or, with ``upper``, above its maximum."""
    def count(plan) -> int:
        n = 0
        for c in cols:
            for v in _values(plan.workloads, c.name):
                if not _is_number(v):
                    continue
                x = float(v)
                if c.minimum is not None and (x <= c.minimum if c.min_open else x < c.minimum):
                    n += 1
                if upper and c.maximum is not None and x > c.maximum:
                    n += 1
        return n
    return count


def not_whole(sheet: str, name: str) -> Callable[[Any], int]:
    def count(plan) -> int:
        return sum(1 for v in _values(_frame(plan, sheet), name) if _is_number(v) and float(v) % 1 != 0)
    return count


def results_errors(plan) -> int:
    """Results cells Python found infinite (a division by zero, which Excel shows as #DIV/0!); a
    blank result (NaN) is written blank on purpose and is no error. In the SLO-bound sizing chain
    (planner.equations.sizing, the target's and the baseline's instance counts) ``inf`` is a target no instance count
    meets, written ``"unreachable"`` as its formula says: text, no error (the ``binding`` check counts it)."""
    from planner.equations import sizing as sz

    unreachable_text = {c for c in (*sz.NAMES, *sz.BASELINE_NAMES) if c.startswith("instances_")}
    n = 0
    for name in plan.results.columns:
        if name in unreachable_text:
            continue
        x = pd.to_numeric(plan.results[name], errors="coerce").to_numpy(dtype=float)
        n += int(np.isinf(x).sum())
    return n


def unplanned(sheet: str, key: str) -> Callable[[Any], int]:
    """Names in the whole ``key`` column less the planned rows (COUNTA - ROWS, as the formula)."""
    def count(plan) -> int:
        frame = _frame(plan, sheet)
        return sum(1 for v in _values(frame, key) if not _is_blank(v)) - max(len(frame), 1)
    return count


def _sum_of(*parts: Callable[[Any], int]) -> Callable[[Any], int]:
    return lambda plan: sum(p(plan) for p in parts)


def flag(name: str) -> Callable[[Any], np.ndarray]:
    """The mask of :class:`planner.plan.flags.Flags` ``name``."""
    return lambda plan: np.asarray(getattr(plan.flags, name), dtype=bool)


def _mask_count(mask: Callable[[Any], np.ndarray]) -> Callable[[Any], int]:
    return lambda plan: int(mask(plan).sum())


def missing_breakdown(plan) -> np.ndarray:
    return plan.resolved["breakdown_source"].to_numpy(dtype=object) == "missing"


# --------------------------------------------------------------------------- Excel formulas
def _outside_xl(c, upper: bool = True) -> str:
    """COUNTIF of the Workloads cells of ``c`` outside its schema range (bounds from the schema,
    never copied by hand: an open minimum counts the minimum itself)."""
    rng = _n("Workloads." + c.name)
    parts = []
    if c.minimum is not None:
        parts.append(f'COUNTIF({rng},"{"<=" if c.min_open else "<"}{c.minimum:g}")')
    if upper and c.maximum is not None:
        parts.append(f'COUNTIF({rng},">{c.maximum:g}")')
    return "+".join(parts) or "0"


def first_row_xl(mask: str) -> str:
    """Array formula naming the first workload whose ``mask`` (an array over the workload rows)
    is true: ``Workloads row 7: chat-a`` (blank when none), for the Checks' first-row column."""
    m = f"MATCH(1,--{mask},0)"
    return f'IFERROR("Workloads row "&(1+{m})&": "&INDEX({_n("Resolved.workload")},{m}),"")'


def _unplanned_first(sheet: str, key: str, planned: str) -> Callable[[Where], str]:
    def xl(where: Where) -> str:
        scan = col_range(sheet, where.pos[sheet][key], where.rows[sheet] + UNPLANNED_SCAN)
        return (f'IFERROR("{sheet} row "&(1+MATCH(1,({scan}<>"")*ISNA(MATCH({exact_text(scan)},{planned},0)),0))'
                f'&": "&INDEX({scan},MATCH(1,({scan}<>"")*ISNA(MATCH({exact_text(scan)},{planned},0)),0)),"")')
    return xl


def _unplanned_count_xl(sheet: str, key: str, planned: str) -> Callable[[Where], str]:
    return lambda where: f"COUNTA({col_range(sheet, where.pos[sheet][key], WHOLE_COLUMN_ROWS)})-ROWS({planned})"


# --------------------------------------------------------------------------- the table
_NUMERIC = [c for c in schema.COLUMNS if c.kind in (INT, NUMBER, FRACTION) and c.sheet in schema.SHEETS]
_REQUIRED_WL = [c for c in schema.columns("Workloads") if c.required is True]
_FRACTIONS = [c for c in schema.columns("Workloads") if c.kind == FRACTION]
_NONNEG = [c for c in schema.columns("Workloads") if c.kind in (NUMBER, INT) and c.minimum is not None]
_ISL, _TP = schema.column("Workloads", "isl"), schema.column("Workloads", "tp")
_TPM_NO_HIT = f"(ISNUMBER({_n('Workloads.tpm_measured')})*NOT(ISNUMBER({_n('Workloads.hit_measured')})))"
_BEYOND = f"({_n('Resolved.hit_target')}>{_n('Results.h_star')})"


def _required_xl(where: Where) -> str:
    return (_sum([f"COUNTBLANK({_n('Workloads.' + c.name)})" for c in _REQUIRED_WL])
            # a traced row may leave hit_target blank (planner.inputs.kv_tiers): not counted
            + (f"-SUMPRODUCT(({_n('Workloads.hit_target')}=\"\")*({_n('Workloads.trace')}<>\"\"))"
               if where.traced else ""))


ERROR_RULES: tuple[Rule, ...] = (
    Rule("model references resolve", "error", "every Workloads.model names a row of Models",
         unresolved("Workloads", "model", "Models", "model"),
         lambda w: f"SUMPRODUCT(--ISNA(MATCH({exact_text(_n('Workloads.model'))},{_n('Models.model')},0)))"),
    Rule("gpu references resolve", "error", "every Workloads.gpu names a row of GPUs",
         unresolved("Workloads", "gpu", "GPUs", "gpu"),
         lambda w: f"SUMPRODUCT(--ISNA(MATCH({exact_text(_n('Workloads.gpu'))},{_n('GPUs.gpu')},0)))"),
    Rule("model names unique", "error", "no model name appears twice in Models", duplicated("Models", "model"),
         lambda w: f"SUMPRODUCT(--(COUNTIF({_n('Models.model')},{exact_criteria(_n('Models.model'))})>1))"),
    Rule("gpu names unique", "error", "no GPU name appears twice in GPUs", duplicated("GPUs", "gpu"),
         lambda w: f"SUMPRODUCT(--(COUNTIF({_n('GPUs.gpu')},{exact_criteria(_n('GPUs.gpu'))})>1))"),
    Rule("required workload cells filled", "error",
         "blank cells in required Workloads columns: " + ", ".join(c.name for c in _REQUIRED_WL),
         blank_cells("Workloads", [c.name for c in _REQUIRED_WL], traced_hit=True), _required_xl),
    Rule("numeric cells hold numbers", "error", "text in numeric columns of Models, GPUs and Workloads",
         not_numbers(_NUMERIC),
         lambda w: _sum([f"(COUNTA({_n(c.sheet + '.' + c.name)})-COUNT({_n(c.sheet + '.' + c.name)}))"
                         for c in _NUMERIC])),
    Rule("ratios within their range", "error",
         "Workloads ratios within the schema's range: " + ", ".join(f"{c.name} {c.range_text()}" for c in _FRACTIONS),
         outside(_FRACTIONS), lambda w: _sum([_outside_xl(c) for c in _FRACTIONS])),
    Rule("lengths and times not negative", "error", "Workloads lengths, times and TPM at or above their minimum",
         outside(_NONNEG, upper=False), lambda w: _sum([_outside_xl(c, upper=False) for c in _NONNEG])),
    Rule("input length positive", "error", "isl above 0", outside([_ISL], upper=False),
         lambda w: _outside_xl(_ISL, upper=False)),
    Rule("tp is a whole number >= 1", "error", "tensor-parallel size is a positive integer",
         _sum_of(outside([_TP], upper=False), not_whole("Workloads", "tp")),
         lambda w: f'{_outside_xl(_TP, upper=False)}+SUMPRODUCT(--(MOD({_n("Workloads.tp")},1)<>0))'),
    Rule("prefill times given", "error",
         "workloads whose t_attn0_ms / t_ffn0_ms are missing (breakdown_source 'missing': a typed time "
         "cleared after the run counts as 0); type them, or clear both and run the planner to calibrate "
         "or estimate them",
         _mask_count(missing_breakdown),
         lambda w: f'COUNTIF({_n("Resolved.breakdown_source")},"missing")',
         lambda w: (f'IFERROR("Workloads row "&(1+MATCH("missing",{_n("Resolved.breakdown_source")},0))&": "&'
                    f'INDEX({_n("Resolved.workload")},MATCH("missing",{_n("Resolved.breakdown_source")},0)),"")'),
         missing_breakdown),
    Rule("results free of errors", "error", "no #DIV/0!, #N/A or other error in Results", results_errors,
         lambda w: f"SUMPRODUCT(--ISERROR({w.results_block()}))"),
    Rule("latency targets reachable", "error",
         "workloads whose TTFT/TPOT target (or HBM fit) no instance count meets: binding says unreachable "
         "(a target below the request-alone latency, or missed at the fixed concurrency)",
         lambda plan: int(q.unreachable_count(plan.results["binding"])),
         lambda w: q.unreachable_count.xl(_n("Results.binding")),
         lambda w: first_row_xl(f'(LEFT({_n("Results.binding")},11)="unreachable")'),
         lambda plan: np.array([str(b).startswith("unreachable") for b in plan.results["binding"]], dtype=bool)),
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
         _mask_count(flag("hbm_no_fit")), lambda w: f'COUNTIF({_n("Results.hbm_headroom_gib")},"<0")',
         lambda w: first_row_xl(f'({_n("Results.hbm_headroom_gib")}<0)'), flag("hbm_no_fit")),
    Rule("hit_target within break-even h*", "warning",
         "rows whose hit_target is beyond h*, where more hits make prefill slower",
         _mask_count(flag("beyond_h_star")), lambda w: f"SUMPRODUCT(--{_BEYOND})",
         lambda w: first_row_xl(_BEYOND), flag("beyond_h_star")),
    Rule("kv_heads and tp divide", "warning",
         "GQA rows where neither kv_heads/tp nor tp/kv_heads is whole (uneven head split)",
         _mask_count(flag("uneven_heads")),
         lambda w: (f"SUMPRODUCT(({_n('Resolved.attention')}=\"gqa\")*(MOD({_n('Resolved.kv_heads')},"
                    f"{_n('Resolved.tp')})<>0)*(MOD({_n('Resolved.tp')},{_n('Resolved.kv_heads')}"
                    f"+({_n('Resolved.kv_heads')}=0))<>0))")),
    Rule("params_b given", "warning", "models without params_b: weights taken as 0 in the HBM check",
         _mask_count(flag("params_missing")), lambda w: f"COUNTBLANK({_n('Models.params_b')})"),
    Rule("tpm_measured has hit_measured", "warning",
         "rows with tpm_measured but no hit_measured (taken as measured at 0 hit)",
         _mask_count(flag("tpm_without_hit")), lambda w: f"SUMPRODUCT{_TPM_NO_HIT}",
         lambda w: first_row_xl(_TPM_NO_HIT), flag("tpm_without_hit")),
    Rule("workloads have a demand_tpm", "warning",
         "rows without demand_tpm: they need no GPUs, so the fleet and its cost leave them out",
         blank_cells("Workloads", ["demand_tpm"]), lambda w: f"COUNTBLANK({_n('Workloads.demand_tpm')})"),
)

RULES: tuple[Rule, ...] = ERROR_RULES + UNPLANNED_RULES + WARNING_RULES
