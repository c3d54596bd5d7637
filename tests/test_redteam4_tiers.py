"""Red team 4: a Qwen Bailian trace (gzip, 16-token blocks, a partial last block) over three nested
tiers of three scopes (HBM per instance, DRAM per node, SSD in a pool), every number by hand:
the LRU hit per capacity, the split by tier, the load, the GPUs with and without the DRAM tier, the
tiers' cost, Tier_Value, the Summary line and the memo sentence; then a LibreOffice recalculation
of Tier_Hits, Tier_Worth, Tier_Value and Summary.

Llama-3.1-8B at tp 1: S = 2 x 32 x 8 x 128 x 2 = 131,072 B per token, a 16-token block is 2 MiB
= 1/512 GiB. The trace (no warm-up), requests in file order, each leaving its blocks most recently
used with its first block on top (README "Traces"):

    r1 [1 2] 32 tokens | r2 [1 2 3] 48 | r3 [4] 16 | r4 [1 2 3] 40 (its 3rd block 8 tokens) | r5 [4] 16

LRU stack before each request (most recent first) and the blocks' ranks:
    r2: (1 2)      -> 1 at 0, 2 at 1 (3 new)        r3: (1 2 3)   -> 4 new
    r4: (4 1 2 3)  -> 1 at 1, 2 at 2, 3 at 3        r5: (1 2 3 4) -> 4 at 3
A block hits at a capacity of c blocks when its rank is below c and every block before it hit:
    c = 1: r2 16                          = 16        c = 2: r2 32 + r4 16        = 48
    c = 3: r2 32 + r4 32                  = 64        c = 4: r2 32 + r4 40 + r5 16 = 88
of 32 + 48 + 16 + 40 + 16 = 152 input tokens: H = 16, 48, 64, 88 / 152.

Tiers HBM 1 block, DRAM 1 block (node, 10 GB/s, 3 a GiB-month), SSD 2 blocks (pool, 2 GB/s, 1):
cumulative 1, 2, 4 blocks, so h_HBM = 16/152, h_DRAM = 32/152, h_SSD = 40/152, hit 88/152.
"""

from __future__ import annotations

import gzip
import json
import math

import openpyxl
import pytest

from conftest import run_cli, same_value, sheet_values, value_book
from planner.plan.build import build_plan
from planner.workbook.input_sheets import write_input_workbook

S = 131072.0
GIB_BLOCK = 16 * S / 2**30  # 1/512 GiB
MODEL = {"model": "Llama-3.1-8B", "layers": 32, "kv_heads": 8, "head_dim": 128, "kv_bytes": 2, "params_b": 8}
GPU = {"gpu": "H100", "hbm_gib": 80, "pcie_gbps": 25, "hourly_cost": 2.0}
DEMAND = 1_050_000
WL = {"workload": "chat", "model": "Llama-3.1-8B", "gpu": "H100", "tp": 1, "isl": 1000, "osl": 100,
      "t_attn0_ms": 10, "t_ffn0_ms": 50, "t_decode_ms": 200, "demand_tpm": DEMAND, "trace": "bailian.jsonl.gz"}
TIERS = [{"tier": "HBM", "kind": "hbm", "capacity_gib": GIB_BLOCK},
         {"tier": "DRAM", "kind": "dram", "capacity_gib": GIB_BLOCK, "scope": "node", "read_gbps": 10,
          "cost_per_gib_month": 3.0},
         {"tier": "SSD", "kind": "ssd", "capacity_gib": 2 * GIB_BLOCK, "scope": "pool", "read_gbps": 2,
          "cost_per_gib_month": 1.0}]
REQS = [([1, 2], 32), ([1, 2, 3], 48), ([4], 16), ([1, 2, 3], 40), ([4], 16)]

H = {1: 16 / 152, 2: 48 / 152, 3: 64 / 152, 4: 88 / 152}
SPLIT = (16 / 152, 32 / 152, 40 / 152)


def _chip(hit, per_gbps):
    """chip time [ms] at hit ratio ``hit`` with ``sum_t h_t / B_t`` = ``per_gbps`` [1/(GB/s)]:
    t_decode 200 + attention 10 (1 - h^2) + FFN 50 (1 - h) + load 1,000 x S x per_gbps / 1e9 s."""
    return 200 + 10 * (1 - hit * hit) + 50 * (1 - hit) + 1000 * S * per_gbps / 1e9 * 1000


def _instances(chip):
    return math.ceil(DEMAND / (1100 * 60000 / chip))


WITH = _chip(H[4], SPLIT[1] / 10 + SPLIT[2] / 2)        # 247.706 ms
WITHOUT = _chip(H[3], (H[3] - H[1]) / 2)                 # no DRAM: SSD from block 2 to 3, 257.870 ms


def _bailian() -> list[str]:
    """The trace's lines in the Qwen Bailian layout (16-token blocks, timestamps in seconds)."""
    return [json.dumps({"chat_id": i, "parent_chat_id": -1, "timestamp": 0.5 * i, "input_length": n,
                        "output_length": 5, "type": "text", "turn": 1, "hash_ids": h})
            for i, (h, n) in enumerate(REQS)]


@pytest.fixture(scope="module")
def tiers(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tiers4")
    with gzip.open(tmp / "bailian.jsonl.gz", "wt") as f:
        f.write("\n".join(_bailian()) + "\n")
    src = tmp / "in.xlsx"
    # hit_step 0.5: no test of this output reads the hit sweep (Sensitivity_Hit: 3 rows, not 21)
    write_input_workbook(src, [MODEL], [GPU], [WL], {"trace_warmup": 0.0, "hit_step": 0.5},
                         optional={"Tiers": TIERS})
    out = tmp / "out.xlsx"
    r = run_cli("run", src, "-o", out, "--no-charts", cwd=tmp)  # the memo is read, not its charts
    assert r.returncode == 0, r.stderr
    return src, out, r


def test_hand_numbers():
    assert WITH == pytest.approx(200 + 10 * (1 - (88 / 152) ** 2) + 50 * 64 / 152 + 20.00564, rel=1e-6)
    assert (_instances(WITH), _instances(WITHOUT)) == (4, 5)


def test_hits_split_load_and_gpus(tiers):
    src, _out, _r = tiers
    p = build_plan(src)
    w = p.input.kv_tiers.workloads[0]
    assert w.hits.tolist() == pytest.approx(SPLIT, abs=1e-15)
    assert p.resolved["hit_target"].iat[0] == pytest.approx(88 / 152, abs=1e-15)
    per = SPLIT[1] / 10 + SPLIT[2] / 2
    assert p.resolved["kv_gbps"].iat[0] == pytest.approx((88 / 152) / per, rel=1e-12)
    assert p.results["load_ms"].iat[0] == pytest.approx(1000 * S * per / 1e9 * 1000, rel=1e-12)
    assert p.results["instances_needed"].iat[0] == 4


def test_tier_sheets_summary_and_memo(tiers):
    _src, out, _r = tiers
    hits = sheet_values(out, "Tier_Hits")[0]
    # DRAM per node: 4 instances x 1 GPU on 8-GPU nodes = 1 node, 1/512 GiB x 3; the SSD pool once, 2/512 x 1
    assert hits["tier_cost_per_month"] == pytest.approx(GIB_BLOCK * 3 + 2 * GIB_BLOCK * 1, rel=1e-12)
    assert (hits["t1_hit"], hits["t2_hit"], hits["t3_hit"]) == pytest.approx(SPLIT, abs=1e-15)
    val = sheet_values(out, "Tier_Value")[0]
    assert (val["tier"], val["hit_without"], val["hit_with"]) == ("DRAM", pytest.approx(H[3]), pytest.approx(H[4]))
    assert (val["gpus_without"], val["gpus_with"], val["gpus_saved"]) == (5, 4, 1)
    assert val["gpu_cost_saved_per_month"] == pytest.approx(2.0 * 730)
    assert val["tier_cost_per_month"] == pytest.approx(GIB_BLOCK * 3)          # the DRAM tier's own cost
    assert val["net_saving_per_month"] == pytest.approx(1460 - GIB_BLOCK * 3)
    assert val["break_even_cost_per_gib_month"] == pytest.approx(1460 / GIB_BLOCK)  # 747,520 per GiB-month
    worth = [r for r in sheet_values(out, "Tier_Worth") if r.get("workload") == "chat"]
    at = {r["multiplier"]: r for r in worth}
    assert (at[0]["gpus"], at[1]["gpus"]) == (5, 4)
    assert at[0]["chip_ms"] == pytest.approx(WITHOUT, rel=1e-12) and at[1]["chip_ms"] == pytest.approx(WITH, rel=1e-12)
    rows = list(value_book(out, "Summary")["Summary"].values)
    line = next(r for r in rows if r and r[0] == "chat" and r[1] == "42% / 58%")
    assert line[2] == 1 and line[3] == pytest.approx(1460 - GIB_BLOCK * 3) and line[4] == pytest.approx(1460 / GIB_BLOCK)
    memo = (out.parent / "out-memo.md").read_text()
    assert "raises the hit ratio from 42% to 58% (HBM 11%, DRAM 21%, SSD 26%) and saves 1 GPU, USD 1,460 per month net" \
        in memo


@pytest.mark.libreoffice
def test_tier_sheets_recalculated_equal_stored(tiers, recalculated):
    _src, out, _r = tiers
    done = recalculated["tiers"]
    for sheet in ("Tier_Hits", "Tier_Worth", "Tier_Value"):
        stored, live = sheet_values(out, sheet), sheet_values(done, sheet)
        assert len(stored) == len(live) > 0, sheet
        for a, b in zip(stored, live):
            for k in a:
                assert same_value(a[k], b.get(k), rel=1e-9), (sheet, a.get("workload"), k, a[k], b.get(k))
    s1 = list(value_book(out, "Summary")["Summary"].values)
    s2 = list(value_book(done, "Summary")["Summary"].values)
    for r1, r2 in zip(s1, s2):
        for a, b in zip(r1, r2):
            assert same_value(a, b), ("Summary", r1, r2)


def test_a_tiers_sheet_without_an_hbm_row_is_refused(tmp_path):
    """A Tiers sheet with only the DRAM and SSD rows (the tiers being bought): the old code nested
    them from capacity 0, so this trace's hits were DRAM 10%, SSD 30% (hit 0.4, every hit loaded at
    2-10 GB/s) where the GPU's 30 GiB of free HBM alone holds all four blocks (0.6, loading nothing).
    Now a located error."""
    (tmp_path / "bailian.jsonl.gz").write_bytes(gzip.compress(("\n".join(_bailian()) + "\n").encode()))
    src = tmp_path / "in.xlsx"
    write_input_workbook(src, [MODEL], [GPU], [WL], {"trace_warmup": 0.0}, optional={"Tiers": TIERS[1:]})
    r = run_cli("validate", src, cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "Tiers!B2: the Tiers sheet has no hbm row" in r.stderr
    # with the hbm row at capacity 0, said on purpose, it plans
    ok = tmp_path / "ok.xlsx"
    write_input_workbook(ok, [MODEL], [GPU], [WL], {"trace_warmup": 0.0},
                         optional={"Tiers": [dict(TIERS[0], capacity_gib=0)] + TIERS[1:]})
    p = build_plan(ok)
    assert p.resolved["hit_target"].iat[0] == pytest.approx(H[3])   # DRAM 1 block + SSD 2 blocks = 3 blocks


# ------------------------------------------------------------------------------ a pool shared by two workloads
POOL = [dict(TIERS[0]), {"tier": "SSD", "kind": "ssd", "capacity_gib": 2 * GIB_BLOCK, "scope": "pool",
                         "read_gbps": 20, "cost_per_gib_month": 1000.0}]


@pytest.fixture(scope="module")
def pool_out(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pool4")
    with gzip.open(tmp / "bailian.jsonl.gz", "wt") as f:
        f.write("\n".join(_bailian()) + "\n")
    src = tmp / "in.xlsx"
    # hit_step 0.5: no test of this output reads the hit sweep (Sensitivity_Hit: 3 rows a workload, not 21)
    write_input_workbook(src, [MODEL], [GPU], [WL, dict(WL, workload="chat2")],
                         {"trace_warmup": 0.0, "hit_step": 0.5}, optional={"Tiers": POOL})
    out = tmp / "pool-out.xlsx"  # the names of one LibreOffice batch differ
    r = run_cli("run", src, "-o", out, "--no-memo", cwd=tmp)
    assert r.returncode == 0, r.stderr
    return out


def test_a_pool_shared_by_two_workloads_is_bought_once_in_the_total(pool_out):
    """Two workloads with the same trace on one SSD pool of 2 blocks (2/512 GiB at 1,000 a GiB-month =
    3.90625 a month, bought once). Each: without the pool hit 16/152, no load, chip 254.626 ms -> 5
    instances; with it hit 64/152, load 1,000 x S x (48/152) / 20 GB/s = 2.0696 ms, chip 239.244 ms -> 4.
    Each row charges the whole pool (its worth to that workload alone); the fleet total pays it once:
    tier cost 3.90625 (the old total 7.8125, the pool bought twice), net 2 x 1,460 - 3.90625, break-even
    2,920 / (2/512) = 747,520 a GiB-month (the old 373,760 over twice the capacity)."""
    without = _chip(H[1], 0.0)
    with_ = _chip(H[3], (H[3] - H[1]) / 20)
    assert (_instances(without), _instances(with_)) == (5, 4)
    rows = {r["workload"]: r for r in sheet_values(pool_out, "Tier_Value") if r.get("workload")}
    for w in ("chat", "chat2"):
        assert rows[w]["gpus_saved"] == 1 and rows[w]["tier_cost_per_month"] == pytest.approx(2 * GIB_BLOCK * 1000)
    tot = rows["Total (traced workloads)"]
    assert tot["gpus_saved"] == 2 and tot["gpu_cost_saved_per_month"] == pytest.approx(2920)
    assert tot["tier_cost_per_month"] == pytest.approx(2 * GIB_BLOCK * 1000)
    assert tot["net_saving_per_month"] == pytest.approx(2920 - 2 * GIB_BLOCK * 1000)
    assert tot["break_even_cost_per_gib_month"] == pytest.approx(2920 / (2 * GIB_BLOCK))


@pytest.fixture(scope="module")
def recalculated(tiers, pool_out, lo_profile, tmp_path_factory) -> dict:
    """The outputs of :func:`tiers` and :func:`pool_out` recalculated by ONE call
    (libreoffice.recalculate_many), for the two LibreOffice tests of this file."""
    from libreoffice import recalculate_many

    d = tmp_path_factory.mktemp("recalc4")
    done = recalculate_many([tiers[1], pool_out], d / "recalc", profile=lo_profile)
    return dict(zip(("tiers", "pool"), done))


@pytest.mark.libreoffice
def test_the_pool_total_recalculated_equals_stored(pool_out, recalculated):
    done = recalculated["pool"]
    stored, live = sheet_values(pool_out, "Tier_Value"), sheet_values(done, "Tier_Value")
    assert len(stored) == len(live) > 0
    for a, b in zip(stored, live):
        for k in a:
            assert same_value(a[k], b.get(k), rel=1e-9), (a.get("workload"), k, a[k], b.get(k))
