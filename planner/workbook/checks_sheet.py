"""The Checks sheet: each check a live formula counting offending rows, with its Python count.

Errors (the model cannot be trusted) feed the master check; warnings are listed apart.
The Python counts are what the planner found when it wrote the file; the formulas
recount after any edit of the input sheets.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


from planner.core import schema
from planner.core.refs import MASTER_CHECK, exact_criteria, exact_text, range_name, sheet_range, sheet_ref
from planner.core.schema import FRACTION, INT, NUMBER


@dataclass(frozen=True)
class Check:
    name: str
    kind: str         # "error" or "warning"
    description: str
    formula: str      # Excel, without "="; counts offending rows
    count: int        # the same count in Python
    detail: str = ""  # optional array formula (without "=") naming the first offending row
    detail_value: str = ""  # its value when the planner ran (what a viewer that does not recalculate shows)


def _n(name: str) -> str:
    """Named range of a table column (see names.range_name)."""
    sheet, col = name.split(".")
    return range_name(sheet, col)


def _sum(parts: list[str]) -> str:
    return "+".join(parts) if parts else "0"


@dataclass
class CheckSheet:
    checks: list[Check]
    warnings: list

    def write(self, wb, ws, fm) -> None:
        from xlsxwriter.utility import xl_range_abs, xl_rowcol_to_cell

        first, last = 5, 5 + len(self.checks) - 1
        kinds = xl_range_abs(first, 1, last, 1)
        counts = xl_range_abs(first, 2, last, 2)
        errors = sum(c.count for c in self.checks if c.kind == "error")
        warns = sum(c.count for c in self.checks if c.kind == "warning")
        ws.set_column(0, 0, NAME_WIDTH)
        ws.set_column(1, 1, 9)
        ws.set_column(2, 2, 11)
        ws.set_column(3, 3, 9)
        ws.set_column(4, 4, TEXT_WIDTH)
        ws.write_string(0, 0, "Master check", fm("title"))
        ws.write_formula(0, 1, f'=IF(IFERROR(SUMIF({kinds},"error",{counts}),1)=0,"OK","ERROR")',
                         fm("ok" if errors == 0 else "bad"), "OK" if errors == 0 else "ERROR")
        wb.define_name(MASTER_CHECK, "=" + sheet_ref("Checks", 0, 1, True, True))
        ws.write_string(1, 0, "Rows flagged by the warning checks", fm("title"))
        ws.write_formula(1, 1, f'=SUMIF({kinds},"warning",{counts})', None, warns)
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
            cnt = xl_rowcol_to_cell(r, 2)
            status = "OK" if c.count == 0 else ("FAIL" if c.kind == "error" else "WARN")
            ws.write_formula(r, 3, f'=IF({cnt}=0,"OK",IF({xl_rowcol_to_cell(r, 1)}="error","FAIL","WARN"))',
                             fm("wrap"), status)
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
    fl = plan.flags
    numeric = [c for c in schema.COLUMNS if c.kind in (INT, NUMBER, FRACTION) and c.sheet in schema.SHEETS]
    required_wl = [c for c in schema.columns("Workloads") if c.required is True]
    fractions = [c for c in schema.columns("Workloads") if c.kind == FRACTION]
    nonneg = [c for c in schema.columns("Workloads") if c.kind in (NUMBER, INT) and c.minimum is not None]
    checks = [
        Check("model references resolve", "error",
              "every Workloads.model names a row of Models",
              f"SUMPRODUCT(--ISNA(MATCH({exact_text(_n('Workloads.model'))},{_n('Models.model')},0)))", 0),
        Check("gpu references resolve", "error",
              "every Workloads.gpu names a row of GPUs",
              f"SUMPRODUCT(--ISNA(MATCH({exact_text(_n('Workloads.gpu'))},{_n('GPUs.gpu')},0)))", 0),
        Check("model names unique", "error", "no model name appears twice in Models",
              f"SUMPRODUCT(--(COUNTIF({_n('Models.model')},{exact_criteria(_n('Models.model'))})>1))", 0),
        Check("gpu names unique", "error", "no GPU name appears twice in GPUs",
              f"SUMPRODUCT(--(COUNTIF({_n('GPUs.gpu')},{exact_criteria(_n('GPUs.gpu'))})>1))", 0),
        Check("required workload cells filled", "error",
              "blank cells in required Workloads columns: " + ", ".join(c.name for c in required_wl),
              _sum([f"COUNTBLANK({_n('Workloads.' + c.name)})" for c in required_wl])
              # a traced row may leave hit_target blank (planner.inputs.kv_tiers): not counted
              + (f"-SUMPRODUCT(({_n('Workloads.hit_target')}=\"\")*({_n('Workloads.trace')}<>\"\"))"
                 if plan.input.kv_tiers is not None else ""), 0),
        Check("numeric cells hold numbers", "error",
              "text in numeric columns of Models, GPUs and Workloads",
              _sum([f"(COUNTA({_n(c.sheet + '.' + c.name)})-COUNT({_n(c.sheet + '.' + c.name)}))"
                    for c in numeric]), 0),
        Check("ratios within their range", "error",
              "Workloads ratios within the schema's range: " + ", ".join(f"{c.name} {c.range_text()}"
                                                                         for c in fractions),
              _sum([_outside(c) for c in fractions]), 0),
        Check("lengths and times not negative", "error",
              "Workloads lengths, times and TPM at or above their minimum",
              _sum([_outside(c, upper=False) for c in nonneg]), 0),
        Check("input length positive", "error", "isl above 0",
              _outside(schema.column("Workloads", "isl"), upper=False), 0),
        Check("tp is a whole number >= 1", "error", "tensor-parallel size is a positive integer",
              f'{_outside(schema.column("Workloads", "tp"), upper=False)}+SUMPRODUCT(--(MOD({_n("Workloads.tp")},1)<>0))', 0),
        Check("prefill times given", "error",
              "workloads whose t_attn0_ms / t_ffn0_ms are missing (breakdown_source 'missing': a typed time "
              "cleared after the run counts as 0); type them, or clear both and run the planner to calibrate "
              "or estimate them",
              f'COUNTIF({_n("Resolved.breakdown_source")},"missing")',
              int(np.sum(plan.resolved["breakdown_source"].to_numpy(dtype=object) == "missing")),
              f'IFERROR("Workloads row "&(1+MATCH("missing",{_n("Resolved.breakdown_source")},0))&": "&'
              f'INDEX({_n("Resolved.workload")},MATCH("missing",{_n("Resolved.breakdown_source")},0)),"")',
              _first_value(plan, plan.resolved["breakdown_source"].to_numpy(dtype=object) == "missing")),
        Check("results free of errors", "error", "no #DIV/0!, #N/A or other error in Results",
              f"SUMPRODUCT(--ISERROR({_results_block(layout)}))", 0),
        Check("KV fits in HBM", "warning", "rows whose weights + peak KV exceed device memory",
              f'COUNTIF({_n("Results.hbm_headroom_gib")},"<0")', int(fl.hbm_no_fit.sum()),
              _first_row(f'({_n("Results.hbm_headroom_gib")}<0)'), _first_value(plan, fl.hbm_no_fit)),
        Check("hit_target within break-even h*", "warning",
              "rows whose hit_target is beyond h*, where more hits make prefill slower",
              f"SUMPRODUCT(--({_n('Resolved.hit_target')}>{_n('Results.h_star')}))",
              int(fl.beyond_h_star.sum()), _first_row(f"({_n('Resolved.hit_target')}>{_n('Results.h_star')})"),
              _first_value(plan, fl.beyond_h_star)),
        Check("kv_heads and tp divide", "warning",
              "GQA rows where neither kv_heads/tp nor tp/kv_heads is whole (uneven head split)",
              f"SUMPRODUCT(({_n('Resolved.attention')}=\"gqa\")*(MOD({_n('Resolved.kv_heads')},"
              f"{_n('Resolved.tp')})<>0)*(MOD({_n('Resolved.tp')},{_n('Resolved.kv_heads')}"
              f"+({_n('Resolved.kv_heads')}=0))<>0))", int(fl.uneven_heads.sum())),
        Check("params_b given", "warning", "models without params_b: weights taken as 0 in the HBM check",
              f"COUNTBLANK({_n('Models.params_b')})", int(fl.params_missing.sum())),
        Check("tpm_measured has hit_measured", "warning",
              "rows with tpm_measured but no hit_measured (taken as measured at 0 hit)",
              f"SUMPRODUCT(ISNUMBER({_n('Workloads.tpm_measured')})*NOT(ISNUMBER({_n('Workloads.hit_measured')})))",
              int(fl.tpm_without_hit.sum()),
              _first_row(f"(ISNUMBER({_n('Workloads.tpm_measured')})*NOT(ISNUMBER({_n('Workloads.hit_measured')})))"),
              _first_value(plan, fl.tpm_without_hit)),
        Check("workloads have a demand_tpm", "warning",
              "rows without demand_tpm: they need no GPUs, so the fleet and its cost leave them out",
              f"COUNTBLANK({_n('Workloads.demand_tpm')})",
              sum(1 for r in plan.input.workloads.records if r.get("demand_tpm") is None)),
    ]
    first_warning = next(i for i, c in enumerate(checks) if c.kind == "warning")
    checks[first_warning:first_warning] = unplanned_rows(plan, layout)
    return CheckSheet(checks, plan.warnings)


UNPLANNED_SCAN = 1000  # rows below a table searched for the name of a row added after the run


def unplanned_rows(plan, layout) -> list[Check]:
    """Rows typed into the output's input sheets after the run are not planned: the live
    formulas reach only the rows the planner wrote. These error checks turn the master check
    to ERROR (never a silent OK) and name the first such row, until ``planner run`` is run on
    the edited workbook.

    Workloads: every name in column ``workload`` must have its Resolved row (an inserted or
    appended row has none). Models and GPUs: every name must lie inside the lookup range
    (a row inserted inside the table widens it and is found; an appended one is not).
    """
    from planner.core.refs import col_range

    out = []
    for sheet, key, planned, what in (("Workloads", "workload", range_name("Resolved", "workload"),
                                       "Workloads rows without a Resolved/Results row"),
                                      ("Models", "model", _n("Models.model"), "Models rows outside the lookup range"),
                                      ("GPUs", "gpu", _n("GPUs.gpu"), "GPUs rows outside the lookup range")):
        col = layout.pos[sheet][key]
        whole = f"{col_range(sheet, col, 1_048_575)}"
        n_rows = {"Workloads": layout.n, "Models": len(plan.models), "GPUs": len(plan.gpus)}[sheet]
        scan = col_range(sheet, col, n_rows + UNPLANNED_SCAN)
        first = (f'IFERROR("{sheet} row "&(1+MATCH(1,({scan}<>"")*ISNA(MATCH({exact_text(scan)},{planned},0)),0))'
                 f'&": "&INDEX({scan},MATCH(1,({scan}<>"")*ISNA(MATCH({exact_text(scan)},{planned},0)),0)),"")')
        out.append(Check(f"every {sheet} row planned", "error",
                         f"{what}: rows typed in after the planner ran are not in the results; "
                         f"run planner run on this workbook to plan them",
                         f"COUNTA({whole})-ROWS({planned})", 0, first))
    return out


def _first_row(mask: str) -> str:
    """Array formula naming the first workload whose ``mask`` (an array over the workload rows)
    is true: ``Workloads row 7: chat-a`` (blank when none), for the Checks' first-row column."""
    m = f"MATCH(1,--{mask},0)"
    return f'IFERROR("Workloads row "&(1+{m})&": "&INDEX({_n("Resolved.workload")},{m}),"")'


def _first_value(plan, mask) -> str:
    """The value of :func:`_first_row` when the planner ran."""
    hit = np.flatnonzero(np.asarray(mask, dtype=bool))
    if not len(hit):
        return ""
    i = int(hit[0])
    return f"Workloads row {i + 2}: {plan.resolved['workload'].iat[i]}"


def _outside(c, upper: bool = True) -> str:
    """COUNTIF of the Workloads cells of ``c`` outside its schema range (bounds from the schema,
    never copied by hand: an open minimum counts the minimum itself)."""
    rng = _n("Workloads." + c.name)
    parts = []
    if c.minimum is not None:
        parts.append(f'COUNTIF({rng},"{"<=" if c.min_open else "<"}{c.minimum:g}")')
    if upper and c.maximum is not None:
        parts.append(f'COUNTIF({rng},">{c.maximum:g}")')
    return "+".join(parts) or "0"


def _results_block(layout) -> str:
    return sheet_range("Results", 1, 0, max(layout.n, 1), len(layout.pos["Results"]) - 1)
