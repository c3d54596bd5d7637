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
hold, Bennett & Kruskal 1975). The pass (:class:`planner.traffic.lru_pass.StackPass`, where the
method is set out) takes the accesses a chunk of whole requests at a time: the marks are a bitmap
over time with counts by superblock, the changes inside a chunk a weighted dominance count by blocks
(:func:`planner.traffic.dominance.dominance_sum`) over runs of accesses whose last uses are consecutive.

Two ways in, one curve:

- :func:`trace_reuse` (what the planner uses): the file read a block of lines at a time
  (:mod:`planner.traffic.trace_reader`, in a worker process for a file of 4 MiB or more:
  :func:`planner.traffic.trace_reader.read_ahead`) and each block passed at once. Memory: about 8 bytes per
  distinct block id (last use, parent check), 8 bytes per counted run of reused blocks (one or two a
  request), 1 bit per access, one block of text
  and its chunk's temporaries; no array of the whole trace, no Python object per block. The
  file is read once: the warm-up's cut (a share of a number of requests known only at the end) is
  estimated from the share of the file read, the chunks near it kept per request until the end
  (:class:`planner.traffic.lru_pass.Deferred`); when the estimate misses (lines whose length drifts
  by more than a quarter along the file) the requests are counted and the trace passed again.
- :func:`read_trace` then :func:`reuse`: the whole trace in memory (4 bytes a block for ids below
  2^31, 24 bytes a request). :func:`trace_reuse` falls back to it for a trace whose ids are not
  prefix hashes (an id under two parents, or twice in a request), whose ids are too sparse to index
  by (above 4 per block read, or past 2^31), or with a line the fast parsers do not take (then
  every problem is located line by line). Its renumbering (``prefix_nodes``, depth by depth) holds
  about 13 bytes a block more at its peak, so such a trace takes about 17 bytes a block and 24 a
  request (1.1 GB at 53 million blocks, against 0.3 GB streamed): the stated bound, not removed.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from planner.core.errors import InputError, Problem
from planner.core.places import Place
from planner.traffic import trace_reader as TR
from planner.traffic.lru_pass import NeedCount, NotDense, NotPrefix, Reuse, StackPass, count_smaller_before  # noqa: F401 (re-exported)

MOONCAKE, BAILIAN = "mooncake", "bailian"
DEFAULT_BLOCK = {MOONCAKE: 512, BAILIAN: 16}
DEFAULT_WARMUP = 0.5  # kvcache-ai simulator: the last 50% of requests are measured
MAX_LISTED_LINES = 20  # located problems listed per trace file
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
    """A trace file that is not what it claims: every problem, each at ``file line N``."""


def _open(path: Path):
    """The trace's text line by line; ``utf-8-sig``: a byte order mark at its start is dropped (as
    :func:`planner.traffic.trace_reader.blocks` drops it), one anywhere else is refused by JSON."""
    with open(path, "rb") as f:
        magic = f.read(2)
    if magic == b"\x1f\x8b":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8-sig", errors="strict")
    return open(path, encoding="utf-8-sig", errors="strict")


def _int_of(v) -> int | None:
    """A whole number (int, or a float with no fraction); None otherwise (bool is not a number)."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return None


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
    TraceError : every malformed line at once, as ``file line N: what``
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
    try:  # a block of lines at a time, as arrays (planner.traffic.trace_reader); None: line by line
        cols = [_Grow(d) for d in (np.int64, np.int64, float, np.int64, np.int32)]
        for part in TR.chunks(path):
            fmt = fmt or part[0] or None
            for c, x in zip(cols, part[1:]):
                c.add(x)
            del part
        fast = tuple(c.done() for c in cols)
        del cols
        if not len(fast[0]):
            fast = None
        else:
            fast[2][:] /= 1000.0 if fmt == MOONCAKE else 1.0
    except TR.Unreadable:
        fast, fmt = None, None
    if fast is not None:
        inp, outl, ts, lens, flat = fast
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
                    if n_in is None or not 0 <= n_in < 2**63:
                        bad.append(f"input_length {rec.get('input_length')!r} is not a whole number >= 0")
                    n_out = rec.get("output_length", 0)
                    n_out = _int_of(n_out if n_out is not None else 0)
                    if n_out is None or not 0 <= n_out < 2**63:
                        bad.append(f"output_length {rec.get('output_length')!r} is not a whole number >= 0")
                    t = rec.get("timestamp", 0)
                    if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t):
                        bad.append(f"timestamp {t!r} is not a number")
                    h = rec.get("hash_ids")
                    if not isinstance(h, list):
                        bad.append("hash_ids is missing or not a list" if h is None else
                                   f"hash_ids {str(h)[:40]!r} is not a list")
                        h = []
                    elif h and not all(type(x) is int and 0 <= x < 2**63 for x in h):
                        first = next(x for x in h if not (type(x) is int and 0 <= x < 2**63))
                        bad.append(f"hash_ids holds {first!r}: every hash id must be a whole number >= 0 "
                                   f"(and below 2^63)")
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
        except (OSError, EOFError, zlib.error) as exc:    # zlib.error: a damaged deflate stream inside gzip
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
    _check_lengths(tr, bool(block_size))
    return tr


def _small_ids(flat) -> np.ndarray:
    """Hash ids as int32 when they fit (half the memory of int64), else int64."""
    a = np.asarray(flat, dtype=np.int64) if not isinstance(flat, np.ndarray) else flat
    if a.dtype != np.int32 and (len(a) == 0 or a.max() < 2**31 - 1):
        a = a.astype(np.int32)
    return a


def _check_lengths(tr: Trace, stated: bool = True) -> None:
    """Notes (not errors) when the blocks do not cover the input as the block size says (``stated``: the
    size was given, not the layout's default)."""
    tr.notes.extend(_LengthNotes(tr.block_size).add(tr.input_length, np.diff(tr.starts), tr.timestamp_s)
                    .notes(Path(tr.path).name, stated))


class _LengthNotes:
    """The counts behind the notes of :func:`_check_lengths`, a chunk of requests at a time.

    Besides the block size in use, every power of two from 1 to 65,536 tokens is tried: the requests
    whose hash blocks are exactly ``ceil(input_length / B)`` (those with blocks and input). A trace
    written at another block size than the one in use (a Mooncake-layout file of 16-token blocks read at
    Mooncake's 512) fits its own size for nearly every request and the one in use for nearly none: that
    changes the hit ratio a lot (each block weighs 32 times its tokens), so the note then names the
    size the trace implies and the one in use, with the counts."""

    SIZES = 2 ** np.arange(17)

    def __init__(self, block_size: int):
        self.bs, self.n, self.more, self.short, self.unordered, self.t = block_size, 0, 0, 0, False, -math.inf
        self.sizes = np.unique(np.append(self.SIZES, block_size))
        self.fit = np.zeros(len(self.sizes), dtype=np.int64)   # requests whose blocks are ceil(input / B)
        self.evidence = 0                                      # requests with blocks and input

    def add(self, input_length, lens, timestamp_s):
        inp = np.asarray(input_length)
        need = -(-inp // self.bs)
        self.more += int(np.count_nonzero(lens > need))
        self.short += int(np.count_nonzero(lens < need - 1))
        self.n += len(lens)
        has = (lens > 0) & (inp > 0)
        if np.any(has):
            i, k = inp[has], np.asarray(lens)[has]
            self.evidence += len(i)
            for j, b in enumerate(self.sizes):
                b = int(b)
                if b & (b - 1) == 0:                 # a power of two: ceil(i / b) by a shift (i >= 0, no overflow)
                    self.fit[j] += int(np.count_nonzero((i >> (b.bit_length() - 1)) + ((i & (b - 1)) != 0) == k))
                else:
                    self.fit[j] += int(np.count_nonzero(-(-i // b) == k))
        if len(timestamp_s):
            self.unordered = self.unordered or timestamp_s[0] < self.t or bool(np.any(np.diff(timestamp_s) < 0))
            self.t = timestamp_s[-1]
        return self

    def implied(self) -> tuple[int, int, int] | None:
        """``(implied block size, its fits, the fits of the size in use)`` when the trace's lengths point
        at another block size: 90% of the requests with blocks fit it exactly and at most 10% fit the one
        in use; else None."""
        if not self.evidence:
            return None
        j = int(np.argmax(self.fit))
        own = int(self.fit[np.searchsorted(self.sizes, self.bs)])
        best, fits = int(self.sizes[j]), int(self.fit[j])
        if best != self.bs and fits >= 0.9 * self.evidence and own <= 0.1 * self.evidence:
            return best, fits, own
        return None

    def notes(self, name: str, stated: bool = True) -> list[str]:
        out = []
        imp = self.implied()
        if imp is not None:
            best, fits, own = imp
            use = "trace_block_size" if stated else "the layout's default (trace_block_size blank)"
            out.append(f"{name}: the blocks look like {best}-token blocks, not the {self.bs} tokens of {use}: "
                       f"{fits:,} of {self.evidence:,} requests have exactly ceil(input_length / {best}) hash "
                       f"blocks, {own:,} ceil(input_length / {self.bs}); read at {self.bs} each block weighs "
                       f"{self.bs / best:g} times its tokens and the hit ratio and the capacities are wrong: set "
                       f"trace_block_size to {best} if the trace's blocks are {best} tokens")
        if self.more:
            out.append(f"{name}: {self.more} of {self.n} requests have more hash blocks than input_length / "
                       f"{self.bs} tokens needs (the extra blocks count 0 tokens): is the block size right?")
        if self.short:
            out.append(f"{name}: {self.short} of {self.n} requests have hash blocks for less than their input "
                       f"(the rest counts as missed): is the block size right?")
        if self.n > 1 and self.unordered:
            out.append(f"{name}: timestamps are not in order; requests are replayed in file order")
        return out


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
        dense = dense.ravel().astype(np.int32 if total < 2**31 - 1 else np.int64)
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
    # renumbered depth by depth, in int32 while it fits: about 4 + 4 bytes a block (node, depth) and the
    # depth order (8 bytes a block while argsort returns it, then 4) beside the trace's own arrays
    nt = np.int32 if total < 2**31 - 1 else np.int64
    node = np.empty(total, dtype=nt)
    lens = np.diff(starts)
    depth = np.arange(total, dtype=nt)
    depth -= np.repeat(starts[:-1].astype(nt), lens)          # position of each block in its request
    bounds = np.zeros(int(depth.max()) + 2, dtype=np.int64)
    np.cumsum(np.bincount(depth), out=bounds[1:])
    order = np.argsort(depth, kind="stable").astype(nt)
    del depth
    next_id = 0
    for d in range(len(bounds) - 1):
        idx = order[bounds[d]:bounds[d + 1]]
        key = dense[idx].astype(np.int64) if d == 0 else node[idx - 1].astype(np.int64) * width + dense[idx]
        uniq, inv = np.unique(key, return_inverse=True)
        node[idx] = inv.ravel() + next_id
        next_id += len(uniq)
    return node


# --------------------------------------------------------------------------- stack distances
def _cuts(starts: np.ndarray, w: int, chunk: int) -> list[int]:
    """Request boundaries of the chunks: about ``chunk`` blocks each, one cut at the warm-up ``w``."""
    n = len(starts) - 1
    cuts = [0]
    for a, b in ((0, w), (w, n)):
        if b > a:
            pos = np.arange(int(starts[a]) + chunk, int(starts[b]), chunk)
            cuts.extend(int(x) for x in np.unique(np.searchsorted(starts, pos, side="right") - 1) if a < x < b)
            cuts.append(b)
    return cuts


def reuse(tr: Trace, warmup: float = DEFAULT_WARMUP, chunk: int = PASS_CHUNK) -> Reuse:
    """The one pass over a trace held in memory: each block's LRU stack rank just before its request.

    The accesses are the requests in order, each request's blocks deepest first; the blocks are
    the prefix-trie nodes of :func:`prefix_nodes`, fed ``chunk`` blocks (whole requests) at a time
    to :class:`planner.traffic.lru_pass.StackPass` (the method is described there). A file is read
    and passed without holding the whole trace by :func:`trace_reuse`.
    """
    n = tr.requests
    node = prefix_nodes(tr.starts, tr.hashes)
    sp = StackPass(n, warmup, tr.block_size, check_prefix=False)
    lens = np.diff(tr.starts)
    for r0, r1 in zip(*(lambda c: (c[:-1], c[1:]))(_cuts(tr.starts, sp.w, chunk))):
        sp.feed(lens[r0:r1], node[tr.starts[r0]:tr.starts[r1]], tr.input_length[r0:r1])
    if n and sp.nreq < n:  # requests with no blocks after the last cut
        sp.feed(lens[sp.nreq:], node[:0], tr.input_length[sp.nreq:])
    return sp.result()


def trace_reuse(path: str | Path, block_size: int | None = None, warmup: float = DEFAULT_WARMUP,
                place: str | None = None) -> tuple[Reuse, list[str]]:
    """Read a trace file and make its one pass at once, never holding the whole trace: ``(reuse, notes)``.

    The file is read a block of lines at a time (:func:`planner.traffic.trace_reader.chunks`; from
    ``AHEAD_MIN_FILE`` bytes on read and parsed in a worker process while this one passes the previous
    block, :func:`planner.traffic.trace_reader.read_ahead`) and each block's requests go straight into the pass (:class:`planner.traffic.lru_pass.StackPass`), so
    memory is the distinct blocks' state and one block. The warm-up is the first
    ``floor(n * warmup)`` requests, ``n`` known at the end: the pass estimates the cut from the
    share of the file read and keeps the chunks near it per request
    (:class:`planner.traffic.lru_pass.Deferred`); when that misses, ``n`` is counted
    (:func:`planner.traffic.trace_reader.count_requests`) and the trace passed again, checked to be
    fed exactly ``n``.

    The same curve as ``reuse(read_trace(path))``, which it falls back to (the whole trace in
    memory) for a trace that is not a prefix-hash trace (an id under two parents, or twice in one
    request: its prefixes are renumbered, see :func:`prefix_nodes`), whose ids are too sparse to
    index by, or that a fast parser does not take (then its problems are located line by line).

    Raises
    ------
    TraceError : every malformed line at once, as ``file line N: what``
    """
    path = Path(path)
    if path.is_file():
        for counted in (False, True):   # the warm-up's cut found at the end; else counted first
            sp = None
            try:
                n = TR.count_requests(path) if counted and warmup > 0 else None
                stats = None
                with TR.read_ahead(path, progress=True) as parts:   # read in a worker while this passes
                    for fmt, inp, _out, ts, lens, ids, frac in parts:
                        if not len(inp):
                            continue
                        if sp is None:
                            bs = int(block_size) if block_size else DEFAULT_BLOCK[fmt]
                            sp = StackPass(n, warmup, bs, check_prefix=True)
                            stats, scale = _LengthNotes(bs), 1000.0 if fmt == MOONCAKE else 1.0
                        stats.add(inp, lens, ts / scale)
                        sp.feed(lens, ids, inp, frac)
                if sp is not None and (n is None or sp.nreq == n):
                    return sp.result(), stats.notes(path.name, bool(block_size))
                break
            except NeedCount:
                continue
            except (TR.Unreadable, NotPrefix, NotDense):
                break
        sp = None  # free the pass's state before the trace is read whole
    tr = read_trace(path, block_size, place)
    return reuse(tr, warmup), list(tr.notes)


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
