"""The block parsers against the strict reader (json.loads a line) on many generated lines, and a
UTF-8 byte order mark at a trace's start (issue 19).

1. Randomized cross-check: lines in Mooncake's and Bailian's layouts as ``json.dumps`` writes them
   (the fast parsers' case) mixed with every variation JSON allows or a trace may hold (other key
   orders and separators, spaces, non-ASCII and escaped strings, extra keys, negative, large and
   past-int64 integers, floats and exponents in the timestamp, whole floats in a length, booleans,
   empty lists, blank lines). For every block a fast parser takes, its arrays equal ``json.loads`` of
   the block's lines value for value; and the whole file read as the planner reads it (fast parsers,
   then one ``json.loads`` a block, then line by line) equals the file read line by line by
   ``json.loads`` alone (``read_trace`` with the block reader switched off): the same arrays, or the
   same located problems.
2. A byte order mark at the start (what a Windows editor may write) is dropped, as Python's
   ``utf-8-sig`` codec drops it; one elsewhere is still a located problem."""

import gzip
import json
import random

import numpy as np
import pytest

from planner.traffic import trace_reader as TR
from planner.traffic import traces as T

NASTY = ["é", "\u2028", 'a"b', "back\\slash", "tab\t", "\U0001f600", "", "ü trace", "\x00"]


def _record(rng: random.Random, bailian: bool, canonical: bool) -> dict:
    k = rng.choice([1, 1, 2, 5, 18, 40]) if canonical or rng.random() < 0.9 else 0
    big = [0, rng.randrange(10), rng.randrange(10**6), rng.randrange(10**17), 2**63 - 1]
    ids = [rng.choice(big[:4]) for _ in range(k)]
    ts = rng.randrange(10**7) if not bailian else rng.choice([rng.randrange(10**6), round(rng.uniform(0, 7200), 3)])
    rec = ({"chat_id": rng.randrange(10**6), "parent_chat_id": rng.choice([-1, rng.randrange(10**5)]),
            "timestamp": ts, "input_length": rng.randrange(10**5), "output_length": rng.randrange(3000),
            "type": rng.choice(["text", "search", "image"]), "turn": rng.randint(1, 9), "hash_ids": ids}
           if bailian else
           {"timestamp": ts, "input_length": rng.randrange(10**5), "output_length": rng.randrange(3000),
            "hash_ids": ids})
    if canonical:
        return rec
    change = rng.randrange(12)
    if change == 0:
        rec["timestamp"] = rng.choice([1e-5, 1.5e10, -3, 0.1 + 0.2, 12.0, 2**70])
    elif change == 1:
        rec["input_length"] = rng.choice([5.0, -7, 2**63, True, None, "12", 1e3])
    elif change == 2:
        rec["hash_ids"] = ids + [rng.choice([-1, 2**63 - 1, 2**63, 1.0, False, "3", None])]
    elif change == 3:
        rec["type" if bailian else "note"] = rng.choice(NASTY)
    elif change == 4:
        rec = dict(reversed(list(rec.items())))
    elif change == 5:
        rec.pop("output_length")
    elif change == 6:
        rec["extra"] = {"nested": [1, 2, {"x": rng.choice(NASTY)}]}
    elif change == 7:
        rec["output_length"] = rng.choice([0, 2**62, 10**18 - 1])
    return rec


def _dump(rng: random.Random, rec: dict, canonical: bool) -> str:
    if canonical:
        return json.dumps(rec)
    seps = rng.choice([(", ", ": "), (",", ":"), (" , ", " : "), (",  ", ":\t")])
    text = json.dumps(rec, separators=seps, ensure_ascii=rng.random() < 0.5)
    return rng.choice(["", " ", "\t"]) + text + rng.choice(["", " ", "  "])


def _lines(seed: int, n: int):
    rng = random.Random(seed)
    bailian = seed % 2 == 1
    out, canon = [], []
    while len(out) < n:
        run = rng.choice([1, 5, 40])                       # canonical runs: whole blocks for the fast parsers
        canonical = rng.random() < 0.6
        for _ in range(run):
            out.append(_dump(rng, _record(rng, bailian, canonical), canonical))
            canon.append(canonical)
            if not canonical and rng.random() < 0.05:
                out.append(rng.choice(["", "   "]))         # blank lines
                canon.append(False)
    return out, canon


def _json_block(blk: bytes):
    recs = [json.loads(x) for x in blk.decode("utf-8").split("\n") if x.strip()]
    return ([r["input_length"] for r in recs], [r.get("output_length", 0) for r in recs],
            [float(r.get("timestamp", 0)) for r in recs], [len(r["hash_ids"]) for r in recs],
            [x for r in recs for x in r["hash_ids"]])


def _trace_values(tr: T.Trace):
    return (tr.fmt, tr.block_size, tr.input_length.tolist(), tr.output_length.tolist(), tr.timestamp_s.tolist(),
            tr.starts.tolist(), tr.hashes.tolist(), list(tr.notes))


def _read(path, strict: bool, monkeypatch):
    if strict:                                             # json.loads a line only: the reference
        def unreadable(*a, **k):
            raise TR.Unreadable()
            yield
        monkeypatch.setattr(TR, "chunks", unreadable)
    try:
        return _trace_values(T.read_trace(path))
    except T.TraceError as exc:
        return [(str(p.place), p.message) for p in exc.problems]
    finally:
        monkeypatch.undo()


@pytest.mark.parametrize("seed", range(8))
def test_fast_parsers_equal_json_loads_on_random_lines(tmp_path, monkeypatch, seed):
    lines, canon = _lines(seed, 600)
    text = ("\n".join(lines) + "\n").encode("utf-8")
    taken = 0
    for size in (300, 4000):
        for blk in TR.blocks(_write_bytes(tmp_path / "b.jsonl", text), size):
            for parse in (TR.parse_mooncake, TR.parse_bailian):
                got = parse(blk)
                if got is not None:
                    taken += 1
                    want = _json_block(blk)
                    assert [a.tolist() for a in got] == [list(x) for x in want]
    assert taken > 20                                      # the fast parsers were exercised
    path = _write_bytes(tmp_path / ("t.jsonl.gz" if seed % 4 < 2 else "t.jsonl"), text)
    monkeypatch.setattr(TR, "BLOCK_BYTES", 2000)
    fast = _read(path, False, monkeypatch)
    monkeypatch.setattr(TR, "BLOCK_BYTES", 2000)
    strict = _read(path, True, monkeypatch)
    assert fast == strict
    # only the canonical lines: the whole file is read by the fast path, and equals json.loads
    good = [x for x, c in zip(lines, canon) if c]
    path = _write_bytes(tmp_path / "good.jsonl", ("\n".join(good) + "\n").encode())
    monkeypatch.setattr(TR, "parse_json", lambda blk: pytest.fail("a canonical block left the fast parsers"))
    monkeypatch.setattr(TR, "BLOCK_BYTES", 2000)
    tr = T.read_trace(path)
    monkeypatch.undo()
    want = _json_block(("\n".join(good) + "\n").encode())
    scale = 1.0 if seed % 2 else 1000.0
    assert tr.input_length.tolist() == want[0] and tr.hashes.tolist() == want[4]
    assert np.diff(tr.starts).tolist() == want[3] and tr.timestamp_s.tolist() == [t / scale for t in want[2]]


def _write_bytes(path, data: bytes):
    if path.name.endswith(".gz"):
        data = gzip.compress(data)
    path.write_bytes(data)
    return path


GOOD = ['{"timestamp": 0, "input_length": 1024, "output_length": 1, "hash_ids": [0, 1]}',
        '{"timestamp": 5, "input_length": 1024, "output_length": 1, "hash_ids": [0, 1]}',
        '{"timestamp": 9, "input_length": 1500, "output_length": 1, "hash_ids": [0, 1, 7]}']


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("block", [None, 5, 100])
def test_a_byte_order_mark_at_the_start_is_dropped(tmp_path, monkeypatch, gz, block):
    if block:
        monkeypatch.setattr(TR, "BLOCK_BYTES", block)
    text = ("\n".join(GOOD) + "\n").encode()
    plain = _write_bytes(tmp_path / ("a.jsonl.gz" if gz else "a.jsonl"), text)
    bom = _write_bytes(tmp_path / ("b.jsonl.gz" if gz else "b.jsonl"), TR.BOM + text)
    r, notes = T.trace_reuse(bom, warmup=0)
    # by hand, 512-token blocks, no warm-up, input 3,548 tokens: at an unbounded cache request 1 misses
    # both blocks, request 2 hits both (1,024 tokens), request 3 its first two (1,024; block 7 is new):
    # 2,048 / 3,548. At one block the cache holds the block touched last, each request's first (0): requests
    # 2 and 3 hit block 0 only (512 each): 1,024 / 3,548
    assert T.hit_curve(r, [np.inf])[0] == pytest.approx(2048 / 3548, abs=1e-15)
    assert T.hit_curve(r, [1])[0] == pytest.approx(1024 / 3548, abs=1e-15)
    r0, _ = T.trace_reuse(plain, warmup=0)
    assert np.array_equal(r.cum_tokens, r0.cum_tokens) and r.requests == 3
    assert TR.count_requests(bom) == 3
    tr = T.read_trace(bom)
    assert tr.hashes.tolist() == [0, 1, 0, 1, 0, 1, 7] and tr.fmt == T.MOONCAKE


def test_a_byte_order_mark_with_a_bad_line_keeps_the_line_numbers(tmp_path, monkeypatch):
    bom = _write_bytes(tmp_path / "b.jsonl", TR.BOM + ("\n".join([GOOD[0], "{oops", GOOD[1]]) + "\n").encode())
    with pytest.raises(T.TraceError) as e:
        T.trace_reuse(bom, warmup=0)
    assert [str(p.place) for p in e.value.problems] == ["b.jsonl line 2"]


def test_a_byte_order_mark_elsewhere_is_a_located_problem(tmp_path):
    bom = _write_bytes(tmp_path / "b.jsonl", ("\n".join(GOOD[:1]) + "\n").encode() + TR.BOM
                       + ("\n".join(GOOD[1:]) + "\n").encode())
    with pytest.raises(T.TraceError) as e:
        T.trace_reuse(bom, warmup=0)
    assert [str(p.place) for p in e.value.problems] == ["b.jsonl line 2"]
    assert "BOM" in e.value.problems[0].message or "JSON" in e.value.problems[0].message


def test_block_size_fits_counted_exactly_up_to_int64():
    """The block-size evidence (requests with exactly ceil(input_length / B) blocks, every B tried) by
    Python's integers, on inputs up to 2^63 - 1 (a shift for powers of two must not overflow)."""
    rng = random.Random(3)
    inp = [rng.choice([0, 1, 15, 16, 17, 511, 512, 513, rng.randrange(10**6), 2**63 - 1, 2**63 - 512, 2**62 + 1])
           for _ in range(400)]
    sizes = [1 << j for j in range(17)] + [300]
    lens = [-(-x // rng.choice(sizes)) + rng.choice([0, 0, 1, -1]) for x in inp]
    lens = [max(0, x) for x in lens]
    st = T._LengthNotes(300).add(np.array(inp, dtype=np.int64), np.array(lens, dtype=np.int64), np.zeros(400))
    has = [(x, k) for x, k in zip(inp, lens) if x > 0 and k > 0]
    assert st.evidence == len(has)
    for b, got in zip(st.sizes.tolist(), st.fit.tolist()):
        assert got == sum(1 for x, k in has if -(-x // b) == k), b
