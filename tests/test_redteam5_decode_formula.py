"""A deployment calibrated from Measurements that have TTFT only (no ``tpot_ms``), as a checker
types a published table (UCM's QwQ-32B on 2x H100, ds3fs_store.md, commit cdd44067: one row per
input length and hit ratio at concurrency 1, only the named columns): the Workloads row's blank
``t_decode_ms`` is the memory-bandwidth roofline's (the run says so), but the live formula in
Resolved was ``osl x Calibration!tpot_per_token_ms``, a blank cell. The stored value was right;
Excel or LibreOffice recalculating the output gave ``t_decode_ms`` 0, and with it a decode step
of 0, a TPOT at load 18 ms lower and a throughput far too high (red team 5, found on a LibreOffice
recalculation of that workbook: 22 Results columns off).

The check is independent of the calibration code: the same Workloads row without Measurements is
estimated by the roofline alone, and its decode must be the same number; the live cell must be
recalculated to the stored value by LibreOffice.
"""

from __future__ import annotations

import math

import openpyxl
import pytest

from conftest import header_index
from planner.plan.build import build_plan
from planner.workbook.writer import write_output

# ds3fs_store.md (commit cdd44067), table 'QwQ-32B model (2 x H100 GPUs)', concurrency 1, mean TTFT [ms]
PUBLISHED_C1 = [(4000, 0.0, 268.28), (4000, 0.8, 116.19), (8000, 0.0, 533.62), (8000, 0.8, 222.95),
                (16000, 0.0, 1144.92), (16000, 0.8, 493.03)]
WORKLOAD = ["chat", "QwQ-32B", "H100 SXM", 2, 8000, 200, 0.5]


def _write(path, measurements: bool) -> None:
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
    w.append(WORKLOAD)
    if measurements:
        m = wb.create_sheet("Measurements")
        m.append(["model", "gpu", "tp", "isl", "hit", "ttft_ms", "concurrency", "ttft_stat"])
        for isl, hit, ttft in PUBLISHED_C1:
            m.append(["QwQ-32B", "H100 SXM", 2, isl, hit, ttft, 1, "mean"])
    wb.save(path)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("rt5decode")
    src, bare = d / "in.xlsx", d / "bare.xlsx"
    _write(src, True)
    _write(bare, False)
    plan = build_plan(src)
    out = d / "out.xlsx"
    write_output(plan, out)
    return plan, build_plan(bare), out


def _resolved_cell(path, name: str, data_only: bool):
    ws = openpyxl.load_workbook(path, data_only=data_only)["Resolved"]
    return ws.cell(2, header_index(ws)[name]).value


def test_the_decode_is_the_roofline_one(built):
    plan, bare, _out = built
    assert plan.calibration.source[0] == "calibrated"           # the prefill times are calibrated
    got = float(plan.resolved["t_decode_ms"].iat[0])
    # the same row estimated with no Measurements at all: the decode is the same roofline number
    assert got == pytest.approx(float(bare.resolved["t_decode_ms"].iat[0]), rel=1e-12)
    assert got > 0


def test_every_calibration_cell_a_resolved_formula_reads_holds_a_number(built):
    """The live cell of t_decode_ms reads no blank Calibration parameter (the old code read
    Calibration!Q5, tpot_per_token_ms, blank for TTFT-only Measurements)."""
    import re

    _plan, _bare, out = built
    wb = openpyxl.load_workbook(out)
    vals = openpyxl.load_workbook(out, data_only=True)["Calibration"]
    res = wb["Resolved"]
    refs = set()
    for row in res.iter_rows(min_row=2):
        for c in row:
            if isinstance(c.value, str) and c.value.startswith("="):
                refs |= set(re.findall(r"Calibration!\$?([A-Z]+)\$?(\d+)", c.value))
    assert refs, "the calibrated row's prefill cells read the Calibration sheet"
    for col, r in sorted(refs):
        v = vals[f"{col}{r}"].value
        assert isinstance(v, (int, float)) and not math.isnan(v), (f"Calibration!{col}{r}", v)
    formula = _resolved_cell(out, "t_decode_ms", False)
    assert "Calibration" not in str(formula), formula


@pytest.mark.libreoffice
def test_libreoffice_recalculates_the_decode_and_results_to_the_stored_values(built, recalc):
    from conftest import sheet_values, same_value

    _plan, _bare, out = built
    again = recalc(out)
    assert same_value(_resolved_cell(out, "t_decode_ms", True), _resolved_cell(again, "t_decode_ms", True))
    stored, live = sheet_values(out, "Results")[0], sheet_values(again, "Results")[0]
    for name in ("decode_step_ms", "tpot_load_ms", "tpm_physical_target", "tpm_delivered_target"):
        if name in stored:
            assert same_value(stored[name], live[name], rel=1e-9), (name, stored[name], live[name])


# --------------------------------------------------------------------------- a capped open loop
# (planner.plan.capped_loop_checks; the check reads the input only, so it is run on the read input:
# calibrating these seven points takes 20-30 s, the c = 8 point's alpha interval refits 101 times)
def _capped(path, tpot_ms=None, rate=2.0, ttft=268.28) -> None:
    """One more Measurements row: the 4,000-token 0% point as ``vllm bench serve --request-rate R
    --max-concurrency 8`` reports it (both columns filled, as planner measurements fills them)."""
    _write(path, True)
    wb = openpyxl.load_workbook(path)
    m = wb["Measurements"]
    m.cell(1, 9).value, m.cell(1, 10).value, m.cell(1, 11).value = "request_rate", "osl", "tpot_ms"
    m.append(["QwQ-32B", "H100 SXM", 2, 4000, 0.0, ttft, 8, "mean", rate, 200, tpot_ms])
    wb.save(path)


def _capped_warnings(path):
    from types import SimpleNamespace

    from planner.inputs.reader import read_input
    from planner.plan.capped_loop_checks import capped_loop_warnings

    return [p for p in capped_loop_warnings(SimpleNamespace(input=read_input(path)))
            if str(p.place) == "Measurements!I8"]


# by hand, Little's law N = X (TTFT + (osl - 1) TPOT), X the arrival rate (no throughput typed):
#   rate 2/s, no TPOT:      N >= 2 x 0.26828 s = 0.54 (a lower bound): said, with what to type
#   rate 2/s, TPOT 20 ms:   N = 2 x (268.28 + 199 x 20) ms = 8.50 >= 3/4 x 8: the cap binds, nothing said
#   rate 0.5/s, TPOT 10 ms: N = 0.5 x (268.28 + 1990) ms = 1.13 < 6: the arrivals set the load
def test_a_capped_open_loop_without_its_decode_is_said(tmp_path):
    _capped(tmp_path / "c.xlsx")
    got = _capped_warnings(tmp_path / "c.xlsx")
    assert len(got) == 1 and "if fewer than 8 were in flight" in got[0].message
    assert "at least 0.54 by Little's law" in got[0].message


def test_a_capped_loop_at_its_cap_is_not_said(tmp_path):
    _capped(tmp_path / "c.xlsx", tpot_ms=20.0)
    assert _capped_warnings(tmp_path / "c.xlsx") == []


def test_a_capped_loop_far_below_its_cap_is_said_with_littles_law(tmp_path):
    _capped(tmp_path / "c.xlsx", tpot_ms=10.0, rate=0.5)
    got = _capped_warnings(tmp_path / "c.xlsx")
    assert len(got) == 1 and "Little's law puts 1.1 requests in flight (0.5 requests/s x 2,258 ms)" in got[0].message
