"""The Checks sheet: each check a live formula counting offending rows, with its Python count.

Errors (the model cannot be trusted) feed the master check; warnings are listed apart.
The Python counts are what the planner found when it wrote the file; the formulas
recount after any edit of the input sheets.
"""

from __future__ import annotations

from dataclasses import dataclass


from planner.equations import tables as tb
from planner.core.refs import MASTER_CHECK, cell, cell_range, sheet_ref
from planner.equations import checks as ck
from planner.plan.check_rules import RULES, Where


@dataclass(frozen=True)
class Check:
    name: str
    kind: str         # "error" or "warning"
    description: str
    formula: str      # Excel, without "="; counts offending rows
    count: int        # the same count in Python
    detail: str = ""  # optional array formula (without "=") naming the first offending row
    detail_value: str = ""  # its value when the planner ran (what a viewer that does not recalculate shows)


@dataclass
class CheckSheet:
    checks: list[Check]
    warnings: list

    def write(self, wb, ws, fm) -> None:
        first, last = 5, 5 + len(self.checks) - 1
        kinds = cell_range(first, 1, last, 1)
        counts = cell_range(first, 2, last, 2)
        errors = sum(c.count for c in self.checks if c.kind == "error")
        warns = sum(c.count for c in self.checks if c.kind == "warning")
        ws.set_column(0, 0, NAME_WIDTH)
        ws.set_column(1, 1, 9)
        ws.set_column(2, 2, 11)
        ws.set_column(3, 3, 9)
        ws.set_column(4, 4, TEXT_WIDTH)
        ws.write_string(0, 0, "Master check", fm("title"))
        ws.write_formula(0, 1, "=" + tb.master_status.xl(kinds, counts),
                         fm("ok" if errors == 0 else "bad"), "OK" if errors == 0 else "ERROR")
        wb.define_name(MASTER_CHECK, "=" + sheet_ref("Checks", 0, 1, True, True))
        ws.write_string(1, 0, "Rows flagged by the warning checks", fm("title"))
        ws.write_formula(1, 1, "=" + tb.kind_total.xl(kinds, counts, '"warning"'), None, warns)
        # every warning of the run (calibration and estimate warnings too), listed at the bottom
        ws.write_string(1, 3, f"Warnings when the planner ran: {len(self.warnings)} (listed below the checks)",
                        fm("ok" if not self.warnings else "bad"))
        ws.write_string(2, 0, "The master check is OK when every error check finds 0 rows. Each count "
                              "recalculates from the input sheets; edit them and recalculate.", fm("note"))
        ws.set_column(5, 5, NAME_WIDTH)
        for j, h in enumerate(("check", "kind", "rows found", "status", "what it checks", "first row in question")):
            ws.write_string(4, j, h, fm("header"))
        ws.set_row(4, 18)
        for i, c in enumerate(self.checks):
            r = first + i
            lines = max(wrapped_lines(c.name, NAME_WIDTH), wrapped_lines(c.description, TEXT_WIDTH))
            if lines > 1:
                ws.set_row(r, 15 * lines)
            ws.write_string(r, 0, c.name, fm("wrap"))
            ws.write_string(r, 1, c.kind, fm("wrap"))
            # an array formula: every engine (Excel, LibreOffice, Gnumeric) then evaluates the
            # functions applied to ranges inside SUMPRODUCT element by element
            ws.write_array_formula(r, 2, r, 2, "{=" + c.formula + "}", fm("wrap"), c.count)
            cnt = cell(r, 2)
            ws.write_formula(r, 3, "=" + tb.check_status.xl(cnt, cell(r, 1)), fm("wrap"),
                             tb.check_status(c.count, c.kind))
            ws.write_string(r, 4, c.description, fm("wrap"))
            if c.detail:
                ws.write_array_formula(r, 5, r, 5, "{=" + c.detail + "}", fm("wrap"), c.detail_value)
        ws.conditional_format(first, 3, last, 3, {"type": "cell", "criteria": "==", "value": '"OK"',
                                                  "format": fm("ok")})
        ws.conditional_format(first, 3, last, 3, {"type": "cell", "criteria": "!=", "value": '"OK"',
                                                  "format": fm("bad")})
        r = last + 2
        ws.write_string(r, 0, f"Warnings found when the planner ran ({len(self.warnings)})", fm("title"))
        if self.warnings:
            ws.write_string(r + 1, 0, "where", fm("header"))
            ws.merge_range(r + 1, 1, r + 1, 4, "warning", fm("header"))
        # printed: A:E (the "first row in question" column is for the screen)
        ws.print_area(0, 0, r + 1 + len(self.warnings), 4)
        for i, w in enumerate(self.warnings):  # the message over columns B:E, wrapped
            rr = r + 2 + i
            width = 9 + 11 + 9 + TEXT_WIDTH
            lines = max(wrapped_lines(w.message, width), wrapped_lines(w.place, NAME_WIDTH))
            if lines > 1:
                ws.set_row(rr, 15 * lines)
            ws.write_string(rr, 0, w.place, fm("wrap"))
            ws.merge_range(rr, 1, rr, 4, w.message, fm("wrap"))


NAME_WIDTH, TEXT_WIDTH = 34, 62  # columns of the check names and of the descriptions [characters]


def wrapped_lines(text: str, width: float) -> int:
    """Lines a wrapped cell of ``width`` characters needs for ``text`` (word by word), so the
    row can be given its height up front (rows are written once, in constant_memory mode)."""
    lines, used = 1, 0
    for word in str(text).split():
        need = len(word) + (1 if used else 0)
        if used and used + need > width * 1.1:  # text is narrower than the digit width
            lines, used = lines + 1, len(word)
        else:
            used += need
    return lines


def checks_for(plan, layout) -> CheckSheet:
    """The Checks rows of ``plan``: every rule of :data:`planner.plan.check_rules.RULES`, its
    Python count and its Excel formula from the one declaration."""
    where = Where.of(plan, layout)
    checks = [Check(r.name, r.kind, r.description, r.formula(where), int(r.count(plan)),
                    r.first(where) if r.first else "",
                    _first_value(plan, r.first_mask(plan)) if r.first_mask else "")
              for r in RULES]
    return CheckSheet(checks, plan.warnings)


def _first_value(plan, mask) -> str:
    """The value of a first-row formula (planner.plan.check_rules.first_row_xl) when the planner ran."""
    return ck.first_row(mask, list(plan.resolved["workload"]))
