"""Property (issue 17): ``planner validate`` OK  =>  ``planner run`` succeeds, over the fuzzer's
random Workloads rows (tests/test_fuzz.py) plus random optional sheets (Measurements, Demand,
Scenarios); and when validate refuses, run refuses with the same problems and writes nothing.

A longer run: PLANNER_FUZZ_EXAMPLES=400 python -m pytest -p no:xdist tests/test_validate_run.py
"""

from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path

import openpyxl
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from conftest import problem_lines, run_cli
from planner.core import schema
from test_fuzz import GPUS, MODELS, WL_HEAD, good, row, wild

EXAMPLES = max(6, int(os.environ.get("PLANNER_FUZZ_EXAMPLES", "40")) // 5)

NAMES = ["M-gqa", "M-mla", "G5", "G4", "nope"]
scenario_row = st.tuples(
    st.sampled_from(["s1", "s2", "base"]),
    st.sampled_from(["Workloads", "Models", "GPUs", "Settings", "Nope"]),
    st.sampled_from([c.name for s in ("Workloads", "Models", "GPUs") for c in schema.columns(s)]
                    + [s.key for s in schema.SETTING_KEYS]),
    st.one_of(st.none(), st.sampled_from(NAMES)),
    st.sampled_from(["set", "add", "multiply", "div"]),
    st.one_of(wild, st.sampled_from(["mla", "gqa", 0, 0.0, 1e-9, 2, 0.5])),
)
# rows a planner user would write (some hostile: every prefill time 0, attention mla on a GQA model)
scenario_good = st.one_of(
    st.tuples(st.sampled_from(["s1", "s2"]), st.just("Workloads"),
              st.sampled_from(["hit_target", "isl", "osl", "t_attn0_ms", "t_ffn0_ms", "t_other0_ms", "t_decode_ms",
                               "batch", "demand_tpm", "alpha"]),
              st.none(), st.sampled_from(["set", "multiply"]), st.sampled_from([0, 0.0, 0.5, 1, 2, 1e-9])),
    st.tuples(st.sampled_from(["s1", "s2"]), st.just("Models"),
              st.sampled_from(["attention", "mla_kv_dim", "kv_bytes", "layers"]),
              st.sampled_from([None, "M-gqa", "M-mla"]), st.just("set"), st.sampled_from(["mla", "gqa", 1, 2, 512])),
    st.tuples(st.sampled_from(["s1", "s2"]), st.just("GPUs"), st.sampled_from(["hourly_cost", "hbm_gib", "pcie_gbps"]),
              st.sampled_from([None, "G5", "G4"]), st.sampled_from(["set", "multiply"]), st.sampled_from([0.5, 2, 1e-3])),
    st.tuples(st.sampled_from(["s1", "s2"]), st.just("Settings"),
              st.sampled_from(["target_utilization", "hit_step", "hours_per_month", "prefill_mfu"]),
              st.none(), st.just("set"), st.sampled_from([0.001, 0.5, 1, 0.0005, 730])),
)
demand_row = st.tuples(st.text("abcdefghij-_", min_size=1, max_size=6), st.sampled_from(["2027-Q1", "2027-Q2"]),
                       st.one_of(st.none(), st.floats(0, 1e9), wild))
measurement_row = st.tuples(st.sampled_from(NAMES), st.sampled_from(NAMES), st.sampled_from([1, 2, 8, 0]),
                            st.sampled_from([1024, 8192, 0]), st.one_of(st.floats(0, 1), wild),
                            st.one_of(st.floats(0.1, 1e4), wild))


def _cell(v):
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    return v


def _write(path: Path, rows, optional) -> None:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Models"
    for r in MODELS:
        ws.append(r)
    ws = wb.create_sheet("GPUs")
    for r in GPUS:
        ws.append(r)
    ws = wb.create_sheet("Workloads")
    ws.append(WL_HEAD)
    for i, rec in enumerate(rows):
        for j, name in enumerate(WL_HEAD):
            c = ws.cell(i + 2, j + 1, _cell(rec[name]))
            if isinstance(c.value, str) and c.value.startswith("="):
                c.data_type = "s"
    for sheet, recs in optional.items():
        ws = wb.create_sheet(sheet)
        ws.append([c.name for c in schema.columns(sheet)][:len(recs[0]) if recs else None])
        for r in recs:
            ws.append([_cell(v) for v in r])
            for c in ws[ws.max_row]:
                if isinstance(c.value, str) and c.value.startswith("="):
                    c.data_type = "s"
    wb.save(path)


@pytest.mark.slow
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(rows=st.one_of(st.lists(row(), min_size=1, max_size=3),
                      st.lists(st.fixed_dictionaries({n: good(n) for n in WL_HEAD} | {
                          "target_utilization": st.one_of(st.none(), st.floats(0.1, 1)),
                          "t_attn0_ms": st.floats(0.5, 500), "t_ffn0_ms": st.floats(0.5, 500)}),
                               min_size=1, max_size=3)),
       scen=st.lists(st.one_of(scenario_good, scenario_good, scenario_good, scenario_row), max_size=4), dem=st.lists(demand_row, max_size=3),
       meas=st.lists(measurement_row, max_size=3), which=st.sets(st.sampled_from(["Scenarios", "Demand",
                                                                                  "Measurements"])))
def test_validate_ok_implies_run_succeeds(rows, scen, dem, meas, which):
    optional = {k: v for k, v in (("Scenarios", scen), ("Demand", dem), ("Measurements", meas))
                if k in which and v}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        src = tmp / "in.xlsx"
        _write(src, rows, optional)
        v = run_cli("validate", src, cwd=tmp)
        assert v.returncode in (0, 2), v.stderr
        assert "internal error" not in v.stderr and "Traceback" not in v.stderr
        out = tmp / "out"
        r = run_cli("run", src, "-o", out / "plan.xlsx", cwd=tmp)
        if v.returncode == 0:
            event("valid")
            assert r.returncode == 0, r.stderr
            assert (out / "plan.xlsx").is_file() and (out / "plan-memo.md").is_file()
        else:
            event("refused")
            assert r.returncode == 2, r.stderr
            assert problem_lines(r.stderr) == problem_lines(v.stderr)
            assert not out.exists()
        assert "Warning" not in r.stderr + v.stderr
