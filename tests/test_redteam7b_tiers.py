"""Issue 19, red team 7b: a tier whose capacity is not a whole number of KV blocks.

A cache holds whole blocks (README "Capacity in blocks = floor(bytes / (block_size x KV bytes per
token))"), but a tier's hit was read from the stored curve by linear interpolation at its capacity in
GiB, so 1.5 blocks of DRAM hit half-way between 1 and 2 blocks: a hit no LRU of any size gives. It
matters wherever a block is not a power-of-two fraction of a GiB: Llama-3.1-70B's 327,680 B of KV
per token in Mooncake's 512-token blocks is 160 MiB a block, 6.4 blocks a GiB. Each test fails on main
8a63f7a.

The trace and tiers are test_kv_tiers's (Llama-3.1-8B, S = 131,072 B, 16-token blocks: 2 MiB = 1/512
GiB a block; requests [1 2], [1 3], [1 2] of 32 tokens, no warm-up): H(1 block) = H(2) = 1/3,
H(3) = 1/2.
"""

from __future__ import annotations

import json
from collections import OrderedDict

import openpyxl
import pytest

from conftest import value_book
from planner.plan.build import build_plan
from planner.workbook.writer import write_output
from test_kv_tiers import TIERS, make


def brute_lru(requests, block_size, capacity):
    """LRU hit ratio, request by request and block by block (written for this test): a block is its
    prefix; a request counts its continuous cached prefix, min(blocks x size, input); then all its
    blocks are touched deepest first and the least recently used evicted down to ``capacity``."""
    cache, hit, total = OrderedDict(), 0, 0
    for n_in, ids in requests:
        keys = [tuple(ids[:k + 1]) for k in range(len(ids))]
        j = 0
        while j < len(keys) and keys[j] in cache:
            j += 1
        hit, total = hit + min(j * block_size, n_in), total + n_in
        for k in reversed(keys):
            cache.pop(k, None)
            cache[k] = True
        while len(cache) > capacity:
            cache.popitem(last=False)
    return hit / total


REQS = [(32, [1, 2]), (32, [1, 3]), (32, [1, 2])]


@pytest.mark.parametrize("dram_blocks,held", [(1.5, 1), (1.999, 1), (2.0, 2), (2.75, 2)])
def test_a_tier_holds_whole_blocks(tmp_path, dram_blocks, held):
    plan = build_plan(make(tmp_path, tiers=[TIERS[0], dict(TIERS[1], capacity_gib=dram_blocks / 512)]))
    w = plan.input.kv_tiers.workloads[0]
    # HBM holds 1 block, DRAM `held` whole blocks: one LRU of 1 + held blocks (1/3 at 2 blocks, 1/2 at 3)
    want = brute_lru(REQS, 16, 1 + held)
    assert want == pytest.approx({1: 1 / 3, 2: 1 / 2}[held], abs=1e-15)
    assert plan.resolved["hit_target"].iat[0] == pytest.approx(want, abs=1e-12)   # 1.5 blocks: was 5/12
    assert w.hits.tolist() == pytest.approx([1 / 3, want - 1 / 3], abs=1e-12)
    # the DRAM share loads at 10 GB/s: (h_dram) x 1,000 tokens x 131,072 B / 10 GB/s
    assert plan.results["load_ms"].iat[0] == pytest.approx((want - 1 / 3) * 1000 * 131072 / 10e9 * 1e3, abs=1e-12)


@pytest.mark.libreoffice
def test_live_edit_to_part_of_a_block_recalculates_to_the_whole_blocks(tmp_path, recalc):
    # hit_step 0.5: the test reads Tier_Hits, Resolved and Tier_Worth, not the hit sweep (3 rows, not 21)
    src = make(tmp_path, settings={"hit_step": 0.5})
    out = tmp_path / "out.xlsx"
    write_output(build_plan(src), out)
    wb = openpyxl.load_workbook(out)
    ws = wb["Tiers"]
    head = {str(c.value).split(" [")[0]: c.column for c in ws[1]}
    ws.cell(3, head["capacity_gib"]).value = 1.5 / 512     # DRAM: 1.5 blocks, so 1 held
    edited = tmp_path / "edited.xlsx"
    wb.save(edited)
    live = recalc(edited)
    th = value_book(live, "Tier_Hits")["Tier_Hits"]
    h = {str(c.value).split(" [")[0]: j for j, c in enumerate(next(th.iter_rows(max_row=1)))}
    row = next(th.iter_rows(min_row=2, max_row=2, values_only=True))
    # by hand (the brute force at 2 blocks): 1/3 in all, all of it in HBM, none in DRAM (was 5/12, 1/12)
    assert brute_lru(REQS, 16, 2) == pytest.approx(1 / 3, abs=1e-15)
    assert row[h["hit"]] == pytest.approx(1 / 3, abs=1e-12)
    assert row[h["t2_hit"]] == pytest.approx(0.0, abs=1e-12)
    res = value_book(live, "Resolved")["Resolved"]
    rh = {str(c.value).split(" [")[0]: j for j, c in enumerate(next(res.iter_rows(max_row=1)))}
    assert next(res.iter_rows(min_row=2, max_row=2, values_only=True))[rh["hit_target"]] == pytest.approx(1 / 3, abs=1e-12)
    # and the Tier_Worth sweep reads whole blocks too: its row at the declared multiplier equals a fresh run
    fresh_dir = tmp_path / "fresh"
    fresh_dir.mkdir()
    fresh = build_plan(make(fresh_dir, tiers=[TIERS[0], dict(TIERS[1], capacity_gib=1.5 / 512)]))
    assert fresh.resolved["hit_target"].iat[0] == pytest.approx(1 / 3, abs=1e-12)
    from planner.workbook.tier_worth import worth_of
    (_w, sw, _val), = worth_of(fresh)
    tw = value_book(live, "Tier_Worth")["Tier_Worth"]
    th2 = {str(c.value).split(" [")[0]: j for j, c in enumerate(next(tw.iter_rows(max_row=1)))}
    got = [r[th2["hit"]] for r in tw.iter_rows(min_row=2, max_row=1 + len(sw["hit"]), values_only=True)]
    assert got == pytest.approx(list(sw["hit"]), abs=1e-12)


def test_tier_hits_says_kind_and_scope_are_read_when_the_planner_ran(tmp_path):
    # an output's Tiers scope edited instance -> node kept the instance cost (20 instances x 25/512 GiB x 3,
    # 2.93 a month, where a fresh run charges 3 nodes, 0.44): the units and the nesting are written for the
    # kind and scope of the run. The sheet says so (it did not), beside the live capacity, rate and price
    out = tmp_path / "out.xlsx"
    write_output(build_plan(make(tmp_path)), out)
    ws = value_book(out, "Tier_Hits")["Tier_Hits"]
    text = " ".join(str(v) for row in ws.iter_rows(values_only=True) for v in row if isinstance(v, str))
    assert "t2 = DRAM (dram, scope instance)" in text
    assert ("are as when the planner ran: re-run it after changing a kind or a scope in Tiers (capacity_gib, "
            "read_gbps and cost_per_gib_month are live)") in text
