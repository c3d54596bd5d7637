"""The one-pass LRU stack ranks of a prefix-reuse trace, fed a chunk of requests at a time (issue 19).

:class:`StackPass` takes the trace as it is read, a chunk of whole requests at a time, and keeps only
the state of the distinct blocks, so the whole trace's block array is never held:

- ``last``: the last use (access time) of each block, by block id [int32 while the trace has fewer
  than 2^31 - 1 accesses, then int64];
- ``parent``: while checking that the ids are prefix hashes, the parent id each id was first seen
  under (int32); one id under two parents (or twice in a request) raises :class:`NotPrefix`;
- ``bits``: one bit per access time, set while that time is the last use of its block (the marks of
  Bennett & Kruskal 1975, "LRU stack processing", which a Fenwick tree would hold), and ``sbc``, the
  marks of each superblock of 512 times, kept as the marks change: the marks below a time are the
  superblocks' counts before it (cumulated once a chunk: one number per 512 accesses of the trace, not
  the whole bitmap), the popcounts of at most 7 words and of one word's low bits (``np.bitwise_count``);
  a chunk sets its own marks with one ``packbits`` and clears the old ones run by run (a unit, below,
  is a run of consecutive times);
- ``runs``: the counted units' ranges of ranks (``lo``, ``hi``), 8 bytes a unit, summed into hits by rank
  at the end (a difference array: +1 at ``lo``, -1 past ``hi``); the partial blocks (the last block of
  a request whose input does not fill it, at most one a request) are kept as (rank, tokens) pairs.

Memory, then: 8 bytes per distinct block id (``last``, ``parent``), 1 bit per access, 8 bytes per
counted unit (one or two a request in Mooncake-like traces), at most 8 bytes per counted request with
a partial last block hit, and one chunk's temporaries (about 100 bytes a block of the chunk); at the
end one int64 per distinct block (the curve), after ``last`` and ``parent`` are freed.

Within a chunk the arrays stay in the chunk's order (request by request, each request's blocks from
the first); time is ``s + st[r] + st[r + 1] - 1 - j`` for the block at position ``j`` of request ``r``
(blocks are touched deepest first). One sort of (block, position) groups the uses of each block: the
previous use of each (the one before it in the chunk, or ``last``), the last use in the chunk (the new
``last``), and the prefix check (one parent within a group, the one kept). The changes earlier uses in
the chunk made are counted by a weighted dominance count (:func:`planner.traffic.dominance.dominance_sum`,
by blocks) over *units*: runs of uses of one request at consecutive times whose last uses are
consecutive times (a prefix touched together before); their ranks are consecutive too, so a unit is one
range of ranks. The arithmetic is exact integers throughout.

The rank of an access at time ``t`` (chunk starting at ``s``) whose block was last used at ``p``::

    distance = #{marks at s above p} + #{q in [s, t): q > p} - #{q in [s, t): prev(q) > p}
    rank     = distance - (deeper blocks of the same request touched before it)

(blocks are touched deepest first, so a request's own deeper blocks were not used after ``p``:
using a block uses its whole prefix).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from planner.traffic.dominance import dominance_sum

I32_MAX = 2**31 - 1
SB_BITS = 9                   # times per superblock of the marks: 2^9 (8 words), counted in ``sbc``
SB_WORDS = 1 << (SB_BITS - 6)


class NotPrefix(Exception):
    """An id under two parents, or twice in one request: the ids do not name whole prefixes."""


class NotDense(Exception):
    """Ids too sparse to index an array by (more than 4 ids a block read so far): renumber first."""


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


def count_smaller_before(v: np.ndarray, weight: np.ndarray | None = None) -> np.ndarray:
    """``out[i] = sum of weight[j] over j < i with v[j] < v[i]`` (weight 1: a count) for non-negative
    integers ``v``, in ``O(n log max v)``: the pass's dominance count before
    :func:`planner.traffic.dominance.dominance_sum` (about three times slower at a chunk's size), kept as
    the reference the tests hold that one to, and for ties and values that are not a permutation.

    Bit by bit from the top (a wavelet-matrix pass): at bit ``b`` the elements sharing the
    bits above ``b`` are contiguous and in their original order; each element whose bit is 1
    adds the weights of the earlier elements of its group whose bit is 0 (those are smaller, first
    differing at ``b``); then a stable partition by the bit. Each element carries the start
    of its group, so no group labels are recomputed.
    """
    n = len(v)
    out = np.zeros(n, dtype=np.int64)
    if n == 0:
        return out
    wt = None if weight is None else np.asarray(weight, dtype=np.int64)
    big = n >= 2**31 or int(np.max(v)) >= 2**31 or (wt is not None and int(wt.sum()) >= 2**31)
    dt = np.int64 if big else np.int32
    cur = np.asarray(v, dtype=dt).copy()
    order = np.arange(n, dtype=dt)
    acc = np.zeros(n, dtype=dt)
    w = None if wt is None else wt.astype(dt)
    gstart = np.zeros(n, dtype=dt)          # position of the element's group start
    for b in range(int(cur.max()).bit_length() - 1, -1, -1):
        ones = (cur & dt(1 << b)) != 0
        if w is None:
            zc = np.cumsum(~ones, dtype=dt)
            zc -= ~ones                      # zeros strictly before i
        else:
            zw = np.where(ones, 0, w).astype(dt)
            zc = np.cumsum(zw, dtype=dt)
            zc -= zw                         # weight of the zeros strictly before i
            del zw
        zg = zc[gstart]                      # ... before the group's start
        zc -= zg                             # ... of the group before i
        zc[~ones] = 0
        acc += zc
        del zc
        if w is None:
            nz = n - int(np.count_nonzero(ones))
            ng = np.where(ones, nz + gstart - zg, zg).astype(dt)  # group starts after the partition
        else:                                # group starts are positions: counted, not weighed
            pz = np.cumsum(~ones, dtype=dt)
            pz -= ~ones
            pg = pz[gstart]
            nz = n - int(np.count_nonzero(ones))
            ng = np.where(ones, nz + gstart - pg, pg).astype(dt)
            del pz, pg
        del zg, gstart
        idx = np.concatenate((np.flatnonzero(~ones), np.flatnonzero(ones))).astype(dt)  # stable partition
        del ones
        gstart = ng[idx]
        del ng
        cur = cur[idx]                       # one array at a time: the old one freed at once
        acc = acc[idx]
        order = order[idx]
        if w is not None:
            w = w[idx]
        del idx
    out[order] = acc
    return out


def _grown(a: np.ndarray, filled: int, need: int, fill) -> tuple[np.ndarray, int]:
    """``a`` holding at least ``need`` elements, those from ``filled`` on set to ``fill``: grown by an
    eighth at least (``ndarray.resize``, a ``realloc``: no second copy held; it zero-fills the new
    room, so the room is kept small). Returns the array and its new filled length."""
    if need <= filled:
        return a, filled
    if need > len(a):
        a.resize(max(need, len(a) + len(a) // 8), refcheck=False)
    a[filled:need] = fill
    return a, need


def _widened(a: np.ndarray, filled: int, dtype) -> np.ndarray:
    out = np.empty(len(a), dtype=dtype)
    out[:filled] = a[:filled]
    return out


def _ones(x: np.ndarray) -> np.ndarray:
    """``2^x - 1`` as uint64 for ``0 <= x <= 64`` (the low ``x`` bits set)."""
    x = np.asarray(x, dtype=np.uint64)
    full = x >= np.uint64(64)
    out = np.left_shift(np.uint64(1), np.where(full, np.uint64(0), x)) - np.uint64(1)
    out[full] = np.uint64(2**64 - 1)
    return out


class NeedCount(Exception):
    """The warm-up's cut fell outside the requests :class:`Deferred` kept: count the requests first."""


class Deferred:
    """The warm-up's cut ``floor(n * warmup)`` when the number of requests ``n`` is not known until
    the trace's end (a gzip file is not decompressed twice to count its lines first).

    Each chunk's hits are made as usual, then, by where the chunk's requests ``[r0, r1)`` lie against
    the cut estimated from the share of the file read (``n ~ requests so far / progress``):

    - below ``floor(requests so far * warmup)``, a bound the cut can only grow from: dropped (warm-up);
    - below ``(1 - MARGIN)`` times the estimated cut (``MARGIN`` 0.25): dropped too, and the drop remembered;
    - from ``(1 + MARGIN)`` times it on: counted at once, and remembered;
    - between: kept, per request (its hits as ranges of ranks, its input tokens, its new blocks),
      about 20 bytes a request of a Mooncake-like trace.

    At the end the cut is exact: the kept chunks add their requests from the cut on. A cut past the
    first request counted at once, or before the end of a chunk dropped on the estimate (a file whose
    lines change length along it by more than the margin), raises :class:`NeedCount`, and the caller
    passes the trace again with its count (then about twice the time): the result is exact either way.
    """

    MARGIN = 0.25

    def __init__(self, warmup: float):
        self.warmup = warmup
        self.kept: list[tuple] = []      # (r0, m, nd at start, [new blocks, input lengths, units...] in one, cuts, any units)
        self.dropped_to = 0              # requests below it dropped
        self.counted_from: int | None = None  # requests from it counted
        self.tokens_from_counted = 0
        self.starts: dict[int, int] = {0: 0}  # distinct blocks before each chunk's first request
        self.new_blocks = None
        self._cur = None

    def begin(self, r0: int, m: int, nd: int, inp: np.ndarray, progress: float | None) -> None:
        self.starts[r0] = nd
        r1 = r0 + m
        low = math.floor(r1 * self.warmup)                       # the cut is at least this
        fate = "keep"
        if r1 <= low:
            fate = "drop"
        elif progress and progress > 0:
            est = r1 / min(1.0, progress) * self.warmup          # the cut, estimated
            if r1 <= (1 - self.MARGIN) * est:
                fate = "drop"
            elif r0 >= (1 + self.MARGIN) * est and r0 > low:
                fate = "count"
        if fate == "count" and self.counted_from is None:
            self.counted_from = r0
        if fate == "keep" and self.counted_from is not None:   # never keep after counting: count
            fate = "count"
        if fate == "drop":
            self.dropped_to = max(self.dropped_to, r1)
        if fate == "count":
            self.tokens_from_counted += int(inp.sum())
        self.new_blocks = np.zeros(m, dtype=np.int64)
        self._cur = [fate, r0, m, nd, inp, None]

    def log(self, units) -> None:
        self._cur[5] = units

    def end(self, sp: "StackPass") -> None:
        fate, r0, m, nd, inp, units = self._cur
        self._cur = None
        if fate == "count" and units is not None:
            sp._count(units, 0, sp.nd)
        elif fate == "keep":             # held as one array (int32 where it fits): few, whole allocations
            arrs = [self.new_blocks, inp] + (list(units) if units is not None else [])
            flat = np.concatenate([np.asarray(a, dtype=np.int64) for a in arrs])
            if len(flat) and -I32_MAX < flat.min() and flat.max() < I32_MAX:
                flat = flat.astype(np.int32)
            self.kept.append((r0, m, nd, flat, np.cumsum([len(a) for a in arrs])[:-1], units is not None))
        self.new_blocks = None
        low = math.floor(sp.nreq * self.warmup)                  # kept chunks now surely warm-up
        while self.kept and self.kept[0][0] + self.kept[0][1] <= low:
            self.dropped_to = max(self.dropped_to, self.kept[0][0] + self.kept[0][1])
            del self.kept[0]
        self.starts[sp.nreq] = sp.nd

    def finish(self, sp: "StackPass") -> None:
        n = sp.nreq
        cut = max(0, min(n, math.floor(n * self.warmup))) if n else 0
        if cut < self.dropped_to or (self.counted_from is not None and cut > self.counted_from):
            raise NeedCount(cut)
        warm = self.starts.get(cut)
        total = self.tokens_from_counted
        for r0, m, nd, flat, cuts, has_units in self.kept:
            if r0 + m <= cut:
                continue
            new, inp, *units = np.split(flat, cuts)
            units = tuple(units) if has_units else None
            first = max(0, cut - r0)
            if first and warm is None:
                warm = nd + int(new[:first].sum(dtype=np.int64))
            total += int(inp[first:].sum(dtype=np.int64))
            if units is not None:
                sp._count(units, first, sp.nd)
        if warm is None:                  # a cut inside a request range never kept
            raise NeedCount(cut)
        self.kept = []
        sp.w = cut
        sp.warm_blocks = warm
        sp.total_tokens = total
        sp.deferred = None


class StackPass:
    """The one pass over a trace fed a chunk of whole requests at a time (see the module).

    Parameters
    ----------
    requests : the trace's number of requests (the warm-up is its first ``floor(requests * warmup)``);
        None with ``warmup`` 0
    warmup : fraction of the requests that only fill the cache [fraction]
    block_size : tokens per block [tokens]
    check_prefix : check that ids name whole prefixes (raise :class:`NotPrefix` otherwise) and
        are dense enough to index by (raise :class:`NotDense`); False when the caller renumbered
    """

    def __init__(self, requests: int | None, warmup: float, block_size: int, check_prefix: bool = True):
        self.warmup = float(warmup)
        if requests is None:               # the cut found at the end (see :class:`Deferred`)
            self.w = 0 if warmup <= 0 else None
        else:
            self.w = max(0, min(requests, int(math.floor(requests * warmup)) if requests else 0))
        self.requests = requests
        self.deferred = Deferred(self.warmup) if self.w is None else None
        self.bs = int(block_size)
        self.check = check_prefix
        self.t = 0                # accesses so far
        self.nreq = 0             # requests so far
        self.nd = 0               # distinct blocks so far (bits set)
        self.last = np.full(1 << 12, -1, dtype=np.int32)
        self.parent = np.full(1 << 12, -2, dtype=np.int32) if check_prefix else None
        self.bits = np.zeros(1 << 10, dtype=np.uint64)
        self.sbc = np.zeros(1 << 7, dtype=np.int32)   # marks per superblock of the bits (SB_WORDS words)
        self.n_sbc = 1 << 7
        self.n_last = self.n_parent = 1 << 12    # filled lengths (the rest untouched)
        self.runs: list[np.ndarray] = []         # the counted units' rank ranges, (lo, hi) a row
        self.n_bits = 1 << 10
        self.part_rank: list[np.ndarray] = []
        self.part_tok: list[np.ndarray] = []
        self.total_tokens = 0
        self.warm_blocks: int | None = None

    # ---------------------------------------------------------------- feeding
    def feed(self, lens: np.ndarray, ids: np.ndarray, input_length: np.ndarray,
             progress: float | None = None) -> None:
        """The next requests: their block counts, their ids concatenated, their input lengths [tokens];
        ``progress``: the share of the file read so far [fraction], when the warm-up's cut is not
        known yet (see :class:`Deferred`)."""
        lens = np.asarray(lens, dtype=np.int64)
        m = len(lens)
        r0 = self.nreq
        if self.deferred is not None:
            self.deferred.begin(r0, m, self.nd, np.asarray(input_length, dtype=np.int64), progress)
            self.nreq += m
            if len(ids):
                self._feed_ids(lens, ids, np.asarray(input_length, dtype=np.int64), r0)
            self.deferred.end(self)
            return
        if r0 < self.w < r0 + m:          # the warm-up ends inside: two feeds (warm_blocks at the cut)
            c = self.w - r0
            cut = int(lens[:c].sum())
            self.feed(lens[:c], ids[:cut], input_length[:c])
            self.feed(lens[c:], ids[cut:], input_length[c:])
            return
        if self.nreq == self.w and self.warm_blocks is None:
            self.warm_blocks = self.nd
        if m == 0:
            return
        inp = np.asarray(input_length, dtype=np.int64)
        if self.nreq >= self.w:
            self.total_tokens += int(inp.sum())
        self.nreq += m
        if len(ids):
            self._feed_ids(lens, ids, inp, r0)

    def _feed_ids(self, lens, ids, inp, r0) -> None:
        m = len(lens)
        k = len(ids)
        ids = np.asarray(ids)
        st = np.zeros(m + 1, dtype=np.int64)
        np.cumsum(lens, out=st[1:])
        if self.check:
            self._check(st, lens, ids)
        top = int(ids.max())
        self.last, self.n_last = _grown(self.last, self.n_last, top + 1, -1)
        s = self.t
        if s + k >= I32_MAX and self.last.dtype != np.int64:   # times past int32: widen once
            self.last = _widened(self.last, self.n_last, np.int64)
        self._pass(st, ids, inp, r0, s, k)
        self.t = s + k

    def _check(self, st, lens, ids) -> None:
        """Ids dense enough to index by; room for their parents (checked in :meth:`_pass`)."""
        top = int(ids.max())
        if top >= I32_MAX or top > max(4 * (self.t + len(ids)), 1 << 22):
            raise NotDense(top)
        self.parent, self.n_parent = _grown(self.parent, self.n_parent, top + 1, -2)

    def _check_parents(self, ps: np.ndarray, first: np.ndarray, fid: np.ndarray) -> None:
        """Every id always under the same parent (so an id names its whole prefix, and is not twice in a
        request), on the chunk's accesses grouped by block (``ps``: their parents in that order,
        ``first``: a group's first, ``fid``: the groups' ids, ascending): within a group one parent, and
        that one the id's parent kept from before (-2: none yet, then kept now)."""
        if np.any((ps[1:] != ps[:-1]) & ~first[1:]):
            raise NotPrefix()
        pf = ps[first]
        had = self.parent[fid]
        if not np.all((had == pf) | (had == -2)):
            raise NotPrefix()
        self.parent[fid] = pf                                    # the same, or kept now

    # ---------------------------------------------------------------- the marks
    def _marks_below(self, x: np.ndarray, s: int) -> np.ndarray:
        """Marks (times < ``s`` still a block's last use) at times below each ``x`` (``0 <= x <= s``):
        the counts of the superblocks before ``x``'s (``sbc``, kept as the marks change, cumulated once
        a chunk: ``s / 512`` of them, not the whole bitmap), the popcounts of the words of its
        superblock before its word, and of its word's bits below it."""
        nsb = (s >> SB_BITS) + 1
        cum = np.zeros(nsb + 1, dtype=np.int64)
        np.cumsum(self.sbc[:nsb], out=cum[1:])
        w = x >> 6
        sb = x >> SB_BITS
        base = sb << (SB_BITS - 6)                        # the first word of x's superblock
        j = np.arange(SB_WORDS, dtype=np.int64)
        cnt = np.bitwise_count(self.bits[base[:, None] + j])
        cnt *= j < (w - base)[:, None]                     # the words before x's
        below = cum[sb] + cnt.sum(axis=1, dtype=np.int64)
        below += np.bitwise_count(self.bits[w] & (np.left_shift(np.uint64(1), (x & 63).astype(np.uint64))
                                                  - np.uint64(1)))
        return below

    def _set_marks(self, t: np.ndarray, s: int, k: int) -> None:
        """Mark the times ``s + t`` (``t`` distinct in ``[0, k)``: the chunk's own times, unmarked so far):
        one ``packbits`` of the chunk's times, or-ed into its words."""
        off = s & 63
        e = np.zeros(-(-(off + k) // 64) * 64, dtype=bool)
        e[t + off] = True
        words = np.packbits(e, bitorder="little").view("<u8")
        w0 = s >> 6
        self.bits[w0:w0 + len(words)] |= words
        sb0 = s >> SB_BITS
        c = np.bincount(((np.arange(len(words)) + w0) >> (SB_BITS - 6)) - sb0, weights=np.bitwise_count(words))
        self.sbc[sb0:sb0 + len(c)] += c.astype(self.sbc.dtype)

    def _clear_runs(self, a: np.ndarray, n: np.ndarray) -> None:
        """Unmark the runs of times ``[a, a + n)`` (disjoint, ascending, all marked): each run cut into
        its pieces in each word, the pieces of a word or-ed together, xor-ed out of it (a unit of the
        chunk is one run: a few thousand runs a chunk, not one bit per access)."""
        if len(a) == 0:
            return
        w0 = a >> 6
        npc = ((a + n - 1) >> 6) - w0 + 1                  # words each run touches
        run = np.repeat(np.arange(len(a)), npc)
        word = np.arange(len(run), dtype=np.int64)
        word -= np.repeat(np.cumsum(npc) - npc, npc)
        word += w0[run]
        lo = np.maximum(a[run] - (word << 6), 0)           # the piece's bits in its word: [lo, hi)
        hi = np.minimum(a[run] + n[run] - (word << 6), 64)
        mask = _ones(hi) & ~_ones(lo)
        heads = np.flatnonzero(np.concatenate(([True], word[1:] != word[:-1])))
        w = word[heads]
        agg = np.bitwise_or.reduceat(mask, heads)          # the pieces of one word (disjoint: no carry)
        self.bits[w] ^= agg
        self.sbc -= np.bincount(w >> (SB_BITS - 6), weights=np.bitwise_count(agg),
                                minlength=len(self.sbc)).astype(self.sbc.dtype)

    def _pass(self, st, node, inp, r0, s, k) -> None:
        it = self.last.dtype.type
        m = len(st) - 1
        bs = self.bs
        last = self.last
        lens = np.diff(st)
        # Time: the requests in turn, each request's blocks deepest first, so the block at chunk position
        # j of request r is used at time s + st[r] + st[r + 1] - 1 - j. The arrays stay in chunk order.
        tr = np.repeat((st[:-1] + st[1:] - 1 + s).astype(it), lens)
        if k < 2**32 and int(node.max()) < I32_MAX:              # a sort of (block, position) in one int64:
            key = node.astype(np.int64) << 32                    # the uses grouped by block, in time order
            key |= np.arange(k, dtype=np.int64)                  # (5 times a stable argsort's speed)
            key.sort()
            opos = (key & 0xFFFFFFFF).astype(it)
            key >>= 32
            sid = key                                            # the blocks in that order
            del key
        else:
            opos = np.argsort(node, kind="stable").astype(it, copy=False)
            sid = node[opos]
        first = np.ones(k, dtype=bool)                           # the first use in the chunk of a block
        np.not_equal(sid[1:], sid[:-1], out=first[1:])
        fid = sid[first]                                         # the chunk's blocks, ascending
        del sid
        tau = tr[opos]
        tau -= opos                                              # the time of each use, grouped by block
        if self.check:                                           # the parent id of each use's block
            par = np.empty(k, dtype=node.dtype)
            par[1:] = node[:-1]
            par[st[:-1][lens > 0]] = -1                          # a request's first block
            self._check_parents(par[opos], first, fid)
            del par
        lp = last[fid]                                           # their last uses before it (-1: new)
        ps = np.empty(k, dtype=it)                               # each use's previous use, grouped by block
        ps[1:] = tau[:-1]
        ps[first] = lp
        prev = np.empty(k, dtype=it)                             # ... in chunk order
        prev[opos] = ps
        del ps, opos
        first[:-1] = first[1:]                                   # now: the last use in the chunk of a block
        first[-1] = True
        lu = tau[first]                                          # ... its time (block order)
        del tau, first
        last[fid] = lu
        n_old = int(np.count_nonzero(lp >= 0))                   # marks this chunk moves
        n_distinct = len(fid)
        del fid, lp
        ti = np.flatnonzero(prev >= 0)                           # uses of blocks seen before (positions)
        p = prev[ti].astype(np.int64)
        del prev
        # Units: a run of uses of seen blocks of one request at consecutive times whose last uses are
        # consecutive times (a prefix touched together before; none crosses the chunk's start). No other
        # use's last use falls inside a unit's times, so every other use compares alike with all of it,
        # and within it none counts (the later ones were used later): the dominance count is over units,
        # weighed by their uses (Mooncake-like traces: one or two units a request). Along a unit each use
        # is the next block up the prefix, whose rank is one less (one mark fewer above its last use, one
        # more use inside, one more deeper block of the request): its ranks are r, r - 1, ..., r - n + 1
        # from the rank r of its head (its first in time: its last in chunk order, the deepest). Full and
        # partial blocks are told apart by depth afterwards, unit by unit.
        start = np.zeros(k + 1, dtype=bool)                      # a request's first block
        start[st[:-1]] = True
        brk = np.empty(len(ti), dtype=bool)                      # a unit ends at ti[x] (chunk order)
        brk[-1:] = True
        if len(ti) > 1:
            brk[:-1] = ((ti[1:] != ti[:-1] + 1) | (p[:-1] != p[1:] + 1) | start[ti[1:]] | (p[:-1] == s))
        del start
        hx = np.flatnonzero(brk)
        del brk
        size = np.diff(hx, prepend=-1)
        hp, hpos = p[hx], ti[hx].astype(np.int64)
        del p, ti, hx
        hr = np.searchsorted(st, hpos, side="right") - 1        # request (chunk numbering) of each unit
        dh = hpos - st[hr]                                      # depth of its head in the request (0: first)
        dfe = lens[hr] - 1 - dh                                 # deeper blocks of its request used before it
        ht = st[hr] + dfe                                       # chunk time of its head
        to = np.argsort(ht)                                     # the units in time order
        by_p = np.argsort(hp)
        v = np.empty(len(hp), dtype=np.int32)
        v[by_p[::-1]] = np.arange(len(hp), dtype=np.int32)      # rank of p, largest first
        moved = np.empty(len(hp), dtype=np.int64)
        moved[to] = dominance_sum(v[to], size[to])              # #{q in [s, t): prev(q) > p}
        del v, to
        above = np.zeros(len(hp), dtype=np.int64)
        before = hp < s
        if np.any(before):
            above[before] = self.nd - self._marks_below(hp[before] + 1, s)
        inside = ht + s - np.maximum(s, hp + 1)
        rank = above + inside - moved - dfe                     # rank of each unit's head
        del above, inside, moved, ht
        # the unit's blocks: depths dh (its head) up to dh - size + 1; full below nf = input // block, the
        # one at depth nf partial (rem tokens), none past it
        nf = inp[hr] // bs
        rem = inp[hr] - nf * bs
        lo = rank - size + 1
        hi = rank - np.maximum(0, dh - nf + 1)
        fu = np.flatnonzero(hi >= lo)
        pi = np.flatnonzero((rem > 0) & (nf <= dh) & (nf > dh - size))
        units = (hr[fu], lo[fu], hi[fu], hr[pi], rank[pi] - (dh[pi] - nf[pi]), rem[pi])  # (request, lo, hi)...
        del dh, nf, rem, lo, hi, fu, pi, dfe, rank
        if self.deferred is not None:                           # blocks first seen, by request
            self.deferred.new_blocks = lens - np.bincount(hr, weights=size, minlength=m).astype(np.int64)
        nd_after = self.nd + n_distinct - n_old
        if self.deferred is not None:
            self.deferred.log(units)
        else:
            self._count(units, self.w - r0, nd_after)
        del units, hr
        ob = by_p[before[by_p]]                                 # the units of marks moved, by last use
        if int(size[ob].sum()) != n_old:
            raise AssertionError("units and moved marks disagree")  # an invariant of the method
        self._grow_marks(s + k)
        self._clear_runs(hp[ob], size[ob])
        self._set_marks(lu.astype(np.int64) - s, s, k)
        self.nd = nd_after

    def _grow_marks(self, t: int) -> None:
        """Room in ``bits`` and ``sbc`` for the times below ``t``, whole superblocks."""
        nsb = (t >> SB_BITS) + 2
        self.bits, self.n_bits = _grown(self.bits, self.n_bits, nsb * SB_WORDS, 0)
        self.sbc, self.n_sbc = _grown(self.sbc, self.n_sbc, nsb, 0)

    def _count(self, units, first: int, nd: int) -> None:
        """Add the hits of the units of requests ``first`` on (chunk numbering) to the counts by rank."""
        rq, lo, hi, p_rq, p_rank, p_tok = units
        c = rq >= first
        if np.any(c):                                         # kept as they are: 8 bytes a unit, summed at the end
            self.runs.append(np.stack((lo[c], hi[c])).astype(np.int32 if nd < I32_MAX else np.int64))
        c = p_rq >= first
        if np.any(c):
            u, inv = np.unique(p_rank[c], return_inverse=True)   # 8 bytes a rank when the sums fit int32
            tok = np.bincount(inv.ravel(), weights=p_tok[c], minlength=len(u)).round()
            self.part_rank.append(u.astype(np.int32 if nd < I32_MAX else np.int64))
            self.part_tok.append(tok.astype(np.int32 if len(tok) == 0 or tok.max() < I32_MAX else np.int64))

    # ---------------------------------------------------------------- result
    def result(self) -> Reuse:
        """The cumulated tokens by rank; the state of the pass is freed.

        Raises :class:`NeedCount` when the warm-up's cut was not known and fell where the pass had
        not kept what it needs (see :class:`Deferred`): feed the trace again with its count."""
        if self.requests is not None and self.nreq != self.requests:
            raise ValueError(f"fed {self.nreq} requests, expected {self.requests}")
        if self.deferred is not None:
            self.deferred.finish(self)
        warm = self.nd if self.warm_blocks is None else self.warm_blocks
        unique = self.nd
        self.last = self.parent = self.bits = self.sbc = None
        cum = np.zeros(unique + 2, dtype=np.int64)  # cum[1 + r]: full-block hits of rank r, from differences
        for lohi in self.runs:                       # +1 at lo, -1 past hi (a sort and one += on distinct
            for at, sign in ((lohi[0], 1), (lohi[1] + 1, -1)):   # ranks: six times np.add.at's speed)
                u, n = np.unique(at, return_counts=True)
                cum[1 + u.astype(np.int64)] += sign * n
        self.runs = []
        np.cumsum(cum[1:], out=cum[1:])
        cum = cum[:unique + 1]
        cum[1:] *= self.bs
        for u, tok in zip(self.part_rank, self.part_tok):      # each u distinct (np.unique's): one +=
            cum[1 + u.astype(np.int64)] += tok.astype(np.int64)
        self.part_rank, self.part_tok = [], []
        np.cumsum(cum, out=cum)
        return Reuse(cum, int(self.total_tokens), self.w, int(warm), int(unique), self.nreq, self.bs)
