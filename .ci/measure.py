#!/usr/bin/env python3
"""Issue 21's measurements of hand-written formula text, read with ``ast`` instead of grep.

``/work/tools/measure21.sh`` (the grep the issue notes quote) counts every line whose text holds a
quote and an Excel call, so a docstring's example (``finance/cells.py``'s doctest) and a comment
(``core/errors.py``'s ``# a Place (text "Workloads!J7", ...)``) count as hand formulas. This script
counts only string constants the code uses: docstrings (a module's, class's or function's first
statement) and comments are left out, and says how many it left out, so the printed number is the
number of real hand formula strings.

    python .ci/measure.py            # from the repository root

Prints three counts (outside planner/equations and planner/core/refs.py, the makers):
string constants with an Excel function call, glued ``Sheet!cell`` texts, ``quote_sheetname`` uses.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "planner"
MAKERS = ("planner/equations/", "planner/core/refs.py")
# the grep's own patterns (measure21.sh), applied to each string constant instead of each line
XL_CALL = re.compile(r"\b(IF|SUM|SUMIFS|SUMPRODUCT|INDEX|MATCH|CEILING|ROUNDUP|COUNTIFS|COUNTIF|IFERROR|ISNUMBER|MAX|"
                     r"MIN|CHOOSE|AND|OR|INDIRECT|LOOKUP|VLOOKUP)\(")
GLUED = re.compile(r"(?:'[^']+'|[A-Za-z_][A-Za-z0-9_.]*)!\$?[A-Z]{1,3}\$?[0-9]+")  # Results!$B2, 'A b'!C3


def docstring_nodes(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                out.add(id(first.value))
    return out


def strings(tree: ast.AST):
    """(node, text, glued) of every string constant; an f-string's constant parts, ``glued`` when a
    value stands right before a ``!`` or right after ``Sheet!`` (``f"{sheet}!{cell}"``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            parts = node.values
            for k, part in enumerate(parts):
                if isinstance(part, ast.Constant) and isinstance(part.value, str):
                    before = k > 0 and isinstance(parts[k - 1], ast.FormattedValue) and part.value.startswith("!")
                    after = k + 1 < len(parts) and isinstance(parts[k + 1], ast.FormattedValue) and \
                        re.search(r"[A-Za-z_']!\$?[A-Z]*$", part.value) is not None
                    yield part, part.value, before or after
    in_f = {id(p) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for p in n.values}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in in_f:
            yield node, node.value, False


def main() -> int:
    calls, glued, quoted = [], [], []
    skipped_doc = {"calls": 0, "glued": 0}
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(MAKERS):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = docstring_nodes(tree)
        for node, text, glue in strings(tree):
            is_doc = id(node) in docs
            if XL_CALL.search(text):
                if is_doc:
                    skipped_doc["calls"] += 1
                else:
                    calls.append(f"{rel}:{node.lineno}: {text[:70]!r}")
            if glue or GLUED.search(text):
                if is_doc:
                    skipped_doc["glued"] += 1
                else:
                    glued.append(f"{rel}:{node.lineno}: {text[:70]!r}")
        for node in ast.walk(tree):
            name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
            if name == "quote_sheetname":
                quoted.append(f"{rel}:{node.lineno}")
    print(f"string constants with an Excel function call outside {', '.join(MAKERS)}: {len(calls)} "
          f"(docstrings left out: {skipped_doc['calls']}; comments are not strings)")
    print("\n".join(f"  {c}" for c in calls) if calls else "", end="\n" if calls else "")
    print(f"glued Sheet!cell texts: {len(glued)} (docstrings left out: {skipped_doc['glued']})")
    print("\n".join(f"  {g}" for g in glued) if glued else "", end="\n" if glued else "")
    print(f"quote_sheetname outside refs: {len(quoted)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
