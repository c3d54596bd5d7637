"""Names and references of table columns, shared by the writer and the Checks sheet."""

from __future__ import annotations

import re

from xlsxwriter.utility import quote_sheetname, xl_range_abs, xl_rowcol_to_cell


def sheet_ref(sheet: str, row: int, col: int, row_abs: bool = False, col_abs: bool = True) -> str:
    return f"{quote_sheetname(sheet)}!{xl_rowcol_to_cell(row, col, row_abs, col_abs)}"


def col_range(sheet: str, col: int, n: int) -> str:
    """Absolute range of a table column: data rows 2..n+1."""
    return f"{quote_sheetname(sheet)}!{xl_range_abs(1, col, max(n, 1), col)}"


def with_currency(text: str, currency: str | None) -> str:
    """A header or unit with the placeholder unit ``currency`` replaced by the plan's currency
    (Settings ``currency``): ``cost_per_mtok_delivered [currency/Mtok]`` ->
    ``cost_per_mtok_delivered [USD/Mtok]``. Blank currency: the text unchanged. The reader
    drops a bracketed unit from a header, so the output stays a valid input."""
    cur = str(currency or "").strip()
    if not cur:
        return text
    return re.sub(r"\bcurrency(?=/|\])", lambda _m: cur, text)


def range_name(sheet: str, name: str) -> str:
    prefix = {"Models": "models", "GPUs": "gpus", "Workloads": "wl", "Resolved": "res",
              "Results": "results"}[sheet]
    return f"{prefix}_{name}"


def exact_text(ref: str) -> str:
    """``ref`` with Excel's wildcard characters escaped, for MATCH(..., 0) and the criteria of
    COUNTIF/SUMIFS.

    MATCH with match type 0 and the *IF(S) functions treat ``*``, ``?`` and ``~`` in a text
    as wildcards (Excel and LibreOffice alike), so a GPU named ``H*-SXM`` would match
    ``H100-SXM``. ``~`` escapes each of them; ``~`` itself is escaped first.
    """
    return f'SUBSTITUTE(SUBSTITUTE(SUBSTITUTE({ref},"~","~~"),"*","~*"),"?","~?")'


def exact_criteria(ref: str) -> str:
    """Criteria of COUNTIF/SUMIFS matching cells equal to the text in ``ref`` (no wildcards,
    and a leading ``<``, ``>`` or ``=`` in the name is not read as a comparison)."""
    return f'"="&{exact_text(ref)}'
