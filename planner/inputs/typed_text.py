"""What a typist meets: numbers typed as text, units and currency symbols in numbers,
closest names, totals rows, near-miss headers, over-long names.

Numbers typed as text (a cell formatted as Text, a paste from a web page or a CSV) are read
by :func:`read_number_text` under one rule: **a separator is read only when it can mean one
thing; a text that two locales read differently is refused, never guessed.**

* Spaces (also no-break and thin spaces) and apostrophes only ever group thousands:
  ``"8 192"`` is 8192, ``"1'234'567"`` is 1234567.
* A mark that appears more than once groups thousands: ``"1,024,000"`` and ``"1.234.567"``.
* When both ``,`` and ``.`` appear, the last one (appearing once) is the decimal mark and the
  other groups thousands: ``"8,192.5"`` is 8192.5, ``"8.192,5"`` is 8192.5.
* A lone ``,`` or ``.`` that is not followed by exactly three digits cannot group thousands, so it
  is a decimal mark: ``"2.5"`` is 2.5 and ``"2,5"`` is 2.5 (a decimal comma: accepted, because no
  locale reads it as anything else; the note shows the reading). Nor can it group thousands after
  a leading 0 (``"0.125"``, ``"0,125"``) or after more than three digits (``"1234.567"``).
* A lone ``,`` or ``.`` followed by exactly three digits after 1 to 3 leading digits (``"1,024"``,
  ``"8.192"``) is **ambiguous**: 1024 in an English locale, 1.024 in a German or French one.
  It is refused with the two readings; typing the number itself (a number cell) settles it.
* Groups must be of three digits after a first group of 1 to 3: ``"12,34,567"`` (Indian lakh
  grouping) and ``"1.2.3"`` are refused.

``"1,024"`` was once read as 1024 (and a test said so); it is refused now because it is the
same ambiguity as the ``"8.192"`` of issue 13 seen from the other locale: a workbook typed in
Germany and one typed in the US would silently plan different numbers.

Every accepted text with a separator is reported in one note per sheet (what was read as what).
A currency symbol or code (``$0.95``, ``€1,20``, ``0.95 USD``) or a unit (``25 GB/s``, ``80 GB``)
typed into a number is refused with the hint to type the number alone, in the column's unit.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

MAX_NAME = 255  # Excel's MATCH and COUNTIF do not look up longer text

# words that name a totals row (compared lower-case, without spaces, hyphens and a trailing colon)
TOTALS_WORDS = frozenset({"total", "totals", "sum", "subtotal", "subtotals", "grandtotal"})

_GROUP_ONLY = " \u00a0\u202f\u2009'\u2019"  # characters that only ever group thousands
_BODY = re.compile(r"[+-]?\d[\d.,%s]*" % re.escape(_GROUP_ONLY) + r"(?<=\d)")
_CURRENCY = re.compile(r"(?:[A-Z]{0,3}\$|[€£¥₹₩₽₺₪₫฿¢]|(?:USD|EUR|GBP|JPY|CNY|RMB|CHF|INR|KRW|CAD|AUD|SEK|"
                       r"NOK|DKK|PLN|CZK|HUF|BRL|MXN|SGD|HKD|TWD|ZAR|RUB|TRY|ILS|NZD))")
_UNIT = re.compile(r"[A-Za-zµ/][A-Za-zµ/ ²^0-9.-]{0,19}")
_MAGNITUDE = {"k": (1e3, 2 ** 10), "K": (1e3, 2 ** 10), "M": (1e6, 2 ** 20)}

# header words a person may type for a required column (after normalise_header)
SYNONYMS = {
    "isl": ("input", "input_tokens", "input_len", "input_length", "prompt", "prompt_tokens", "prompt_len",
            "prompt_length", "in_tokens"),
    "osl": ("output", "output_tokens", "output_len", "output_length", "completion", "completion_tokens",
            "generation_len", "out_tokens"),
    "tp": ("tensor_parallel", "tensor_parallelism", "tp_size", "gpus_per_instance"),
    "hbm_gib": ("hbm", "memory", "vram", "hbm_gb", "mem", "memory_gib", "memory_gb"),
    "hit_target": ("target_hit", "hit_ratio", "hit_rate", "cache_hit", "hit"),
    "kv_bytes": ("kv_dtype_bytes", "kv_cache_bytes", "bytes_per_kv"),
    "layers": ("num_layers", "n_layers", "num_hidden_layers"),
    "workload": ("name", "workload_name", "case"),
    "model": ("model_name",),
    "gpu": ("gpu_name", "gpu_type", "accelerator"),
}

_UNIT_WORDS = {"GiB": "GiB (2^30 bytes)", "GB/s": "GB/s (10^9 bytes per second)", "ms": "milliseconds (ms)",
               "count": "a whole count", "tokens": "tokens (a whole number)", "fraction":
               "a fraction from 0 to 1 (or a percentage such as 85%)", "1e9": "billions (1e9)",
               "B": "bytes (B)", "currency/h": "currency per GPU-hour (the Settings currency)",
               "tokens/min": "tokens per minute", "TB/s": "TB/s (10^12 bytes per second)"}


def unit_text(unit: str) -> str:
    """A column's unit as a reader says it: ``'GiB'`` -> ``'GiB (2^30 bytes)'``."""
    return _UNIT_WORDS.get(unit, unit)


def _show(v: float) -> str:
    return str(int(v)) if float(v).is_integer() and abs(v) < 1e15 else repr(float(v))


# --------------------------------------------------------------------------- numbers as text
def read_number_text(text: str) -> tuple[float | None, str | None, str | None]:
    """Read a number typed as text under the separator rule of the module docstring.

    Parameters
    ----------
    text : str
        The cell text without surrounding spaces.

    Returns
    -------
    (value, note, problem) : tuple
        ``value`` the number (None when refused or not a number); ``note`` the reading of an
        accepted text with separators (``"'8 192' read as 8192"``), else None; ``problem`` the
        reason a text with separators is refused (``"is ambiguous: ..."``), else None. All three
        None: not a number at all (the caller says so).
    """
    s = text.strip()
    if not any(ch in s for ch in ",." + _GROUP_ONLY):
        try:
            return float(s), None, None      # "2048", "1e3", "-5" (and inf/nan, judged by the caller)
        except ValueError:
            return None, None, None
    if re.fullmatch(r"[+-]?\d*\.\d+[eE][+-]?\d+", s):  # scientific notation: the '.' is a decimal point
        return float(s), None, None
    if not _BODY.fullmatch(s) or re.search(r"[^\d]{2}", s.lstrip("+-")):
        return None, None, None
    sign = "-" if s.startswith("-") else ""
    body = s.lstrip("+-")
    seps = [ch for ch in body if not ch.isdigit()]
    groups = re.split(r"[^\d]", body)
    kinds = {"g" if ch in _GROUP_ONLY else ch for ch in seps}
    decimal = None  # the decimal mark, when there is one
    if "," in kinds and "." in kinds:
        last = seps[-1]
        other = "." if last == "," else ","
        if "g" in kinds or seps.count(last) != 1:
            return None, None, "is not a number: its ',' and '.' are in an order no locale writes"
        decimal, grouping = last, other
    elif kinds == {"g"}:
        grouping = "g"
    else:
        mark = (kinds - {"g"}).pop()
        if "g" in kinds:  # "8 192,5": spaces group, so the mark is the decimal one
            if seps.count(mark) != 1 or seps[-1] != mark:
                return None, None, "is not a number: its separators are out of place"
            decimal, grouping = mark, "g"
        elif seps.count(mark) > 1:
            grouping = mark
        else:
            lead, tail = groups
            if len(tail) != 3 or lead.startswith("0") or len(lead) > 3:
                decimal, grouping = mark, None
            else:
                as_group = float(sign + lead + tail)
                as_decimal = float(f"{sign}{lead}.{tail}")
                point = "a decimal point" if mark == "." else "a decimal comma"
                return None, None, (f"is ambiguous: {_show(as_group)} with {mark!r} grouping thousands, or "
                                    f"{_show(as_decimal)} with {point}; type the number itself in a number "
                                    f"cell ({_show(as_group)} or {_show(as_decimal)}), not as text")
    int_groups, frac = (groups[:-1], groups[-1]) if decimal else (groups, "")
    if decimal and grouping and any(ch == decimal for ch in seps[:-1]):
        return None, None, "is not a number: its separators are out of place"
    if len(int_groups) > 1:
        if not (1 <= len(int_groups[0]) <= 3) or any(len(g) != 3 for g in int_groups[1:]):
            shown = {"g": "spaces"}.get(grouping, repr(grouping))
            return None, None, f"is not a number: its groups between {shown} are not of three digits"
    value = float(f"{sign}{''.join(int_groups)}.{frac or '0'}")
    how = []
    spaces = "apostrophes" if any(ch in "'\u2019" for ch in seps) else "spaces"
    if grouping:
        how.append({"g": spaces, ",": "','", ".": "'.'"}[grouping] + " grouping thousands")
    if decimal:
        how.append("a decimal point" if decimal == "." else "a decimal comma")
    return value, f"{text.strip()!r} read as {_show(value)} ({' and '.join(how)})", None


def typed_unit(text: str) -> tuple[str, str, float | None] | None:
    """A currency or unit typed around a number: ``'$0.95'`` -> ``('currency symbol', '$', 0.95)``.

    Returns ``(what, symbol, number)`` (``number`` None when the number part is itself not
    clear), or None when the text is not a number with a symbol or unit.
    """
    s = text.strip()
    m = re.fullmatch(r"(?P<pre>%s)?\s*(?P<num>[+-]?\d[\d.,%s]*\d|[+-]?\d)\s*(?P<post>.*)" % (
        _CURRENCY.pattern, re.escape(_GROUP_ONLY)), s)
    if not m or (not m.group("pre") and not m.group("post")):
        return None
    pre, post = m.group("pre"), m.group("post").strip()
    if pre and post and not _CURRENCY.fullmatch(post):
        if not (pre and post.startswith("/")):  # "$2.50/h"
            return None
    if post and not pre and not (_CURRENCY.fullmatch(post) or _UNIT.fullmatch(post)):
        return None
    if post.startswith("%"):
        return None
    value, _, problem = read_number_text(m.group("num"))
    number = value if problem is None else None
    if pre or _CURRENCY.fullmatch(post):
        return "currency symbol", pre or post, number
    if post in _MAGNITUDE:
        return "multiplier", post, number
    return "unit", post, number


# a typed unit -> (column unit, factor to it): "80 GB" in a GiB column is 74.51 GiB, not 80
_CONVERT = {"gb": ("GiB", 1e9 / 2 ** 30), "tb": ("GiB", 1e12 / 2 ** 30), "mib": ("GiB", 2 ** -10),
            "tib": ("GiB", 2 ** 10), "tb/s": ("GB/s", 1e3), "gib/s": ("GB/s", 2 ** 30 / 1e9),
            "mb/s": ("GB/s", 1e-3), "s": ("ms", 1e3), "us": ("ms", 1e-3), "µs": ("ms", 1e-3),
            "tokens": ("tokens", 1), "token": ("tokens", 1), "tok": ("tokens", 1), "b": ("1e9", 1),
            "bn": ("1e9", 1)}


def _in_column_unit(number: float, typed: str, unit: str) -> float | None:
    """``number`` of the ``typed`` unit in the column's ``unit`` (None: not convertible)."""
    if typed.lower() == unit.lower():
        return number
    to, factor = _CONVERT.get(typed.lower(), (None, None))
    return number * factor if to == unit else None


def unit_problem(name: str, unit: str, text: str) -> str | None:
    """The message for a currency or unit typed into a number of column ``name`` (None: none)."""
    found = typed_unit(text)
    if found is None:
        return None
    what, symbol, number = found
    col_unit = f"the column is in {unit_text(unit)}" if unit else "the column holds a plain number"
    if what == "multiplier":
        if number is None:
            return f"{name} {text!r} has the multiplier {symbol!r} typed in: type the whole number; {col_unit}"
        dec, binary = _MAGNITUDE[symbol]
        return (f"{name} {text!r} has the multiplier {symbol!r} typed in: type the whole number "
                f"({_show(number * dec)}, or {_show(number * binary)} if a power of two was meant); {col_unit}")
    if what == "unit":
        converted = _in_column_unit(number, symbol, unit) if number is not None else None
        if converted is None:
            return f"{name} {text!r} has the unit {symbol!r} typed in: drop it and type the number alone; {col_unit}"
        if converted != number:
            return (f"{name} {text!r} has the unit {symbol!r} typed in: {text.strip()} is {converted:.4g} {unit}, "
                    f"type {converted:.4g}; {col_unit}")
    alone = f" ({_show(number)})" if number is not None else ""
    return f"{name} {text!r} has the {what} {symbol!r} typed in: drop it and type the number alone{alone}; {col_unit}"


# --------------------------------------------------------------------------- names
def fold(name: str) -> str:
    """A name compared loosely: lower case, without spaces, hyphens and underscores."""
    return re.sub(r"[\s\-_]+", "", name.lower())


def closest(name: str, names: list[str], n: int = 3) -> list[str]:
    """The names closest to ``name``: those equal to it after :func:`fold` when there are any,
    else the difflib-closest (ratio at least 0.6 on the folded names, and within 0.1 of the best).
    """
    same = [x for x in names if fold(x) == fold(name)]
    if same:
        return same[:n]
    scored = sorted(((difflib.SequenceMatcher(None, fold(name), fold(x)).ratio(), i) for i, x in enumerate(names)),
                    key=lambda t: (-t[0], t[1]))
    best = scored[0][0] if scored else 0.0
    return [names[i] for r, i in scored if r >= 0.6 and r >= best - 0.1][:n]


def not_found_message(col: str, name: str, sheet: str, names: list[str], few: int = 8) -> str:
    """``gpu 'H100 PCIe 80GB' is not in GPUs: did you mean 'H100-PCIe-80GB'? (GPUs has: ...)``."""
    msg = f"{col} {name!r} is not in {sheet}"
    near = closest(name, names)
    if near:
        msg += ": did you mean " + " or ".join(repr(x) for x in near) + "?"
    if 0 < len(names) <= few:
        msg += f" ({sheet} has: {', '.join(names)})"
    return msg


def is_totals_label(value: Any) -> bool:
    """``'TOTAL'``, ``'Total:'``, ``'Sum'``, ``'Sub-total'``, ``'Grand total'``: a totals row's name."""
    if not isinstance(value, str):
        return False
    return re.sub(r"[\s\-_:]+", "", value.lower()) in TOTALS_WORDS


TOTALS_INSIDE = ("looks like a totals row: remove it, or leave a blank row above it (a blank row followed "
                 "by a totals row ends the table)")


def too_long(name: str, text: str) -> str | None:
    """The message for a name Excel cannot look up (over :data:`MAX_NAME` characters)."""
    if len(text) > MAX_NAME:
        return (f"{name} is {len(text)} characters long: at most {MAX_NAME} (Excel's MATCH and COUNTIF "
                f"cannot look up longer text); shorten it")
    return None


# --------------------------------------------------------------------------- headers
def header_hint(missing: str, extras: list[tuple[str, str, str]]) -> tuple[str, str] | None:
    """The extra header most like a missing required column.

    Parameters
    ----------
    missing : str
        The missing column's name.
    extras : list of (normalised header, header as typed, cell)
        Headers that named no column.

    Returns
    -------
    (typed, cell) of the best candidate, or None.
    """
    best, best_score = None, 0.0
    for key, typed, cell in extras:
        if key in SYNONYMS.get(missing, ()):
            score = 1.0
        elif key and (missing.startswith(key + "_") or key.startswith(missing + "_")
                      or (len(missing.split("_")[0]) >= 3 and missing.split("_")[0] == key.split("_")[0])):
            score = 0.9
        else:
            score = difflib.SequenceMatcher(None, key, missing).ratio()
            if score < 0.75:
                continue
        if score > best_score:
            best, best_score = (typed, cell), score
    return best
