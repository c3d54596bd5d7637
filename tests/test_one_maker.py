"""One maker of cell references and formula text (issue 21 item 3).

planner/core/refs.py builds every ``Sheet!A1`` reference, quotes every sheet name, builds
every defined name and every row hole of a formula template. This test reads the sources of
planner/ (ast, so comments and docstrings of prose do not count, but every string and f-string
does) and rejects, outside the maker:

- a glued reference: a string literal ``Results!$B2`` / ``'My sheet'!A1``, an f-string with a
  value just before ``!`` (``f"{sheet}!{cell}"``) or a word and ``!`` just before a value
  (``f"Checks!{cell}"``), a literal ending in ``Sheet!`` (``"=Checks!" + cell``);
- ``quote_sheetname`` (imported, called or named), and XlsxWriter's A1 makers ``xl_rowcol_to_cell``,
  ``xl_range_abs``, ``xl_range`` (``refs.cell`` and ``refs.cell_range`` wrap them);
- a defined name typed as a literal (``"results_gpus_needed"``, ``"s_hours_per_month"``,
  ``"master_check"``): every name the maker can build from the schema, the column
  declarations and the constants, as a whole word of a string; or glued from its prefix
  (``f"INDEX(res_{name},{row})"``);
- a positional placeholder ``{0}`` in a string (the old ``str.format`` row protocol);
- in the declared writers (:data:`DECLARED`: the Summary, Fleet, Demand_Calc, the diff
  workbook, the KV tiers sheets, the Explorer, the Checks sheet and its rules and the chart helpers, whose
  cells are declarations (:class:`planner.finance.cells.Both`, ``Agg``, ``periods.ROW_EQUATIONS``)
  over the twins of planner/equations), formula text written by hand: a string with an Excel function call
  (``f'=IF({a}>0,{a},"")'``); the formula comes from a twin or a declaration (on main at
  172bb87 this rule found 99 such strings in those 13 modules);
- anywhere outside planner/equations (the twins), a string with an Excel function call: on main at
  a46249d 28 such strings in plan/check_rules.py and workbook/calibration_sheet.py, none since house5
  (issue 21 item 3: "no hand formula strings").

The planted examples at the bottom show each rule failing on a small source string; on the
sources of main before this change (d7b7b87) the rules found 148 offences.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import planner
from planner.core import refs, schema
from planner.equations.constants import CONSTANTS
from planner.plan import columns

PKG = Path(planner.__file__).resolve().parent
MAKERS = {PKG / "core" / "refs.py"}
# writers built from declarations only (issue 21 item 3): no formula text of their own
DECLARED = {PKG / p for p in ("workbook/summary_sheet.py", "workbook/fleet_sheets.py", "workbook/periods_sheet.py",
                              "finance/periods.py", "finance/cells.py", "finance/aggregations.py", "diff/workbook.py",
                              "diff/bridge.py", "workbook/tier_worth.py", "workbook/kv_tiers_sheets.py",
                              "workbook/charts.py", "workbook/explorer.py", "workbook/checks_sheet.py",
                              "plan/check_rules.py", "workbook/calibration_sheet.py")}
_XL_FUNCTIONS = ("IF", "IFS", "IFERROR", "SUM", "SUMIF", "SUMIFS", "SUMPRODUCT", "COUNT", "COUNTA", "COUNTIF",
                 "COUNTIFS", "INDEX", "MATCH", "LOOKUP", "VLOOKUP", "HLOOKUP", "XLOOKUP", "CHOOSE", "INDIRECT",
                 "OFFSET", "ISNUMBER", "ISTEXT", "ISBLANK", "ISERROR", "AND", "OR", "NOT", "MIN", "MAX", "AVERAGE",
                 "ROUND", "ROUNDUP", "ROUNDDOWN", "CEILING", "FLOOR", "INT", "ABS", "SQRT", "EXP", "LN", "LOG",
                 "POWER", "TEXT", "LOWER", "UPPER", "TRIM", "SUBSTITUTE", "CONCATENATE", "LEN", "FORECAST")
_XL_CALL = re.compile(r"(?<![A-Za-z0-9_.])(?:%s)\(" % "|".join(_XL_FUNCTIONS))

_SHEET = r"(?:'[^']+'|[A-Za-z_][A-Za-z0-9_.]*)"
_CELL = r"\$?[A-Z]{1,3}\$?[0-9]+"
_GLUED_LITERAL = re.compile(rf"(?<![\w'.]){_SHEET}!{_CELL}")   # Results!$B2, 'My sheet'!A1
_SHEET_BANG_END = re.compile(rf"(?<![\w'.]){_SHEET}!$")          # "=Checks!" + cell, f"Checks!{cell}"
_PREFIXES = sorted({p for p in refs._PREFIX.values() if p}, key=len, reverse=True)
_NAME_PREFIX_END = re.compile(r"(?<![A-Za-z0-9_])(?:%s)$" % "|".join(map(re.escape, _PREFIXES)))  # f"res_{name}"
_OPERATORS = ("+", "-", "*", "/", "^")  # Excel's arithmetic: glued between two values it is formula text
_POSITIONAL = re.compile(r"(?<!\\[dswDSW])(?<![\])])\{[0-9]+\}")  # not a regular expression's \d{4}, [a-f]{64}


def known_names() -> set[str]:
    """Every defined name the maker builds: table columns, Settings, defaults, constants, cells."""
    keys = {sheet: [c.name for c in schema.columns(sheet)] for sheet in ("Models", "GPUs", "Workloads")}
    keys["Resolved"] = [rc.name for rc in columns.RESOLVED]
    keys["Results"] = [c.name for c in columns.RESULTS]
    keys["Settings"] = [s.key for s in schema.SETTING_KEYS]
    keys["Defaults"] = [c.name for sheet in ("Models", "GPUs", "Workloads") for c in schema.columns(sheet)]
    keys["Constants"] = [c.attr.lower() for c in CONSTANTS] + list(columns.NAMED_VALUES)
    names = {refs.defined_name(kind, key) for kind, ks in keys.items() for key in ks}
    return names | {refs.MASTER_CHECK, refs.EXPLORER_WORKLOAD}


NAMES = known_names()
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _strings(nodes: list[ast.AST]):
    """(line, text, kind) of every string constant among ``nodes`` (a module's ``ast.walk`` as a
    list: it is walked once for every check); f-strings give their constant parts with the
    neighbours (``value`` for an interpolated value) so glue can be seen."""
    in_fstring: set[int] = set()
    for node in nodes:
        if isinstance(node, ast.JoinedStr):
            parts = node.values
            for k, part in enumerate(parts):
                if isinstance(part, ast.Constant) and isinstance(part.value, str):
                    in_fstring.add(id(part))
                    before = k > 0 and isinstance(parts[k - 1], ast.FormattedValue)
                    after = k + 1 < len(parts) and isinstance(parts[k + 1], ast.FormattedValue)
                    yield part.lineno, part.value, ("f", before, after)
    for node in nodes:
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in in_fstring:
            yield node.lineno, node.value, ("s", False, False)


def _docstrings(nodes: list[ast.AST]) -> set[int]:
    out = set()
    for node in nodes:
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                out.add(id(first.value))
    return out


def offences(source: str, where: str = "<planted>", declared: bool = False, xl_calls: bool = False) -> list[str]:
    """Every place in ``source`` that makes a reference, a defined name or a row hole by hand
    (``declared``: a declared writer, where formula text by hand is an offence too, and terms glued
    with an operator; ``xl_calls``: a module outside planner/equations, where a string with an Excel
    function call is one)."""
    nodes = list(ast.walk(ast.parse(source)))  # walked once: the checks below read the list, in walk order
    docs = _docstrings(nodes)
    doc_lines = {n.lineno for n in nodes if id(n) in docs}
    found: list[str] = []
    for node in nodes:
        name = (node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute)
                else None)
        if name == "quote_sheetname":
            found.append(f"{where}:{node.lineno}: quote_sheetname outside planner.core.refs")
        if isinstance(node, ast.ImportFrom) and any(a.name == "quote_sheetname" for a in node.names):
            found.append(f"{where}:{node.lineno}: imports quote_sheetname")
        if name in _XL_MAKERS:  # XlsxWriter's A1 makers: refs.cell / refs.cell_range wrap them
            found.append(f"{where}:{node.lineno}: {name} outside planner.core.refs (use refs.cell / refs.cell_range)")
        if isinstance(node, ast.ImportFrom) and any(a.name in _XL_MAKERS for a in node.names):
            found.append(f"{where}:{node.lineno}: imports an A1 maker of xlsxwriter.utility")
    if declared:
        for node in nodes:
            # "+".join(terms): a sum (or product) glued by hand; tiers.sum_of / product_of parenthesise
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join"
                    and isinstance(node.func.value, ast.Constant) and node.func.value.value in _OPERATORS):
                found.append(f"{where}:{node.lineno}: {node.func.value.value!r}.join glues formula terms by hand "
                             "(use tables.sum_of / product_of or a twin of planner.equations)")
    for line, text, (kind, before, after) in _strings(nodes):
        if kind == "s" and line in doc_lines:
            continue  # a docstring is prose
        if _GLUED_LITERAL.search(text):
            found.append(f"{where}:{line}: Sheet!cell typed as a literal: {text[:60]!r}")
        if kind == "f" and before and text.startswith("!"):
            found.append(f"{where}:{line}: f-string glues a value and '!': {text[:60]!r}")
        if _SHEET_BANG_END.search(text) and (after or kind == "s"):
            found.append(f"{where}:{line}: a sheet name and '!' glued to what follows: {text[:60]!r}")
        if kind == "f" and after and _NAME_PREFIX_END.search(text):
            found.append(f"{where}:{line}: a defined name glued from its prefix: {text[:60]!r} (use refs.defined_name)")
        for w in _WORD.findall(text):
            if w in NAMES:
                found.append(f"{where}:{line}: defined name {w!r} typed as a literal (use planner.core.refs)")
        if _POSITIONAL.search(text):
            found.append(f"{where}:{line}: positional placeholder in {text[:60]!r} (use refs.RowSlot)")
        if declared and kind == "f" and before and after and text in _OPERATORS:
            found.append(f"{where}:{line}: f-string glues two values with {text!r} in a declared writer "
                         "(an expression argument would change meaning; use a twin of planner.equations)")
        if (declared or xl_calls) and _XL_CALL.search(text):
            found.append(f"{where}:{line}: formula text written by hand in a declared writer: {text[:60]!r} "
                         "(declare the cell: planner.finance.cells.of over a twin of planner.equations)")
    return found


def test_no_reference_is_made_by_hand_outside_the_maker():
    problems = []
    for path in sorted(PKG.rglob("*.py")):
        if path in MAKERS:
            continue
        rel = path.relative_to(PKG.parent).as_posix()
        problems += offences(path.read_text(encoding="utf-8"), rel, path in DECLARED,
                             xl_calls=not rel.startswith("planner/equations/"))
    assert problems == [], "\n".join(problems)


def test_the_declared_writers_exist():
    """The list is not stale: every declared writer is a module of the package."""
    assert all(p.is_file() for p in DECLARED), sorted(str(p) for p in DECLARED if not p.is_file())


@pytest.mark.parametrize("source", [
    'ws.write_formula(r, 3, f\'=IF(AND(ISNUMBER({a}),ISNUMBER({b})),{a}-{b},"")\', fmt, v)',
    'f = f"=COUNT({inst})"',
    'crit = "SUMIFS(" + rng + "," + key + ")"',
    'R = lambda name: f"INDEX({range_name(\'Resolved\', name)},{row})"',
    'x = f\'IF(ISTEXT({u}),LOWER(TRIM({u})),"tokens/min")\'',
    'f["hit"] = "+".join(C(k) for k in cols)',
    'terms.append(f"{cap}*{price}*{units}")',
    'f = "=" + ("*".join(parts) if parts else "1")',
    'loaded.append(f"{R(hit_c)}/{R(bw_c)}")',
    'f["t2_hit"] = f"{upto}-{prev}"',
])
def test_hand_formula_text_fails_in_a_declared_writer(source):
    found = offences(source, declared=True)
    assert any("formula text written by hand" in f or "glues" in f for f in found), (source, found)
    assert offences(source) == [], "only declared writers are held"


@pytest.mark.parametrize("source", [
    'ws.write_formula(r, 3, of(tb.saved, a, b).formula, fmt, v)',
    'ws.write_string(r, 0, "Headroom (capacity / demand - 1)")',
    'note = "MAX_BATCH(x) is a name, not a call"',
    'def f():\n    """Stored with IF(ISNUMBER(x),x,"") as the formula (prose)."""',
    'ws.write_string(r, 0, "; ".join(descr))',
    'label = f"{a} - {b} tiers"',
    'f = tiers.tiers_cost.xl(*terms)',
])
def test_declarations_pass_in_a_declared_writer(source):
    assert offences(source, declared=True) == []


def test_the_known_names_are_the_workbooks_names():
    """The name list is not empty or made up: it holds names of each kind the writer defines."""
    for name in ("results_gpus_needed", "res_hit_target", "wl_workload", "models_layers", "gpus_hbm_gib",
                 "s_hours_per_month", "d_batch", "c_bytes_per_gib", "c_tornado_swing", "master_check",
                 "explorer_workload"):
        assert name in NAMES, name


_XL_MAKERS = {"xl_rowcol_to_cell", "xl_range_abs", "xl_range"}  # workbook/checks_sheet.py used xl_range_abs (house6)


@pytest.mark.parametrize("source, rule", [
    ("from xlsxwriter.utility import xl_range_abs", "imports an A1 maker"),
    ("k = xl_range_abs(5, 1, 9, 1)", "xl_range_abs outside"),
    ("c = utility.xl_rowcol_to_cell(r, 2)", "xl_rowcol_to_cell outside"),
    ('f = "=SUM(Results!$B$2:$B$9)"', "literal"),
    ("f = \"='My sheet'!A1*2\"", "literal"),
    ('ref = f"{sheet}!{cell}"', "glues a value"),
    ('ref = f"{quote(sheet)}!$B{row}"', "glues a value"),
    ('ref = f"Checks!{cell}"', "glued to what follows"),
    ('ref = "=Checks!" + cell', "glued to what follows"),
    ("from xlsxwriter.utility import quote_sheetname", "imports quote_sheetname"),
    ("x = utility.quote_sheetname(s)", "quote_sheetname outside"),
    ('f = "SUM(results_gpus_needed)"', "defined name 'results_gpus_needed'"),
    ('f = f"INDEX(res_hit_target,{row})"', "defined name 'res_hit_target'"),
    ('wb.define_name("master_check", x)', "defined name 'master_check'"),
    ('m = "s_hours_per_month"', "defined name 's_hours_per_month'"),
    ('f = f"INDEX(res_{name},{row})"', "glued from its prefix"),
    ('name = f"d_{self.name}"', "glued from its prefix"),
    ('fmt = "=A{0}*Resolved!$B{1}"', "positional placeholder"),
    ('fmt = "{2}!" + col + "{3}"', "positional placeholder"),
])
def test_each_rule_fails_on_a_planted_example(source, rule):
    found = offences(source)
    assert any(rule in f for f in found), (source, found)


@pytest.mark.parametrize("source", [
    'ref = sheet_ref(sheet, row, col)',
    'f = f"SUM({range_name(\'Results\', \'gpus_needed\')})"',
    'msg = f"{place(sheet, row, col)}: not a number!"',
    'def f():\n    """Writes Results!$B2 (prose in a docstring)."""',
    'note = "gpus_needed x hourly_cost"',
    'f = f"IF({x}>0,{x},\\"\\")"',
])
def test_what_the_maker_makes_passes(source):
    assert offences(source) == []


def test_the_maker_itself_is_the_one_exception():
    """planner/core/refs.py glues and quotes (that is its job): the rules would reject it."""
    assert offences((PKG / "core" / "refs.py").read_text(encoding="utf-8"))
