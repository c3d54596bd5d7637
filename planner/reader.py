"""Read and validate an input workbook (openpyxl, cached values, no macros).

The header rules of ``docs/model.md`` section 3: header row 1; names match case-insensitively, ignoring
surrounding spaces and a trailing unit in brackets or parentheses; extra columns are
kept; blank rows are skipped. Cells are read with openpyxl (not ``pandas.read_excel``,
which turns ``#DIV/0!`` into NaN silently). Every problem is collected and raised at once
as :class:`~planner.errors.InputError`.
"""

from __future__ import annotations

import hashlib
import math
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import openpyxl
from openpyxl.utils import get_column_letter

from . import catalog, schema
from .errors import InputError, Problem
from .safety import SheetScan, check_container, require_defusedxml, scan_sheet, sheet_xml_paths
from .schema import ANY, CHOICE, FRACTION, INT, TEXT, Column
from . import typing_hints as th

MIN_PREFILL_MS = 1e-3  # the 0-hit variable prefill time must add up to at least this (1 microsecond)


class ExcelError(str):
    """The value of a true error cell (openpyxl ``data_type == 'e'``); the same text typed
    into a cell (``'#N/A'`` as a string) is plain text."""


def cell_value(cell: Any) -> Any:
    """A cell's value, an error cell's wrapped as :class:`ExcelError`."""
    v = getattr(cell, "value", None)
    if isinstance(v, str) and getattr(cell, "data_type", None) == "e":
        return ExcelError(v)
    return v


_UNIT_SUFFIX = re.compile(r"\s*[\[(][^\[\]()]*[\])]\s*$")


def normalise_header(text: Any) -> str:
    """``' ISL (tokens) '`` -> ``'isl'``; inner spaces become underscores."""
    if text is None:
        return ""
    h = _UNIT_SUFFIX.sub("", str(text).strip()).strip().lower()
    return re.sub(r"\s+", "_", h)


def _show(v: Any) -> str:
    """A value as a person would type it: 85 not 85.0, text quoted."""
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    if isinstance(v, str):
        return repr(v)
    return str(v)


@dataclass
class Table:
    """One input sheet: canonical columns first, then the extra columns passed through."""

    sheet: str                        # sheet name as found in the workbook
    records: list[dict[str, Any]]     # parsed canonical values (None for blank) + extras
    rows: list[int]                   # Excel row of each record
    extras: list[str] = field(default_factory=list)  # headers of extra columns, in order
    positions: dict[str, int] = field(default_factory=dict)  # canonical column -> 0-based index
    # per record, the cells not typed in the sheet: column -> where the value came from
    # ("catalog: <entry> (<source>)"); empty when nothing was filled (see planner.catalog)
    filled: list[dict[str, str]] = field(default_factory=list)

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

    def table(self, sheet: str) -> Table | None:
        """The table of an input sheet by its schema name (None: an optional sheet not given)."""
        return {"Models": self.models, "GPUs": self.gpus, "Workloads": self.workloads}.get(sheet) \
            or self.optional.get(sheet)


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# --------------------------------------------------------------------------- cell parsing
def parse_value(col: Column, raw: Any, number_format: str | None) -> tuple[Any, str | None]:
    """Parse one cell for ``col``. Returns ``(value, problem_message)``; value None = blank."""
    v, err, _ = parse_cell(col, raw, number_format)
    return v, err


def parse_cell(col: Column, raw: Any, number_format: str | None) -> tuple[Any, str | None, str | None]:
    """:func:`parse_value` plus the note of a number read from text with separators."""
    if raw is None or (isinstance(raw, str) and raw.strip() == ""):
        return None, None, None
    if isinstance(raw, ExcelError):
        return None, f"{col.name} holds the Excel error {raw.strip().upper()}: fix the formula or type the value", None
    note: list[str] = []
    v, err = _parse(col, raw, number_format, note)
    return v, err, (note[0] if note and err is None else None)


def _parse(col: Column, raw: Any, number_format: str | None, note: list[str]) -> tuple[Any, str | None]:
    if col.kind == ANY:  # kept as typed: a number, or a text without its surrounding spaces
        if isinstance(raw, bool):
            return None, f"{col.name} {raw} is neither a number nor a text"
        if isinstance(raw, (int, float)):
            return float(raw), None
        return str(raw).strip(), None
    if col.kind == TEXT:
        if isinstance(raw, float) and raw.is_integer():
            raw = int(raw)
        if (col.key or col.ref) and (long := th.too_long(col.name, str(raw).strip())):
            return None, long
        # references keep their spaces until they are matched (and the match is noted)
        return (str(raw) if col.ref else str(raw).strip()), None
    if col.kind == CHOICE:
        allowed = ", ".join(str(c) for c in col.choices)
        if all(isinstance(c, int) for c in col.choices):
            v, err = _number(col, raw, number_format, note)
            if err is None and v not in col.choices:
                err = f"{col.name} {_show(raw)} is not one of {allowed}"
            return (int(v) if err is None else None), err
        text = str(raw).strip().lower()
        if text not in col.choices:
            return None, f"{col.name} {_show(raw)} is not one of {allowed}"
        return text, None
    v, err = _number(col, raw, number_format, note)
    if err:
        return None, err
    if col.kind == INT and not float(v).is_integer():
        return None, f"{col.name} {_show(v)} is not a whole number"
    rng = col.range_text()
    if col.minimum is not None and (v < col.minimum or (col.min_open and v == col.minimum)):
        if col.min_open and col.minimum == 0:
            return None, f"{col.name} {_show(v)} is outside {rng}: it must be positive"
        return None, f"{col.name} {_show(v)} is outside {rng}"
    if col.maximum is not None and v > col.maximum:
        hint = ""
        if col.kind == FRACTION and 2 <= v <= 100:  # 85 most likely meant 85%
            hint = f" (a ratio: write {v / 100:g} or {v:g}%)"
        return None, f"{col.name} {_show(v)} is outside {rng}{hint}"
    if col.kind == INT:
        v = int(v)
    return v, None


def _number(col: Column, raw: Any, number_format: str | None, note: list[str] | None = None) -> tuple[Any, str | None]:
    if isinstance(raw, bool):
        return None, f"{col.name} {raw} is not a number"
    if isinstance(raw, (int, float)):
        v = float(raw)
    elif isinstance(raw, str):
        text = raw.strip()
        pct = text.endswith("%") and col.kind == FRACTION
        # separators read only when unambiguous (typing_hints.read_number_text): "1,024" and
        # "8.192" are refused (1024 or 1.024?), "1,024,000", "8,192.5", "8 192", "2,5" read with a note
        v, reading, why = th.read_number_text(text[:-1].strip() if pct else text)
        if why:
            return None, f"{col.name} {_show(raw)} {why}"
        if v is None:
            return None, (None if pct else th.unit_problem(col.name, col.unit, text)) \
                or f"{col.name} {_show(raw)} is not a number"
        if pct:
            v = v / 100.0
        if reading and note is not None:
            note.append(reading)
    else:  # dates, times
        return None, f"{col.name} {_show(raw)} is not a number"
    if not math.isfinite(v):
        return None, f"{col.name} {_show(raw)} is not a finite number"
    return v, None


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
        problems.append(Problem(f"{ws.title}!A1", f"the sheet is empty: it needs a header row "
                                                  f"({', '.join(c.name for c in cols)})"))
        return None
    col_of: dict[str, int] = {}
    extras: list[tuple[int, str]] = []
    seen: dict[str, str] = {}
    for j, cell in enumerate(header):
        raw = getattr(cell, "value", None)
        if raw is None or str(raw).strip() == "":
            continue
        key = normalise_header(raw)
        coord = f"{get_column_letter(j + 1)}1"
        if key in seen:
            problems.append(Problem(f"{ws.title}!{coord}", f"column {key!r} appears twice "
                                                           f"(also {seen[key]})"))
            continue
        seen[key] = coord
        if key in by_name:
            col_of[key] = j
            if wrong := th.header_unit_problem(str(raw), key, by_name[key].unit):
                problems.append(Problem(f"{ws.title}!{coord}", wrong))
        else:
            extras.append((j, str(raw).strip()))
    for c in cols:
        if c.required is True and c.name not in col_of:
            problems.append(Problem(f"{ws.title} row 1", f"required column {c.name!r} is missing"
                                    + _header_hint(ws.title, c, extras)))
        elif c.required == "catalog" and c.name not in col_of and (hint := _header_hint(ws.title, c, extras)):
            # the catalog could fill the column, but the values typed under a near-miss header
            # would be silently replaced: say so instead
            problems.append(Problem(f"{ws.title} row 1", f"column {c.name!r} is missing{hint}; rename the header, "
                                    f"or remove that column to take {c.name} from the catalog"))
    for rng in (scan.merged if scan else ()):
        problems.append(Problem(f"{ws.title}!{rng}", "merged cells in the table: unmerge them (a merge keeps "
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
            where = f"{ws.title}!{get_column_letter(col_of[key] + 1)}{excel_row}"
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
            where = f"{ws.title}!{get_column_letter(j + 1)}{excel_row}"
            if raw is None and j in pending:
                problems.append(Problem(where, f"{name} holds a formula that was never calculated: open and "
                                               f"save it in Excel, or type the value"))
                rec[name] = None
                continue
            fmt = getattr(cell, "number_format", None)
            v, err, reading = parse_cell(by_name[name], cell_value(cell), fmt)
            if err:
                problems.append(Problem(where, err))
            if reading:
                readings.append(f"{where} {reading}")
            rec[name] = v
        for j, head in extras:
            rec[head] = values[j] if j < len(values) else None
        records.append(rec)
        rows.append(excel_row)
    if readings and notes is not None:
        more = f" (and {len(readings) - 3} more)" if len(readings) > 3 else ""
        notes.append(f"{ws.title}: {len(readings)} number(s) typed as text with separators were read: "
                     f"{'; '.join(readings[:3])}{more}")
    return Table(ws.title, records, rows, [h for _, h in extras], col_of)


def _header_hint(title: str, c: Column, extras: list[tuple[int, str]]) -> str:
    """``; found 'hbm (GB)' in GPUs!B1, ignored: the column is hbm_gib, in GiB (2^30 bytes)``."""
    found = th.header_hint(c.name, [(normalise_header(h), h, f"{title}!{get_column_letter(j + 1)}1")
                                    for j, h in extras])
    if found is None:
        return ""
    what = f"in {th.unit_text(c.unit)}" if c.unit else f"{c.description}"
    return f"; found {found[0]!r} in {found[1]}, ignored: the column is {c.name}, {what}"


def _cell(table: Table, ws_cols: dict[str, int], name: str, i: int) -> str:
    if name in ws_cols:
        return f"{table.sheet}!{get_column_letter(ws_cols[name] + 1)}{table.rows[i]}"
    return f"{table.sheet} row {table.rows[i]}"


def _check_keys(table: Table, pos: dict[str, int], key: str, problems: list[Problem]) -> dict[str, str]:
    """Unique names (case and surrounding spaces ignored); returns folded -> canonical name."""
    first: dict[str, int] = {}
    canon: dict[str, str] = {}
    for i, rec in enumerate(table.records):
        name = rec.get(key)
        where = _cell(table, pos, key, i)
        if name is None:
            if key in pos and not _had_error(problems, where):
                problems.append(Problem(where, f"{key} is required"))
            continue
        folded = name.strip().lower()
        if folded in first:
            problems.append(Problem(where, f"{key} {name!r} duplicates row {table.rows[first[folded]]}"))
            continue
        first[folded] = i
        canon[folded] = name
    return canon


def _check_required(table: Table, sheet: str, pos: dict[str, int], problems: list[Problem],
                    skip: set[str]) -> None:
    for c in schema.columns(sheet):
        if c.required is True and c.name in pos and c.name not in skip:
            for i, rec in enumerate(table.records):
                if rec.get(c.name) is None and not _had_error(problems, _cell(table, pos, c.name, i)):
                    problems.append(Problem(_cell(table, pos, c.name, i), f"{c.name} is required"))


def _had_error(problems: list[Problem], place: str) -> bool:
    return any(p.place == place for p in problems)


_PLACE = re.compile(r"^(?P<sheet>[^!]+?)(?:!(?P<col>[A-Z]+)(?P<row>\d+)| row (?P<row2>\d+))?$")


def _place_order(p: Problem) -> tuple:
    """Problems in reading order: sheet (Models, GPUs, Workloads, Settings), row, column."""
    m = _PLACE.match(p.place)
    order = {s.lower(): i for i, s in enumerate(schema.SHEET_ORDER)}
    if not m:
        return (-1, 0, "", p.place)
    row = int(m.group("row") or m.group("row2") or 0)
    col = m.group("col") or ""
    return (order.get(m.group("sheet").lower(), len(order)), row, (len(col), col), "")


def read_input(path: str | Path) -> PlanInput:
    """Read, parse and validate ``path``; raise :class:`InputError` listing every problem."""
    path = Path(path)
    problems: list[Problem] = []
    if not path.exists():
        raise InputError([Problem(str(path), "no such file")])
    if path.is_dir():
        raise InputError([Problem(str(path), "is a folder, not a workbook")])
    require_defusedxml()
    check_container(path)
    try:
        with zipfile.ZipFile(path) as z:
            xml_of = sheet_xml_paths(z)
            scans = {name.strip().lower(): scan_sheet(z.read(p)) for name, p in xml_of.items()
                     if name.strip().lower() in {s.lower() for s in schema.SHEET_ORDER}
                     and p in z.namelist()}
        wb = openpyxl.load_workbook(path, read_only=True, data_only=True, keep_links=False, keep_vba=False)
    except InputError:
        raise
    except Exception as exc:  # openpyxl and zipfile raise many kinds for a damaged file
        raise InputError([_unreadable(path, exc)]) from None
    notes: list[str] = []
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
                problems.append(Problem(f"{ws.title} row 2", f"no {sheet.lower()} rows: add at least one"))
            tables[sheet] = t
            positions[sheet] = t.positions if t is not None else {}
        settings, settings_extra = _read_settings(wb, problems, scans.get(schema.SETTINGS.lower()), notes)
        optional: dict[str, Table] = {}
        for sheet in schema.OPTIONAL_SHEETS:
            ws = _find_sheet(wb, sheet)
            if ws is None:
                continue
            t = _read_table(ws, sheet, problems, scans.get(sheet.lower()), notes)
            if t is not None:
                optional[sheet] = t
                positions[sheet] = t.positions
    except InputError:
        raise
    except Exception as exc:  # parse errors surface lazily in read-only mode
        raise InputError([_unreadable(path, exc)]) from None
    finally:
        wb.close()

    m, g, w = (tables[s] for s in schema.SHEETS)
    canon: dict[str, dict[str, str]] = {}
    for t, key, sheet in ((m, "model", "Models"), (g, "gpu", "GPUs"), (w, "workload", "Workloads")):
        if t is not None:
            canon[sheet] = _check_keys(t, positions[sheet], key, problems)
            catalog.fill_table(t, sheet, problems, notes)  # blank Models/GPUs cells from the catalogs
            _check_required(t, sheet, positions[sheet], problems, skip={key})
    if m is not None:
        _check_models(m, positions["Models"], problems)
    if g is not None:
        _check_gpus(g, positions["GPUs"], problems)
    if w is not None:
        _check_workloads(w, positions["Workloads"], canon, problems, notes)
    for sheet, t in optional.items():
        _check_required(t, sheet, positions[sheet], problems, skip=set())
    from .fleet import check_optional  # Demand and Scenarios against the inputs (the finance view)

    check_optional(optional, {"Models": m, "GPUs": g, "Workloads": w}, settings, problems)
    if problems:
        raise InputError(sorted(problems, key=_place_order))
    return PlanInput(path, sha256_of(path), m, g, w, settings, settings_extra, notes, optional)


def _check_models(t: Table, pos: dict[str, int], problems: list[Problem]) -> None:
    for i, rec in enumerate(t.records):
        att = rec.get("attention") or "gqa"
        needs = ("layers", "kv_bytes") + (("kv_heads", "head_dim") if att == "gqa" else ("mla_kv_dim",))
        missing = [name for name in needs
                   if rec.get(name) is None and not _had_error(problems, _cell(t, pos, name, i))]
        if missing and rec.get("model") is not None:  # required unless the catalog supplies it
            problems.extend(catalog.missing_problem(t, "Models", i, missing, f"attention {att}"))


def _check_gpus(t: Table, pos: dict[str, int], problems: list[Problem]) -> None:
    for i, rec in enumerate(t.records):
        missing = [] if rec.get("hbm_gib") is not None or _had_error(problems, _cell(t, pos, "hbm_gib", i)) \
            else ["hbm_gib"]
        if rec.get("pcie_gbps") is None and rec.get("pcie_gen") is None:
            where = _cell(t, pos, "pcie_gbps", i)
            if not _had_error(problems, where) and not _had_error(problems, _cell(t, pos, "pcie_gen", i)):
                if catalog.entry_of_row(t, "GPUs", i)[0] is not None or rec.get("gpu") is None:
                    problems.append(Problem(where, "pcie_gbps and pcie_gen are both blank: give the "
                                                   "bandwidth in GB/s or the PCIe generation (4 or 5)"))
                else:
                    missing.append("pcie_gbps/pcie_gen")
        if missing and rec.get("gpu") is not None:  # required unless the catalog supplies it
            problems.extend(catalog.missing_problem(t, "GPUs", i, missing))


def _check_workloads(t: Table, pos: dict[str, int], canon: dict[str, dict[str, str]],
                     problems: list[Problem], notes: list[str]) -> None:
    fuzzy: list[str] = []
    for i, rec in enumerate(t.records):
        for col, sheet in (("model", "Models"), ("gpu", "GPUs")):
            name = rec.get(col)
            if name is None or sheet not in canon:
                continue
            target = canon[sheet].get(name.strip().lower())
            where = _cell(t, pos, col, i)
            if target is None:
                problems.append(Problem(where, th.not_found_message(col, name, sheet, list(canon[sheet].values()))))
            else:
                if target != name:
                    fuzzy.append(f"{where} {name!r} -> {target!r}")
                rec[col] = target
        times = [rec.get(k) for k in ("t_attn0_ms", "t_ffn0_ms", "t_other0_ms")]
        total = sum(v or 0 for v in times)
        if all(v is not None for v in times[:2]) and total == 0:
            problems.append(Problem(f"{t.sheet} row {t.rows[i]}", "t_attn0_ms, t_ffn0_ms and "
                                    "t_other0_ms are all 0: at least one 0-hit time must be positive"))
        elif all(v is not None for v in times[:2]) and total < MIN_PREFILL_MS:
            problems.append(Problem(f"{t.sheet} row {t.rows[i]}", f"t_attn0_ms + t_ffn0_ms + t_other0_ms is "
                                    f"{total:g} ms: below {MIN_PREFILL_MS:g} ms, too small to plan with "
                                    f"(the times are in milliseconds)"))
    if fuzzy:
        more = f" (and {len(fuzzy) - 3} more)" if len(fuzzy) > 3 else ""
        notes.append(f"{t.sheet}: {len(fuzzy)} model/gpu reference(s) differ from their names only in "
                     f"case or surrounding spaces; matched them: {'; '.join(fuzzy[:3])}{more}")


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


def _read_settings(wb, problems: list[Problem], scan: SheetScan | None = None,
                   notes: list[str] | None = None) -> tuple[dict[str, Any], list[tuple[Any, Any]]]:
    values = {s.key: s.default for s in schema.SETTING_KEYS}
    extra: list[tuple[Any, Any]] = []
    ws = _find_sheet(wb, schema.SETTINGS)
    if ws is None:
        return values, extra
    spec = {s.key: s for s in schema.SETTING_KEYS}
    last_row = scan.last_row if scan and scan.last_row is not None else ws.max_row
    rows = ws.iter_rows(max_row=max(last_row or 1, 1), max_col=8)
    header = next(rows, None)
    heads = [normalise_header(getattr(c, "value", None)) for c in (header or ())]
    if "key" not in heads or "value" not in heads:
        problems.append(Problem(f"{ws.title} row 1", "needs the two columns 'key' and 'value'"))
        return values, extra
    jk, jv = heads.index("key"), heads.index("value")
    for cells in rows:
        kcell = cells[jk] if jk < len(cells) else None
        vcell = cells[jv] if jv < len(cells) else None
        key = normalise_header(getattr(kcell, "value", None))
        raw = cell_value(vcell)
        if not key:
            continue
        if key not in spec:
            extra.append((getattr(kcell, "value", None), raw))
            continue
        s = spec[key]
        where = f"{ws.title}!{get_column_letter(jv + 1)}{kcell.row}"
        if s.kind == schema.NUMBERS:
            values[key], errs = _parse_numbers(key, raw)
            problems.extend(Problem(where, e) for e in errs)
            continue
        col = Column(schema.SETTINGS, key, "", s.kind, s.description, minimum=s.minimum,
                     maximum=s.maximum, min_open=s.min_open)
        v, err, reading = parse_cell(col, raw, getattr(vcell, "number_format", None))
        if reading and notes is not None:
            notes.append(f"{where} {reading}")
        if err:
            problems.append(Problem(where, err))
        elif v is not None:
            values[key] = v
    return values, extra


def _parse_numbers(key: str, raw: Any) -> tuple[tuple[float, ...], list[str]]:
    """``"200; 450"`` (or one number) -> (200.0, 450.0); each must be a positive number."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return (), []
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        parts = [raw]
    else:
        parts = [p for p in re.split(r"[;\s]+", str(raw).strip()) if p]
    out, errs = [], []
    for p in parts:
        try:
            v = float(p)
        except (TypeError, ValueError):
            errs.append(f"{key} {_show(p)} is not a number (separate bandwidths with ';')")
            continue
        if not math.isfinite(v) or v <= 0:
            errs.append(f"{key} {_show(v)} must be a positive bandwidth in GB/s")
        else:
            out.append(v)
    return tuple(out), errs
