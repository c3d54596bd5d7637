"""Settings ``periods`` read at the input boundary: a list of labels or a quarter range
(the per-period plan is :mod:`planner.finance.periods`)."""

from __future__ import annotations

import re

_QUARTER = re.compile(r"^\s*(\d{4})\s*-\s*Q([1-4])\s*$", re.I)
_RANGE = re.compile(r"^(.*?)\s*(?:\.\.|–|—| to )\s*(.*)$")


def parse_periods(text) -> tuple[list[str], list[str]]:
    """Settings ``periods``: ``'2027-Q1; 2027-Q2'`` or the quarter range ``'2027-Q1..2027-Q4'``.

    Returns ``(labels, problems)``; blank gives ``([], [])``.

    >>> parse_periods("2027-Q3..2028-Q2")[0]
    ['2027-Q3', '2027-Q4', '2028-Q1', '2028-Q2']
    >>> parse_periods("2027-Q1; 2027-Q2")[0]
    ['2027-Q1', '2027-Q2']
    """
    if text is None or str(text).strip() == "":
        return [], []
    out: list[str] = []
    for part in [p.strip() for p in str(text).split(";")]:
        if not part:
            continue
        rng = _RANGE.match(part)
        if rng and _QUARTER.match(rng.group(1)) and _QUARTER.match(rng.group(2)):
            (y0, q0), (y1, q1) = ((int(x.group(1)), int(x.group(2))) for x in map(_QUARTER.match, rng.groups()))
            a, b = y0 * 4 + q0 - 1, y1 * 4 + q1 - 1
            if b < a:
                return [], [f"periods {part!r}: the range ends before it starts"]
            if b - a >= 400:
                return [], [f"periods {part!r}: more than 400 quarters"]
            out += [f"{i // 4}-Q{i % 4 + 1}" for i in range(a, b + 1)]
        elif rng and (".." in part):
            return [], [f"periods {part!r}: a range is written between two quarters, e.g. 2027-Q1..2027-Q4"]
        else:
            out.append(part)
    seen = set()
    dup = [p for p in out if p in seen or seen.add(p)]
    if dup:
        return [], [f"periods names {dup[0]!r} twice"]
    return out, []
