"""Declared cells: a value and its formula side by side (issue 21 item 3).

A :class:`Both` is one cell of a finance or diff sheet as the planner declares it: the Python
value it stores and the formula text (without ``=``) that recomputes it live. Built from
references (:func:`ref`: a cell or range of the workbook with its Python value) and equations
(:func:`of`: a numpy function of :mod:`planner.equations` applied to declared arguments, its
Excel twin to their references), so the value and the formula cannot come from two hand
copies of the arithmetic. The sheet writers only place them (``ws.write_formula(r, c,
b.formula, style, stored(b.value))``).

>>> from planner.equations import tables as tb
>>> a, b = ref(3.0, "B2"), ref(1.0, "C2")
>>> s = of(tb.saved, a, b)
>>> float(s.value), s.formula
(2.0, '=IF(AND(ISNUMBER(B2),ISNUMBER(C2)),B2-C2,"")')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Both:
    """One declared cell: ``value`` (Python) and ``text`` (its formula, without ``=``)."""

    value: Any
    text: str

    @property
    def formula(self) -> str:
        return "=" + self.text


def ref(value: Any, text: str) -> Both:
    """A reference (a cell, a range, a defined name) and the Python value it holds there."""
    return Both(value, text)


_COMPUTE = object()


def of(twin: Callable, *args: Both, value: Any = _COMPUTE) -> Both:
    """``twin`` (an equation with an Excel twin, ``twin.xl``) applied to declared arguments: the
    value is ``twin(*values)``, the formula ``twin.xl(*texts)``. ``value`` gives the stored value
    when the planner computed it elsewhere already (the same quantity, e.g. a Fleet total)."""
    text = twin.xl(*(a.text for a in args))
    return Both(twin(*(a.value for a in args)) if value is _COMPUTE else value, text)
