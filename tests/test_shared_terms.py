"""Short sweep formulas (issue 21 item 5): a column's formula refers to a same-row column wherever
it would repeat that column's text (planner/workbook/shared_terms.py), with the term columns of
planner/equations/terms.py. The values are held by LibreOffice elsewhere (test_recalc recalculates
the whole example, every Sensitivity_Hit column included); here: the replacement itself, the term
functions against hand values, and that every term is still found in the formulas it shortens."""

from __future__ import annotations

import math
import zipfile

import numpy as np
import pytest

from planner.equations import terms as tm
from planner.plan import columns as sheets
from planner.workbook.shared_terms import replace_term, share_terms

TERM_NAMES = [c.name for c in sheets.sweep_terms("ttft_ms", "burst_new_tokens", "ttft_log_x")]


def test_a_term_is_replaced_only_where_it_stands_whole():
    # after a name character it is part of another name; "(x)" after a function name is its call
    text = 'LN(MAX(A1-1,0))+MAX(A1-1,0)*2+XMAX(A1-1,0)+"MAX(A1-1,0)"&MAX(A1-1,0)'
    assert replace_term(text, "MAX(A1-1,0)", "$B1") == 'LN($B1)+$B1*2+XMAX(A1-1,0)+"MAX(A1-1,0)"&$B1'
    assert replace_term("LN(A1+B1)+(A1+B1)", "(A1+B1)", "$C1") == "LN(A1+B1)+$C1"   # LN(...) is a call
    assert replace_term("LN((A1+B1))", "(A1+B1)", "$C1") == "LN($C1)"


def test_terms_go_longest_first_to_a_fixed_point_never_into_themselves():
    # column 0 is u, column 1 the pass budget written with u's text, column 2 uses both;
    # column 3 a guarded term: its own formula holds its term, which must stay text
    u = "MAX(Z1*(1-Y1),1)"
    m = f"IF(ISNUMBER(X1),X1,{u})"
    m_of_ref = "IF(ISNUMBER(X1),X1,$A1)"
    guard = f'IF(ISNUMBER(W1),{m_of_ref}*2,"")'
    texts = [u, m_of_ref, f"{m}/{u}+{m}", guard]
    keys = [u, m_of_ref, None, f"{m_of_ref}*2"]
    out = share_terms(texts, keys, ["$A1", "$B1", "$C1", "$D1"])
    assert out[0] == u                       # a term never refers to itself
    assert out[1] == m_of_ref
    assert out[2] == "$B1/$A1+$B1"           # u first, then the budget written with u's cell
    assert out[3] == guard.replace(m_of_ref, "$B1")   # the guard keeps its own term (with the budget's cell)


def test_two_columns_referring_to_each_other_are_refused():
    from planner.workbook.shared_terms import _refuse_cycles

    with pytest.raises(ValueError, match="refer to each other"):
        _refuse_cycles(["$B1+1", "$A1*2"], ["$A1", "$B1"])
    with pytest.raises(ValueError, match="themselves"):
        _refuse_cycles(["$A1+1"], ["$A1"])
    _refuse_cycles(["$B1+1", "2"], ["$A1", "$B1"])


def test_term_values_by_hand():
    # u = 300 new tokens, M = 256 per pass, c = 4 clients, P = 50 ms, F = 5 ms, s = 10 + 0.5 b ms, osl 100
    u, M, c, P, F = 300.0, 256.0, 4.0, 50.0, 5.0
    assert tm.pass_tokens(u, M) == 256 and tm.pass_tokens(u, np.nan) == 300      # blank M: one request a pass
    assert tm.first_pass_tokens(u, M) == 256 and tm.first_pass_tokens(100.0, M) == 100
    assert tm.pass_variable_ms(P, F, u, M) == 50 - 2 * 5                        # ceil(300/256) = 2 passes
    assert tm.pass_variable_ms(8.0, F, u, M) == 0                               # floored at 0
    assert tm.loop_others(c) == 3 and tm.loop_others(1.0) == 0
    assert tm.loop_pass_tokens(u, M, c) == 256 and tm.loop_pass_tokens(u, np.nan, c) == 300 + 3
    assert tm.loop_variable_ms(P, F, u, np.nan, c) == 50 - 1 * 5               # 300 / 303: one pass
    assert tm.loop_prompt_steps(u, M, c) == 2                                   # ceil(300 / (256 - 3))
    assert tm.loop_prompt_steps(u, 600.0, c) == 1                               # ceil(300 / 597)
    assert tm.loop_step_ms(10.0, 0.5, c) == 11.5 and tm.loop_step_ms(10.0, 0.5, 1.0) == 0
    assert tm.loop_steady_decodes(u, M, 100.0, c) == 3                          # min(100*256/400 = 64, 3)
    assert tm.loop_steady_decodes(u, 12.0, 100.0, c) == 3                       # min(3, 3)
    assert tm.loop_steady_decodes(u, 8.0, 100.0, c) == 2                        # 100*8/400 = 2 < 3
    assert tm.loop_group_size(u, 1000.0, c) == 3                                # floor((1000 - 3)/300)
    assert tm.loop_group_size(u, 903.0, c) == 3                                 # (903 - 3)/300 = 3 exactly
    for f, args in ((tm.loop_others, (np.nan,)), (tm.loop_pass_tokens, (u, M, np.nan)),
                    (tm.loop_group_size, (u, np.nan, c)), (tm.loop_group_size, (u, 2.0, c))):
        assert np.isnan(f(*args)), f.__name__
    # the Lambert W: W0(e) = 1 (1 e^1 = e), so from ln x = 1 the start and one Newton step approach 1
    L = math.log(1 + math.e)
    assert tm.log_softplus(1.0) == pytest.approx(L, rel=1e-15)
    assert tm.lambert_w_start(1.0) == pytest.approx(L * (1 - math.log(1 + L) / (2 + L)), rel=1e-15)
    assert abs(tm.lambert_w_start(1.0) - 1) < 0.02 and abs(tm.lambert_w_step(1.0) - 1) < 2e-4
    assert tm.log_softplus(40.0) == 40.0 and np.isnan(tm.lambert_w_step(np.nan))


def _sheet_formulas(path, sheet: str) -> dict[str, list[str]]:
    """Formula text of every column of a one-header-row sheet, by header, straight from the XML."""
    import openpyxl

    ws = openpyxl.load_workbook(path, read_only=True)[sheet]
    rows = ws.iter_rows(values_only=True)
    head = next(rows)
    out: dict[str, list[str]] = {h: [] for h in head}
    for r in rows:
        for h, v in zip(head, r):
            if isinstance(v, str) and v.startswith("="):
                out[h].append(v)
    return out


def test_the_example_hit_sweep_is_short_and_every_term_is_used(example_output):
    f = _sheet_formulas(example_output, "Sensitivity_Hit")
    longest = max(len(t) for col in f.values() for t in col)
    # 5,714 characters before the terms (main 6dcd91e); a change of a twin that a term no longer
    # matches shows here first
    assert longest < 2400, longest
    heads = {h.split(" [")[0]: h for h in f}
    assert list(heads)[-len(TERM_NAMES):] == TERM_NAMES, "the terms come after the existing columns"
    from openpyxl.utils import get_column_letter

    order = list(heads)
    for name in TERM_NAMES:
        letter = "$" + get_column_letter(order.index(name) + 1)
        users = [h for h, col in f.items() if h != heads[name] and col and letter + "2" in col[0]]
        assert users, f"no Sensitivity_Hit formula refers to {name} ({letter})"
    results = _sheet_formulas(example_output, "Results")
    # 5,530 characters before (ttft_steady_slo_ms_baseline); Excel holds at most 8,192 in a formula
    assert max(len(t) for col in results.values() for t in col) < 2400
    assert [h.split(" [")[0] for h in results][-len(TERM_NAMES):] != TERM_NAMES  # the baseline's follow the target's
    assert {h.split(" [")[0] for h in results} >= set(TERM_NAMES)
    # the terms are Results' last columns: its print area and Explorer leave exactly them out
    k = len(sheets.without_terms(sheets.RESULTS))
    assert all(c.name in sheets.TERMS for c in sheets.RESULTS[k:]) and len(sheets.RESULTS) - k == 24
    with zipfile.ZipFile(example_output) as z:
        size = max(i.file_size for i in z.infolist() if i.filename.startswith("xl/worksheets/sheet"))
    assert size < 5_000_000, size        # 9.65 MB for Sensitivity_Hit before
