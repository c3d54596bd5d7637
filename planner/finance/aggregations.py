"""Declared aggregations: the columns of a per-group finance table (the ``Fleet`` sheet: one
row per GPU type, then ``Total``), each declared once, the way ``Out`` declares a Results
column (planner.plan.columns). One :class:`Agg` gives both the Python value of its cells
(:func:`planner.finance.fleet.fleet_table`, :func:`planner.finance.periods.by_period`) and
their Excel formula (:func:`planner.workbook.fleet_sheets.write_fleet`,
:func:`planner.workbook.periods_sheet.write_by_period`):

- ``sum_of=(sheet, column)``: the sum of a Results/Resolved column over the workloads of
  the group: :func:`planner.equations.tables.sum_where_all` (Excel: ``SUMIFS`` over the defined
  names), one criterion per key column of the table (``total=None``: ``gpu``; ``period, gpu``);
- ``priced=True``: blank for a GPU type without ``hourly_cost`` (Excel: ``IF(ISNUMBER(price), ...)``);
- ``scale="@key"``: the sum times a Settings value (a cost per hour summed, per month);
- ``twin=f, args=(...)``: an equation of :mod:`planner.equations` applied to the row's own
  columns and Settings values (``"@hours_per_month"``), its numpy function and its Excel twin;
- ``total``: the Total row, ``"sum"`` or ``"priced"`` (the priced types only, blank when none is).

Adding a column is adding one declaration: the sheet, its stored values and its formulas
follow. Both sides walk the same :meth:`Agg._cell`: the Python side applies each equation's
numpy function to the values (every group row at once), the Excel side its twin to the
references, so a value and its formula cannot take two routes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from planner.core.arrays import coerced_floats
from planner.core.refs import range_name, setting_name
from planner.equations import tables as tb


to_floats = coerced_floats  # any values: NaN where no number (planner.core.arrays)


@dataclass(frozen=True)
class GroupCell:
    """Where one group row's formulas look (built by the sheet writer): ``key_source`` the input
    cell the row's key is read from (its GPU name), ``price`` the group's hourly_cost cell,
    ``me(name)`` the row's own cell of column ``name`` (its key cells too: the SUMIFS criteria);
    ``source(sheet, column)`` the range summed and matched (default: the column's defined name)."""

    key_source: str
    price: str
    me: Callable[[str], str]
    source: Callable[[str, str], str] | None = None


class _GroupValues:
    """The Python side of a table's group rows, all rows at once: a summed column is its values
    over the workloads (NaN when blank), a key is the group rows' keys, ``price`` the groups'
    hourly_cost, ``me(name)`` a column of the rows computed so far; ``apply`` the numpy function."""

    def __init__(self, frames: dict, settings: dict, price: np.ndarray, rows: dict):
        self.frames, self.settings, self.price, self.rows = frames, settings, price, rows

    def column(self, sheet: str, name: str) -> np.ndarray:
        return to_floats(self.frames[sheet][name])

    def key_column(self, sheet: str, name: str) -> np.ndarray:
        return self.frames[sheet][name].to_numpy(dtype=object)

    def setting(self, key: str) -> float:
        return float(self.settings[key])

    def me(self, name: str):
        return self.rows[name]

    @staticmethod
    def apply(twin: Callable, *args):
        return twin(*args)


class _Formulas:
    """The Excel side of one group row (a :class:`GroupCell`): the same calls, on references."""

    def __init__(self, at: GroupCell):
        self.at, self.price = at, at.price

    def column(self, sheet: str, name: str) -> str:
        return self.at.source(sheet, name) if self.at.source else range_name(sheet, name)

    key_column = column

    def setting(self, key: str) -> str:
        return setting_name(key)

    def me(self, name: str) -> str:
        return self.at.me(name)

    @staticmethod
    def apply(twin: Callable, *args) -> str:
        return twin.xl(*args)


@dataclass(frozen=True)
class Agg:
    name: str
    sum_of: tuple[str, str] | None = None
    priced: bool = False
    twin: Callable | None = None   # an excel_twin equation
    args: tuple[str, ...] = ()
    total: str | None = "sum"      # "sum", "priced", or None (a key column: the group's name)
    scale: str | None = None       # "@key": the sum times Settings key

    def _cell(self, ev, keys: tuple[str, ...]):
        """This column of a group row, once for both sides: ``ev`` gives the arguments (values or
        references) and applies the equations (numpy functions or their twins). ``keys``: the
        table's key columns, each a SUMIFS criterion (the summed sheet's column of that name
        equal to the row's key)."""
        if self.sum_of is not None:
            sheet, col = self.sum_of
            criteria = [x for k in keys for x in (ev.key_column(sheet, k), ev.me(k))]
            f = ev.apply(tb.sum_where_all, ev.column(sheet, col), *criteria)
            if self.scale is not None:
                factor = ev.setting(self.scale[1:])
                return ev.apply(tb.priced_scaled, ev.price, f, factor) if self.priced else ev.apply(tb.times, f, factor)
            return ev.apply(tb.priced, ev.price, f) if self.priced else f
        if self.twin is not None:
            return ev.apply(self.twin, *(ev.setting(a[1:]) if a.startswith("@") else ev.me(a) for a in self.args))
        raise ValueError(f"{self.name}: neither sum_of nor twin")

    # ----------------------------------------------------------------- Python
    def values(self, frames: dict, settings: dict, price: np.ndarray, rows: dict, keys: tuple[str, ...]) -> np.ndarray:
        """The column over every group row: ``frames`` the summed sheets' frames by name, ``price``
        the groups' hourly_cost, ``rows`` the columns so far (the keys first)."""
        out = self._cell(_GroupValues(frames, settings, price, rows), keys)
        return np.broadcast_to(np.asarray(out, dtype=float), (len(price),)).copy()

    def total_value(self, column) -> float:
        return float((tb.priced_total if self.total == "priced" else tb.total)(column))

    # ----------------------------------------------------------------- Excel
    def formula(self, at: GroupCell, keys: tuple[str, ...]) -> str:
        """The formula (without ``=``) of this column in a group row (the twins of
        :mod:`planner.equations.tables`)."""
        if self.total is None:
            return at.key_source
        return self._cell(_Formulas(at), keys)

    def total_formula(self, rng: str) -> str:
        """The formula of the Total row over the group rows ``rng``."""
        return tb.priced_total.xl(rng) if self.total == "priced" else tb.total.xl(rng)


def keys_of(table: tuple[Agg, ...]) -> tuple[str, ...]:
    """The key columns of a declared table (those without a total): its group rows' names."""
    return tuple(a.name for a in table if a.total is None)


def group_table(table: tuple[Agg, ...], frames: dict, settings: dict, keys: dict, price: np.ndarray) -> dict:
    """Every column of a declared table over its group rows (``keys``: the key columns' values,
    one per group row; ``price`` the groups' hourly_cost): Python values from the same
    declaration as the formulas (:meth:`Agg.formula`)."""
    rows = {k: np.asarray(v, dtype=object) for k, v in keys.items()}
    names = keys_of(table)
    for a in table:
        if a.total is not None:
            rows[a.name] = a.values(frames, settings, price, rows, names)
    return rows
