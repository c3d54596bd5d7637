"""Reading a JSONL prefix-reuse trace a block of lines at a time, without a Python object per block (issue 19).

:func:`chunks` yields the requests of a trace file (plain or gzip) a block of whole lines
(``BLOCK_BYTES`` of text) at a time, as arrays. A gzip file is inflated directly (:func:`_inflate`:
one decompressor a member, its CRC and length checked at the member's end; ISA-L's ``isal_zlib`` for
a file of 1 MiB or more when it is installed, twice zlib's speed, else ``zlib``), so the share of the
file consumed is known after each block (the pass estimates the warm-up's cut from it).
Each block is parsed by the first of:

1. :func:`parse_mooncake` -- the layout Mooncake's traces are written in (``json.dumps`` of
   ``{"timestamp": int, "input_length": int, "output_length": int, "hash_ids": [int, ...]}``, one a
   line). The block is split into its runs of ASCII digits and the gaps between them, with numpy,
   no loop over lines: every gap must be, line for line, exactly the layout's text between two
   values (its length and every byte), so each value is one run of digits where a value goes and
   nothing else is anywhere; no number has a leading zero (JSON's rule) or 19 digits or more
   (int64); the runs are read eight digits at a time (:func:`_eight`, simdjson's SWAR method).
   A block that is anything else (another key order or spacing, a float or negative number, an
   empty list, a blank line, ``\r``) is not guessed at: it goes to
2. :func:`parse_bailian` -- the same for the Qwen Bailian layout (``chat_id``, ``parent_chat_id``
   (negative allowed), ``timestamp`` (digits, or digits ``.`` digits, read exactly as ``json.loads``
   reads them), ``input_length``, ``output_length``, ``type`` (lowercase letters), ``turn``,
   ``hash_ids``), else to
3. :func:`parse_json` -- one ``json.loads`` of the block's lines as an array, with type checks over
   whole columns (any format), bounded Python objects (one block's).
4. If that fails too the block raises :class:`Unreadable` and the caller reads the file line by
   line, naming every problem at its ``file line N`` (``planner.traffic.traces.read_trace``).

:func:`count_requests` counts the requests (non-blank lines), a pass over the text (``bytes.count``):
only when the pass's estimate of the warm-up's cut missed (``planner.traffic.lru_pass.Deferred``).

:func:`read_ahead` runs :func:`chunks` in a worker process (a fork, from ``AHEAD_MIN_FILE`` bytes of
file on, where ``fork`` is available and a CPU is idle: :func:`_idle_cpu`) and hands the same parts over
through a pipe, so the caller passes part ``i`` while the worker inflates and parses part ``i + 1``:
the read (0.4-0.55 s of inflating and 1.3-2 s of parsing a million requests) and the stack-distance
pass (1.5-1.8 s) on the two cores of a small machine instead of one after the other. The parts and
the exceptions are the same, in the same order; the worker is stopped and reaped however the caller
leaves (tests/test_trace_read_ahead.py).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import sys
import zlib
from pathlib import Path

import numpy as np

try:  # ISA-L's inflate (PyPI ``isal``, pycompression/python-isal): zlib's API, twice its speed here
    from isal import isal_zlib as INFLATE
    ERRORS: tuple = (OSError, EOFError, zlib.error, INFLATE.error)
except ImportError:  # the same stream read by zlib (tests/test_trace_inflate.py), about 1 s instead of 0.5 s per 270 MB
    INFLATE = zlib
    ERRORS = (OSError, EOFError, zlib.error)

BLOCK_BYTES = 1 << 20          # text per block (about 5,000 lines of a Mooncake trace; 2 MB: as fast, 8 MB more)
MOONCAKE, BAILIAN = "mooncake", "bailian"


class Unreadable(Exception):
    """A block neither fast parser takes: the file is read line by line to locate its problems."""


RAW_BYTES = 1 << 20            # file bytes read at a time


ISAL_MIN_FILE = 1 << 20        # gzip files from this size [bytes] are inflated by ISA-L (when installed)


def _inflate(f, lib=zlib):
    """``(text, file bytes consumed)`` pieces of a gzip file, one decompressor a member (its CRC-32
    and length checked at the member's end), none larger than ``BLOCK_BYTES``.

    ``lib``: ``zlib``, or ISA-L's ``isal_zlib`` (the same API, the same checks, twice the speed). ISA-L
    takes a few bytes of input ahead of the output it returns: at most 7 bytes at 1 MiB pieces, up to
    14 KB at 300-byte ones (measured on the benchmark's traces against zlib's exact count), so the
    share of the file read is off by less than 1.5% on a file of ``ISAL_MIN_FILE`` or more, against
    the 25% margin of the warm-up's estimate (``planner.traffic.lru_pass.Deferred``).

    Raises ``EOFError`` for a file cut short and ``OSError`` for bytes after a member that are
    neither another member nor zero padding (what ``gzip`` refuses too)."""
    d = lib.decompressobj(31)
    read = 0
    started = False
    while raw := f.read(RAW_BYTES):
        read += len(raw)
        data = raw
        while data:
            out = d.decompress(data, BLOCK_BYTES)
            started = True
            data = d.unconsumed_tail
            if d.eof:
                data = d.unused_data
                if data and not data.startswith(b"\x1f\x8b"):
                    if data.strip(b"\0") or f.read(RAW_BYTES).strip(b"\0"):
                        raise OSError("not a gzip member after the end of the last one")
                    data = b""
                d = lib.decompressobj(31)
                started = False
            yield out, read - len(data)
    if started and not d.eof:
        raise EOFError("compressed file ended before the end-of-stream marker was reached")


def blocks(path: Path, size: int | None = None, progress: bool = False):
    """The file's text, about ``size`` (default ``BLOCK_BYTES``) bytes at a time, each ending at a
    line's end (or the file's), a UTF-8 byte order mark at its start dropped; with ``progress``, ``(text, share of the file's bytes read)`` (of the
    compressed bytes for gzip, counted as the decompressor consumes them)."""
    size = size or BLOCK_BYTES
    total = max(1, Path(path).stat().st_size)
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
        f.seek(0)
        lib = INFLATE if total >= ISAL_MIN_FILE else zlib
        pieces = _inflate(f, lib) if gz else ((b, f.tell()) for b in iter(lambda: f.read(size), b""))
        held, n_held = [], 0                             # text not yet yielded, in pieces
        head = True                                      # the file's start not yet yielded
        for out, pos in pieces:
            held.append(out)
            n_held += len(out)
            if n_held < size:
                continue
            cut = out.rfind(b"\n") + 1
            if cut == 0:
                continue
            blk = b"".join(held[:-1]) + out[:cut]
            held = [out[cut:]]
            n_held = len(held[0])
            if head:
                blk, head = _without_bom(blk), False
            yield (blk, pos / total) if progress else blk
        if n_held:
            blk = _without_bom(b"".join(held)) if head else b"".join(held)
            yield (blk, 1.0) if progress else blk


BOM = b"\xef\xbb\xbf"


def _without_bom(text: bytes) -> bytes:
    """The file's first text without a UTF-8 byte order mark (what a Windows editor may write first;
    Python's ``utf-8-sig`` codec drops it the same way, and only there)."""
    return text[len(BOM):] if text.startswith(BOM) else text


# The gaps between the numbers of a line in Mooncake's layout (``json.dumps`` of its record).
_OPEN = b'{"timestamp": '
_GAP_IN, _GAP_OUT, _GAP_IDS = b', "input_length": ', b', "output_length": ', b', "hash_ids": ['
_CLOSE = b"]}\n"
_NEXT = _CLOSE + _OPEN                       # the gap from a line's last id to the next line's timestamp
# SWAR: eight ASCII digits to their value in three multiplications (simdjson's
# ``parse_eight_digits_unrolled``, simdjson/simdjson ``include/simdjson/generic/numberparsing.h``;
# Lemire, "Number parsing at a gigabyte per second", 2021). ``_NIB[c]`` keeps the low nibbles of the
# top ``c`` bytes of a little-endian word: the ``c`` digits that end there, the bytes before them zero.
_NIB = np.array([0] + [(0x0F0F0F0F0F0F0F0F << (8 * (8 - c))) & (2**64 - 1) for c in range(1, 9)],
                dtype=np.uint64)
_U = {x: np.uint64(x) for x in (8, 10, 16, 32, 0xFFFFFFFF, 0x000000FF000000FF, 0x000F424000000064,
                                  0x0000271000000001)}


def _eight(w: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Value of the last ``c`` (0..8) bytes, ASCII digits, of each little-endian word ``w`` [uint64]."""
    d = w & _NIB[c]
    d = d * _U[10] + (d >> _U[8])            # each even byte: two digits
    m = _U[0x000000FF000000FF]
    return (((d & m) * _U[0x000F424000000064] + ((d >> _U[16]) & m) * _U[0x0000271000000001]) >> _U[32]) \
        & _U[0xFFFFFFFF]


def _digits_value(blk: bytes, end: np.ndarray, ln: np.ndarray) -> np.ndarray:
    """The numbers written as the ``ln`` (1..18) ASCII digits ending before each byte offset ``end``
    [int64]. Every ``end - 8 * ceil(ln / 8)`` must be >= 0."""
    words = np.ndarray((len(blk) - 7,), dtype="<u8", buffer=blk, strides=(1,))  # the 8 bytes at each offset
    val = np.empty(len(end), dtype=np.int64)
    for a in range(0, len(end), 1 << 14):           # a slice at a time: small temporaries
        b = a + (1 << 14)
        val[a:b] = _eight(words[end[a:b] - 8], np.minimum(ln[a:b], 8))
    long = np.flatnonzero(ln > 8)
    if len(long):
        e, c = end[long], ln[long]
        hi = _eight(words[e - 16], np.clip(c - 8, 0, 8)).astype(np.int64)
        big = c > 16
        if np.any(big):
            hi[big] += _eight(words[e[big] - 24], c[big] - 16).astype(np.int64) * 10**8
        val[long] += hi * 10**8
    return val


_SEP = np.frombuffer(b", ", dtype="<u2")[0]


def _pairs_are(blk: bytes, at: np.ndarray, pair: np.uint16) -> bool:
    """Every ``blk[at[i]:at[i] + 2]`` is ``pair`` (the two bytes read as one little-endian word: one
    gather, not two)."""
    pairs = np.ndarray((len(blk) - 1,), dtype="<u2", buffer=blk, strides=(1,))   # the 2 bytes at each offset
    return bool(np.all(pairs[at] == pair))


def _window_is(u: np.ndarray, at: np.ndarray, text: bytes) -> bool:
    """Every ``u[at + i] == text[i]`` (``at + len(text) <= len(u)``): eight bytes at a time, the last
    eight overlapping, for a text of eight bytes or more."""
    if len(at) == 0:
        return True
    n = len(text)
    if n < 8:
        return bool(np.all(u[at[:, None] + np.arange(n)] == np.frombuffer(text, dtype=np.uint8)))
    words = np.ndarray((len(u) - 7,), dtype="<u8", buffer=u, strides=(1,))   # the 8 bytes at each offset
    for o in sorted({*range(0, n - 7, 8), n - 8}):
        if not np.all(words[at + o] == np.frombuffer(text[o:o + 8], dtype="<u8")[0]):
            return False
    return True


def _runs(dig: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(start, end)`` offsets of the runs of True in ``dig`` (its first and last False), each run
    ``[start, end)``: contiguous, int32 below 2^31 bytes (half the memory traffic of int64 for the
    parsers' dozens of passes over them: 11% of a Mooncake block's parse, measured)."""
    edge = np.flatnonzero(dig[1:] != dig[:-1]).astype(np.int32 if len(dig) < 2**31 - 1 else np.int64)
    edge += 1                                        # starts and ends, alternating
    se = edge.reshape(-1, 2).T.copy()
    return se[0], se[1]


def parse_mooncake(blk: bytes):
    """``(input_length, output_length, timestamp, lens, ids)`` of a block in Mooncake's layout, or None.

    The block is split into its runs of ASCII digits and the gaps between them. It is in the layout
    when the gaps are, line for line, exactly ``{"timestamp": `` (the block's first),
    ``, "input_length": ``, ``, "output_length": ``, ``, "hash_ids": [``, then ``, `` between ids
    (one id at least) and ``]}`` newline before the next line's ``{"timestamp": `` (or the block's
    end): each gap's length and every byte of it are checked, so a value is one run of digits where a
    value goes and nothing else is anywhere. No run may have a leading zero (JSON's rule) or 19 digits
    or more (int64). The runs are then read eight digits at a time (:func:`_eight`).
    """
    if not blk.endswith(b"\n"):
        blk += b"\n"
    u = np.frombuffer(blk, dtype=np.uint8)
    if len(u) < len(_OPEN) + len(_GAP_IN) or u[0] != 123:
        return None
    dig = (u - np.uint8(48)) < 10                    # ASCII digits (the subtraction wraps for the rest)
    start, end = _runs(dig)                          # (u[0], u[-1] are not digits)
    del dig
    n_num = len(start)
    gap_at = np.empty(n_num + 1, dtype=start.dtype)  # gap i: [gap_at[i], gap_at[i] + gl[i])
    gap_at[0] = 0
    gap_at[1:] = end
    gl = np.empty(n_num + 1, dtype=start.dtype)
    gl[:-1] = start - gap_at[:-1]
    gl[-1] = len(u) - end[-1] if n_num else len(u)
    if n_num < 4 or gl[0] != len(_OPEN) or gl[-1] != len(_CLOSE):
        return None
    heads = np.flatnonzero(gl == len(_NEXT))
    heads = np.concatenate(([0], heads))             # the gap opening each line
    n = len(heads)
    if heads[-1] + 4 > n_num or np.any(np.diff(heads) < 4):   # 3 fields and 1 id at least a line
        return None
    if not (np.all(gl[heads + 1] == len(_GAP_IN)) and np.all(gl[heads + 2] == len(_GAP_OUT))
            and np.all(gl[heads + 3] == len(_GAP_IDS))):
        return None
    two = gl == 2
    if int(np.count_nonzero(two)) != n_num - 4 * n:  # every other gap is one between two ids
        return None
    if not _pairs_are(blk, gap_at[two], _SEP):       # ", "
        return None
    if not (_window_is(u, gap_at[heads[1:]], _NEXT) and _window_is(u, gap_at[:1], _OPEN)
            and _window_is(u, gap_at[heads + 1], _GAP_IN) and _window_is(u, gap_at[heads + 2], _GAP_OUT)
            and _window_is(u, gap_at[heads + 3], _GAP_IDS) and _window_is(u, gap_at[-1:], _CLOSE)):
        return None
    ln = end - start
    if ln.max() > 18 or np.any((u[start] == 48) & (ln > 1)):   # past int64's 18 safe digits; a leading zero
        return None
    vals = _digits_value(blk, end, ln)
    del start, end, ln, gap_at, gl, two
    k = np.diff(np.append(heads, n_num)) - 3          # ids of each line
    keep = np.ones(n_num, dtype=bool)
    keep[heads] = keep[heads + 1] = keep[heads + 2] = False
    ids = vals[keep]
    return vals[heads + 1], vals[heads + 2], vals[heads].astype(float), k.astype(np.int64), _small(ids)


_B_OPEN = b'{"chat_id": '
_B_PARENT, _B_PARENT_NEG = b', "parent_chat_id": ', b', "parent_chat_id": -'
_B_TS, _B_IN, _B_OUT = b', "timestamp": ', b', "input_length": ', b', "output_length": '
_B_TYPE, _B_TURN, _B_IDS = b', "type": "', b'", "turn": ', b', "hash_ids": ['


def parse_bailian(blk: bytes):
    """``(input_length, output_length, timestamp, lens, ids)`` of a block in the Qwen Bailian layout
    (``json.dumps`` of ``{"chat_id": int, "parent_chat_id": int, "timestamp": float, "input_length":
    int, "output_length": int, "type": str, "turn": int, "hash_ids": [int, ...]}``, one a line), or None.

    As :func:`parse_mooncake`, gap by gap: a line is the runs of digits of its fields, each gap its
    key's text exactly; ``parent_chat_id`` may be negative (``-1`` for a first turn); the timestamp
    is digits, or digits ``.`` digits (no exponent), read as ``M / 10**n`` with ``M < 10**15`` (one
    correctly rounded division of two exact doubles: the double ``json.loads`` reads); ``type`` is
    lowercase letters only (no escape, no digit); one id at least. Anything else: None.
    """
    if not blk.endswith(b"\n"):
        blk += b"\n"
    u = np.frombuffer(blk, dtype=np.uint8)
    if len(u) < len(_B_OPEN) + 2 or u[0] != 123:
        return None
    dig = (u - np.uint8(48)) < 10
    start, end = _runs(dig)
    del dig
    n_num = len(start)
    if n_num < 7:
        return None
    gap_at = np.empty(n_num + 1, dtype=start.dtype)
    gap_at[0] = 0
    gap_at[1:] = end
    gl = np.empty(n_num + 1, dtype=start.dtype)
    gl[:-1] = start - gap_at[:-1]
    gl[-1] = len(u) - end[-1]
    # the first run of each line: after a gap opening with "]" (the last id's, ``]}\n{"chat_id": ``); the
    # gaps' texts are checked below, so a "]" elsewhere fails there
    first = np.flatnonzero(u[gap_at[1:n_num]] == 93)
    first += 1
    first = np.concatenate(([0], first))
    n = len(first)
    last = np.append(first[1:], n_num)                 # past the last run of each line
    if np.any(last - first < 7) or gl[-1] != len(_CLOSE):   # 6 numbers and 1 id at least
        return None
    f = ((gl[first + 3] == 1) & (u[gap_at[first + 3]] == 46)).astype(np.int64)   # "." in the timestamp
    head = np.zeros(n_num + 1, dtype=bool)             # the gaps of the fields
    for j in range(7):
        head[first + j] = True
    head[first[f == 1] + 7] = True
    head[-1] = True
    two = ~head
    k = last - first - 6 - f                           # ids of each line
    if np.any(k < 1):
        return None
    if not (np.all(gl[two] == 2) and _pairs_are(blk, gap_at[two], _SEP)):   # ", "
        return None
    neg = gl[first + 1] == len(_B_PARENT_NEG)
    opened = np.full(n, len(_CLOSE + _B_OPEN), dtype=np.int64)
    opened[0] = len(_B_OPEN)
    if not (np.array_equal(gl[first], opened) and np.all(neg | (gl[first + 1] == len(_B_PARENT)))
            and np.all(gl[first + 2] == len(_B_TS)) and np.all(gl[first + 3 + f] == len(_B_IN))
            and np.all(gl[first + 4 + f] == len(_B_OUT)) and np.all(gl[first + 6 + f] == len(_B_IDS))):
        return None                                     # every field's gap as long as its text
    ty = first + 5 + f                                  # the gap holding the type string
    ty_at, ty_len = gap_at[ty], gl[ty] - len(_B_TYPE) - len(_B_TURN)
    if np.any(ty_len < 0):
        return None
    a, b = ty_at + len(_B_TYPE), ty_at + len(_B_TYPE) + ty_len
    inner = np.repeat(a - np.cumsum(ty_len) + ty_len, ty_len) + np.arange(int(ty_len.sum()))  # the types' bytes
    if not (bool(np.all((u[inner] - np.uint8(97)) < 26))      # a-z
            and _window_is(u, gap_at[:1], _B_OPEN) and _window_is(u, gap_at[first[1:]], _CLOSE + _B_OPEN)
            and _window_is(u, gap_at[first[neg] + 1], _B_PARENT_NEG)
            and _window_is(u, gap_at[first[~neg] + 1], _B_PARENT)
            and _window_is(u, gap_at[first + 2], _B_TS)
            and _window_is(u, gap_at[first + 3 + f], _B_IN) and _window_is(u, gap_at[first + 4 + f], _B_OUT)
            and _window_is(u, ty_at, _B_TYPE) and _window_is(u, b, _B_TURN)
            and _window_is(u, gap_at[first + 6 + f], _B_IDS) and _window_is(u, gap_at[-1:], _CLOSE)):
        return None
    ln = end - start
    frac = np.zeros(n_num, dtype=bool)
    frac[first[f == 1] + 3] = True                      # a timestamp's digits after the point: zeros lead
    if ln.max() > 18 or np.any((u[start] == 48) & (ln > 1) & ~frac):
        return None
    vals = _digits_value(blk, end, ln)
    ts = vals[first + 2].astype(np.float64)
    fi = np.flatnonzero(f)
    if len(fi):
        nd = ln[first[fi] + 3]
        if np.any(ln[first[fi] + 2] + nd > 15):         # M past 10**15: not one exact division
            return None
        m = vals[first[fi] + 2] * 10 ** nd + vals[first[fi] + 3]
        ts[fi] = m.astype(np.float64) / (10.0 ** nd)
    keep = np.ones(n_num, dtype=bool)
    for j in range(6):
        keep[first + j] = False
    keep[first[fi] + 6] = False
    return (vals[first + 3 + f], vals[first + 4 + f], ts, k.astype(np.int64),
            _small(vals[keep]))


def _small(a: np.ndarray) -> np.ndarray:
    return a.astype(np.int32) if len(a) == 0 or a.max() < 2**31 - 1 else a


def parse_json(blk: bytes):
    """``(fmt of the first record, input_length, output_length, timestamp, lens, ids)`` by one
    ``json.loads`` of the block's lines, or None when anything is off."""
    try:
        text = blk.decode("utf-8")
    except UnicodeDecodeError:
        return None
    body = [x for x in text.split("\n") if x.strip()]
    if not body:
        return "", *(np.zeros(0, dtype=d) for d in (np.int64, np.int64, float, np.int64, np.int32))
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
    if max(flat, default=0) >= 2**63 or max(inp) >= 2**63 or max(outl) >= 2**63:
        return None
    inp_a, out_a = np.asarray(inp, dtype=np.int64), np.asarray(outl, dtype=np.int64)
    ts_a = np.asarray(ts, dtype=float)
    flat_a = np.asarray(flat, dtype=np.int64)
    if inp_a.min() < 0 or out_a.min() < 0 or not np.all(np.isfinite(ts_a)) or (flat and flat_a.min() < 0):
        return None
    return fmt, inp_a, out_a, ts_a, np.fromiter(map(len, hs), dtype=np.int64, count=len(hs)), _small(flat_a)


def chunks(path: Path, size: int | None = None, progress: bool = False):
    """``(fmt, input_length, output_length, timestamp [as written], lens, ids)`` a block at a time
    (with ``progress``, the share of the file read after it as a seventh).

    ``fmt`` is the format of the block's first record ("" for a block of blank lines). Raises
    :class:`Unreadable` at the first block neither parser takes, or a file that cannot be read to
    its end (not gzip, damaged).
    """
    fast = [(MOONCAKE, parse_mooncake), (BAILIAN, parse_bailian)]
    try:
        for item in blocks(path, size, progress):
            blk, frac = item if progress else (item, None)
            for i, (fmt, parse) in enumerate(fast):
                if (part := parse(blk)) is not None:
                    part = (fmt, *part)
                    if i:                      # the layout that read this block is tried first next time
                        fast.insert(0, fast.pop(i))
                    break
            else:
                part = parse_json(blk)
                if part is None:
                    raise Unreadable()
            yield (*part, frac) if progress else part
    except ERRORS as exc:   # zlib.error: a damaged deflate stream
        raise Unreadable() from exc


AHEAD_MIN_FILE = 4 << 20      # files from this size [bytes] are read and parsed in a worker process (past the measured crossover: see read_ahead)
AHEAD_IDLE_CPU = 0.5          # ... when the CPUs' 1-minute load average leaves at least this much of one idle [CPUs]


class _Failed:
    """What the worker of :func:`read_ahead` raised, sent to the parent to be raised there."""

    def __init__(self, exc: BaseException):
        self.exc = exc


def _produce(conn, path, size, progress) -> None:
    """The worker of :func:`read_ahead`: :func:`chunks` sent one by one, then None, or the exception.

    SIGINT ignored (Ctrl-C reaches the whole process group: the parent handles it and stops the
    worker) and SIGTERM back to its default (the planner's handler raises in the parent's code: here
    it just ends the process). The parent gone, a send fails (EPIPE) and the worker ends."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        parts = chunks(path, size, progress)
        while True:
            try:
                part = next(parts, None)
            except Exception as exc:  # noqa: BLE001 - raised again in the parent (Unreadable, MemoryError, ...)
                conn.send_bytes(_failure(exc))
                break
            conn.send(part)
            if part is None:
                break
    except OSError:               # the parent closed its end (stopped early, or gone): nothing to do
        pass
    finally:
        conn.close()


def _failure(exc: BaseException) -> bytes:
    """The exception pickled for the parent, or, one that does not pickle and unpickle, a RuntimeError
    naming it."""
    import pickle
    try:
        data = pickle.dumps(_Failed(exc))
        pickle.loads(data)
        return data
    except Exception as err:  # noqa: BLE001
        return pickle.dumps(_Failed(RuntimeError(f"the trace reader's worker failed: {exc!r} ({err!r})")))


def _received(conn, proc):
    """The parts the worker sends, until its None; its exception raised here. A worker that died
    without a word (killed: out of memory, a signal) raises :class:`Unreadable` (the caller then
    reads the file whole, in this process)."""
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            proc.join()
            raise Unreadable(f"the trace reader's worker ended (exit code {proc.exitcode})") from None
        if msg is None:
            return
        if isinstance(msg, _Failed):
            raise msg.exc
        yield msg


def _idle_cpu() -> bool:
    """A CPU to spare for the worker: this process may use two or more (its affinity) and the 1-minute
    load average (every runnable process of the system, this one included) leaves ``AHEAD_IDLE_CPU`` of
    one idle. On a machine whose CPUs other work keeps busy the worker gains nothing (Linux shares the
    CPUs between sessions, so this session's two processes get what its one would) and costs its
    transport, 10-15% more CPU time (measured on the 2-core development machine at a load of 3: 1 M
    requests 3.2-5.3 s with the worker, 2.7-3.9 s without)."""
    cpus = len(os.sched_getaffinity(0))
    return cpus >= 2 and os.getloadavg()[0] <= cpus - AHEAD_IDLE_CPU


def _fork_context():
    """multiprocessing's ``fork`` context when a worker can be started here, else None: no fork (Windows;
    macOS, where fork is unsafe with system frameworks), no CPU to spare (:func:`_idle_cpu`), or this
    process is itself a daemonic worker (which multiprocessing does not let have children)."""
    if sys.platform != "linux":
        return None
    try:
        if not _idle_cpu():
            return None
        import multiprocessing as mp
        if mp.current_process().daemon or "fork" not in mp.get_all_start_methods():
            return None
        return mp.get_context("fork")
    except (ImportError, OSError):
        return None


PIPE_BYTES = 1 << 20           # the pipe's buffer asked for (Linux's default cap for a user, /proc/sys/fs/pipe-max-size)


def _widen_pipe(conn) -> None:
    """The pipe's buffer ``PIPE_BYTES`` (``F_SETPIPE_SZ``; 64 KB by default) where the system allows it,
    so the worker writes a part and goes on parsing the next instead of waiting for each read."""
    try:
        import fcntl
        fcntl.fcntl(conn.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_BYTES)
    except (ImportError, OSError):
        pass


@contextlib.contextmanager
def read_ahead(path: Path, size: int | None = None, progress: bool = False, min_file: int | None = None):
    """:func:`chunks` of the file (the same parts, in the same order, the same exceptions at the same
    point), read and parsed in a worker process while the caller works on the previous part.

    Use as ``with read_ahead(path, progress=True) as parts: for part in parts: ...``: on leaving the
    block (the end, an exception, ``KeyboardInterrupt``) the worker is stopped and waited for, so none
    is left running. The worker is a fork of this process (the caller's module state, monkeypatches
    included, carried over: no import, a few milliseconds to start) sending each part pickled through
    a pipe widened to ``PIPE_BYTES`` (about half a MB of arrays a MB of text, 100 MB a million
    requests: the pipe's buffer bounds how far it runs ahead, a part or two). A file below ``min_file`` bytes (default ``AHEAD_MIN_FILE``), or
    where no worker can be forked (:func:`_fork_context`), is read in this process, by :func:`chunks`.
    """
    min_file = AHEAD_MIN_FILE if min_file is None else min_file
    ctx = _fork_context() if Path(path).stat().st_size >= min_file else None
    proc = None
    if ctx is not None:
        recv, send = ctx.Pipe(duplex=False)
        _widen_pipe(recv)
        proc = ctx.Process(target=_produce, args=(send, path, size, progress), daemon=True,
                           name="planner trace reader")
        try:
            proc.start()
        except OSError:          # no process to be had (a limit on processes, memory): read it here
            recv.close()
            proc = None
        send.close()             # the worker's end: only its copy stays open, so its exit ends recv
    if proc is None:
        yield chunks(path, size, progress)
        return
    try:
        yield _received(recv, proc)
    finally:
        recv.close()             # a worker still sending gets EPIPE
        proc.join(0.05)          # one that sent its end exits by itself; one still reading is stopped
        if proc.exitcode is None:
            proc.terminate()
        proc.join(5)
        if proc.exitcode is None:
            proc.kill()
            proc.join()
        proc.close()


def count_requests(path: Path, size: int | None = None) -> int:
    """Non-blank lines of the file (the requests of a well-formed trace): its newlines, where every line
    of a block starts with ``{``, else line by line as the readers skip them (``str.strip``)."""
    n = 0
    try:
        for blk in blocks(path, size):
            a = np.frombuffer(blk, dtype=np.uint8)
            nl = np.flatnonzero(a == 10)
            heads = nl[nl + 1 < len(a)] + 1
            if a[0] == 123 and np.all(a[heads] == 123):  # every line opens an object ("{"): none blank
                n += len(nl) + (not blk.endswith(b"\n"))
            else:
                n += sum(1 for x in blk.decode("utf-8", "replace").split("\n") if x.strip())
    except ERRORS as exc:   # zlib.error: a damaged deflate stream
        raise Unreadable() from exc
    return n
