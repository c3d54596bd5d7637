"""Sensitivity sheets, tornado, Explorer and charts: live, correct, pointing where they say."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import numpy as np
import openpyxl
import pytest

from conftest import EXAMPLE, same_value, sheet_values, value_book
from planner.equations import kvhit as m
from planner.plan.build import build_plan, hit_grid
from planner.plan.sensitivity import ALPHA_STEPS, DRIVERS
from planner.workbook.writer import write_output
from test_recalc import compare_sheet

PLAN = build_plan(EXAMPLE)


@pytest.fixture(scope="module")
def example_out(example_output) -> Path:
    return example_output  # conftest: write_output(build_plan(EXAMPLE)), PLAN's output, written once (read-only)


# ----------------------------------------------------------------------------- shapes and values
def test_hit_grid():
    assert list(hit_grid(0.25)) == [0, 0.25, 0.5, 0.75, 1]
    assert list(hit_grid(0.3)) == [0, 0.3, 0.6, 0.9, 1.0]  # 1 is always the last point
    assert len(hit_grid(0.05)) == 21


def test_tables_have_every_workload_and_point():
    n = len(PLAN.results)
    f = PLAN.sens.frames
    assert len(f["Sensitivity_Hit"]) == n * 21
    assert len(f["Sensitivity_Alpha"]) == n * len(ALPHA_STEPS) == n * 11
    assert len(f["Sensitivity_PCIe"]) == n * 5  # as planned, Gen4, Gen5, 200 and 450 GB/s from Settings
    assert list(f["Sensitivity_PCIe"]["pcie_gbps"].iloc[1:5]) == [25, 50, 200, 450]
    assert len(PLAN.sens.tornado) == n * len(DRIVERS)


def test_alpha_sweep_matches_results_at_row_alpha_and_bounds():
    a = PLAN.sens.frames["Sensitivity_Alpha"]
    r = PLAN.results.set_index("workload")
    for w, block in a.groupby("workload", sort=False):
        at0 = block[block["alpha"] == 0]["ttft_ms"].iat[0]
        at1 = block[block["alpha"] == 1]["ttft_ms"].iat[0]
        assert at0 == pytest.approx(r.at[w, "ttft_alpha0_ms"]) and at1 == pytest.approx(r.at[w, "ttft_alpha1_ms"])
        assert np.all(np.diff(block["ttft_ms"].to_numpy()) <= 1e-9)  # more overlap never slower


def test_pcie_sweep_first_row_is_the_plan():
    p = PLAN.sens.frames["Sensitivity_PCIe"]
    planned = p[p["link"] == "as planned"].reset_index(drop=True)
    for c in ("load_ms", "ttft_ms", "delta", "h_star"):
        np.testing.assert_allclose(planned[c], PLAN.results[c], rtol=1e-12)
    # hand check: h* = 1/(1 + isl*S/(B*1e6*T0)) for Gen4 of the first workload
    r, res = PLAN.results.iloc[0], PLAN.resolved.iloc[0]
    gen4 = p[(p["workload"] == r["workload"]) & (p["pcie_gbps"] == 25)].iloc[0]
    assert gen4["h_star"] == pytest.approx(1 / (1 + res["isl"] * r["kv_bytes_per_token_gpu"] / (25e6 * r["t0_ms"])))


def test_tornado_against_direct_model_evaluation():
    """Independent check of two bars: recompute TPM at target with one input moved."""
    t = PLAN.sens.tornado
    for w in range(len(PLAN.results)):
        res = PLAN.resolved.iloc[w]
        r = PLAN.results.iloc[w]

        def tpm(**kw):
            x = {**res.to_dict(), **kw}
            s = r["kv_bytes_per_token_gpu"]
            ttft = lambda h: m.ttft_ms(x["t_fixed_ms"], m.kv_load_ms(h, x["isl"], s, x["pcie_gbps"]),
                                      m.compute_ms(h, x["t_attn0_ms"], x["t_ffn0_ms"], x["t_other0_ms"],
                                                   x["other_scaling"]), x["alpha"])
            ct, cm = ttft(x["hit_target"]) + x["t_decode_ms"], ttft(x["hit_measured"]) + x["t_decode_ms"]
            model = m.tpm_delivered(x["isl"], x["osl"], ct)
            return float(m.tpm_delivered_target(x["tpm_measured"], cm, ct, model))

        rows = t.iloc[w * len(DRIVERS):(w + 1) * len(DRIVERS)].set_index("driver")
        h = res["hit_target"]
        assert rows.at["hit_target", "tpm_low"] == pytest.approx(tpm(hit_target=h * 0.8), rel=1e-12)
        assert rows.at["hit_target", "tpm_high"] == pytest.approx(tpm(hit_target=min(1.0, h * 1.2)), rel=1e-12)
        assert rows.at["isl", "tpm_high"] == pytest.approx(tpm(isl=res["isl"] * 1.2), rel=1e-12)
        assert rows.at["alpha", "high_value"] == min(1.0, res["alpha"] * 1.2)
        assert sorted(rows["rank"]) == list(range(1, len(DRIVERS) + 1))
        widest = rows["swing"].idxmax()
        assert rows.at[widest, "rank"] == 1


# ----------------------------------------------------------------------------- live: explorer and edits
# the Explorer after a change of workload and the input edits recalculated in LibreOffice:
# tests/test_recalc.py (one recalculation of the example, one of the edited output)


# ----------------------------------------------------------------------------- charts
def _chart_refs(path: Path, skip: tuple[str, ...] = ("Calibration",)) -> dict[str, list[dict]]:
    """Chart title -> its series: name and the formulas of x/categories and y/values; charts
    over the sheets in ``skip`` (the Calibration sheet's fits, tested in test_calib_workbook)
    are left out."""
    out = {}
    with zipfile.ZipFile(path) as z:
        for name in sorted(n for n in z.namelist() if re.match(r"xl/charts/chart\d+\.xml$", n)):
            xml = z.read(name).decode("utf-8")
            title = " ".join(re.findall(r"<a:t>([^<]*)</a:t>", xml.split("<c:plotArea>")[0]))
            series = []
            for ser in re.findall(r"<c:ser>(.*?)</c:ser>", xml, re.S):
                sname = re.search(r"<c:tx>.*?<c:v>([^<]*)</c:v>", ser, re.S)
                refs = re.findall(r"<c:(cat|xVal|val|yVal)>.*?<c:f>([^<]*)</c:f>", ser, re.S)
                series.append({"name": sname.group(1) if sname else "", **{k: f for k, f in refs}})
            if series and all(f.split("!")[0].strip("'") in set(skip) | FINANCE_SHEETS
                              for ser in series for k, f in ser.items() if k != "name"):
                continue  # the Calibration and finance sheets' charts are tested in their own files
            out[title] = series
    return out


FINANCE_SHEETS = {"Summary", "Fleet", "Fleet_By_Period", "Demand_Calc", "Scenario_Compare"}


def _range_values(wb, ref: str) -> list:
    sheet, rng = ref.rsplit("!", 1)
    ws = wb[sheet.strip("'")]
    cells = ws[rng.replace("$", "")]
    return [c.value for row in cells for c in row]


def _column_of(wb, ref: str) -> str:
    sheet, rng = ref.rsplit("!", 1)
    ws = wb[sheet.strip("'")]
    first = ws[rng.replace("$", "").split(":")[0]]
    return str(ws.cell(1, first.column).value).split(" [")[0]


def test_chart_series_point_at_the_advertised_quantities(example_out):
    charts = _chart_refs(example_out)
    # the sheets the series name, read-only (a full load parses and styles every sheet)
    named = {ref.rsplit("!", 1)[0].strip("'") for series in charts.values() for s in series
             for k, ref in s.items() if k in ("xVal", "yVal", "cat", "val") and isinstance(ref, str)}
    wb = value_book(example_out, *sorted(named))
    n = len(PLAN.results)
    assert len(charts) == 4 * n + 4  # four per workload (12 <= 20) and four on the Explorer
    sens = PLAN.sensitivity_hit
    for w, name in enumerate(PLAN.results["workload"]):
        block = sens[sens["workload"] == name]
        ttft = charts[f"TTFT vs hit: {name}"]
        by = {s["name"]: s for s in ttft}
        for sname, col in (("TTFT α=0 [ms]", "ttft_alpha0_ms"), ("TTFT α=1 [ms]", "ttft_alpha1_ms")):
            s = by[sname]
            assert s["xVal"].startswith("Sensitivity_Hit!") and _column_of(wb, s["xVal"]) == "hit"
            assert _column_of(wb, s["yVal"]) == col
            np.testing.assert_allclose(_range_values(wb, s["yVal"]), block[col], rtol=1e-12)
            np.testing.assert_allclose(_range_values(wb, s["xVal"]), block["hit"], rtol=1e-12)
        assert _range_values(wb, by["h* (break-even)"]["xVal"]) == [pytest.approx(PLAN.results["h_star"].iat[w])] * 2
        assert _range_values(wb, by["target"]["xVal"]) == [pytest.approx(PLAN.resolved["hit_target"].iat[w])] * 2
        assert _range_values(wb, by["target"]["yVal"])[1] == pytest.approx(block["ttft_alpha0_ms"].max())
        lc = {s["name"]: s for s in charts[f"Load vs compute: {name}"]}
        assert _column_of(wb, lc["KV load [ms]"]["yVal"]) == "load_ms"
        assert _column_of(wb, lc["compute [ms]"]["yVal"]) == "compute_ms"
        tp = {s["name"]: s for s in charts[f"TPM vs hit: {name}"]}
        np.testing.assert_allclose(_range_values(wb, tp["delivered [tokens/min]"]["yVal"]), block["tpm_delivered"])
        np.testing.assert_allclose(_range_values(wb, tp["physical [tokens/min]"]["yVal"]), block["tpm_physical"])
        bars = {s["name"]: s for s in charts[f"Tornado: delivered TPM change, {name}"]}
        t = PLAN.sens.tornado[PLAN.sens.tornado["workload"] == name].sort_values("rank")
        assert _range_values(wb, bars["driver low"]["cat"]) == list(t["driver"])
        np.testing.assert_allclose(_range_values(wb, bars["driver low"]["val"]), t["tpm_low"] - t["tpm_base"])
        np.testing.assert_allclose(_range_values(wb, bars["driver high"]["val"]), t["tpm_high"] - t["tpm_base"])
    ex = {s["name"]: s for s in charts["TTFT vs hit: chosen workload"]}
    assert ex["TTFT α=0 [ms]"]["yVal"].startswith("Explorer!")


def test_no_per_workload_charts_beyond_twenty(tmp_path):
    from planner.workbook.layout import MAX_CHART_WORKLOADS

    src = tmp_path / "many.xlsx"
    wb = openpyxl.load_workbook(EXAMPLE)
    ws = wb["Workloads"]
    base_rows = [[c.value for c in row] for row in ws.iter_rows(min_row=2)]
    for row in base_rows[:MAX_CHART_WORKLOADS + 1 - len(base_rows)]:  # 14 -> 21 workloads: one beyond twenty
        ws.append([f"{row[0]}-copy"] + row[1:])
    wb.save(src)
    plan = build_plan(src)
    assert len(plan.results) == MAX_CHART_WORKLOADS + 1 == 21
    out = tmp_path / "many-plan.xlsx"
    write_output(plan, out)
    wbo = openpyxl.load_workbook(out, read_only=True)  # the sheet names: no need to parse every sheet
    assert "Charts" not in wbo.sheetnames and "Explorer" in wbo.sheetnames
    wbo.close()
    assert len(_chart_refs(out)) == 4  # the Explorer's


# ----------------------------------------------------------------------------- sheet size
@pytest.mark.libreoffice
def test_tables_continue_on_numbered_sheets(tmp_path, recalc):
    # three workloads at 25 rows a sheet: 63 Sensitivity_Hit rows take three numbered sheets (one
    # workload each), Alpha, HitAlpha and Tornado_Calc continue on numbered sheets too, and LibreOffice
    # recalculates a small workbook instead of the whole example (five workloads at 50 rows a sheet split
    # Hit and Tornado_Calc alike, with two thirds more formulas)
    from conftest import edited_example, trim_workloads

    src, _ = edited_example(tmp_path / "in.xlsx", lambda wb: trim_workloads(wb, 3))
    PLAN = build_plan(src)
    assert len(PLAN.results) == 3
    out = tmp_path / "split.xlsx"
    write_output(PLAN, out, max_rows=25)  # 21 rows per workload: 21 rows a sheet
    wb = openpyxl.load_workbook(out, read_only=True)
    names = wb.sheetnames
    n = len(PLAN.results)
    hit_sheets = [s for s in names if s == "Sensitivity_Hit" or s.startswith("Sensitivity_Hit_")]
    per_sheet = lambda k: -(-n // (25 // k))  # sheets of a table of k rows a workload  # noqa: E731
    assert hit_sheets == ["Sensitivity_Hit"] + [f"Sensitivity_Hit_{i}" for i in range(2, per_sheet(21) + 1)]
    assert per_sheet(21) == 3 and per_sheet(11) == 2 and per_sheet(16) == 3 and per_sheet(5) == 1
    long_tables = [s for s in names if s.startswith(("Sensitivity", "Tornado_Calc"))]
    # at most 25 rows a sheet: Hit 21 rows a workload (1 a sheet), Alpha and HitAlpha 11 (2 a sheet),
    # PCIe 5 (5 a sheet), Tornado_Calc 16 (1 a sheet)
    assert len(long_tables) == per_sheet(21) + 2 * per_sheet(11) + per_sheet(5) + per_sheet(16)
    assert "Tornado_Calc_3" in names and "Sensitivity_Alpha_2" in names
    assert all(wb[s].max_row <= 26 for s in long_tables)
    wb.close()
    again = recalc(out)
    # stitched together, the numbered sheets equal the Python table
    rows = [r for s in hit_sheets for r in sheet_values(again, s)]
    frame = PLAN.sensitivity_hit
    assert len(rows) == len(frame) == n * 21
    for i, rec in enumerate(frame.to_dict("records")):
        for k, v in rec.items():
            assert same_value(v, rows[i][k]), (i, k)
    compare_sheet(again, "Tornado", PLAN.sens.tornado)  # refers into Tornado_Calc_2.. correctly


def test_row_limit_constant_is_excel_limit():
    from planner.workbook import layout

    assert layout.MAX_DATA_ROWS + 1 == 1_048_576 and layout.MAX_COLUMNS == 16_384
