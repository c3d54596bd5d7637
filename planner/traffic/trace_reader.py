"""Reading a JSONL prefix-reuse trace a block of lines at a time, without a Python object per block (issue 19).

:func:`chunks` yields the requests of a trace file (plain or gzip) a block of whole lines
(``BLOCK_BYTES`` of text) at a time, as arrays. Each block is parsed by the first of:

1. :func:`parse_mooncake` -- the layout Mooncake's traces are written in (``json.dumps`` of
   ``{"timestamp": int, "input_length": int, "output_length": int, "hash_ids": [int, ...]}``, one a
   line). The block is checked whole, with bytes operations and numpy, no loop over lines: with
   every digit made ``0`` and every run of them one ``0``, it must equal the layout's line for line
   (each line's number of ids from its length), so each value is one run of digits where a value
   goes, and nothing else is; no number has a leading zero (JSON's rule) or 19 digits or more
   (int64), checked by counting the digits of the numbers read against the block's; every number of
   the block is read at once by ``np.fromstring`` with its non-digits made spaces. A block that is
   anything else (another key order or spacing, a float or negative number, an empty list, a blank
   line, ``\r``) is not guessed at: it goes to
2. :func:`parse_json` -- one ``json.loads`` of the block's lines as an array, with type checks over
   whole columns (any format, Bailian's too), bounded Python objects (one block's).
3. If that fails too the block raises :class:`Unreadable` and the caller reads the file line by
   line, naming every problem at its ``file:line`` (``planner.traffic.traces.read_trace``).

:func:`count_requests` counts the requests (non-blank lines) first, a cheap pass over the text
(``bytes.count``), when the warm-up needs the number of requests before the pass; the pass checks
that it was fed as many (else the caller reads the file whole).
"""

from __future__ import annotations

import gzip
import itertools
import json
from pathlib import Path

import numpy as np

BLOCK_BYTES = 1 << 21          # text per block (about 12,000 lines of a Mooncake trace)
MOONCAKE, BAILIAN = "mooncake", "bailian"
_DIGITS = b"0123456789"
_SPACES = bytes(c if 48 <= c < 58 else 32 for c in range(256))            # non-digits -> space
_POW10 = 10 ** np.arange(1, 19, dtype=np.int64)                  # digits of v: 1 + #{10^j <= v}
_ZEROS = bytes(48 if 48 <= c < 58 else c for c in range(256))
_PREFIX = b'{"timestamp": 0, "input_length": 0, "output_length": 0, "hash_ids": [0'
_SUFFIX = b"]}\n"
_SKELETON: dict[int, bytes] = {}
_POW18 = 10**18


class Unreadable(Exception):
    """A block neither fast parser takes: the file is read line by line to locate its problems."""


def open_binary(path: Path):
    """The file's bytes, decompressed when it is gzip (detected by its magic number)."""
    with open(path, "rb") as f:
        magic = f.read(2)
    return gzip.open(path, "rb") if magic == b"\x1f\x8b" else open(path, "rb")


def blocks(path: Path, size: int | None = None):
    """The file's text, ``size`` (default ``BLOCK_BYTES``) bytes at a time extended to the end of a line."""
    size = size or BLOCK_BYTES
    with open_binary(path) as fh:
        while blk := fh.read(size):
            if not blk.endswith(b"\n"):
                blk += fh.readline()
            yield blk


def _skeleton(k: int) -> bytes:
    return _PREFIX + b", 0" * (k - 1) + _SUFFIX


def parse_mooncake(blk: bytes):
    """``(input_length, output_length, timestamp, lens, ids)`` of a block in Mooncake's layout, or None."""
    if not blk.endswith(b"\n"):
        blk += b"\n"
    if not blk.isascii():
        return None
    a = np.frombuffer(blk.translate(_ZEROS), dtype=np.uint8)   # every digit a 0, then each run of them one 0
    d = a == 48
    d[:-1] &= d[1:]                                 # a digit followed by a digit: dropped
    z = a[~d].tobytes()
    del a, d
    if not z.startswith(_PREFIX):
        return None
    nl = np.flatnonzero(np.frombuffer(z, dtype=np.uint8) == 10)
    n = len(nl)
    width = np.diff(nl, prepend=-1) - (len(_PREFIX) + len(_SUFFIX))     # 3 (k - 1): the ", 0" of k ids
    if width.min() < 0 or np.any(width % 3):
        return None
    k = width // 3 + 1
    if len(_SKELETON) > 4096:
        _SKELETON.clear()
    for x in set(k.tolist()) - _SKELETON.keys():
        _SKELETON[x] = _skeleton(x)
    if b"".join(map(_SKELETON.__getitem__, k.tolist())) != z:  # line for line the layout, one run a value
        return None
    vals = np.fromstring(blk.translate(_SPACES), dtype=np.int64, sep=" ")
    if len(vals) != 3 * n + int(k.sum()) or (len(vals) and (vals.min() < 0 or vals.max() >= _POW18)):
        return None                                                     # a slot empty, or past int64
    # every digit read as written: no leading zero (JSON's rule), none lost
    if int(np.searchsorted(_POW10, vals, side="right").sum()) + len(vals) != len(blk) - len(z) + len(vals):
        return None
    head = np.zeros(n, dtype=np.int64)
    np.cumsum(3 + k[:-1], out=head[1:])
    keep = np.ones(len(vals), dtype=bool)
    keep[head] = keep[head + 1] = keep[head + 2] = False
    ids = vals[keep]
    return vals[head + 1], vals[head + 2], vals[head].astype(float), k.astype(np.int64), _small(ids)


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


def chunks(path: Path, size: int | None = None):
    """``(fmt, input_length, output_length, timestamp [as written], lens, ids)`` a block at a time.

    ``fmt`` is the format of the block's first record ("" for a block of blank lines). Raises
    :class:`Unreadable` at the first block neither parser takes, or a file that cannot be read to
    its end (not gzip, damaged).
    """
    try:
        for blk in blocks(path, size):
            part = parse_mooncake(blk)
            if part is not None:
                yield (MOONCAKE, *part)
                continue
            part = parse_json(blk)
            if part is None:
                raise Unreadable()
            yield part
    except (OSError, EOFError) as exc:
        raise Unreadable() from exc


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
    except (OSError, EOFError) as exc:
        raise Unreadable() from exc
    return n
