"""The trace reader and the one-pass LRU hit curve (planner.traffic.traces) against independent references.

- A brute-force LRU written here, request by request and block by block over an
  ``OrderedDict`` keyed by each block's whole prefix, must equal the one-pass curve
  exactly, at every capacity from 0 to beyond everything, on adversarial small traces
  (repeated ids inside a request, requests shorter than a block, empty requests, partial
  last blocks, one request longer than the cache) and on random ones.
- The public Mooncake FAST'25 conversation trace (kvcache-ai/Mooncake, Apache-2.0, shipped
  as tests/data/mooncake_conversation_trace.jsonl.gz): its infinite-cache ceiling against the
  authors' published "cache ratio 40%" (Qin et al., FAST'25, Table 2), and its curve
  against kvcache-ai's own simulator (kvcache-ai/kvcache-blog,
  packages/kvcache-simulator, commit 9753288, LRU policy, python backend, warm-up 0.5),
  run outside this repository; its numbers are pasted below.
"""

from __future__ import annotations

import gzip
import json
import random
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pytest

from planner.traffic import traces as T

DATA = Path(__file__).parent / "data"
MOONCAKE = DATA / "mooncake_conversation_trace.jsonl.gz"


def brute_lru(requests, input_length, block_size, capacity, warmup):
    """LRU over prefix-identified blocks, simulated block by block (independent of planner.traffic.traces).

    Per request: walk its blocks from the first; count hits until the first block not cached;
    hit tokens are min(hits * block_size, input_length). Then touch every block of the
    request, deepest first, so the first block ends most recently used; evict the least
    recently used while over capacity.
    """
    cache: OrderedDict = OrderedDict()
    hit = total = 0
    first_counted = int(len(requests) * warmup)
    for r, (ids, n) in enumerate(zip(requests, input_length)):
        keys = [tuple(ids[:i + 1]) for i in range(len(ids))]
        j = 0
        while j < len(keys) and keys[j] in cache:
            j += 1
        if r >= first_counted:
            hit += min(j * block_size, n)
            total += n
        for k in reversed(keys):
            cache[k] = True
            cache.move_to_end(k)
            while len(cache) > capacity:
                cache.popitem(last=False)
    return hit / total if total else 0.0


def _check(requests, input_length, block_size, warmup, caps=None):
    if input_length is None:
        input_length = [len(x) * block_size for x in requests]
    tr = T.make_trace(requests, block_size, input_length)
    r = T.reuse(tr, warmup)
    every = sum(len(x) for x in requests) + 2
    caps = list(range(0, every + 1)) if caps is None else caps
    got = T.hit_curve(r, caps + [np.inf])
    want = [brute_lru(requests, input_length, block_size, c, warmup) for c in caps + [10**9]]
    assert got.tolist() == want  # exactly: both are sums of the same integers over one total
    for chunk in (1, 2, 3, 7):  # the chunked pass: chunks of one request up to a few, cut anywhere
        rc = T.reuse(tr, warmup, chunk=chunk)
        assert T.hit_curve(rc, caps + [np.inf]).tolist() == want, chunk
        assert (rc.unique_blocks, rc.warmup_blocks) == (r.unique_blocks, r.warmup_blocks)
    # distinct blocks (whole prefixes) of the whole trace and of the warm-up, counted directly
    prefixes = [{tuple(x[:i + 1]) for i in range(len(x))} for x in requests]
    w = int(len(requests) * warmup)
    assert r.unique_blocks == len(set().union(*prefixes))
    assert r.warmup_blocks == len(set().union(*prefixes[:w]))


ADVERSARIAL = {
    # repeated id inside one request: [5, 5, 5] is three blocks (prefixes (5,), (5,5), (5,5,5))
    "repeated-in-request": ([[5, 5, 5], [5, 5], [5, 5, 5, 5], [5]], None, 4),
    # requests shorter than a block (partial block counts its own tokens) and an empty one
    "shorter-than-block": ([[1], [1], [1, 2], [], [1]], [3, 7, 17, 0, 16], 16),
    # same id under different parents is a different block; a middle miss stops the prefix
    "id-under-other-parent": ([[1, 2, 3], [9, 2, 3], [1, 2, 3], [1, 7, 3], [1, 2, 3]], None, 2),
    # one request longer than the whole cache at small capacities
    "longer-than-cache": ([[1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 3, 4, 5, 6, 7, 8], [1, 2], [1, 2, 3]], None, 1),
    # the last block partial; input shorter than the hashed blocks (extra blocks count 0 tokens)
    "partial-and-extra": ([[1, 2, 3], [1, 2, 3], [1, 2], [1, 2, 3, 4]], [1100, 1025, 600, 1030], 512),
    # cyclic scan bigger than the cache: LRU's worst case (0 hits until it all fits)
    "cyclic-scan": ([[1, 2], [3, 4], [5, 6], [1, 2], [3, 4], [5, 6], [1, 2], [3, 4]], None, 8),
}


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
@pytest.mark.parametrize("warmup", [0.0, 0.5])
def test_one_pass_equals_brute_force_on_adversarial_traces(name, warmup):
    requests, inp, bs = ADVERSARIAL[name]
    _check(requests, inp, bs, warmup)


def test_one_pass_equals_brute_force_on_random_traces():
    rng = random.Random(20261201)
    for _ in range(150):
        n = rng.randint(1, 25)
        bs = rng.choice([1, 3, 16])
        alphabet = rng.randint(1, 5)
        reqs, inp = [], []
        for _ in range(n):
            k = rng.randint(0, 7)
            reqs.append([rng.randrange(alphabet) for _ in range(k)])
            inp.append(max(0, k * bs - rng.randrange(bs)) if k else rng.randrange(bs + 1))
        _check(reqs, inp, bs, rng.choice([0.0, 0.25, 0.5]))


def test_hand_calculated_curve():
    """Three requests of 512-token blocks, no warm-up, worked by hand.

    r0 [a b], 1000 tokens: cold.            stack after: a b
    r1 [a c],  600 tokens: a hit (rank 0).  stack after: a c b
    r2 [a b], 1024 tokens: a rank 0, b rank 2 (c, a... : a and c were used after b).
    Capacity 1: r1 hits 512, r2 hits 512 -> 1024 / 2624. Capacity 3: r2 hits 1024 ->
    (512 + 1024) / 2624. Capacity 0: nothing.
    """
    tr = T.make_trace([[1, 2], [1, 3], [1, 2]], 512, [1000, 600, 1024])
    got = T.hit_curve(T.reuse(tr, 0.0), [0, 1, 2, 3, np.inf])
    assert got.tolist() == [0.0, 1024 / 2624, 1024 / 2624, 1536 / 2624, 1536 / 2624]


def test_tier_split_sums_to_the_whole_and_follows_the_stack():
    tr = T.make_trace([[1, 2], [1, 3], [1, 2]], 512, [1000, 600, 1024])
    r = T.reuse(tr, 0.0)
    h = T.tier_hits(r, [1, 2, np.inf])  # tier 1 holds rank 0, tier 2 ranks 1-2, tier 3 the rest
    assert h.tolist() == pytest.approx([1024 / 2624, 512 / 2624, 0.0], abs=1e-15)
    assert h.sum() == pytest.approx(T.hit_curve(r, [np.inf])[0], abs=1e-15)


def test_capacity_in_blocks():
    # 2 TiB at 327,680 B/token (70B, tp 1) in 512-token blocks: 2^41 / (512 * 327680) = 13107.2 -> 13107
    assert T.capacity_blocks(2 * 2**40, 512, 327680) == 13107
    assert T.capacity_blocks(0, 512, 327680) == 0
    assert np.isinf(T.capacity_blocks(np.inf, 512, 327680))


def test_mooncake_conversation_trace_against_the_paper_and_kvcache_ai():
    tr = T.read_trace(MOONCAKE)
    assert (tr.fmt, tr.block_size, tr.requests, tr.blocks) == ("mooncake", 512, 12031, 288500)
    # Table 2 of the paper: average input length 12,035 tokens
    assert round(tr.input_length.mean()) == 12035
    r = T.reuse(tr)  # warm-up 0.5, kvcache-ai's rule
    ceiling = T.hit_curve(r, [np.inf])[0]
    assert abs(ceiling - 0.40) < 0.01  # published "cache ratio 40%"
    # kvcache-ai's simulator (LRU, warm-up 0.5, 512-token blocks) at 70B-tp1 KV (327,680 B/token):
    # capacity GiB -> blocks -> hitRate, from
    #   simulate_trie_policy(build_execution_plan(parse_trace_file(f, block_size=512), 0.5), cap, optimal=False)
    # and simulate_ceiling(...) = 0.3981127342350043
    published = {128: (819, 0.046491), 1024: (6553, 0.153046), 2048: (13107, 0.250238),
                 8192: (52428, 0.377984)}
    for gib, (blocks, rate) in published.items():
        cap = T.capacity_blocks(gib * 2**30, 512, 327680)
        assert cap == blocks
        assert abs(T.hit_curve(r, [cap])[0] - rate) < 5e-7
    assert abs(ceiling - 0.3981127342350043) < 1e-12
    # small caches, in blocks (same simulator): equal from 2 blocks up; at 1 block its trie LRU
    # keeps capacity - 1 = 0 blocks of a longer request and reports 0.0 (the one stated difference)
    for blocks, rate in {2: 0.045353, 64: 0.045353, 128: 0.045359, 256: 0.045392, 512: 0.045433}.items():
        assert abs(T.hit_curve(r, [blocks])[0] - rate) < 5e-7


def _write(path: Path, lines, gz=False):
    text = "\n".join(lines) + "\n"
    if gz:
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(text)
    else:
        path.write_text(text, encoding="utf-8")


def test_bailian_format_gzip_and_plain_read_the_same(tmp_path):
    recs = [{"chat_id": 1, "parent_chat_id": -1, "timestamp": 0.5, "input_length": 40, "output_length": 8,
             "type": "text", "turn": 1, "hash_ids": [7, 8, 9]},
            {"chat_id": 2, "parent_chat_id": 1, "timestamp": 3.0, "input_length": 70, "output_length": 5,
             "type": "text", "turn": 2, "hash_ids": [7, 8, 9, 10, 11]}]
    lines = [json.dumps(x) for x in recs]
    _write(tmp_path / "b.jsonl", lines)
    _write(tmp_path / "b.jsonl.gz", lines, gz=True)
    a, b = T.read_trace(tmp_path / "b.jsonl"), T.read_trace(tmp_path / "b.jsonl.gz")
    assert a.fmt == b.fmt == "bailian" and a.block_size == 16  # Bailian's 16-token blocks
    assert a.timestamp_s.tolist() == [0.5, 3.0]  # seconds, as written
    assert a.hashes.tolist() == b.hashes.tolist() == [7, 8, 9, 7, 8, 9, 10, 11]
    # request 2 hits 3 blocks = 48 of 70 tokens (no warm-up): 48 / 110 overall
    assert T.hit_curve(T.reuse(a, 0.0), [np.inf])[0] == 48 / 110


def test_malformed_lines_are_located_all_at_once(tmp_path):
    lines = ['{"timestamp": 0, "input_length": 600, "output_length": 3, "hash_ids": [0, 1]}',
             '{"timestamp": 5, "input_length": "x", "output_length": 3, "hash_ids": [0]}',
             'not json',
             '',
             '{"timestamp": 9, "input_length": 10, "output_length": 3, "hash_ids": [0, -4]}',
             '[1, 2]',
             '{"timestamp": 9, "input_length": 10, "output_length": 3}']
    _write(tmp_path / "bad.jsonl", lines)
    with pytest.raises(T.TraceError) as e:
        T.read_trace(tmp_path / "bad.jsonl")
    got = [str(p) for p in e.value.problems]
    assert [g.split(": ")[0] for g in got] == [f"bad.jsonl line {n}" for n in (2, 3, 5, 6, 7)]
    assert "input_length 'x'" in got[0] and "-4" in got[2] and "hash_ids is missing" in got[4]


def test_missing_empty_and_binary_files(tmp_path):
    with pytest.raises(T.TraceError, match="not found"):
        T.read_trace(tmp_path / "nope.jsonl", place="Workloads!X2")
    (tmp_path / "empty.jsonl").write_text("\n\n")
    with pytest.raises(T.TraceError, match="holds no requests"):
        T.read_trace(tmp_path / "empty.jsonl")
    (tmp_path / "bin.jsonl").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(T.TraceError, match="not UTF-8"):
        T.read_trace(tmp_path / "bin.jsonl")


def test_wrong_block_size_is_noted(tmp_path):
    # a 16-token-block trace read as 512-token blocks: far more blocks than the input needs
    lines = [json.dumps({"timestamp": i, "input_length": 64, "output_length": 1, "hash_ids": [1, 2, 3, 4]})
             for i in range(3)]
    _write(tmp_path / "t.jsonl", lines)
    tr = T.read_trace(tmp_path / "t.jsonl", block_size=512)
    assert any("more hash blocks" in n for n in tr.notes)
    assert not T.read_trace(tmp_path / "t.jsonl", block_size=16).notes


def test_count_smaller_before_against_quadratic():
    rng = np.random.default_rng(7)
    for n in (0, 1, 2, 17, 300):
        v = rng.integers(0, 50, n)
        want = [int(np.sum(v[:i] < v[i])) for i in range(n)]
        assert T.count_smaller_before(v).tolist() == want


def test_mooncake_trace_against_lmcache_cache_simulator():
    """Against a second simulator: LMCache's cache simulator (LMCache/LMCache, Apache-2.0,
    ``lmcache/tools/cache_simulator/simulator.py`` at commit 0967a0453c1afb02dd139cf9be674a80f9a2ba4b,
    ``simulate(..., fast=True)`` over ``lru_cache.LRUCacheFast``), run outside this repository on
    the shipped trace; its numbers are pasted below.

    Its rules differ from ours in three ways, so it was fed where they coincide:
    - it hashes full chunks only and counts the tail tokens as a miss: each request was given
      ``chunk_hashes = hash_ids[:input_length // 512]`` and ``seq_len = 512 * (input_length // 512)``,
      and ours is computed on the same truncated trace;
    - it has no warm-up: its second-half ratio is (hits of all - hits of the first half) / (tokens of
      all - tokens of the first half), two runs of its deterministic replay, our warm-up 0.5;
    - it touches a request's chunks first to last (the first chunk ends least recently used),
      ours deepest first (kvcache-ai's trie LRU, and vLLM's prefix cache, which frees a request's
      blocks in reverse so the tail is evicted first). This one is not removable: when the cache is
      smaller than a request its LRU evicts the request's own first chunks, and its hit ratio
      falls (1-64 blocks below); from 256 blocks up the two agree within 0.001, and exactly
      where no request's chunks straddle the eviction point (256 and 1024 blocks, 8 TiB, infinite).
    Capacity: 327,680 B/token x 512 tokens a chunk; GiB -> chunks by floor, as ours.
    """
    tr = T.read_trace(MOONCAKE)
    full = tr.input_length // 512
    reqs = [tr.hashes[tr.starts[i]:tr.starts[i] + full[i]].tolist() for i in range(tr.requests)]
    r = T.reuse(T.make_trace(reqs, 512, full * 512), 0.5)
    # capacity [chunks]: (LMCache second-half token hit rate, |ours - LMCache| allowed)
    lmcache = {819: (0.047594, 1e-4),       # 128 GiB (ours 0.047640)
               6553: (0.165595, 5e-4),      # 1 TiB (ours 0.165865)
               13107: (0.263810, 1e-3),     # 2 TiB (ours 0.264767)
               52428: (0.390081, 1e-6),     # 8 TiB
               256: (0.046490, 1e-6), 1024: (0.048637, 1e-6),
               10**9: (0.407488, 1e-6)}     # every chunk fits: the ceiling of full chunks
    for cap, (rate, tol) in lmcache.items():
        assert abs(T.hit_curve(r, [cap])[0] - rate) <= tol, cap
    # below a request's size its first-to-last touch order evicts its own head: it hits less
    for cap, rate in {1: 0.005290, 2: 0.008904, 16: 0.027631, 64: 0.043686}.items():
        ours = T.hit_curve(r, [cap])[0]
        assert abs(ours - 0.046459) < 1e-6 and ours > rate
