"""A blank ``scheduler`` on a Measurements row at concurrency > 1 run over several waves is a choice
that changes the calibration (issue 16): read with prefill first, the rows' request-alone prefill
differs from the decode-first reading (tests/test_scheduler_calib.py: 282 against 402 ms on one
simulated test). So it is a filled cell, as a blank Workloads scheduler beside a fixed concurrency
is (commit dbe12c5): named in validate's and run's note, green italic with its comment in the
output's Measurements sheet, counted on the Run sheet. A row at concurrency 1, a row of one wave
(num_requests blank or <= concurrency: the same under either scheduler) and a typed row are not."""

from __future__ import annotations

import openpyxl

from conftest import header_index
from planner.workbook.writer import write_output
from test_load_calib import _plan


def _row(**kw):
    row = {"model": "Llama-3.1-8B", "gpu": "H100", "tp": 1, "isl": 4096, "hit": 0.0, "ttft_ms": 900.0,
           "concurrency": 8, "num_requests": 80, "ttft_stat": "mean", "osl": 100}
    row.update(kw)
    return row


def test_a_blank_scheduler_over_several_waves_is_a_filled_cell(tmp_path):
    meas = [_row(),                                               # row 2: blank, 10 waves -> filled
            _row(isl=8192, ttft_ms=1500.0, scheduler="decode_first"),   # row 3: typed
            _row(isl=16384, ttft_ms=2600.0, num_requests=8),      # row 4: one wave, either scheduler
            _row(isl=2048, ttft_ms=150.0, concurrency=1, num_requests=10)]   # row 5: alone
    plan = _plan(tmp_path, meas)
    out = tmp_path / "out.xlsx"
    write_output(plan, out)
    src = openpyxl.load_workbook(tmp_path / "in.xlsx")["Measurements"]
    col_in = header_index(src)["scheduler"] if "scheduler" in header_index(src) else None
    wb = openpyxl.load_workbook(out)
    ws = wb["Measurements"]
    col = header_index(ws)["scheduler"]
    cell = ws.cell(row=2, column=col)
    assert cell.value is None and cell.font.i
    assert "prefill_first" in cell.comment.text and "decode_first for a vLLM V1 server" in cell.comment.text
    for r in (3, 4, 5):
        assert ws.cell(row=r, column=col).comment is None, r
    # validate's / run's note names the input cell; the Run sheet counts it
    where = f"Measurements!{cell.coordinate}" if col_in is None else \
        f"Measurements!{src.cell(row=2, column=col_in).coordinate}"
    assert plan.filled_note is not None and f"scheduler 1 ({where})" in plan.filled_note
    run = {r[0]: r[1] for r in wb["Run"].iter_rows(values_only=True) if r and r[0]}
    assert "scheduler 1" in run["Measurements cells filled by the planner"]
    # the cells filled from load-test files are not miscounted: none here
    assert "Measurements cells filled from load-test files" not in run
