"""Issue 20, red team 7: typed mistakes that planned silently on an analyst's finance workbook (two models,
two GPU types, a load test, periods and growth; the cases tried are in the landing's note). Each test fails
on the code before it.

* ``kv_gbps`` typed in Gb/s (a 400 Gb/s RDMA store typed as 400 GB/s: the KV load planned 8x too fast);
* a Tiers ``read_gbps`` in Gb/s likewise;
* ``max_seq_len`` in thousands of tokens (``128`` for 128k, shorter than the row's own request);
* ``ttft_slo_ms`` / ``tpot_slo_ms`` typed in seconds: warned as unreachable before, now with the unit said.
"""

from __future__ import annotations

import pytest
from openpyxl.utils import get_column_letter

from planner.plan.build import build_plan
from planner.workbook.input_sheets import write_input_workbook
from test_kv_tiers import TIERS, make

MODELS = [{"model": "Llama-3.1-8B", "kv_bytes": 2}]
GPUS = [{"gpu": "H100 SXM", "hourly_cost": 2.5}]  # catalog: PCIe Gen5, 50 GB/s host link
ROW = {"workload": "chat", "model": "Llama-3.1-8B", "gpu": "H100 SXM", "tp": 1, "isl": 1000, "osl": 200,
       "hit_target": 0.5, "t_attn0_ms": 10, "t_ffn0_ms": 90, "t_decode_ms": 1000, "demand_tpm": 1_000_000}


def _plan(tmp_path, **row):
    path = tmp_path / "in.xlsx"
    write_input_workbook(path, MODELS, GPUS, [dict(ROW, **row)], {})
    return build_plan(path)


def _cell(table, name, i=0):
    return f"{table.sheet}!{get_column_letter(table.positions[name] + 1)}{table.rows[i]}"


def _at(plan, place):
    return [str(w) for w in plan.warnings if str(w).startswith(place + ":")]


def test_kv_gbps_typed_in_gbit_is_warned_at_its_cell(tmp_path):
    plan = _plan(tmp_path, kv_gbps=400)
    # the load at 0.5 hit as planned: 0.5 x 1,000 x 131,072 B / 400e9 B/s = 0.16384 ms (50 GB/s: 1.31072 ms)
    assert plan.results["load_ms"].iat[0] == pytest.approx(0.16384, rel=1e-12)
    got = _at(plan, _cell(plan.input.workloads, "kv_gbps"))
    assert len(got) == 1, plan.warnings
    # 400 / 50 = 8x the link; 400 Gb/s / 8 = 50 GB/s
    assert ("kv_gbps 400 GB/s is 8x H100 SXM's host link (50 GB/s), through which KV from host memory, an SSD "
            "or the network reaches HBM: typed in Gb/s (50 GB/s;") in got[0]


@pytest.mark.parametrize("kv", [50, 100])  # the link itself, and twice it (the limit) are not warned
def test_kv_gbps_within_twice_the_link_is_not_warned(tmp_path, kv):
    plan = _plan(tmp_path, kv_gbps=kv)
    assert _at(plan, _cell(plan.input.workloads, "kv_gbps")) == []


def test_max_seq_len_in_thousands_is_warned_at_its_cell(tmp_path):
    plan = _plan(tmp_path, max_seq_len=8)   # 8k meant; isl + osl = 1,200 tokens
    got = _at(plan, _cell(plan.input.workloads, "max_seq_len"))
    assert len(got) == 1, plan.warnings
    # 1,200 / 8 = 150x shorter; 8 x 1,000 = 8,000 tokens
    assert ("max_seq_len 8 tokens is shorter than the row's own request (isl + osl = 1,200 tokens): the peak KV, "
            "the HBM check and the batch that fits are planned for requests 150x shorter than its own; typed in "
            "thousands (8,000 tokens)?") in got[0]
    # what it changes, by hand: peak KV = batch x max_seq_len x S; max_batch_fit = HBM left / (max_seq_len x S)
    assert plan.results["kv_peak_gib"].iat[0] == pytest.approx(
        float(plan.resolved["batch"].iat[0]) * 8 * 131_072 / 2**30, rel=1e-12)


def test_max_seq_len_at_or_above_the_request_is_not_warned(tmp_path):
    for msl in (1200, 8192):
        plan = _plan(tmp_path, max_seq_len=msl)
        assert _at(plan, _cell(plan.input.workloads, "max_seq_len")) == []


def test_a_tier_read_rate_in_gbit_is_warned_once_at_its_cell(tmp_path):
    # the tier test's GPU has a 25 GB/s link; a remote tier typed 400 (400 Gb/s = 50 GB/s) is 16x it
    tiers = [TIERS[0], dict(TIERS[1], kind="remote", scope="pool", read_gbps=400)]
    plan = build_plan(make(tmp_path, tiers=tiers))
    table = plan.input.optional["Tiers"]
    got = _at(plan, _cell(table, "read_gbps", 1))
    assert len(got) == 1, plan.warnings
    assert ("remote tier 'DRAM': read_gbps 400 GB/s is over 2x the host link of the GPUs it serves ('chat' 25 GB/s)"
            ", through which a remote tier's KV reaches HBM: typed in Gb/s (50 GB/s;") in got[0]


def test_a_tier_read_rate_below_the_link_is_not_warned(tmp_path):
    plan = build_plan(make(tmp_path))   # TIERS: dram at 10 GB/s on a 25 GB/s link
    assert [w for w in plan.warnings if "read_gbps" in str(w)] == []


@pytest.mark.parametrize("col, typed, said", [
    # request alone: TTFT at 0.5 = 1.31072 + 52.5 = 53.81072 ms (test_redteam7_baseline's docstring)
    ("ttft_slo_ms", 0.5, "ttft_slo_ms 0.5 is not above the request-alone TTFT 53.8 ms: no instance count meets it "
                         "(left out of instances_needed); typed in seconds (500 ms)? ttft_slo_ms is in milliseconds"),
    # one request's decode step as planned is some hundreds of ms (t_decode_ms 1,000 for 200 tokens at the
    # decode's batch), so 0.05 s = 50 ms would be unreachable too and gets no hint: 0.5 s = 500 ms is typed
    ("tpot_slo_ms", 0.5, "tpot_slo_ms 0.5 is not above one request's decode step"),
])
def test_a_latency_target_in_seconds_says_so(tmp_path, col, typed, said):
    plan = _plan(tmp_path, **{col: typed})
    got = [str(w) for w in plan.warnings if f"{col} {typed}" in str(w)]
    assert len(got) == 1 and said in got[0], plan.warnings
    assert got[0].endswith(f"typed in seconds ({typed * 1000:g} ms)? {col} is in milliseconds")


def test_a_tight_target_in_milliseconds_gets_no_seconds_hint(tmp_path):
    plan = _plan(tmp_path, ttft_slo_ms=50)   # 50 ms < 53.8 ms alone: unreachable, but 50 s is no TTFT target
    got = [str(w) for w in plan.warnings if "ttft_slo_ms 50 " in str(w)]
    assert len(got) == 1 and "seconds" not in got[0], got


# --------------------------------------------------------------------------- a load test at another tp
# a load test of the workload's model and GPU, three cold lengths (t_fixed 20 + 0.05 ms a token), typed at tp 8
# (the node's GPUs) for a deployment of tp 1: it calibrates nothing, and the workload fell to the roofline silently
MEAS = [{"model": "Llama-3.1-8B", "gpu": "H100 SXM", "tp": 8, "isl": n, "hit": 0, "ttft_ms": 20 + 0.05 * n,
         "osl": 200, "tpot_ms": 10} for n in (1000, 2000, 4000)]
BLANK = {"t_attn0_ms": None, "t_ffn0_ms": None, "t_decode_ms": None}


def _measured(tmp_path, tp):
    path = tmp_path / "in.xlsx"
    write_input_workbook(path, MODELS, GPUS, [dict(ROW, **BLANK)], {},
                         optional={"Measurements": [dict(m, tp=tp) for m in MEAS]})
    return build_plan(path)


def test_a_load_test_at_another_tp_than_its_workload_is_said(tmp_path):
    plan = _measured(tmp_path, 8)
    assert plan.calibration.source == ["estimated"]
    got = [str(w) for w in plan.warnings if str(w).startswith("Measurements rows 2-4 (Llama-3.1-8B on 8x H100 SXM)")]
    assert len(got) == 1, plan.warnings
    assert ("this load test at tp 8 calibrates no workload: 'chat' at tp 1 (estimated by the roofline instead) runs "
            "Llama-3.1-8B on H100 SXM at another tp") in got[0]


def test_the_same_load_test_at_the_workloads_tp_calibrates_it_and_says_nothing(tmp_path):
    plan = _measured(tmp_path, 1)
    assert plan.calibration.source == ["calibrated"]
    # the fit reproduces the law the points were made from: t_ffn0 = 0.05 x 1,000 = 50 ms, t_fixed 20 ms
    assert float(plan.resolved["t_ffn0_ms"].iat[0]) + float(plan.resolved["t_attn0_ms"].iat[0]) \
        == pytest.approx(50.0, rel=1e-3)
    assert not [w for w in plan.warnings if "calibrates no workload" in str(w)]


# --------------------------------------------------------------------------- Settings hours_per_month
@pytest.mark.parametrize("hours, hint", [(160, "typed as a month's working hours (about 160)?"),
                                         (30, "typed in days (30 days = 720 h)?")])
def test_hours_per_month_that_is_no_month_is_warned_at_its_cell(tmp_path, hours, hint):
    path = tmp_path / "in.xlsx"
    write_input_workbook(path, MODELS, GPUS, [dict(ROW)], {"hours_per_month": hours})
    plan = build_plan(path)
    got = [str(w) for w in plan.warnings if "hours_per_month" in str(w)]
    assert len(got) == 1 and got[0].startswith("Settings!B"), plan.warnings
    # 160 / 730 = 0.219; 30 / 730 = 0.0411
    assert f"every cost per month, quarter and year is {hours / 730:,.3g}x what 730 h give; {hint}" in got[0]


@pytest.mark.parametrize("hours", [672, 720, 730, 744])
def test_hours_per_month_of_a_month_is_not_warned(tmp_path, hours):
    path = tmp_path / "in.xlsx"
    write_input_workbook(path, MODELS, GPUS, [dict(ROW)], {"hours_per_month": hours})
    assert not [w for w in build_plan(path).warnings if "hours_per_month" in str(w)]


# --------------------------------------------------------------------------- target_utilization typed 10x low
def test_a_utilisation_under_a_tenth_is_warned_at_its_cell(tmp_path):
    plan = _plan(tmp_path, target_utilization=0.08)
    # sized at 8% busy: ceil(1,000,000 / (68,323.47 x 0.08)) = ceil(182.95) = 183 GPUs where 80% gives
    # ceil(18.295) = 19 (TPM at 0.5 hit: test_redteam7_baseline's docstring)
    assert float(plan.results["gpus_needed"].iat[0]) == 183
    got = _at(plan, _cell(plan.input.workloads, "target_utilization"))
    assert got == [f"{_cell(plan.input.workloads, 'target_utilization')}: target_utilization 0.08 sizes the fleet to "
                   f"be busy 8.0% of the time (12.5x the GPUs its throughput needs): typed 8% for 80%? (type 0.8 or "
                   f"80% for 80%; latency targets are ttft_slo_ms and tpot_slo_ms)"], plan.warnings


def test_a_settings_utilisation_under_a_tenth_is_warned_at_its_cell(tmp_path):
    path = tmp_path / "in.xlsx"
    write_input_workbook(path, MODELS, GPUS, [dict(ROW)], {"target_utilization": 0.05})
    got = [str(w) for w in build_plan(path).warnings if "target_utilization" in str(w)]
    assert len(got) == 1 and got[0].startswith("Settings!B") and "typed 5% for 50%?" in got[0], got


@pytest.mark.parametrize("u", [0.1, 0.5, 1.0])
def test_an_ordinary_utilisation_is_not_warned(tmp_path, u):
    assert not [w for w in _plan(tmp_path, target_utilization=u).warnings if "target_utilization" in str(w)]


# --------------------------------------------------------------------------- Demand: a period without its year
def test_a_period_without_its_year_names_the_settings_periods(tmp_path):
    from planner.core.errors import InputError

    path = tmp_path / "in.xlsx"
    # 'Q2' for 2027-Q2, with only a hit ratio (the demand to be grown): before, "has no demand rows" alone
    write_input_workbook(path, MODELS, GPUS, [dict(ROW)], {"periods": "2027-Q1..2027-Q4"},
                         optional={"Demand": [{"workload": "chat", "period": "Q2", "hit_target": 0.6}]})
    with pytest.raises(InputError) as e:
        build_plan(path)
    got = [str(p) for p in e.value.problems]
    assert any(p.startswith("Demand!B2: period 'Q2' has no demand rows") and p.endswith(
        "; it is not one of Settings periods (2027-Q1 .. 2027-Q4), where a blank demand_tpm takes the grown demand: "
        "if it is one of them, type it as 2027-Q1 is typed") for p in got), got


# --------------------------------------------------------------------------- Scenarios: a plain 1 in a hit column
def _scenario(tmp_path, value, column="hit_target", fmt=None, op="set", sheet="Workloads", match="chat"):
    import openpyxl

    path = tmp_path / "in.xlsx"
    write_input_workbook(path, MODELS, GPUS, [dict(ROW)], {},
                         optional={"Scenarios": [{"scenario": "more hits", "sheet": sheet, "column": column,
                                                  "match": match, "op": op, "value": value}]})
    if fmt is not None:
        wb = openpyxl.load_workbook(path)
        ws = wb["Scenarios"]
        col = next(c.column for c in ws[1] if str(c.value).split(" [")[0] == "value")
        ws.cell(2, col).number_format = fmt
        wb.save(path)
    return build_plan(path)


@pytest.mark.parametrize("column", ["hit_target", "hit_baseline"])
def test_a_scenario_setting_a_hit_to_a_plain_one_is_warned(tmp_path, column):
    # before: the scenario planned at 100% hits silently (Workloads and Demand cells of 1 were warned)
    plan = _scenario(tmp_path, 1, column)
    got = [str(w) for w in plan.warnings if str(w).startswith("Scenarios!")]
    assert len(got) == 1, plan.warnings
    assert got[0].startswith(f"{_cell(plan.input.optional['Scenarios'], 'value')}: scenario 'more hits' sets "
                             f"{column} to 1, read as 100% (")
    assert got[0].endswith("if 1% was meant, type 0.01 or 1%; type 100% to say 100% is meant")


@pytest.mark.parametrize("value, fmt", [(1, "0%"), (0.6, None)])
def test_a_scenario_hit_typed_as_a_percent_or_below_one_is_not_warned(tmp_path, value, fmt):
    assert not [w for w in _scenario(tmp_path, value, fmt=fmt).warnings if str(w).startswith("Scenarios!")]


# --------------------------------------------------------------------------- Scenarios: a percent to multiply or add by
def test_a_scenario_multiplying_by_a_percent_below_100_is_warned(tmp_path):
    # before: 'multiply demand_tpm 10%' planned a tenth of the demand without a word (+10% meant)
    plan = _scenario(tmp_path, 0.1, "demand_tpm", fmt="0%", op="multiply")
    got = [str(w) for w in plan.warnings if str(w).startswith("Scenarios!")]
    assert got == [f"{_cell(plan.input.optional['Scenarios'], 'value')}: scenario 'more hits' multiplies demand_tpm "
                   f"by 10%, that is by 0.1 (a 90% cut): if +10% was meant, type 110% or 1.1"]
    # the scenario is still planned as typed (a warning, not a refusal): a tenth of the demand
    from planner.finance.scenarios import scenario_input
    from planner.inputs.scenario_checks import overrides

    p_in = plan.input
    ovs = overrides(p_in.optional["Scenarios"], {s: p_in.table(s) for s in ("Models", "GPUs", "Workloads")},
                    p_in.settings, [])
    s_in = scenario_input(p_in, "more hits", ovs)
    assert s_in.workloads.records[0]["demand_tpm"] == pytest.approx(ROW["demand_tpm"] * 0.1, rel=1e-12)


def test_a_scenario_adding_a_percent_to_a_number_is_warned_and_to_a_fraction_not(tmp_path):
    plan = _scenario(tmp_path, 0.1, "demand_tpm", fmt="0%", op="add")
    got = [str(w) for w in plan.warnings if str(w).startswith("Scenarios!")]
    assert got == [f"{_cell(plan.input.optional['Scenarios'], 'value')}: scenario 'more hits' adds 10%, that is the "
                   f"number 0.1, to demand_tpm: to raise it by 10%, use op multiply with 110%"]
    (tmp_path / "b").mkdir()
    assert not [w for w in _scenario(tmp_path / "b", 0.1, "hit_target", fmt="0%", op="add").warnings
                if str(w).startswith("Scenarios!")]  # hit_target + 10 points: what it says


@pytest.mark.parametrize("value, fmt", [(1.1, "0%"), (0.9, None), (0.9, "0.00")])
def test_a_scenario_multiplying_by_110_percent_or_a_plain_number_is_not_warned(tmp_path, value, fmt):
    assert not [w for w in _scenario(tmp_path, value, "demand_tpm", fmt=fmt, op="multiply").warnings
                if str(w).startswith("Scenarios!")]


# --------------------------------------------------------------------------- growth without Settings periods
def test_a_growth_without_periods_is_warned_at_its_cells(tmp_path):
    path = tmp_path / "in.xlsx"
    write_input_workbook(path, MODELS, GPUS, [dict(ROW, demand_growth=0.2)], {"demand_growth": 0.1})
    plan = build_plan(path)
    got = [str(w) for w in plan.warnings if "Settings periods is blank" in str(w)]
    assert len(got) == 2, plan.warnings
    assert got[0].startswith("Settings!B") and "demand_growth 0.1 is typed" in got[0]
    assert got[1].startswith(f"{_cell(plan.input.workloads, 'demand_growth')}: demand_growth 0.2 is typed")
    # nothing grown: no period is planned
    from planner.finance import periods as fp

    assert fp.plan_periods(plan) == []


def test_a_growth_with_periods_is_not_warned(tmp_path):
    path = tmp_path / "in.xlsx"
    write_input_workbook(path, MODELS, GPUS, [dict(ROW)], {"demand_growth": 0.1, "periods": "2027-Q1..2027-Q2"})
    assert not [w for w in build_plan(path).warnings if "Settings periods is blank" in str(w)]


# --------------------------------------------------------------------------- Measurements isl in thousands
def test_a_measured_isl_in_thousands_is_named_beside_the_microseconds_reading(tmp_path):
    # the cold points of MEAS with isl 1, 2, 4 (thousands meant) at the workload's tp: each TTFT (70-220 ms) is
    # far over 1,000x the roofline of a 1-4 token prompt; before, the only reading offered was microseconds
    path = tmp_path / "in.xlsx"
    pts = [dict(m, tp=1, isl=m["isl"] / 1000) for m in MEAS]
    write_input_workbook(path, MODELS, GPUS, [dict(ROW, **BLANK)], {}, optional={"Measurements": pts})
    plan = build_plan(path)
    meas = plan.input.optional["Measurements"]
    got = [str(w) for w in plan.warnings if str(w).startswith(_cell(meas, "ttft_ms", 0) + ":")]
    assert len(got) == 1, plan.warnings
    assert got[0].endswith(f"Or is {_cell(meas, 'isl', 0)}'s isl 1 in thousands of tokens (1,000 tokens; head the "
                           f"column 'isl (k tokens)' to have it converted)?")


def test_the_k_tokens_header_the_hint_names_converts_the_measured_isl(tmp_path):
    import openpyxl

    path = tmp_path / "in.xlsx"
    pts = [dict(m, tp=1, isl=m["isl"] / 1000) for m in MEAS]
    write_input_workbook(path, MODELS, GPUS, [dict(ROW, **BLANK)], {}, optional={"Measurements": pts})
    wb = openpyxl.load_workbook(path)
    ws = wb["Measurements"]
    next(c for c in ws[1] if str(c.value).split(" [")[0] == "isl").value = "isl (k tokens)"
    wb.save(path)
    plan = build_plan(path)
    assert plan.input.optional["Measurements"].records[0]["isl"] == 1000.0   # 1 k tokens = 1,000 tokens
    assert not [w for w in plan.warnings if "thousands of tokens" in str(w)]
    assert plan.calibration.source == ["calibrated"]


# --------------------------------------------------------------------------- units in a price header and a Settings key
def _refused(path) -> list[str]:
    from planner.core.errors import InputError

    with pytest.raises(InputError) as e:
        build_plan(path)
    return [str(p) for p in e.value.problems]


@pytest.mark.parametrize("unit, whole", [("USD/node-hour", "node"), ("USD per server hour", "server"),
                                         ("USD/8xGPU-hour", "8xGPU"), ("USD/instance-hour", "instance")])
def test_a_price_per_machine_hour_is_refused(tmp_path, unit, whole):
    # before: 'hourly_cost (USD/node-hour)' 20 was read as USD 20 a GPU-hour: 8x the cost of an 8-GPU node's
    import openpyxl

    path = tmp_path / "in.xlsx"
    write_input_workbook(path, MODELS, GPUS, [dict(ROW)], {})
    wb = openpyxl.load_workbook(path)
    cell = next(c for c in wb["GPUs"][1] if str(c.value).split(" [")[0] == "hourly_cost")
    cell.value = f"hourly_cost ({unit})"
    wb.save(path)
    got = _refused(path)
    assert any(p.startswith(f"GPUs!{cell.coordinate}: header 'hourly_cost ({unit})' says {unit}, a price per "
                            f"{whole}: hourly_cost is the price of one GPU-hour") for p in got), got


@pytest.mark.parametrize("unit", ["USD/h", "USD/GPU-hour", "USD per hour"])
def test_a_price_per_gpu_hour_header_is_read(tmp_path, unit):
    import openpyxl

    path = tmp_path / "in.xlsx"
    write_input_workbook(path, MODELS, GPUS, [dict(ROW)], {})
    wb = openpyxl.load_workbook(path)
    next(c for c in wb["GPUs"][1] if str(c.value).split(" [")[0] == "hourly_cost").value = f"hourly_cost ({unit})"
    wb.save(path)
    assert build_plan(path).input.gpus.records[0]["hourly_cost"] == 2.5


def _settings_key(tmp_path, key, typed_key, value):
    import openpyxl

    path = tmp_path / "in.xlsx"
    write_input_workbook(path, MODELS, GPUS, [dict(ROW)], {key: value})
    wb = openpyxl.load_workbook(path)
    ws = wb["Settings"]
    cell = next(ws.cell(r, 1) for r in range(2, ws.max_row + 1) if ws.cell(r, 1).value == key)
    cell.value = typed_key
    wb.save(path)
    return path, cell.coordinate


@pytest.mark.parametrize("key, typed_key, value, own", [
    ("hours_per_month", "hours_per_month (days)", 30, "h"),       # before: 30 hours a month, costs x 0.041
    ("prefill_layer_ms", "prefill_layer_ms [us]", 150, "ms"),     # before: 150 ms a layer, 1,000x
    ("gpus_per_node", "gpus_per_node (nodes)", 2, "GPUs"),
])
def test_a_settings_key_with_another_unit_is_refused_at_its_key(tmp_path, key, typed_key, value, own):
    path, where = _settings_key(tmp_path, key, typed_key, value)
    unit = typed_key.split("(")[-1].split("[")[-1].rstrip(")]")
    assert f"Settings!{where}: key {typed_key!r} says {unit}, but {key} is in {own}: the value would be read as " \
           f"{own} with the unit dropped; convert the value to {own} and write the key as {key!r}" in _refused(path)


def test_a_settings_key_with_its_own_unit_is_read(tmp_path):
    path, _ = _settings_key(tmp_path, "hours_per_month", "hours_per_month (h)", 720)
    assert build_plan(path).settings["hours_per_month"] == 720.0


# --------------------------------------------------------------------------- a period's demand typed per day
def _periods(tmp_path, demand_rows, today=100_000):
    path = tmp_path / "in.xlsx"
    write_input_workbook(path, MODELS, GPUS, [dict(ROW, demand_tpm=today)], {"periods": "2027-Q1..2027-Q2"},
                         optional={"Demand": demand_rows})
    return build_plan(path)


def test_a_small_workloads_period_demand_per_day_in_a_per_minute_row_is_warned(tmp_path):
    # today 100,000 tokens/min; 2027-Q2 144,000,000 (its per-day number, 100,000 x 1,440) in the per-minute
    # column: 1.44e8 / 68,323.47 = 2,108 GPUs, under the 10,000 of the huge-demand warning, so it planned silently
    plan = _periods(tmp_path, [{"workload": "chat", "period": "2027-Q2", "demand_tpm": 144_000_000}])
    from planner.finance import periods as fp

    assert fp.period_totals(plan)["gpus_needed"].tolist() == [2, 2108]   # ceil(1e5 / 68,323.47), ceil(2,107.6)
    got = [str(w) for w in plan.warnings if str(w).startswith("Demand!")]
    assert got == [f"{_cell(plan.input.optional['Demand'], 'demand_tpm')}: 'chat' in 2027-Q2: demand 1.44e+08 "
                   f"tokens/min is 1,440x the workload's demand_tpm today (100,000 tokens/min), about 1,440, the "
                   f"minutes of a day: typed per day in a per-minute row? (set its demand_unit to tokens/day: "
                   f"100,000 tokens/min) If the workload's demand does change that much, ignore this"], got


def test_a_per_minute_number_under_a_per_day_unit_is_warned(tmp_path):
    # 100,000 typed with demand_unit tokens/day: 100,000 / 1,440 = 69.44 tokens/min, 1/1,440 of today's
    plan = _periods(tmp_path, [{"workload": "chat", "period": "2027-Q2", "demand_tpm": 100_000,
                                "demand_unit": "tokens/day"}])
    got = [str(w) for w in plan.warnings if str(w).startswith("Demand!")]
    assert len(got) == 1 and "about 1/1,440, the minutes of a day: typed per minute under demand_unit tokens/day? " \
                             "(100,000 tokens/min as tokens/min)" in got[0], got


@pytest.mark.parametrize("q2", [100_000, 300_000, 2_000_000])   # same, 3x, 20x: growth, not a unit
def test_a_period_demand_that_grows_is_not_warned(tmp_path, q2):
    plan = _periods(tmp_path, [{"workload": "chat", "period": "2027-Q2", "demand_tpm": q2}])
    assert not [w for w in plan.warnings if str(w).startswith("Demand!")]


def test_a_huge_demand_row_is_told_to_set_its_demand_unit_not_a_header(tmp_path):
    # 8.64e9 (a day's tokens) in a per-minute Demand row: 8.64e9 / 68,323.47 = 126,457.3 GPUs > 10,000. Before, the
    # hint was to head the column 'demand_tpm (tokens/day)', which beside a demand_unit column is refused
    plan = _periods(tmp_path, [{"workload": "chat", "period": "2027-Q2", "demand_tpm": 8.64e9}], today=6_000_000)
    got = [str(w) for w in plan.warnings if str(w).startswith("Demand!")]
    assert len(got) == 1 and "needs about 126,457 GPUs for chat alone" in got[0], got
    assert "Set the row's demand_unit to tokens/day (or tokens/hour) to have it converted" in got[0]
    assert "Head the column" not in got[0]
