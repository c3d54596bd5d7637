"""How names are matched and how a cut list says what it left out: the small helpers every layer
uses, written once.

>>> fold_name("  Llama-3.1-8B "), fold_name(7)
('llama-3.1-8b', '7')
>>> canonical_names(["H100-SXM", "A100"])["h100-sxm"]
'H100-SXM'
>>> and_more(5, 3), and_more(3, 3), and_more(9, 8, brackets=False)
(' (and 2 more)', '', ' and 1 more')
"""

from __future__ import annotations

from typing import Any, Iterable


def fold_name(name: Any) -> str:
    """A name as rows are matched (a Workloads ``model`` against the Models names, a Demand
    ``workload`` against the Workloads): its text without surrounding spaces, in lower case."""
    return str(name).strip().lower()


def canonical_names(names: Iterable[Any]) -> dict[str, Any]:
    """Folded name -> the name as spelt (the last of names that fold alike)."""
    return {fold_name(n): n for n in names}


def and_more(total: int, shown: int, brackets: bool = True) -> str:
    """`` (and N more)`` (``brackets``) or `` and N more`` after a list cut to ``shown`` of
    ``total`` items; empty when none is cut."""
    if total <= shown:
        return ""
    return f" (and {total - shown} more)" if brackets else f" and {total - shown} more"
