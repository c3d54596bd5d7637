"""The one maker of cell references, defined names and small formula text (issue 21 item 3).

Every ``Sheet!A1`` reference, every defined name and every range the planner writes into a
formula, a chart series or a data validation is built here, so a sheet name with a space or
a quote is quoted the same way everywhere (``'My Sheet'!$B$2``, XlsxWriter's
``quote_sheetname``) and a renamed prefix changes in one place. tests/test_one_maker.py
rejects glued references, ``quote_sheetname`` calls and literal defined names elsewhere.

Rows and columns are 0-based, as XlsxWriter's ``write_*`` (row 0 is Excel row 1), except
:func:`place`, which takes the Excel row number an input table stores.

>>> cell(2, 1), cell(2, 1, True, True), cell_range(1, 2, 9, 2)
('B3', '$B$3', '$C$2:$C$10')
>>> sheet_ref("Settings", 2, 1, True, True), sheet_ref("Fleet By Period", 2, 1)
('Settings!$B$3', "'Fleet By Period'!$B3")
>>> sheet_range("Hit_Curve", 4, 2, 6, 2), whole_column("Hit_Curve", 2)
('Hit_Curve!$C$5:$C$7', 'Hit_Curve!$C:$C')
>>> col_range("Results", 3, 5), defined_name("Results", "gpus_needed"), defined_name("Settings", "hours_per_month")
('Results!$D$2:$D$6', 'results_gpus_needed', 's_hours_per_month')
>>> place("Workloads", 7, 9), place_at("Workloads", "A1:B2")
('Workloads!J7', 'Workloads!A1:B2')
"""

from __future__ import annotations

import importlib
import re


def _lazy(module: str, name: str):
    """``module.name``, imported at its first call (then the module's global is the function itself).

    openpyxl and XlsxWriter cost about 0.25 s of CPU and 40 MB to import; a trace read
    (planner.traffic, which reaches this module through planner.core.places) needs neither
    (issue 19; tests/test_trace_import_weight.py)."""

    def first_call(*args, **kwargs):
        fn = getattr(importlib.import_module(module), name)
        globals()[name] = fn
        return fn(*args, **kwargs)

    first_call.__name__ = first_call.__qualname__ = name
    return first_call


get_column_letter = _lazy("openpyxl.utils", "get_column_letter")
quote_sheetname = _lazy("xlsxwriter.utility", "quote_sheetname")
xl_col_to_name = _lazy("xlsxwriter.utility", "xl_col_to_name")
xl_range = _lazy("xlsxwriter.utility", "xl_range")
xl_range_abs = _lazy("xlsxwriter.utility", "xl_range_abs")
xl_rowcol_to_cell = _lazy("xlsxwriter.utility", "xl_rowcol_to_cell")


# --------------------------------------------------------------------------- row slots
class RowSlot:
    """A symbolic row of a formula template: a reference made with a slot in place of a row
    number (``cell(ROW, 1)``) holds a marker, and :class:`RowTemplate` turns the marked text
    into a pattern filled with the real row numbers per cell. The marker is a character of
    Unicode's private use area (U+E000 + the slot's number), which no formula of the planner
    otherwise contains (RowTemplate refuses text with a stray one)."""

    __slots__ = ("index", "marker")

    def __init__(self, index: int):
        if not 0 <= index < _SLOT_SPAN:
            raise ValueError(f"row slot {index} outside 0..{_SLOT_SPAN - 1}")
        self.index = index
        self.marker = chr(_SLOT_BASE + index)

    def __repr__(self) -> str:
        return f"RowSlot({self.index})"


_SLOT_BASE, _SLOT_SPAN = 0xE000, 16
ROW_HOLE = "[\\ue000-\\ue00f]"  # regular-expression class of a row slot's marker
_SLOT_CHARS = re.compile(ROW_HOLE)
ROW = RowSlot(0)     # the cell's own row
WL_ROW = RowSlot(1)  # the row of the cell's workload in Resolved/Results


class RowTemplate:
    """Formula text with row slots, filled per cell: ``fill(n0, n1, ...)`` puts Excel row
    number ``n_i`` (1-based) where slot ``i`` was.

    >>> t = RowTemplate("=" + cell(ROW, 0, col_abs=True) + "*" + sheet_ref("Resolved", WL_ROW, 1) + "+{1}")
    >>> t.fill(5, 10), t.slots
    ('=$A5*Resolved!$B10+{1}', (0, 1))
    """

    __slots__ = ("text", "slots", "fill")

    def __init__(self, text: str):
        self.text = text
        slots, pattern = [], []
        last = 0
        for m in _SLOT_CHARS.finditer(text):
            pattern.append(text[last:m.start()].replace("{", "{{").replace("}", "}}"))
            i = ord(m.group()) - _SLOT_BASE
            pattern.append("{%d}" % i)
            slots.append(i)
            last = m.end()
        pattern.append(text[last:].replace("{", "{{").replace("}", "}}"))
        self.slots = tuple(sorted(set(slots)))
        self.fill = "".join(pattern).format  # the str.format of the compiled pattern: one call per cell


# --------------------------------------------------------------------------- cells and ranges
def cell(row, col: int, row_abs: bool = False, col_abs: bool = False) -> str:
    """A1 text of a cell on the same sheet: ``cell(2, 1)`` -> ``B3``, ``cell(2, 1, True, True)`` -> ``$B$3``;
    ``row`` may be a :class:`RowSlot` (a template's row hole)."""
    if isinstance(row, RowSlot):
        return ("$" if col_abs else "") + xl_col_to_name(col) + ("$" if row_abs else "") + row.marker
    return xl_rowcol_to_cell(row, col, row_abs, col_abs)


def cell_range(r0, c0: int, r1, c1: int, absolute: bool = True) -> str:
    """A1 text of a range on the same sheet, absolute by default: ``$C$2:$C$10`` (one cell: ``$C$2``,
    as XlsxWriter's ``xl_range``); rows may be :class:`RowSlot` s."""
    if isinstance(r0, RowSlot) or isinstance(r1, RowSlot):
        return cell(r0, c0, absolute, absolute) + ":" + cell(r1, c1, absolute, absolute)
    return (xl_range_abs if absolute else xl_range)(r0, c0, r1, c1)


def qualify(sheet: str, a1: str) -> str:
    """``a1`` (a cell or range text) on ``sheet``, the name quoted when it needs quotes; the one
    place a sheet name and ``!`` are joined."""
    return f"{quote_sheetname(sheet)}!{a1}"


def sheet_ref(sheet: str, row, col: int, row_abs: bool = False, col_abs: bool = True) -> str:
    """A cell on another sheet, column absolute by default: ``Resolved!$B3``."""
    return qualify(sheet, cell(row, col, row_abs, col_abs))


def sheet_range(sheet: str, r0, c0: int, r1, c1: int, absolute: bool = True) -> str:
    """A range on another sheet, absolute by default: ``Hit_Curve!$C$5:$C$7``."""
    return qualify(sheet, cell_range(r0, c0, r1, c1, absolute))


def whole_column(sheet: str, col: int) -> str:
    """A whole column of another sheet: ``Hit_Curve!$C:$C``."""
    letter = get_column_letter(col + 1)
    return qualify(sheet, f"${letter}:${letter}")


def col_range(sheet: str, col: int, n: int) -> str:
    """Absolute range of a table column: data rows 2..n+1."""
    return sheet_range(sheet, 1, col, max(n, 1), col)


# --------------------------------------------------------------------------- places in messages
def place(sheet: str, excel_row: int, col: int) -> str:
    """The place of an input cell in a message, ``Workloads!J7``: ``excel_row`` is the Excel
    row number (1-based, as an input table stores it), ``col`` the 0-based column. The sheet
    name is not quoted: a person reads it (the reader parses it back, planner.inputs.places)."""
    return f"{sheet}!{get_column_letter(col + 1)}{excel_row}"


def place_at(sheet: str, coord: str) -> str:
    """The place of a cell or range given as A1 text, in a message: ``Workloads!A1:B2``."""
    return f"{sheet}!{coord}"


# --------------------------------------------------------------------------- defined names
_PREFIX = {"Models": "models_", "GPUs": "gpus_", "Workloads": "wl_", "Resolved": "res_", "Results": "results_",
           "Settings": "s_", "Defaults": "d_", "Constants": "c_", "Explorer": "explorer_", "Checks": ""}


def defined_name(kind: str, key: str) -> str:
    """The Excel defined name of ``key`` in ``kind``: a table column (Models, GPUs, Workloads,
    Resolved, Results: ``results_gpus_needed``), a Settings value (``s_hours_per_month``), a
    default (``d_batch``), a constant (``c_bytes_per_gib``) or a single cell (Explorer
    ``explorer_workload``, Checks ``master_check``)."""
    return _PREFIX[kind] + key


def range_name(sheet: str, name: str) -> str:
    """The defined name of a table column (:func:`defined_name` for a table sheet)."""
    if sheet not in ("Models", "GPUs", "Workloads", "Resolved", "Results"):
        raise KeyError(sheet)
    return defined_name(sheet, name)


MASTER_CHECK = defined_name("Checks", "master_check")
EXPLORER_WORKLOAD = defined_name("Explorer", "workload")


def setting_name(key: str) -> str:
    """The defined name of a Settings value cell: ``s_<key>``."""
    return defined_name("Settings", key)


# --------------------------------------------------------------------------- formula text
def with_currency(text: str, currency: str | None) -> str:
    """A header or unit with the placeholder unit ``currency`` replaced by the plan's currency
    (Settings ``currency``): ``cost_per_mtok_delivered [currency/Mtok]`` ->
    ``cost_per_mtok_delivered [USD/Mtok]``. Blank currency: the text unchanged. The reader
    drops a bracketed unit from a header, so the output stays a valid input."""
    cur = str(currency or "").strip()
    if not cur:
        return text
    return re.sub(r"\bcurrency(?=/|\])", lambda _m: cur, text)


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
