"""The catalog data files (planner/catalog/data/models.json, gpus.json): shape, sources, hand-checked numbers.

Nothing here imports planner.equations.kvhit: every expected number is a hand calculation from the
published config.json / datasheet figure, written out beside it, or a published figure typed in
from the model card / datasheet the entry's ``source`` cites.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from importlib.metadata import PackageNotFoundError, version
from importlib.resources import files
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

MODEL_FIELDS = {
    "name", "org", "aliases", "attention", "layers", "heads", "kv_heads", "head_dim", "hidden_size",
    "intermediate_size", "mla_kv_dim", "params_b", "active_params_b", "experts", "experts_per_token",
    "vocab_size", "extra", "source",
}
GPU_FIELDS = {
    "name", "vendor", "aliases", "hbm_gib", "hbm_tbps", "bf16_tflops", "fp8_tflops", "host_link", "pcie_gen",
    "pcie_gbps", "source",
}
MLA_EXTRA = {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"}
MOE_EXTRA = {"moe_intermediate_size", "shared_experts", "first_dense_layers"}


def _load(name: str) -> dict:
    # read through the installed package, as the catalog code will
    return json.loads(files("planner.catalog").joinpath("data", name).read_text(encoding="utf-8"))


MODELS = _load("models.json")["models"]
GPUS = _load("gpus.json")["gpus"]


def norm(name: str) -> str:
    """docs/model.md matching key: case, spaces, hyphens and underscores ignored."""
    return re.sub(r"[\s\-_]", "", name).casefold()


def find(entries: list[dict], name: str) -> dict:
    hits = [e for e in entries if norm(name) in {norm(e["name"]), *map(norm, e["aliases"])}]
    assert len(hits) == 1, f"{name!r}: {len(hits)} catalog entries"
    return hits[0]


def kv_bytes(m: dict, tp: int, b_elem: float = 2) -> float:
    """KV bytes per token per GPU, docs/model.md, written here from the formula (not imported)."""
    if m["attention"] == "mla":
        return m["layers"] * m["mla_kv_dim"] * b_elem
    return 2 * m["layers"] * math.ceil(m["kv_heads"] / tp) * m["head_dim"] * b_elem


# ------------------------------------------------------------------------------- shape


def test_files_parse_with_one_top_level_list():
    assert set(_load("models.json")) == {"models"} and set(_load("gpus.json")) == {"gpus"}
    assert len(MODELS) >= 19 and len(GPUS) >= 12


@pytest.mark.parametrize("m", MODELS, ids=lambda m: m["name"])
def test_model_entry_has_every_field_and_nulls_only_where_meaningless(m):
    assert set(m) == MODEL_FIELDS
    for key in ("name", "org", "source"):
        assert isinstance(m[key], str) and m[key].strip()
    assert isinstance(m["aliases"], list) and all(isinstance(a, str) and a.strip() for a in m["aliases"])
    assert isinstance(m["extra"], dict)
    for key in ("layers", "heads", "kv_heads", "head_dim", "hidden_size", "intermediate_size", "vocab_size"):
        assert isinstance(m[key], int) and m[key] > 0, key
    assert m["params_b"] > 0 and 0 < m["active_params_b"] <= m["params_b"]
    assert m["attention"] in ("gqa", "mla")
    if m["attention"] == "mla":
        assert MLA_EXTRA <= set(m["extra"])
        # mla_kv_dim = kv_lora_rank + qk_rope_head_dim
        assert m["mla_kv_dim"] == m["extra"]["kv_lora_rank"] + m["extra"]["qk_rope_head_dim"]
    else:
        assert m["mla_kv_dim"] is None and not MLA_EXTRA & set(m["extra"])
        assert m["heads"] % m["kv_heads"] == 0  # GQA groups are whole
    if m["experts"] is None:  # dense
        assert m["experts_per_token"] is None and m["active_params_b"] == m["params_b"]
        assert not MOE_EXTRA & set(m["extra"])
    else:
        assert isinstance(m["experts"], int) and isinstance(m["experts_per_token"], int)
        assert 1 <= m["experts_per_token"] < m["experts"]
        assert m["active_params_b"] < m["params_b"]
        assert MOE_EXTRA <= set(m["extra"])
        # the Models column intermediate_size is "per expert for MoE"
        assert m["intermediate_size"] == m["extra"]["moe_intermediate_size"]
    # the source cites the numbers it gives
    assert str(m["layers"]) in m["source"] and str(m["hidden_size"]) in m["source"]


@pytest.mark.parametrize("g", GPUS, ids=lambda g: g["name"])
def test_gpu_entry_has_every_field(g):
    assert set(g) == GPU_FIELDS
    assert g["vendor"] in ("NVIDIA", "AMD")
    assert isinstance(g["aliases"], list) and all(isinstance(a, str) and a.strip() for a in g["aliases"])
    assert isinstance(g["source"], str) and len(g["source"]) > 100
    for key in ("hbm_gib", "hbm_tbps", "bf16_tflops", "pcie_gbps"):
        assert isinstance(g[key], (int, float)) and g[key] > 0, key
    assert 0.1 < g["hbm_tbps"] < 20  # TB/s, not GB/s
    if g["host_link"] == "NVLink-C2C":  # Grace parts: no PCIe generation
        assert g["pcie_gen"] is None
    else:
        # docs/model.md defaults when only the generation is known: Gen4 x16 25 GB/s, Gen5 x16 50 GB/s
        assert g["host_link"] == f"PCIe Gen{g['pcie_gen']} x16"
        assert g["pcie_gbps"] == {4: 25, 5: 50}[g["pcie_gen"]]


@pytest.mark.parametrize("entries", [MODELS, GPUS], ids=["models", "gpus"])
def test_names_and_aliases_unique_across_entries(entries):
    seen: dict[str, str] = {}
    for e in entries:
        keys = [norm(e["name"]), *map(norm, e["aliases"])]
        assert len(keys) == len(set(keys)), f"{e['name']}: an alias repeats the name or another alias"
        for k in keys:
            assert k not in seen, f"{k!r} is in both {seen[k]!r} and {e['name']!r}"
            seen[k] = e["name"]


# ------------------------------------------------------------------------------- coverage (docs/model.md)


@pytest.mark.parametrize("name", [
    "Llama-3.1-8B", "Llama-3.1-70B", "Llama-3.1-405B", "Llama-3.1-70B-Instruct",
    "Llama-3.3-70B-Instruct", "Qwen2.5-7B", "Qwen2.5-14B", "Qwen2.5-32B", "Qwen2.5-72B-Instruct", "QwQ-32B",
    "Qwen3-8B", "Qwen3-32B", "Qwen3-30B-A3B", "Qwen3-235B-A22B", "DeepSeek-V3", "DeepSeek-R1", "Kimi-K2",
    "Mistral-7B-Instruct-v0.3", "Mixtral-8x7B", "Mixtral-8x22B",
])
def test_required_models_present(name):
    find(MODELS, name)


def test_mistral_v01_left_out_because_of_its_sliding_window():
    # v0.1: 4096-token sliding window on every layer, which the KV model cannot represent
    keys = {norm(k) for m in MODELS for k in (m["name"], *m["aliases"])}
    assert norm("Mistral-7B-v0.1") not in keys and norm("Mistral-7B") not in keys
    v03 = find(MODELS, "Mistral-7B-v0.3")
    assert v03["extra"]["sliding_window"] is None and "v0.1" in v03["source"]


@pytest.mark.parametrize("name", ["H100 SXM", "H100 PCIe", "H200", "H20", "B200", "GB200", "A100 40GB",
                                  "A100 80GB", "L40S", "L4", "MI300X", "MI325X"])
def test_required_gpus_present_under_the_vendor_name(name):
    assert find(GPUS, name)["name"] == name


# ------------------------------------------------------------------------------- KV bytes (docs/model.md)


@pytest.mark.parametrize("name, tp, b_elem, expected", [
    # hand calc: 2*80*8*128*2 = 327,680 (docs/model.md)
    ("Llama-3.1-70B", 1, 2, 327_680),
    ("Qwen2.5-72B", 1, 2, 327_680),
    # hand calc: 2*80*ceil(8/4)*128*2 = 2*80*2*128*2 = 81,920
    ("Llama-3.1-70B", 4, 2, 81_920),
    ("Qwen2.5-72B", 4, 2, 81_920),
    # hand calc: tp 8 -> 1 KV head per GPU: 2*80*1*128*2 = 40,960; tp 16 replicates: still 40,960
    ("Llama-3.3-70B-Instruct", 8, 2, 40_960),
    ("Qwen2.5-72B", 16, 2, 40_960),
    # FP8 at tp 8: 2*80*1*128*1 = 20,480
    ("Qwen2.5-72B", 8, 1, 20_480),
    # hand calc: 2*32*8*128*2 = 131,072
    ("Llama-3.1-8B", 1, 2, 131_072),
    # MLA: 61*(512+64)*2 = 61*576*2 = 70,272 at any tp
    ("DeepSeek-V3", 1, 2, 70_272),
    ("DeepSeek-V3", 8, 2, 70_272),
    ("DeepSeek-R1", 16, 2, 70_272),
    # Kimi-K2 config.json: 61 layers, kv_lora_rank 512 + qk_rope_head_dim 64: 61*576*2 = 70,272
    ("Kimi-K2", 8, 2, 70_272),
    # Qwen3-235B-A22B config.json: 94 layers, 4 KV heads, head_dim 128: 2*94*4*128*2 = 192,512; tp 8: 2*94*1*128*2 = 48,128
    ("Qwen3-235B-A22B", 1, 2, 192_512),
    ("Qwen3-235B-A22B", 8, 2, 48_128),
    # Qwen2.5-7B config.json: 28 layers, 4 KV heads, 3584/28 = 128: 2*28*4*128*2 = 57,344
    ("Qwen2.5-7B", 1, 2, 57_344),
    # Qwen3-32B: 64 layers, 8 KV heads, explicit head_dim 128 (not 5120/64 = 80): 2*64*8*128*2 = 262,144
    ("Qwen3-32B", 1, 2, 262_144),
    # Mixtral-8x7B: 32 layers, 8 KV heads, 4096/32 = 128: 2*32*8*128*2 = 131,072
    ("Mixtral-8x7B", 2, 2, 65_536),
])
def test_kv_bytes_per_token_match_the_hand_calculation(name, tp, b_elem, expected):
    assert kv_bytes(find(MODELS, name), tp, b_elem) == expected


def test_qwen3_32b_head_dim_is_the_explicit_config_value_not_hidden_over_heads():
    m = find(MODELS, "Qwen3-32B")
    assert m["hidden_size"] // m["heads"] == 80 and m["head_dim"] == 128


# ------------------------------------------------------------------------------- parameters


def test_llama_8b_parameter_count_by_hand():
    # hand calc from config.json (vocab 128256, hidden 4096, 32 layers, 32 heads x 128, 8 KV heads,
    # intermediate 14336, untied LM head): embed + lm_head = 2*128256*4096 = 1,050,673,152;
    # per layer q,o 2*4096*4096 = 33,554,432; k,v 2*4096*1024 = 8,388,608; MLP 3*4096*14336 = 176,160,768;
    # norms 2*4096 = 8,192 -> 218,112,000; x32 = 6,979,584,000; + final norm 4096 -> 8,030,261,248
    assert find(MODELS, "Llama-3.1-8B")["params_b"] == round(8_030_261_248 / 1e9, 2) == 8.03


@pytest.mark.parametrize("name, total, active, rel", [
    # model cards (the entry's source cites each): total / active billions
    ("Llama-3.1-8B", 8, None, 0.01), ("Llama-3.1-70B", 70, None, 0.01), ("Llama-3.1-405B", 405, None, 0.01),
    ("Qwen2.5-7B", 7.61, None, 0.01), ("Qwen2.5-14B", 14.7, None, 0.01), ("Qwen2.5-32B", 32.5, None, 0.01),
    ("Qwen2.5-72B", 72.7, None, 0.01), ("QwQ-32B", 32.5, None, 0.01),
    ("Qwen3-8B", 8.2, None, 0.01), ("Qwen3-32B", 32.8, None, 0.01),
    ("Qwen3-30B-A3B", 30.5, 3.3, 0.02), ("Qwen3-235B-A22B", 235, 22, 0.02),
    ("DeepSeek-V3", 671, 37, 0.02), ("DeepSeek-R1", 671, 37, 0.02),
    ("Kimi-K2", 1000, 32, 0.03),  # card: "1T total, 32B activated" (rounded)
])
def test_parameter_counts_agree_with_the_model_cards(name, total, active, rel):
    m = find(MODELS, name)
    assert m["params_b"] == pytest.approx(total, rel=rel)
    assert m["active_params_b"] == pytest.approx(active if active is not None else total, rel=rel)


# ------------------------------------------------------------------------------- GPUs


# marketing memory per datasheet/vendor page, GB; the device reports at most this (often "GB" = GiB)
MARKETING_GB = {"H100 SXM": 80, "H100 PCIe": 80, "H200": 141, "H20": 96, "B200": 180, "GB200": 186,
                "A100 40GB": 40, "A100 80GB": 80, "L40S": 48, "L4": 24, "MI300X": 192, "MI325X": 256}


@pytest.mark.parametrize("name, gb", MARKETING_GB.items())
def test_hbm_is_the_device_figure_not_above_the_marketing_one(name, gb):
    g = find(GPUS, name)
    # equality happens: A100 80GB reports exactly 81920 MiB = 80.00 GiB; MI325X is AMD's GiB figure
    assert 0.9 * gb < g["hbm_gib"] <= gb


@pytest.mark.parametrize("name, mib", [("H100 SXM", 81559), ("H200", 143771), ("B200", 183359), ("GB200", 189471),
                                       ("H20", 97871), ("L40S", 46068), ("L4", 23034), ("A100 40GB", 40960)])
def test_hbm_gib_is_the_nvidia_smi_mib_over_1024(name, mib):
    g = find(GPUS, name)
    assert g["hbm_gib"] == round(mib / 1024, 2) and str(mib) in g["source"]


def test_mi300x_hbm_is_the_rocm_smi_bytes_over_2_30():
    assert find(GPUS, "MI300X")["hbm_gib"] == round(205_822_885_888 / 2**30, 2) == 191.69


@pytest.mark.parametrize("g", GPUS, ids=lambda g: g["name"])
def test_dense_fp8_is_twice_dense_bf16_where_fp8_exists(g):
    if g["fp8_tflops"] is None:
        assert g["name"].startswith("A100")  # Ampere has no FP8 tensor cores
    else:
        assert g["fp8_tflops"] / g["bf16_tflops"] == pytest.approx(2, rel=0.025)


def test_a100_and_l4_as_their_datasheets_say():
    # A100 datasheet: BF16 312 dense (624 with sparsity), no FP8
    for name in ("A100 40GB", "A100 80GB"):
        g = find(GPUS, name)
        assert g["bf16_tflops"] == 312 and g["fp8_tflops"] is None
    # L4 datasheet prints only the sparsity figures, BF16 242 and FP8 485: dense = half
    l4 = find(GPUS, "L4")
    assert l4["bf16_tflops"] == 242 / 2 and l4["fp8_tflops"] == 485 / 2


def test_dense_not_sparse_peaks():
    # the sparsity figures of the H100 SXM datasheet are 1978.9 (BF16) and 3957.8 (FP8)
    h100 = find(GPUS, "H100 SXM")
    assert (h100["bf16_tflops"], h100["fp8_tflops"]) == (989.4, 1978.9)


def test_grace_part_uses_nvlink_c2c():
    gb = find(GPUS, "GB200")
    assert gb["host_link"] == "NVLink-C2C" and gb["pcie_gen"] is None
    # computed in the source: GH200 measured 346 GB/s host->device, two GPUs share one Grace
    assert gb["pcie_gbps"] == 346 / 2


# ------------------------------------------------------------------------------- packaging


def test_pyproject_ships_the_data_files():
    # the data folder is a package of its own (setuptools >= 77 warns of a folder Python can import that the
    # packages list leaves out), and its JSON files are its package data
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "planner.catalog.data" in cfg["tool"]["setuptools"]["packages"]
    assert "*.json" in cfg["tool"]["setuptools"]["package-data"]["planner.catalog.data"]


def _setuptools_major() -> int:
    try:
        return int(version("setuptools").split(".")[0])
    except PackageNotFoundError:
        return 0


def test_wheel_carries_the_data_files(tmp_path):
    """A non-editable build (the wheel pip installs) contains both JSON files."""
    if shutil.which("git") is None:
        pytest.fail("git needed to copy the tracked tree")
    src = tmp_path / "src"
    # build from a clean copy of the tracked files (no build/ or egg-info left behind in the worktree)
    archive = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True).stdout
    for rel in filter(None, archive.decode().split("\0")):
        if (ROOT / rel).is_file():
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, src / rel)
    # copy the working-tree versions of the files under test (they may be uncommitted while editing)
    for rel in ("pyproject.toml", "planner/catalog/data/models.json", "planner/catalog/data/gpus.json"):
        shutil.copy2(ROOT / rel, src / rel)
    out = tmp_path / "wheel"
    # reuse this environment's setuptools when it meets the build requirement (seconds); else let pip
    # build in an isolated environment, as a plain `pip install .` does (slower)
    no_iso = ["--no-build-isolation"] if _setuptools_major() >= 77 else []
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", *no_iso,
                    "-w", str(out), str(src)], check=True, capture_output=True)
    (wheel,) = out.glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"planner/catalog/data/models.json", "planner/catalog/data/gpus.json"} <= names
    # the test tools stay out of the wheel (issue 21: tests/libreoffice.py once shipped in it)
    assert [n for n in names if n.startswith("tests/") or n.endswith("libreoffice.py")] == []
    assert all(n.startswith(("planner/", "kv_planner-")) for n in names), sorted(names)[:5]
