"""Issue 16, Measurements from load tests at any concurrency: the old ``batch`` header is read as
``concurrency`` (the shared contract of issues 16 and 18)."""

from __future__ import annotations

import openpyxl
import pytest

from planner.errors import InputError
from planner.inputs_sheets import write_input_workbook
from planner.reader import read_input

MODELS = [{"model": "Llama-3.1-8B", "layers": 32, "kv_heads": 8, "head_dim": 128, "kv_bytes": 2, "params_b": 8.03}]
GPUS = [{"gpu": "H100", "hbm_gib": 80, "pcie_gen": 5, "hbm_tbps": 3.35, "bf16_tflops": 989.4}]
WORKLOADS = [{"workload": "w", "model": "Llama-3.1-8B", "gpu": "H100", "tp": 1, "isl": 4096, "osl": 200,
              "hit_target": 0.5, "t_attn0_ms": 40, "t_ffn0_ms": 200}]
MEAS = [{"model": "Llama-3.1-8B", "gpu": "H100", "tp": 1, "isl": n, "hit": 0.0, "ttft_ms": t, "concurrency": c}
        for n, t, c in ((1024, 80.0, 8), (4096, 300.0, 16))]


def _rename_header(path, old: str, new: str, keep_old: bool = False) -> None:
    wb = openpyxl.load_workbook(path)
    ws = wb["Measurements"]
    for cell in ws[1]:
        if cell.value and str(cell.value).split(" [")[0] == old:
            if keep_old:
                ws.cell(1, ws.max_column + 1, new)
            else:
                cell.value = new
    wb.save(path)


def test_old_batch_header_is_read_as_concurrency(tmp_path):
    src = tmp_path / "in.xlsx"
    write_input_workbook(src, MODELS, GPUS, WORKLOADS, {}, optional={"Measurements": MEAS})
    _rename_header(src, "concurrency", "batch")
    t = read_input(src).optional["Measurements"]
    assert [r["concurrency"] for r in t.records] == [8, 16]
    assert "batch" not in t.records[0] and t.extras == []


def test_batch_and_concurrency_both_is_a_located_error(tmp_path):
    src = tmp_path / "in.xlsx"
    write_input_workbook(src, MODELS, GPUS, WORKLOADS, {}, optional={"Measurements": MEAS})
    _rename_header(src, "concurrency", "batch", keep_old=True)
    with pytest.raises(InputError) as e:
        read_input(src)
    assert "Measurements!" in str(e.value) and "appears twice" in str(e.value)
