"""Calibration's point table, live formula against stored value (red team 5, found by recalculating a
checker's workbook in LibreOffice: 56 Calibration cells off).

A load test at concurrency c > 1 beside concurrency-1 points is read as the request-alone prefill
``P = (ttft - fixed_coef F - const) / factor`` (planner.plan.load_tests.prefill_given_fixed, F the
per-pass fixed cost the c = 1 points pin). The sheet's ``measured_ttft_ms`` cell was
``=Measurements!F5/factor``: the stored value was P, the formula recalculated to ttft / factor
(776.34 / 2.774 = 279.86 ms against P = 298.11 ms here), and with it ``error``, ``abs_error`` and
the fit's median and max error in Excel and LibreOffice.

Points: UCM's QwQ-32B on 2x H100 (ds3fs_store.md, commit cdd44067): 4k/8k/16k tokens at 0% hit and
concurrency 1 (268.28, 533.62, 1,144.92 ms), and 4k at concurrency 4 (776.34 ms, mean).
"""

from __future__ import annotations

import re

import openpyxl
import pytest

from planner.plan.build import build_plan
from planner.workbook.writer import write_output

POINTS = [(4000, 268.28, 1), (8000, 533.62, 1), (16000, 1144.92, 1), (4000, 776.34, 4)]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("rt5calpts")
    src = d / "in.xlsx"
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Models"
    ws.append(["model", "kv_bytes"])
    ws.append(["QwQ-32B", 2])
    g = wb.create_sheet("GPUs")
    g.append(["gpu", "hourly_cost"])
    g.append(["H100 SXM", 2.5])
    w = wb.create_sheet("Workloads")
    w.append(["workload", "model", "gpu", "tp", "isl", "osl", "hit_target"])
    w.append(["x", "QwQ-32B", "H100 SXM", 2, 8000, 200, 0.0])
    m = wb.create_sheet("Measurements")
    m.append(["model", "gpu", "tp", "isl", "hit", "ttft_ms", "concurrency", "ttft_stat"])
    for isl, ttft, c in POINTS:
        m.append(["QwQ-32B", "H100 SXM", 2, isl, 0.0, ttft, c, "mean"])
    wb.save(src)
    plan = build_plan(src)
    out = d / "out.xlsx"
    write_output(plan, out)
    return plan, out


def _points(path, data_only):
    ws = openpyxl.load_workbook(path, data_only=data_only)["Calibration"]
    head = next(r for r in ws.iter_rows(min_row=1, max_row=40) if r[0].value == "deployment" and
                any(c.value and str(c.value).startswith("measured_ttft_ms") for c in r))
    col = next(c.column for c in head if c.value and str(c.value).startswith("measured_ttft_ms"))
    return [ws.cell(head[0].row + 1 + k, col).value for k in range(len(POINTS))]


def test_the_measured_cell_evaluates_to_its_stored_value(built):
    """Each formula evaluated here by hand from the Measurements cell it reads."""
    plan, out = built
    formulas, stored = _points(out, False), _points(out, True)
    meas = openpyxl.load_workbook(out, data_only=True)["Measurements"]
    seen_c4 = False
    for f, v in zip(formulas, stored):
        # (ttft - taken) / factor, as ttft_fit.request_alone_ms's twin writes it: a negative part taken in
        # parentheses, a part or a factor left out where there is none
        m = re.fullmatch(r"=\(?Measurements!\$([A-Z]+)(\d+)(?:-(?:\((-[0-9.e+-]+)\)|([0-9.e+-]+))\))?"
                         r"(?:/([0-9.]+))?", f)
        assert m, f
        x = float(meas[f"{m.group(1)}{m.group(2)}"].value) - float(m.group(3) or m.group(4) or 0.0)
        x /= float(m.group(5) or 1.0)
        assert x == pytest.approx(v, rel=1e-12), (f, v)
        seen_c4 |= m.group(5) is not None
    assert seen_c4
    p4 = float(plan.calibration.fits[0].points["ttft_ms"].iat[3])
    assert any(v == pytest.approx(p4, rel=1e-12) for v in stored) and abs(p4 - 776.34 / 2.774) > 5  # not ttft/factor


@pytest.mark.libreoffice
def test_libreoffice_recalculates_the_points_to_the_stored_values(built, recalc):
    _plan, out = built
    again = recalc(out)
    for a, b in zip(_points(out, True), _points(again, True)):
        assert b == pytest.approx(a, rel=1e-9)
    cal, cal2 = (openpyxl.load_workbook(p, data_only=True)["Calibration"] for p in (out, again))
    for row in cal.iter_rows():
        for c in row:
            if isinstance(c.value, float):
                assert cal2[c.coordinate].value == pytest.approx(c.value, rel=1e-9), c.coordinate
