"""Issue 20 red team, item 2: unit spellings in headers that were read silently in the column's
unit (bits as bytes, ``t/s``, ``M tokens/day``, Greek mu, ``k tokens``, a price per month). Each
case types the header into a workbook and reads the value the planner uses, or its message.

Factors (exact definitions): 1 byte = 8 bits and G = 10^9 (IEC 80000-13); 1 day = 1,440 min,
1 week = 10,080 min; 1 s = 1,000 ms, 1 ns = 10^-6 ms; 1 TiB = 2^40 B."""

from __future__ import annotations

import openpyxl
import pytest

from conftest import run_cli
from planner.core.errors import InputError
from planner.plan.build import build_plan
from planner.workbook.input_sheets import write_input_workbook

MODELS = [{"model": "Llama-3.1-8B", "kv_bytes": 2}]
GPUS = [{"gpu": "H100 SXM", "hourly_cost": 2.5}]
ROW = {"workload": "chat", "model": "Llama-3.1-8B", "gpu": "H100 SXM", "tp": 1, "isl": 1000, "osl": 200,
       "hit_target": 0.5, "t_attn0_ms": 10, "t_ffn0_ms": 90, "t_decode_ms": 1000, "demand_tpm": 1_000_000}


_BASE: dict[str, bytes] = {}  # repr((row, gpus)) -> the input workbook written for them (read only)


def _book(tmp_path, sheet, column, header, value, row=None, gpus=None):
    path = tmp_path / "in.xlsx"
    key = repr((row or ROW, gpus or GPUS))  # the same records write the same workbook: written once
    if key not in _BASE:
        write_input_workbook(path, MODELS, gpus or GPUS, [dict(row or ROW)], {})
        _BASE[key] = path.read_bytes()
    else:
        path.write_bytes(_BASE[key])
    wb = openpyxl.load_workbook(path)
    ws = wb[sheet]
    c = next(c for c in ws[1] if str(c.value).split(" [")[0] == column)
    c.value = header
    ws.cell(2, c.column).value = value
    ws.cell(2, c.column).number_format = "General"
    wb.save(path)
    return path, c.coordinate


@pytest.mark.parametrize("sheet, column, header, typed, expected", [
    ("GPUs", "pcie_gbps", "pcie_gbps (Gb/s)", 400, 50.0),         # 400 Gbit/s / 8 = 50 GB/s
    ("GPUs", "pcie_gbps", "pcie_gbps (Gbps)", 400, 50.0),         # Gbps: gigabits, not GBps
    ("GPUs", "pcie_gbps", "pcie_gbps (Gbit/s)", 400, 50.0),
    ("GPUs", "pcie_gbps", "pcie_gbps (Mbps)", 400_000, 50.0),     # 4e5 Mbit/s = 4e11 bit/s = 50 GB/s
    ("GPUs", "pcie_gbps", "pcie_gbps (gbps)", 50, 50.0),          # all lower case: the planner's GB/s
    ("GPUs", "hbm_tbps", "hbm_tbps (Tbps)", 26.8, 3.35),           # 26.8 Tbit/s / 8 = 3.35 TB/s
    ("GPUs", "hbm_tbps", "hbm_tbps (TiB/s)", 3.0, 3.0 * 2**40 / 1e12),  # 3.298534883 TB/s
    ("GPUs", "hbm_gib", "hbm_gib (Gb)", 640, 640e9 / 8 / 2**30),   # 640 Gbit = 80e9 B = 74.5058 GiB
    ("Workloads", "kv_gbps", "kv_gbps (Gb/s)", 160, 20.0),         # 160 / 8
    ("Workloads", "demand_tpm", "demand_tpm (t/s)", 50, 3_000.0),  # 50 tokens/s x 60
    ("Workloads", "demand_tpm", "demand_tpm (M tokens/day)", 14.4, 10_000.0),  # 14.4e6 / 1,440
    ("Workloads", "demand_tpm", "demand_tpm (Mtok/min)", 0.01, 10_000.0),      # 0.01 x 1e6
    ("Workloads", "demand_tpm", "demand_tpm (k tokens/min)", 10, 10_000.0),    # 10 x 1,000
    ("Workloads", "demand_tpm", "demand_tpm (B tokens/day)", 0.0144, 10_000.0),  # 1.44e7 / 1,440
    ("Workloads", "demand_tpm", "demand_tpm (tokens/wk)", 100_800_000, 10_000.0),  # / 10,080
    ("Workloads", "demand_tpm", "demand_tpm (tokens/24h)", 14_400_000, 10_000.0),  # / 1,440
    ("Workloads", "ttft_slo_ms", "ttft_slo_ms (\u03bcs)", 400_000, 400.0),  # Greek mu as micro: / 1,000
    ("Workloads", "ttft_slo_ms", "ttft_slo_ms (ns)", 4e8, 400.0),            # / 1e6
    ("Workloads", "ttft_slo_ms", "ttft_slo_ms (secs)", 0.4, 400.0),          # x 1,000
    ("Workloads", "isl", "isl (k tokens)", 2.5, 2_500),                      # a whole number after it
    ("Workloads", "isl", "isl (ktok)", 8, 8_000),
    ("Workloads", "isl", "isl (K tokens)", 1.1, 1_100),  # 1.1 x 1,000 = 1,100.0000000000002 in binary: whole
])
def test_unit_spellings_are_converted(tmp_path, sheet, column, header, typed, expected):
    path, coord = _book(tmp_path, sheet, column, header, typed)
    plan = build_plan(path)
    table = {"GPUs": plan.input.gpus, "Workloads": plan.input.workloads}[sheet]
    assert table.records[0][column] == pytest.approx(expected, rel=1e-12)
    if typed != expected:
        assert any(n.startswith(f"{sheet}!{coord}: header {header!r} is read in") for n in plan.input.notes)


@pytest.mark.parametrize("sheet, column, header, said", [
    ("GPUs", "hourly_cost", "hourly_cost (USD/month)", "a price per month: hourly_cost is the price of one GPU-hour"),
    ("GPUs", "hourly_cost", "hourly_cost (EUR per day)", "a price per day"),
    ("GPUs", "hourly_cost", "hourly_cost (cents/h)", "not cents: divide the values by 100"),
    ("Workloads", "demand_tpm", "demand_tpm (tokens/month)", "a month is not a fixed number of minutes"),
    ("Workloads", "demand_tpm", "demand_tpm (M tokens/month)", "a month is not a fixed number of minutes"),
    ("GPUs", "pcie_gbps", "pcie_gbps (GT/s)", "which is not a unit of pcie_gbps (in GB/s)"),
])
def test_units_that_cannot_be_read_are_refused(tmp_path, sheet, column, header, said):
    path, coord = _book(tmp_path, sheet, column, header, 1000)
    with pytest.raises(InputError) as e:
        build_plan(path)
    text = "\n".join(map(str, e.value.problems))
    assert f"{sheet}!{coord}: header {header!r} says" in text and said in text, text


def test_a_price_per_month_is_refused_by_the_command_line(tmp_path):
    path, coord = _book(tmp_path, "GPUs", "hourly_cost", "hourly_cost (USD/month)", 1825)
    r = run_cli("run", path, "-o", tmp_path / "out.xlsx", "--no-memo", cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert f"GPUs!{coord}: header 'hourly_cost (USD/month)' says USD/month, a price per month" in r.stderr
    assert not (tmp_path / "out.xlsx").exists() and not list(tmp_path.glob(".planner-stage-*"))


def test_price_per_hour_spellings_are_accepted(tmp_path):
    for header in ("hourly_cost (USD/h)", "hourly_cost (usd per hour)", "hourly_cost (USD/GPU-hour)",
                   "hourly_cost (USD)", "hourly_cost ($/h)"):
        path, _ = _book(tmp_path, "GPUs", "hourly_cost", header, 2.5)
        assert build_plan(path).input.gpus.records[0]["hourly_cost"] == 2.5


def _currency_book(tmp_path, header, currency):
    path, coord = _book(tmp_path, "GPUs", "hourly_cost", header, 2.5)
    if currency is not None:
        wb = openpyxl.load_workbook(path)
        ws = wb["Settings"]
        row = next(r for r in range(1, ws.max_row + 1) if ws.cell(r, 1).value == "currency")
        ws.cell(row, 2).value = currency
        wb.save(path)
    return path, coord


def test_a_price_header_in_the_settings_currency_is_accepted(tmp_path):
    # EUR prices beside Settings currency EUR (typed as the code or the symbol): read as typed
    for header, currency in (("hourly_cost (EUR per hour)", "EUR"), ("hourly_cost (€/h)", "EUR"),
                             ("hourly_cost (eur/h)", "€")):
        path, _ = _currency_book(tmp_path, header, currency)
        plan = build_plan(path)
        assert plan.input.gpus.records[0]["hourly_cost"] == 2.5


@pytest.mark.parametrize("header, currency, typed, setting", [
    ("hourly_cost (EUR/h)", None, "EUR", "USD"),        # Settings currency left at its default, USD
    ("hourly_cost (€ per hour)", "USD", "EUR", "USD"),
    ("hourly_cost (USD/h)", "CNY", "USD", "CNY"),
])
def test_a_price_header_in_another_currency_than_the_settings_is_refused(tmp_path, header, currency, typed,
                                                                         setting):
    # every cost column is labelled with Settings currency: EUR prices planned under USD would be
    # reported as dollars, a silent 8-10% error and a wrong label, so the header is refused
    path, coord = _currency_book(tmp_path, header, currency)
    with pytest.raises(InputError) as e:
        build_plan(path)
    text = "\n".join(map(str, e.value.problems))
    assert f"GPUs!{coord}: header {header!r} says {typed}, but Settings currency is {setting}" in text, text
    assert f"set Settings currency to {typed}, or convert the prices to {setting}" in text


def test_whole_number_column_after_a_multiplier_must_be_whole(tmp_path):
    path, coord = _book(tmp_path, "Workloads", "isl", "isl (k tokens)", 2.0005)  # 2,000.5 tokens
    with pytest.raises(InputError) as e:
        build_plan(path)
    assert any("isl 2000.5 is not a whole number (after converting from the header's unit, x1000)" in str(p)
               for p in e.value.problems), e.value.problems


# --------------------------------------------------------------------------- values typed 1,000x too large
def _meas_book(tmp_path, **meas):
    path = tmp_path / "m.xlsx"
    row = {"model": "Llama-3.1-8B", "gpu": "H100 SXM", "tp": 1, "isl": 1000, "hit": 0.0, "ttft_ms": 60.0, **meas}
    write_input_workbook(path, MODELS, GPUS, [dict(ROW)], {}, optional={"Measurements": [row]})
    return path


def test_ttft_typed_in_microseconds_is_warned(tmp_path):
    # the roofline floor at 100% of peak: 2 x 6.98e9 linear params x 1,000 tokens (+ attention) over
    # 989.4 TFLOPS is about 14 ms; 60,000 is 4,000x that, at concurrency 1: 60 ms typed in microseconds
    plan = build_plan(_meas_book(tmp_path, ttft_ms=60_000.0))
    said = [str(w) for w in plan.warnings if "typed in microseconds" in str(w)]
    assert len(said) == 1 and said[0].startswith("Measurements!F2: ttft_ms 60,000 is "), said
    assert "(60 ms)?" in said[0]


@pytest.mark.parametrize("meas", [{"ttft_ms": 60.0}, {"ttft_ms": 30_000.0, "concurrency": 64}])
def test_plausible_or_queued_ttft_is_not_warned(tmp_path, meas):
    plan = build_plan(_meas_book(tmp_path, **meas))
    assert not any("typed in microseconds" in str(w) for w in plan.warnings)


def test_tpot_typed_in_microseconds_is_warned(tmp_path):
    # one decode step reads 8.03e9 params x 2 B = 16.06 GB at 3.35 TB/s: 4.8 ms; 12,000 is 2,500x
    plan = build_plan(_meas_book(tmp_path, osl=200, tpot_ms=12_000.0))
    said = [str(w) for w in plan.warnings if "tpot_ms" in str(w) and "microseconds" in str(w)]
    assert len(said) == 1 and said[0].startswith("Measurements!I2: tpot_ms 12,000 is "), said


@pytest.mark.parametrize("meas, said", [
    ({"ttft_ms": 0.0005}, "was it typed in seconds"),           # faster than 100% of peak (~14 ms)
    ({"ttft_ms": 60_000.0}, "was it typed in microseconds"),    # 4,000x the floor
    ({"osl": 200, "tpot_ms": 0.001}, "typed in seconds, or per request amortised"),
    ({"osl": 200, "tpot_ms": 12_000.0}, "was it typed in microseconds"),
])
def test_measurement_bounds_one_pass_each_floor_once(tmp_path, monkeypatch, meas, said):
    """Both sides of a Measurements row (typed in seconds? in microseconds?) in one pass over the rows,
    each floor computed once per row: a build counts one call of each floor for the one row."""
    from planner.plan import trust

    calls = {"roofline": 0, "decode": 0}
    roof, dec = trust.roofline_floor_ms, trust.decode_floor_ms

    def count_roof(*a, **k):
        calls["roofline"] += 1
        return roof(*a, **k)

    def count_dec(*a, **k):
        calls["decode"] += 1
        return dec(*a, **k)

    plan = build_plan(_meas_book(tmp_path, **meas))
    assert sum(said in str(w) and str(w).startswith("Measurements!") for w in plan.warnings) == 1
    monkeypatch.setattr(trust, "roofline_floor_ms", count_roof)
    monkeypatch.setattr(trust, "decode_floor_ms", count_dec)
    p_in = plan.input
    again = trust.measurement_bounds(p_in.optional["Measurements"], {r["model"]: r for r in p_in.models.records},
                                     {r["gpu"]: r for r in p_in.gpus.records})
    # the one row's TTFT floor once, its step floor once when a TPOT is typed; the same one warning
    assert calls == {"roofline": 1, "decode": 1 if "tpot_ms" in meas else 0}, calls
    assert [str(w) for w in again] == [str(w) for w in plan.warnings if str(w).startswith("Measurements!")]


def test_hbm_bandwidth_typed_in_gb_per_s_is_warned(tmp_path):
    path, coord = _book(tmp_path, "GPUs", "hbm_tbps", "hbm_tbps", 3350)
    plan = build_plan(path)
    assert (f"GPUs!{coord[0]}2: hbm_tbps 3,350 TB/s is beyond any GPU's memory bandwidth (the fastest, B200, "
            f"has 8 TB/s): typed in GB/s (3.35 TB/s)?") in [str(w) for w in plan.warnings]


# --------------------------------------------------------------------------- a column typed on the wrong sheet
def _extra_header(tmp_path, sheet, header, value, optional=None):
    path = tmp_path / "x.xlsx"
    write_input_workbook(path, MODELS, GPUS, [dict(ROW)], {"periods": "2027-Q1..2027-Q2"}, optional=optional)
    wb = openpyxl.load_workbook(path)
    ws = wb[sheet]
    col = ws.max_column + 1
    ws.cell(1, col).value = header
    ws.cell(2, col).value = value
    wb.save(path)
    return path, f"{openpyxl.utils.get_column_letter(col)}1"


@pytest.mark.parametrize("sheet, header, home", [
    ("Demand", "growth", "the Workloads sheet and of Settings"),        # growth per period typed per Demand row
    ("Demand", "demand_growth", "the Workloads sheet and of Settings"),
    ("Workloads", "kv_bytes", "the Models sheet"),                       # a model's column typed per workload
    ("Workloads", "hourly_cost", "the GPUs sheet"),
])
def test_a_column_of_another_sheet_is_refused(tmp_path, sheet, header, home):
    dem = {"Demand": [{"workload": "chat", "period": "2027-Q1", "demand_tpm": 1_000_000}]}
    path, coord = _extra_header(tmp_path, sheet, header, 0.1, optional=dem)
    with pytest.raises(InputError) as e:
        build_plan(path)
    assert f"{sheet}!{coord}: header {header!r} is a column of {home}, not of {sheet}: as typed its values would " \
           f"be ignored" in "\n".join(map(str, e.value.problems))


def test_text_note_columns_named_as_another_sheets_text_column_stay_notes(tmp_path):
    path, _ = _extra_header(tmp_path, "Workloads", "source", "from the Q3 deck")  # a Measurements text column
    assert build_plan(path).input.workloads.extras == ["source"]


@pytest.mark.parametrize("header, refused", [
    ("cost_per_gib_month (USD/TB/month)", True), ("cost_per_gib_month (USD/GB/month)", True),
    ("cost_per_gib_month (USD/GiB/year)", True), ("cost_per_gib_month (USD/GiB/month)", False),
])
def test_tier_price_units(tmp_path, header, refused):
    from planner.core.schema import column
    from planner.inputs.header_units import conversion

    factor, _note, problem = conversion(header, column("Tiers", "cost_per_gib_month"))
    assert factor == 1.0 and (problem is not None) == refused
    if refused:
        assert "is a price per GiB (2^30 bytes) and month" in problem


def test_settings_quarter_span_without_years_is_refused():
    from planner.inputs.period_labels import parse_periods

    # '2027 Q1-Q4' was one period of that name
    assert parse_periods("2027 Q1-Q4") == ([], ["periods '2027 Q1-Q4': a range is written between two quarters, "
                                                 "e.g. 2027-Q1..2027-Q4"])


@pytest.mark.parametrize("typed, hint", [(3_000, "typed per second (x 60 is 180,000 tokens/min)?"),
                                         (100_000_000, "the fleet's throughput rather than one instance's?")])
def test_tpm_measured_far_from_the_model_is_warned(tmp_path, typed, hint):
    # the model at hit_measured 0: chip = 10 + 90 + 1,000 = 1,100 ms; (1,000 + 200) x 60,000 / 1,100
    # = 65,455 tokens/min. 3,000 is 0.0458x (a per-second rate), 1e8 is 1,528x
    path = tmp_path / "t.xlsx"
    write_input_workbook(path, MODELS, GPUS, [dict(ROW, tpm_measured=typed, hit_measured=0)], {})
    said = [str(w) for w in build_plan(path).warnings if "tpm_measured" in str(w)]
    assert len(said) == 1 and said[0].startswith(f"Workloads!R2: tpm_measured {typed:,.0f} is ") and hint in said[0]
    assert "(65,455 tokens/min: (isl + osl) x 60,000 / 1,100 ms)" in said[0]


def test_tpm_measured_near_the_model_is_not_warned(tmp_path):
    path = tmp_path / "t.xlsx"
    write_input_workbook(path, MODELS, GPUS, [dict(ROW, tpm_measured=40_000, hit_measured=0)], {})  # 0.61x
    assert not any("tpm_measured" in str(w) for w in build_plan(path).warnings)


# --------------------------------------------------------------------------- GPUs values in another unit
@pytest.mark.parametrize("column, typed, said", [
    # nvidia-smi's 81,559 MiB of an H100 typed as GiB: 81,559 / 1,024 = 79.65 GiB
    ("hbm_gib", 81559, "hbm_gib 81,559 GiB is beyond any GPU's memory (the largest have 288 GB): typed in MiB "
                       "(79.65 GiB)?"),
    # USD 2.50/h x 730 h = 1,825 a month typed as hourly: 1,825 / 730 = 2.5
    ("hourly_cost", 1825, "hourly_cost 1,825 USD/h is beyond any GPU-hour's price (about 1-15 USD): typed per "
                          "month (2.5 USD/h at 730 h a month), or for a whole node rather than one GPU?"),
    # PCIe Gen5 x16's 64 GB/s typed in Gb/s: 512 / 8 = 64; over 2 x 50 GB/s (the catalog's Gen5)
    ("pcie_gbps", 512, "pcie_gbps 512 GB/s is over 2x what a PCIe Gen5 x16 link carries (50 GB/s): typed in "
                       "Gb/s (64 GB/s)?"),
])
def test_gpu_values_typed_in_another_unit_are_warned(tmp_path, column, typed, said):
    path, coord = _book(tmp_path, "GPUs", column, column, typed)
    plan = build_plan(path)
    got = [str(w) for w in plan.warnings if str(w).startswith(f"GPUs!{coord[0]}2: {column}")]
    assert len(got) == 1 and got[0].startswith(f"GPUs!{coord[0]}2: {said}"), got


@pytest.mark.parametrize("column, typed, settings", [
    ("hbm_gib", 288, {}), ("hourly_cost", 12.3, {}), ("pcie_gbps", 64, {}),
    ("hourly_cost", 400, {"currency": "JPY"}),   # a GPU-hour in yen: not checked
])
def test_gpu_values_in_their_unit_are_not_warned(tmp_path, column, typed, settings):
    path, coord = _book(tmp_path, "GPUs", column, column, typed)
    if settings:
        wb = openpyxl.load_workbook(path)
        ws = wb["Settings"]
        for k, v in settings.items():
            row = next(r for r in range(1, ws.max_row + 1) if ws.cell(r, 1).value == k)
            ws.cell(row, 2).value = v
        wb.save(path)
    plan = build_plan(path)
    assert not [str(w) for w in plan.warnings if str(w).startswith(f"GPUs!{coord[0]}2")]


def test_demand_below_one_request_an_hour_is_warned(tmp_path):
    # ROW: isl 1,000 + osl 200 = 1,200 tokens a request; one an hour is 1,200 / 60 = 20 tokens/min;
    # 7.2 (7.2M typed in millions) is below it
    path, coord = _book(tmp_path, "Workloads", "demand_tpm", "demand_tpm", 7.2)
    plan = build_plan(path)
    assert (f"Workloads!{coord[0]}2: demand_tpm 7.2 tokens/min is less than one request an hour of chat ((isl + "
            f"osl) / 60 = 20 tokens/min): typed in millions (7,200,000) or thousands (7,200) of tokens/min?") \
        in [str(w) for w in plan.warnings]
    path, _ = _book(tmp_path, "Workloads", "demand_tpm", "demand_tpm", 20.0)   # one an hour: not warned
    assert not [str(w) for w in build_plan(path).warnings if "one request an hour" in str(w)]
