"""Issue 21 item 2: one structured place type (planner.core.places.Place), one formatter, one sort
order, and no place parsed back from its text anywhere in the package.

The expected texts are the formats the messages have always shown (docs/SPEC: ``Workloads!J7``,
``Workloads row 7``, ``Workloads row 3 (name)``, ``Measurements rows 2-5 (label)``, a file name,
``trace.jsonl line 3``); they are written out here by hand, not produced by the code under test."""

from __future__ import annotations

import pickle
import re
from pathlib import Path

import pytest

from planner.core.errors import InputError, Problem
from planner.core.places import Place, column_letter
from planner.core.schema import SHEET_ORDER

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("place, text", [
    (Place.cell("Workloads", "J", 7), "Workloads!J7"),
    (Place.cell("Workloads", 10, 7), "Workloads!J7"),          # J is the 10th column
    (Place.cell("GPUs", 28, 2), "GPUs!AB2"),                   # 28 = 1*26 + 2 -> A, B
    (Place.at_row("Workloads", 7), "Workloads row 7"),
    (Place.at_row("Workloads", 3, "rag-qwen72b-h200"), "Workloads row 3 (rag-qwen72b-h200)"),
    (Place.at_rows("Measurements", 2, 5, "a100 8b"), "Measurements rows 2-5 (a100 8b)"),
    (Place.at_rows("Measurements", 4, 4, "x"), "Measurements row 4 (x)"),  # one row: singular
    (Place.whole("Settings"), "Settings"),
    (Place.whole("input.xlsx"), "input.xlsx"),
    (Place.file_line("trace.jsonl", 3), "trace.jsonl line 3"),
    (Place.file_key("vllm.json", "mean_ttft_ms"), "vllm.json: mean_ttft_ms"),
    (Place.file_key("b.jsonl", "completed", 4), "b.jsonl line 4: completed"),
    (Place.file_key("r.json", "[1].completed"), "r.json: [1].completed"),
    (Place.file_part("g.json", "benchmark 2 of 5"), "g.json benchmark 2 of 5"),
    (Place.file_line("b.jsonl", 4).in_file("runs/b.jsonl"), "runs/b.jsonl line 4"),
    (Place.within("OLD a.xlsx", Place.cell("Workloads", "J", 7)), "OLD a.xlsx: Workloads!J7"),
    (Place.within("NEW b.xlsx", "Workloads"), "NEW b.xlsx: Workloads"),
    (Place.file_pair("a.prom", "b.prom"), "a.prom -> b.prom"),
    (Place.within("run 2", Place.file_pair("a.prom", "b.prom")), "run 2: a.prom -> b.prom"),
])
def test_one_formatter(place, text):
    assert place == text and str(place) == text and f"{place}" == text
    assert Problem(place, "msg").__str__() == f"{text}: msg"


def test_parts_are_kept_not_parsed():
    p = Place.within("OLD a.xlsx", Place.at_row("Workloads", 3, "(odd) name!"))
    assert (p.sheet, p.row, p.column, p.label, p.outer) == ("Workloads", 3, None, "(odd) name!", "OLD a.xlsx")
    assert str(p) == "OLD a.xlsx: Workloads row 3 ((odd) name!)"
    # a text that looks like a cell is a name, never parsed back into parts
    q = Problem("Workloads!J7", "m").place
    assert isinstance(q, Place) and (q.sheet, q.row, q.column) == ("Workloads!J7", None, None)
    assert pickle.loads(pickle.dumps(Place.cell("Models", "B", 2))).column == "B"
    with pytest.raises(AttributeError):
        p.row = 4


def test_a_scrape_pair_is_a_place_of_its_own():
    """Two Prometheus scrapes read as one (before and after a run): both files kept as parts, the
    pair sorted with the files (after the sheets), never on an input sheet, kept by pickling."""
    p = Place.file_pair("before.prom", "after.prom")
    assert (p.sheet, p.second, p.row, p.line, p.key) == ("before.prom", "after.prom", None, None, None)
    assert not p.is_on(["before.prom"])
    assert pickle.loads(pickle.dumps(p)).second == "after.prom"
    assert p.in_file("runs/before.prom") == "runs/before.prom -> after.prom"
    got = sorted([p, Place.cell("Workloads", "J", 7)], key=lambda q: q.order(["Workloads"]))
    assert got == ["Workloads!J7", "before.prom -> after.prom"]
    with pytest.raises(ValueError, match="pair of files"):
        Place("a.prom", row=3, second="b.prom")


def test_column_letters():
    # by hand: 26 = Z, 27 = AA, 52 = AZ, 53 = BA, 702 = ZZ, 703 = AAA, 16384 = XFD (Excel's last)
    assert [column_letter(j) for j in (1, 26, 27, 52, 53, 702, 703, 16384)] == \
        ["A", "Z", "AA", "AZ", "BA", "ZZ", "AAA", "XFD"]


def test_one_sort_order():
    """Sheets in the reader's order (Models, GPUs, Workloads, Settings, then the optional ones), a
    sheet-level place first, then by row, then by column with A < Z < AA (not as text); others
    (files, lines of files, a place inside another file) after them, in the order found."""
    found = [Place.file_line("t.jsonl", 9), Place.cell("Workloads", "AA", 3), Place.whole("a.jsonl"),
             Place.cell("Workloads", "Z", 3), Place.at_row("Workloads", 2, "w"), Place.whole("Settings"),
             Place.cell("Models", "B", 4), Place.whole("Workloads"), Place.cell("GPUs", "C", 2),
             Place.file_line("t.jsonl", 2)]
    assert SHEET_ORDER[:4] == ("Models", "GPUs", "Workloads", "Settings")
    got = sorted(found, key=lambda p: p.order(SHEET_ORDER))
    assert got == ["Models!B4", "GPUs!C2", "Workloads", "Workloads row 2 (w)", "Workloads!Z3",
                   "Workloads!AA3", "Settings", "t.jsonl line 9", "a.jsonl", "t.jsonl line 2"]


def test_reader_sorts_by_the_parts(tmp_path):
    """The reader's problems come out in the one order, labelled rows among their sheet's rows."""
    from planner.inputs.reader import _place_order

    probs = [Problem(Place.cell("Workloads", "J", 9), "a"), Problem(Place.at_row("Workloads", 3, "x"), "b"),
             Problem(Place.cell("Models", "C", 5), "c")]
    assert [p.message for p in sorted(probs, key=_place_order)] == ["c", "b", "a"]
    assert str(InputError(probs)).splitlines()[0] == "Workloads!J9: a"


def test_no_place_is_parsed_back_from_its_text():
    """No regex or string surgery on a place anywhere in the package: places are compared and
    sorted by their parts (this test fails on the old reader's _PLACE and scenario_checks' regex)."""
    bad = re.compile(r"re\.\w+\([^)]*\.place\b|\.place\.(split|startswith|endswith|partition|rsplit)\(|"
                     r"_PLACE\b")
    hits = [f"{p.relative_to(REPO)}:{i}: {line.strip()}"
            for p in sorted((REPO / "planner").rglob("*.py"))
            for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if bad.search(line)]
    assert hits == []


CASES = ("near_miss_headers", "merged_cells", "missing_column", "totals_row_inside")


def test_every_cell_or_row_place_is_structured(tmp_path):
    """Each problem of a few bad workbooks (tests/corpus.py, one per kind of place the reader
    makes: header cells, merged ranges, cells, rows) whose text names a cell or a row
    carries its parts: none is free text that only looks like a place."""
    import corpus
    from planner.finance.validation import read_checked

    seen = set()
    for case in CASES:
        path, expected = corpus.BAD[case](tmp_path / case)
        with pytest.raises(InputError) as err:
            read_checked(path)
        assert sorted(str(p) for p in err.value.problems) == sorted(expected), case
        for p in err.value.problems:
            assert isinstance(p.place, Place)
            assert p.place.row is not None or ("!" not in p.place and " row" not in p.place), (case, p)
            seen.add("cell" if p.place.column else "row" if p.place.row else "sheet")
    assert {"cell", "row"} <= seen
