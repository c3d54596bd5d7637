"""Fast, exact formula writing for XlsxWriter.

XlsxWriter's ``Worksheet._prepare_formula`` runs some thirty regular-expression
substitutions on every formula to add the ``_xlfn.`` prefix to Excel 365 functions (about
85% of the time of ``write_formula``). The planner writes only classic functions, so
:class:`FastFormulaWorksheet` first asks one combined regular expression whether a formula
names any function that upstream would prefix, and only then takes the upstream path.
The result is the same string: ``tests/test_speed.py`` checks it against the upstream
method on every formula of the example output and on formulas that do need a prefix.
``_prepare_formula`` is private, so the XlsxWriter version range is pinned in
pyproject.toml (>=3.1,<4) and the behaviour relied on is tested.

:class:`FormulaTemplate` builds a column's formula once, with row slots in place of row
numbers (:class:`planner.core.refs.RowSlot`: the references come from planner.core.refs
through the model's formula builders), and fills in the real rows per cell.
"""

from __future__ import annotations

import functools
import re
from typing import Callable

from xlsxwriter.worksheet import CellFormulaTuple, Worksheet

from planner.core.refs import ROW, WL_ROW, RowTemplate

__all__ = ["ROW", "WL_ROW", "FastFormulaWorksheet", "FormulaTemplate", "RowBuffer", "needs_upstream"]

# every function name XlsxWriter 3.x prefixes with _xlfn. (dynamic arrays and, with
# use_future_functions, the 2010+ "future" functions): one set, looked up before any
# '(' so that names are recognised as function calls only.
_CALL = re.compile(r"[A-Z0-9_.]+\(")  # a run of the names' characters before a '(' (every name is such a run)
_WORD = re.compile(r"\w")


@functools.cache
def _upstream_set() -> frozenset[str]:
    r"""The function names upstream's ``_prepare_formula`` substitutes (``re.sub(r"\bNAME\(", ...)``),
    read from its source once; its one ``\S`` pattern (``\SINGLE\(``) is :func:`_names_upstream_call`'s
    INGLE( test."""
    import inspect

    src = inspect.getsource(Worksheet._prepare_formula)
    return frozenset(set(re.findall(r're\.sub\(\s*r"\\[bS]?([A-Z0-9_.]+)\\\(', src)) - {"INGLE"} | {"SINGLE"})


def _names_upstream_call(formula: str) -> bool:
    r"""Whether ``formula`` calls a name of :func:`_upstream_set` as upstream's patterns find it: at a word
    boundary (``\bIFS\(``, so SUMIFS( is not IFS(), that is where the name ends a run of name characters
    just before a '(' and starts the run after a non-word character or the formula's start, or just
    after a '.' of the run (every name starts with a letter); INGLE( anywhere. Set lookups, not the
    155-name alternation tried at every position of every formula."""
    if "INGLE(" in formula:
        return True
    names = _upstream_set()
    for m in _CALL.finditer(formula):
        s, tok = m.start(), m.group()[:-1]
        if tok in names and (s == 0 or not _WORD.match(formula[s - 1])):
            return True
        if "." in tok and any(tok[i - 1] == "." and tok[i:] in names for i in range(1, len(tok))):
            return True
    return False


def needs_upstream(formula: str) -> bool:
    """True when XlsxWriter's own preparation could change more than the leading '='."""
    return bool(_names_upstream_call(formula) or "_xlfn." in formula or formula.startswith("{")
                or formula.endswith("}"))


class FastFormulaWorksheet(Worksheet):
    """A Worksheet whose formula preparation skips the substitutions that cannot apply.

    ``write_formula`` checks each formula with one regular expression;
    :meth:`write_vetted` skips even that, and upstream's dynamic-array test, for formulas made
    from a template that was checked once (row numbers cannot add a function name).
    """

    def _prepare_formula(self, formula, expand_future_functions=False):
        if needs_upstream(formula):
            return super()._prepare_formula(formula, expand_future_functions)
        return formula[1:] if formula.startswith("=") else formula

    def _xml_formula_element(self, formula, result, attributes=[]) -> None:  # noqa: B006 - upstream's signature
        # XlsxWriter stores a text result that reads like an error ("#N/A") as an error value
        # (t="e"). The planner stores only what Python computed, and Python computes no error
        # values: such a result is text (a workload named "#N/A"), so it is stored as text.
        if ("t", "e") in attributes:
            attributes = [("t", "str") if a == ("t", "e") else a for a in attributes]
        return super()._xml_formula_element(formula, result, attributes)

    def write_vetted(self, row: int, col: int, formula: str, cell_format=None, value=0):
        """``_write_formula`` for a formula of a checked :class:`FormulaTemplate`: what upstream does
        with a formula that names no dynamic-array or future function and has no array braces (the
        template's check; every name upstream's dynamic-array test looks for is one of them:
        tests/test_speed.py), without running those tests again on each cell."""
        if self._check_dimensions(row, col):
            return -1
        if not formula:
            return self._write_formula(row, col, formula, cell_format, value)  # upstream's warning
        if self.constant_memory and row > self.previous_row:
            self._write_single_row(row)
        self.table[row][col] = CellFormulaTuple(formula[1:] if formula[0] == "=" else formula, cell_format, value)
        return 0


class FormulaTemplate(RowTemplate):
    """``=formula`` with row slots (:data:`ROW`, the own row, and :data:`WL_ROW`, the row of
    the workload, or any :class:`~planner.core.refs.RowSlot`) as holes; checked once to need
    nothing but the leading '=' removed (so cells may use ``write_vetted``).
    ``fill(own_row_number, wl_row_number, ...)`` takes Excel row numbers (1-based)."""

    __slots__ = ()

    def __init__(self, formula: str):
        if needs_upstream(formula):
            raise ValueError(f"formula needs XlsxWriter's future-function handling: {formula}")
        super().__init__("=" + formula)

    def __call__(self, row: int, wl_row: int = 0) -> str:
        """Formula for sheet row ``row`` (0-based) of workload row ``wl_row`` (0-based)."""
        return self.fill(row + 1, wl_row + 1)

    @classmethod
    def build(cls, make: Callable[[int, int], str]) -> "FormulaTemplate":
        """``make(own_row, wl_row)`` builds the formula text for the row slots."""
        return cls(make(ROW, WL_ROW))


class RowBuffer:
    """Collects cell writes of a small, freely laid-out sheet and writes them in row order,
    as XlsxWriter's constant_memory mode needs; everything else passes through."""

    _CELL_METHODS = ("write", "write_string", "write_number", "write_formula", "write_vetted", "write_blank", "write_boolean",
                     "write_datetime", "write_array_formula", "merge_range")

    def __init__(self, ws):
        self._ws = ws
        self._cells: list = []

    def __getattr__(self, name):
        if name in self._CELL_METHODS:
            def record(row, col, *args, **kwargs):
                self._cells.append((row, col, len(self._cells), name, args, kwargs))
            return record
        return getattr(self._ws, name)

    def flush(self) -> None:
        for row, col, _seq, name, args, kwargs in sorted(self._cells, key=lambda c: (c[0], c[1], c[2])):
            getattr(self._ws, name)(row, col, *args, **kwargs)
        self._cells.clear()
