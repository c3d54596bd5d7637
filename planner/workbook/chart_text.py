"""Chart titles and series names stay text (issue 17, "text stays text").

XlsxWriter reads a chart name that *looks like* a cell reference as one: a title or series
name matching ``^=?[^!]+!\\$?[A-Z]+\\$?\\d+`` becomes ``<c:f>`` (a formula) instead of text
(``xlsxwriter/chart.py``, ``Chart._process_names``; documented for ``set_title`` and
``add_series``: "The name can also be a formula such as ``=Sheet1!$A$1``"). A workload named
``=cmd|' /C calc'!A0`` would put a DDE-shaped reference into the charts, and an innocent
``EMEA!A1 chat`` would break their titles.

The planner never passes a reference as a *string* (it uses the ``[sheet, row, col]`` list
form), so :func:`install` makes XlsxWriter treat every string name as text: the name is
written as rich text ``<a:t>`` exactly as given. Lists still become references. Installed
(once; the call is idempotent) by the functions that write charts (:func:`planner.workbook.writer.write_output`,
:func:`planner.diff.workbook.write_diff`).
"""

from __future__ import annotations

import xlsxwriter.chart

_MARK = "_planner_names_are_text"


def install() -> None:
    """Wrap ``Chart._process_names`` so that a string name is never read as a formula."""
    original = xlsxwriter.chart.Chart._process_names
    if getattr(original, _MARK, False):
        return

    def process_names(self, name, name_formula):
        if isinstance(name, str):
            return name, name_formula  # text as typed; a formula only from the list form
        return original(self, name, name_formula)

    setattr(process_names, _MARK, True)
    xlsxwriter.chart.Chart._process_names = process_names

