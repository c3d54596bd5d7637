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
    u = re.sub(r"^(?:token|t)(?=/|$)", "tokens", u)
    u = u.replace("\u03bc", "\u00b5")  # Greek small mu typed for the micro sign (both read as micro)
    return {"tpm": "tokens/min", "tps": "tokens/s", "tph": "tokens/h", "tpd": "tokens/day"}.get(u, u)


_add("rate", 1.0, "tokens/min", "tokens/minute", "tokens/mn")
_add("rate", 1 / 1440, "tokens/day", "tokens/d", "tokens/24h")
_add("rate", 1 / 60, "tokens/hour", "tokens/h", "tokens/hr")
_add("rate", 60.0, "tokens/s", "tokens/sec", "tokens/second")
_add("rate", 1 / 10080, "tokens/week", "tokens/wk", "tokens/w")
_add("time", 1.0, "ms", "msec", "milliseconds", "millisecond")
_add("time", 1000.0, "s", "sec", "secs", "s.", "seconds", "second")
_add("time", 1e-3, "us", "µs", "microseconds", "microsecond")
_add("time", 1e-6, "ns", "nanoseconds", "nanosecond")
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
_add("bandwidth", 2**40 / 1e9, "TiB/s")
_add("bandwidth", 1e-3, "MB/s")
_add("tokens", 1.0, "tokens")
_add("count", 1.0, "count", "requests", "GPUs")
_add("bytes_elem", 1.0, "B", "bytes")
_add("flops", 1.0, "TFLOPS")
# a PCIe link's transfer rate per lane (GT/s) is not a bandwidth: refused in a GB/s column
_add("transfers", 1.0, "GT/s", "GTps")

# Units spelt in bits (IEC 80000-13: b is the bit, B the byte; 1 byte = 8 bits). Told apart from
# bytes by a lower-case b after an upper-case prefix (Gb, Gbps, Mb/s) or by ``bit`` spelt out;
# an all-lower-case ``gbps`` stays GB/s, the planner's own spelling (pcie_gbps, kv_gbps).
_PREFIX = {"k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_BITS = re.compile(r"^([kKMGT])(?:b|bit|bits)(/s|ps|/sec)?$")
_BITS_SPELT = re.compile(r"^([kKmMgGtT])(?:bit|bits)(/s|ps|/sec)?$")
# a multiplier before tokens: 'k tokens', 'Mtok/min', 'million tokens/day', 'B tokens/day'
_MULT = {"k": 1e3, "thousand": 1e3, "thousands": 1e3, "m": 1e6, "mn": 1e6, "mm": 1e6, "million": 1e6,
         "millions": 1e6, "b": 1e9, "bn": 1e9, "billion": 1e9, "billions": 1e9, "g": 1e9, "t": 1e12,
         "trillion": 1e12}
_MULT_TOKENS = re.compile(r"^(k|thousands?|m|mn|mm|millions?|b|bn|billions?|g|t|trillion)(?:of)?"
                          r"(tokens?|tok)(/.*)?$")
# rates over a calendar span that is not a fixed number of minutes
_CALENDAR = re.compile(r"^tokens/(month|mo|mth|year|yr|quarter|qtr|q)$")


def _lookup(typed: str) -> tuple[str, float] | tuple[str, None, str] | None:
    """``(quantity, base_per_unit)`` of a typed unit, ``(quantity, None, why)`` for a unit of a
    quantity that has no fixed factor (tokens per month), or None for a unit the planner does
    not know."""
    raw = re.sub(r"\s+", "", typed.strip())
    for rx in (_BITS, _BITS_SPELT):
        if m := rx.match(raw):
            bytes_ = _PREFIX[m.group(1).upper() if m.group(1) in "mgt" else m.group(1)] / 8
            if m.group(2):  # bandwidth, in GB/s
                return "bandwidth", bytes_ / 1e9
            return "bytes", bytes_ / 2**30
    key = _key(typed)
    if m := _MULT_TOKENS.match(key):
        mult = _MULT[m.group(1)]
        rest = "tokens" + (m.group(3) or "")
        base = _UNITS.get(_key(rest))
        if base is not None:
            return base[0], base[1] * mult
        if _CALENDAR.match(rest):
            key = rest
    if m := _CALENDAR.match(key):
        return "rate", None, (f"a {m.group(1)} is not a fixed number of minutes: convert the values to "
                              f"tokens per day (or per minute)")
    return _UNITS.get(key)


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
    shown = header.strip()
    if col.unit == "currency/h":
        return 1.0, None, _money_per_time(shown, typed, col)
    if col.unit == "currency/GiB/month":
        return 1.0, None, _money_per_gib_month(shown, typed, col)
    mine = _UNITS.get(_key(col.unit)) if col.unit in _COLUMN_UNIT else None
    theirs = _lookup(typed)
    if mine is None or theirs is None:  # a unit the planner does not know: left alone
        return 1.0, None, None
    (q_col, base_col), (q_typed, base_typed) = mine, theirs[:2]
    if q_col == q_typed and base_typed is None:
        return 1.0, None, (f"header {shown!r} says {typed}: {theirs[2]}, and write the header as '{col.header}'")
    if q_col != q_typed:
        return 1.0, None, (f"header {shown!r} says {typed}, which is not a unit of {col.name} (in {col.unit}): "
                           f"the values cannot be read as {col.unit}; write the header as '{col.header}' with the "
                           f"values in {col.unit}")
    factor = base_typed / base_col
    if abs(factor - 1) < 1e-12:
        return 1.0, None, None
    if col.kind != NUMBER and not (factor >= 1 and float(factor).is_integer()):
        return 1.0, None, (f"header {shown!r} says {typed} but {col.name} is a whole number of {col.unit}: "
                           f"convert the values (1 {typed} = {_fraction(factor)} {col.unit}) and write the "
                           f"header as '{col.header}'")
    return factor, (f"header {shown!r} is read in {typed}: its values are converted to {col.unit} "
                     f"(1 {typed} = {_fraction(factor)} {col.unit}); the output writes them as '{col.header}'"), None


# money per unit of time in a per-hour price column: per hour is accepted, any other span refused
_PER_HOUR = re.compile(r"^(?:gpu[-_ ]?)?(?:h|hr|hrs|hour|hours)$", re.I)
_MONEY_TIME = re.compile(r"^(.*?)\s*(?:/|\bper\b)\s*(?:gpu[-_ ]?)?([a-z]+)\.?$", re.I)
# a price of a whole machine (node, server, instance, 8 GPUs) in a per-GPU-hour column
_PER_MACHINE = re.compile(r"(?:/|\bper\b)\s*(node|server|instance|machine|host|box|vm|pod|cluster|\d+\s*x?\s*gpus?)"
                          r"\b", re.I)
_SPANS = {"s", "sec", "second", "min", "minute", "day", "d", "week", "wk", "month", "mo", "mth", "year", "yr",
          "quarter", "qtr", "q"}


def _money_per_time(shown: str, typed: str, col: Column) -> str | None:
    """A price header's unit: ``USD/h`` (or ``EUR per hour``) is the column's; a price per month,
    day, minute or year is refused (it would be read as per hour), and so is a price in cents."""
    m = _MONEY_TIME.match(typed.strip())
    cur = (m.group(1) if m else typed).strip().lower()
    if cur in ("cents", "cent", "ct", "c", "¢"):
        return (f"header {shown!r} says {typed}: {col.name} is in currency units per GPU-hour, not cents: "
                f"divide the values by 100 and write the header as '{col.name} [currency/h]'")
    if (whole := _PER_MACHINE.search(typed)) is not None:  # red team 7: 'USD/node-hour' read as per GPU-hour
        return (f"header {shown!r} says {typed}, a price per {whole.group(1)}: {col.name} is the price of one "
                f"GPU-hour and the values would be read as per GPU; divide them by the GPUs of one "
                f"{whole.group(1)} (8 on an HGX node) and write the header as '{col.name} [currency/h]'")
    if m is None or _PER_HOUR.match(m.group(2)):
        return None
    if m.group(2).lower() in _SPANS:
        return (f"header {shown!r} says {typed}, a price per {m.group(2)}: {col.name} is the price of one "
                f"GPU-hour and the values would be read as per hour; convert them (a month is Settings "
                f"hours_per_month hours, 730 by default) and write the header as '{col.name} [currency/h]'")
    return None


# a currency symbol as the code it stands for; the yen/yuan sign stands for two and is left alone
_SYMBOLS = {"$": "USD", "US$": "USD", "€": "EUR", "£": "GBP"}
_CODE = re.compile(r"^[A-Za-z]{3}$")


def currency_code(text: str | None) -> str | None:
    """A currency as its upper-case code: ``'eur'`` -> ``'EUR'``, ``'$'`` -> ``'USD'`` (None: not
    a recognisable code or symbol, e.g. ``'currency'`` or ``'¥'``)."""
    t = str(text or "").strip()
    if t in _SYMBOLS:
        return _SYMBOLS[t]
    if _CODE.match(t) and t.lower() not in ("gib", "gpu", "per", "cur"):
        return t.upper()
    return None


def header_currency(header: str, col: Column) -> str | None:
    """The currency a price header names (``hourly_cost (EUR/h)`` -> ``'EUR'``; None: none or not a
    price column), to be held against Settings ``currency`` (the label every cost column carries)."""
    typed = header_unit(header)
    if typed is None or not str(col.unit).startswith("currency"):
        return None
    money = re.split(r"\s*(?:/|\bper\b)\s*", typed.strip(), maxsplit=1, flags=re.I)[0]
    return currency_code(money)


_PER_SIZE_TIME = re.compile(r"^(.*?)\s*(?:/|\bper\b)\s*([A-Za-z]+)\s*(?:/|\bper\b)\s*([A-Za-z]+)\.?$", re.I)


def _money_per_gib_month(shown: str, typed: str, col: Column) -> str | None:
    """A Tiers price header's unit: ``USD/GiB/month`` is the column's; a price per GB, TB or TiB,
    or per day or year, is refused (read as per GiB-month it would be off by 2^30/10^9 to 12x)."""
    m = _PER_SIZE_TIME.match(typed.strip())
    if m is None:
        return None
    size, span = m.group(2), m.group(3).lower()
    if size.lower() == "gib" and span in ("month", "mo", "mth"):
        return None
    return (f"header {shown!r} says {typed}: {col.name} is a price per GiB (2^30 bytes) and month; convert the "
            f"values and write the header as '{col.name} [currency/GiB/month]'")


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


# spellings of the growth rate outside the sheets that have it (Workloads, Settings)
_GROWTH = {"growth": "demand_growth", "growth_rate": "demand_growth", "demand_growth_rate": "demand_growth",
           "growth_per_period": "demand_growth", "qoq_growth": "demand_growth"}


def foreign_headers(title: str, sheet: str, extras: list[tuple[int, str]]) -> list[tuple[Place, str]]:
    """Extra headers that name a numeric column of another input sheet or a Settings key (``demand_growth``
    in Demand, ``kv_bytes`` in Workloads, ``hourly_cost`` in Workloads): refused with where the value
    belongs, since as typed it would be kept as a note column and change nothing (issue 20 red team: a
    growth column typed in Demand was ignored). Text columns (``source``, ``note``) stay note columns."""
    from planner.core import schema
    from planner.inputs.cells import normalise_header

    numeric = (schema.NUMBER, schema.INT, schema.FRACTION)
    home: dict[str, list[str]] = {}
    for other in schema.SHEETS + schema.OPTIONAL_SHEETS:
        if other == sheet:
            continue
        for c in schema.columns(other):
            if c.kind in numeric:
                home.setdefault(c.name, []).append(f"the {other} sheet")
    for s_ in schema.SETTING_KEYS:
        if s_.kind in numeric:
            home.setdefault(s_.key, []).append("Settings")
    mine = {c.name for c in schema.columns(sheet)}
    out = []
    for j, h in extras:
        key = normalise_header(h)
        key = _GROWTH.get(key, key)
        if key in home and key not in mine:
            out.append((Place.cell(title, j + 1, 1),
                        f"header {h!r} is a column of {' and of '.join(home[key])}, not of {title}: as typed its "
                        f"values would be ignored; move them there, or rename the header to keep it as a note "
                        f"column"))
    return out
