"""Period labels read at the input boundary: Settings ``periods`` (a list of labels or a quarter
range) and the Demand sheet's ``period`` cells (the per-period plan is :mod:`planner.finance.periods`).

A calendar quarter typed in any common spelling is read as ``YYYY-Qn`` (``2027Q1``, ``2027 Q1``,
``2027-q1``, ``Q1 2027``, ``Q1-2027``, ``Q1'27``, ``2027-Q01``), and a date (a date cell, or
``2027-01-01`` typed as text, or a date cell that lost its date format and arrives as its serial day
number, 46388: :func:`serial_date`) as the calendar quarter it falls in, so one quarter is never two
periods because of how it was typed (issue 20, red team: ``2027 Q1`` in Demand beside Settings
``2027-Q1..2027-Q4`` was planned as a fifth period while 2027-Q1 kept the grown demand). Other labels
(``FY27 Q1``, ``Jan``, ``H1``) are kept as typed, compared ignoring case and repeated spaces.
"""

from __future__ import annotations

import datetime as _dt
import re

QUARTER = re.compile(r"^\s*(\d{4})\s*-\s*Q([1-4])\s*$", re.I)
_RANGE = re.compile(r"^(.*?)\s*(?:\.\.|–|—| to | - )\s*(.*)$")
_YEAR_Q = re.compile(r"^(\d{4})\s*[-/_ ]?\s*Q0?([1-4])$", re.I)
_Q_YEAR = re.compile(r"^Q0?([1-4])\s*[-/_ ']?\s*(\d{4}|\d{2})$", re.I)
# quarters inside a longer text ('2027-Q1 2027-Q2', '2027Q1/2027Q2', 'Q1 2027 Q2 2027')
_QUARTERS_IN = re.compile(r"\d{4}\s*[-/_ ]?\s*Q0?[1-4](?![0-9])|Q0?[1-4]\s*[-/_ ']?\s*(?:\d{4}|\d{2})(?![0-9])", re.I)
_ISO_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(?:[ T]00:00(?::00)?)?$")
# A date typed in a cell without a date format arrives as Excel's serial day number (46388 is
# 2027-01-01). Read as a date only within [SERIAL_MIN, SERIAL_MAX], 2000-01-01 .. 2099-12-31: a planning
# period lies in this century, while a smaller number is a label a plan may use (a period number 1, 2,
# 3, or a year 2027, which as a serial would be 1905-07-19), and no plan is for a date before 2000.
# Excel's 1900 date system: day 1 is 1900-01-01 and day 60 the 1900-02-29 Lotus kept, so from day 61
# on the serial counts from 1899-12-30 (ECMA-376 Part 1, 18.17.4.1 "Date Conversion for Serial Values").
SERIAL_MIN, SERIAL_MAX = 36526, 73050
_SERIAL = re.compile(r"^\d{5}(?:\.\d+)?$")
_SERIAL_EPOCH = _dt.date(1899, 12, 30)
# Excel's 1904 date system (a workbook saved with workbookPr date1904="1", Excel for Mac before 2011
# and any workbook of that lineage): day 0 is 1904-01-01, so a serial is 1,462 days less than the
# 1900 system's for the same date (ECMA-376 Part 1, 18.17.4.1; 1904-01-01 is the 1900 system's
# 1462). openpyxl reads the workbook's epoch (``Workbook.epoch``) and converts date cells itself; a
# serial without a date format arrives as a plain number, which :func:`serial_date` converts.
_SERIAL_EPOCH_1904 = _dt.date(1904, 1, 1)
SERIAL_1904_OFFSET = 1462


def serial_date(value, date1904: bool = False) -> _dt.date | None:
    """The date of an Excel serial day number typed without a date format (a number, or its text as
    a text column reads it), or None when ``value`` is no serial of a date from 2000-01-01 to
    2099-12-31 ([SERIAL_MIN, SERIAL_MAX] in the 1900 date system, 1,462 less in the 1904 one:
    ``date1904``, the workbook's own).

    >>> serial_date("46388")
    datetime.date(2027, 1, 1)
    >>> serial_date(44926, date1904=True)
    datetime.date(2027, 1, 1)
    >>> serial_date(2027) is None
    True
    """
    if isinstance(value, bool):
        return None
    text = str(value).strip()
    if text.endswith(".0"):
        text = text[:-2]
    shift = SERIAL_1904_OFFSET if date1904 else 0
    if not _SERIAL.match(text) or not SERIAL_MIN - shift <= float(text) <= SERIAL_MAX - shift:
        return None
    return (_SERIAL_EPOCH_1904 if date1904 else _SERIAL_EPOCH) + _dt.timedelta(days=int(float(text)))


def _system(date1904: bool) -> str:
    return " in the workbook's 1904 date system" if date1904 else ""


# a quarter-like label whose quarter number is not 1-4: 2027-Q0 (quarters counted from 0), 2027-Q5
_BAD_YEAR_Q = re.compile(r"^(\d{4})\s*[-/_ ]?\s*Q(\d+)$", re.I)
_BAD_Q_YEAR = re.compile(r"^Q(\d+)\s*[-/_ ']?\s*(\d{4}|\d{2})$", re.I)


def quarter_problem(value) -> str | None:
    """Why ``value`` is a quarter label that names no quarter (``2027-Q0``, ``Q5 2027``), or None.

    >>> quarter_problem("2027-Q0")
    "'2027-Q0' names quarter 0 of 2027: calendar quarters are numbered 1 to 4 (2027-Q1 is January to March); if the quarters were counted from 0, add 1 to each"
    >>> quarter_problem("2027-Q4") is None
    True
    """
    if value is None or isinstance(value, (_dt.date, _dt.datetime, bool)):
        return None
    text = re.sub(r"\s+", " ", str(value).strip())
    if m := _BAD_YEAR_Q.match(text):
        year, q = m.group(1), int(m.group(2))
    elif m := _BAD_Q_YEAR.match(text):
        year = m.group(2) if len(m.group(2)) == 4 else f"20{m.group(2)}"
        q = int(m.group(1))
    else:
        return None
    if 1 <= q <= 4:
        return None
    if q == 0:
        return (f"{text!r} names quarter 0 of {year}: calendar quarters are numbered 1 to 4 ({year}-Q1 is "
                f"January to March); if the quarters were counted from 0, add 1 to each")
    return (f"{text!r} names quarter {q} of {year}: calendar quarters are numbered 1 to 4 ({int(year) + 1}-Q1 "
            f"follows {year}-Q4)")


def quarter_label(value, date1904: bool = False) -> tuple[str | None, str | None]:
    """``(label, how)``: a calendar quarter as ``YYYY-Qn`` and how it was read (None: typed so
    already), or ``(None, None)`` when ``value`` is not a quarter or a date.

    >>> quarter_label("Q1 2027")
    ('2027-Q1', 'a quarter')
    >>> quarter_label("2027-04-01")
    ('2027-Q2', 'a date, read as its calendar quarter')
    >>> quarter_label("FY27 Q1")
    (None, None)
    """
    if isinstance(value, (_dt.date, _dt.datetime)):
        return f"{value.year}-Q{(value.month - 1) // 3 + 1}", "a date, read as its calendar quarter"
    text = re.sub(r"\s+", " ", str(value).strip())
    if m := QUARTER.match(text):
        label = f"{m.group(1)}-Q{m.group(2)}"
        return label, (None if label == text else "a quarter")
    if m := _YEAR_Q.match(text):
        return f"{m.group(1)}-Q{m.group(2)}", "a quarter"
    if m := _Q_YEAR.match(text):
        year = m.group(2) if len(m.group(2)) == 4 else f"20{m.group(2)}"
        return f"{year}-Q{m.group(1)}", "a quarter"
    if (d := serial_date(text, date1904)) is not None:
        return (f"{d.year}-Q{(d.month - 1) // 3 + 1}",
                f"a date without a date format (Excel's serial day number of {d.isoformat()}"
                f"{_system(date1904)}), read as its calendar quarter")
    if m := _ISO_DATE.match(text):
        try:
            d = _dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        except ValueError:
            return None, None
        return f"{d.year}-Q{(d.month - 1) // 3 + 1}", "a date, read as its calendar quarter"
    return None, None


def period_label(value, date1904: bool = False) -> tuple[str, str | None]:
    """A period cell's label and, when it was rewritten, a note saying how it was read (``date1904``:
    the workbook counts its serial days in the 1904 date system)."""
    label, how = quarter_label(value, date1904)
    if label is not None:
        return label, (None if how is None else f"{_typed(value)} is {how}: {label}")
    return re.sub(r"\s+", " ", str(value).strip()), None


def _typed(value) -> str:
    if isinstance(value, _dt.datetime) and value.time() == _dt.time(0):
        return repr(value.date().isoformat())
    return repr(value.isoformat() if isinstance(value, (_dt.date, _dt.datetime)) else str(value).strip())


def fold(label: str) -> str:
    """Two labels that name one period compare equal: case and repeated spaces ignored."""
    return re.sub(r"\s+", " ", str(label).strip()).casefold()


def serial_notes(text, date1904: bool = False) -> list[str]:
    """What :func:`parse_periods` read from a date serial in Settings ``periods`` (one note per label or
    range end typed as a serial day number), for the note at the cell."""
    if text is None or isinstance(text, (_dt.date, _dt.datetime)):
        return []
    out = []
    for part in [p.strip() for p in re.split(r"[;,]", str(text))]:
        rng = _RANGE.match(part)
        for x in (rng.groups() if rng else (part,)):
            if serial_date(x, date1904) is not None:
                label, how = quarter_label(x, date1904)
                out.append(f"{x.strip()!r} is {how}: {label}")
    return out


def parse_periods(text, date1904: bool = False) -> tuple[list[str], list[str]]:
    """Settings ``periods``: ``'2027-Q1; 2027-Q2'`` (or ``,`` between labels) or the quarter range
    ``'2027-Q1..2027-Q4'`` (also ``2027-Q1 - 2027-Q4``, ``2027-Q1 to 2027-Q4``, ``Q1 2027..Q4 2027``).

    Returns ``(labels, problems)``; blank gives ``([], [])``. ``date1904``: a serial day number is
    read in Excel's 1904 date system (the reader passes the workbook's; it then stores the labels).

    >>> parse_periods("2027-Q3..2028-Q2")[0]
    ['2027-Q3', '2027-Q4', '2028-Q1', '2028-Q2']
    >>> parse_periods("2027-Q1; 2027-Q2")[0]
    ['2027-Q1', '2027-Q2']
    >>> parse_periods("Q1 2027, Q2 2027")[0]
    ['2027-Q1', '2027-Q2']
    """
    if text is None or str(text).strip() == "":
        return [], []
    if isinstance(text, (_dt.date, _dt.datetime)):
        return [quarter_label(text)[0]], []
    out: list[str] = []
    for part in [p.strip() for p in re.split(r"[;,]", str(text))]:
        if not part:
            continue
        rng = _RANGE.match(part)
        for x in (rng.groups() if rng else (part,)):
            if (why := quarter_problem(x)) is not None:
                return [], [f"periods {part!r}: {why}"]
        ends = [quarter_label(x, date1904)[0] for x in rng.groups()] if rng else [None, None]
        if rng and None not in ends:
            (y0, q0), (y1, q1) = ((int(x[:4]), int(x[-1])) for x in ends)
            a, b = y0 * 4 + q0 - 1, y1 * 4 + q1 - 1
            if b < a:
                return [], [f"periods {part!r}: the range ends before it starts"]
            if b - a >= 400:
                return [], [f"periods {part!r}: more than 400 quarters"]
            out += [f"{i // 4}-Q{i % 4 + 1}" for i in range(a, b + 1)]
        elif rng and (".." in part) or re.search(r"Q[1-4]\s*[-–—/]\s*Q[1-4]", part, re.I):
            return [], [f"periods {part!r}: a range is written between two quarters, e.g. 2027-Q1..2027-Q4"]
        elif quarter_label(part)[0] is None and len(named := _QUARTERS_IN.findall(part)) >= 2:
            # '2027-Q1 2027-Q2' (spaces, tabs, '/' between them) was one period of that name
            listed = "; ".join(quarter_label(q)[0] for q in named)
            return [], [f"periods {part!r} names {len(named)} quarters without ';' or ',' between them: type "
                        f"{listed!r} (or a range, e.g. {quarter_label(named[0])[0]}..{quarter_label(named[-1])[0]})"]
        else:
            out.append(period_label(part, date1904)[0])
    seen = set()
    dup = [p for p in out if fold(p) in seen or seen.add(fold(p))]
    if dup:
        return [], [f"periods names {dup[0]!r} twice"]
    return out, []
