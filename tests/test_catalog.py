"""Model and GPU catalogs (docs/model.md, issue 10 part 1): name matching, filling blank Models/GPUs
cells (typed cells win), located errors with the closest names, provenance in the output,
``planner catalog``.

The tests hold for the full catalog too: expected numbers come from the models'
``config.json`` files and the vendors' datasheets (cited beside each), not from the data files.
"""

from __future__ import annotations

import math

import openpyxl
import pytest

from conftest import run_cli, same_value, sheet_values
from planner.catalog import lookup as catalog
from planner.inputs import catalog_fill as catalog2
from planner.core import schema
from planner.catalog.lookup import GPU, MODEL, Entry
from planner.cli.main import main
from planner.core.errors import InputError
from planner.plan.build import build_plan
from planner.inputs.reader import read_input
from planner.workbook.writer import write_output

WL_HEAD = ["workload", "model", "gpu", "tp", "isl", "osl", "hit_target", "t_attn0_ms", "t_ffn0_ms"]
CATALOG_FILL = "FFE2EFDA"  # the writer's "catalog" style: light green, italic
INPUT_FILL = "FFFFF2CC"    # typed inputs: yellow


def workbook(path, models: list[list], gpus: list[list], workloads: list[list],
             settings: list[list] | None = None) -> None:
    """A minimal input workbook: only the columns given (first list of each = header row); a
    Settings sheet only when ``settings`` rows are given."""
    wb = openpyxl.Workbook()
    sheets = (("Models", models), ("GPUs", gpus), ("Workloads", workloads))
    for title, rows in sheets + ((("Settings", settings),) if settings else ()):
        ws = wb.active if title == "Models" else wb.create_sheet(title)
        ws.title = title
        for r in rows:
            ws.append(r)
    wb.save(path)


def problems_of(path) -> list[str]:
    with pytest.raises(InputError) as err:
        build_plan(path)
    return [str(p) for p in err.value.problems]


# --------------------------------------------------------------------------- matching
# Llama-3.1-70B(-Instruct) config.json (huggingface.co/meta-llama/Llama-3.1-70B-Instruct):
# num_hidden_layers 80, num_key_value_heads 8, hidden_size 8192 / num_attention_heads 64 = 128
LLAMA_70B = {"layers": 80, "kv_heads": 8, "head_dim": 128, "heads": 64, "hidden_size": 8192,
             "intermediate_size": 28672, "attention": "gqa"}


@pytest.mark.parametrize("name", ["Llama-3.1-70B-Instruct", "meta-llama/Llama-3.1-70B-Instruct",
                                  "Llama-3.1-70B", "meta-llama/Llama-3.1-70B", "LLAMA-3.1-70B-INSTRUCT",
                                  " llama-3.1-70b-instruct ", "Llama 3.1 70B Instruct"])
def test_model_names_match_with_or_without_org_prefix_case_and_variant(name):
    e = catalog.find(name, MODEL)
    assert e is not None, name
    assert {k: e.values[k] for k in LLAMA_70B} == LLAMA_70B
    # base and instruct names find an entry of the same architecture (one entry, or one each)
    instruct = catalog.find("meta-llama/Llama-3.1-70B-Instruct", MODEL)
    assert {k: e.values[k] for k in LLAMA_70B} == {k: instruct.values[k] for k in LLAMA_70B}


@pytest.mark.parametrize("name", ["H100 SXM", "h100 sxm", "H100-SXM", "h100_sxm", " H100SXM ", "NVIDIA H100 SXM"])
def test_gpu_names_ignore_case_spaces_hyphens_underscores(name):
    e = catalog.find(name, GPU)
    assert e is not None and e.name == "H100 SXM", name


def test_unknown_names_are_not_matched_and_get_close_names():
    assert catalog.find("Llama-3-70B", MODEL) is None            # Llama 3 is not Llama 3.1
    assert catalog.find("Llama-3.1-7B", MODEL) is None           # no prefix matching: 7B is not 70B
    assert catalog.find("H100 PCIe 96GB nope", GPU) is None
    near = catalog.closest("Llama-3-70B", MODEL)
    assert near and all(catalog.find(n, MODEL) for n in near)
    assert any("70B" in n and n.startswith("Llama-3") for n in near), near
    assert "H100 SXM" in catalog.closest("H100-SMX", GPU)
    assert catalog.closest("zzzzzzzz", MODEL) == []


def _fake(kind: str, name: str, aliases=(), **values) -> Entry:
    fields = catalog.FIELDS[kind]
    return Entry(kind, name, {f: values.get(f) for f in fields}, f"source of {name}", tuple(aliases))


@pytest.fixture
def fake_catalog(monkeypatch):
    """A two-entry model catalog without aliases: the variant rules alone must find them."""
    fakes = {MODEL: (_fake(MODEL, "Mixtral-8x7B-Instruct-v0.1", layers=32),
                     _fake(MODEL, "Qwen3-8B-Base", layers=36)),
             GPU: (_fake(GPU, "MI300X", hbm_gib=191.5),)}
    catalog._index.cache_clear()
    monkeypatch.setattr(catalog, "entries", lambda kind: fakes[kind])
    yield fakes
    catalog._index.cache_clear()


def test_base_and_instruct_variants_found_without_aliases(fake_catalog):
    mixtral, qwen = fake_catalog[MODEL]
    for name in ("mistralai/Mixtral-8x7B-Instruct-v0.1", "Mixtral-8x7B-v0.1", "mixtral 8x7b instruct v0.1"):
        assert catalog.find(name, MODEL) is mixtral, name
    # a version is part of the name (issue 17): without it, or another one, it is not the same model
    for name in ("Mixtral-8x7B", "Mixtral-8x7B-Instruct-v0.2"):
        assert catalog.find(name, MODEL) is None, name
        assert catalog.version_hint(name) == ["Mixtral-8x7B-Instruct-v0.1"]
    for name in ("Qwen/Qwen3-8B", "Qwen3-8B-Instruct", "qwen3_8b_base"):
        assert catalog.find(name, MODEL) is qwen, name
    assert catalog.find("Qwen3-32B", MODEL) is None
    assert catalog.find("AMD Instinct MI300X", GPU) is fake_catalog[GPU][0]


def test_every_catalog_entry_passes_the_input_checks():
    """Every value the catalogs can fill is one the reader accepts when typed."""
    from planner.inputs.cells import parse_value

    for kind, sheet in ((MODEL, "Models"), (GPU, "GPUs")):
        assert catalog.entries(kind), kind
        for e in catalog.entries(kind):
            assert e.source.strip(), f"{e.name}: no source"
            for name, v in e.values.items():
                if v is None or (name == "pcie_gen" and v not in (4, 5)):
                    continue
                got, err = parse_value(schema.column(sheet, name), v, None)
                assert err is None, f"{kind} {e.name}: {err}"
            assert catalog.find(e.name, kind) is not None


# --------------------------------------------------------------------------- filling
@pytest.fixture(scope="module")
def named(tmp_path_factory):
    """Models and GPUs rows that give only names (or a catalog cell), planned and written once."""
    d = tmp_path_factory.mktemp("named")
    src = d / "named.xlsx"
    workbook(src,
             [["model", "catalog", "kv_bytes", "layers"],
              ["Llama-3.1-70B", None, None, None],                      # name only
              ["team-r1", "deepseek-ai/DeepSeek-V3", 1, None],          # team label + catalog cell, FP8 KV typed
              ["llama-short", "Llama-3.1-70B-Instruct", 2, 40]],        # typed layers wins
             [["gpu", "hourly_cost", "hbm_gib", "catalog"],
              ["h100-sxm", 2.5, None, None],
              ["big-h100", 2.5, 100, "H100 SXM"]],                      # typed hbm_gib wins
             [WL_HEAD,
              ["chat", "Llama-3.1-70B", "h100-sxm", 4, 8000, 500, 0.5, 120, 300],
              ["r1", "team-r1", "h100-sxm", 8, 8000, 500, 0.5, 120, 300],
              ["short", "llama-short", "big-h100", 4, 8000, 500, 0.5, 120, 300]],
             # hit_step 0.5: no test of this output reads the hit sweep (Sensitivity_Hit: 3 rows a
             # workload, not 21); the LibreOffice test reads Results, Resolved and Models
             [["key", "value"], ["hit_step", 0.5]])
    plan = build_plan(src)
    assert len(plan.sens.frames["Sensitivity_Hit"]) == 3 * 3  # hit 0, 0.5, 1 for each workload
    out = d / "named-plan.xlsx"
    write_output(plan, out)
    return src, plan, out


def test_name_only_row_plans_with_kv_bytes_from_config_json(named):
    _, plan, _ = named
    r = plan.results.set_index("workload")
    # hand calc: 2*80*ceil(8/4)*128*2 = 81,920 (K and V, 80 layers, 8 KV heads over tp 4, head_dim 128, BF16)
    assert r.at["chat", "kv_bytes_per_token_gpu"] == 81_920
    # hand calc: max_seq_len 8000+500 = 8,500 tokens * 81,920 B / 2^30 = 0.648498 GiB per request; batch blank:
    # the full-length requests that fit beside the weights (slofix item 3), floor(headroom / 0.648498 GiB)
    per = 8500 * 81920 / 2**30
    res = plan.resolved.set_index("workload")
    b = math.floor((res.at["chat", "hbm_gib"] - r.at["chat", "weights_gib_per_gpu"]) / per)
    assert res.at["chat", "batch"] == min(b, 256) == b
    assert math.isclose(r.at["chat", "kv_peak_gib"], b * per, rel_tol=1e-12)
    # hand calc (MLA, DeepSeek-V3 config.json): 61 layers * (kv_lora_rank 512 + qk_rope_head_dim 64) * 1 B = 35,136
    assert r.at["r1", "kv_bytes_per_token_gpu"] == 35_136
    # typed layers 40 wins over the catalog's 80: 2*40*2*128*2 = 40,960
    assert r.at["short", "kv_bytes_per_token_gpu"] == 40_960
    # weights: 70.55e9 params (config.json safetensors total 70,553,706,496) * 2 B / tp 4 / 2^30 = 32.85 GiB
    assert math.isclose(r.at["chat", "weights_gib_per_gpu"], 70.55e9 * 2 / 4 / 2**30, rel_tol=2e-3)
    res = plan.resolved.set_index("workload")
    # H100 SXM: nvidia-smi reports 81559 MiB = 79.65 GiB; PCIe Gen5 x16 host link: the planner's 50 GB/s
    assert math.isclose(res.at["chat", "hbm_gib"], 81559 / 1024, rel_tol=1e-3)
    assert res.at["chat", "pcie_gbps"] == 50
    assert res.at["short", "hbm_gib"] == 100          # typed hbm_gib wins


def test_typed_cells_win_and_provenance_names_only_filled_cells(named):
    _, plan, _ = named
    m = plan.input.models
    rows = {r["model"]: (r, f) for r, f in zip(m.records, m.filled)}
    rec, filled = rows["llama-short"]
    assert rec["layers"] == 40 and "layers" not in filled and "kv_bytes" not in filled
    assert rec["kv_heads"] == 8 and filled["kv_heads"].startswith("catalog: Llama-3.1-70B")
    rec, filled = rows["team-r1"]
    assert rec["attention"] == "mla" and rec["mla_kv_dim"] == 576 and rec["layers"] == 61
    assert rec["kv_bytes"] == 1 and "kv_bytes" not in filled  # typed FP8 KV cache
    assert "config.json" in filled["layers"] and "DeepSeek-V3" in filled["layers"]
    assert "model" not in filled and "catalog" not in filled
    g = plan.input.gpus
    grow = {r["gpu"]: (r, f) for r, f in zip(g.records, g.filled)}
    rec, filled = grow["big-h100"]
    assert rec["hbm_gib"] == 100 and "hbm_gib" not in filled and "hbm_tbps" in filled
    assert grow["h100-sxm"][0]["pcie_gen"] == 5 and "pcie_gbps" in grow["h100-sxm"][1]


def test_kv_bytes_blank_on_a_catalog_model_is_two_with_a_note(named):
    _, plan, _ = named
    rec, filled = plan.input.models.records[0], plan.input.models.filled[0]
    assert rec["kv_bytes"] == 2 and "BF16" in filled["kv_bytes"]
    notes = [n for n in plan.input.notes if "kv_bytes" in n]
    assert len(notes) == 1, plan.input.notes
    assert "Models!C2" in notes[0] and "Llama-3.1-70B" in notes[0] and "team-r1" not in notes[0]


def test_typed_pcie_gen_is_not_overridden_by_the_catalog_host_link(tmp_path):
    src = tmp_path / "gen4.xlsx"
    workbook(src, [["model"], ["Llama-3.1-70B"]], [["gpu", "pcie_gen"], ["H100 SXM", 4]],
             [WL_HEAD, ["w", "Llama-3.1-70B", "H100 SXM", 4, 1000, 10, 0.5, 10, 10]])
    p_in = read_input(src)
    assert p_in.gpus.records[0].get("pcie_gbps") is None and "pcie_gbps" not in p_in.gpus.filled[0]
    plan = build_plan(p_in)
    assert plan.resolved.at[0, "pcie_gbps"] == 25  # Gen4 default, as typed
    assert catalog2.filled_run_rows(p_in)["cells filled from the catalogs"].startswith(
        f"{sum(map(len, p_in.models.filled + p_in.gpus.filled))} (Models ")


def test_nothing_filled_says_nothing(tmp_path):
    src = tmp_path / "typed.xlsx"
    workbook(src, [["model", "layers", "kv_heads", "head_dim", "kv_bytes"], ["team-model", 32, 8, 128, 2]],
             [["gpu", "hbm_gib", "pcie_gen"], ["team-gpu", 80, 5]],
             [WL_HEAD, ["w", "team-model", "team-gpu", 4, 1000, 10, 0.5, 10, 10]])
    p_in = read_input(src)
    assert p_in.models.filled == [{}] and p_in.gpus.filled == [{}]
    assert catalog2.filled_run_rows(p_in) == {} and p_in.notes == []


# --------------------------------------------------------------------------- errors
def test_unknown_names_get_located_errors_with_closest_names(tmp_path):
    src = tmp_path / "unknown.xlsx"
    workbook(src,
             [["model", "layers", "catalog"],
              ["Llama-3-70B", None, None],
              ["mine", 32, "Lama-3.1-70B-Instrukt"],
              ["typed-but-short", 32, None]],
             [["gpu", "catalog"], ["Z100 SXM", None], ["team-gpu", "H1OO-SXM"]],
             [WL_HEAD, ["w", "Llama-3-70B", "Z100 SXM", 4, 1000, 10, 0.5, 10, 10]])
    probs = problems_of(src)
    by_place = {p.split(": ", 1)[0]: p.split(": ", 1)[1] for p in probs}
    msg = by_place["Models!A2"]
    assert msg.startswith("model 'Llama-3-70B' has no layers, kv_bytes, kv_heads and head_dim and is not in the "
                          "model catalog; closest: 'Llama-3"), msg
    msg = by_place["Models!C3"]
    assert msg.startswith("catalog 'Lama-3.1-70B-Instrukt' is not in the model catalog; closest: 'Llama-3.1-70B"), msg
    assert "Models!A3" not in by_place                     # said once, at the catalog cell
    assert "has no kv_bytes, kv_heads and head_dim" in by_place["Models!A4"]
    assert "closest: 'H100 SXM'" in by_place["GPUs!A2"] and "has no hbm_gib and pcie_gbps/pcie_gen" in by_place["GPUs!A2"]
    assert by_place["GPUs!B3"].startswith("catalog 'H1OO-SXM' is not in the GPU catalog; closest: 'H100 SXM'")
    assert len(probs) == 5, probs


def test_cli_unknown_model_exits_2_and_writes_nothing(tmp_path):
    src = tmp_path / "bad.xlsx"
    workbook(src, [["model"], ["Llama-3-70B"]], [["gpu"], ["H100 SXM"]],
             [WL_HEAD, ["w", "Llama-3-70B", "H100 SXM", 4, 1000, 10, 0.5, 10, 10]])
    out = tmp_path / "out.xlsx"
    r = run_cli("run", src, "-o", out, "--no-memo", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert "Models!A2: model 'Llama-3-70B' has no layers" in r.stderr and "closest: 'Llama-3" in r.stderr
    assert "Traceback" not in r.stderr and not out.exists()


# --------------------------------------------------------------------------- output
@pytest.fixture(scope="module")
def out_book(named):
    wb = openpyxl.load_workbook(named[2])
    yield wb
    wb.close()


def _col(ws, name: str) -> int:
    for cell in ws[1]:
        if cell.value is not None and str(cell.value).split(" [")[0] == name:
            return cell.column
    raise KeyError(name)


def test_output_marks_filled_cells_with_a_style_and_a_comment(named, out_book):
    p_in = named[1].input
    n_models = sum(len(f) for f in p_in.models.filled)
    n_filled = n_models + sum(len(f) for f in p_in.gpus.filled)
    ws = out_book["Models"]
    layers, model, kvb = _col(ws, "layers"), _col(ws, "model"), _col(ws, "kv_bytes")
    filled = ws.cell(2, layers)                           # Llama-3.1-70B: layers from the catalog
    assert filled.value == 80
    assert filled.fill.fgColor.rgb == CATALOG_FILL and filled.font.i
    assert "Llama-3.1-70B" in filled.comment.text and "config.json" in filled.comment.text
    typed = ws.cell(4, layers)                            # llama-short: typed 40
    assert typed.value == 40 and typed.fill.fgColor.rgb == INPUT_FILL and not typed.font.i
    assert typed.comment is None
    assert ws.cell(2, model).fill.fgColor.rgb == INPUT_FILL and ws.cell(2, model).comment is None
    assert ws.cell(2, kvb).value == 2 and "BF16" in ws.cell(2, kvb).comment.text
    assert ws.cell(3, kvb).value == 1 and ws.cell(3, kvb).comment is None
    g = out_book["GPUs"]
    hbm = g.cell(2, _col(g, "hbm_gib"))
    assert hbm.fill.fgColor.rgb == CATALOG_FILL and "H100 SXM" in hbm.comment.text
    assert g.cell(3, _col(g, "hbm_gib")).value == 100 and g.cell(3, _col(g, "hbm_gib")).comment is None
    run = {r[0]: r[1] for r in out_book["Run"].iter_rows(min_row=2, values_only=True) if r[0]}
    assert run["cells filled from the catalogs"].startswith(f"{n_filled} (Models {n_models}, GPUs ")


def test_styled_cells_are_exactly_the_filled_ones(named, out_book):
    _, plan, _ = named
    for sheet, table in (("Models", plan.input.models), ("GPUs", plan.input.gpus)):
        ws = out_book[sheet]
        heads = {c.column: str(c.value).split(" [")[0] for c in ws[1] if c.value}
        for i, f in enumerate(table.filled):
            styled = {heads[c.column] for c in ws[i + 2] if c.fill.fgColor.rgb == CATALOG_FILL}
            assert styled == set(f), (sheet, i)


def test_output_reads_back_as_an_input_with_the_filled_values_typed(named):
    _, plan, out = named
    again = read_input(out)
    for a, b in zip(again.models.records, plan.input.models.records):
        for c in schema.columns("Models"):
            assert same_value(b.get(c.name), a.get(c.name)), c.name
    again_plan = build_plan(again)
    for c in ("kv_bytes_per_token_gpu", "ttft_ms", "weights_gib_per_gpu"):
        assert (again_plan.results[c] == plan.results[c]).all(), c


@pytest.mark.libreoffice
def test_catalog_filled_output_recalculates_to_python(named, recalc):
    _, plan, out = named
    done = recalc(out)
    for sheet, frame in (("Results", plan.results), ("Resolved", plan.resolved)):
        rows = sheet_values(done, sheet)
        assert len(rows) == len(frame)
        bad = [f"{sheet} row {i + 2} {k}: python {v!r} sheet {rows[i].get(k)!r}"
               for i, rec in enumerate(frame.to_dict("records")) for k, v in rec.items()
               if k not in ("model_row", "gpu_row") and not same_value(v, rows[i].get(k))]
        assert not bad, "\n".join(bad[:20])
    assert sheet_values(done, "Models")[0]["layers"] == 80


# --------------------------------------------------------------------------- planner catalog
def test_planner_catalog_lists_both_catalogs(capsys):
    assert main(["catalog"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("Model catalog: ") and "\nGPU catalog: " in text
    for kind in (MODEL, GPU):
        for e in catalog.entries(kind):
            assert f"\n{e.name} " in text and e.source in text
    line = next(ln for ln in text.splitlines() if ln.startswith("Llama-3.1-70B-Instruct "))
    # hand calc: one GPU, BF16: 2*80*8*128*2 = 327,680 B per token
    assert line.split()[1:6] == ["gqa", "80", "64", "8", "128"] and line.split()[-1] == "327,680"
    assert main(["catalog", "--gpus"]) == 0
    gpus_only = capsys.readouterr().out
    assert gpus_only.startswith("GPU catalog: ") and "Model catalog" not in gpus_only
    assert main(["catalog", "meta-llama/llama-3.1-70b"]) == 0
    one = capsys.readouterr().out
    assert one.startswith("Model catalog: 1 entry") and "\nLlama-3.1-70B" in one and "GPU catalog" not in one


def test_planner_catalog_bad_uses_exit_2(tmp_path, capsys):
    assert main(["catalog", "zzzzzz"]) == 2
    assert "not in the model catalog or the GPU catalog" in capsys.readouterr().err
    assert main(["catalog", "--xlsx", str(tmp_path / "c.csv")]) == 2
    (tmp_path / "c.xlsx").write_bytes(b"keep")
    assert main(["catalog", "--xlsx", str(tmp_path / "c.xlsx")]) == 2
    assert (tmp_path / "c.xlsx").read_bytes() == b"keep"
    assert "--force" in capsys.readouterr().err


def test_planner_catalog_xlsx_is_an_input_workbook(tmp_path, capsys):
    path = tmp_path / "catalogs.xlsx"
    assert main(["catalog", "--xlsx", str(path)]) == 0
    wb = openpyxl.load_workbook(path)
    for sheet, kind in (("Models", MODEL), ("GPUs", GPU)):
        heads = [c.value for c in wb[sheet][1]]
        assert heads[:len(schema.columns(sheet))] == [c.header for c in schema.columns(sheet)]
        assert wb[sheet].max_row == len(catalog.entries(kind)) + 1
    # add one workload and plan the catalog workbook itself
    ws = wb["Workloads"]
    idx = {str(c.value).split(" [")[0]: c.column for c in ws[1]}
    for name, v in zip(WL_HEAD, ["w", "Llama-3.1-70B-Instruct", "H100 SXM", 4, 8000, 500, 0.5, 120, 300]):
        ws.cell(2, idx[name], v)
    wb.save(path)
    p_in = read_input(path)
    llama = next((r, f) for r, f in zip(p_in.models.records, p_in.models.filled)
                 if r["model"] == "Llama-3.1-70B-Instruct")
    assert {k: llama[0][k] for k in LLAMA_70B} == LLAMA_70B
    assert set(llama[1]) == {"kv_bytes"}                  # every dimension was typed in the workbook
    assert build_plan(p_in).results.at[0, "kv_bytes_per_token_gpu"] == 81_920  # 2*80*ceil(8/4)*128*2
