"""Cell parsing: one input cell to a value of its column's kind, or a problem message.

``parse_value`` / ``parse_cell`` for the columns of ``planner.core.schema``; error cells
(:class:`ExcelError`), header normalising, and the ``;``-separated numbers of a Settings value.
"""

from __future__ import annotations

import math
import re
from typing import Any

from planner.core.schema import ANY, CHOICE, FRACTION, INT, TEXT, Column, plausible
from planner.inputs import typed_text as th


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


_BREAKS = {"\n": "LF", "\r": "CR", "\v": "vertical tab", "\f": "form feed", "\x1c": "U+001C", "\x1d": "U+001D",
           "\x1e": "U+001E", "\x85": "U+0085 next line", "\u2028": "U+2028 line separator",
           "\u2029": "U+2029 paragraph separator", "\x00": "NUL"}


def line_break(text: str, strip: bool = True) -> str | None:
    """The first line break in ``text`` (every character :meth:`str.splitlines` splits on,
    and NUL), named; None when the text is one line. Surrounding spaces are not counted
    with ``strip`` (a cell's value is read stripped: a trailing newline typed by accident is
    dropped, not refused)."""
    text = text.strip() if strip else text
    for ch in text:
        if ch in _BREAKS:
            return _BREAKS[ch]
    # Excel stores a CR (or another control character) of a cell as the escape _x000D_, which
    # openpyxl's read-only reader leaves as it is: Excel shows a line break (ECMA-376 ST_Xstring)
    if m := _XML_ESCAPED_BREAK.search(text):
        return _BREAKS[chr(int(m.group(1), 16))]
    return None


_XML_ESCAPED_BREAK = re.compile(r"_x(000[ABCD]|001[CDE]|0085|202[89]|0000)_", re.I)


# spellings of the Demand sheet's demand_unit choices (spaces removed, "per" read as "/")
_RATE_CHOICES = {u: c for c, us in {
    "tokens/min": ("tokens/min", "tokens/minute", "tok/min", "t/min", "tpm", "min", "minute", "/min"),
    "tokens/hour": ("tokens/hour", "tokens/h", "tokens/hr", "tok/h", "tok/hour", "t/h", "tph", "hour", "h", "hourly"),
    "tokens/day": ("tokens/day", "tokens/d", "tok/day", "tok/d", "t/day", "t/d", "tpd", "day", "d", "daily",
                   "tokens/24h"),
}.items() for u in us}
_PER_SECOND = {"tokens/s", "tokens/sec", "tokens/second", "tok/s", "t/s", "tps", "s", "sec", "second", "/s",
               "tokens//s", "tokens//second", "/second"}


# names of one statistic (the 50th percentile is the median; a mean is an average), for the choices
# that name statistics (Measurements ttft_stat, Workloads slo_percentile)
_SAME_STATISTIC = {"median": ("p50",), "p50": ("median",), "50th": ("p50", "median"), "average": ("mean",),
                   "avg": ("mean",)}


def _parse(col: Column, raw: Any, number_format: str | None, note: list[str]) -> tuple[Any, str | None]:
    if col.kind == ANY:  # kept as typed: a number, or a text without its surrounding spaces
        if isinstance(raw, bool):
            return None, f"{col.name} {raw} is neither a number nor a text"
        if isinstance(raw, (int, float)):
            return float(raw), None
        return str(raw).strip(), None
    if isinstance(raw, str) and (brk := line_break(raw)):  # names become file names, titles, headers
        return None, (f"{col.name} {raw.strip()!r} contains a line break ({brk}): names and labels must "
                      f"be one line")
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
        if text not in col.choices and set(col.choices) == set(_RATE_CHOICES.values()):
            text = _RATE_CHOICES.get(re.sub(r"\s+", "", text).replace("per", "/").lstrip("/"), text)
            if text not in col.choices and re.sub(r"\s+", "", text) in _PER_SECOND:
                return None, (f"{col.name} {_show(raw)} is not one of {allowed}: type the demand per minute "
                              f"(x 60), or head the demand column 'demand_tpm (tokens/s)' to have it converted")
        if text not in col.choices:  # one statistic, two names: ttft_stat says median, slo_percentile p50
            text = next((c for c in _SAME_STATISTIC.get(text.replace(" ", ""), ()) if c in col.choices), text)
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
        elif (pl := plausible(col.sheet, col.name)) is not None and pl.over_max:
            hint = f" {pl.over_max}"  # the unit mistake that gets there (schema.PLAUSIBLE)
        return None, f"{col.name} {_show(v)} is outside {rng}{hint}"
    if col.kind == FRACTION and col.maximum is not None and col.maximum > 1 and v > 1 and not (
            (isinstance(raw, str) and raw.strip().endswith("%")) or "%" in str(number_format or "")):
        # a fraction that may exceed 1 (a growth rate): a plain 10 is most likely 10%, not +1,000%
        return None, (f"{col.name} {_show(v)} would be {v:+.0%} ({v + 1:g}x) a period: if {_show(v)}% was meant, "
                      f"type {v / 100:g} or {_show(v)}%; a growth above 100% a period is typed as a "
                      f"percentage ({v * 100:g}%)")
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


def parse_numbers(key: str, raw: Any) -> tuple[tuple[float, ...], list[str]]:
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
