"""Where every column of every output sheet is, computed up front from the plan (before any
sheet is written), and the row-by-row writing of declared columns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from planner.core import schema

from planner.plan import columns as sheets
from planner.core.refs import cell, sheet_ref
from planner.workbook.shared_terms import share_terms
from planner.workbook.xlfast import ROW, WL_ROW, FormulaTemplate
from planner.workbook.styles import Formats, values_list

from planner.core.excel import MAX_DATA_ROWS  # noqa: F401 (Excel's row limit, used here and re-read by the writer)
MAX_COLUMNS = 16_384
MAX_CHART_WORKLOADS = 20       # per-workload charts up to this count; beyond it the Explorer
WRITE_BLOCK = 65_536           # rows whose stored values are converted to Python objects at once
ZIP64_ROWS = 1_000_000         # above this many rows in all, members may pass 4 GiB: write ZIP64


def sheet_columns(sheet: str, extras=()) -> dict[str, int]:
    """0-based column of every column of an input sheet: the schema's columns, then the extras."""
    cols = schema.columns(sheet)
    pos = {c.name: j for j, c in enumerate(cols)}
    for k, head in enumerate(extras):
        pos[head] = len(cols) + k
    return pos


@dataclass
class Layout:
    """Where every column of every sheet is, so references come from one place.

    :meth:`of` computes it for the whole workbook before anything is written, so the
    order the sheets are written in does not matter to the references."""

    n: int                                   # workloads
    pos: dict[str, dict[str, int]]           # sheet -> column name -> 0-based column
    chunks: dict[str, "Chunks"] = field(default_factory=dict)  # long table -> its continuation sheets

    @classmethod
    def of(cls, plan, max_rows: int | None = None) -> "Layout":
        """The layout of ``plan``'s output workbook (``max_rows``: rows-per-sheet limit)."""
        n = len(plan.results)
        p_in = plan.input
        pos: dict[str, dict[str, int]] = {
            "Resolved": {rc.name: j for j, rc in enumerate(sheets.RESOLVED)},
            "Results": {c.name: j for j, c in enumerate(sheets.RESULTS)},
        }
        if sheets.has_open_df(plan.resolved):  # the decode-first open loop's search (planner.workbook.df_search)
            pos[sheets.DF_SEARCH_SHEET] = {c.name: j for j, c in enumerate(sheets.DF_SEARCH)}
        chunks = {}
        for table in plan.sens.tables:
            own = {name: j for j, name in enumerate(table.names)}
            if len(own) > MAX_COLUMNS:
                raise ValueError(f"{table.sheet}: {len(own)} columns exceed Excel's {MAX_COLUMNS}")
            pos[table.sheet] = own
            chunks[table.sheet] = Chunks.of(table.sheet, table.k, n * table.k, max_rows)
            if table.helpers:  # its helper sheet (DF_Search_Hit), row-aligned with it (planner.workbook.long_tables)
                pos[table.helper_sheet] = {c.name: j for j, c in enumerate(table.helpers)}
        pos["Tornado"] = {name: j for j, name in enumerate(TORNADO_COLS)}
        for sheet, table in (("Workloads", p_in.workloads), ("Models", p_in.models), ("GPUs", p_in.gpus)):
            pos[sheet] = sheet_columns(sheet, list(table.extras))
        return cls(n, pos, chunks)

    def own(self, sheet: str, name: str, row: int) -> str:
        return cell(row, self.pos[sheet][name], col_abs=True)

    def other(self, sheet: str, name: str, row: int) -> str:
        return sheet_ref(sheet, row, self.pos[sheet][name])

    def base(self, name: str, wl_row: int) -> str:
        """A Resolved, Results (or, when the plan has it, DF_Search) cell of the workload on sheet row ``wl_row``."""
        for other in ("Resolved", "Results", sheets.DF_SEARCH_SHEET):
            if name in self.pos.get(other, ()):
                return self.other(other, name, wl_row)
        raise KeyError(name)


def column_templates(own: dict[str, int], cols: tuple, base_ref: Callable[[str, int], str]) -> list:
    """One :class:`FormulaTemplate` per derived column of a block.

    An argument resolves to: a literal; ``@name`` -> ``base_ref(name, row)``; a column of
    the block (``own``, except the column itself) in the same row; a named value of the
    Constants sheet; else ``base_ref(name, row)`` (Resolved/Results of the row's
    workload, or the Explorer's input cells).
    """
    texts, keys = [], []
    for c in cols:
        def ref(a, col=c.name):
            if isinstance(a, sheets.Lit):
                return a.xl
            if a.startswith("@"):
                return base_ref(a[1:], WL_ROW)
            if a in own and a != col:
                return cell(ROW, own[a], col_abs=True)
            if a in sheets.NAMED_VALUES:
                return sheets.NAMED_VALUES[a][0]
            return base_ref(a, WL_ROW)

        refs = [ref(a) for a in c.args]
        texts.append(c.func.xl(*refs))
        term = getattr(c.func, "xl_term", None)
        keys.append(None if c.text else term(*refs) if term else texts[-1])
    # a formula refers to a same-row column wherever it would repeat that column's text (shared_terms)
    cells = [cell(ROW, own[c.name], col_abs=True) if c.name in own else None for c in cols]
    keys = [k if r is not None else None for k, r in zip(keys, cells)]
    return [FormulaTemplate(t) for t in share_terms(texts, keys, cells)]


def write_rows(ws, fm: Formats, first_row: int, own: dict[str, int], cols: tuple, frame,
               base_ref: Callable[[str, int], str], wl_rows=None, sheet_rows=None) -> None:
    """Write the derived columns ``cols`` of ``frame`` row by row from sheet row
    ``first_row``; ``wl_rows[i]`` is the Resolved/Results row of row i's workload; ``sheet_rows[i]``
    (default ``i``) places row i at sheet row ``first_row + sheet_rows[i]`` (rows left out stay empty)."""
    tmpls = column_templates(own, cols, base_ref)
    jobs = [(own[c.name], t, fm("calc", c.fmt), values_list(frame[c.name].to_numpy(), c.text))
            for c, t in zip(cols, tmpls)]
    n = len(frame)
    wl = range(1, n + 1) if wl_rows is None else wl_rows
    at = range(n) if sheet_rows is None else sheet_rows
    write = ws.write_vetted
    for i in range(n):
        r, w = first_row + at[i], wl[i]
        for j, t, fmt, vals in jobs:
            write(r, j, t.fill(r + 1, w + 1), fmt, vals[i])


@dataclass
class Chunks:
    """A long table cut into sheets of at most MAX_DATA_ROWS rows, on workload boundaries."""

    base: str
    k: int          # rows per workload
    total: int      # rows in all
    per_sheet: int  # rows per sheet

    @classmethod
    def of(cls, base: str, k: int, total: int, max_rows: int | None = None) -> "Chunks":
        max_rows = MAX_DATA_ROWS if max_rows is None else max_rows
        per = (max_rows // k) * k
        if per == 0:
            raise ValueError(f"{base}: {k} rows per workload exceed a sheet")
        return cls(base, k, total, per)

    def name(self, idx: int) -> str:
        return self.base if idx == 0 else f"{self.base}_{idx + 1}"

    def where(self, i: int) -> tuple[str, int]:
        """Sheet name and sheet row of global data row i."""
        return self.name(i // self.per_sheet), i % self.per_sheet + 1

    def sheets(self) -> list[tuple[str, int, int]]:
        """(name, first global row, rows) of each sheet."""
        out = []
        for idx, start in enumerate(range(0, max(self.total, 1), self.per_sheet)):
            out.append((self.name(idx), start, min(self.per_sheet, self.total - start)))
        return out


TORNADO_COLS = ("workload", "driver", "base_value", "low_value", "high_value", "tpm_base", "tpm_low",
                "tpm_high", "swing", "rank", "ttft_load_base", "ttft_load_low", "ttft_load_high")
