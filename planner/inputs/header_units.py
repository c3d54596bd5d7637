"""Units typed in headers: converted to the column's unit with a note, or refused (issue 20).

A header may carry a unit in brackets or parentheses (``demand_tpm (tokens/day)``). The
reader drops it to find the column, and this module decides what the unit means:

* the column's own unit (``isl (tokens)``, ``hbm_gib [GiB]``): nothing to do;
* a unit of the same quantity (``tokens/day`` for a tokens/min column, ``s`` for ms, ``GB``
  for GiB, ``TB/s`` for GB/s): the values are **converted** to the column's unit, and a note
  says so (``demand_tpm (tokens/day)``: 1 tokens/day = 1/1,440 tokens/min);
* a known unit of another quantity (``ttft_ms (tokens)``, ``isl (GB)``): **refused**, since the
  values cannot be read in the column's unit;
* anything else (``hourly_cost (USD/h)``, ``note (free text)``): left alone.

Conversions apply only to real-valued columns: a whole-number column (``isl``, ``tp``) has no
other unit that converts to a whole number for every value.

The factors are exact definitions: a day is 1,440 minutes, an hour 60, a second 1/60 of a
minute; 1 GB = 10^9 B and 1 GiB = 2^30 B (IEC 80000-13); 1 TB/s = 1,000 GB/s.
"""

from __future__ import annotations

import re

from planner.core.places import Place
from planner.core.schema import NUMBER, Column

# quantity of each unit the planner knows, and its size in the quantity's base unit
# (tokens/min, ms, GiB, GB/s, tokens, fraction, count)
_UNITS: dict[str, tuple[str, float]] = {}


def _add(quantity: str, base_per_unit: float, *spellings: str) -> None:
    for s in spellings:
        _UNITS[_key(s)] = (quantity, base_per_unit)


def _key(unit: str) -> str:
    """A unit compared loosely: lower case, no spaces, ``per`` as ``/``, plural ``tokens``."""
    u = re.sub(r"\s+", "", unit.strip().lower()).replace("per", "/").replace("tok/", "tokens/")
    u = re.sub(r"^token(?=/|$)", "tokens", u)
    return {"tpm": "tokens/min", "tps": "tokens/s", "tph": "tokens/h", "tpd": "tokens/day"}.get(u, u)


_add("rate", 1.0, "tokens/min", "tokens/minute", "tokens/mn")
_add("rate", 1 / 1440, "tokens/day", "tokens/d")
_add("rate", 1 / 60, "tokens/hour", "tokens/h", "tokens/hr")
_add("rate", 60.0, "tokens/s", "tokens/sec", "tokens/second")
_add("time", 1.0, "ms", "msec", "milliseconds", "millisecond")
_add("time", 1000.0, "s", "sec", "seconds", "second")
_add("time", 1e-3, "us", "µs", "microseconds")
_add("time", 60000.0, "min", "minutes")
_add("bytes", 1.0, "GiB")
_add("bytes", 1e9 / 2**30, "GB")
_add("bytes", 2**-10, "MiB")
_add("bytes", 1e6 / 2**30, "MB")
_add("bytes", 2**10, "TiB")
_add("bytes", 1e12 / 2**30, "TB")
_add("bandwidth", 1.0, "GB/s", "GBps")
_add("bandwidth", 1e3, "TB/s", "TBps")
_add("bandwidth", 2**30 / 1e9, "GiB/s")
_add("bandwidth", 1e-3, "MB/s")
_add("tokens", 1.0, "tokens")
_add("count", 1.0, "count", "requests", "GPUs")
_add("bytes_elem", 1.0, "B", "bytes")
_add("flops", 1.0, "TFLOPS")

_COLUMN_UNIT = {"tokens/min": "tokens/min", "ms": "ms", "GiB": "GiB", "GB/s": "GB/s", "TB/s": "TB/s",
                "tokens": "tokens", "count": "count", "B": "B", "TFLOPS": "TFLOPS"}

_HEADER_UNIT = re.compile(r"[\[(]\s*([^\[\]()]*?)\s*[\])]\s*$")


def header_unit(header: str) -> str | None:
    """The unit typed at the end of a header in brackets or parentheses (None: none)."""
    m = _HEADER_UNIT.search(str(header))
    return m.group(1) if m and m.group(1) else None


def _fraction(f: float) -> str:
    """A factor as a person reads it: ``1/1,440``, ``60``, ``0.9313``."""
    if f < 1 and abs(1 / f - round(1 / f)) < 1e-9:
        return f"1/{round(1 / f):,}"
    return f"{f:,.6g}"


def conversion(header: str, col: Column) -> tuple[float, str | None, str | None]:
    """How the values under ``header`` are read into ``col``.

    Parameters
    ----------
    header : str
        The header as typed (``'demand_tpm (tokens/day)'``).
    col : Column
        The schema column the header names.

    Returns
    -------
    (factor, note, problem) : tuple
        ``factor`` multiplies each value into the column's unit (1: none); ``note`` says a
        conversion was made; ``problem`` refuses a unit that contradicts the column's.
    """
    typed = header_unit(header)
    if typed is None or not col.unit:
        return 1.0, None, None
    mine = _UNITS.get(_key(col.unit)) if col.unit in _COLUMN_UNIT else None
    theirs = _UNITS.get(_key(typed))
    if mine is None or theirs is None:  # a unit the planner does not know: left alone
        return 1.0, None, None
    (q_col, base_col), (q_typed, base_typed) = mine, theirs
    shown = header.strip()
    if q_col != q_typed:
        return 1.0, None, (f"header {shown!r} says {typed}, which is not a unit of {col.name} (in {col.unit}): "
                           f"the values cannot be read as {col.unit}; write the header as '{col.header}' with the "
                           f"values in {col.unit}")
    factor = base_typed / base_col
    if abs(factor - 1) < 1e-12:
        return 1.0, None, None
    if col.kind != NUMBER:
        return 1.0, None, (f"header {shown!r} says {typed} but {col.name} is a whole number of {col.unit}: "
                           f"convert the values (1 {typed} = {_fraction(factor)} {col.unit}) and write the "
                           f"header as '{col.header}'")
    return factor, (f"header {shown!r} is read in {typed}: its values are converted to {col.unit} "
                     f"(1 {typed} = {_fraction(factor)} {col.unit}); the output writes them as '{col.header}'"), None


def near_miss_headers(title: str, cols, col_of: dict[str, int], extras: list[tuple[int, str]]) -> list[tuple[str, str]]:
    """Extra headers that are close to an optional column's name the sheet lacks
    (``demand (tokens/min)`` for ``demand_tpm``): refused with the column they probably meant,
    since their values would otherwise be kept as an extra column and the column read as blank.

    Required columns are left to the reader's "required column is missing" message, which
    already names the near-miss header. Returns ``(place, message)`` pairs.
    """

    from planner.inputs import typed_text as th
    from planner.inputs.cells import normalise_header

    out: list[tuple[str, str]] = []
    taken: set[int] = set()
    for c in cols:
        if c.name in col_of or c.required in (True, "catalog"):
            continue
        cand = [(normalise_header(h), h, Place.cell(title, j + 1, 1)) for j, h in extras
                if j not in taken]
        found = th.header_hint(c.name, cand)
        if found is None:
            continue
        typed, where = found
        taken.update(j for j, h in extras if h == typed)
        unit = f", in {th.unit_text(c.unit)}" if c.unit else ""
        out.append((where, f"header {typed!r} names no column of {title}; it looks like {c.name} ({c.description}"
                           f"{unit}): rename it '{c.header}' (as typed, its values would be ignored and {c.name} "
                           f"read as blank), or rename it to something else to keep it as a note column"))
    return out
