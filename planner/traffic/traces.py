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
import itertools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from planner.core.errors import InputError, Problem
from planner.core.places import Place

MOONCAKE, BAILIAN = "mooncake", "bailian"
DEFAULT_BLOCK = {MOONCAKE: 512, BAILIAN: 16}
DEFAULT_WARMUP = 0.5  # kvcache-ai simulator: the last 50% of requests are measured
MAX_LISTED_LINES = 20  # located problems listed per trace file
FAST_CHUNK = 20000  # lines parsed per json.loads call


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


def _chunks(path: Path):
    """The file's lines, FAST_CHUNK at a time."""
    with _open(path) as fh:
        while chunk := list(itertools.islice(fh, FAST_CHUNK)):
            yield chunk


def _parse_fast(lines: list[str]):
    """The whole file in one ``json.loads`` and type checks over whole columns; None when
    anything is off (then the line-by-line reader locates every problem)."""
    body = [x for x in lines if x.strip()]
    if not body:
        return None
    try:
        recs = json.loads("[" + ",".join(body) + "]")
    except (ValueError, RecursionError):
        return None
    if len(recs) != len(body) or not all(type(r) is dict for r in recs):
        return None
    fmt = BAILIAN if "chat_id" in recs[0] else MOONCAKE
    try:
        inp = [r["input_length"] for r in recs]
        outl = [r.get("output_length", 0) for r in recs]
        ts = [r.get("timestamp", 0) for r in recs]
        hs = [r["hash_ids"] for r in recs]
    except KeyError:
        return None
    if not (set(map(type, inp)) <= {int} and set(map(type, outl)) <= {int}
            and set(map(type, ts)) <= {int, float} and set(map(type, hs)) <= {list}):
        return None
    flat = list(itertools.chain.from_iterable(hs))
    if flat and not set(map(type, flat)) <= {int}:
        return None
    inp_a, out_a = np.asarray(inp, dtype=np.int64), np.asarray(outl, dtype=np.int64)
    ts_a = np.asarray(ts, dtype=float)
    flat_a = np.asarray(flat, dtype=np.int64)
    if inp_a.min() < 0 or out_a.min() < 0 or not np.all(np.isfinite(ts_a)) or (flat and flat_a.min() < 0):
        return None
    ts_a = ts_a / (1000.0 if fmt == MOONCAKE else 1.0)
    return fmt, inp_a, out_a, ts_a, np.fromiter(map(len, hs), dtype=np.int64, count=len(hs)), flat_a


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
    fast = None
    try:  # chunk by chunk: the Python objects of one chunk at a time
        parts: list | None = []
        for chunk in _chunks(path):
            part = _parse_fast(chunk)
            if part is None and any(x.strip() for x in chunk):
                parts = None
                break
            if part is not None:
                parts.append(part)
        if parts:
            fast = (parts[0][0],) + tuple(np.concatenate([q[k] for q in parts]) for k in range(1, 6))
        del parts
    except UnicodeDecodeError as exc:
        problems.append(Problem(name, f"not UTF-8 text ({exc.reason}): is it a JSONL trace?"))
    except (OSError, EOFError) as exc:  # unreadable, or a damaged gzip stream
        problems.append(Problem(place or name, f"cannot be read to the end ({exc})"))
    if fast is not None:
        fmt, inp, outl, ts, lens, flat = fast
    elif not problems:  # line by line, to name every problem at its line
        try:
            with _open(path) as fh:
                for lineno, line in enumerate(fh, start=1):
                    s = line.strip()
                    if not s:
                        continue
                    where = Place.file_line(name, lineno)
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
        except (OSError, EOFError) as exc:
            problems.append(Problem(place or name, f"cannot be read to the end ({exc})"))
    if not problems and not len(inp):
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
def _n_unique(a: np.ndarray) -> int:
    """Distinct values (a sort: faster here than numpy 2's hash-based ``np.unique``)."""
    if len(a) == 0:
        return 0
    s = np.sort(a)
    return 1 + int(np.count_nonzero(s[1:] != s[:-1]))


def prefix_nodes(starts: np.ndarray, hashes: np.ndarray) -> np.ndarray:
    """Node id of every block in the prefix trie: equal ids = equal whole prefixes.

    Depth by depth: the node of block ``i`` is the pair (node of block ``i - 1``, hash id),
    numbered by ``np.unique``. Exact (no hashing of prefixes), ``O(blocks log blocks)``.
    """
    total = len(hashes)
    if total == 0:
        return np.empty(0, dtype=np.int64)
    if int(hashes.max()) < 4 * total:  # ids already small (Mooncake's are 0, 1, 2, ...): use them
        dense = hashes
    else:
        _, dense = np.unique(hashes, return_inverse=True)
        dense = dense.astype(np.int64)
    width = int(dense.max()) + 1
    # a prefix-hash trace (every id always under the same parent, none twice in a request)
    # already names whole prefixes: the node is the id itself. Checked in O(blocks): store one
    # parent per id, then every block's parent must equal its id's.
    it = np.int32 if width < 2**31 - 1 else np.int64
    parent = np.empty(total, dtype=it)
    parent[1:] = dense[:-1]
    heads = starts[:-1][starts[:-1] < total]
    parent[heads] = -1
    one = np.full(width, -2, dtype=it)
    one[dense] = parent
    same = bool(np.all(one[dense] == parent))
    del parent, one
    if same:
        return dense
    node = np.empty(total, dtype=np.int64)
    lens = np.diff(starts)
    req = np.repeat(np.arange(len(lens)), lens)
    depth = np.arange(total, dtype=np.int64) - starts[req]
    del req
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
    differing at ``b``); then a stable partition by the bit. Each element carries the start
    of its group, so no group labels are recomputed.
    """
    n = len(v)
    out = np.zeros(n, dtype=np.int64)
    if n == 0:
        return out
    dt = np.int32 if n < 2**31 and int(np.max(v)) < 2**31 else np.int64
    cur = np.asarray(v, dtype=dt).copy()
    order = np.arange(n, dtype=dt)
    acc = np.zeros(n, dtype=dt)
    gstart = np.zeros(n, dtype=dt)          # position of the element's group start
    for b in range(int(cur.max()).bit_length() - 1, -1, -1):
        ones = (cur & dt(1 << b)) != 0
        zc = np.cumsum(~ones, dtype=dt)
        zc -= ~ones                          # zeros strictly before i
        zg = zc[gstart]                      # zeros before the group's start
        zc -= zg                             # zeros of the group before i
        zc[~ones] = 0
        acc += zc
        del zc
        nz = n - int(np.count_nonzero(ones))
        ng = np.where(ones, nz + gstart - zg, zg).astype(dt)  # group starts after the partition
        del zg, gstart
        idx = np.argsort(ones, kind="stable")
        del ones
        gstart = ng[idx]
        del ng
        cur = cur[idx]                       # one array at a time: the old one freed at once
        acc = acc[idx]
        order = order[idx]
        del idx
    out[order] = acc
    return out


@dataclass
class Reuse:
    """The counted blocks that were seen before: their LRU ranks (sorted) and cumulative tokens."""

    rank: np.ndarray       # int64, sorted: blocks more recently used than it just before its request
    cum_tokens: np.ndarray  # int64, len(rank) + 1: tokens of the blocks of rank below each
    total_tokens: int      # input tokens of the counted requests
    warmup_requests: int
    warmup_blocks: int     # distinct blocks seen during the warm-up (a capacity above it never filled)
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
    w = max(0, min(n, int(math.floor(n * warmup)) if n else 0))
    it = np.int32 if total < 2**31 - 1 else np.int64          # index arrays: half the memory when it fits
    node = prefix_nodes(tr.starts, tr.hashes).astype(it, copy=False)
    unique = int(node.max()) + 1 if total else 0
    warm_blocks = _n_unique(node[:tr.starts[w]]) if w else 0
    starts = tr.starts.astype(it)
    req = np.repeat(np.arange(n, dtype=it), lens)
    depth_from_end = np.arange(total, dtype=it)
    depth_from_end -= starts[req]                             # deeper blocks touched before it
    blk = starts[req + 1]
    blk -= 1
    blk -= depth_from_end                                     # access pos touches this block
    seq = node[blk]
    del node
    order = np.argsort(seq, kind="stable").astype(it, copy=False)
    same = np.zeros(total, dtype=bool)
    if total > 1:
        same[1:] = seq[order[1:]] == seq[order[:-1]]
    del seq
    later, earlier = order[1:][same[1:]], order[:-1][same[1:]]  # reuse intervals (earlier, later)
    del order, same
    prev = np.full(total, -1, dtype=it)
    prev[later] = earlier
    nxt = np.full(total, -1, dtype=it)
    nxt[earlier] = later
    del later, earlier
    t = np.flatnonzero(prev >= 0).astype(it)                  # right ends, increasing
    p = prev[t]
    del prev
    dfe_t, b, r_of = depth_from_end[t], blk[t], req[t]        # what the end needs, before the count
    del depth_from_end, blk, req
    right_in_left_order = nxt[nxt >= 0]                        # intervals by left end: their right ends
    del nxt
    idx = np.searchsorted(t, right_in_left_order)             # ... as ranks among the right ends
    del right_in_left_order
    nested = np.empty(len(t), dtype=np.int64)
    nested[idx] = count_smaller_before(idx[::-1])[::-1]        # later-left intervals ending earlier
    del idx
    rank = (t.astype(np.int64) - p - 1 - nested) - dfe_t     # b: the block (trace order) of each rank
    del nested, p, t, dfe_t
    keep = r_of >= w                                          # counted requests only
    rank, b, r_of = rank[keep], b[keep], r_of[keep]
    # tokens of block i of its request: clip(input - i*bs, 0, bs)
    tokens = np.clip(tr.input_length[r_of] - (b - tr.starts[r_of]) * tr.block_size, 0, tr.block_size)
    o = np.argsort(rank, kind="stable")
    rank = rank[o]
    cum = np.zeros(len(rank) + 1, dtype=np.int64)
    np.cumsum(tokens[o], out=cum[1:])
    return Reuse(rank, cum, int(tr.input_length[w:].sum()), w, warm_blocks, unique, n, tr.block_size)


def hit_curve(r: Reuse, capacity_blocks) -> np.ndarray:
    """LRU hit ratio [fraction of input tokens] at each capacity [blocks] (``inf`` allowed).

    A block of rank ``k`` is cached at every capacity above ``k``; a cold block never.
    """
    caps = np.asarray(capacity_blocks, dtype=float)
    if r.total_tokens <= 0:
        return np.zeros(caps.shape)
    k = np.searchsorted(r.rank, caps, side="left")  # blocks with rank < capacity are cached
    return r.cum_tokens[k] / r.total_tokens


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
