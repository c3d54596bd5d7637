"""What a typist meets (issue 13): numbers typed as text, symbols and units in numbers, near
names, totals rows, near-miss headers, '#N/A' as text, over-long names. Messages are compared
in full: they are the product here."""

from __future__ import annotations

from pathlib import Path

import openpyxl
import pytest

from planner.examples import data as example_data

import corpus
from conftest import run_cli, sheet_values, trim_workloads
from planner.core import schema
from planner.inputs import typed_text as th
from planner.core.errors import InputError
from planner.inputs.cells import ExcelError, parse_cell, parse_value
from planner.inputs.reader import read_input

ISL = schema.column("Workloads", "isl")
OSL = schema.column("Workloads", "osl")
MAXSEQ = schema.column("Workloads", "max_seq_len")
COST = schema.column("GPUs", "hourly_cost")
PCIE = schema.column("GPUs", "pcie_gbps")
HBM = schema.column("GPUs", "hbm_gib")
HIT = schema.column("Workloads", "hit_target")
NAME = schema.column("Workloads", "workload")


# --------------------------------------------------------------------------- numbers typed as text
@pytest.mark.parametrize("text, value, how", [
    ("1,024,000", 1024000, "',' grouping thousands"),           # two commas: grouping, nothing else
    ("8,192.5", 8192.5, "',' grouping thousands and a decimal point"),  # both marks: the last is decimal
    ("8.192,5", 8192.5, "'.' grouping thousands and a decimal comma"),
    ("1.234.567", 1234567, "'.' grouping thousands"),
    ("2.5", 2.5, "a decimal point"),                            # one digit after: cannot be grouping
    ("2,5", 2.5, "a decimal comma"),                            # the decimal comma: accepted, noted
    ("0.125", 0.125, "a decimal point"),                        # a group never starts with 0
    ("0,125", 0.125, "a decimal comma"),
    ("1234.567", 1234.567, "a decimal point"),                  # a first group has at most 3 digits
    ("8 192", 8192, "spaces grouping thousands"),
    ("8\u00a0192", 8192, "spaces grouping thousands"),          # no-break space (French Excel)
    ("1'234'567", 1234567, "apostrophes grouping thousands"),   # Swiss
    ("8 192,5", 8192.5, "spaces grouping thousands and a decimal comma"),
    ("-1,000,000", -1e6, "',' grouping thousands"),
])
def test_unambiguous_number_text_is_read_with_its_reading(text, value, how):
    v, note, problem = th.read_number_text(text)
    assert problem is None and v == value
    shown = str(int(value)) if float(value).is_integer() else repr(float(value))
    assert note == f"{text!r} read as {shown} ({how})"


@pytest.mark.parametrize("text", ["2048", "-5", "1e3", "1.5e3"])
def test_plain_number_text_has_no_note(text):
    v, note, problem = th.read_number_text(text)
    assert v == float(text) and note is None and problem is None


@pytest.mark.parametrize("text, group, dec, mark", [
    ("8.192", "8192", "8.192", "'.' grouping thousands, or 8.192 with a decimal point"),
    ("1,024", "1024", "1.024", "',' grouping thousands, or 1.024 with a decimal comma"),
    ("12,288", "12288", "12.288", "',' grouping thousands, or 12.288 with a decimal comma"),
    ("-8.192", "-8192", "-8.192", "'.' grouping thousands, or -8.192 with a decimal point"),
])
def test_lone_separator_before_three_digits_is_ambiguous(text, group, dec, mark):
    v, note, problem = th.read_number_text(text)
    assert v is None and note is None
    assert problem == (f"is ambiguous: {group} with {mark}; type the number itself in a number cell "
                       f"({group} or {dec}), not as text")


@pytest.mark.parametrize("text, why", [
    ("1.2.3", "is not a number: its groups between '.' are not of three digits"),
    ("12,34,567", "is not a number: its groups between ',' are not of three digits"),  # Indian lakh grouping
    ("1,234 567", "is not a number: its separators are out of place"),
    ("1.234.567,8,9", "is not a number: its ',' and '.' are in an order no locale writes"),
])
def test_malformed_grouping_is_refused_with_why(text, why):
    assert th.read_number_text(text) == (None, None, why)


def test_isl_text_8192_refused_located_message():
    # the case: "8.192" was read silently as 8.192 tokens
    v, err = parse_value(ISL, "8.192", None)
    assert v is None and err == ("isl '8.192' is ambiguous: 8192 with '.' grouping thousands, or 8.192 with a "
                                 "decimal point; type the number itself in a number cell (8192 or 8.192), not as text")


def test_note_comes_with_the_value():
    assert parse_cell(ISL, "1,024,000", None) == (1024000, None, "'1,024,000' read as 1024000 (',' grouping "
                                                                 "thousands)")
    assert parse_cell(ISL, 2048, None) == (2048, None, None)
    assert parse_cell(HIT, "85%", None) == (0.85, None, None)
    assert parse_cell(HIT, "85,5%", None) == (0.855, None, "'85,5' read as 85.5 (a decimal comma)")


# (Measurements isl/osl are the MEAN lengths of a load test since issue 16/18: real numbers, not counts)
@pytest.mark.parametrize("col", [ISL, OSL, MAXSEQ], ids=lambda c: f"{c.sheet}.{c.name}")
def test_token_counts_are_whole_numbers_with_their_ranges(col):
    assert col.kind == schema.INT
    assert parse_value(col, 2048.5, None) == (None, f"{col.name} 2048.5 is not a whole number")
    assert parse_value(col, "8,192.5", None) == (None, f"{col.name} 8192.5 is not a whole number")
    v, err = parse_value(col, 2048.0, None)
    assert (v, err) == (2048, None) and type(v) is int
    assert parse_value(col, 1e9 + 1, None)[1].startswith(f"{col.name} 1000000001 is outside")


@pytest.mark.parametrize("name", ["isl", "osl"])
def test_measurement_lengths_are_means(name):
    """Measurements isl/osl are a load test's mean lengths (issues 16/18: total tokens / completed
    requests, e.g. 552.5), so fractions are read, still within their ranges."""
    col = schema.column("Measurements", name)
    assert col.kind == schema.NUMBER
    assert parse_value(col, 552.5, None) == (552.5, None)
    assert parse_value(col, 1e9 + 1, None)[1].startswith(f"{name} 1000000001 is outside")


# --------------------------------------------------------------------------- symbols and units
@pytest.mark.parametrize("col, text, expected", [
    (COST, "$0.95", "hourly_cost '$0.95' has the currency symbol '$' typed in: drop it and type the number alone "
                    "(0.95); the column is in currency per GPU-hour (the Settings currency)"),
    (COST, "€1,20", "hourly_cost '€1,20' has the currency symbol '€' typed in: drop it and type the number alone "
                    "(1.2); the column is in currency per GPU-hour (the Settings currency)"),
    (COST, "0.95 USD", "hourly_cost '0.95 USD' has the currency symbol 'USD' typed in: drop it and type the number "
                       "alone (0.95); the column is in currency per GPU-hour (the Settings currency)"),
    (COST, "US$2.50/h", "hourly_cost 'US$2.50/h' has the currency symbol 'US$' typed in: drop it and type the "
                        "number alone (2.5); the column is in currency per GPU-hour (the Settings currency)"),
    (COST, "€1,024", "hourly_cost '€1,024' has the currency symbol '€' typed in: drop it and type the number "
                     "alone; the column is in currency per GPU-hour (the Settings currency)"),  # 1024 or 1.024?
    (PCIE, "25 GB/s", "pcie_gbps '25 GB/s' has the unit 'GB/s' typed in: drop it and type the number alone (25); "
                      "the column is in GB/s (10^9 bytes per second)"),
    # hand calc: 80 GB = 80e9 / 2^30 GiB = 74.505 GiB; 0.9 TB/s = 900 GB/s; 1.5 s = 1500 ms
    (HBM, "80 GB", "hbm_gib '80 GB' has the unit 'GB' typed in: 80 GB is 74.51 GiB, type 74.51; the column is in GiB "
                   "(2^30 bytes)"),
    (HBM, "80 GiB", "hbm_gib '80 GiB' has the unit 'GiB' typed in: drop it and type the number alone (80); the column "
                    "is in GiB (2^30 bytes)"),
    (PCIE, "0.9 TB/s", "pcie_gbps '0.9 TB/s' has the unit 'TB/s' typed in: 0.9 TB/s is 900 GB/s, type 900; the column "
                       "is in GB/s (10^9 bytes per second)"),
    (schema.column("Workloads", "t_fixed_ms"), "1.5 s", "t_fixed_ms '1.5 s' has the unit 's' typed in: 1.5 s is 1500 "
                                                        "ms, type 1500; the column is in milliseconds (ms)"),
    (PCIE, "64 GT/s", "pcie_gbps '64 GT/s' has the unit 'GT/s' typed in: drop it and type the number alone; the "
                      "column is in GB/s (10^9 bytes per second)"),  # not convertible: no number offered
    (schema.column("Models", "params_b"), "70B", "params_b '70B' has the unit 'B' typed in: drop it and type the "
                                                 "number alone (70); the column is in billions (1e9)"),
    (ISL, "12 tokens", "isl '12 tokens' has the unit 'tokens' typed in: drop it and type the number alone (12); the "
                       "column is in tokens (a whole number)"),
    (ISL, "8k", "isl '8k' has the multiplier 'k' typed in: type the whole number (8000, or 8192 if a power of two "
                "was meant); the column is in tokens (a whole number)"),
])
def test_symbols_and_units_refused_with_a_hint(col, text, expected):
    assert parse_value(col, text, None) == (None, expected)


@pytest.mark.parametrize("text", ["about 2k", "abc", "n/a", "TBD"])
def test_words_are_just_not_numbers(text):
    assert parse_value(COST, text, None) == (None, f"hourly_cost {text!r} is not a number")


# --------------------------------------------------------------------------- names
def test_closest_names_after_folding_spaces_hyphens_underscores():
    names = ["H100-PCIe-80GB", "H100-SXM", "A100-SXM-80GB"]
    assert th.closest("H100 PCIe 80GB", names) == ["H100-PCIe-80GB"]
    assert th.closest("h100_pcie_80gb", names) == ["H100-PCIe-80GB"]
    assert th.closest("B200", names) == []


def test_not_found_lists_the_few_valid_names():
    names = ["H100-PCIe-80GB", "H100-SXM", "A100-SXM-80GB"]
    assert th.not_found_message("gpu", "H100 PCIe 80GB", "GPUs", names) == (
        "gpu 'H100 PCIe 80GB' is not in GPUs: did you mean 'H100-PCIe-80GB'? (GPUs has: H100-PCIe-80GB, H100-SXM, "
        "A100-SXM-80GB)")
    many = [f"GPU-{i}" for i in range(9)]  # more than 8: not listed
    assert th.not_found_message("gpu", "zzz", "GPUs", many) == "gpu 'zzz' is not in GPUs"


def test_names_over_255_characters_refused():
    assert parse_value(NAME, "w" * 255, None) == ("w" * 255, None)
    assert parse_value(NAME, "w" * 256, None) == (None, "workload is 256 characters long: at most 255 (Excel's MATCH "
                                                        "and COUNTIF cannot look up longer text); shorten it")
    ref = schema.column("Workloads", "gpu")
    assert parse_value(ref, "g" * 300, None)[1].startswith("gpu is 300 characters long")
    # not a key or a reference: long text is fine
    assert parse_value(schema.column("Demand", "period"), "p" * 300, None) == ("p" * 300, None)


def test_text_na_is_text_error_cell_is_error():
    assert parse_value(NAME, "#N/A", None) == ("#N/A", None)
    assert parse_value(NAME, ExcelError("#N/A"), None) == (None, "workload holds the Excel error #N/A: fix the "
                                                                 "formula or type the value")
    assert parse_value(ISL, "#N/A", None) == (None, "isl '#N/A' is not a number")


@pytest.mark.parametrize("word", ["TOTAL", "Total", "total:", "Sum", "Subtotal", "Sub-total", "Grand Total",
                                  " TOTALS "])
def test_totals_words(word):
    assert th.is_totals_label(word)


@pytest.mark.parametrize("word", ["total-chat", "summarise-llama8b", "totally", None, 7])
def test_not_totals_words(word):
    assert not th.is_totals_label(word)


# --------------------------------------------------------------------------- headers
@pytest.mark.parametrize("missing, extras, found", [
    ("hbm_gib", [("note", "note", "GPUs!F1"), ("hbm", "hbm (GB)", "GPUs!B1")], ("hbm (GB)", "GPUs!B1")),
    ("isl", [("input_tokens", "input tokens", "W!E1")], ("input tokens", "W!E1")),
    ("hit_target", [("hit_targte", "hit_targte", "W!J1")], ("hit_targte", "W!J1")),  # a typo
    ("hbm_gib", [("note", "note", "GPUs!F1")], None),
    ("t_attn0_ms", [("t_total", "t total", "W!K1")], None),  # a one- or two-letter first word is no match
])
def test_header_hint(missing, extras, found):
    assert th.header_hint(missing, extras) == found


# header units (converted or refused): planner/inputs/header_units.py, tests/test_trust.py


# --------------------------------------------------------------------------- whole workbooks
def _problems(path: Path) -> list[str]:
    with pytest.raises(InputError) as e:
        read_input(path)
    return [str(p) for p in e.value.problems]


def test_blank_row_inside_table_still_skipped_and_table_goes_on(tmp_path):
    def change(wb):
        ws = wb[corpus.W]
        ws.insert_rows(5)  # a blank row in the middle (docs/model.md), rows below it still read
        return []
    path, _ = corpus.edit(tmp_path, "blank-middle", change)
    p = read_input(path)
    n = len(example_data.WORKLOADS)
    assert len(p.workloads) == n and 5 not in p.workloads.rows and p.notes == []


def test_totals_row_below_blank_row_ends_table_with_one_note(tmp_path):
    path, _ = corpus.totals_row_below_blank(tmp_path)
    p = read_input(path)
    n = len(example_data.WORKLOADS)  # data rows 2..n+1, a blank row, then the Total row
    assert len(p.workloads) == n and p.workloads.rows[-1] == n + 1
    assert p.notes == [f"Workloads!A{n + 3}: 'Total' below a blank row is read as a totals row: the table ends above "
                       f"it (row {n + 3} and below ignored)"]


def test_totals_row_inside_table_is_one_problem(tmp_path):
    path, expected = corpus.totals_row_inside(tmp_path)
    assert _problems(path) == [expected[1], expected[0]]  # GPUs before Workloads; nothing else


def test_text_numbers_said_once_per_sheet(tmp_path):
    path, _ = corpus.typed_numbers_accepted(tmp_path)
    p = read_input(path)
    assert p.notes == [
        "GPUs: 1 number(s) typed as text with separators were read: GPUs!B2 '79,6' read as 79.6 (a decimal comma)",
        "Workloads: 4 number(s) typed as text with separators were read: Workloads!E2 '2 048' read as 2048 (spaces "
        "grouping thousands); Workloads!L2 '143,0' read as 143 (a decimal comma); Workloads!R2 '598 000' read as "
        "598000 (spaces grouping thousands) (and 1 more)"]
    w = p.workloads.records[0]
    assert (w["isl"], w["t_ffn0_ms"], w["tpm_measured"], w["demand_tpm"]) == (2048, 143.0, 598000.0, 7200000.0)
    assert p.gpus.records[0]["hbm_gib"] == 79.6


def test_settings_number_text_is_noted(tmp_path):
    def change(wb):
        ws = wb["Settings"]
        for row in ws.iter_rows(min_row=2):
            if row[0].value == "hit_step":
                row[1].value = "0,05"
                row[1].number_format = "@"
                return [f"Settings!B{row[0].row} '0,05' read as 0.05 (a decimal comma)"]
        raise AssertionError("no hit_step in the example's Settings")
    path, expected = corpus.edit(tmp_path, "settings-comma", change)
    p = read_input(path)
    assert p.settings["hit_step"] == 0.05 and p.notes == expected


def test_accepted_cases_run_and_say_their_notes(tmp_path):
    for build, note in ((corpus.totals_row_below_blank, "'Total' below a blank row"),
                        (corpus.typed_numbers_accepted, "typed as text with separators were read")):
        path, _ = build(tmp_path)
        r = run_cli("validate", path, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert any(line.startswith("planner: note: ") and note in line for line in r.stderr.splitlines())


@pytest.fixture(scope="module")
def na_plan(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("na")
    path, _ = corpus.text_na_workload(tmp)
    # two workloads (the '#N/A' one first): what is checked is that row's text, recalculated by
    # LibreOffice too, and the whole example would only make that slower
    wb = openpyxl.load_workbook(path)
    trim_workloads(wb, 2)
    wb["Workloads"]["A2"].data_type = "s"
    wb.save(path)
    assert openpyxl.load_workbook(path, read_only=True)["Workloads"]["A2"].data_type == "s"
    r = run_cli("run", path, "-o", tmp / "plan.xlsx", "--no-memo", cwd=tmp)
    assert r.returncode == 0, r.stderr
    return tmp / "plan.xlsx"


def test_workload_named_text_na_plans(na_plan):
    wb = openpyxl.load_workbook(na_plan, read_only=True)
    cell = wb["Workloads"]["A2"]
    assert (cell.value, cell.data_type) == ("#N/A", "s")  # written back as text
    # the formulas' stored results are text too (XlsxWriter alone would store them as error values),
    # so a viewer that does not calculate shows the name, not an error
    wb = openpyxl.load_workbook(na_plan, data_only=True)
    for sheet in ("Resolved", "Results"):
        assert (wb[sheet]["A2"].value, wb[sheet]["A2"].data_type) == ("#N/A", "s"), sheet


@pytest.mark.libreoffice
def test_workload_named_text_na_recalculates_as_text(na_plan, recalc):
    out = recalc(na_plan)
    wb = openpyxl.load_workbook(out, data_only=True)
    assert wb["Checks"]["B1"].value == "OK"
    for sheet in ("Resolved", "Results"):
        assert (wb[sheet]["A2"].value, wb[sheet]["A2"].data_type) == ("#N/A", "s")
    assert sheet_values(out, "Results")[0]["workload"] == "#N/A"
