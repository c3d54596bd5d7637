"""Prefix-reuse traces and the LRU hit ratio at every cache capacity, in one pass.

Formats (one JSON object a line, plain or gzip; detected per file from its first record):

- **Mooncake** (kvcache-ai/Mooncake, ``FAST25-release/README.md``): ``timestamp`` [ms],
  ``input_length``, ``output_length``, ``hash_ids`` of 512-token blocks.
- **Qwen Bailian** (Alibaba's ``qwen_traceA_blksz_16.jsonl``): ``chat_id``,
  ``parent_chat_id``, ``timestamp`` [s], ``input_length``, ``output_length``, ``type``,
  ``turn``, ``hash_ids`` of 16-token blocks.

The block size is a parameter (default 512 for Mooncake, 16 for Bailian).

Cache semantics (the rule of kvcache-ai's simulator, ``kvcache-ai/kvcache-blog``,
``packages/kvcache-simulator/src/kvcache_sim/{trace,plan,policies}.py``, which the
tests reproduce):

- A block is identified by its whole prefix: block ``i`` of a request is the path
  ``hash_ids[0..i]`` (a node of the prefix trie). In prefix-hash traces such as Mooncake's
  (every ``hash_id`` always follows the same parent) this is the same as the ``hash_id``
  itself; a repeated id inside one request (``[5, 5, 5]``) is three different blocks.
- Requests are served in file order (sort by timestamp first, as kvcache-ai's simulator asks).
  A request hits the **continuous cached prefix** of its blocks: counting stops at the first
  block not in the cache.
- Hit tokens of a request: ``min(j * block_size, input_length)`` for ``j`` hit blocks, i.e.
  block ``i`` weighs ``clip(input_length - i * block_size, 0, block_size)`` tokens (a partial
  last block counts its own tokens only; blocks beyond the input count 0). The hit ratio is
  hit tokens over input tokens of the counted requests.
- After a request is served all its blocks are in the cache, its first block the most
  recently used (blocks are touched deepest first), and the least recently used block is
  evicted while the cache holds more than its capacity (in blocks). So a cached block's
  prefix is always cached too, and the cache is the ``capacity`` most recently used blocks
  of the LRU stack: the hit ratio at every capacity follows from one pass over the stack
  distances (Mattson et al. 1970, "Evaluation techniques for storage hierarchies").
  This equals kvcache-ai's trie LRU (evict the least recently used leaf, never the current
  request's hit path) except when one request has more blocks than the whole cache: theirs
  then keeps ``capacity - 1`` of its blocks, this keeps ``capacity``.
- Warm-up: the first ``floor(n * warmup)`` requests fill the cache and are not counted
  (default 0.5, kvcache-ai's simulator: "hit rate is measured over the last 50% of requests").
- Capacity in blocks = ``floor(capacity_bytes / (block_size * kv_bytes_per_token))``.

The stack distance of each access comes from the count of reuse intervals nested inside its
own reuse interval (an offline dominance count done bit by bit over the whole array, as in
a wavelet matrix: ``O(accesses x log accesses)`` numpy work, no Python loop per block).
"""

from __future__ import annotations

import gzip
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .errors import InputError, Problem

MOONCAKE, BAILIAN = "mooncake", "bailian"
DEFAULT_BLOCK = {MOONCAKE: 512, BAILIAN: 16}
DEFAULT_WARMUP = 0.5  # kvcache-ai simulator: the last 50% of requests are measured
MAX_LISTED_LINES = 20  # located problems listed per trace file


@dataclass
class Trace:
    """One trace: per request arrays, and the blocks of all requests concatenated."""

    path: str
    fmt: str
    block_size: int
    input_length: np.ndarray      # [tokens], int64, one per request
    output_length: np.ndarray     # [tokens]
    timestamp_s: np.ndarray       # arrival [s] (Mooncake ms / 1000)
    starts: np.ndarray            # int64, n + 1 offsets of each request's blocks
    hashes: np.ndarray            # int64, the hash_ids of every request, concatenated
    notes: list[str] = field(default_factory=list)

    @property
    def requests(self) -> int:
        return len(self.input_length)

    @property
    def blocks(self) -> int:
        return len(self.hashes)


class TraceError(InputError):
    """A trace file that is not what it claims: every problem, each at ``file:line``."""


def _open(path: Path):
    with open(path, "rb") as f:
        magic = f.read(2)
    if magic == b"\x1f\x8b":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", errors="strict")
    return open(path, encoding="utf-8", errors="strict")


def _int_of(v) -> int | None:
    """A whole number (int, or a float with no fraction); None otherwise (bool is not a number)."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return None


def read_trace(path: str | Path, block_size: int | None = None, place: str | None = None) -> Trace:
    """Read a Mooncake or Bailian JSONL trace (plain or gzip).

    Parameters
    ----------
    path : the trace file
    block_size : tokens per hash block [tokens] (None: 512 for Mooncake, 16 for Bailian)
    place : where the trace was named (``Workloads!X5``), prefixed to a missing-file problem

    Raises
    ------
    TraceError : every malformed line at once, as ``file:line: what``
    """
    path = Path(path)
    name = path.name
    if not path.is_file():
        raise TraceError([Problem(place or str(path), f"trace file {str(path)!r} not found")])
    problems: list[Problem] = []
    inp: list[int] = []
    outl: list[int] = []
    ts: list[float] = []
    lens: list[int] = []
    flat: list[int] = []
    fmt = None
    try:
        fh = _open(path)
    except OSError as exc:
        raise TraceError([Problem(place or name, f"cannot open the trace: {exc}")]) from None
    with fh:
        try:
            for lineno, line in enumerate(fh, start=1):
                s = line.strip()
                if not s:
                    continue
                where = f"{name}:{lineno}"
                try:
                    rec = json.loads(s)
                except ValueError as exc:
                    problems.append(Problem(where, f"not a JSON object ({exc.msg} at column {exc.colno})"))
                    continue
                if not isinstance(rec, dict):
                    problems.append(Problem(where, "not a JSON object"))
                    continue
                if fmt is None:
                    fmt = BAILIAN if "chat_id" in rec else MOONCAKE
                bad = []
                n_in = _int_of(rec.get("input_length"))
                if n_in is None or n_in < 0:
                    bad.append(f"input_length {rec.get('input_length')!r} is not a whole number >= 0")
                n_out = rec.get("output_length", 0)
                n_out = _int_of(n_out if n_out is not None else 0)
                if n_out is None or n_out < 0:
                    bad.append(f"output_length {rec.get('output_length')!r} is not a whole number >= 0")
                t = rec.get("timestamp", 0)
                if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t):
                    bad.append(f"timestamp {t!r} is not a number")
                h = rec.get("hash_ids")
                if not isinstance(h, list):
                    bad.append("hash_ids is missing or not a list" if h is None else
                               f"hash_ids {str(h)[:40]!r} is not a list")
                    h = []
                elif h and not all(type(x) is int and x >= 0 for x in h):
                    first = next(x for x in h if not (type(x) is int and x >= 0))
                    bad.append(f"hash_ids holds {first!r}: every hash id must be a whole number >= 0")
                if bad:
                    problems.append(Problem(where, "; ".join(bad)))
                    continue
                inp.append(n_in)
                outl.append(n_out)
                ts.append(float(t) / (1000.0 if fmt == MOONCAKE else 1.0))
                lens.append(len(h))
                flat.extend(h)
        except UnicodeDecodeError as exc:
            problems.append(Problem(name, f"not UTF-8 text ({exc.reason}): is it a JSONL trace?"))
        except (OSError, EOFError) as exc:  # a damaged gzip stream
            problems.append(Problem(name, f"cannot be read to the end ({exc})"))
    if not problems and not inp:
        problems.append(Problem(name, "holds no requests"))
    if problems:
        rest = len(problems) - MAX_LISTED_LINES
        shown = problems[:MAX_LISTED_LINES]
        if rest > 0:
            shown.append(Problem(name, f"... and {rest} more malformed line(s)"))
        raise TraceError(shown)
    fmt = fmt or MOONCAKE
    bs = int(block_size) if block_size else DEFAULT_BLOCK[fmt]
    starts = np.zeros(len(lens) + 1, dtype=np.int64)
    np.cumsum(np.asarray(lens, dtype=np.int64), out=starts[1:])
    tr = Trace(str(path), fmt, bs, np.asarray(inp, dtype=np.int64), np.asarray(outl, dtype=np.int64),
               np.asarray(ts, dtype=float), starts, np.asarray(flat, dtype=np.int64))
    _check_lengths(tr)
    return tr


def _check_lengths(tr: Trace) -> None:
    """Notes (not errors) when the blocks do not cover the input as the block size says."""
    need = -(-tr.input_length // tr.block_size)
    have = np.diff(tr.starts)
    more = int(np.count_nonzero(have > need))
    short = int(np.count_nonzero(have < need - 1))
    if more:
        tr.notes.append(f"{Path(tr.path).name}: {more} of {tr.requests} requests have more hash blocks than "
                        f"input_length / {tr.block_size} tokens needs (the extra blocks count 0 tokens): "
                        f"is the block size right?")
    if short:
        tr.notes.append(f"{Path(tr.path).name}: {short} of {tr.requests} requests have hash blocks for less "
                        f"than their input (the rest counts as missed): is the block size right?")
    if tr.requests > 1 and np.any(np.diff(tr.timestamp_s) < 0):
        tr.notes.append(f"{Path(tr.path).name}: timestamps are not in order; requests are replayed in file "
                        f"order")


def make_trace(requests, block_size: int, input_length=None, fmt: str = MOONCAKE) -> Trace:
    """A trace from lists of hash ids (tests and the reuse model); ``input_length`` default: full blocks."""
    lens = np.array([len(r) for r in requests], dtype=np.int64)
    starts = np.zeros(len(lens) + 1, dtype=np.int64)
    np.cumsum(lens, out=starts[1:])
    flat = np.fromiter((x for r in requests for x in r), dtype=np.int64, count=int(starts[-1]))
    n_in = lens * block_size if input_length is None else np.asarray(input_length, dtype=np.int64)
    n = len(lens)
    return Trace("<memory>", fmt, int(block_size), n_in, np.zeros(n, dtype=np.int64),
                 np.arange(n, dtype=float), starts, flat)


# --------------------------------------------------------------------------- prefix trie
def prefix_nodes(starts: np.ndarray, hashes: np.ndarray) -> np.ndarray:
    """Node id of every block in the prefix trie: equal ids = equal whole prefixes.

    Depth by depth: the node of block ``i`` is the pair (node of block ``i - 1``, hash id),
    numbered by ``np.unique``. Exact (no hashing of prefixes), ``O(blocks log blocks)``.
    """
    total = len(hashes)
    node = np.empty(total, dtype=np.int64)
    if total == 0:
        return node
    lens = np.diff(starts)
    req = np.repeat(np.arange(len(lens)), lens)
    depth = np.arange(total, dtype=np.int64) - starts[req]
    _, dense = np.unique(hashes, return_inverse=True)
    dense = dense.astype(np.int64)
    width = int(dense.max()) + 1
    order = np.argsort(depth, kind="stable")
    bounds = np.searchsorted(depth[order], np.arange(int(depth.max()) + 2))
    next_id = 0
    for d in range(len(bounds) - 1):
        idx = order[bounds[d]:bounds[d + 1]]
        key = dense[idx] if d == 0 else node[idx - 1] * width + dense[idx]
        uniq, inv = np.unique(key, return_inverse=True)
        node[idx] = inv + next_id
        next_id += len(uniq)
    return node


# --------------------------------------------------------------------------- stack distances
def count_smaller_before(v: np.ndarray) -> np.ndarray:
    """``out[i] = #{j < i : v[j] < v[i]}`` for non-negative integers, in ``O(n log max v)``.

    Bit by bit from the top (a wavelet-matrix pass): at bit ``b`` the elements sharing the
    bits above ``b`` are contiguous and in their original order; each element whose bit is 1
    counts the earlier elements of its group whose bit is 0 (those are smaller, first
    differing at ``b``); then a stable partition by the bit.
    """
    n = len(v)
    out = np.zeros(n, dtype=np.int64)
    if n == 0:
        return out
    dt = np.int32 if n < 2**31 and int(v.max()) < 2**31 else np.int64
    cur = np.asarray(v, dtype=dt).copy()
    order = np.arange(n, dtype=dt)
    for b in range(int(cur.max()).bit_length() - 1, -1, -1):
        ones = ((cur >> b) & 1).astype(bool)
        grp = cur >> (b + 1)
        zero_cum = np.cumsum(~ones, dtype=np.int64)        # zeros up to and including i
        start = np.empty(n, dtype=bool)
        start[0] = True
        np.not_equal(grp[1:], grp[:-1], out=start[1:])
        before_start = (zero_cum - ~ones)[start]           # zeros before each group's start
        gidx = np.cumsum(start) - 1
        before = zero_cum - before_start[gidx]             # zeros of the group up to i
        out[order[ones]] += before[ones]
        order = np.concatenate((order[~ones], order[ones]))
        cur = np.concatenate((cur[~ones], cur[ones]))
    return out


@dataclass
class Reuse:
    """Per block of the trace: its LRU rank before its request (inf when first seen) and weight."""

    rank: np.ndarray       # float: blocks more recently used than it before its request; inf: cold
    tokens: np.ndarray     # int64: tokens the block weighs in its request
    measured: np.ndarray   # bool: its request is counted (after the warm-up)
    total_tokens: int      # input tokens of the counted requests
    warmup_requests: int
    warmup_blocks: int     # distinct blocks seen during the warm-up (capacity filled below it)
    unique_blocks: int
    requests: int
    block_size: int


def reuse(tr: Trace, warmup: float = DEFAULT_WARMUP) -> Reuse:
    """The one pass: each block's LRU stack rank just before its request is served.

    The accesses are the requests in order, each request's blocks deepest first. For an
    access at time ``t`` whose block was last used at ``p``, the stack distance is
    ``t - p - 1`` minus the reuse intervals nested inside ``(p, t)``. Before the request,
    the block's rank is that distance less the deeper blocks of the same request already
    touched (none of them was used after ``p``: using a block uses its whole prefix).
    """
    n = tr.requests
    lens = np.diff(tr.starts)
    total = tr.blocks
    node = prefix_nodes(tr.starts, tr.hashes)
    req = np.repeat(np.arange(n), lens)
    pos = np.arange(total, dtype=np.int64)
    blk = tr.starts[req] + tr.starts[req + 1] - 1 - pos      # access pos touches this block
    depth_from_end = pos - tr.starts[req]                    # deeper blocks touched before it
    seq = node[blk]
    order = np.argsort(seq, kind="stable")
    same = np.zeros(total, dtype=bool)
    if total > 1:
        same[1:] = seq[order[1:]] == seq[order[:-1]]
    prev = np.full(total, -1, dtype=np.int64)
    prev[order[1:][same[1:]]] = order[:-1][same[1:]]
    t = np.flatnonzero(prev >= 0)
    p = prev[t]
    by_left = np.argsort(p, kind="stable")
    right = t[by_left]
    nested = np.empty(len(t), dtype=np.int64)
    nested[by_left] = count_smaller_before(right[::-1])[::-1]  # later-left intervals ending earlier
    rank_seq = np.full(total, np.inf)
    rank_seq[t] = (t - p - 1 - nested) - depth_from_end[t]
    rank = np.empty(total)
    rank[blk] = rank_seq
    # tokens of block i of its request: clip(input - i*bs, 0, bs)
    i_in_req = np.arange(total, dtype=np.int64) - tr.starts[req]
    tokens = np.clip(tr.input_length[req] - i_in_req * tr.block_size, 0, tr.block_size)
    w = int(math.floor(n * warmup)) if n else 0
    w = max(0, min(n, w))
    measured = req >= w
    warm_blocks = int(len(np.unique(node[:tr.starts[w]]))) if w else 0
    return Reuse(rank, tokens, measured, int(tr.input_length[w:].sum()), w, warm_blocks,
                 int(node.max()) + 1 if total else 0, n, tr.block_size)


def hit_curve(r: Reuse, capacity_blocks) -> np.ndarray:
    """LRU hit ratio [fraction of input tokens] at each capacity [blocks] (``inf`` allowed)."""
    caps = np.asarray(capacity_blocks, dtype=float)
    if r.total_tokens <= 0:
        return np.zeros(caps.shape)
    sel = r.measured & np.isfinite(r.rank)
    ranks = r.rank[sel]
    order = np.argsort(ranks, kind="stable")
    ranks = ranks[order]
    cum = np.concatenate(([0], np.cumsum(r.tokens[sel][order])))
    k = np.searchsorted(ranks, caps, side="left")  # blocks with rank < capacity are cached
    return cum[k] / r.total_tokens


def capacity_blocks(capacity_bytes, block_size: int, kv_bytes_per_token) -> np.ndarray:
    """``floor(capacity_bytes / (block_size * kv_bytes_per_token))`` [blocks]."""
    cap = np.asarray(capacity_bytes, dtype=float)
    per_block = float(block_size) * np.asarray(kv_bytes_per_token, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.isinf(cap), np.inf, np.floor(cap / per_block + 1e-9))


def tier_hits(r: Reuse, capacities_blocks) -> np.ndarray:
    """Hit ratio served by each of nested tiers (HBM, then HBM+DRAM, ...) [fraction each].

    ``capacities_blocks`` are the tiers' own capacities in order of speed; an exclusive
    hierarchy that demotes the LRU victim of each tier to the next behaves as one LRU of
    the summed capacity whose first ``c_1`` ranks sit in tier 1, the next ``c_2`` in tier 2...
    So tier ``t`` serves ``hit(c_1 + ... + c_t) - hit(c_1 + ... + c_{t-1})``.
    """
    cum = np.cumsum(np.asarray(capacities_blocks, dtype=float))
    h = hit_curve(r, cum)
    return np.diff(np.concatenate(([0.0], h)))
