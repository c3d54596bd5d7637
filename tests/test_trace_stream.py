"""The fused read-and-pass of a trace file (planner.traffic.traces.trace_reuse) and its block reader
(planner.traffic.trace_reader), against independent references:

- the brute-force LRU of tests/test_traces.py (an OrderedDict, block by block), on the adversarial
  and random traces written to files, plain and gzip, read in blocks of a few lines, so the pass is
  fed many chunks and the warm-up falls inside one;
- ``json.loads`` line by line (the reference reading of a JSONL line) for the fast Mooncake-layout
  parser, on random lines, and every near-miss line it must leave to the JSON reader;
- the shipped Mooncake FAST'25 trace: equal to the in-memory pass at every rank, and so to the
  kvcache-ai numbers tests/test_traces.py holds.

Every test runs twice (the module's ``reader`` fixture): the file read and parsed in a worker process
while this one passes (``planner.traffic.trace_reader.read_ahead`` with no size threshold; the worker's
use is checked), and read in this process (the path of small files and of systems without ``fork``).
"""

from __future__ import annotations

import gzip
import json
import multiprocessing
import random
from pathlib import Path

import numpy as np
import pytest

from planner.traffic import trace_reader as TR
from planner.traffic import traces as T
from test_traces import ADVERSARIAL, MOONCAKE, brute_lru


def _line(ids, n_in, t=0, n_out=1):
    return json.dumps({"timestamp": t, "input_length": n_in, "output_length": n_out, "hash_ids": ids})


def _write(path: Path, lines, gz=False):
    text = "\n".join(lines) + "\n"
    if gz:
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


READS = []   # the reads of the current test that went through the worker (the ``reader`` fixture)


@pytest.fixture(autouse=True, params=["worker", "single"])
def reader(request, monkeypatch):
    """The read in a worker process from any size on (each read that received the worker's parts
    counted in ``READS``), or in this process (none may go through a worker)."""
    READS.clear()
    real = TR._received

    def spy(conn, proc):
        READS.append(proc.pid)
        yield from real(conn, proc)

    monkeypatch.setattr(TR, "_received", spy)
    monkeypatch.setattr(TR, "AHEAD_MIN_FILE", 0 if request.param == "worker" else float("inf"))
    monkeypatch.setattr(TR, "AHEAD_IDLE_CPU", -float("inf"))       # whatever the machine's load
    yield request.param
    if request.param == "single":
        assert not READS
    assert not multiprocessing.active_children()    # no worker left running


@pytest.fixture
def tiny_blocks(monkeypatch):
    monkeypatch.setattr(TR, "BLOCK_BYTES", 200)  # two or three lines a block: many chunks


def _streamed(monkeypatch, path, warmup, block_size=None):
    """trace_reuse, and whether it stayed on the streaming path (no whole-trace read)."""
    called = []
    real = T.read_trace
    monkeypatch.setattr(T, "read_trace", lambda *a, **k: called.append(1) or real(*a, **k))
    READS.clear()
    r, notes = T.trace_reuse(path, block_size, warmup)
    monkeypatch.setattr(T, "read_trace", real)
    assert bool(READS) == (TR.AHEAD_MIN_FILE == 0)   # the worker read it (or, on the other run, this process)
    return r, not called


def _curve_equals_brute(r, requests, inp, bs, warmup):
    every = sum(len(x) for x in requests) + 2
    caps = list(range(0, every + 1))
    want = [brute_lru(requests, inp, bs, c, warmup) for c in caps + [10**9]]
    assert T.hit_curve(r, caps + [np.inf]).tolist() == want


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
@pytest.mark.parametrize("warmup", [0.0, 0.5])
def test_streamed_file_equals_brute_force_on_adversarial_traces(tmp_path, tiny_blocks, monkeypatch, name, warmup):
    requests, inp, bs = ADVERSARIAL[name]
    inp = [len(x) * bs for x in requests] if inp is None else inp
    for gz in (False, True):
        path = _write(tmp_path / f"t.jsonl{'.gz' if gz else ''}", [_line(x, n) for x, n in zip(requests, inp)], gz)
        r, streamed = _streamed(monkeypatch, path, warmup, bs)
        _curve_equals_brute(r, requests, inp, bs, warmup)
        prefix = {}
        is_prefix = all(prefix.setdefault(x[i], x[i - 1] if i else -1) == (x[i - 1] if i else -1)
                        for x in requests for i in range(len(x)))
        assert streamed == is_prefix  # a trace whose ids are not prefix hashes is read whole and renumbered
        w = int(len(requests) * warmup)
        seen = [{tuple(x[:i + 1]) for i in range(len(x))} for x in requests]
        assert r.unique_blocks == len(set().union(*seen)) and r.warmup_blocks == len(set().union(*seen[:w]))


def test_streamed_file_equals_brute_force_on_random_prefix_traces(tmp_path, tiny_blocks, monkeypatch):
    """Random conversations with prefix-hash ids (an id always under the same parent): streamed."""
    rng = random.Random(20261201)
    for trial in range(40):
        bs = rng.choice([1, 4, 16])
        tree: dict[tuple[int, int], int] = {}
        requests, inp = [], []
        for _ in range(rng.randint(1, 30)):
            base = requests[rng.randrange(len(requests))] if requests and rng.random() < 0.7 else []
            path = list(base[:rng.randint(0, len(base))])
            for _ in range(rng.randint(0, 5)):        # a child of the prefix: one id per (parent, child)
                path.append(tree.setdefault((path[-1] if path else -1, rng.randrange(3)), len(tree)))
            requests.append(path)
            k = len(path)
            inp.append(max(0, k * bs - rng.randrange(bs)) if k else rng.randrange(bs + 1))
        warmup = rng.choice([0.0, 0.25, 0.5, 1.0])
        file = _write(tmp_path / f"r{trial}.jsonl", [_line(x, n) for x, n in zip(requests, inp)])
        r, streamed = _streamed(monkeypatch, file, warmup, bs)
        assert streamed
        _curve_equals_brute(r, requests, inp, bs, warmup)


def test_sparse_ids_are_renumbered_and_exact(tmp_path, tiny_blocks, monkeypatch):
    requests = [[10**15, 7 * 10**14], [10**15], [10**15, 7 * 10**14, 3]]
    file = _write(tmp_path / "s.jsonl", [_line(x, 2 * len(x)) for x in requests])
    r, streamed = _streamed(monkeypatch, file, 0.0, 2)
    assert not streamed  # ids far above the blocks read: not indexed by, renumbered in memory
    _curve_equals_brute(r, requests, [2 * len(x) for x in requests], 2, 0.0)


def test_mooncake_trace_streamed_equals_the_pass_in_memory(monkeypatch):
    monkeypatch.setattr(TR, "BLOCK_BYTES", 1 << 16)  # about 60 chunks
    r, streamed = _streamed(monkeypatch, MOONCAKE, 0.5)
    assert streamed
    m = T.reuse(T.read_trace(MOONCAKE), 0.5)
    assert np.array_equal(r.cum_tokens, m.cum_tokens)
    assert (r.total_tokens, r.warmup_requests, r.warmup_blocks, r.unique_blocks, r.requests) == \
        (m.total_tokens, m.warmup_requests, m.warmup_blocks, m.unique_blocks, m.requests)
    # kvcache-ai's simulator at 2 TiB of 70B-tp1 KV (13,107 blocks): 0.250238 (tests/test_traces.py)
    assert abs(T.hit_curve(r, [13107])[0] - 0.250238) < 5e-7


def test_fast_parser_equals_json_on_random_lines():
    rng = random.Random(7)
    lines = []
    for _ in range(500):
        k = rng.randint(1, 40)
        ids = [rng.choice([0, rng.randrange(10), rng.randrange(10**6), rng.randrange(10**17)]) for _ in range(k)]
        lines.append(_line(ids, rng.randrange(10**6), rng.choice([0, rng.randrange(10**12)]), rng.randrange(3000)))
    blk = ("\n".join(lines) + "\n").encode()
    fast = TR.parse_mooncake(blk)
    assert fast is not None
    recs = [json.loads(x) for x in lines]
    assert fast[0].tolist() == [r["input_length"] for r in recs]
    assert fast[1].tolist() == [r["output_length"] for r in recs]
    assert fast[2].tolist() == [float(r["timestamp"]) for r in recs]
    assert fast[3].tolist() == [len(r["hash_ids"]) for r in recs]
    assert fast[4].tolist() == [x for r in recs for x in r["hash_ids"]]
    assert TR.parse_mooncake(blk[:-1]) is not None  # the last line without its newline


GOOD = '{"timestamp": 5, "input_length": 700, "output_length": 3, "hash_ids": [0, 17, 2]}'


@pytest.mark.parametrize("line", [
    GOOD.replace('"timestamp": 5', '"time5stamp": '),        # a digit inside a key, a value missing
    GOOD.replace('"timestamp": 5', '"time5stamp": 1'),       # a digit inside a key
    GOOD.replace(": 5,", ": 05,"),                           # a leading zero (not JSON)
    GOOD.replace("0, 17, 2", "0, , 2"),                      # an id missing
    GOOD.replace("17, 2", "17 2"),                           # two numbers in one slot
    GOOD.replace("700", "-700"),                             # negative
    GOOD.replace(": 5,", ": 5.5,"),                          # a float timestamp (JSON's reader takes it)
    GOOD.replace("0, 17, 2", ""),                            # an empty list (JSON's reader takes it)
    GOOD.replace("0, 17, 2", "99999999999999999999"),        # past int64
    GOOD.replace("0, 17, 2", "9999999999999999999"),         # past int64 by less than a digit
    GOOD.replace("{", " {"),                                 # leading space (JSON's reader takes it)
    GOOD.replace(", ", ","),                                 # other separators (JSON's reader takes it)
    GOOD + "\r",                                             # CRLF
    GOOD.replace('"output_length": 3, ', ""),                # another key set
])
def test_fast_parser_leaves_every_near_miss_to_the_json_reader(line):
    for blk in ((line + "\n").encode(), (GOOD + "\n" + line + "\n" + GOOD + "\n").encode()):
        assert TR.parse_mooncake(blk) is None


def test_near_misses_read_as_json_does(tmp_path, monkeypatch):
    """A file of good lines and ones only the JSON reader takes: the same curve as the lines parsed
    by json.loads one by one (the reference reading), through the streamed pass."""
    monkeypatch.setattr(TR, "BLOCK_BYTES", 100)
    lines = [GOOD, GOOD.replace(": 5,", ": 5.5,"), GOOD.replace(", ", ","), " " + GOOD,
             GOOD.replace("0, 17, 2", ""), GOOD.replace("0, 17, 2", "0, 17, 2, 9"), GOOD]
    file = _write(tmp_path / "m.jsonl", lines)
    r, _ = T.trace_reuse(file, 512, 0.0)
    recs = [json.loads(x) for x in lines]
    _curve_equals_brute(r, [x["hash_ids"] for x in recs], [x["input_length"] for x in recs], 512, 0.0)


def test_malformed_lines_are_located_when_streamed(tmp_path, monkeypatch):
    monkeypatch.setattr(TR, "BLOCK_BYTES", 100)
    lines = [GOOD] * 5 + [GOOD.replace(": 5,", ": 05,"), GOOD, GOOD.replace("700", '"x"')] + [GOOD] * 3
    for gz in (False, True):
        file = _write(tmp_path / ("bad.jsonl.gz" if gz else "bad.jsonl"), lines, gz)
        with pytest.raises(T.TraceError) as e:
            T.trace_reuse(file, None, 0.5)
        name = file.name
        assert [str(p).split(": ")[0] for p in e.value.problems] == [f"{name} line 6", f"{name} line 8"]
    with pytest.raises(T.TraceError, match="not found"):
        T.trace_reuse(tmp_path / "nope.jsonl", None, 0.5, place="Workloads!X2")
    (tmp_path / "cut.jsonl.gz").write_bytes(gzip.compress(("\n".join([GOOD] * 50) + "\n").encode())[:-30])
    with pytest.raises(T.TraceError, match="cannot be read to the end"):
        T.trace_reuse(tmp_path / "cut.jsonl.gz", None, 0.5)


def test_request_count_with_blank_lines(tmp_path, monkeypatch):
    """The warm-up's request count, with blank and whitespace lines and no last newline: the
    readers' count (non-blank lines), so the streamed warm-up is the in-memory one."""
    monkeypatch.setattr(TR, "BLOCK_BYTES", 150)
    reqs = [[0, 1], [0, 2], [0, 1, 3], [4], [0, 1], [0, 2, 5], [4, 6]]
    lines = [_line(x, 2 * len(x)) for x in reqs]
    messy = lines[:2] + ["", "   ", "\t"] + lines[2:5] + [""] + lines[5:]
    file = tmp_path / "b.jsonl"
    file.write_text("\n".join(messy), encoding="utf-8")   # no newline at the end
    assert TR.count_requests(file) == len(reqs)
    (tmp_path / "end.jsonl").write_text("\n".join(lines) + "\n  ", encoding="utf-8")  # a blank last line, no newline
    assert TR.count_requests(tmp_path / "end.jsonl") == len(reqs)
    for warmup in (0.5, 0.3):
        r, _ = T.trace_reuse(file, 2, warmup)
        assert r.warmup_requests == int(len(reqs) * warmup)
        _curve_equals_brute(r, reqs, [2 * len(x) for x in reqs], 2, warmup)


def test_bailian_trace_streamed(tmp_path, monkeypatch):
    """Bailian lines go through the JSON block parser, still streamed; 16-token blocks by default."""
    recs = [{"chat_id": 1, "parent_chat_id": -1, "timestamp": 0.5, "input_length": 40, "output_length": 8,
             "type": "text", "turn": 1, "hash_ids": [7, 8, 9]},
            {"chat_id": 2, "parent_chat_id": 1, "timestamp": 3.0, "input_length": 70, "output_length": 5,
             "type": "text", "turn": 2, "hash_ids": [7, 8, 9, 10, 11]}]
    file = _write(tmp_path / "b.jsonl.gz", [json.dumps(x) for x in recs], gz=True)
    r, streamed = _streamed(monkeypatch, file, 0.0)
    assert streamed and r.block_size == 16
    assert T.hit_curve(r, [np.inf])[0] == 48 / 110  # request 2 hits 3 blocks = 48 of its 70 tokens


def test_weighted_dominance_count_against_quadratic():
    from planner.traffic.lru_pass import count_smaller_before
    rng = np.random.default_rng(11)
    for n in (0, 1, 2, 17, 300):
        v = rng.integers(0, 50, n)
        w = rng.integers(1, 9, n)
        assert count_smaller_before(v, w).tolist() == [int(w[:i][v[:i] < v[i]].sum()) for i in range(n)]


def test_prefix_check_within_and_across_chunks():
    from planner.traffic.lru_pass import NotPrefix, StackPass

    def feed(*chunks):
        sp = StackPass(None, 0.0, 4)
        for reqs in chunks:
            sp.feed([len(x) for x in reqs], np.array([i for x in reqs for i in x], dtype=np.int64),
                    [4 * len(x) for x in reqs])
        return sp.result()

    for bad in ([[[1, 2], [3, 2]]],          # 2 under 1, then under 3: one chunk
                [[[1, 2]], [[3, 2]]],        # ... across chunks
                [[[1, 2]], [[2]]],           # 2 under 1, then first in a request
                [[[5, 5]]],                  # twice in one request
                [[[0, 1, 2]], [[0, 2]]]):    # 2 under 1, then under 0
        with pytest.raises(NotPrefix):
            feed(*bad)
    r = feed([[0, 1, 2], [0, 1]], [[0, 3], [0, 1, 2, 4]])  # every id always under one parent
    assert r.unique_blocks == 5


def _counted(monkeypatch):
    """The calls of the counting pass (a second decompression of the file)."""
    calls = []
    real = TR.count_requests
    monkeypatch.setattr(TR, "count_requests", lambda *a, **k: calls.append(1) or real(*a, **k))
    return calls


def _conversations(seed, n, bs):
    """Prefix-hash requests: a shared 3-block prompt, then the turns of 6 conversations, each started
    again after 2-5 turns, so the lines' lengths do not drift along the file."""
    rng = random.Random(seed)
    tree: dict[tuple[int, int], int] = {}
    convs = [[] for _ in range(6)]
    turns = [0] * 6
    requests, inp = [], []
    for _ in range(n):
        c = rng.randrange(len(convs))
        if turns[c] == 0:
            convs[c], turns[c] = [], rng.randint(2, 5)
        turns[c] -= 1
        path = convs[c] or [tree.setdefault((-1, 0), 0), tree.setdefault((0, 0), 1), tree.setdefault((1, c), 2 + c)]
        for _ in range(rng.randint(1, 3)):
            path = path + [tree.setdefault((path[-1], rng.randrange(3)), len(tree) + 100)]
        convs[c] = path
        requests.append(path)
        inp.append(len(path) * bs - rng.randrange(bs))
    return requests, inp


def _curve_equals_brute_at(r, requests, inp, bs, warmup, caps):
    want = [brute_lru(requests, inp, bs, c, warmup) for c in caps]
    assert T.hit_curve(r, caps).tolist() == want


@pytest.mark.parametrize("warmup", [0.3, 0.5, 0.8])
def test_warmup_cut_found_at_the_end_without_counting(tmp_path, monkeypatch, warmup):
    """Lines of even length: the cut estimated from the share of the file read is right, the file is
    read once (no counting pass), and the curve, warm-up and blocks equal the brute force's."""
    monkeypatch.setattr(TR, "BLOCK_BYTES", 300)              # about 40 chunks
    requests, inp = _conversations(5, 160, 4)
    caps = [0, 1, 2, 3, 5, 8, 12, 20, 30, 45, 70, 100, 150, 250, np.inf]
    for gz in (False, True):
        file = _write(tmp_path / f"c.jsonl{'.gz' if gz else ''}", [_line(x, n) for x, n in zip(requests, inp)], gz)
        calls = _counted(monkeypatch)
        r, streamed = _streamed(monkeypatch, file, warmup, 4)
        assert streamed and not calls
        _curve_equals_brute_at(r, requests, inp, 4, warmup, caps)
        w = int(len(requests) * warmup)
        assert r.warmup_requests == w and r.requests == len(requests)
        assert r.warmup_blocks == len({tuple(x[:i + 1]) for x in requests[:w] for i in range(len(x))})
        assert r.total_tokens == sum(inp[w:])


def test_warmup_cut_misestimated_is_counted_and_exact(tmp_path, monkeypatch):
    """A file whose first half has lines padded with spaces to eight times their length (JSON's
    reader takes them): the cut estimated from the share read is far off, so the pass raises
    NeedCount and the trace is passed again with its count. Still the brute force's curve."""
    from planner.traffic.lru_pass import NeedCount, StackPass
    monkeypatch.setattr(TR, "BLOCK_BYTES", 300)
    requests, inp = _conversations(9, 120, 4)
    lines = [_line(x, n) for x, n in zip(requests, inp)]
    lines = [x[:-1] + " " * 7 * len(x) + "}" if i < 60 else x for i, x in enumerate(lines)]
    file = _write(tmp_path / "skew.jsonl", lines)
    calls = _counted(monkeypatch)
    raised = []
    real = StackPass.result

    def result(self):
        try:
            return real(self)
        except NeedCount:
            raised.append(1)
            raise
    monkeypatch.setattr(StackPass, "result", result)
    r, streamed = _streamed(monkeypatch, file, 0.5, 4)
    assert streamed and raised == [1] and calls == [1]
    _curve_equals_brute_at(r, requests, inp, 4, 0.5, [0, 1, 2, 4, 7, 11, 16, 25, 40, 60, 90, np.inf])
    assert r.warmup_requests == 60 and r.total_tokens == sum(inp[60:])


def test_gzip_members_padding_and_damage(tmp_path, monkeypatch):
    """The reader's own zlib loop reads what gzip reads: two members (``cat a.gz b.gz``), zero
    padding after the last; a member cut short or foreign bytes after it are refused (the caller then
    locates the problem through gzip)."""
    import gzip as gz
    monkeypatch.setattr(TR, "BLOCK_BYTES", 64)
    monkeypatch.setattr(TR, "RAW_BYTES", 50)
    lines = [_line([0, 1, i + 2], 12) for i in range(40)]
    text = ("\n".join(lines) + "\n").encode()
    two = gz.compress(text[:700]) + gz.compress(text[700:])
    for data in (two, two + b"\0" * 30):
        (tmp_path / "m.gz").write_bytes(data)
        assert b"".join(TR.blocks(tmp_path / "m.gz")) == gz.decompress(two) == text
        assert [b.endswith(b"\n") for b in TR.blocks(tmp_path / "m.gz")] == [True] * len(list(TR.blocks(tmp_path / "m.gz")))
    (tmp_path / "m.gz").write_bytes(two)
    fr = [f for _, f in TR.blocks(tmp_path / "m.gz", progress=True)]
    assert fr == sorted(fr) and fr[-1] == 1.0 and fr[0] < 0.5
    for bad in (two[:-9], two + b"junk"):
        (tmp_path / "bad.gz").write_bytes(bad)
        with pytest.raises((EOFError, OSError)):
            list(TR.blocks(tmp_path / "bad.gz"))
        with pytest.raises(TR.Unreadable):
            list(TR.chunks(tmp_path / "bad.gz"))


def _bailian(i, ids, ts=1.5, parent=-1, inp=100, typ="text", turn=1, out=7):
    return json.dumps({"chat_id": i, "parent_chat_id": parent, "timestamp": ts, "input_length": inp,
                       "output_length": out, "type": typ, "turn": turn, "hash_ids": ids})


def test_bailian_fast_parser_equals_json_on_random_lines():
    """The Bailian-layout block parser against json.loads line by line: negative parents, integer
    and decimal timestamps (their doubles bit for bit), every type, ids up to 18 digits."""
    rng = random.Random(19)
    lines = []
    for i in range(400):
        ids = [rng.choice([0, rng.randrange(10), rng.randrange(10**6), rng.randrange(10**17)])
               for _ in range(rng.randint(1, 30))]
        ts = rng.choice([rng.randrange(10**6), round(rng.uniform(0, 7200), 3), 0.5, 0.0, 12.0,
                         round(rng.uniform(0, 1), 6), 10**9 + 0.125])
        lines.append(_bailian(i, ids, ts, rng.choice([-1, rng.randrange(10**5)]), rng.randrange(10**6),
                              rng.choice(["text", "search", "image", "file", ""]), rng.randint(1, 9),
                              rng.randrange(3000)))
    blk = ("\n".join(lines) + "\n").encode()
    fast = TR.parse_bailian(blk)
    assert fast is not None and TR.parse_mooncake(blk) is None
    recs = [json.loads(x) for x in lines]
    assert fast[0].tolist() == [r["input_length"] for r in recs]
    assert fast[1].tolist() == [r["output_length"] for r in recs]
    assert fast[2].tolist() == [float(r["timestamp"]) for r in recs]   # == on doubles: bit for bit
    assert fast[3].tolist() == [len(r["hash_ids"]) for r in recs]
    assert fast[4].tolist() == [x for r in recs for x in r["hash_ids"]]
    assert TR.parse_bailian(blk[:-1]) is not None  # the last line without its newline


B_GOOD = _bailian(3, [0, 17, 2], 61.114, 55)


@pytest.mark.parametrize("line", [
    _bailian(3, [0, 17, 2], typ='te"xt'),                    # an escape in the type (json.dumps: \")
    _bailian(3, [0, 17, 2], typ="t\u00e9xt"),                # a non-ASCII type (json.dumps: \u00e9)
    _bailian(3, [0, 17, 2], typ="image2"),                   # a digit inside the type
    _bailian(3, [0, 17, 2], typ="Text"),                     # not lowercase letters
    _bailian(3, [0, 17, 2], ts=1e-05),                       # an exponent
    _bailian(3, [0, 17, 2], ts=1234.5678901234567),          # 17 significant digits: no exact division
    _bailian(3, [0, 17, 2], inp=-5),                         # negative input
    _bailian(3, [0, 17, 2], inp=5.0),                        # a float input length
    _bailian(3, [], 61.114, 55),                             # an empty list
    _bailian(3, [0, 17, 2], parent=None),                    # null
    B_GOOD.replace(": 61.114", ": 061.114"),                 # a leading zero
    B_GOOD.replace(", ", ",", 1),                            # other separators
    B_GOOD.replace("{", "{ "),                               # a space
    B_GOOD.replace('"type": "text", ', ""),                  # another key set
    json.dumps(dict(reversed(list(json.loads(B_GOOD).items())))),  # another key order
    B_GOOD + "\r",                                           # CRLF
])
def test_bailian_fast_parser_leaves_every_near_miss_to_the_json_reader(line, tmp_path, monkeypatch):
    for blk in ((line + "\n").encode(), (B_GOOD + "\n" + line + "\n" + B_GOOD + "\n").encode()):
        assert TR.parse_bailian(blk) is None
    monkeypatch.setattr(TR, "BLOCK_BYTES", 100)               # and streamed: the JSON reader's result
    lines = [B_GOOD, line, _bailian(4, [0, 17, 5], 62.0, 3), B_GOOD]
    file = _write(tmp_path / "b.jsonl", lines)
    try:
        recs = [json.loads(x) for x in lines]
    except ValueError:
        recs = None
    whole = (lambda x: type(x) in (int, float) and float(x).is_integer() and x >= 0)  # the line reader's rule
    if recs is None or not all(whole(r.get("input_length")) for r in recs):
        with pytest.raises(T.TraceError, match="b.jsonl line 2"):
            T.trace_reuse(file, 16, 0.0)
        return
    r, _ = T.trace_reuse(file, 16, 0.0)
    _curve_equals_brute(r, [x["hash_ids"] for x in recs], [int(x["input_length"]) for x in recs], 16, 0.0)


def test_bailian_file_streamed_fast_equals_brute_force(tmp_path, monkeypatch):
    """Conversations in the Bailian layout, read by the block parser (no json.loads), plain and
    gzip, at a warm-up of one half: the brute force's curve."""
    monkeypatch.setattr(TR, "BLOCK_BYTES", 400)
    called = []
    monkeypatch.setattr(TR, "parse_json", lambda blk: called.append(1))
    requests, inp = _conversations(13, 120, 16)
    for gz in (False, True):
        file = _write(tmp_path / f"q.jsonl{'.gz' if gz else ''}",
                      [_bailian(i, x, round(i * 0.37, 3), i - 1, n) for i, (x, n) in enumerate(zip(requests, inp))], gz)
        r, streamed = _streamed(monkeypatch, file, 0.5)
        assert streamed and not called and r.block_size == 16
        _curve_equals_brute_at(r, requests, inp, 16, 0.5, [0, 1, 2, 4, 7, 11, 16, 25, 40, 60, 90, np.inf])
