"""Every Excel twin parenthesises an expression argument (issue 21: ``per_gpu.xl("A1+B1", ...)``
used to give ``A1+B1/...``, a different formula)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import planner
from planner.equations.kvhit import xl_arg
from planner.core.refs import ROW, WL_ROW, cell, sheet_ref


def _twins():
    out = []
    for m in pkgutil.walk_packages(planner.__path__, "planner."):
        if m.name.endswith("__main__") or ".cli." in m.name:
            continue
        mod = importlib.import_module(m.name)
        for name, obj in vars(mod).items():
            xl = getattr(obj, "xl", None)
            if callable(obj) and callable(xl) and getattr(obj, "__module__", "") == m.name:
                out.append((f"{m.name}.{name}", xl))
    return out


TWINS = _twins()


def test_twins_are_found():
    assert len(TWINS) >= 30


@pytest.mark.parametrize("name,xl", TWINS, ids=[n for n, _ in TWINS])
def test_expression_arguments_stay_whole(name, xl):
    sig = inspect.signature(inspect.unwrap(xl))
    positional = [p for p in sig.parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
    if any(p.kind == p.VAR_POSITIONAL for p in sig.parameters.values()) and not positional:
        positional = [None, None, None]
    args = [f"Q{i + 1}+R{i + 1}" for i in range(len(positional))]
    # keyword-only parameters are constants of the formula (a COUNTIF bound, a text criterion), not cells
    constants = {p.name: "1" for p in sig.parameters.values() if p.kind == p.KEYWORD_ONLY and p.default is p.empty}
    text = xl(*args, **constants)
    for a in args:
        # each argument appears only inside its own parentheses
        assert text.count(a) == text.count(f"({a})"), (name, text)


def test_atoms_are_left_alone():
    for atom in ("A1", "$B$2", "Resolved!$C$3", "'My sheet'!D4", "s_prefill_mfu", "0.5", "1E-3", '"gqa"',
                 "SUM(A1:A3)", "(A1+B1)", cell(ROW, 7), sheet_ref("Resolved", WL_ROW, 2),
                 "Hit_Curve!$C:$C", "$C:$C", "'My sheet'!A:B"):  # whole columns too (tier_worth's INDEX)
        assert xl_arg(atom) == atom  # cell(ROW, 7): H with a template's row hole (planner.core.refs.RowSlot)
    for expr in ("A1+B1", "-2", "A1*B1", "SUM(A1)+1", "(A1)+(B1)", "A:B+1", "$C:$C*2"):
        assert xl_arg(expr) == f"({expr})"
