"""The trace read in a worker process while the pass runs (``planner.traffic.trace_reader.read_ahead``,
issue 19): what it hands over, its errors, and that no worker is ever left running.

The curves themselves are held to the brute-force LRU through the worker in
tests/test_trace_stream.py (every test there runs with the worker and without); here the transport:

- the parts equal :func:`planner.traffic.trace_reader.chunks`'s, array for array and dtype for dtype,
  and a failing block raises the same exception after the same parts (``Unreadable`` at the block
  with the bad line, so the caller reads the file line by line and names every problem);
- damaged gzip files give the single-process path's messages, word for word;
- the worker is gone after the end, after an exception or ``KeyboardInterrupt`` in the caller's body,
  after the caller stops early, and when it dies (killed) the caller gets ``Unreadable`` and the
  curve is still the right one (read whole, in this process);
- small files, busy CPUs (the load average) and systems without ``fork`` are read in this process.
"""

from __future__ import annotations

import gzip
import json
import multiprocessing
import os
import signal

import numpy as np
import pytest

from planner.traffic import trace_reader as TR
from planner.traffic import traces as T
from test_traces import brute_lru


def _lines(n, start=0):
    """Conversations with a shared 2-block prefix: request i is [0, 1, 2 + i % 7, ...]."""
    out = []
    for i in range(start, start + n):
        ids = [0, 1] + [2 + 10 * (i % 7) + j for j in range(i % 4)]
        out.append(json.dumps({"timestamp": i, "input_length": 4 * len(ids) - 1, "output_length": 2,
                               "hash_ids": ids}))
    return out


def _write(path, lines, gz=False):
    text = ("\n".join(lines) + "\n").encode()
    path.write_bytes(gzip.compress(text) if gz else text)
    return path


def _gone(pid):
    """The worker ``pid`` has exited and been reaped (no zombie either)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture
def small_blocks(monkeypatch):
    monkeypatch.setattr(TR, "BLOCK_BYTES", 400)       # a few lines a block: many parts


@pytest.fixture
def pids(monkeypatch):
    """The pids of the workers started (the parent's ``_received`` sees each one), whatever the load."""
    monkeypatch.setattr(TR, "AHEAD_IDLE_CPU", -float("inf"))
    seen = []
    real = TR._received

    def spy(conn, proc):
        seen.append(proc.pid)
        yield from real(conn, proc)

    monkeypatch.setattr(TR, "_received", spy)
    yield seen
    assert not multiprocessing.active_children()
    assert all(_gone(p) for p in seen)


@pytest.mark.parametrize("gz", [False, True])
def test_parts_equal_the_single_process_reader(tmp_path, small_blocks, pids, gz):
    file = _write(tmp_path / ("t.jsonl.gz" if gz else "t.jsonl"), _lines(300), gz)
    want = list(TR.chunks(file, progress=True))
    with TR.read_ahead(file, progress=True, min_file=0) as parts:
        got = list(parts)
    assert len(pids) == 1 and len(got) == len(want) > 20
    for g, w in zip(got, want):
        assert g[0] == w[0] and g[-1] == w[-1]            # the layout, the share of the file read
        for a, b in zip(g[1:-1], w[1:-1]):
            assert a.dtype == b.dtype and np.array_equal(a, b)


def test_a_bad_block_raises_after_the_same_parts(tmp_path, small_blocks, pids):
    lines = _lines(100)
    lines[60] = lines[60].replace('"output_length": 2', '"output_length": "x"')
    file = _write(tmp_path / "bad.jsonl", lines)
    got, err = [], None
    try:
        for part in TR.chunks(file):
            got.append(part)
    except TR.Unreadable as exc:
        err = exc
    assert err is not None and got
    ahead = []
    with pytest.raises(TR.Unreadable):
        with TR.read_ahead(file, min_file=0) as parts:
            for part in parts:
                ahead.append(part)
    assert len(ahead) == len(got) and pids
    with pytest.raises(T.TraceError) as e:              # then read line by line: the line named
        T.trace_reuse(file, None, 0.5)
    assert [str(p).split(": ")[0] for p in e.value.problems] == ["bad.jsonl line 61"]


@pytest.mark.parametrize("damage", ["cut", "crc", "header"])
def test_damaged_gzip_gives_the_same_messages(tmp_path, monkeypatch, small_blocks, pids, damage):
    raw = bytearray(gzip.compress(("\n".join(_lines(400)) + "\n").encode()))
    if damage == "cut":
        raw = raw[:-30]
    elif damage == "crc":
        raw[-6] ^= 1
    else:
        raw[10] = raw[11] = 0xFF                        # an invalid deflate block type
    file = tmp_path / "bad.jsonl.gz"
    file.write_bytes(bytes(raw))
    messages = []
    for min_file in (0, float("inf")):                   # through the worker, then in this process
        monkeypatch.setattr(TR, "AHEAD_MIN_FILE", min_file)
        with pytest.raises(T.TraceError) as e:
            T.trace_reuse(file, None, 0.5, place="Workloads!K2")
        messages.append(str(e.value))
    assert len(pids) == 1                               # the first one went through a worker
    assert messages[0] == messages[1]
    assert "cannot be read to the end" in messages[0] or "line" in messages[0]
    assert file.read_bytes() == bytes(raw)


@pytest.mark.parametrize("exc", [KeyboardInterrupt, ValueError])
def test_the_worker_is_stopped_when_the_caller_fails(tmp_path, small_blocks, pids, exc):
    file = _write(tmp_path / "t.jsonl", _lines(2000))
    with pytest.raises(exc):
        with TR.read_ahead(file, min_file=0) as parts:
            next(iter(parts))
            raise exc()
    assert len(pids) == 1 and _gone(pids[0])


def test_the_worker_is_stopped_when_the_caller_stops_early(tmp_path, small_blocks, pids):
    file = _write(tmp_path / "t.jsonl", _lines(2000))
    with TR.read_ahead(file, min_file=0) as parts:
        for i, _ in enumerate(parts):
            if i == 2:
                break
    assert len(pids) == 1 and _gone(pids[0])


def test_a_killed_worker_is_unreadable_and_the_curve_still_right(tmp_path, small_blocks, pids, monkeypatch):
    """The worker killed after its second part (SIGKILL: no word sent): ``Unreadable`` in the parent,
    and trace_reuse falls back to the whole-trace read in this process: the brute force's curve."""
    real = TR.chunks

    def dying(*a, **k):
        for i, part in enumerate(real(*a, **k)):
            if i == 2 and multiprocessing.parent_process() is not None:   # in the worker only
                os.kill(os.getpid(), signal.SIGKILL)
            yield part

    monkeypatch.setattr(TR, "chunks", dying)
    file = _write(tmp_path / "t.jsonl", _lines(200))
    with pytest.raises(TR.Unreadable, match="exit code -9"):
        with TR.read_ahead(file, min_file=0) as parts:
            list(parts)
    monkeypatch.setattr(TR, "AHEAD_MIN_FILE", 0)
    r, _ = T.trace_reuse(file, 4, 0.5)
    reqs = [json.loads(x)["hash_ids"] for x in _lines(200)]
    inp = [json.loads(x)["input_length"] for x in _lines(200)]
    caps = [0, 1, 2, 3, 5, 8, 13, 21, 34]
    assert T.hit_curve(r, caps).tolist() == [brute_lru(reqs, inp, 4, c, 0.5) for c in caps]
    assert len(pids) == 2


class _Odd(Exception):
    def __init__(self, a, b):                          # does not unpickle (its args are one message)
        super().__init__(f"{a} {b}")


def test_an_exception_that_does_not_pickle_is_named(tmp_path, small_blocks, pids, monkeypatch):
    def failing(*a, **k):
        raise _Odd(1, 2)
        yield

    monkeypatch.setattr(TR, "chunks", failing)
    file = _write(tmp_path / "t.jsonl", _lines(50))
    with pytest.raises(RuntimeError, match="_Odd"):
        with TR.read_ahead(file, min_file=0) as parts:
            list(parts)


def test_a_worker_when_a_cpu_is_idle(tmp_path, pids, monkeypatch):
    file = _write(tmp_path / "t.jsonl", _lines(50))
    monkeypatch.setattr(TR, "AHEAD_IDLE_CPU", 0.5)
    for cpus, load in ((2, 1.5), (2, 0.1), (4, 3.4)):             # half a CPU idle or more
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cpus)))
        monkeypatch.setattr(os, "getloadavg", lambda: (load, 9.0, 9.0))
        with TR.read_ahead(file, min_file=0) as parts:
            assert len(list(parts)) == 1
    assert len(pids) == 3


def test_small_files_busy_cpus_and_no_fork_read_in_this_process(tmp_path, pids, monkeypatch):
    file = _write(tmp_path / "t.jsonl", _lines(50))
    assert file.stat().st_size < TR.AHEAD_MIN_FILE
    with TR.read_ahead(file) as parts:
        small = list(parts)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})   # one CPU for this process
    with TR.read_ahead(file, min_file=0) as parts:
        one_cpu = list(parts)
    monkeypatch.setattr(TR, "AHEAD_IDLE_CPU", 0.5)
    for cpus, load in ((2, 1.6), (4, 3.6)):                        # less than half a CPU idle
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cpus)))
        monkeypatch.setattr(os, "getloadavg", lambda: (load, 0.0, 0.0))
        with TR.read_ahead(file, min_file=0) as parts:
            assert len(list(parts)) == 1
    monkeypatch.undo()
    monkeypatch.setattr(TR, "_received", lambda *a: pytest.fail("a worker was started"))
    monkeypatch.setattr(TR, "_fork_context", lambda: None)         # no fork here (Windows, macOS)
    with TR.read_ahead(file, min_file=0) as parts:
        nofork = list(parts)
    assert not pids and len(small) == len(one_cpu) == len(nofork) == 1
    assert all(np.array_equal(a, b) and np.array_equal(a, c) for a, b, c in zip(small[0][1:], one_cpu[0][1:],
                                                                                 nofork[0][1:]))
