"""Read and validate an input workbook (openpyxl, cached values, no macros).

The header rules of ``docs/model.md`` section 3: header row 1; names match case-insensitively, ignoring
surrounding spaces and a trailing unit in brackets or parentheses; extra columns are
kept; blank rows are skipped. Cells are read with openpyxl (not ``pandas.read_excel``,
which turns ``#DIV/0!`` into NaN silently). Every problem is collected and raised at once
as :class:`~planner.core.errors.InputError`.
"""

from __future__ import annotations

import errno
import hashlib
import io
import os
import zipfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

import openpyxl
from openpyxl.utils import get_column_letter, range_boundaries

from planner.core.names import and_more
from planner.inputs import catalog_fill as catalog

from planner.core import schema
from planner.core.errors import InputError, Problem
from planner.core.places import Place
from planner.inputs.container import SheetScan, check_container, require_defusedxml, scan_sheet, sheet_xml_paths
from planner.inputs.cells import parse_numbers, cell_value, normalise_header, parse_cell
from planner.inputs.checks import (check_gpus, check_keys, check_models, check_optional_refs, check_required,
                                   check_workloads)
from planner.core.schema import Column
from planner.inputs import typed_text as th
from planner.inputs import header_units


@dataclass
class Table:
    """One input sheet: canonical columns first, then the extra columns passed through."""

    sheet: str                        # sheet name as found in the workbook
    records: list[dict[str, Any]]     # parsed canonical values (None for blank) + extras
    rows: list[int]                   # Excel row of each record
    extras: list[str] = field(default_factory=list)  # headers of extra columns, in order
    positions: dict[str, int] = field(default_factory=dict)  # canonical column -> 0-based index
    # per record, the cells not typed in the sheet: column -> where the value came from
    # ("catalog: <entry> (<source>)"); empty when nothing was filled (see planner.catalog.lookup)
    filled: list[dict[str, str]] = field(default_factory=list)
    # (column, record index) of fraction cells typed as the plain number 1 (not 100% in a percent
    # cell): 1% may have been meant (planner.plan.trust warns)
    plain_ones: set[tuple[str, int]] = field(default_factory=set)
    # (column, record index) of Scenarios value cells typed as a percentage (a percent format, 10%
    # stored as 0.1): an add or multiply by one is warned (planner.plan.typed_checks)
    percent_cells: set[tuple[str, int]] = field(default_factory=set)
    # (place, message) said as warnings of the plan: a typed Measurements cell that differs from the
    # load-test file the row names (planner.inputs.measurement_files)
    warnings: list[tuple[str, str]] = field(default_factory=list)
    # (place of the header, header as typed, currency code) of price headers naming a currency
    # (``hourly_cost (EUR/h)``), held against Settings currency once the Settings are read
    currencies: list[tuple[Any, str, str]] = field(default_factory=list)
    # the workbook counts its serial days in Excel's 1904 date system (planner.inputs.period_labels)
    date1904: bool = False

    def column(self, name: str) -> list[Any]:
        return [r.get(name) for r in self.records]

    def __len__(self) -> int:
        return len(self.records)


@dataclass
class PlanInput:
    path: Path
    sha256: str
    models: Table
    gpus: Table
    workloads: Table
    settings: dict[str, Any]
    settings_extra: list[tuple[Any, Any]]
    notes: list[str] = field(default_factory=list)  # accepted with a remark (said once)
    optional: dict[str, Table] = field(default_factory=dict)  # Measurements, Demand, Scenarios when present
    kv_tiers: Any = None  # planner.inputs.kv_tiers.TierPlan of the traced workloads (set by planner.plan)
    setting_places: dict = field(default_factory=dict)  # Settings key -> the Place of its value cell

    def table(self, sheet: str) -> Table | None:
        """The table of an input sheet by its schema name (None: an optional sheet not given)."""
        return {"Models": self.models, "GPUs": self.gpus, "Workloads": self.workloads}.get(sheet) \
            or self.optional.get(sheet)


# old headers still read as their new column (sheet, old name) -> new name; both in one sheet is
# the "appears twice" problem. Measurements batch became concurrency (issue 16).
HEADER_ALIASES: dict[tuple[str, str], str] = {(schema.MEAS, "batch"): "concurrency"}


# --------------------------------------------------------------------------- sheets
def _find_sheet(wb, name: str):
    for ws_name in wb.sheetnames:
        if ws_name.strip().lower() == name.lower():
            return wb[ws_name]
    return None


def _read_table(ws, sheet: str, problems: list[Problem], scan: SheetScan | None = None,
                notes: list[str] | None = None) -> Table | None:
    cols = schema.columns(sheet)
    by_name = {c.name: c for c in cols}
    header = next(ws.iter_rows(min_row=1, max_row=1), None)
    if header is None or all(getattr(c, "value", None) in (None, "") for c in header):
        problems.append(Problem(Place.cell(ws.title, "A", 1), f"the sheet is empty: it needs a header row "
                                                  f"({', '.join(c.name for c in cols)})"))
        return None
    col_of: dict[str, int] = {}
    factors: dict[str, float] = {}  # column -> factor from its header's unit to the column's
    extras: list[tuple[int, str]] = []
    currencies: list[tuple[Any, str, str]] = []
    seen: dict[str, str] = {}
    for j, cell in enumerate(header):
        raw = getattr(cell, "value", None)
        if raw is None or str(raw).strip() == "":
            continue
        key = normalise_header(raw)
        coord = Place.cell(ws.title, j + 1, 1)
        key = HEADER_ALIASES.get((sheet, key), key)
        if key in seen:
            problems.append(Problem(coord, f"column {key!r} appears twice "
                                                           f"(also {seen[key]})"))
            continue
        seen[key] = f"{coord.column}{coord.row}"
        if key in by_name:
            col_of[key] = j
            factor, said, wrong = header_units.conversion(str(raw), by_name[key])
            if (code := header_units.header_currency(str(raw), by_name[key])) is not None:
                currencies.append((coord, str(raw).strip(), code))
            if wrong:
                problems.append(Problem(coord, wrong))
            elif factor != 1.0:
                factors[key] = factor
                if notes is not None:
                    notes.append(f"{coord}: {said}")
        else:
            extras.append((j, str(raw).strip()))
    required = [c.name for c in cols if c.required is True and c.name not in col_of]
    if len(required) >= 2 and (below := _header_below(ws, required)) is not None:
        # a title (or a units) row above the table: one problem, not one per column (red team 5)
        problems.append(Problem(Place.at_row(ws.title, below), f"holds the column names ({', '.join(required[:4])}"
                                f"{', ...' if len(required) > 4 else ''}): the header must be row 1; delete the "
                                f"row{'s' if below > 2 else ''} above it"))
        return None
    for where, msg in header_units.near_miss_headers(ws.title, cols, col_of, extras):
        problems.append(Problem(where, msg))
    for where, msg in header_units.foreign_headers(ws.title, sheet, extras):
        problems.append(Problem(where, msg))
    for c in cols:
        if c.required is True and c.name not in col_of and not (c.name == "hit_target" and "trace" in col_of) \
                and not (sheet == schema.MEAS and "file" in col_of):  # the load-test files fill them (below)
            problems.append(Problem(Place.at_row(ws.title, 1), f"required column {c.name!r} is missing"
                                    + _header_hint(ws.title, c, extras)))
        elif c.required == "catalog" and c.name not in col_of and (hint := _header_hint(ws.title, c, extras)):
            # the catalog could fill the column, but the values typed under a near-miss header
            # would be silently replaced: say so instead
            problems.append(Problem(Place.at_row(ws.title, 1), f"column {c.name!r} is missing{hint}; rename the header, "
                                    f"or remove that column to take {c.name} from the catalog"))
    for rng in (scan.merged if scan else ()):
        problems.append(Problem(Place.cell_range(ws.title, *range_boundaries(rng)), "merged cells in the table: unmerge them (a merge keeps "
                                                     "only its first cell's value)"))
    uncalculated = scan.uncalculated if scan else set()
    # only the rows that hold values and the columns under a header: formatting that
    # reaches row 1,048,576 or column XFD costs nothing
    last_col = max([j for j, _ in extras] + list(col_of.values()) + [0]) + 1
    last_row = scan.last_row if scan and scan.last_row is not None else ws.max_row
    rows_iter = ws.iter_rows(min_row=2, max_row=max(last_row or 1, 1), max_col=last_col) if (last_row or 0) >= 2 else ()
    records: list[dict[str, Any]] = []
    rows: list[int] = []
    readings: list[str] = []  # numbers read from text with separators (one note for the sheet)
    plain_ones: set[tuple[str, int]] = set()
    percent_cells: set[tuple[str, int]] = set()
    key = next((c.name for c in cols if c.key), None)
    gap = False  # a blank row since the last record
    for excel_row, cells in enumerate(rows_iter, start=2):
        values = [getattr(c, "value", None) for c in cells]
        pending = {j for j in range(len(cells)) if f"{get_column_letter(j + 1)}{excel_row}" in uncalculated} \
            if uncalculated else set()
        if not pending and all(v is None or (isinstance(v, str) and v.strip() == "") for v in values):
            gap = bool(records)
            continue
        if key in col_of and col_of[key] < len(values) and th.is_totals_label(values[col_of[key]]):
            where = Place.cell(ws.title, col_of[key] + 1, excel_row)
            if gap:  # a blank row, then a totals row: the table ends here
                (notes if notes is not None else []).append(f"{where}: {str(values[col_of[key]]).strip()!r} below a blank row is read as a "
                             f"totals row: the table ends above it (row {excel_row} and below ignored)")
                break
            problems.append(Problem(where, f"{str(values[col_of[key]]).strip()!r} {th.TOTALS_INSIDE}"))
            continue
        gap = False
        rec: dict[str, Any] = {}
        for name, j in col_of.items():
            cell = cells[j] if j < len(cells) else None
            raw = getattr(cell, "value", None)
            where = Place.cell(ws.title, j + 1, excel_row)
            if raw is None and j in pending:
                problems.append(Problem(where, f"{name} holds a formula that was never calculated: open and "
                                               f"save it in Excel, or type the value"))
                rec[name] = None
                continue
            fmt = getattr(cell, "number_format", None)
            # a header unit converted (header_units): a whole-number column is checked after the
            # conversion ('isl (k tokens)' 2.5 is 2,500 tokens)
            first = replace(by_name[name], kind=schema.NUMBER, minimum=None, maximum=None) \
                if name in factors and by_name[name].kind == schema.INT else by_name[name]
            v, err, reading = parse_cell(first, cell_value(cell), fmt)
            if not err and v is not None and name in factors:
                x = float(v) * factors[name]
                if by_name[name].kind == schema.INT and abs(x - round(x)) <= 1e-9 * max(1.0, abs(x)):
                    x = float(round(x))  # 1.1 k tokens is 1,100 tokens, not 1,100.0000000000002
                v, err, _ = parse_cell(by_name[name], round(x, 9) if by_name[name].kind == schema.INT else x, None)
                if err:
                    err += f" (after converting from the header's unit, x{factors[name]:.6g})"
            if err:
                problems.append(Problem(where, err))
            if reading:
                readings.append(f"{where} {reading}")
            # a Scenarios value is a fraction when its column is one (red team 7: 'set hit_target 1')
            if v == 1 and (by_name[name].kind == schema.FRACTION or (sheet == schema.SCN and name == "value")) \
                    and isinstance(cell_value(cell), (int, float)) \
                    and not isinstance(cell_value(cell), bool) and "%" not in str(fmt or ""):
                plain_ones.add((name, len(records)))
            if sheet == schema.SCN and name == "value" and isinstance(v, float) and "%" in str(fmt or ""):
                percent_cells.add((name, len(records)))
            rec[name] = v
        for j, head in extras:
            rec[head] = values[j] if j < len(values) else None
        records.append(rec)
        rows.append(excel_row)
    untraced = [r for r, rec in zip(rows, records) if rec.get("trace") in (None, "")]
    if "hit_target" in by_name and "hit_target" not in col_of and "trace" in col_of and untraced:
        # without hit_target, every row must take its hit ratio from a trace (issue 19)
        why = "" if len(untraced) == len(records) else f" (row {untraced[0]} has no trace to take it from)"
        problems.append(Problem(Place.at_row(ws.title, 1), f"required column 'hit_target' is missing{why}"))
    if sheet == schema.DEM and "demand_tpm" in factors and "demand_unit" in col_of:
        # the header's unit is already converted to tokens/min: a row's demand_unit would convert it again
        for r, rec in zip(rows, records):
            if rec.get("demand_unit") not in (None, "tokens/min") and rec.get("demand_tpm") is not None:
                problems.append(Problem(Place.cell(ws.title, col_of["demand_unit"] + 1, r),
                                        f"demand_unit {rec['demand_unit']!r} and the header of demand_tpm both give "
                                        f"the unit: the demand would be converted twice; keep one of them"))
    if sheet == schema.MEAS and "file" in col_of:
        # a row naming a load-test file takes the missing columns from it; the other rows need them
        from planner.inputs.measurement_files import missing_columns

        problems += missing_columns(ws.title, cols, col_of, rows, records)
    if notes is not None:  # what Excel hides is read all the same: say so (red team 5)
        notes.extend(_hidden_notes(ws, scan, rows))
    if readings and notes is not None:
        more = and_more(len(readings), 3)
        notes.append(f"{ws.title}: {len(readings)} number(s) typed as text with separators were read: "
                     f"{'; '.join(readings[:3])}{more}")
    return Table(ws.title, records, rows, [h for _, h in extras], col_of, plain_ones=plain_ones,
                 percent_cells=percent_cells, currencies=currencies)


def _header_below(ws, required: list[str], depth: int = 5) -> int | None:
    """The row (2..depth) that holds every column in ``required`` when row 1 does not: the header
    under a title row."""
    for r, cells in enumerate(ws.iter_rows(min_row=2, max_row=depth), start=2):
        names = {normalise_header(getattr(c, "value", None)) for c in cells}
        if all(HEADER_ALIASES.get((ws.title, n), n) in names or n in names for n in required):
            return r
    return None


def _hidden_notes(ws, scan: SheetScan | None, rows: list[int]) -> list[str]:
    """Notes for a table sheet hidden in Excel and for its rows hidden (by hand or by a filter):
    both are planned like the others, which a reader who hid them may not expect."""
    out = []
    state = getattr(ws, "sheet_state", "visible") or "visible"
    if state != "visible":
        out.append(f"{ws.title}: the sheet is {'very hidden' if state == 'veryHidden' else 'hidden'} in Excel; it is "
                   f"read and planned like any other (delete it, or its rows, to leave it out)")
    hidden = sorted(set(rows) & set(scan.hidden_rows)) if scan else []
    if hidden:
        shown = ", ".join(str(r) for r in hidden[:8]) + (and_more(len(hidden), 8, brackets=False))
        out.append(f"{ws.title} row{'s' if len(hidden) > 1 else ''} {shown}: hidden in Excel (by hand or by a "
                   f"filter), read and planned like the others (delete a row to leave it out)")
    return out


def _currency_problems(tables, settings: dict, where_setting) -> list[Problem]:
    """A price header naming another currency than Settings ``currency`` (``hourly_cost (EUR/h)``
    beside currency USD) is refused: every cost column would carry the Settings label."""
    setting = settings.get("currency")
    code = header_units.currency_code(setting) or (str(setting).strip().upper() if setting else "USD")
    out = []
    for t in tables:
        for place, shown, typed in (t.currencies if t is not None else ()):
            if typed != code:
                out.append(Problem(place, f"header {shown!r} says {typed}, but Settings currency is {code} "
                                          f"({where_setting}), the label every cost column carries: set Settings "
                                          f"currency to {typed}, or convert the prices to {code}"))
    return out


def _header_hint(title: str, c: Column, extras: list[tuple[int, str]]) -> str:
    """``; found 'hbm (GB)' in GPUs!B1, ignored: the column is hbm_gib, in GiB (2^30 bytes)``."""
    found = th.header_hint(c.name, [(normalise_header(h), h, Place.cell(title, j + 1, 1))
                                    for j, h in extras])
    if found is None:
        return ""
    what = f"in {th.unit_text(c.unit)}" if c.unit else f"{c.description}"
    return f"; found {found[0]!r} in {found[1]}, ignored: the column is {c.name}, {what}"


def _place_order(p: Problem) -> tuple:
    """Problems in reading order: sheet (Models, GPUs, Workloads, Settings, ...), row, column."""
    return p.place.order(schema.SHEET_ORDER)


@dataclass
class BoundaryState:
    """What a check of a layer above the input boundary sees while the input is read (see
    ``checks`` of :func:`read_input`): the input (None when a table is missing), the number of
    workloads, the Settings, the place of a Settings key, and the problems found so far."""

    p_in: Any
    n_workloads: int
    settings: dict
    setting_place: Callable[[str], str]
    problems: list


def read_input(path: str | Path, *, checks: Sequence[Callable[[BoundaryState], list]] = (),
               after: Sequence[Callable[[Any], list]] = ()) -> PlanInput:
    """Read, parse and validate ``path``; raise :class:`InputError` listing every problem.

    ``checks`` run in the same pass as the reader's own (their problems listed with them);
    ``after`` run on the whole, valid input (each returns a list of problems). The layers above
    give them (:func:`planner.finance.validation.read_checked`): this module imports none of them."""
    path = Path(path)
    problems: list[Problem] = []
    if not path.exists():
        raise InputError([missing_problem(path)])
    if path.is_dir():
        raise InputError([Problem(str(path), "is a folder, not a workbook")])
    require_defusedxml()
    # read once: the container checks, the parse and the SHA-256 on the Run sheet all come
    # from these bytes (a file replaced while being read cannot mix two versions)
    data = path.read_bytes()
    check_container(path, data)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            xml_of = sheet_xml_paths(z)
            scans = {name.strip().lower(): scan_sheet(z.read(p)) for name, p in xml_of.items()
                     if name.strip().lower() in {s.lower() for s in schema.SHEET_ORDER}
                     and p in z.namelist()}
        wb = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True, keep_links=False,
                                    keep_vba=False)
    except InputError:
        raise
    except Exception as exc:  # openpyxl and zipfile raise many kinds for a damaged file
        raise InputError([_unreadable(path, exc)]) from None
    notes: list[str] = []
    if (lock := path.parent / f"~${path.name}").exists():  # Excel's owner file: the workbook is open (red team 5)
        notes.append(f"{path.name}: is open in Excel ({lock.name} beside it): the last saved version is read; "
                     f"edits not saved yet are not in this plan")
    if twins := _twin_sheets(wb.sheetnames):
        wb.close()
        raise InputError(twins)
    try:
        tables: dict[str, Table | None] = {}
        positions: dict[str, dict[str, int]] = {}
        for sheet in schema.SHEETS:
            ws = _find_sheet(wb, sheet)
            if ws is None:
                problems.append(Problem(sheet, f"the sheet is missing (the workbook has: "
                                               f"{', '.join(wb.sheetnames)})"))
                tables[sheet] = None
                continue
            t = _read_table(ws, sheet, problems, scans.get(sheet.lower()), notes)
            if t is not None and not t.records:
                problems.append(Problem(Place.at_row(ws.title, 2), f"no {sheet.lower()} rows: add at least one"))
            tables[sheet] = t
            positions[sheet] = t.positions if t is not None else {}
        setting_places: dict[str, str] = {}
        settings, settings_extra = _read_settings(wb, problems, scans.get(schema.SETTINGS.lower()), notes,
                                                  setting_places)
        optional: dict[str, Table] = {}
        for sheet in schema.OPTIONAL_SHEETS:
            ws = _find_sheet(wb, sheet)
            if ws is None:
                continue
            t = _read_table(ws, sheet, problems, scans.get(sheet.lower()), notes)
            if t is not None:
                t.date1904 = is_date1904(wb)  # its period serials are read in the workbook's date system
                optional[sheet] = t
                positions[sheet] = t.positions
    except InputError:
        raise
    except Exception as exc:  # parse errors surface lazily in read-only mode
        raise InputError([_unreadable(path, exc)]) from None
    finally:
        wb.close()

    m, g, w = (tables[s] for s in schema.SHEETS)
    problems += _currency_problems([*tables.values(), *optional.values()], settings,
                                   setting_places.get("currency", schema.SETTINGS))
    canon: dict[str, dict[str, str]] = {}
    for t, key, sheet in ((m, "model", "Models"), (g, "gpu", "GPUs"), (w, "workload", "Workloads")):
        if t is not None:
            canon[sheet] = check_keys(t, positions[sheet], key, problems)
            catalog.fill_table(t, sheet, problems, notes)  # blank Models/GPUs cells from the catalogs
            check_required(t, sheet, positions[sheet], problems, skip={key})
    if m is not None:
        check_models(m, positions["Models"], problems)
    if g is not None:
        check_gpus(g, positions["GPUs"], problems)
    from planner.inputs.plausible import relation_problems  # kv_heads > heads and the like: impossible

    problems += relation_problems({schema.M: m, schema.G: g}, "error")
    if w is not None:
        check_workloads(w, positions["Workloads"], canon, problems, notes)
    if schema.MEAS in optional:  # rows naming a load-test result file filled from it (issue 18)
        from planner.inputs.measurement_files import fill_measurements

        fill_measurements(path, optional[schema.MEAS], m, g, w, problems, notes)
    for sheet, t in optional.items():
        check_required(t, sheet, positions[sheet], problems, skip=set())
    check_optional_refs(optional, canon, problems, {schema.M: m, schema.G: g})
    from planner.inputs.scenario_checks import check_optional  # Demand and Scenarios against the inputs (the finance view)

    check_optional(optional, {"Models": m, "GPUs": g, "Workloads": w}, settings, problems, notes)
    from planner.inputs.kv_tiers import check_inputs  # Tiers rows and the Workloads' trace files (issue 19)

    check_inputs(path, optional.get(schema.TIERS), w, positions.get("Workloads", {}), settings, problems, notes)
    p_in = None
    if m is not None and g is not None and w is not None:
        p_in = PlanInput(path, hashlib.sha256(data).hexdigest(), m, g, w, settings, settings_extra, notes, optional,
                         setting_places=dict(setting_places))
    # the checks of the layers above (sheet sizes, calibration, each scenario re-planned), in the
    # same pass: given by the caller (planner.finance.validation.read_checked), so that this
    # boundary imports nothing above it
    state = BoundaryState(p_in, len(w) if w is not None else 0, settings,
                          lambda key: setting_places.get(key, schema.SETTINGS), problems)
    for check in checks:
        problems += check(state)
    if problems:
        raise InputError(sorted(problems, key=_place_order))
    # checks that need a whole, valid input (each scenario's re-planned state)
    late = [p for check in after for p in check(p_in)]
    if late:
        raise InputError(sorted(late, key=_place_order))
    return p_in


def missing_problem(path: Path) -> Problem:
    """``no such file``, or what stands there instead: a symbolic link that loops or leads nowhere."""
    if path.is_symlink():
        try:
            path.resolve(strict=True)
        except RuntimeError:  # Python 3.11 raises RuntimeError for a loop
            return Problem(str(path), "is a symbolic link that loops (it leads back to itself): no workbook")
        except OSError as e:
            if e.errno == errno.ELOOP:
                return Problem(str(path), "is a symbolic link that loops (it leads back to itself): no workbook")
        return Problem(str(path), f"is a symbolic link to {os.readlink(path)!r}, which does not exist")
    return Problem(str(path), "no such file")


def _twin_sheets(names: list[str]) -> list[Problem]:
    """Sheets whose names differ only in case or surrounding spaces (``Workloads`` and
    ``workloads ``): which one is meant is a guess, so it is an error naming both."""
    by_fold: dict[str, list[str]] = {}
    for n in names:
        by_fold.setdefault(n.strip().lower(), []).append(n)
    known = {s.lower() for s in schema.SHEET_ORDER}
    return [Problem(same[0].strip() or repr(same[0]), f"sheets {' and '.join(repr(x) for x in same)} differ only in "
                    f"case or surrounding spaces: rename or delete all but one")
            for k, same in by_fold.items() if len(same) > 1 and k in known]


def _unreadable(path: Path, exc: BaseException) -> Problem:
    """The problem for a file openpyxl cannot parse (looking through wrapped exceptions)."""
    seen, e = [], exc
    while e is not None and e not in seen:
        seen.append(e)
        e = e.__cause__ or e.__context__
    if any(type(x).__module__.startswith("defusedxml") for x in seen):
        return Problem(path.name, "contains XML entity or DTD declarations: refused (a possible entity-"
                                  "expansion attack); save the workbook again from Excel")
    root = seen[-1]
    detail = str(root).splitlines()[0] if str(root) else ""
    return Problem(path.name, f"cannot be read as an .xlsx workbook ({type(root).__name__}: {detail}); it may be "
                              f"damaged: open and save it in Excel")


def is_date1904(wb) -> bool:
    """Whether the workbook counts its dates in Excel's 1904 date system (workbookPr date1904, read
    by openpyxl as ``Workbook.epoch``): openpyxl converts its date cells; the reader converts the
    serial day numbers typed without a date format (:mod:`planner.inputs.period_labels`)."""
    from openpyxl.utils.datetime import CALENDAR_MAC_1904

    return getattr(wb, "epoch", None) == CALENDAR_MAC_1904


def _read_settings(wb, problems: list[Problem], scan: SheetScan | None = None,
                   notes: list[str] | None = None, places: dict[str, str] | None = None
                   ) -> tuple[dict[str, Any], list[tuple[Any, Any]]]:
    values = {s.key: s.default for s in schema.SETTING_KEYS}
    extra: list[tuple[Any, Any]] = []
    date1904 = is_date1904(wb)
    ws = _find_sheet(wb, schema.SETTINGS)
    if ws is None:
        return values, extra
    spec = {s.key: s for s in schema.SETTING_KEYS}
    last_row = scan.last_row if scan and scan.last_row is not None else ws.max_row
    rows = ws.iter_rows(max_row=max(last_row or 1, 1), max_col=8)
    header = next(rows, None)
    heads = [normalise_header(getattr(c, "value", None)) for c in (header or ())]
    if "key" not in heads or "value" not in heads:
        problems.append(Problem(Place.at_row(ws.title, 1), "needs the two columns 'key' and 'value'"))
        return values, extra
    jk, jv = heads.index("key"), heads.index("value")
    near: list[tuple[str, Any, Any, Place]] = []  # keys that named no setting (red team 6: a near miss is refused)
    present: set[str] = set()
    for cells in rows:
        kcell = cells[jk] if jk < len(cells) else None
        vcell = cells[jv] if jv < len(cells) else None
        key = normalise_header(getattr(kcell, "value", None))
        raw = cell_value(vcell)
        if not key:
            if raw is not None and str(raw).strip() != "":  # a value no setting names would be dropped silently
                problems.append(Problem(Place.cell(ws.title, jv + 1, vcell.row),
                                        f"the value {str(raw).strip()!r} has no key: type the setting's name in "
                                        f"the key column of this row, or clear the value"))
            continue
        if key not in spec:
            extra.append((getattr(kcell, "value", None), raw))
            near.append((key, getattr(kcell, "value", None), raw, Place.cell(ws.title, jk + 1, kcell.row)))
            continue
        present.add(key)
        s = spec[key]
        where = Place.cell(ws.title, jv + 1, kcell.row)
        from planner.inputs.settings_keys import key_unit_problem  # red team 7: 'hours_per_month (days)'

        if (why := key_unit_problem(key, str(getattr(kcell, "value", "")))) is not None:
            problems.append(Problem(Place.cell(ws.title, jk + 1, kcell.row), why))
            continue
        if places is not None:
            places[key] = where
        if s.kind == schema.NUMBERS:
            values[key], errs = parse_numbers(key, raw)
            problems.extend(Problem(where, e) for e in errs)
            continue
        col = Column(schema.SETTINGS, key, "", s.kind, s.description, minimum=s.minimum,
                     maximum=s.maximum, min_open=s.min_open)
        v, err, reading = parse_cell(col, raw, getattr(vcell, "number_format", None))
        if key == "periods" and err is None:  # the period list of demand growth (planner.finance.periods)
            from planner.inputs.period_labels import parse_periods, serial_notes

            labels, errs = parse_periods(v, date1904)
            err = "; ".join(errs) or None
            if err is None and notes is not None:
                notes.extend(f"{where} {n}" for n in serial_notes(v, date1904))
            if err is None and date1904 and serial_notes(v, True):
                v = "; ".join(labels)  # read in the workbook's date system here; later readers see labels
        if key == "quarter" and err is None and v is not None:  # the run's label: a date read as its quarter
            from planner.inputs.period_labels import quarter_label, quarter_problem

            if (why := quarter_problem(v)) is not None:  # 2026-Q5, 2027-Q0
                err = f"quarter {why}"
            label, how = quarter_label(vcell.value if vcell.value is not None else v, date1904)
            if label is not None and how is not None and how.startswith("a date"):
                if notes is not None:
                    notes.append(f"{where} {str(v).strip()!r} is {how}: {label}")
                v = label
        if reading and notes is not None:
            notes.append(f"{where} {reading}")
        if err:
            problems.append(Problem(where, err))
        elif v is not None:
            values[key] = v
    from planner.inputs.settings_keys import near_key_problems

    problems.extend(near_key_problems(near, present, list(spec), {k: s.default for k, s in spec.items()}))
    return values, extra

