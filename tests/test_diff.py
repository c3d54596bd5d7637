"""planner diff (docs/model.md): input changes, workload changes and the cost bridge.

OLD/NEW pairs are built in tmp_path from records with known edits; the expected changes
are the edits themselves, and the expected costs are hand-calculated.
"""

from __future__ import annotations

import copy
import email
import functools
import math
import random
from pathlib import Path

import openpyxl
import pytest

from conftest import run_planner, same_value, sheet_values
from planner.diff.bridge import STEPS, diff_plans, exact_quantum, fleet_cost_per_month, snap
from planner.diff.workbook import write_diff
from planner.plan.build import build_plan
from planner.inputs.reader import read_input
from planner.workbook.input_sheets import write_input_workbook
from planner.workbook.writer import write_output

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "workbooks" / "example.xlsx"


# --------------------------------------------------------------------------- helpers
def write(path: Path, models, gpus, workloads, settings, optional=None) -> Path:
    write_input_workbook(path, models, gpus, workloads, settings, optional=optional)
    return path


@functools.cache
def _example_input():
    """read_input(EXAMPLE) once for this module (an unchanged file; 14 callers): read only, copied below."""
    return read_input(EXAMPLE)


def example_records():
    """Fresh copies of the example's records and settings, which each caller may change."""
    p = _example_input()
    return (copy.deepcopy(p.models.records), copy.deepcopy(p.gpus.records), copy.deepcopy(p.workloads.records),
            dict(p.settings))


def bridge_map(d) -> dict[str, float]:
    return dict(d.bridge)


def assert_exact_sum(bridge: list[tuple[str, float]]) -> None:
    old, new = bridge[0][1], bridge[-1][1]
    steps = [v for _, v in bridge[1:-1]]
    total = old
    for v in steps:
        total += v
    assert total == new                      # old + Σ steps == new, left to right
    assert sum(steps) == new - old           # Σ steps == new − old
    assert math.fsum(steps) == new - old
    assert [s for s, _ in bridge] == ["old", *STEPS, "new"]


# --------------------------------------------------------------------------- a tiny pair by hand
# One model: 32 layers, 8 KV heads, head_dim 128, BF16: S = 2·32·8·128·2 = 131,072 B per token at tp 1.
# Every workload has t_attn0 0, t_ffn0 100 ms, alpha 1, no fixed or decode time, tpm_measured given:
#   C(0) = 100 ms; C(0.5) = max(load, compute) = max(0.5·1000·131072 B / 25 GB/s = 2.62 ms, 100·0.5) = 50 ms,
#   so tpm_delivered_target = tpm_measured · C(h_measured) / C(h_target) (= tpm_measured when they are equal).
# cost per month = gpus · hourly_cost · 730.
TINY_MODELS = [{"model": "m1", "layers": 32, "kv_heads": 8, "head_dim": 128, "kv_bytes": 2, "params_b": 8}]
TINY_GPUS = [{"gpu": "g1", "hbm_gib": 80, "pcie_gbps": 25, "hourly_cost": 2.0},
             {"gpu": "g2", "hbm_gib": 80, "pcie_gen": 4, "hourly_cost": 3.0}]


def tiny_wl(name, gpu, tp, tpm, demand, hit=0.0, hit_m=0.0):
    return {"workload": name, "model": "m1", "gpu": gpu, "tp": tp, "isl": 1000, "osl": 0, "hit_measured": hit_m,
            "hit_target": hit, "t_attn0_ms": 0, "t_ffn0_ms": 100, "alpha": 1, "tpm_measured": tpm,
            "demand_tpm": demand}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    d = tmp_path_factory.mktemp("tiny")
    old = write(d / "old.xlsx", TINY_MODELS, TINY_GPUS, [
        tiny_wl("w1", "g1", 2, 300_000, 1_000_000),  # ⌈1.0M/300k⌉ = 4 inst · tp 2 = 8 GPUs · 2.0 · 730 = 11,680
        tiny_wl("w2", "g2", 1, 100_000, 250_000),    # ⌈250k/100k⌉ = 3 GPUs · 3.0 · 730 = 6,570
        tiny_wl("W3", "g1", 1, 500_000, 400_000),    # 1 GPU · 2.0 · 730 = 1,460        OLD = 19,710
    ], {"quarter": "2026-Q3"})
    gpus = copy.deepcopy(TINY_GPUS)
    gpus[0]["hourly_cost"] = 2.5                     # price: g1 2.0 -> 2.5
    new = write(d / "new.xlsx", TINY_MODELS, gpus, [
        tiny_wl(" W1 ", "G1", 2, 300_000, 1_300_000),  # demand 1.0M -> 1.3M (name in other case and spaces)
        tiny_wl("w2", "g2", 2, 100_000, 250_000, hit=0.5),  # hit_target 0 -> 0.5; tp 1 -> 2 ("other")
        tiny_wl("w4", "g2", 1, 100_000, 150_000),     # added
    ], {"quarter": "2026-Q4"})
    return old, new, diff_plans(old, new)


def test_tiny_pair_hand_calculated(tiny):
    _, _, d = tiny
    b = bridge_map(d)
    # hand calc: OLD = 11,680 + 6,570 + 1,460 = 19,710
    assert b["old"] == 19_710
    # removed: W3 drops 1 GPU · 2.0 · 730 = -1,460                               -> 18,250
    assert b["removed"] == -1_460
    # added: w4 ⌈150k/100k⌉ = 2 GPUs · 3.0 (g2, OLD's price = NEW's) · 730 = +4,380 -> 22,630
    assert b["added"] == 4_380
    # demand: w1 ⌈1.3M/300k⌉ = 5 inst · 2 = 10 GPUs, +2 GPUs · 2.0 · 730 = +2,920 -> 25,550
    assert b["demand"] == 2_920
    # hit: w2 at 0.5: tpm 100k · 100/50 = 200k, ⌈250k/200k⌉ = 2 GPUs, -1 · 3.0 · 730 = -2,190 -> 23,360
    assert b["hit"] == -2_190
    # price: w1's 10 GPUs · (2.5 - 2.0) · 730 = +3,650                             -> 27,010
    assert b["price"] == 3_650
    # other: w2 tp 2: 2 instances · 2 = 4 GPUs, +2 · 3.0 · 730 = +4,380             -> 31,390
    assert b["other"] == 4_380
    # NEW = w1 10 · 2.5 · 730 = 18,250 + w2 4 · 3 · 730 = 8,760 + w4 2 · 3 · 730 = 4,380 = 31,390
    assert b["new"] == 31_390
    assert_exact_sum(d.bridge)
    status = {w["workload"].strip().lower(): w["status"] for w in d.workloads}
    assert status == {"w1": "changed", "w2": "changed", "w3": "removed", "w4": "added"}
    w1 = next(w for w in d.workloads if w["workload"].strip() == "W1")
    assert (w1["gpus_old"], w1["gpus_new"], w1["cost_per_month_old"], w1["cost_per_month_new"]) == \
        (8, 10, 11_680, 18_250)
    gpus = {g["gpu"]: (g["gpus_old"], g["gpus_new"], g["cost_per_month_old"], g["cost_per_month_new"])
            for g in d.gpus}
    # g1: OLD w1 8 + W3 1 = 9 GPUs (13,140), NEW w1 10 (18,250); g2: OLD 3 (6,570), NEW 4 + 2 = 6 (13,140)
    assert gpus == {"g1": (9, 10, 13_140, 18_250), "g2": (3, 6, 6_570, 13_140)}


def test_tiny_pair_input_changes(tiny):
    _, _, d = tiny
    got = {(c.sheet, c.name.strip().lower(), c.column, c.old, c.new) for c in d.changes}
    added = tiny_wl("w4", "g2", 1, 100_000, 150_000)
    removed = tiny_wl("W3", "g1", 1, 500_000, 400_000)
    want = {("GPUs", "g1", "hourly_cost", 2.0, 2.5),
            ("Workloads", "w1", "workload", "W1", "W1"),  # surrounding spaces are no change: see below
            ("Workloads", "w1", "demand_tpm", 1_000_000, 1_300_000),
            ("Workloads", "w2", "hit_target", 0, 0.5), ("Workloads", "w2", "tp", 1, 2),
            ("Settings", "quarter", "value", "2026-Q3", "2026-Q4")}
    want.discard(("Workloads", "w1", "workload", "W1", "W1"))
    # w1's name differs only in case ("w1" -> "W1"): the cell text changed, so it is listed;
    # " W1 " is stripped by the reader; its gpu "G1" is matched to "g1" (no change)
    want.add(("Workloads", "w1", "workload", "w1", "W1"))
    want |= {("Workloads", "w4", k, None, v) for k, v in added.items() if v is not None and k != "hit_target"
             and k != "hit_measured" and k != "t_attn0_ms"}
    want |= {("Workloads", "w4", k, None, added[k]) for k in ("hit_target", "hit_measured", "t_attn0_ms")}
    want |= {("Workloads", "w3", k, v, None) for k, v in removed.items()}
    assert got == want
    assert len(d.changes) == len(want)


def test_tiny_pair_cli_workbook_and_memo(tiny, tmp_path):
    old, new, _ = tiny
    out = tmp_path / "q3-q4.xlsx"
    eml = tmp_path / "q3-q4.eml"
    r = run_planner("diff", old, new, "-o", out, "--eml", eml, "--to", "fin@example.org", "--from",
                    "cap@example.org", "--fixed-time", "2026-12-01T00:00:00", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "31,390.00" in r.stdout
    wb = openpyxl.load_workbook(out)
    assert {"Bridge", "Workload_Changes", "GPU_Changes", "Input_Changes"} <= set(wb.sheetnames)
    heads = {s: [str(c.value).split(" [")[0] for c in wb[s][1] if c.value is not None] for s in ("Bridge", "Workload_Changes", "GPU_Changes", "Input_Changes")}
    assert heads["Bridge"][:2] == ["step", "cost_per_month"]
    assert heads["Workload_Changes"][:6] == ["workload", "status", "gpus_old", "gpus_new", "cost_per_month_old",
                                             "cost_per_month_new"]
    assert heads["Input_Changes"][:5] == ["sheet", "name", "column", "old", "new"]
    assert heads["GPU_Changes"][:7] == ["gpu", "gpus_old", "gpus_new", "gpus_delta", "cost_per_month_old",
                                        "cost_per_month_new", "cost_per_month_delta"]
    bridge = [(row["step"], row["cost_per_month"]) for row in sheet_values(out, "Bridge")
              if row["step"] is not None]
    assert bridge == [("old", 19_710), ("removed", -1_460), ("added", 4_380), ("demand", 2_920), ("hit", -2_190),
                      ("price", 3_650), ("other", 4_380), ("new", 31_390)]
    assert len(wb["Bridge"]._charts) == 1 and len(wb["GPU_Changes"]._charts) == 1
    memo = (tmp_path / "q3-q4-memo.md").read_text()
    assert "USD 31,390.00 per month, against USD 19,710.00 before: +11,680.00" in memo
    assert "The new GPU prices: adds USD 3,650.00 per month." in memo
    # the five largest changes by cost: w1 +6,570, w4 +4,380, w2 +2,190 (6,570 -> 8,760), W3 -1,460
    rows = [ln for ln in memo.splitlines() if ln.startswith("| ") and ln.count("|") == 8]
    assert [ln.split("|")[1].strip().lower() for ln in rows[1:]] == ["w1", "w4", "w2", "w3"]
    assert (tmp_path / "q3-q4-memo.html").is_file() and (tmp_path / "q3-q4-bridge.png").is_file()
    msg = email.message_from_bytes(eml.read_bytes())
    assert msg["To"] == "fin@example.org"
    names = [p.get_filename() for p in msg.walk() if p.get_filename()]
    assert "q3-q4.xlsx" in names and "q3-q4-bridge.png" in names


# --------------------------------------------------------------------------- confined changes
@pytest.fixture(scope="module")
def example_base(tmp_path_factory):
    d = tmp_path_factory.mktemp("base")
    m, g, w, s = example_records()
    return d, write(d / "old.xlsx", m, g, w, s)


def test_demand_change_lands_wholly_in_demand(example_base):
    d, old = example_base
    m, g, w, s = example_records()
    for i in (0, 2, 5):
        w[i]["demand_tpm"] = w[i]["demand_tpm"] * 1.7
    w[7]["demand_tpm"] = None  # a demand removed too
    new = write(d / "demand.xlsx", m, g, w, s)
    res = diff_plans(old, new)
    b = bridge_map(res)
    assert b["demand"] == b["new"] - b["old"] != 0
    assert all(b[s] == 0.0 for s in STEPS if s != "demand")
    assert_exact_sum(res.bridge)


def test_price_change_lands_wholly_in_price(example_base):
    d, old = example_base
    m, g, w, s = example_records()
    g[0]["hourly_cost"] = 3.1
    g[2]["hourly_cost"] = 0.9
    new = write(d / "price.xlsx", m, g, w, s)
    res = diff_plans(old, new)
    b = bridge_map(res)
    assert b["price"] == b["new"] - b["old"] != 0
    assert all(b[s] == 0.0 for s in STEPS if s != "price")
    assert {(c.sheet, c.column) for c in res.changes} == {("GPUs", "hourly_cost")}
    assert {w_["status"] for w_ in res.workloads} == {"changed", "same"}


def test_hit_change_lands_wholly_in_hit(example_base):
    d, old = example_base
    m, g, w, s = example_records()
    w[1]["hit_target"] = 0.3
    w[4]["hit_measured"] = 0.1
    new = write(d / "hit.xlsx", m, g, w, s)
    b = bridge_map(diff_plans(old, new))
    assert b["hit"] == b["new"] - b["old"] != 0
    assert all(b[s] == 0.0 for s in STEPS if s != "hit")


def test_new_warnings_and_memo(example_base, tmp_path):
    import datetime as dt

    from planner.diff.memo import build_memo

    d, old = example_base
    m, g, w, s = example_records()
    w.insert(0, w.pop(8))          # a moved row keeps its old warning: not new
    w[3]["hit_target"] = 0.999     # beyond its break-even h*: a new warning
    g[3]["hourly_cost"] = None     # L40S unpriced: its GPUs count 0
    new = write(d / "warn.xlsx", m, g, w, s)
    res = diff_plans(old, new)
    old_warn = [str(x) for x in res.old.warnings]
    assert len(res.new_warnings) == 1 and w[3]["workload"] in res.new_warnings[0]
    assert "break-even" in res.new_warnings[0] and res.new_warnings[0] not in old_warn
    assert res.unpriced == ["L40S"]
    memo = build_memo(res, tmp_path / "x.xlsx", created=dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc))
    assert "## Warnings new in NEW" in memo.markdown and "0.999" not in memo.markdown
    section = memo.markdown.split("## Warnings new in NEW")[1].split("##")[0]
    assert section.count("\n- ") == 1 and "break-even" in section
    assert "without an hourly_cost count 0 in the cost: L40S" in memo.markdown
    assert "L40S" in memo.email_text and "Warnings new in NEW" in memo.html


def test_added_and_removed_workloads(example_base):
    d, old = example_base
    old_plan = build_plan(old)
    m, g, w, s = example_records()
    gone = [w.pop(3), w.pop(7)]
    extra = dict(w[0], workload="brand-new-chat", demand_tpm=2_000_000)
    w.append(extra)
    new = write(d / "addrem.xlsx", m, g, w, s)
    res = diff_plans(old, new)
    status = {x["workload"]: x["status"] for x in res.workloads}
    assert status["brand-new-chat"] == "added"
    assert [status[x["workload"]] for x in gone] == ["removed", "removed"]
    assert sum(1 for v in status.values() if v == "same") == len(w) - 1
    b = bridge_map(res)
    # removed: exactly the OLD cost of the dropped workloads (workload costs are independent)
    cost = dict(zip(old_plan.results["workload"], old_plan.results["gpus_needed"] * old_plan.resolved["hourly_cost"]
                    * 730))
    assert b["removed"] == pytest.approx(-sum(cost[x["workload"]] for x in gone), rel=1e-12)
    new_plan = build_plan(new)
    i = list(new_plan.results["workload"]).index("brand-new-chat")
    assert b["added"] == pytest.approx(new_plan.results["gpus_needed"].iat[i] * new_plan.resolved["hourly_cost"].iat[i]
                                       * 730, rel=1e-12)
    assert b["demand"] == b["hit"] == b["price"] == b["other"] == 0.0
    assert_exact_sum(res.bridge)


def test_added_workload_on_a_new_model_and_gpu(tmp_path):
    """The added step brings the model and GPU the new workload needs from NEW; NEW's price
    of that GPU is part of the added step (OLD had no price for it)."""
    old = write(tmp_path / "old.xlsx", TINY_MODELS, TINY_GPUS[:1], [tiny_wl("w1", "g1", 1, 100_000, 100_000)], {})
    models = TINY_MODELS + [dict(TINY_MODELS[0], model="m2", layers=64)]
    wl = [tiny_wl("w1", "g1", 1, 100_000, 100_000), dict(tiny_wl("w9", "g2", 1, 100_000, 350_000), model="M2")]
    new = write(tmp_path / "new.xlsx", models, TINY_GPUS, wl, {})
    b = bridge_map(diff_plans(old, new))
    # hand calc: OLD w1 1 GPU · 2.0 · 730 = 1,460; w9 ⌈350k/100k⌉ = 4 GPUs · 3.0 · 730 = 8,760
    assert (b["old"], b["added"], b["new"]) == (1_460, 8_760, 10_220)
    assert b["removed"] == b["demand"] == b["hit"] == b["price"] == b["other"] == 0


def test_added_workload_costs_what_it_costs_in_new(tmp_path):
    """A GPU (and model) both files have but NEW redefines: the added workload is planned with
    NEW's definition and price in the added step; the price step holds only the common ones."""
    old = write(tmp_path / "old.xlsx", TINY_MODELS, TINY_GPUS[:1], [tiny_wl("w1", "g1", 1, 100_000, 100_000)], {})
    gpus = [dict(TINY_GPUS[0], hourly_cost=2.5)]
    models = [dict(TINY_MODELS[0], params_b=9)]
    new = write(tmp_path / "new.xlsx", models, gpus, [tiny_wl("w1", "g1", 1, 100_000, 100_000),
                                                      tiny_wl("w5", "G1", 1, 100_000, 250_000)], {})
    res = diff_plans(old, new)
    b = bridge_map(res)
    # hand calc: OLD w1 1 GPU · 2.0 · 730 = 1,460; added w5 ⌈250k/100k⌉ = 3 GPUs · 2.5 (NEW's price) · 730 = 5,475;
    # price: w1 1 GPU · 0.5 · 730 = 365; NEW = 1 · 2.5 · 730 + 5,475 = 7,300
    assert (b["old"], b["added"], b["price"], b["new"]) == (1_460, 5_475, 365, 7_300)
    assert b["removed"] == b["demand"] == b["hit"] == b["other"] == 0
    assert {w["workload"]: w["status"] for w in res.workloads} == {"w1": "changed", "w5": "added"}


def test_optional_sheets_rows_named_by_their_identifying_columns(tmp_path):
    meas = [{"model": "m1", "gpu": "g1", "tp": 1, "isl": 1000, "hit": 0, "ttft_ms": 100},
            {"model": "m1", "gpu": "g1", "tp": 1, "isl": 1000, "hit": 0, "ttft_ms": 110},
            {"model": "m1", "gpu": "g1", "tp": 1, "isl": 2000, "hit": 0.5, "ttft_ms": 150}]
    scn = [{"scenario": "s1", "sheet": "Workloads", "column": "demand_tpm", "match": "w1", "op": "multiply",
            "value": 1.2}]
    wl = [tiny_wl("w1", "g1", 1, 100_000, 100_000)]
    old = write(tmp_path / "old.xlsx", TINY_MODELS, TINY_GPUS, wl, {},
                optional={"Measurements": meas, "Scenarios": scn})
    meas2 = copy.deepcopy(meas[:2])
    meas2[1]["ttft_ms"] = 120           # the second of two rows named alike
    scn2 = [dict(scn[0], value=1.3)]
    new = write(tmp_path / "new.xlsx", TINY_MODELS, TINY_GPUS, wl, {},
                optional={"Measurements": meas2, "Scenarios": scn2})
    got = {(c.sheet, c.name, c.column, norm(c.old), norm(c.new)) for c in diff_plans(old, new).changes}
    removed = {("Measurements", "m1 / g1 / 1 / 2000 / 0.5", k, norm(v), None) for k, v in meas[2].items()}
    assert got == {("Measurements", "m1 / g1 / 1 / 1000 / 0 #2", "ttft_ms", 110.0, 120.0),
                   ("Scenarios", "s1 / Workloads / demand_tpm / w1", "value", 1.2, 1.3)} | removed


# --------------------------------------------------------------------------- every listed change exists, none missing
NUMERIC_EDITS = {"Workloads": [("demand_tpm", lambda r: round(r.uniform(1e5, 5e7), 1)), ("hit_target", lambda r: round(r.uniform(0, 0.9), 3)),
                               ("osl", lambda r: float(r.randint(10, 900))), ("t_decode_ms", lambda r: round(r.uniform(1, 500), 2)),
                               ("alpha", lambda r: round(r.uniform(0, 1), 2)), ("tp", lambda r: r.choice([1, 2, 4, 8]))],
                 # params_b above every example model's active_params_b (at most Llama-3.2-90B's 88.6, written
                 # typed into NEW from the read records): an active part above the whole is refused (trust5)
                 "Models": [("params_b", lambda r: round(r.uniform(90, 700), 1))],
                 "GPUs": [("hourly_cost", lambda r: round(r.uniform(0.5, 5), 2)), ("hbm_gib", lambda r: float(r.randint(40, 200)))]}
KEYS = {"Models": "model", "GPUs": "gpu", "Workloads": "workload"}


def random_pair(rng: random.Random, folder: Path, tag: str):
    """OLD = the example (+ a Demand sheet); NEW = OLD with random edits. Returns paths and the
    expected changes {(sheet, name, column, old, new)}."""
    m, g, w, s = example_records()
    demand = [{"workload": w[i]["workload"], "period": p, "demand_tpm": 1e6 * (i + 1)}
              for i in range(3) for p in ("2027-Q1", "2027-Q2")]
    old = write(folder / f"old-{tag}.xlsx", m, g, w, s, optional={"Demand": demand})
    old_in = read_input(old)
    tables = {"Models": copy.deepcopy(old_in.models.records), "GPUs": copy.deepcopy(old_in.gpus.records),
              "Workloads": copy.deepcopy(old_in.workloads.records)}
    want: set = set()
    for sheet, edits in NUMERIC_EDITS.items():
        for _ in range(rng.randint(1, 4)):
            rec = rng.choice(tables[sheet])
            col, make = rng.choice(edits)
            v = make(rng)
            if rec.get(col) == v:
                continue
            before = next((x for x in want if x[:3] == (sheet, rec[KEYS[sheet]], col)), None)
            first = before[3] if before else rec.get(col)
            want.discard(before)
            rec[col] = v
            if first != v:
                want.add((sheet, rec[KEYS[sheet]], col, first, v))
    wl = tables["Workloads"]
    if rng.random() < 0.7:  # remove a workload
        gone = wl.pop(rng.randrange(3, len(wl)))
        want = {x for x in want if not (x[0] == "Workloads" and x[1] == gone["workload"])}
        want |= {("Workloads", gone["workload"], k, old_in.workloads.records[[r["workload"] for r in
                  old_in.workloads.records].index(gone["workload"])][k], None)
                 for k, v in gone.items() if v is not None}
    if rng.random() < 0.7:  # add a workload
        new_wl = dict(rng.choice(wl), workload=f"added-{tag}", demand_tpm=float(rng.randint(1, 9) * 1e6))
        wl.append(new_wl)
        want |= {("Workloads", new_wl["workload"], k, None, v) for k, v in new_wl.items() if v is not None}
    s_new = dict(s, quarter="2027-Q1")
    want.add(("Settings", "quarter", "value", s["quarter"], "2027-Q1"))
    demand_new = copy.deepcopy(demand)
    demand_new[1]["demand_tpm"] = 7.5e6
    want.add(("Demand", f"{demand[1]['workload']} / 2027-Q2", "demand_tpm", demand[1]["demand_tpm"], 7.5e6))
    new = write(folder / f"new-{tag}.xlsx", tables["Models"], tables["GPUs"], wl, s_new, optional={"Demand": demand_new})
    return old, new, want


def norm(v):
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v


@pytest.mark.parametrize("seed", range(8))
def test_random_pairs_changes_and_exact_bridge(seed, tmp_path):
    rng = random.Random(seed)
    old, new, want = random_pair(rng, tmp_path, str(seed))
    d = diff_plans(old, new)
    got = [(c.sheet, c.name, c.column, norm(c.old), norm(c.new)) for c in d.changes]
    assert len(got) == len(set(got))
    assert set(got) == {(a, b, c, norm(o), norm(n)) for a, b, c, o, n in want}
    assert_exact_sum(d.bridge)
    # the stored costs are the fleet costs (to the binary quantum)
    assert d.bridge[0][1] == pytest.approx(fleet_cost_per_month(d.old), rel=1e-13, abs=1e-9)
    assert d.bridge[-1][1] == pytest.approx(fleet_cost_per_month(d.new), rel=1e-13, abs=1e-9)
    if seed == 0:  # and so does the workbook
        out = tmp_path / "d.xlsx"
        write_diff(d, out)
        rows = [(r["step"], r["cost_per_month"]) for r in sheet_values(out, "Bridge") if r["step"]]
        assert rows == d.bridge
        assert_exact_sum(rows)
        ic = [(r["sheet"], r["name"], r["column"], norm(r["old"]), norm(r["new"]))
              for r in sheet_values(out, "Input_Changes") if r["sheet"]]
        assert sorted(ic, key=repr) == sorted(got, key=repr)


def test_exact_quantum_makes_any_sum_exact():
    rng = random.Random(7)
    for _ in range(2000):
        costs = [rng.uniform(0, 10 ** rng.randint(0, 12)) for _ in range(7)]
        q = exact_quantum(costs)
        c = [snap(x, q) for x in costs]
        steps = [b - a for a, b in zip(c, c[1:])]
        assert all(abs(x - y) <= q for x, y in zip(c, costs))
        t = c[0]
        for v in steps:
            t += v
        assert t == c[-1] and sum(steps) == c[-1] - c[0] == math.fsum(steps)


# --------------------------------------------------------------------------- outputs as inputs
def test_planner_outputs_are_valid_inputs(tiny, tmp_path):
    old, new, d_in = tiny
    outs = []
    for p in (old, new):
        o = tmp_path / f"{p.stem}-plan.xlsx"
        write_output(build_plan(p), o)
        outs.append(o)
    d_out = diff_plans(*outs)
    assert d_out.bridge == d_in.bridge
    assert [(c.sheet, c.name, c.column, c.old, c.new) for c in d_out.changes] == \
        [(c.sheet, c.name, c.column, c.old, c.new) for c in d_in.changes]
    # an input workbook against an output of the same input: nothing changed
    same = diff_plans(old, outs[0])
    assert same.changes == [] and all(v == 0 for _, v in same.bridge[1:-1])
    assert {w["status"] for w in same.workloads} == {"same"}


# --------------------------------------------------------------------------- bad input
def diff_cli(capsys, *args) -> tuple[int, str, str]:
    """``planner diff ARGS`` in this process (faster than a subprocess): (status, stdout, stderr)."""
    from planner.cli.main import main

    code = main(["diff", *map(str, args)])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_bad_inputs(tiny, tmp_path, capsys):
    old, new, _ = tiny
    out = tmp_path / "o" / "d.xlsx"
    # OLD and NEW the same file
    code, _, err = diff_cli(capsys, old, old, "-o", out)
    assert code == 2 and "same file" in err and "Traceback" not in err
    # OUT is OLD or NEW
    for target in (old, new):
        before = target.read_bytes()
        code, _, err = diff_cli(capsys, old, new, "-o", target)
        assert code == 2 and "may not be the input" in err
        assert target.read_bytes() == before
    # missing files, each named
    code, _, err = diff_cli(capsys, tmp_path / "nope.xlsx", tmp_path / "nada.xlsx", "-o", out)
    assert code == 2 and "OLD" in err and "nope.xlsx" in err and "NEW" in err and "nada.xlsx" in err
    # two workbooks that are not plans: the problems of each, naming the file
    wb = openpyxl.Workbook()
    wb.active.title = "Sheet1"
    wb.save(tmp_path / "notaplan.xlsx")
    (tmp_path / "garbage.xlsx").write_bytes(b"this is not a zip file at all")
    code, _, err = diff_cli(capsys, tmp_path / "notaplan.xlsx", tmp_path / "garbage.xlsx", "-o", out)
    assert code == 2 and "Traceback" not in err
    lines = err.splitlines()
    assert any("OLD" in ln and "notaplan.xlsx" in ln and "Workloads" in ln and "missing" in ln for ln in lines)
    assert any("NEW" in ln and "garbage.xlsx" in ln for ln in lines)
    # a plan against a broken plan: only NEW's problem
    wb = openpyxl.load_workbook(new)
    ws = wb["Workloads"]
    hit_col = next(c.column for c in ws[1] if str(c.value).startswith("hit_target"))
    ws.cell(2, hit_col).value = 85
    wb.save(tmp_path / "bad-new.xlsx")
    code, _, err = diff_cli(capsys, old, tmp_path / "bad-new.xlsx", "-o", out)
    assert code == 2
    assert "NEW" in err and "bad-new.xlsx: Workloads!" in err and "hit_target 85" in err and "OLD" not in err
    assert not (tmp_path / "o").exists()  # nothing written by any of them


def test_unreadable_files_are_input_problems(tmp_path, capsys, monkeypatch):
    """A file the reader cannot open (permissions: not testable as root, so simulated) is an
    input problem naming its file, exit 2, not an internal error."""
    import planner.diff.bridge

    for name in ("a.xlsx", "b.xlsx"):
        (tmp_path / name).write_bytes(b"x")

    def denied(path, **_checks):
        raise PermissionError(13, "Permission denied", str(path))

    import planner.finance.validation

    monkeypatch.setattr(planner.finance.validation, "read_input", denied)
    code, _, err = diff_cli(capsys, tmp_path / "a.xlsx", tmp_path / "b.xlsx", "-o", tmp_path / "o.xlsx")
    assert code == 2
    assert "OLD" in err and "a.xlsx: cannot be read (Permission denied)" in err
    assert "NEW" in err and "b.xlsx: cannot be read (Permission denied)" in err
    assert not (tmp_path / "o.xlsx").exists()


def test_no_memo_writes_only_the_workbook(tiny, tmp_path, capsys, monkeypatch):
    old, new, _ = tiny
    monkeypatch.chdir(tmp_path)
    code, out, err = diff_cli(capsys, old, new, "--no-memo", "-q")
    assert code == 0, err
    assert out == ""
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["old-vs-new-diff.xlsx"]


# --------------------------------------------------------------------------- formulas recalculated
@pytest.mark.libreoffice
def test_diff_workbook_recalculates(tiny, tmp_path, recalc):
    old, new, d = tiny
    out = tmp_path / "d.xlsx"
    write_diff(d, out)
    again = recalc(out)
    n = 0
    a = openpyxl.load_workbook(out, data_only=True)
    b = openpyxl.load_workbook(again, data_only=True)
    f = openpyxl.load_workbook(out)
    for sheet in ("Bridge", "Workload_Changes", "GPU_Changes"):
        for row in f[sheet].iter_rows():
            for c in row:
                if isinstance(c.value, str) and c.value.startswith("="):
                    stored, recomputed = a[sheet][c.coordinate].value, b[sheet][c.coordinate].value
                    assert same_value(stored, recomputed, rel=1e-12), (sheet, c.coordinate, stored, recomputed)
                    n += 1
    assert n > 60
    check = next(c for c in b["Bridge"][1] if c.value and str(c.value).startswith("check"))
    assert b["Bridge"].cell(2, check.column).value == 0


# --------------------------------------------------------------------------- names folded as the catalog does
def test_model_and_gpu_spellings_the_catalog_folds_are_one_type(tmp_path):
    # notes/20.md: the example spells H100-SXM, the README H100 SXM; GPU_Changes listed two types
    model = dict(TINY_MODELS[0], model="Llama-3.1-8B")
    gpu = dict(TINY_GPUS[0], gpu="H100-SXM")
    wl = dict(tiny_wl("w1", "H100-SXM", 2, 300_000, 1_000_000), model="Llama-3.1-8B")
    old = write(tmp_path / "old.xlsx", [model], [gpu], [wl], {})
    new = write(tmp_path / "new.xlsx", [dict(model, model="meta-llama/Llama 3.1 8B")], [dict(gpu, gpu="H100 SXM")],
                [dict(wl, model="meta-llama/Llama 3.1 8B", gpu="H100 SXM", demand_tpm=1_300_000)], {})
    d = diff_plans(old, new)
    # hand calc: OLD ⌈1.0M/300k⌉ = 4 instances · tp 2 = 8 GPUs · 2.0 · 730 = 11,680;
    # NEW ⌈1.3M/300k⌉ = 5 · 2 = 10 GPUs · 2.0 · 730 = 14,600: one GPU type, the change all demand
    assert [(g["gpu"], g["gpus_old"], g["gpus_new"], g["cost_per_month_old"], g["cost_per_month_new"])
            for g in d.gpus] == [("H100-SXM", 8, 10, 11_680, 14_600)]
    b = bridge_map(d)
    assert (b["old"], b["demand"], b["new"]) == (11_680, 2_920, 14_600)
    assert b["added"] == b["removed"] == b["other"] == 0
    got = {(c.sheet, c.name, c.column, c.old, c.new) for c in d.changes}
    assert got == {("Models", "Llama-3.1-8B", "model", "Llama-3.1-8B", "meta-llama/Llama 3.1 8B"),  # respelt
                   ("GPUs", "H100-SXM", "gpu", "H100-SXM", "H100 SXM"),
                   ("Workloads", "w1", "demand_tpm", 1_000_000, 1_300_000)}
    assert [w["status"] for w in d.workloads] == ["changed"]


def test_two_spellings_in_one_file_stay_two_types(tmp_path):
    gpu = dict(TINY_GPUS[0], gpu="H100 SXM")
    wl = tiny_wl("w1", "H100 SXM", 2, 300_000, 1_000_000)
    old = write(tmp_path / "old.xlsx", TINY_MODELS, [gpu], [wl], {})
    new = write(tmp_path / "new.xlsx", TINY_MODELS, [gpu, dict(gpu, gpu="H100-SXM", hourly_cost=9.0)], [wl], {})
    d = diff_plans(old, new)
    # NEW has both spellings as rows of its own: not folded (H100-SXM is a GPU type only NEW has)
    assert [g["gpu"] for g in d.gpus] == ["H100 SXM", "H100-SXM"]
    assert ("GPUs", "H100-SXM", "hourly_cost", None, 9.0) in {(c.sheet, c.name, c.column, c.old, c.new)
                                                              for c in d.changes}


def test_respelling_reaches_measurements_and_scenarios(tmp_path):
    from planner.diff.names import align_names

    gpu = dict(TINY_GPUS[0], gpu="H100-SXM")
    wl = tiny_wl("w1", "H100-SXM", 2, 300_000, 1_000_000)
    meas = [{"model": "m1", "gpu": "H100-SXM", "tp": 2, "isl": 1000, "hit": 0, "ttft_ms": 100}]
    old = read_input(write(tmp_path / "old.xlsx", TINY_MODELS, [gpu], [wl], {}, optional={"Measurements": meas}))
    scn = [{"scenario": "dear", "sheet": "GPUs", "column": "hourly_cost", "match": "h100 sxm", "op": "multiply",
            "value": 1.1}]
    new_path = write(tmp_path / "new.xlsx", TINY_MODELS, [dict(gpu, gpu="H100 SXM")], [dict(wl, gpu="H100 SXM")], {},
                     optional={"Measurements": [dict(meas[0], gpu="H100 SXM")], "Scenarios": scn})
    new = read_input(new_path)
    aligned, changes = align_names(old, new)
    assert [r["gpu"] for r in aligned.gpus.records] == ["H100-SXM"]
    assert [r["gpu"] for r in aligned.workloads.records] == ["H100-SXM"]
    assert [r["gpu"] for r in aligned.optional["Measurements"].records] == ["H100-SXM"]
    assert [r["match"] for r in aligned.optional["Scenarios"].records] == ["H100-SXM"]
    assert new.gpus.records[0]["gpu"] == "H100 SXM"  # NEW as read is not changed
    assert [(c.sheet, c.old, c.new) for c in changes] == [("GPUs", "H100-SXM", "H100 SXM")]
