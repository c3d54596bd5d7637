"""Declared aggregations: the columns of a per-group finance table (the ``Fleet`` sheet: one
row per GPU type, then ``Total``), each declared once, the way ``Out`` declares a Results
column (planner.plan.columns). One :class:`Agg` gives both the Python value of its cells
(:func:`planner.finance.fleet.fleet_table`, :func:`planner.finance.periods.by_period`) and
their Excel formula (:func:`planner.workbook.fleet_sheets.write_fleet`,
:func:`planner.workbook.periods_sheet.write_by_period`):

- ``sum_of=(sheet, column)``: the sum of a Results/Resolved column over the workloads of
  the group (Python: a NaN-skipping sum; Excel: ``SUMIFS`` over the defined names);
- ``priced=True``: blank for a GPU type without ``hourly_cost`` (Excel: ``IF(ISNUMBER(price), ...)``);
- ``scale="@key"``: the sum times a Settings value (a cost per hour summed, per month);
- ``twin=f, args=(...)``: an equation of :mod:`planner.equations` applied to the row's own
  columns and Settings values (``"@hours_per_month"``), its numpy function and its Excel twin;
- ``total``: the Total row, ``"sum"`` or ``"priced"`` (the priced types only, blank when none is).

Adding a column is adding one declaration: the sheet, its stored values and its formulas
follow.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from planner.core.refs import range_name, setting_name
from planner.equations import tables as tb


def _f(x) -> np.ndarray:
    return pd.to_numeric(pd.Series(x, dtype=object), errors="coerce").to_numpy(dtype=float)


def _nansum(x: np.ndarray) -> float:
    return float(np.nansum(x)) if len(x) else 0.0


priced_sum = tb.priced_total  # sum of the priced entries; NaN when none is priced (a blank, not a 0)


@dataclass(frozen=True)
class GroupCell:
    """Where one group row's formulas look (built by the sheet writer): ``key`` the row's own
    key cell (its GPU name), ``key_source`` the input cell the key is read from, ``price`` the
    group's hourly_cost cell, ``me(name)`` the row's own cell of column ``name``; ``source(sheet,
    column)`` the range summed (default: the column's defined name) and ``criteria`` the SUMIFS
    criteria, pairs ``(range, key cell)`` (default: the ``by`` column's defined name equal to ``key``)."""

    key: str
    key_source: str
    price: str
    me: Callable[[str], str]
    source: Callable[[str, str], str] | None = None
    criteria: tuple[tuple[str, str], ...] | None = None


@dataclass(frozen=True)
class Agg:
    name: str
    sum_of: tuple[str, str] | None = None
    priced: bool = False
    twin: Callable | None = None   # an excel_twin equation
    args: tuple[str, ...] = ()
    total: str | None = "sum"      # "sum", "priced", or None (the key column)
    by: str = "gpu"
    scale: str | None = None       # "@key": the sum times Settings key

    # ----------------------------------------------------------------- Python
    def value(self, frames: dict, settings: dict, on: np.ndarray, price: float, row: dict) -> float:
        """The group's value: ``frames`` the summed sheets' frames by name, ``on`` marks the
        group's rows, ``row`` holds its columns so far."""
        if self.sum_of is not None:
            sheet, col = self.sum_of
            v = _nansum(_f(frames[sheet][col])[on])
            if self.priced and np.isnan(price):
                v = float("nan")
            if self.scale is not None:
                v = float(np.asarray(v, dtype=float) * float(settings[self.scale[1:]]))
            return v
        if self.twin is not None:
            return float(self.twin(*(float(settings[a[1:]]) if a.startswith("@") else row[a] for a in self.args)))
        raise ValueError(f"{self.name}: neither sum_of nor twin")

    def total_value(self, column: pd.Series) -> float:
        return priced_sum(column) if self.total == "priced" else float(column.sum())

    # ----------------------------------------------------------------- Excel
    def formula(self, at: GroupCell) -> str:
        """The formula (without ``=``) of this column in a group row (the twins of
        :mod:`planner.equations.tables`)."""
        if self.total is None:
            return at.key_source
        if self.sum_of is not None:
            sheet, col = self.sum_of
            rng = at.source(sheet, col) if at.source else range_name(sheet, col)
            pairs = at.criteria or ((range_name(sheet, self.by), at.key),)
            f = tb.sum_where_all.xl(rng, *(x for pair in pairs for x in pair))
            factor = setting_name(self.scale[1:]) if self.scale is not None else None
            if self.priced:
                return tb.priced.xl(at.price, f) if factor is None else tb.priced_scaled.xl(at.price, f, factor)
            return f if factor is None else tb.times.xl(f, factor)
        return self.twin.xl(*(setting_name(a[1:]) if a.startswith("@") else at.me(a) for a in self.args))

    def total_formula(self, rng: str) -> str:
        """The formula of the Total row over the group rows ``rng``."""
        return tb.priced_total.xl(rng) if self.total == "priced" else tb.total.xl(rng)
