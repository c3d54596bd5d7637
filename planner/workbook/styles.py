"""Cell styles and the small writing helpers every sheet uses: formats, one input value by
its type, stored values of a column, header rows, column widths, print set-up."""

from __future__ import annotations

import datetime as _dt
import math
from typing import Any

import numpy as np
import xlsxwriter

WB_OPTIONS = {"strings_to_formulas": False, "strings_to_numbers": False, "strings_to_urls": False,
              "nan_inf_to_errors": False}

STYLE = {
    "header": {"bold": True, "bg_color": "#D9E1F2", "border": 1, "border_color": "#8EA9DB",
               "text_wrap": True, "valign": "top"},
    "input": {"bg_color": "#FFF2CC", "font_color": "#1F4E79", "border": 1, "border_color": "#D9D9D9"},
    # an input cell filled from the model/GPU catalog, not typed (its comment names the source)
    "catalog": {"bg_color": "#E2EFDA", "font_color": "#375623", "italic": True, "border": 1,
                "border_color": "#D9D9D9"},
    "calc": {},
    "const": {"bg_color": "#EDEDED"},
    "title": {"bold": True, "font_size": 13},
    # a title wrapped within its (merged) cells, so it prints whole where it is not repeated
    "title_wrap": {"bold": True, "font_size": 13, "text_wrap": True, "valign": "top"},
    "ok": {"bold": True, "font_color": "#006100", "bg_color": "#C6EFCE"},
    "bad": {"bold": True, "font_color": "#9C0006", "bg_color": "#FFC7CE"},
    "note": {"italic": True, "font_color": "#595959"},
    # a note in the column beside a table: wrapped within the column, so it prints whole
    "side_note": {"italic": True, "font_color": "#595959", "text_wrap": True, "valign": "top"},
    "wrap": {"text_wrap": True, "valign": "top"},
}


class Formats:
    """Cached XlsxWriter formats by (style, number format)."""

    def __init__(self, wb: xlsxwriter.Workbook):
        self.wb = wb
        self._cache: dict[tuple[str, str | None, bool], Any] = {}
        self._key_of: dict[int, tuple[str, str | None]] = {}

    def __call__(self, style: str, num: str | None = None, quote: bool = False):
        key = (style, num, quote)
        if key not in self._cache:
            props = dict(STYLE[style])
            if num:
                props["num_format"] = num
            if quote:
                props["quote_prefix"] = True
            self._cache[key] = self.wb.add_format(props)
            self._key_of[id(self._cache[key])] = (style, num)
        return self._cache[key]

    def quoted(self, fmt):
        """``fmt`` with Excel's quotePrefix (the cell shows ``'`` in the formula bar): text that
        starts like a formula stays text when the cell is edited and Enter is pressed."""
        if fmt is None:
            if None not in self._cache:
                self._cache[None] = self.wb.add_format({"quote_prefix": True})
            return self._cache[None]
        key = self._key_of.get(id(fmt))
        return fmt if key is None else self(*key, quote=True)


def col_width(header: str, text: bool) -> float:
    """Width of a table column [characters]: the header wraps onto two lines (its row is 30 pt
    high), so the longest word or half the header, whichever is longer; text columns wider."""
    words = header.split() or [""]
    need = max(max(len(w) for w in words), math.ceil(len(header) / 2))
    return min(max(need + 2, 16 if text else 10), 44)


def fit_names(width: float, values, cap: int = 44) -> float:
    """A text column's width [characters]: ``width``, widened to the longest of ``values``
    (up to ``cap`` characters) so that names are read whole."""
    longest = max((len(str(v)) for v in values if v is not None), default=0)
    return max(width, min(longest + 2, cap))


FORMULA_PREFIXES = ("=", "+", "-", "@")  # what Excel reads as the start of a formula when a cell is typed


def write_cell(ws, row: int, col: int, value: Any, fmt, fm: "Formats | None" = None) -> None:
    """Write an input value by its type; text always as text (never a formula). With ``fm``,
    text that starts like a formula gets quotePrefix (:meth:`Formats.quoted`)."""
    if fm is not None and isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        fmt = fm.quoted(fmt)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        ws.write_blank(row, col, None, fmt)
    elif isinstance(value, bool):
        ws.write_boolean(row, col, value, fmt)
    elif isinstance(value, (int, float, np.integer, np.floating)):
        ws.write_number(row, col, float(value), fmt)
    elif isinstance(value, (_dt.datetime, _dt.date)):
        ws.write_datetime(row, col, value, fmt)
    else:
        ws.write_string(row, col, str(value), fmt)


def stored_value(x: Any, text: bool) -> Any:
    if text:
        return "" if x is None else str(x)
    x = float(x)
    if math.isinf(x):  # a target no instance count meets (planner.equations.queueing), as values_list
        return "unreachable"
    return "" if math.isnan(x) else x


def values_list(arr, text: bool) -> list:
    """Stored values of a column: text as str, NaN as '' (a blank result)."""
    if text:
        return ["" if v is None else str(v) for v in arr.tolist()]
    # inf: a target no instance count meets (planner.equations.queueing), written "unreachable" as its formula says
    return ["" if v != v else ("unreachable" if v in (np.inf, -np.inf) else v)
            for v in np.asarray(arr, dtype=float).tolist()]


WRAP = "wrap"  # a header row as high as its longest wrapped header (write_header's height)


def write_header(ws, fm: Formats, headers: list[str], widths: list[float], top: int = 0, left: int = 0,
                 freeze: bool | tuple[int, int] = True, height: float | str = 30) -> None:
    """The header row of a table at (``top``, ``left``): each header in the header style, its
    column ``widths[j]`` characters wide. ``height``: the row's height in points, or
    :data:`WRAP`, high enough for the longest wrapped header (its unit in brackets prints whole),
    at least two lines of 15 pt at the 11 pt font. ``freeze``: True freezes the panes below the row
    and right of its first column, a (row, column) pair freezes there, False nothing."""
    for j, h in enumerate(headers):
        ws.write_string(top, left + j, h, fm("header"))
        ws.set_column(left + j, left + j, widths[j])
    if height == WRAP:
        height = 15 * max(2, max((header_lines(h, w) for h, w in zip(headers, widths)), default=2))
    ws.set_row(top, height)
    if freeze is True:
        ws.freeze_panes(top + 1, left + 1)
    elif freeze:
        ws.freeze_panes(*freeze)


def header_lines(text: str, width: float) -> int:
    """Lines a wrapped bold header of ``text`` takes in a column ``width`` characters wide: words
    filled greedily, a word longer than the line broken (as Excel and LibreOffice break it). Bold
    text is about 10% wider than the width's digit characters, hence 0.9 x width per line."""
    per_line = max(int(width * 0.9), 1)
    lines, used = 1, 0
    for word in str(text).split():
        n = len(word)
        if used and used + 1 + n <= per_line:
            used += 1 + n
            continue
        if used:
            lines += 1
        lines += (n - 1) // per_line
        used = n - per_line * ((n - 1) // per_line)
    return lines
