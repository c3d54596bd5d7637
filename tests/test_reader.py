"""Unit tests of the cell and header parsing of :mod:`planner.inputs.reader` (docs/model.md §3)."""

from __future__ import annotations

import datetime as dt
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as plain `pytest` too, without installing the package
    sys.path.insert(0, str(REPO))

from planner.core import schema  # noqa: E402
from planner.inputs.cells import ExcelError, normalise_header, parse_value  # noqa: E402
from planner.core.schema import CHOICE, FRACTION, INT, NUMBER, TEXT, Column  # noqa: E402

# hand-made columns, one per kind (and per kind of bound)
FRAC = Column("Workloads", "hit_target", "fraction", FRACTION, "planning hit ratio", True,
              minimum=0, maximum=1)
INTC = Column("Workloads", "tp", "count", INT, "tensor-parallel size", True, minimum=1)
NUM0 = Column("Workloads", "t_fixed_ms", "ms", NUMBER, "overhead", default=0, minimum=0)
POS = Column("Workloads", "isl", "tokens", NUMBER, "input length", True, minimum=0, min_open=True)
BOUNDED = Column("Models", "kv_bytes", "B", NUMBER, "bytes per element", True, minimum=0,
                 min_open=True, maximum=8)
TXT = Column("Models", "model", "", TEXT, "unique model name", True, key=True)
CHOICE_TXT = Column("Workloads", "other_scaling", "", CHOICE, "scaling", default="const",
                    choices=("const", "linear", "quadratic"))
CHOICE_NUM = Column("GPUs", "pcie_gen", "", CHOICE, "PCIe generation", "pcie", choices=(4, 5))

ALL = [FRAC, INTC, NUM0, POS, BOUNDED, TXT, CHOICE_TXT, CHOICE_NUM]
NUMERIC = [FRAC, INTC, NUM0, POS, BOUNDED]


def ok(col, raw, fmt=None):
    value, err = parse_value(col, raw, fmt)
    assert err is None, f"{col.name} {raw!r}: unexpected problem {err!r}"
    return value


def bad(col, raw, fmt=None) -> str:
    value, err = parse_value(col, raw, fmt)
    assert err is not None, f"{col.name} {raw!r}: accepted as {value!r}"
    assert value is None
    assert isinstance(err, str) and err.startswith(col.name + " ")
    return err


# --------------------------------------------------------------------------- blanks
@pytest.mark.parametrize("col", ALL, ids=lambda c: c.kind + ":" + c.name)
@pytest.mark.parametrize("raw", [None, "", " ", "   ", "\t", " \n "])
def test_blank_is_none_without_problem(col, raw):
    assert parse_value(col, raw, None) == (None, None)
    assert parse_value(col, raw, "0%") == (None, None)


# --------------------------------------------------------------------------- fractions
@pytest.mark.parametrize("raw, expected", [
    ("85%", 0.85), (" 85 % ", 0.85), ("85 %", 0.85), ("12.5%", 0.125), ("0%", 0.0), ("100%", 1.0),
    ("0.85", 0.85), (0.85, 0.85), (0, 0.0), (1, 1.0), (0.0, 0.0), (1.0, 1.0),
])
def test_fraction_accepts_fractions_and_percent_text(raw, expected):
    v = ok(FRAC, raw)
    assert isinstance(v, float)
    assert v == pytest.approx(expected, abs=1e-15)


def test_fraction_percent_text_is_exactly_the_fraction():
    # "85%" and a 0.85 cell must give the very same number (identical results downstream)
    assert ok(FRAC, "85%") == 0.85


@pytest.mark.parametrize("fmt", ["0%", "0.0%", "0.00%", "General", None])
def test_fraction_percent_formatted_cell_holds_the_fraction(fmt):
    # a cell formatted as a percentage already holds the fraction: 85% is stored as 0.85
    assert ok(FRAC, 0.85, fmt) == 0.85


@pytest.mark.parametrize("fmt", ["0%", None])
def test_fraction_bare_85_is_out_of_range_not_085(fmt):
    err = bad(FRAC, 85, fmt)
    assert err.startswith("hit_target 85 is outside [0, 1]")
    assert "write 0.85 or 85%" in err  # the hint names both right spellings


@pytest.mark.parametrize("raw, shown", [(85.0, "85"), ("85", "85"), ("150%", "1.5"), (1.3, "1.3"),
                                        (-0.1, "-0.1"), ("-5%", "-0.05")])
def test_fraction_out_of_range(raw, shown):
    err = bad(FRAC, raw)
    assert err.startswith(f"hit_target {shown} is outside [0, 1]")


def test_fraction_out_of_range_hint_shows_numbers_as_typed():
    # _show promises "a value as a person would type it"; the hint for 1.3 must not print
    # binary floating-point noise such as 0.013000000000000001
    err = bad(FRAC, 1.3)
    assert err.startswith("hit_target 1.3 is outside [0, 1]")
    assert not re.search(r"\d\.\d{10,}", err), err


def test_percent_text_only_for_fraction_columns():
    assert bad(NUM0, "85%") == "t_fixed_ms '85%' is not a number"
    assert bad(INTC, "50%") == "tp '50%' is not a number"


# --------------------------------------------------------------------------- whole numbers
# "1,024" used to be read as 1024; it is 1.024 in a German or French locale, the same ambiguity as the
# "8.192" of issue 13, so it is refused now (test_typing.py); "1,024,000" cannot be a decimal comma
@pytest.mark.parametrize("raw, expected", [(4, 4), (4.0, 4), ("8", 8), (" 16 ", 16), ("1,024,000", 1024000),
                                           (1, 1)])
def test_int_accepts_whole_numbers_and_returns_int(raw, expected):
    v = ok(INTC, raw)
    assert v == expected
    assert type(v) is int


@pytest.mark.parametrize("raw, shown", [(2.5, "2.5"), ("2.5", "2.5"), (1.0000001, "1.0000001")])
def test_int_rejects_fractional_values(raw, shown):
    assert bad(INTC, raw) == f"tp {shown} is not a whole number"


@pytest.mark.parametrize("raw, shown", [(0, "0"), (-2, "-2"), ("0", "0")])
def test_int_below_minimum(raw, shown):
    err = bad(INTC, raw)
    assert err.startswith(f"tp {shown} is outside [1, inf)")


# --------------------------------------------------------------------------- numbers and bounds
def test_negative_where_minimum_zero():
    err = bad(NUM0, -1)
    assert err.startswith("t_fixed_ms -1 is outside [0, inf)")
    err = bad(NUM0, -0.5)
    assert err.startswith("t_fixed_ms -0.5 is outside [0, inf)")
    assert ok(NUM0, 0) == 0.0  # the closed minimum itself is allowed
    assert ok(NUM0, "0") == 0.0


@pytest.mark.parametrize("raw, shown", [(0, "0"), (0.0, "0"), (-5, "-5")])
def test_open_minimum_must_be_positive(raw, shown):
    assert bad(POS, raw) == f"isl {shown} is outside (0, inf): it must be positive"


def test_maximum():
    assert ok(BOUNDED, 8) == 8.0
    assert ok(BOUNDED, 0.5) == 0.5
    assert bad(BOUNDED, 9).startswith("kv_bytes 9 is outside (0, 8]")
    assert bad(BOUNDED, 0).startswith("kv_bytes 0 is outside (0, 8]")
    # the "write it as a ratio" hint belongs to fraction columns only
    assert "%" not in bad(BOUNDED, 9)


@pytest.mark.parametrize("raw, expected", [("1,024.0", 1024.0), (" 1,024,000 ", 1024000.0), ("12,288.5", 12288.5),
                                           ("1,000,000", 1e6), ("2048", 2048.0), ("3.5", 3.5),
                                           ("1e3", 1000.0), (2048, 2048.0), (3.5, 3.5)])
def test_number_text_with_thousands_separators(raw, expected):
    v = ok(POS, raw)
    assert v == expected
    assert isinstance(v, float)


@pytest.mark.parametrize("raw, expected", [("2,5", 2.5), ("0,5", 0.5)])
def test_decimal_comma_is_not_silently_a_thousands_separator(raw, expected):
    # "2,5" is a European-style 2.5, never 25: reading it as 25 would silently make the plan ten
    # times off. A comma not followed by exactly three digits cannot group thousands, so it is read
    # as the decimal comma it must be (with a note: tests/test_typing.py).
    assert ok(POS, raw) == expected


@pytest.mark.parametrize("raw", ["abc", "1.2.3", "%", "--1", "about 2k"])
def test_not_a_number(raw):
    assert bad(POS, raw).startswith(f"isl {raw!r} is not a number")


@pytest.mark.parametrize("raw", ["inf", "-inf", "nan", "NaN", float("nan"), float("inf")])
def test_not_finite(raw):
    err = bad(NUM0, raw)
    assert "is not a finite number" in err


@pytest.mark.parametrize("col", NUMERIC + [CHOICE_NUM], ids=lambda c: c.kind + ":" + c.name)
@pytest.mark.parametrize("raw", [True, False])
def test_bool_is_not_a_number(col, raw):
    err = bad(col, raw)
    assert f"{col.name} {raw} is not a number" in err


@pytest.mark.parametrize("raw", [dt.datetime(2026, 1, 2, 3, 4), dt.date(2026, 1, 2), dt.time(12, 0)])
def test_dates_are_not_numbers(raw):
    assert bad(POS, raw).endswith("is not a number")


# --------------------------------------------------------------------------- Excel errors
@pytest.mark.parametrize("col", ALL, ids=lambda c: c.kind + ":" + c.name)
@pytest.mark.parametrize("raw, code", [("#N/A", "#N/A"), (" #n/a ", "#N/A"), ("#DIV/0!", "#DIV/0!"),
                                       ("#VALUE!", "#VALUE!"), ("#REF!", "#REF!"), ("#NAME?", "#NAME?")])
def test_excel_error_is_a_problem_naming_the_error(col, raw, code):
    err = bad(col, ExcelError(raw))  # a true error cell (data_type 'e'); typed text is text
    assert f"{col.name} holds the Excel error {code}" in err


# --------------------------------------------------------------------------- text and choices
def test_text_is_stripped_and_numbers_become_text():
    assert ok(TXT, "  Qwen2.5-72B  ") == "Qwen2.5-72B"
    assert ok(TXT, 7.0) == "7"
    assert ok(TXT, 7) == "7"
    assert ok(TXT, 2.5) == "2.5"


def test_text_choice_case_and_spaces_ignored():
    assert ok(CHOICE_TXT, " Linear ") == "linear"
    assert ok(CHOICE_TXT, "QUADRATIC") == "quadratic"
    assert ok(CHOICE_TXT, "const") == "const"


def test_text_choice_rejects_other_values():
    assert bad(CHOICE_TXT, "cubic") == "other_scaling 'cubic' is not one of const, linear, quadratic"
    assert bad(CHOICE_TXT, 1) == "other_scaling 1 is not one of const, linear, quadratic"


@pytest.mark.parametrize("raw", [5, 5.0, "5", " 5 "])
def test_number_choice_accepts_numbers_and_text(raw):
    v = ok(CHOICE_NUM, raw)
    assert v == 5 and type(v) is int


@pytest.mark.parametrize("raw, shown", [(6, "6"), (4.5, "4.5"), ("3", "'3'")])
def test_number_choice_rejects_other_numbers(raw, shown):
    assert bad(CHOICE_NUM, raw) == f"pcie_gen {shown} is not one of 4, 5"


def test_number_choice_rejects_text():
    assert bad(CHOICE_NUM, "gen5") == "pcie_gen 'gen5' is not a number"


# --------------------------------------------------------------------------- the real schema
@pytest.mark.parametrize("col", [c for c in schema.COLUMNS if c.kind == FRACTION], ids=lambda c: c.name)
def test_every_schema_fraction_column_reads_percent_text(col):
    assert ok(col, "85%") == 0.85
    assert bad(col, 85).startswith(f"{col.name} 85 is outside {col.range_text()}")


# --------------------------------------------------------------------------- headers
@pytest.mark.parametrize("raw, expected", [
    (" ISL (tokens) ", "isl"),
    ("isl [tokens]", "isl"),
    ("isl[tokens]", "isl"),
    ("ISL", "isl"),
    ("  model  ", "model"),
    ("hit_target [fraction]", "hit_target"),
    ("HIT_TARGET (fraction)", "hit_target"),
    ("Hit Target (%)", "hit_target"),
    ("hit target", "hit_target"),
    ("hit\ttarget", "hit_target"),
    ("hit  target  [fraction]", "hit_target"),
    ("tpm_measured [tokens/min]", "tpm_measured"),
    ("hourly_cost [currency/h]", "hourly_cost"),
    ("params_b [1e9]", "params_b"),
    ("pcie_gbps (GB/s)", "pcie_gbps"),
    ("owner", "owner"),
    ("Owner Team", "owner_team"),
    (None, ""),
    ("", ""),
    ("   ", ""),
    (5, "5"),
])
def test_normalise_header(raw, expected):
    assert normalise_header(raw) == expected


@pytest.mark.parametrize("col", schema.COLUMNS, ids=lambda c: f"{c.sheet}.{c.name}")
def test_written_headers_read_back_as_their_names(col):
    # the writer puts "name [unit]" in row 1; the reader must map it back, in any spelling
    assert normalise_header(col.header) == col.name
    assert normalise_header(f"  {col.header.upper()}  ") == col.name
    if col.unit:
        assert normalise_header(f" {col.name.upper()} ({col.unit}) ") == col.name


def test_headers_of_different_columns_stay_different():
    names = [normalise_header(c.header) for c in schema.COLUMNS]
    per_sheet = {}
    for c, n in zip(schema.COLUMNS, names):
        per_sheet.setdefault(c.sheet, []).append(n)
    for sheet, ns in per_sheet.items():
        assert len(ns) == len(set(ns)), sheet
