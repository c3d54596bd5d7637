"""The chunked one-pass LRU (planner.traffic.lru_pass.StackPass) against two simulations written here, on
many seeded random prefix-hash traces (issue 19: the pass rewritten for speed must give the same curve).

- ``mtf_curve``: the LRU stack simulated as a Python list, move-to-front, request by request. Just before a
  request each of its blocks has a stack position (``list.index``; absent: never seen); a cache of ``C``
  blocks holds the ``C`` most recently used, so the request hits its first ``j`` blocks while the running
  maximum of their positions stays below ``C`` (the continuous-prefix rule). That gives the hit tokens at
  every capacity at once, block tokens ``clip(input - i * block, 0, block)``.
- ``brute_lru`` (tests/test_traces.py): an ``OrderedDict`` cache of a given capacity evicting its least
  recently used block, at a few capacities, as a second, independent check of the first.

The traces are conversations over a prefix trie (so ids are prefix hashes, the pass's fast path with its
parent check): system prompts of 1-90 blocks shared by many requests (runs of reused blocks crossing
64-bit words and the 512-time superblocks of the marks), turns that extend a conversation, restarts,
partial last blocks, blocks past the input, empty requests. Each is fed in random chunkings (one request
to dozens a chunk), with the warm-up's cut known or found at the end (``requests=None``).
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from planner.traffic.lru_pass import StackPass
from planner.traffic.traces import hit_curve
from test_traces import brute_lru


def mtf_curve(requests, input_length, block_size, warmup):
    """Hit tokens at capacities 0..max (list) and the counted input tokens, by a move-to-front stack."""
    stack: list[int] = []                    # block ids, most recently used first
    first = int(len(requests) * warmup)
    events = []                              # (capacity from which a block hits, its tokens)
    total = 0
    for r, (ids, n) in enumerate(zip(requests, input_length)):
        if r >= first:
            total += n
            run = -1
            for i, b in enumerate(ids):
                if b not in stack:
                    break
                run = max(run, stack.index(b))
                tok = min(max(n - i * block_size, 0), block_size)
                events.append((run + 1, tok))    # cached at every capacity above the running max
        for b in reversed(ids):                  # deepest first: the first block ends most recent
            if b in stack:
                stack.remove(b)
            stack.insert(0, b)
    top = len(stack) + 2
    hits = [0] * (top + 1)
    for c, tok in events:
        hits[c] += tok
    for c in range(1, top + 1):
        hits[c] += hits[c - 1]
    return hits, total


def _trace(rng: random.Random, n: int, bs: int):
    """Prefix-hash requests (ids: trie nodes numbered as first seen) and their input lengths."""
    node: dict[tuple[int, int], int] = {}

    def child(parent: int, label: int) -> int:
        return node.setdefault((parent, label), len(node))

    prompts = []
    for p in range(rng.randint(1, 3)):           # shared system prompts, some long
        path, at = [], -1 - p
        for _ in range(rng.choice([1, 3, 20, 70])):
            at = child(at, 0)
            path.append(at)
        prompts.append(path)
    convs: list[list[int]] = []
    requests, inp = [], []
    for _ in range(n):
        u = rng.random()
        c = None
        if u < 0.04:
            path = []                                            # an empty request
        elif u < 0.35 or not convs:                              # a new conversation
            path = list(rng.choice(prompts))
            convs.append(path)
            c = len(convs) - 1
        else:                                                    # a next turn
            c = rng.randrange(len(convs))
            path = convs[c]
        if c is not None:
            for _ in range(rng.randint(0, 6)):
                path = path + [child(path[-1], rng.randrange(3))]
            convs[c] = path
        requests.append(path)
        k = len(path)
        shape = rng.random()
        if not k:
            inp.append(rng.randrange(bs + 1))
        elif shape < 0.6:
            inp.append(k * bs - rng.randrange(bs))               # the last block partial (or full)
        else:
            inp.append(max(0, (k - rng.randint(0, 3)) * bs - rng.randrange(bs)))  # blocks past the input
    return requests, inp


def _feed(requests, inp, bs, warmup, known: bool, rng: random.Random):
    sp = StackPass(len(requests) if known else None, warmup, bs, check_prefix=True)
    r = 0
    while r < len(requests):
        m = rng.choice([1, 2, 5, 13, 40])
        part = requests[r:r + m]
        sp.feed(np.array([len(x) for x in part], dtype=np.int64),
                np.array([b for x in part for b in x], dtype=np.int64),
                np.array(inp[r:r + m], dtype=np.int64))
        r += m
    return sp.result()


@pytest.mark.parametrize("seed", range(12))
def test_chunked_pass_equals_move_to_front_and_brute_force(seed):
    rng = random.Random(9000 + seed)
    n = rng.choice([30, 80, 200])
    bs = rng.choice([1, 4, 16])
    requests, inp = _trace(rng, n, bs)
    for warmup in (0.0, 0.5, rng.choice([0.2, 0.7])):
        hits, total = mtf_curve(requests, inp, bs, warmup)
        caps = np.arange(len(hits))
        want = [h / total if total else 0.0 for h in hits]
        for known in (True, False):
            r = _feed(requests, inp, bs, warmup, known, rng)
            assert r.total_tokens == total
            got = hit_curve(r, caps)
            assert got.tolist() == want, (seed, warmup, known)
        some = sorted({0, 1, 2, rng.randrange(len(hits)), rng.randrange(len(hits)), len(hits) - 1})
        assert [brute_lru(requests, inp, bs, c, warmup) for c in some] == [want[c] for c in some]


def test_block_dominance_count_against_quadratic_and_wavelet():
    """``dominance_sum`` (blocks) against the quadratic definition on small inputs and against the wavelet
    matrix (``count_smaller_before``, another method) across the block sizes' thresholds, with weights whose
    total passes 2^24 (the float64 products)."""
    from planner.traffic.dominance import dominance_sum
    from planner.traffic.lru_pass import count_smaller_before
    rng = np.random.default_rng(7)
    for n in (0, 1, 2, 15, 16, 17, 100, 700):
        v = rng.permutation(n)
        w = rng.integers(0, 9, n)
        assert dominance_sum(v, w).tolist() == [int(w[:i][v[:i] < v[i]].sum()) for i in range(n)]
    for n, top in ((1499, 50), (1501, 50), (5999, 50), (6001, 3), (9000, 5000), (61000, 20)):
        v = rng.permutation(n)
        w = rng.integers(0, top, n)
        assert np.array_equal(dominance_sum(v, w), count_smaller_before(v, w)), n
    v = rng.permutation(3000)
    w = rng.integers(0, 2**14, 3000)            # total about 2^24.5: the float64 products
    assert int(w.sum()) > 2**24
    assert np.array_equal(dominance_sum(v, w), count_smaller_before(v, w))
