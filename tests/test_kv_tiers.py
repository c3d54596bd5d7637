"""KV tiers and trace-derived hit ratios in the plan (planner.inputs.kv_tiers, planner.workbook.kv_tiers_sheets).

The hand-calculated case: Llama-3.1-8B at tp 1 holds S = 2 * 32 * 8 * 128 * 2 = 131,072 B of KV
per token (docs/model.md worked numbers), so a 16-token block is 2 MiB = 1/512 GiB. The trace
has three requests of two 16-token blocks, [1 2], [1 3], [1 2], 32 tokens each, no warm-up:
r1 hits block 1 at any capacity >= 1 block; r2 hits block 1 (rank 0) and block 2 (rank 2:
blocks 1 and 3 were used after it) at >= 3 blocks. So H(1 block) = 32/96 = 1/3 and
H(3 blocks) = 48/96 = 1/2 (the curve's own points: 0, 1, 2, 3 blocks).
Tiers: hbm of 1/512 GiB (1 block) and dram of 2/512 GiB at 10 GB/s: h_hbm = 1/3,
h_dram = 1/2 - 1/3 = 1/6, hit_target = 1/2, and for a 1,000-token input
T_load = h_dram N S / B = (1/6) * 1000 * 131072 B / 10 GB/s = 2.184533... ms (HBM loads nothing).
"""

from __future__ import annotations

import json
from pathlib import Path

import openpyxl
import pytest

from conftest import edit_output, run_cli, same_value, sheet_values, value_book
from planner.workbook.input_sheets import write_input_workbook
from planner.plan.build import build_plan
from planner.workbook.writer import write_output

MODEL = {"model": "Llama-3.1-8B", "layers": 32, "kv_heads": 8, "head_dim": 128, "kv_bytes": 2, "params_b": 8}
GPU = {"gpu": "H100", "hbm_gib": 80, "pcie_gbps": 25, "hourly_cost": 2.0}
WL = {"workload": "chat", "model": "Llama-3.1-8B", "gpu": "H100", "tp": 1, "isl": 1000, "osl": 100,
      "t_attn0_ms": 10, "t_ffn0_ms": 50, "t_decode_ms": 200, "demand_tpm": 1_100_000, "trace": "t.jsonl",
      "trace_block_size": 16}
TIERS = [{"tier": "HBM", "kind": "hbm", "capacity_gib": 1 / 512},
         {"tier": "DRAM", "kind": "dram", "capacity_gib": 2 / 512, "scope": "instance", "read_gbps": 10,
          "cost_per_gib_month": 3.0}]


def make(tmp: Path, tiers=TIERS, wl=WL, trace_lines=None, scenarios=None, settings=None) -> Path:
    lines = trace_lines or [json.dumps({"timestamp": i, "input_length": 32, "output_length": 1, "hash_ids": h})
                            for i, h in enumerate([[1, 2], [1, 3], [1, 2]])]
    (tmp / "t.jsonl").write_text("\n".join(lines) + "\n")
    path = tmp / "in.xlsx"
    settings = {"trace_warmup": 0.0, **(settings or {})}
    optional = {"Tiers": tiers} if tiers else {}
    if scenarios:
        optional["Scenarios"] = scenarios
    write_input_workbook(path, [MODEL], [GPU], [wl], settings, optional=optional or None)
    return path


def test_hand_calculated_tier_hits_and_load(tmp_path):
    p = build_plan(make(tmp_path))
    w = p.input.kv_tiers.workloads[0]
    assert w.kv_bytes_instance == 131072
    assert w.hits.tolist() == pytest.approx([1 / 3, 1 / 6], abs=1e-15)
    assert p.resolved["hit_target"].iat[0] == pytest.approx(0.5, abs=1e-15)
    assert p.results["load_ms"].iat[0] == pytest.approx(1 / 6 * 1000 * 131072 / 10e9 * 1e3, rel=1e-12)
    # compute at h = 1/2: attention 10 (1 - 1/4) + FFN 50 (1 - 1/2) = 32.5 ms
    assert p.results["compute_ms"].iat[0] == pytest.approx(32.5, rel=1e-12)
    # tier cost: 2/512 GiB x 3 per GiB-month x instances_needed
    inst = p.results["instances_needed"].iat[0]
    from planner.workbook.kv_tiers_sheets import tier_cost_per_month
    assert tier_cost_per_month(w, p.input.kv_tiers, p.results, 8) == pytest.approx(2 / 512 * 3 * inst)


def test_tier_worth_hand_calculated(tmp_path):
    """Without the DRAM tier only HBM's block: h = 1/3, no load; compute 10 (1 - 1/9) + 50 (2/3)
    = 42.222 ms, chip 242.222 ms, delivered TPM 1100 x 60000 / 242.222 = 272,477 -> ceil(1.1e6 /
    272,477) = 5 instances = 5 GPUs. With it (h = 1/2, load 2.1845 ms): compute 32.5, chip 234.685 ms,
    TPM 281,229 -> 4 GPUs. One GPU saved = 2 USD/h x 730 h = 1,460 per month; the DRAM costs
    2/512 GiB x 3 x 4 instances = 0.046875 per month; break-even 1460 / (2/512 x 4) = 93,440 per GiB-month."""
    from planner.workbook.tier_worth import DECLARED, worth_of
    (w, sw, val), = worth_of(build_plan(make(tmp_path)))
    assert sw["hit"][0] == pytest.approx(1 / 3, abs=1e-15) and sw["load_ms"][0] < 1e-250
    assert sw["compute_ms"][0] == pytest.approx(10 * (1 - 1 / 9) + 50 * (2 / 3), rel=1e-12)
    assert sw["tpm_delivered_target"][0] == pytest.approx(1100 * 60000 / (200 + 42 + 2 / 9), rel=1e-12)
    assert (sw["gpus"][0], sw["gpus"][DECLARED]) == (5, 4)
    assert val["gpu_cost_saved_per_month"] == pytest.approx(1460)
    assert val["tier_cost_per_month"] == pytest.approx(2 / 512 * 3 * 4)
    assert val["net_saving_per_month"] == pytest.approx(1460 - 2 / 512 * 12)
    assert val["break_even_cost_per_gib_month"] == pytest.approx(93440)


def test_summary_and_memo_say_what_the_tier_is_worth(tmp_path):
    from planner.memo.render import build_memo
    plan = build_plan(make(tmp_path))
    out = tmp_path / "out.xlsx"
    write_output(plan, out)
    memo = build_memo(plan, out, charts=False).markdown  # the text is the point (charts: test_memo)
    # the tier is 2/512 GiB = 0.00390625 GiB: three significant figures, not "0 GiB"
    assert ("chat: from its trace t.jsonl, a 0.00391 GiB DRAM tier per instance raises the hit ratio from 33% to 50% "
            "(HBM 33%, DRAM 17%) and saves 1 GPU, USD 1,460 per month net") in memo
    assert "pays for itself up to USD 93,440.00 per GiB-month (priced at USD 3.00)" in memo
    wb = openpyxl.load_workbook(out, data_only=True)
    cells = [[c.value for c in row] for row in wb["Summary"].iter_rows()]
    value = _values(out, "Tier_Value")
    assert value[1]["workload"] == "Total (traced workloads)"  # one workload: the total is its row
    for k in ("gpus_saved", "net_saving_per_month", "break_even_cost_per_gib_month"):
        assert value[1][k] == pytest.approx(value[0][k])
    row = next(r for r in cells if r[0] == "chat" and r[1] == "33% / 50%")
    assert row[2] == 1 and row[3] == pytest.approx(1460 - 2 / 512 * 12) and row[4] == pytest.approx(93440)


def test_a_tier_capacity_as_a_scenario_override(tmp_path):
    from planner.finance.fleet import plan_fleet
    from planner.finance.scenarios import scenario_compare
    scn = [{"scenario": "no DRAM", "sheet": "Tiers", "column": "capacity_gib", "match": "DRAM", "op": "set",
            "value": 0}]
    p = build_plan(make(tmp_path, scenarios=scn))
    got = scenario_compare(p).set_index("scenario")
    fresh_dir = tmp_path / "fresh"
    fresh_dir.mkdir()
    fresh = build_plan(make(fresh_dir, tiers=[dict(TIERS[0]), dict(TIERS[1], capacity_gib=0)]))
    want = plan_fleet(fresh).iloc[-1]
    assert got.loc["no DRAM", "gpus_needed"] == want["gpus_needed"] == 5  # the hand calculation above
    assert got.loc["no DRAM", "cost_per_month"] == pytest.approx(want["cost_per_month"])
    assert got.loc["base", "gpus_needed"] == 4
    bad = [{"scenario": "x", "sheet": "Tiers", "column": "capacity_gib", "match": "DRAM", "op": "set", "value": -1}]
    r = run_cli("validate", str(make(tmp_path, scenarios=bad)), cwd=tmp_path)
    assert r.returncode == 2 and "Scenarios!F2" in r.stderr and "capacity_gib" in r.stderr


def test_without_tiers_the_hbm_headroom_is_the_cache(tmp_path):
    """No Tiers rows: the HBM left after weights and peak KV. 80 GiB - 8e9 x 2 B / 2^30 (14.90 GiB)
    - 256 x 1100 x 131072 B (34.38 GiB; batch blank: the 484 full-length requests that fit, capped at
    256, slofix item 3) = 30.72 GiB, far more than the 3 blocks: every repeat hits."""
    p = build_plan(make(tmp_path, tiers=[]))
    w = p.input.kv_tiers.workloads[0]
    assert p.resolved["batch"].iat[0] == 256 and p.results["max_batch_fit"].iat[0] == 484
    assert w.hbm_free_gib == pytest.approx(80 - 8e9 * 2 / 2**30 - 256 * 1100 * 131072 / 2**30, rel=1e-12)
    assert p.resolved["hit_target"].iat[0] == pytest.approx(0.5, abs=1e-15)
    assert p.results["load_ms"].iat[0] < 1e-250


def test_diff_puts_a_capacity_change_in_the_hit_step_as_capacity(tmp_path):
    """OLD with the DRAM tier (4 GPUs), NEW without it (5 GPUs, the hand calculation above), same
    trace, in other folders: the one GPU more (2 USD/h x 730 h = 1,460 per month) is the hit
    step's (SPEC's steps), all of it its capacity part; the traffic part (NEW's trace at OLD's
    tiers: the same trace) is 0."""
    from planner.diff.bridge import diff_plans
    (tmp_path / "old").mkdir()
    (tmp_path / "new").mkdir()
    old = make(tmp_path / "old")
    new = make(tmp_path / "new", tiers=[dict(TIERS[0]), dict(TIERS[1], capacity_gib=0)])
    d = diff_plans(old, new)
    steps = dict(d.bridge)
    assert steps["hit"] == pytest.approx(1460)
    assert d.hit_split["capacity"] == pytest.approx(1460) and d.hit_split["traffic"] == 0.0
    assert (d.hit_split["traffic_gpus"], d.hit_split["capacity_gpus"]) == (0, 1)
    assert steps["other"] == pytest.approx(0) and steps["price"] == pytest.approx(0)
    assert steps["new"] - steps["old"] == pytest.approx(1460)


NO_REUSE = [json.dumps({"timestamp": i, "input_length": 32, "output_length": 1, "hash_ids": h})
            for i, h in enumerate([[1, 2], [4, 3], [5, 6]])]


def test_diff_puts_a_trace_change_in_the_hit_step_as_traffic(tmp_path):
    """Same tiers; NEW's trace shares no prefix ([1 2], [4 3], [5 6]: every first block new), so its
    hit is 0 at any capacity: compute 10 + 50 = 60 ms, chip 260 ms, TPM 1100 x 60000 / 260 =
    253,846 -> ceil(1.1e6 / 253,846) = 5 GPUs against OLD's 4. The GPU more (1,460 per month) is
    the hit step's, all of it its traffic part; the capacity part (NEW's tiers: the same) is 0."""
    from planner.diff.bridge import diff_plans
    (tmp_path / "old").mkdir()
    (tmp_path / "new").mkdir()
    old = make(tmp_path / "old")
    new = make(tmp_path / "new", trace_lines=NO_REUSE)
    d = diff_plans(old, new)
    assert d.new.results["gpus_needed"].iat[0] == 5 and d.old.results["gpus_needed"].iat[0] == 4
    steps = dict(d.bridge)
    assert steps["hit"] == pytest.approx(1460)
    assert d.hit_split["traffic"] == pytest.approx(1460) and d.hit_split["capacity"] == 0.0
    assert steps["other"] == pytest.approx(0) and steps["price"] == pytest.approx(0)


def test_diff_with_both_changes_replays_the_new_trace_at_the_old_tiers_first(tmp_path):
    """NEW drops the DRAM tier and has the no-reuse trace: the hit step's traffic part (no-reuse
    trace at OLD's tiers, hit 0) takes 4 -> 5 GPUs; then no tier can help a trace without reuse, so
    its capacity part is 0; the two parts sum to the step."""
    from planner.diff.bridge import diff_plans
    (tmp_path / "old").mkdir()
    (tmp_path / "new").mkdir()
    old = make(tmp_path / "old")
    new = make(tmp_path / "new", tiers=[dict(TIERS[0]), dict(TIERS[1], capacity_gib=0)], trace_lines=NO_REUSE)
    d = diff_plans(old, new)
    assert (d.hit_split["traffic"], d.hit_split["capacity"]) == (pytest.approx(1460), 0.0)
    assert d.hit_split["traffic"] + d.hit_split["capacity"] == dict(d.bridge)["hit"]


def test_hbm_only_hits_load_nothing(tmp_path):
    tiers = [{"tier": "HBM", "kind": "hbm", "capacity_gib": 3 / 512}]
    p = build_plan(make(tmp_path, tiers=tiers))
    assert p.resolved["hit_target"].iat[0] == pytest.approx(0.5, abs=1e-15)
    assert p.results["load_ms"].iat[0] < 1e-280


def test_part_of_a_block_is_not_held(tmp_path):
    # dram 1.5/512 GiB: the tiers hold 1 + 1 whole blocks, H(2) = 1/3 (it was read half-way to H(3) = 1/2,
    # 5/12, by interpolating the curve within a block; tests/test_redteam7b_tiers.py)
    tiers = [dict(TIERS[0]), dict(TIERS[1], capacity_gib=1.5 / 512)]
    p = build_plan(make(tmp_path, tiers=tiers))
    assert p.resolved["hit_target"].iat[0] == pytest.approx(1 / 3, abs=1e-12)


def test_typed_hit_target_wins(tmp_path):
    p = build_plan(make(tmp_path, wl=dict(WL, hit_target=0.2)))
    assert p.resolved["hit_target"].iat[0] == 0.2
    assert p.resolved["kv_gbps"].iat[0] == 25  # as without a trace


def test_errors_are_located(tmp_path):
    bad = ['{"timestamp": 0, "input_length": 32, "output_length": 1, "hash_ids": [1, 2]}', '{"oops": ']
    path = make(tmp_path, tiers=[{"tier": "DRAM", "kind": "dram"}, {"tier": "dram", "kind": "ssd",
                                                                    "capacity_gib": 4}], trace_lines=bad)
    r = run_cli("validate", str(path), cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "Tiers!C2: capacity_gib is required for a dram tier" in r.stderr
    assert "Tiers!A3: tier 'dram' duplicates row 2" in r.stderr
    assert "t.jsonl line 2: not a JSON object" in r.stderr
    assert "Workloads!" in r.stderr and "is not a Mooncake or Bailian JSONL trace" in r.stderr
    (tmp_path / "t.jsonl").unlink()
    r = run_cli("validate", str(path), cwd=tmp_path)
    assert r.returncode == 2 and "trace 't.jsonl' not found" in r.stderr


def test_trace_is_found_beside_the_workbook_from_any_folder(tmp_path):
    src = tmp_path / "plans"
    src.mkdir()
    path = make(src)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    r = run_cli("run", str(path), "-o", str(elsewhere / "out.xlsx"), "--no-memo", cwd=elsewhere)
    assert r.returncode == 0, r.stderr
    hit = [x for x in sheet_values(elsewhere / "out.xlsx", "Resolved")][0]["hit_target"]
    assert hit == pytest.approx(0.5, abs=1e-15)
    assert {n.name for n in tmp_path.rglob("*")} >= {"t.jsonl", "in.xlsx", "out.xlsx"}
    assert not list(elsewhere.glob("*.tmp*"))  # no temporary file left


def test_rerun_of_an_output_without_its_trace_says_where_it_looked_and_what_to_do(tmp_path):
    """An output written to another folder names the trace as its input did (relative to its own
    folder): re-planning it there without the trace is exit 2, the trace cell located, the path
    tried and the fix in the message, no traceback, no output left."""
    src = tmp_path / "plans"
    src.mkdir()
    path = make(src)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert run_cli("run", str(path), "-o", str(elsewhere / "out.xlsx"), "--no-memo", cwd=elsewhere).returncode == 0
    r = run_cli("run", str(elsewhere / "out.xlsx"), "-o", str(elsewhere / "again.xlsx"), "--no-memo", cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    msg = r.stderr
    assert "Workloads!" in msg and "trace 't.jsonl' not found" in msg
    assert str((elsewhere / "t.jsonl").resolve()) in msg and "copied beside it" in msg and "absolute" in msg
    assert not (elsewhere / "again.xlsx").exists()


def test_blank_hit_target_without_trace_is_still_an_error(tmp_path):
    wl = {k: v for k, v in WL.items() if k not in ("trace", "trace_block_size")}
    path = make(tmp_path, wl=wl)
    r = run_cli("validate", str(path), cwd=tmp_path)
    assert r.returncode == 2 and "hit_target is required" in r.stderr


def _values(path, sheet):
    return sheet_values(path, sheet)


def test_blank_hit_target_of_a_traced_row_is_styled_and_commented_like_a_catalog_fill(tmp_path):
    """The output's Workloads!hit_target of a traced row stays blank (a typed value would win over
    the trace on a re-run) but carries the catalog style and a comment naming the trace, the
    Resolved cell and the value planned (1/2, the hand calculation above); a typed row does not."""
    from test_catalog import CATALOG_FILL
    wl2 = dict(WL, workload="typed", hit_target=0.2)
    src = tmp_path / "in.xlsx"
    make(tmp_path)
    write_input_workbook(src, [MODEL], [GPU], [WL, wl2], {"trace_warmup": 0.0}, optional={"Tiers": TIERS})
    out = tmp_path / "out.xlsx"
    write_output(build_plan(src), out)
    ws = openpyxl.load_workbook(out)["Workloads"]
    col = next(c.column for c in ws[1] if str(c.value).split(" [")[0] == "hit_target")
    traced, typed = ws.cell(2, col), ws.cell(3, col)
    assert traced.value is None and traced.fill.fgColor.rgb == CATALOG_FILL and traced.font.i
    note = traced.comment.text
    assert "t.jsonl" in note and "0.5 " in note and "Resolved!" in note and "Tier_Hits row 2" in note
    assert typed.value == 0.2 and typed.comment is None and typed.fill.fgColor.rgb != CATALOG_FILL
    # and the re-run of the output plans the same hit from the trace (the blank is still blank)
    assert build_plan(out).resolved["hit_target"].tolist() == pytest.approx([0.5, 0.2], abs=1e-15)


@pytest.mark.libreoffice
def test_recalculated_tier_cells_and_live_edit_equal_a_fresh_run(tmp_path, recalc):
    # hit_step 0.5: the test reads the tier sheets, Resolved and Results, not the hit sweep
    # (Sensitivity_Hit: 3 rows, not 21; 924 of the workbook's 3,732 formulas at 21)
    src = make(tmp_path, settings={"hit_step": 0.5})
    out = tmp_path / "out.xlsx"
    write_output(build_plan(src), out)
    # the live edit (checked below) is made first: both workbooks in one LibreOffice process
    def tier(wb):
        ws = wb["Tiers"]
        head = {str(c.value).split(" [")[0]: c.column for c in ws[1]}
        ws.cell(3, head["capacity_gib"]).value = 1.5 / 512
        ws.cell(3, head["cost_per_gib_month"]).value = 5.0

    edited = edit_output(out, tmp_path / "edited.xlsx", tier, "Tiers")
    again, live = recalc(out, edited)
    wb_checks = value_book(again, "Checks")["Checks"]
    assert wb_checks["B1"].value == "OK"  # master check recalculated, hit_target blank on the traced row
    req = next(r for r in wb_checks.iter_rows(values_only=True) if r[0] == "required workload cells filled")
    assert req[2] == 0
    for sheet in ("Tier_Hits", "Hit_Curve", "Tier_Worth", "Tier_Value", "Resolved", "Results"):
        stored, got = _values(out, sheet), _values(again, sheet)
        for a, b in zip(stored, got):
            for k in a:
                assert same_value(a[k], b[k]), (sheet, k, a[k], b[k])
    # a live edit: the DRAM tier to 1.5/512 GiB and its price to 5 in the output's Tiers sheet
    # (made and recalculated above)
    fresh_tiers = [dict(TIERS[0]), dict(TIERS[1], capacity_gib=1.5 / 512, cost_per_gib_month=5.0)]
    fresh_dir = tmp_path / "fresh"
    fresh_dir.mkdir()
    fresh = fresh_dir / "out.xlsx"
    write_output(build_plan(make(fresh_dir, tiers=fresh_tiers, settings={"hit_step": 0.5})), fresh)
    for sheet, cols in (("Results", ("load_ms", "ttft_ms", "tpm_delivered_target", "gpus_needed")),
                        ("Tier_Hits", ("hit", "t2_hit", "kv_gbps_eff", "tier_cost_per_month")),
                        ("Tier_Value", ("hit_with", "gpus_with", "net_saving_per_month",
                                        "break_even_cost_per_gib_month", "cost_optimal_capacity_gib"))):
        a, b = _values(fresh, sheet)[0], _values(live, sheet)[0]
        for k in cols:
            assert same_value(a[k], b[k]), (sheet, k, a[k], b[k])
