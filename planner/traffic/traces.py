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

The stack distance of an access is the number of distinct blocks used since its block's last
use: the times still marked as the last use of their block (what a Fenwick tree over time would
hold, Bennett & Kruskal 1975). The accesses are taken a chunk at a time (``PASS_CHUNK``): the marks
before the chunk are one sorted array (a ``searchsorted`` per access), the changes inside the
chunk a dominance count done bit by bit as in a wavelet matrix (``count_smaller_before``). Memory:
the trace's arrays (4 bytes a block for ids below 2^31, 32 bytes a request), about 16 bytes per
distinct block (last use, marks, tokens by rank) and one chunk's temporaries; no Python object per
block. The reader parses ``FAST_CHUNK`` lines at a time into arrays grown in place. A trace whose
ids are not prefix hashes (an id under two parents, or twice in a request) is first renumbered
depth by depth (``prefix_nodes``), which holds a few int64 arrays of the whole trace at once.
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
FAST_CHUNK = 5000  # lines parsed per json.loads call (bounded Python objects)
PASS_CHUNK = 1 << 18  # blocks per chunk of the trie check and the stack-distance pass (bounded temporaries)


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
    if not flat or flat_a.max() < 2**31 - 1:
        flat_a = flat_a.astype(np.int32)  # 4 bytes a block while the whole trace is held
    return fmt, inp_a, out_a, ts_a, np.fromiter(map(len, hs), dtype=np.int64, count=len(hs)), flat_a


class _Grow:
    """A numpy array grown in place (``ndarray.resize``: a ``realloc``, which the C library does
    by remapping pages for large arrays), so reading never holds the chunks and their
    concatenation at once."""

    def __init__(self, dtype):
        self.a = np.empty(1 << 16, dtype=dtype)
        self.n = 0

    def add(self, x: np.ndarray) -> None:
        if x.dtype.itemsize > self.a.dtype.itemsize:  # ids past int32: widen once
            self.a = self.a.astype(x.dtype)
        need = self.n + len(x)
        if need > len(self.a):
            self.a.resize(max(need, len(self.a) + len(self.a) // 2), refcheck=False)
        self.a[self.n:need] = x
        self.n = need

    def done(self) -> np.ndarray:
        self.a.resize(self.n, refcheck=False)
        return self.a


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
        cols = [_Grow(d) for d in (np.int64, np.int64, float, np.int64, np.int32)]
        kind, ok = None, True
        for chunk in _chunks(path):
            part = _parse_fast(chunk)
            if part is None and any(x.strip() for x in chunk):
                ok = False
                break
            if part is not None:
                kind = kind or part[0]
                for c, x in zip(cols, part[1:]):
                    c.add(x)
            del part, chunk
        if ok and kind is not None:
            fast = (kind,) + tuple(c.done() for c in cols)
        del cols
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
               np.asarray(ts, dtype=float), starts, _small_ids(flat))
    _check_lengths(tr)
    return tr


def _small_ids(flat) -> np.ndarray:
    """Hash ids as int32 when they fit (half the memory of int64), else int64."""
    a = np.asarray(flat, dtype=np.int64) if not isinstance(flat, np.ndarray) else flat
    if a.dtype != np.int32 and (len(a) == 0 or a.max() < 2**31 - 1):
        a = a.astype(np.int32)
    return a


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
    one = np.full(width, -2, dtype=it)
    same = True
    for check in (False, True):  # chunk by chunk: write one parent per id, then compare every block's
        for a in range(0, total, PASS_CHUNK):
            b = min(total, a + PASS_CHUNK)
            parent = np.empty(b - a, dtype=it)
            parent[1:] = dense[a:b - 1]
            parent[0] = dense[a - 1] if a else -1
            heads = starts[np.searchsorted(starts, a):np.searchsorted(starts, b)]
            parent[heads - a] = -1
            if check:
                same = same and bool(np.all(one[dense[a:b]] == parent))
            else:
                one[dense[a:b]] = parent
    del one
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
    """Tokens by LRU rank of the counted blocks that were seen before, cumulated.

    ``cum_tokens[k]`` are the tokens of the counted blocks whose rank (blocks more recently
    used than it just before its request) is below ``k``, for ``k = 0 .. unique_blocks``: the
    hit tokens of a cache of ``k`` blocks.
    """

    cum_tokens: np.ndarray  # int64, unique_blocks + 1
    total_tokens: int      # input tokens of the counted requests
    warmup_requests: int
    warmup_blocks: int     # distinct blocks seen during the warm-up (a capacity above it never filled)
    unique_blocks: int
    requests: int
    block_size: int


def reuse(tr: Trace, warmup: float = DEFAULT_WARMUP, chunk: int = PASS_CHUNK) -> Reuse:
    """The one pass: each block's LRU stack rank just before its request is served.

    The accesses are the requests in order, each request's blocks deepest first. The stack
    distance of an access at time ``t`` whose block was last used at ``p`` is the number of
    distinct blocks used in ``(p, t)``: the times in ``(p, t)`` that are still the last use
    of their block at ``t`` (Bennett & Kruskal 1975, "LRU stack processing", the marks a
    Fenwick tree would hold). Before the request, the block's rank is that distance less the
    deeper blocks of the same request already touched (none of them was used after ``p``:
    using a block uses its whole prefix).

    The accesses are taken ``chunk`` at a time, so memory is bounded by the distinct blocks
    plus one chunk's temporaries. For an access at ``t`` in the chunk starting at ``s``::

        distance = #{marks at s above p} + #{q in [s, t): q > p} - #{q in [s, t): prev(q) > p}

    (the marks at ``s``, a sorted array, less the ones the chunk's earlier accesses moved,
    plus those accesses): a ``searchsorted`` and a within-chunk dominance count
    (``count_smaller_before``), exact integers, no Python loop per block.
    """
    n = tr.requests
    total = tr.blocks
    w = max(0, min(n, int(math.floor(n * warmup)) if n else 0))
    it = np.int32 if total < 2**31 - 1 else np.int64          # index arrays: half the memory when it fits
    node = prefix_nodes(tr.starts, tr.hashes).astype(it, copy=False)
    width = int(node.max()) + 1 if total else 0
    last = np.full(width, -1, dtype=it)                        # last use of each block, -1: never
    buf = np.empty(width, dtype=it)                            # one buffer, compacted in place
    marks = buf[:0]                                            # sorted: the last use of every block seen
    cum = np.zeros(width + 1, dtype=np.int64)                  # cum[1 + k]: tokens of rank k, cumulated at the end
    warm_blocks = 0
    bs = tr.block_size
    cuts = [0]                                                 # request boundaries of the chunks, one at w
    for a, b in ((0, w), (w, n)):
        if b > a:
            pos = np.arange(int(tr.starts[a]) + chunk, int(tr.starts[b]), chunk)
            cuts.extend(int(x) for x in np.unique(np.searchsorted(tr.starts, pos, side="right") - 1) if a < x < b)
            cuts.append(b)
    for r0, r1 in zip(cuts[:-1], cuts[1:]):
        if r0 == w:
            warm_blocks = len(marks)
        s, e = int(tr.starts[r0]), int(tr.starts[r1])
        k = e - s
        if k == 0:
            continue
        st = tr.starts[r0:r1 + 1].astype(it)
        req = np.repeat(np.arange(r1 - r0, dtype=it), np.diff(st))   # request of each access, from r0
        dfe = np.arange(s, e, dtype=it)
        dfe -= st[req]                                         # deeper blocks touched before it
        blk = st[req + 1]
        blk -= 1
        blk -= dfe                                             # the block (trace order) access s + i touches
        seq = node[blk]
        order = np.argsort(seq, kind="stable").astype(it, copy=False)
        same = np.zeros(k, dtype=bool)
        same[1:] = seq[order[1:]] == seq[order[:-1]]
        prev = np.empty(k, dtype=it)
        prev[order[~same]] = last[seq[order[~same]]]           # first use in the chunk: the last use before
        prev[order[1:][same[1:]]] = order[:-1][same[1:]] + s   # later uses: the one before, in the chunk
        end = np.ones(k, dtype=bool)
        end[:-1] = ~same[1:]
        ends = np.sort(order[end])                             # last use in the chunk of each block
        last[seq[ends]] = ends + s
        del order, same, end, seq
        old = prev[(prev >= 0) & (prev < s)]                   # marks moved by this chunk
        seen = prev >= 0
        ti = np.flatnonzero(seen).astype(it, copy=False)       # accesses of blocks seen before
        p = prev[ti].astype(np.int64)
        above = len(marks) - np.searchsorted(marks, p, side="right")
        above[p >= s] = 0
        inside = ti.astype(np.int64) + s - np.maximum(s, p + 1)
        # #{q in [s, t): prev(q) > p}: only accesses of seen blocks can count, so only they are
        # ranked (the prevs are distinct: each time is the previous use of one access at most),
        # largest prev first, and counted: log2(chunk) bit rounds, not log2(trace)
        v = np.empty(len(ti), dtype=it)
        v[np.argsort(prev[ti])[::-1]] = np.arange(len(ti), dtype=it)
        moved = count_smaller_before(v)
        del v, prev
        counted = req[ti] >= w - r0
        ti = ti[counted]
        rank = (above[counted] + inside[counted] - moved[counted]) - dfe[ti]
        del above, inside, moved
        rq = req[ti].astype(np.int64) + r0
        tokens = np.clip(tr.input_length[rq] - (blk[ti] - tr.starts[rq]) * bs, 0, bs)
        ranks, at = np.unique(rank, return_inverse=True)        # chunk-sized, not one slot per block
        cum[1 + ranks] += np.bincount(at.ravel(), weights=tokens, minlength=len(ranks)).round().astype(np.int64)
        del rank, tokens, rq, ranks, at, ti, req, dfe, blk, p
        keep = np.ones(len(marks), dtype=bool)
        keep[np.searchsorted(marks, old)] = False
        m = 0
        for a in range(0, len(marks), chunk):                  # forward, a chunk at a time: the kept
            kept = marks[a:a + chunk][keep[a:a + chunk]]        # values are copied before their place
            buf[m:m + len(kept)] = kept                        # (m <= a) is written
            m += len(kept)
        buf[m:m + len(ends)] = ends + s
        marks = buf[:m + len(ends)]
        del keep, old, ends
    unique = len(marks)
    del marks, last, buf
    if n and w == n:
        warm_blocks = unique
    cum = cum[:unique + 1]                                     # ranks are below the distinct blocks
    np.cumsum(cum, out=cum)
    return Reuse(cum, int(tr.input_length[w:].sum()), w, warm_blocks, unique, n, bs)


def hit_curve(r: Reuse, capacity_blocks) -> np.ndarray:
    """LRU hit ratio [fraction of input tokens] at each capacity [blocks] (``inf`` allowed).

    A block of rank ``k`` is cached at every capacity above ``k``; a cold block never.
    """
    caps = np.asarray(capacity_blocks, dtype=float)
    if r.total_tokens <= 0:
        return np.zeros(caps.shape)
    k = np.minimum(np.ceil(np.maximum(caps, 0.0)), r.unique_blocks).astype(np.int64)  # ranks below cap
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
