"""Short formulas for long derived tables: a column's formula refers to another column of the
same row wherever it would otherwise repeat that column's formula text.

The nested sizing and queueing twins (:mod:`planner.equations.queueing`,
:mod:`planner.equations.decode_first`, :mod:`planner.equations.prefill_passes`) build their
text from their arguments' text, so a sub-expression (the new prompt tokens, the others of a
closed loop, the pass budget, ...) is written out once per use: a Sensitivity_Hit cell held up to
5.7 thousand characters. Where a column of the block computes exactly that sub-expression (a
declared column, or a column declared for the purpose with its unit, e.g. ``loop_others``), the
other formulas of the row take its cell instead.

The replacement is textual and exact: a column's whole formula text ``T`` (one function call or
one parenthesised group, so a cell in its place binds the same way) is replaced where it
occurs as a whole term of a longer formula (not after a name character: ``LN(`` + ``(x)`` is a
call, not a term; not inside a text literal). The other column evaluates ``T`` in the same row,
so the value is the same; LibreOffice's recalculation of every cell (tests/test_recalc) holds
it. A column's *key* may differ from its formula when the formula adds a guard for blank
inputs (``IF(ISNUMBER(c),MAX(c-1,0),"")``: the term ``MAX(c-1,0)`` of the others of a loop):
the twin of such a column carries the unguarded text as ``func.xl_term``, and a formula holding
that term sits in a branch where the guard holds (the composite formulas test the same input
first, e.g. ``IF(ISNUMBER(c),...,"")``).

Only a column whose key is strictly shorter than the formula it goes into is taken, so two
columns never refer to each other (no circular reference).
"""

from __future__ import annotations

import re

from planner.equations.kvhit import xl_arg

MIN_TERM = 16          # shorter terms are not worth a reference (a same-row cell is 4-6 characters)
_NAME_CHAR = re.compile(r"[\w.$!:\ue000-\ue00f]")


def is_term(text: str) -> bool:
    """``text`` is one function call or one parenthesised group, as a whole (so a cell may take
    its place beside any operator)."""
    # xl_arg leaves an atom or one call/group as it is, and only a call or group ends with ")"
    return len(text) >= MIN_TERM and text.endswith(")") and xl_arg(text) is text


def _outside_text(text: str, i: int) -> bool:
    return text.count('"', 0, i) % 2 == 0


def replace_term(text: str, term: str, ref: str) -> str:
    """``text`` with every whole occurrence of ``term`` replaced by ``ref``.

    >>> replace_term("LN(MAX(A1-1,0))+MAX(A1-1,0)*2+XMAX(A1-1,0)", "MAX(A1-1,0)", "$B1")
    'LN($B1)+$B1*2+XMAX(A1-1,0)'
    """
    out, start = [], 0
    n = len(term)
    i = text.find(term)
    while i >= 0:
        if (i == 0 or not _NAME_CHAR.match(text[i - 1])) and _outside_text(text, i):
            out.append(text[start:i])
            out.append(ref)
            start = i + n
            i = text.find(term, start)
        else:
            i = text.find(term, i + 1)
    out.append(text[start:])
    return "".join(out)


def share_terms(formulas: list[str], keys: list[str | None], refs: list[str]) -> list[str]:
    """The formulas of one block's row, each with the other columns' keys replaced by their cells.

    Parameters
    ----------
    formulas : the formula text of each column (no leading '=')
    keys : the term each column computes (its formula, or the twin's ``xl_term``); None: the
        column is not offered (text columns, short or non-term formulas)
    refs : the same-row cell of each column

    Returns
    -------
    list of str, the formulas, in order
    """
    offered = sorted(((k, r, i) for i, (k, r) in enumerate(zip(keys, refs)) if k is not None and is_term(k)),
                     key=lambda kri: -len(kri[0]))
    out = []
    for me, text in enumerate(formulas):
        # to a fixed point: a term written with another column's cell (pass_tokens of burst_new_tokens)
        # matches once that column's own text has been replaced
        changed = True
        while changed:
            changed = False
            for key, ref, i in offered:
                # never a column's own term (a guarded column holds it inside its guard)
                if i != me and len(key) < len(text) and key in text:
                    new = replace_term(text, key, ref)
                    changed, text = changed or new != text, new
        out.append(text)
    _refuse_cycles(out, refs)
    return out


def _refuse_cycles(formulas: list[str], refs: list[str]) -> None:
    """Raise if the shared terms made two columns refer to each other (the length rule of
    :func:`share_terms` excludes it; checked, as a circular reference would be a wrong workbook)."""
    # a same-row cell, not the same letters of another sheet's cell (DF_Search_Hit's Sensitivity_Hit!$M5 is not $M5)
    pats = [None if r is None else re.compile(r"(?<![!A-Za-z0-9_$])" + re.escape(r) + r"(?!\d)") for r in refs]
    # the plain ``in`` first: the pattern can only match where the cell's text occurs (most pairs: it does not)
    uses = {i: {j for j, p in enumerate(pats) if p is not None and refs[j] in f and p.search(f)}
            for i, f in enumerate(formulas)}
    state: dict[int, int] = {}

    def visit(i: int) -> None:
        state[i] = 1
        for j in uses[i]:
            if state.get(j) == 1:
                raise ValueError(f"shared terms: columns {i} and {j} refer to each other (or to themselves)")
            if j not in state:
                visit(j)
        state[i] = 2

    for i in uses:
        if i not in state:
            visit(i)
