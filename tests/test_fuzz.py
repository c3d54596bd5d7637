"""Fuzzing: random valid and invalid cell values; the planner either plans with finite numbers
everywhere, or refuses with located messages. Never anything else.

CI runs a bounded number of examples; a longer run:

    PLANNER_FUZZ_EXAMPLES=2000 python -m pytest tests/test_fuzz.py -q
"""

from __future__ import annotations

import math
import os
import re
import tempfile
from pathlib import Path

import numpy as np
import openpyxl
import pandas as pd
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from planner.core import schema
from planner.core.errors import InputError
from planner.plan.build import build_plan
from planner.workbook.writer import write_output

EXAMPLES = int(os.environ.get("PLANNER_FUZZ_EXAMPLES", "40"))
PLACE = re.compile(r"^(Models|GPUs|Workloads|Settings)(![A-Z]{1,3}\d+(:[A-Z]{1,3}\d+)?| row \d+)?$")
BLANK_OK = {"instances_needed", "gpus_needed", "cost_per_mtok_delivered", "cost_per_mtok_physical",
            # the finance view: blank without demand or price
            "cost_per_hour", "tpm_capacity", "instances_baseline", "gpus_baseline", "cost_per_hour_baseline",
            # latency at load (issue 16): blank without demand, target, concurrency or output, or when the
            # prefills saturate the instance at the planned load
            "instances_throughput", "demand_rps", "demand_rps_open", "instances_ttft", "instances_tpot", "instances_hbm",
            "instances_concurrency", "concurrency_rps", "prefill_wait_ms", "ttft_load_ms", "prefill_wait_p90_ms",
            "ttft_load_p90_ms", "tpot_load_ms", "gpus_throughput", "gpus_for_latency", "cost_per_hour_for_latency",
            # steps of the TTFT count: blank without a TTFT target (ttft_log_x: without a quantile one), or
            # without a fixed concurrency (ttft_burst_slo_ms)
            "ttft_log_x", "ttft_rho_max", "ttft_burst_slo_ms",
            # the steady decode-first TTFT (issue 16): blank unless the row's scheduler is decode_first at a
            # fixed concurrency; the TTFT the target is held to at that concurrency is one of it or the burst's
            "ttft_steady_ms", "ttft_steady_p90_ms", "ttft_steady_slo_ms", "ttft_at_c_slo_ms"}
# the sweep terms (planner/equations/terms.py), blank where their guard fails: the loop's without a fixed
# concurrency (its group size also without a budget, or one below the others), the Lambert W's without a
# quantile TTFT target (where ttft_log_x is blank)
TERMS_BLANK = {"loop_others", "loop_pass_tokens", "loop_variable_ms", "loop_prompt_steps", "loop_step_ms",
               "loop_steady_decodes", "loop_group_size", "log_softplus", "lambert_w_start", "lambert_w_step"}
BLANK_OK |= TERMS_BLANK
# a target no instance count meets is inf ("unreachable" in the workbook); the sweep's load columns likewise
UNREACHABLE_OK = {"instances_ttft", "instances_tpot", "instances_hbm"}
# the baseline's sizing chain (issue 16: instances_baseline through the same steps at hit_baseline) is
# blank or unreachable where its target-side step is
BLANK_OK |= {f"{c}_baseline" for c in BLANK_OK}
UNREACHABLE_OK |= {f"{c}_baseline" for c in UNREACHABLE_OK}
SWEEP_LOAD = BLANK_OK & {"instances_throughput", "instances_ttft", "instances_tpot", "instances_hbm",
                         "instances_concurrency", "concurrency_rps", "prefill_wait_ms", "ttft_load_ms",
                         "prefill_wait_p90_ms", "ttft_load_p90_ms", "tpot_load_ms", "ttft_log_x", "ttft_rho_max",
                         "ttft_burst_slo_ms", "ttft_steady_ms", "ttft_steady_p90_ms", "ttft_steady_slo_ms",
                         "ttft_at_c_slo_ms"} | {"instances_needed", "load_rps",
                                                 # the tornado's TTFT at the planned load: blank without demand
                                                 "ttft_load_base", "ttft_load_low", "ttft_load_high"} | TERMS_BLANK

MODELS = [["model", "layers", "kv_heads", "head_dim", "kv_bytes", "attention", "mla_kv_dim", "params_b"],
          ["M-gqa", 80, 8, 128, 2, "gqa", None, 70],
          ["M-mla", 61, None, None, 2, "mla", 576, 671]]
GPUS = [["gpu", "hbm_gib", "pcie_gbps", "pcie_gen", "hourly_cost"],
        ["G5", 80, None, 5, 2.5], ["G4", 48, 20, 4, None]]
WL_HEAD = [c.name for c in schema.columns("Workloads")]

wild = st.one_of(
    st.none(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(-10, 10),
    st.integers(-10, 10**7),
    st.sampled_from(["", " ", "abc", "85%", "1,024", "2,5", "#DIV/0!", "#N/A", "=1+1", "1e400", "-0", "0.5",
                     "const", "linear", "quadratic", "cubic", "M-gqa", " m-MLA ", "G5", "nope", True, False]),
)


def good(name: str):
    """A valid value for a Workloads column."""
    c = schema.column("Workloads", name)
    if name == "workload":
        return st.text("abcdefghij-_<>&=\"' ", min_size=1, max_size=12).filter(lambda s: s.strip())
    if name == "model":
        return st.sampled_from(["M-gqa", "M-mla", " m-gqa "])
    if name == "gpu":
        return st.sampled_from(["G5", "G4"])
    if c.kind == schema.CHOICE:
        return st.sampled_from(list(c.choices) + [None])
    lo = c.minimum if c.minimum is not None else 0.0
    hi = min(c.maximum if c.maximum is not None else 1e9, 1e9)
    if c.kind == schema.INT:
        return st.integers(int(max(lo, 1)), int(min(hi, 64)))
    if c.kind == schema.FRACTION:
        return st.one_of(st.floats(0, 1), st.sampled_from(["0%", "50%", "100%"]))
    v = st.floats(lo if not c.min_open else max(lo, 1e-3), hi)
    return v if c.required is True else st.one_of(st.none(), v)


@st.composite
def row(draw):
    """A valid row, and in about half of the rows a few cells replaced by wild values."""
    rec = draw(st.fixed_dictionaries({name: good(name) for name in WL_HEAD}))
    if draw(st.booleans()):
        for name in draw(st.lists(st.sampled_from(WL_HEAD), min_size=1, max_size=3)):
            rec[name] = draw(wild)
    return rec


@pytest.mark.slow
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(rows=st.lists(row(), min_size=1, max_size=4))
# found by this test on 2026-12-01 (the steady decode-first columns are blank under prefill_first)
@example(rows=[{**{name: None for name in WL_HEAD}, "workload": "<", "model": "M-gqa", "gpu": "G5", "tp": 1,
                "isl": 1, "osl": 1, "batch": 1, "max_seq_len": 1, "hit_measured": 0.0, "hit_target": 0.0,
                "t_attn0_ms": 0.0, "t_ffn0_ms": 1.0, "other_scaling": "const", "t_decode_ms": 0.0,
                "alpha": 0.0, "target_utilization": 1.0, "concurrency": 1, "slo_percentile": "mean",
                "trace_block_size": 1, "hit_baseline": 0.0, "demand_growth": 0.0, "t_decode_batch": 1,
                "max_num_batched_tokens": 1, "scheduler": "prefill_first"}])
def test_random_workbooks_plan_or_refuse_with_places(rows):
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "fuzz.xlsx"
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
                v = rec[name]
                if isinstance(v, float) and not math.isfinite(v):
                    v = str(v)  # a cell cannot hold inf/nan: it arrives as text
                cell = ws.cell(i + 2, j + 1, v)
                if isinstance(v, str) and v.startswith("="):
                    cell.data_type = "s" if i % 2 else "f"  # text, or a never-calculated formula
        wb.save(src)
        before = src.read_bytes()
        try:
            plan = build_plan(src)
        except InputError as err:
            assert err.problems
            for p in err.problems:
                assert PLACE.match(p.place), p
                assert p.message and "Traceback" not in p.message
            assert src.read_bytes() == before
            event("refused")
            return
        event("planned")
        # planned: every number finite, blanks only where the contract allows them
        for c in plan.results.columns:
            col = plan.results[c]
            if not pd.api.types.is_numeric_dtype(col):
                continue
            vals = col.to_numpy(dtype=float)
            if c not in UNREACHABLE_OK:
                assert not np.isinf(vals).any(), c
            if c not in BLANK_OK:
                assert not np.isnan(vals).any(), c
        for frame in [*plan.sens.frames.values(), plan.sens.tornado]:
            num = frame.select_dtypes("number").drop(columns=["upper", *SWEEP_LOAD], errors="ignore")
            arr = num.to_numpy(dtype=float)
            assert np.isfinite(arr).all(), list(num.columns[~np.isfinite(arr).all(axis=0)])
        out = Path(tmp) / "plan.xlsx"
        write_output(plan, out)
        assert openpyxl.load_workbook(out, read_only=True)["Results"].max_row == len(plan.results) + 1
        assert src.read_bytes() == before
