"""The Checks sheet's counts, each a small function over a column's cells beside its Excel twin (as
in :mod:`planner.equations.kvhit`): blank cells, cells that are not numbers, names that match no
row, repeated names, numbers outside a range, rows typed in after the run, and the text naming the
first row a mask marks.

planner.plan.check_rules declares each Checks row from these: the Python function gives the count
stored when the planner ran, the twin the formula a spreadsheet recounts live; tests/test_check_rules.py
recalculates a plan with offending rows in LibreOffice and compares the two.

Cell semantics (Excel's, which the Python side follows): a cell is a Python value as written to the
sheet: ``None``, NaN or ``""`` is blank (what COUNTBLANK counts); a number is an int or float that
is not NaN (a logical value is not one, as COUNT); MATCH(..., 0) and COUNTIF compare text without
regard to case; COUNTIF(">x") sees numbers only. Source: the Excel function reference (COUNTBLANK,
COUNT, COUNTA, COUNTIF, MATCH), https://support.microsoft.com/en-us/excel (functions by category).
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from planner.core.refs import exact_criteria, exact_text
from planner.equations.kvhit import excel_twin, xl_arg


# --------------------------------------------------------------------------- cell semantics
def is_blank(v) -> bool:
    """An empty cell as written (None, NaN) or an empty text: what COUNTBLANK counts."""
    return v is None or (isinstance(v, float) and math.isnan(v)) or (isinstance(v, str) and v == "")


def is_number(v) -> bool:
    """A cell COUNT counts: a number (a logical value is not one)."""
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_)) \
        and not math.isnan(float(v))


def _fold(v) -> str:
    return str(v).casefold()


# --------------------------------------------------------------------------- counts of a column
def count_blank(values):
    """Blank cells of a column (Excel ``COUNTBLANK``).

    Parameters
    ----------
    values : sequence of cell values [any]

    Returns
    -------
    int [count]
    """
    return sum(1 for v in values if is_blank(v))


@excel_twin(count_blank)
def _(values):
    return f"COUNTBLANK({values})"


def count_less(total, excluded):
    """A count less the cells it must not include (blank hit_targets that a trace fills).

    Parameters
    ----------
    total, excluded : int [count]

    Returns
    -------
    int [count]
    """
    return int(total) - int(excluded)


@excel_twin(count_less)
def _(total, excluded):
    return f"{total}-{excluded}"


def count_blank_beside(values, other):
    """Rows whose cell of ``values`` is blank while that of ``other`` is filled (a traced row's
    blank hit_target, which its trace fills).

    Parameters
    ----------
    values, other : sequences of cell values, one per row [any]

    Returns
    -------
    int [count]
    """
    return sum(1 for a, b in zip(values, other) if is_blank(a) and not is_blank(b))


@excel_twin(count_blank_beside)
def _(values, other):
    return f'SUMPRODUCT(({values}="")*({other}<>""))'


def count_not_number(values):
    """Filled cells that hold something other than a number: a text, a logical value (Excel
    ``COUNTA - COUNT``).

    Parameters
    ----------
    values : sequence of cell values [any]

    Returns
    -------
    int [count]
    """
    return sum(1 for v in values if not is_blank(v) and not is_number(v))


@excel_twin(count_not_number)
def _(values):
    return f"(COUNTA({values})-COUNT({values}))"


def count_unmatched(keys, names):
    """Cells of ``keys`` that name no entry of ``names`` (case ignored; a blank key matches nothing).

    Parameters
    ----------
    keys : sequence of cell values, the references [text]
    names : sequence of cell values, the names they must match [text]

    Returns
    -------
    int [count]
    """
    known = {_fold(v) for v in names if not is_blank(v)}
    return sum(1 for v in keys if is_blank(v) or _fold(v) not in known)


@excel_twin(count_unmatched)
def _(keys, names):
    return f"SUMPRODUCT(--ISNA(MATCH({exact_text(keys)},{names},0)))"


def count_repeated(keys):
    """Filled cells whose name appears more than once in the column (case ignored): both copies count.

    Parameters
    ----------
    keys : sequence of cell values [text]

    Returns
    -------
    int [count]
    """
    vals = [_fold(v) for v in keys if not is_blank(v)]
    seen = Counter(vals)
    return sum(1 for v in vals if seen[v] > 1)


@excel_twin(count_repeated)
def _(keys):
    return f"SUMPRODUCT(--(COUNTIF({keys},{exact_criteria(keys)})>1))"


def count_below(values, *, minimum, open_minimum=False):
    """Numbers below ``minimum`` (at it too, for an open minimum); other cells are not counted.

    Parameters
    ----------
    values : sequence of cell values [the column's unit]
    minimum : float, the schema's bound [the column's unit]
    open_minimum : bool, whether the minimum itself is outside (``isl > 0``)

    Returns
    -------
    int [count]
    """
    m = float(minimum)
    return sum(1 for v in values if is_number(v) and (float(v) <= m if open_minimum else float(v) < m))


@excel_twin(count_below)
def _(values, *, minimum, open_minimum=False):
    return f'COUNTIF({values},"{"<=" if open_minimum else "<"}{float(minimum):g}")'


def count_above(values, *, maximum):
    """Numbers above ``maximum``; other cells are not counted.

    Parameters
    ----------
    values : sequence of cell values [the column's unit]
    maximum : float, the schema's bound [the column's unit]

    Returns
    -------
    int [count]
    """
    m = float(maximum)
    return sum(1 for v in values if is_number(v) and float(v) > m)


@excel_twin(count_above)
def _(values, *, maximum):
    return f'COUNTIF({values},">{float(maximum):g}")'


def count_not_whole(values):
    """Numbers with a fractional part (a tensor-parallel size of 1.5).

    Parameters
    ----------
    values : sequence of cell values [count]

    Returns
    -------
    int [count]
    """
    return sum(1 for v in values if is_number(v) and float(v) % 1 != 0)


@excel_twin(count_not_whole)
def _(values):
    return f"SUMPRODUCT(--(MOD({values},1)<>0))"


def count_errors(values):
    """Cells that are a spreadsheet error: here the infinite results (a division by zero, which
    Excel shows as #DIV/0!); a blank result (NaN) is written blank on purpose and is no error.

    Parameters
    ----------
    values : array of numeric [any unit]

    Returns
    -------
    int [count]
    """
    x = np.asarray(values, dtype=float)
    return int(np.isinf(x).sum())


@excel_twin(count_errors)
def _(values):
    return f"SUMPRODUCT(--ISERROR({values}))"


def count_equal(values, *, text):
    """Cells equal to ``text`` (case ignored, as COUNTIF).

    Parameters
    ----------
    values : sequence of cell values [text]
    text : str

    Returns
    -------
    int [count]
    """
    t = _fold(text)
    return sum(1 for v in values if not is_blank(v) and _fold(v) == t)


def _count_equal_xl(values, *, text: str) -> str:
    return f'COUNTIF({xl_arg(values)},"{text}")'  # text: a criterion, not a cell (no xl_arg)


count_equal.xl = _count_equal_xl


def count_negative(values):
    """Numbers below 0 (Excel ``COUNTIF(range,"<0")``).

    Parameters
    ----------
    values : sequence of cell values [any unit]

    Returns
    -------
    int [count]
    """
    return count_below(values, minimum=0.0)


@excel_twin(count_negative)
def _(values):
    return count_below.xl(values, minimum=0.0)


def count_true(mask):
    """Rows a mask marks.

    Parameters
    ----------
    mask : array of bool, one per row

    Returns
    -------
    int [count]
    """
    return int(np.asarray(mask, dtype=bool).sum())


@excel_twin(count_true)
def _(mask):
    return f"SUMPRODUCT(--{mask})"


def count_beyond_table(keys, planned):
    """Names in a whole key column less the rows the run planned (rows typed in after it); a named
    range holds one row at least, so an empty table counts as one.

    Parameters
    ----------
    keys : sequence of cell values, the whole column below the header [text]
    planned : int, the rows the run planned [count]

    Returns
    -------
    int [count]
    """
    return sum(1 for v in keys if not is_blank(v)) - max(int(planned), 1)


def _count_beyond_table_xl(column: str, planned: str) -> str:
    """``column``: the whole key column; ``planned``: the range the run planned (``ROWS`` of it)."""
    return f"COUNTA({xl_arg(column)})-ROWS({xl_arg(planned)})"


count_beyond_table.xl = _count_beyond_table_xl


# --------------------------------------------------------------------------- masks of the rows
def typed_without(given, missing):
    """Rows where ``given`` holds a number and ``missing`` does not (tpm_measured without hit_measured).

    Parameters
    ----------
    given, missing : arrays of numeric, NaN when blank

    Returns
    -------
    array of bool
    """
    return ~np.isnan(np.asarray(given, dtype=float)) & np.isnan(np.asarray(missing, dtype=float))


@excel_twin(typed_without)
def _(given, missing):
    return f"(ISNUMBER({given})*NOT(ISNUMBER({missing})))"


def above(x, bound):
    """Rows where ``x`` exceeds ``bound`` (hit_target beyond the break-even h*).

    Parameters
    ----------
    x, bound : arrays of numeric, one per row [one unit]

    Returns
    -------
    array of bool
    """
    return np.asarray(x, dtype=float) > np.asarray(bound, dtype=float)


@excel_twin(above)
def _(x, bound):
    return f"({x}>{bound})"


def below(x, bound):
    """Rows where ``x`` is below ``bound`` (a negative HBM headroom).

    Parameters
    ----------
    x, bound : arrays of numeric, one per row [one unit]

    Returns
    -------
    array of bool
    """
    return np.asarray(x, dtype=float) < np.asarray(bound, dtype=float)


@excel_twin(below)
def _(x, bound):
    return f"({x}<{bound})"


def starts_with(values, *, prefix):
    """Rows whose text begins with ``prefix`` (``unreachable ...`` in Results.binding).

    Parameters
    ----------
    values : sequence of cell values [text]
    prefix : str

    Returns
    -------
    array of bool
    """
    return np.array([str(v).startswith(prefix) for v in values], dtype=bool)


def _starts_with_xl(values, *, prefix: str) -> str:
    return f'(LEFT({xl_arg(values)},{len(prefix)})="{prefix}")'


starts_with.xl = _starts_with_xl


# --------------------------------------------------------------------------- the first row in question
def first_row(mask, names, sheet="Workloads", first_row_number=2):
    """The text naming the first row a mask marks, ``Workloads row 7: chat-a`` (blank when none).

    Parameters
    ----------
    mask : array of bool, one per row
    names : sequence of the rows' names
    sheet : str, the sheet the rows are on
    first_row_number : int, the sheet row of the first entry (2: below the header)

    Returns
    -------
    str
    """
    hit = np.flatnonzero(np.asarray(mask, dtype=bool))
    if not len(hit):
        return ""
    i = int(hit[0])
    return f"{sheet} row {i + first_row_number}: {names[i]}"


def _first_row_xl(mask: str, names: str, sheet: str = "Workloads") -> str:
    """An array formula: ``mask`` an array over the rows, ``names`` their names (rows from 2)."""
    m = f"MATCH(1,--{xl_arg(mask)},0)"
    return f'IFERROR("{sheet} row "&(1+{m})&": "&INDEX({xl_arg(names)},{m}),"")'


first_row.xl = _first_row_xl


def first_equal_row(values, names, *, text, sheet="Workloads"):
    """The text naming the first row whose cell equals ``text`` (case ignored), blank when none.

    Parameters
    ----------
    values : sequence of cell values [text]
    text : str
    names : sequence of the rows' names
    sheet : str

    Returns
    -------
    str
    """
    t = _fold(text)
    return first_row([not is_blank(v) and _fold(v) == t for v in values], names, sheet)


def _first_equal_row_xl(values: str, names: str, *, text: str, sheet: str = "Workloads") -> str:
    m = f'MATCH("{text}",{xl_arg(values)},0)'
    return f'IFERROR("{sheet} row "&(1+{m})&": "&INDEX({xl_arg(names)},{m}),"")'


first_equal_row.xl = _first_equal_row_xl


def _first_unplanned_xl(scan: str, planned: str, sheet: str) -> str:
    """The first filled cell of ``scan`` (a key column and the rows below the table) whose name is
    not in ``planned``: ``Models row 9: new-model`` (blank when none). An array formula."""
    m = f'MATCH(1,({scan}<>"")*ISNA(MATCH({exact_text(scan)},{xl_arg(planned)},0)),0)'
    return f'IFERROR("{sheet} row "&(1+{m})&": "&INDEX({scan},{m}),"")'


first_unplanned_xl = _first_unplanned_xl
