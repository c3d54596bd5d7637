"""Issue 20 red team, items 3 and 5: typed mistakes in the finance inputs (periods, growth, hit
ratios by period) that planned silently, each typed into a workbook and its message or its
number read. Hand calculations beside each assertion."""

from __future__ import annotations

import datetime as dt

import openpyxl
import pytest

from conftest import run_cli
from planner.core.errors import InputError
from planner.finance import periods as fp
from planner.inputs.period_labels import parse_periods, period_label
from planner.plan.build import build_plan
from planner.workbook.input_sheets import write_input_workbook

MODELS = [{"model": "Llama-3.1-8B", "kv_bytes": 2}]
GPUS = [{"gpu": "H100 SXM", "hourly_cost": 2.5}]
# chip time per request: TTFT at hit 0.5 = 10 x (1 - 0.25) + 90 x 0.5 = 52.5 ms (+ load, tiny) + decode
# 1,000 ms; the sizes below only compare a mistyped workbook with the same plan typed right
ROW = {"workload": "chat", "model": "Llama-3.1-8B", "gpu": "H100 SXM", "tp": 1, "isl": 1000, "osl": 200,
       "hit_target": 0.5, "t_attn0_ms": 10, "t_ffn0_ms": 90, "t_decode_ms": 1000, "demand_tpm": 1_000_000}


def _book(tmp_path, demand=None, settings=None, row=None, edit=None, name="in.xlsx"):
    path = tmp_path / name
    optional = {"Demand": demand} if demand is not None else None
    write_input_workbook(path, MODELS, GPUS, [dict(row or ROW)], settings or {}, optional=optional)
    if edit is not None:
        wb = openpyxl.load_workbook(path)
        edit(wb)
        wb.save(path)
    return path


def _totals(plan):
    t = fp.period_totals(plan)
    return dict(zip(t["period"], t["gpus_needed"]))


def _warnings(plan):
    return [str(w) for w in plan.warnings]


# --------------------------------------------------------------------------- period labels
@pytest.mark.parametrize("typed, label", [
    ("2027-Q1", "2027-Q1"), ("2027-q1", "2027-Q1"), ("2027 Q1", "2027-Q1"), ("2027Q1", "2027-Q1"),
    ("Q1 2027", "2027-Q1"), ("Q1-2027", "2027-Q1"), ("q1 2027", "2027-Q1"), ("2027/Q1", "2027-Q1"),
    ("2027-Q01", "2027-Q1"), ("Q3'27", "2027-Q3"), (dt.datetime(2027, 4, 1), "2027-Q2"),
    (dt.date(2027, 12, 31), "2027-Q4"), ("2027-07-01", "2027-Q3"), ("2027-08-15 00:00:00", "2027-Q3"),
    ("FY27 Q1", "FY27 Q1"), ("Jan  2027", "Jan 2027"), ("H1", "H1"),
])
def test_period_labels(typed, label):
    assert period_label(typed)[0] == label


@pytest.mark.parametrize("typed, labels", [
    ("2027-Q1..2027-Q3", ["2027-Q1", "2027-Q2", "2027-Q3"]),
    ("2027Q1..2027Q3", ["2027-Q1", "2027-Q2", "2027-Q3"]),
    ("Q1 2027..Q3 2027", ["2027-Q1", "2027-Q2", "2027-Q3"]),
    ("2027-Q4 - 2028-Q1", ["2027-Q4", "2028-Q1"]),      # was one period named '2027-Q4 - 2028-Q1'
    ("2027-Q1 to 2027-Q2", ["2027-Q1", "2027-Q2"]),
    ("2027-Q1, 2027-Q2", ["2027-Q1", "2027-Q2"]),       # was one period named '2027-Q1, 2027-Q2'
    ("Q1 2027; Q2 2027", ["2027-Q1", "2027-Q2"]),
    ("Jan; Feb", ["Jan", "Feb"]),
])
def test_settings_periods_spellings(typed, labels):
    assert parse_periods(typed) == (labels, [])


def test_settings_periods_twice_by_case_is_a_problem():
    assert parse_periods("2027-Q1; 2027-q1")[1] == ["periods names '2027-Q1' twice"]


def test_demand_quarter_spelt_otherwise_is_the_settings_quarter(tmp_path):
    # Settings 2027-Q1..2027-Q2 grow 1,000,000 at 0%; a Demand row '2027 Q1' of 2,000,000 must
    # replace Q1's grown demand (it was planned as a third period, Q1 kept 1,000,000)
    right = build_plan(_book(tmp_path, [{"workload": "chat", "period": "2027-Q1", "demand_tpm": 2_000_000}],
                             {"periods": "2027-Q1..2027-Q2"}, name="right.xlsx"))
    typed = build_plan(_book(tmp_path, [{"workload": "chat", "period": "2027 Q1", "demand_tpm": 2_000_000}],
                             {"periods": "2027-Q1..2027-Q2"}))
    assert list(_totals(typed)) == ["2027-Q1", "2027-Q2"]
    assert _totals(typed) == _totals(right)
    calc = fp.period_calc(typed)
    assert calc.loc[calc["period"] == "2027-Q1", "demand_tpm"].tolist() == [2_000_000]
    assert any("Demand!B2 '2027 Q1' is a quarter: 2027-Q1" in n for n in typed.input.notes), typed.input.notes


def _dates(*days):
    def edit(wb):  # date cells, as Excel stores a typed date (openpyxl reads them as datetime)
        for r, d in enumerate(days, start=2):
            wb["Demand"].cell(r, 2).value = d
            wb["Demand"].cell(r, 2).number_format = "yyyy-mm-dd"
    return edit


def test_demand_dates_are_read_as_quarters(tmp_path):
    dem = [{"workload": "chat", "period": "a", "demand_tpm": 1_000_000},
           {"workload": "chat", "period": "b", "demand_tpm": 2_000_000}]
    plan = build_plan(_book(tmp_path, dem, edit=_dates(dt.datetime(2027, 1, 1), dt.datetime(2027, 4, 1))))
    assert list(_totals(plan)) == ["2027-Q1", "2027-Q2"]  # was '2027-01-01 00:00:00', '2027-04-01 00:00:00'
    assert any("is a date, read as its calendar quarter: 2027-Q2" in n for n in plan.input.notes)


# --------------------------------------------------------------------------- a date without a date format
# Excel's serial day numbers, by hand: 2025-01-01 is 45658 (Excel's DATE(2025,1,1)); 2025 and 2026 have
# 365 days each, so 2027-01-01 is 45658 + 730 = 46388 and 2027-04-01 is 46388 + 31 + 28 + 31 = 46478;
# 2000-01-01 is 36526 and 2099-12-31 is 73050 (the range read as dates)
@pytest.mark.parametrize("typed, label", [
    (46388, "2027-Q1"), ("46388", "2027-Q1"), (46388.0, "2027-Q1"), ("46478", "2027-Q2"),
    (46387, "2026-Q4"), ("46388.5", "2027-Q1"), (36526, "2000-Q1"), (73050, "2099-Q4"),
    (36525, "36525"), (73051, "73051"), (2027, "2027"), (3, "3"),
])
def test_date_serials_in_the_century_are_read_as_their_quarter(typed, label):
    assert period_label(typed)[0] == label


def _serial_cell(sheet, row, col, value=46388):
    def edit(wb):  # a date cell whose date format was lost (format General): Excel keeps the serial
        wb[sheet].cell(row, col).value = value
        wb[sheet].cell(row, col).number_format = "General"
    return edit


def test_demand_period_typed_as_a_date_serial_is_its_quarter_with_a_note(tmp_path):
    # Settings 2027-Q1..2027-Q2 at 0% growth; a Demand row of 2,000,000 in period 46388 (2027-01-01)
    # replaces Q1's grown demand, as the same row typed 2027-Q1 does (it was a third period '46388')
    dem = [{"workload": "chat", "period": "x", "demand_tpm": 2_000_000}]
    right = build_plan(_book(tmp_path, [dict(dem[0], period="2027-Q1")], {"periods": "2027-Q1..2027-Q2"},
                             name="right.xlsx"))
    typed = build_plan(_book(tmp_path, dem, {"periods": "2027-Q1..2027-Q2"}, edit=_serial_cell("Demand", 2, 2)))
    assert list(_totals(typed)) == ["2027-Q1", "2027-Q2"]
    assert _totals(typed) == _totals(right)
    assert any("Demand!B2 '46388' is a date without a date format (Excel's serial day number of 2027-01-01), "
               "read as its calendar quarter: 2027-Q1" in n for n in typed.input.notes), typed.input.notes


def test_settings_periods_typed_as_a_date_serial_is_its_quarter_with_a_note(tmp_path):
    def edit(wb):
        ws = wb["Settings"]
        row = next(r for r in range(1, ws.max_row + 1) if ws.cell(r, 1).value == "periods")
        ws.cell(row, 2).value = 46478          # 2027-04-01, format General
        ws.cell(row, 2).number_format = "General"
        edit.row = row
    plan = build_plan(_book(tmp_path, edit=edit))
    assert list(_totals(plan)) == ["2027-Q2"]  # was one period named '46478'
    assert any(n.startswith(f"Settings!B{edit.row} '46478' is a date without a date format (Excel's serial day "
                            f"number of 2027-04-01), read as its calendar quarter: 2027-Q2") for n in plan.input.notes)
    assert parse_periods("46388..46661")[0] == ["2027-Q1", "2027-Q2", "2027-Q3", "2027-Q4"]  # 46661: 2027-10-01


def test_monthly_dates_in_one_quarter_are_a_duplicate(tmp_path):
    dem = [{"workload": "chat", "period": "a", "demand_tpm": 1_000_000},
           {"workload": "chat", "period": "b", "demand_tpm": 2_000_000}]
    r = run_cli("run", _book(tmp_path, dem, edit=_dates(dt.datetime(2027, 1, 1), dt.datetime(2027, 2, 1))), "-o", tmp_path / "out.xlsx", "--no-memo", cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "Demand!B3: workload 'chat' has period '2027-Q1' twice (also row 2)" in r.stderr
    assert not (tmp_path / "out.xlsx").exists()


@pytest.mark.parametrize("second", ["2027-q1", "2027 Q1", "Q1 2027"])
def test_same_quarter_typed_twice_in_two_spellings_is_a_duplicate(tmp_path, second):
    dem = [{"workload": "chat", "period": "2027-Q1", "demand_tpm": 1_000_000},
           {"workload": "chat", "period": second, "demand_tpm": 2_000_000}]
    with pytest.raises(InputError) as e:
        build_plan(_book(tmp_path, dem))
    assert [str(p) for p in e.value.problems] == ["Demand!B3: workload 'chat' has period '2027-Q1' twice (also row 2)"]


def test_generic_labels_fold_by_case(tmp_path):
    dem = [{"workload": "chat", "period": "Jan", "demand_tpm": 1_000_000},
           {"workload": "chat", "period": "JAN", "demand_tpm": 2_000_000}]
    with pytest.raises(InputError) as e:
        build_plan(_book(tmp_path, dem))
    assert "has period 'Jan' twice" in str(e.value.problems[0])


def test_demand_period_outside_settings_periods_is_warned(tmp_path):
    plan = build_plan(_book(tmp_path, [{"workload": "chat", "period": "FY27 Q1", "demand_tpm": 2_000_000}],
                            {"periods": "2027-Q1..2027-Q2"}))
    assert ("Demand!B2: period 'FY27 Q1' is not one of Settings periods (2027-Q1 .. 2027-Q2): it is planned as a "
            "period of its own") in "\n".join(_warnings(plan))


# --------------------------------------------------------------------------- growth
@pytest.mark.parametrize("where, typed", [("Workloads", 10), ("Settings", 10), ("Settings", "10"), ("Workloads", 2)])
def test_plain_growth_above_one_is_refused(tmp_path, where, typed):
    # typed as a plain number (General format: a percent-formatted cell showing 1000% is meant)
    settings = {"periods": "2027-Q1..2027-Q4", **({"demand_growth": typed} if where == "Settings" else {})}
    edit = _plain("Workloads", "demand_growth", typed) if where == "Workloads" else _plain_setting(typed)
    with pytest.raises(InputError) as e:
        build_plan(_book(tmp_path, settings=settings, edit=edit))
    v = float(typed)
    msg = str(e.value.problems[0])
    assert f"demand_growth {v:g} would be +{v:.0%} ({v + 1:g}x) a period: if {v:g}% was meant, type {v / 100:g}" in msg


def _plain_setting(value, key="demand_growth"):
    def edit(wb):
        ws = wb["Settings"]
        r = next(r for r in range(1, ws.max_row + 1) if ws.cell(r, 1).value == key)
        ws.cell(r, 2).value = value
        ws.cell(r, 2).number_format = "General"
    return edit


def test_percent_formatted_growth_of_ten_is_read_as_typed(tmp_path):
    # a percent cell showing 1000.0% says what it holds: +1,000% a period, 1,000,000 x 11 in Q2
    def edit(wb):
        _plain_setting(10)(wb)
        ws = wb["Settings"]
        r = next(r for r in range(1, ws.max_row + 1) if ws.cell(r, 1).value == "demand_growth")
        ws.cell(r, 2).number_format = "0.0%"
    plan = build_plan(_book(tmp_path, settings={"periods": "2027-Q1..2027-Q2", "demand_growth": 0}, edit=edit))
    assert fp.period_calc(plan)["demand_tpm"].tolist() == pytest.approx([1_000_000, 11_000_000], rel=1e-12)


def test_growth_as_percentage_text_is_read(tmp_path):
    # '10%' and '150%' are percentages: +10% and +150% a period; 1,000,000 x 2.5 = 2,500,000 in Q2
    for typed, q2 in (("10%", 1_100_000), ("150%", 2_500_000)):
        plan = build_plan(_book(tmp_path, settings={"periods": "2027-Q1..2027-Q2", "demand_growth": typed}))
        calc = fp.period_calc(plan)
        assert calc["demand_tpm"].tolist() == pytest.approx([1_000_000, q2], rel=1e-12)


def test_growth_minus_100_percent_is_warned(tmp_path):
    plan = build_plan(_book(tmp_path, row=dict(ROW, demand_growth=-1), settings={"periods": "2027-Q1..2027-Q3"}))
    assert fp.period_calc(plan)["demand_tpm"].tolist() == [1_000_000, 0, 0]  # x (1 - 1)^k
    assert any(w.startswith("Workloads!AC2: demand_growth -100% makes 'chat' need nothing from 2027-Q2 on")
               for w in _warnings(plan)), _warnings(plan)


def test_growth_without_a_demand_to_grow_is_warned(tmp_path):
    # a Demand row in Q1 only and a growth rate, but no Workloads demand_tpm: Q2 and Q3 need nothing
    plan = build_plan(_book(tmp_path, [{"workload": "chat", "period": "2027-Q1", "demand_tpm": 1_000_000}],
                            {"periods": "2027-Q1..2027-Q3"}, row=dict(ROW, demand_tpm=None, demand_growth=0.1)))
    assert any("'chat' has demand_growth +10.0% and Demand rows, but no Workloads demand_tpm to grow: it needs "
               "nothing in 2027-Q2, 2027-Q3" in w for w in _warnings(plan)), _warnings(plan)


# --------------------------------------------------------------------------- a ratio of 1 where 1% was meant
def _plain(sheet, column, value):
    def edit(wb):
        ws = wb[sheet]
        c = next(c for c in ws[1] if str(c.value).split(" [")[0] == column)
        ws.cell(2, c.column).value = value
        ws.cell(2, c.column).number_format = "General"
    return edit


@pytest.mark.parametrize("sheet, column, cell, what", [
    ("Workloads", "hit_baseline", "Workloads!AB2", "the hit target saves nothing against it"),
    ("Workloads", "demand_growth", "Workloads!AC2", "the demand doubles every period"),
    ("Demand", "hit_target", "Demand!E2", "every input token of the period cached"),
])
def test_plain_one_is_warned(tmp_path, sheet, column, cell, what):
    dem = [{"workload": "chat", "period": "2027-Q1", "demand_tpm": 1_000_000, "hit_target": 0.3}]
    plan = build_plan(_book(tmp_path, dem, {"periods": "2027-Q1..2027-Q2"}, edit=_plain(sheet, column, 1)))
    assert any(w.startswith(f"{cell}: {column} 1 is read as 100% (") and f"{what}): if 1% was meant, type 0.01 or 1%"
               in w for w in _warnings(plan)), _warnings(plan)


def test_percent_formatted_one_is_not_warned(tmp_path):
    def edit(wb):
        _plain("Workloads", "hit_baseline", 1)(wb)
        ws = wb["Workloads"]
        c = next(c for c in ws[1] if str(c.value).split(" [")[0] == "hit_baseline")
        ws.cell(2, c.column).number_format = "0%"  # shows 100%: meant
    plan = build_plan(_book(tmp_path, edit=edit))
    assert not any("hit_baseline 1 is read as 100%" in w for w in _warnings(plan))


def test_settings_growth_of_one_is_warned(tmp_path):
    plan = build_plan(_book(tmp_path, settings={"periods": "2027-Q1..2027-Q2", "demand_growth": 1}))
    assert "Settings: demand_growth 1 is read as +100% a period" in "\n".join(_warnings(plan))


# --------------------------------------------------------------------------- demand units in the Demand sheet
@pytest.mark.parametrize("unit, typed", [
    ("tok/day", 1_440_000_000), ("tokens per day", 1_440_000_000), ("daily", 1_440_000_000), ("TPD", 1_440_000_000),
    ("tokens/hr", 60_000_000), ("per hour", 60_000_000), ("tokens/minute", 1_000_000), ("tpm", 1_000_000),
])
def test_demand_unit_spellings(tmp_path, unit, typed):
    # each is 1,000,000 tokens/min: 1.44e9 / 1,440 = 6e7 / 60 = 1e6
    plan = build_plan(_book(tmp_path, [{"workload": "chat", "period": "2027-Q1", "demand_tpm": typed,
                                        "demand_unit": unit}]))
    assert fp.period_calc(plan)["demand_tpm"].tolist() == pytest.approx([1_000_000], rel=1e-12)


def test_demand_unit_per_second_is_refused_with_the_way_to_type_it(tmp_path):
    with pytest.raises(InputError) as e:
        build_plan(_book(tmp_path, [{"workload": "chat", "period": "2027-Q1", "demand_tpm": 1000,
                                     "demand_unit": "tokens/s"}]))
    assert "Demand!D2: demand_unit 'tokens/s' is not one of tokens/min, tokens/hour, tokens/day: type the demand " \
           "per minute (x 60), or head the demand column 'demand_tpm (tokens/s)'" in str(e.value.problems[0])


def test_header_unit_and_demand_unit_together_are_refused(tmp_path):
    # 'demand_tpm (tokens/day)' already divides by 1,440; demand_unit tokens/day would divide again
    def edit(wb):
        ws = wb["Demand"]
        c = next(c for c in ws[1] if str(c.value).split(" [")[0] == "demand_tpm")
        c.value = "demand_tpm (tokens/day)"
    with pytest.raises(InputError) as e:
        build_plan(_book(tmp_path, [{"workload": "chat", "period": "2027-Q1", "demand_tpm": 1_440_000_000,
                                     "demand_unit": "tokens/day"}], edit=edit))
    assert [str(p) for p in e.value.problems] == [
        "Demand!D2: demand_unit 'tokens/day' and the header of demand_tpm both give the unit: the demand would be "
        "converted twice; keep one of them"]


def test_settings_growth_minus_100_percent_is_one_warning(tmp_path):
    rows = [dict(ROW), dict(ROW, workload="chat2")]
    path = tmp_path / "two.xlsx"
    write_input_workbook(path, MODELS, GPUS, rows, {"periods": "2027-Q1..2027-Q2", "demand_growth": "-100%"})
    said = [w for w in _warnings(build_plan(path)) if "-100%" in w]
    assert said == ["Settings: demand_growth -100% makes 2 workload(s) need nothing from 2027-Q2 on (their demand "
                    "times 0: chat, chat2): if a fall of 1% a period was meant, type -0.01 or -1%"]


@pytest.mark.parametrize("typed, listed", [
    ("2027-Q1 2027-Q2 2027-Q3", "'2027-Q1; 2027-Q2; 2027-Q3'"),   # was one period named as typed
    ("2027-Q1\t2027-Q2", "'2027-Q1; 2027-Q2'"),
    ("2027-Q1/2027-Q2", "'2027-Q1; 2027-Q2'"),
    ("Q1 2027 Q2 2027", "'2027-Q1; 2027-Q2'"),
])
def test_settings_periods_without_separators_are_refused_with_the_way_to_type_them(tmp_path, typed, listed):
    with pytest.raises(InputError) as e:
        build_plan(_book(tmp_path, settings={"periods": typed}))
    text = "\n".join(map(str, e.value.problems))
    assert f"periods {typed!r} names {listed.count(';') + 1} quarters without ';' or ',' between them: type {listed}" \
        in text, text


@pytest.mark.parametrize("value, fmt, shown, label", [
    (46388, "General", "'46388' is a date without a date format (Excel's serial day number of 2027-01-01)", "2027-Q1"),
    (dt.datetime(2026, 11, 15), "yyyy-mm-dd", "'2026-11-15 00:00:00' is a date", "2026-Q4"),
])
def test_settings_quarter_typed_as_a_date_is_its_quarter_with_a_note(tmp_path, value, fmt, shown, label):
    # the run's label (page headers, memo headline, Run sheet) read '46388' before
    def edit(wb):
        ws = wb["Settings"]
        row = next(r for r in range(1, ws.max_row + 1) if ws.cell(r, 1).value == "quarter")
        ws.cell(row, 2).value = value
        ws.cell(row, 2).number_format = fmt
        edit.row = row
    plan = build_plan(_book(tmp_path, edit=edit))
    assert plan.input.settings["quarter"] == label
    assert f"Settings!B{edit.row} {shown}, read as its calendar quarter: {label}" in plan.input.notes, plan.input.notes
