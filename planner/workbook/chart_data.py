"""Cached values for chart series (issue 20, item 6).

The workbook is written in XlsxWriter's constant_memory mode, where XlsxWriter cannot read the
cells back to fill a chart's cache: every series had ``ptCount=0`` and text categories were
written as ``numRef``, so a viewer that draws from the cache (mail and file previews) showed
empty charts. Each chart site therefore passes the values it has just written (the same
numbers the cells store) as XlsxWriter's ``categories_data`` / ``values_data``
(https://xlsxwriter.readthedocs.io/chart.html, "add_series"; a list of strings is written as a
``strRef`` with a ``strCache``, numbers as a ``numCache``).
"""

from __future__ import annotations

import math
from typing import Iterable


def cached(values: Iterable) -> list:
    """Chart cache values: numbers as floats, blanks and NaN as None (a gap), text as str."""
    out = []
    for v in values:
        if v is None or (isinstance(v, str) and v == ""):
            out.append(None)
        elif isinstance(v, str):
            out.append(v)
        else:
            x = float(v)
            out.append(None if math.isnan(x) else x)
    return out


def texts(values: Iterable) -> list[str]:
    """Category labels as text (a ``strRef``), whatever the cells hold."""
    return ["" if v is None else str(v) for v in values]


def add_series(chart, options: dict, categories: Iterable | None = None, values: Iterable | None = None,
               text_categories: bool = False) -> None:
    """``chart.add_series(options)`` with the cached values of its ranges."""
    opts = dict(options)
    if categories is not None:
        opts["categories_data"] = texts(categories) if text_categories else cached(categories)
    if values is not None:
        opts["values_data"] = cached(values)
    chart.add_series(opts)
