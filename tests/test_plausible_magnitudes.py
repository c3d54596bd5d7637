"""Implausible magnitudes in Models and GPUs (issue 20, trust5): a value typed in another unit
(params_b in millions, hbm_gib in bytes or MiB, TFLOPS in GFLOPS or FLOPS, bandwidth in MB/s, bytes
in bits), two dimensions swapped, two columns out of their physical order. One table
(planner.core.schema.PLAUSIBLE and RELATIONS) drives them; each case here planned silently, or was
refused without the probable mistake, before it.

The bounds are a factor of 8 or more beyond the published extremes (the catalog's models from
their config.json files, its GPUs from their datasheets): the last tests type every catalog entry's
own values and expect no message at all.
"""

from __future__ import annotations

import json
from pathlib import Path

import openpyxl
import pytest

from conftest import run_cli
from planner.core import schema
from planner.core.errors import InputError
from planner.inputs.plausible import magnitude_warnings, relation_problems
from planner.plan.build import build_plan
from planner.workbook.input_sheets import write_input_workbook

MODEL = {"model": "Llama-3.1-70B", "kv_bytes": 2}
GPU = {"gpu": "H100 SXM", "hourly_cost": 2.5}
ROW = {"workload": "chat", "model": "Llama-3.1-70B", "gpu": "H100 SXM", "tp": 4, "isl": 1000, "osl": 200,
       "hit_target": 0.5, "t_attn0_ms": 10, "t_ffn0_ms": 90, "t_decode_ms": 1000, "demand_tpm": 1_000_000}


def _book(tmp_path, model=None, gpu=None) -> Path:
    path = tmp_path / "in.xlsx"
    write_input_workbook(path, [{**MODEL, **(model or {})}], [{**GPU, **(gpu or {})}], [dict(ROW)], {})
    return path


def _col(path, sheet, name) -> str:
    ws = openpyxl.load_workbook(path, read_only=True)[sheet]
    head = next(ws.iter_rows(min_row=1, max_row=1, values_only=True))
    i = next(k for k, h in enumerate(head) if str(h).split(" [")[0] == name)
    return openpyxl.utils.get_column_letter(i + 1)


def _said(path, sheet, name) -> list[str]:
    at = f"{sheet}!{_col(path, sheet, name)}2: "
    return [str(w)[len(at):] for w in build_plan(path).warnings if str(w).startswith(at)]


def _refused(path) -> list[str]:
    with pytest.raises(InputError) as e:
        build_plan(path)
    return [str(p) for p in e.value.problems]


# --------------------------------------------------------------------------- warned: implausible, planned as typed
@pytest.mark.parametrize("sheet, name, typed, said", [
    # a 70B typed in millions of parameters: 70,000 / 1,000 = 70 billion
    ("Models", "params_b", 70000, "params_b 70,000 billion is beyond any published model (the largest, Kimi-K2, "
                                  "has 1,026 billion parameters): typed in millions of parameters (70 billion"),
    # an 8B typed in millions (red team 6: 8,000 was under the old bound of 10,000 and only its HBM was warned)
    ("Models", "params_b", 8000, "params_b 8,000 billion is beyond any published model (the largest, Kimi-K2, "
                                 "has 1,026 billion parameters): typed in millions of parameters (8 billion"),
    # 0.00007 (70B typed in trillions: 0.07 would be, and 0.00007 x 1,000 = 0.07 billion is not)
    ("Models", "params_b", 0.007, "params_b 0.007 billion is below the smallest language model served (GPT-2 "
                                  "and SmolLM have 0.12-0.14 billion parameters): typed in trillions (7 billion)?"),
    # 8-bit FP8 typed as 8: 8 bits / 8 = 1 byte
    ("Models", "weight_bytes", 8, "weight_bytes 8 bytes is more than FP32's 4 bytes a weight (no model is served "
                                  "in FP64): typed in bits (1 bytes)?"),
    ("Models", "kv_bytes", 8, "kv_bytes 8 bytes is more than FP32's 4 bytes a cached element"),
    # Llama-3.1-70B's width 8,192 typed as its layers
    ("Models", "layers", 8192, "layers 8,192 is beyond any published model's depth (the deepest, Llama-3.1-405B, "
                               "has 126 layers): its hidden_size typed here"),
    ("Models", "hidden_size", 80, "hidden_size 80 is narrower than any served LLM"),
    ("Models", "head_dim", 8192, "head_dim 8,192 is beyond any published model's head dimension"),
    ("Models", "heads", 8192, "heads 8,192 is beyond any published model's attention heads"),
    ("Models", "intermediate_size", 2_867_200, "intermediate_size 2.8672e+06 is beyond any published model's FFN"),
    # nvidia-smi's 81,559 MiB typed as GiB: 79.65 GiB (the message the earlier landing gave, kept)
    ("GPUs", "hbm_gib", 81559, "hbm_gib 81,559 GiB is beyond any GPU's memory (the largest have 288 GB): typed in "
                               "MiB (79.65 GiB)?"),
    # 80 GB typed in TB: 0.08 x 1,024 = 81.92 GiB
    ("GPUs", "hbm_gib", 0.08, "hbm_gib 0.08 GiB is below any data-centre GPU's memory (the smallest, T4 and L4, "
                              "have 16-24 GB): typed in TiB or TB (81.92 GiB)?"),
    # an H100's 989 TFLOPS in GFLOPS: 989,000 / 1,000 = 989 (under the column's 1e6 maximum: planned before)
    ("GPUs", "bf16_tflops", 989000, "bf16_tflops 989,000 TFLOPS is beyond any GPU's dense BF16 peak (the fastest, "
                                    "GB200, has 2,500 TFLOPS): typed in GFLOPS (989 TFLOPS)"),
    ("GPUs", "bf16_tflops", 0.989, "bf16_tflops 0.989 TFLOPS is below any data-centre GPU's BF16 peak (the "
                                   "catalog's slowest, L4, has 121 TFLOPS): typed in PFLOPS (989 TFLOPS)?"),
    ("GPUs", "fp8_tflops", 989000, "fp8_tflops 989,000 TFLOPS is beyond any GPU's dense FP8 peak"),
    # PCIe Gen5 x16's 50 GB/s in MB/s: 50,000 / 1,000 = 50
    ("GPUs", "pcie_gbps", 50000, "pcie_gbps 50,000 GB/s is beyond any host link (the fastest, NVLink-C2C of "
                                 "GH200/GB200, carries 450 GB/s each way): typed in MB/s (50 GB/s) or Gb/s?"),
    ("GPUs", "pcie_gbps", 0.05, "pcie_gbps 0.05 GB/s is below a PCIe Gen3 x1 lane (about 1 GB/s): typed in TB/s "
                                "(50 GB/s)?"),
])
def test_a_magnitude_beyond_every_published_one_is_warned_at_its_cell(tmp_path, sheet, name, typed, said):
    typed_too = {"active_params_b": typed} if name == "params_b" else {}  # else the catalog's 70.55 active
    path = _book(tmp_path, **({"model": {name: typed, **typed_too}} if sheet == "Models" else {"gpu": {name: typed}}))
    got = [s for s in _said(path, sheet, name) if s.startswith(name)]
    assert any(s.startswith(said) for s in got), got


@pytest.mark.parametrize("model, at, said", [
    # layers and width swapped: 8,192 > 80
    ({"layers": 8192, "hidden_size": 80}, "layers", "layers 8,192 is more than hidden_size 80: every published "
                                                    "model is wider than it is deep"),
    # 70B typed in trillions: Llama-3.1-70B's 80 x 8,192^2 = 5.369e9 parameters in the q and o projections'
    # half alone, above 0.07e9
    ({"params_b": 0.07, "active_params_b": 0.07}, "params_b", "params_b 0.07 is below layers x hidden_size x hidden_size / 1e+09 = 5.369: "
                                     "the attention's query and output projections"),
])
def test_dimensions_out_of_their_usual_order_are_warned(tmp_path, model, at, said):
    path = _book(tmp_path, model=model)
    assert any(s.startswith(said) for s in _said(path, "Models", at)), _said(path, "Models", at)


def test_an_impossible_order_against_a_catalog_value_is_warned_not_refused(tmp_path):
    # a typed params_b below the catalog's active 70.55 (a 7B typed on a 70B's row): warned, saying whose
    path = _book(tmp_path, model={"params_b": 7})
    got = _said(path, "Models", "active_params_b")
    assert any(s.startswith("active_params_b 70.55 is more than params_b 7: the parameters active per token are "
                            "part of the model, so active_params_b is at most params_b: are the two swapped? "
                            "(active_params_b is the catalog's: type it too") for s in got), got
    # the catalog's heads (64) against a typed kv_heads: judged too, as a warning
    p1 = tmp_path / "k"
    p1.mkdir()
    assert any(s.startswith("kv_heads 128 is more than heads 64") and "(heads is the catalog's" in s
               for s in _said(_book(p1, model={"kv_heads": 128}), "Models", "kv_heads"))
    # a rounded params_b (70 for the catalog's 70.55 active of Llama-3.1-70B) is no mistake: within 5%
    p2 = tmp_path / "r"
    p2.mkdir()
    path = _book(p2, model={"params_b": 70})
    assert not [s for s in _said(path, "Models", "active_params_b") if "more than" in s]


def test_fp8_below_bf16_is_warned(tmp_path):
    path = _book(tmp_path, gpu={"bf16_tflops": 1979, "fp8_tflops": 989})
    got = _said(path, "GPUs", "bf16_tflops")
    assert any(s.startswith("bf16_tflops 1,979 is more than fp8_tflops 989: every GPU with FP8 runs it at twice")
               for s in got), got


# --------------------------------------------------------------------------- refused: physically impossible
@pytest.mark.parametrize("model, at, said", [
    # GQA: each KV head serves a group of query heads; 64 KV heads over Llama-3.1-70B's 8 query heads is none
    ({"heads": 8, "kv_heads": 64}, "kv_heads", "kv_heads 64 is more than heads 8: a KV head serves one or more "
                                               "query heads"),
    ({"experts": 8, "experts_per_token": 64}, "experts_per_token", "experts_per_token 64 is more than experts 8"),
    ({"params_b": 70.6, "active_params_b": 706}, "active_params_b", "active_params_b 706 is more than params_b 70.6"),
])
def test_an_impossible_order_is_refused_at_its_cell(tmp_path, model, at, said):
    path = _book(tmp_path, model=model)
    where = f"Models!{_col(path, 'Models', at)}2: "
    got = _refused(path)
    assert any(p.startswith(where + said) for p in got), got


@pytest.mark.parametrize("sheet, name, typed, hint", [
    # "16-bit" BF16 typed as 16 bytes: outside [0.125, 8], now with the probable mistake
    ("Models", "weight_bytes", 16, "weight_bytes 16 is outside [0.125, 8] (typed in bits? the column is in bytes"),
    ("Models", "kv_bytes", 16, "kv_bytes 16 is outside [0.125, 8] (typed in bits?"),
    # 80 GB in bytes: 8e10 > 1e6
    ("GPUs", "hbm_gib", 80e9, "hbm_gib 80000000000 is outside (0, 1e+06] (typed in bytes or KiB?"),
    # an H100's 989.4 TFLOPS in FLOPS
    ("GPUs", "bf16_tflops", 989.4e12, "bf16_tflops 989400000000000 is outside (0, 1e+06] (typed in GFLOPS or FLOPS?"),
    ("GPUs", "hbm_tbps", 3.35e12, "hbm_tbps 3350000000000 is outside (0, 10000] (typed in GB/s or bytes/s?"),
])
def test_a_refused_magnitude_names_the_probable_unit(tmp_path, sheet, name, typed, hint):
    path = _book(tmp_path, **({"model": {name: typed}} if sheet == "Models" else {"gpu": {name: typed}}))
    where = f"{sheet}!{_col(path, sheet, name)}2: "
    got = _refused(path)
    assert any(p.startswith(where + hint) for p in got), got


def test_the_command_line_refuses_an_impossible_row_with_exit_2(tmp_path):
    path = _book(tmp_path, model={"heads": 8, "kv_heads": 64})
    out = tmp_path / "out.xlsx"
    r = run_cli("run", path, "-o", out, "--no-memo", cwd=tmp_path)
    assert r.returncode == 2 and "kv_heads 64 is more than heads 8" in r.stderr and "Traceback" not in r.stderr
    assert not out.exists()


# --------------------------------------------------------------------------- published values: no message
class _T:
    def __init__(self, sheet, records):
        self.sheet, self.records, self.rows = sheet, records, list(range(2, 2 + len(records)))
        self.positions = {c.name: k for k, c in enumerate(schema.columns(sheet))}
        self.filled = [{} for _ in records]


_CATALOG = Path(schema.__file__).parents[1] / "catalog" / "data"


def test_every_catalog_model_and_gpu_typed_by_hand_plans_without_a_message():
    """The catalog's own values (config.json of each model, datasheets of each GPU), typed: the bounds
    are beyond all of them, so no warning and no refusal."""
    models = json.loads((_CATALOG / "models.json").read_text())["models"]
    gpus = json.loads((_CATALOG / "gpus.json").read_text())
    gpus = gpus[next(iter(gpus))] if isinstance(gpus, dict) else gpus
    names = {c.name for c in schema.columns("Models")}
    m = _T("Models", [{k: v for k, v in e.items() if k in names} | {"kv_bytes": 2, "weight_bytes": 2}
                      for e in models])
    g = _T("GPUs", [{k: v for k, v in e.items() if k in {c.name for c in schema.columns("GPUs")}} for e in gpus])
    assert len(m.records) >= 19 and len(g.records) >= 8
    tables = {"Models": m, "GPUs": g}
    assert magnitude_warnings(tables) == []
    assert relation_problems(tables, "error") == [] and relation_problems(tables, "warning") == []


def test_a_catalog_filled_value_is_not_judged():
    t = _T("Models", [{"model": "x", "layers": 8192, "hidden_size": 80}])
    assert magnitude_warnings({"Models": t})
    t.filled = [{"layers": "catalog", "hidden_size": "catalog"}]
    assert magnitude_warnings({"Models": t}) == [] and relation_problems({"Models": t}, "warning") == []


def test_every_bound_is_a_schema_column():
    for p in schema.PLAUSIBLE:
        col = schema.column(p.sheet, p.name)
        assert col.maximum is None or p.high is None or p.high < col.maximum, p  # warn before refusing
    for r in schema.RELATIONS:
        for n in r.small + r.large:
            schema.column(r.sheet, n)
