"""A gzip trace inflated by ISA-L (``isal_zlib``, PyPI ``isal``) reads exactly as by zlib (issue 19).

ISA-L takes a few bytes of compressed input ahead of the text it returns, so the share of the file
read (from which the pass estimates the warm-up's cut) runs slightly ahead of zlib's exact count:
it is used for files of ``ISAL_MIN_FILE`` (1 MiB) or more, where that lead is a small share of
the file. Checked here on a 1.2 MB file against zlib: the same text block for block, the share
within 0.2%, the same curve (``cum_tokens`` equal element for element), and damaged files refused
the same way."""

import gzip
import zlib

import numpy as np
import pytest

from planner.traffic import trace_reader as TR
from planner.traffic import traces as T

from isal import isal_zlib  # a dependency (pyproject); zlib is the fallback without it


@pytest.fixture(scope="module")
def big_gz(tmp_path_factory):
    rng = np.random.default_rng(7)
    lines = []
    for i in range(16000):                       # random ids: about 150 compressed bytes a line
        k = int(rng.integers(1, 30))
        ids = ", ".join(map(str, rng.integers(0, 10**7, k).tolist()))
        lines.append(f'{{"timestamp": {i}, "input_length": {k * 512 - 7}, "output_length": 3, "hash_ids": [{ids}]}}\n')
    path = tmp_path_factory.mktemp("inflate") / "big.jsonl.gz"
    path.write_bytes(gzip.compress("".join(lines).encode(), compresslevel=1))
    assert path.stat().st_size >= TR.ISAL_MIN_FILE
    return path


class _Spy:
    def __init__(self, lib):
        self.lib, self.calls, self.error = lib, 0, lib.error

    def decompressobj(self, *a):
        self.calls += 1
        return self.lib.decompressobj(*a)


def _blocks(monkeypatch, path, lib):
    spy = _Spy(lib)
    monkeypatch.setattr(TR, "INFLATE", spy)
    out = list(TR.blocks(path, progress=True))
    return out, spy.calls


def test_isal_reads_the_same_text_and_nearly_the_same_share(monkeypatch, big_gz):
    monkeypatch.setattr(TR, "BLOCK_BYTES", 1 << 18)      # about 15 blocks
    with_isal, n_isal = _blocks(monkeypatch, big_gz, isal_zlib)
    assert n_isal >= 1                              # ISA-L inflated it
    monkeypatch.setattr(TR, "ISAL_MIN_FILE", 1 << 40)   # zlib for every file
    with_zlib, n_zlib = _blocks(monkeypatch, big_gz, isal_zlib)
    assert n_zlib == 0
    assert [b for b, _ in with_isal] == [b for b, _ in with_zlib]
    assert len(with_isal) > 10
    lead = [a - b for (_, a), (_, b) in zip(with_isal, with_zlib)]
    assert min(lead) >= 0 and max(lead) <= 0.002, lead   # a few bytes of a 1.2 MB file
    assert with_isal[-1][1] == 1.0


def test_isal_curve_equals_zlibs(monkeypatch, big_gz):
    monkeypatch.setattr(TR, "BLOCK_BYTES", 1 << 18)      # about 30 chunks: the estimate of the cut is used
    r1, _ = T.trace_reuse(big_gz)
    monkeypatch.setattr(TR, "ISAL_MIN_FILE", 1 << 40)
    r2, _ = T.trace_reuse(big_gz)
    assert np.array_equal(r1.cum_tokens, r2.cum_tokens)
    assert (r1.total_tokens, r1.warmup_requests, r1.warmup_blocks) == (r2.total_tokens, r2.warmup_requests,
                                                                       r2.warmup_blocks)
    assert r1.requests == 16000 and r1.warmup_requests == 8000


@pytest.mark.parametrize("damage", ["crc", "middle", "cut"])
def test_isal_refuses_a_damaged_file_as_zlib_does(tmp_path, big_gz, damage):
    raw = bytearray(big_gz.read_bytes())
    if damage == "crc":
        raw[-6] ^= 1
    elif damage == "middle":
        raw[len(raw) // 2:len(raw) // 2 + 64] = bytes(64)
    else:
        raw = raw[:-100]
    bad = tmp_path / "bad.jsonl.gz"
    bad.write_bytes(bytes(raw))
    with pytest.raises(TR.Unreadable):
        list(TR.chunks(bad))
    with pytest.raises(T.TraceError) as e:
        T.trace_reuse(bad, place="Workloads!K2")
    assert "bad.jsonl.gz" in str(e.value) or "Workloads!K2" in str(e.value)
    assert bad.read_bytes() == bytes(raw)            # the input untouched
    with pytest.raises((zlib.error, EOFError, OSError)):   # what the stdlib says of it
        gzip.decompress(bytes(raw))


def test_without_isal_the_trace_reads_by_zlib(tmp_path, big_gz):
    """``isal`` not installed (its import blocked in a fresh interpreter): the same curve, by zlib."""
    import json
    import subprocess
    import sys
    code = ("import sys, json\nsys.modules['isal'] = None\n"
            "from planner.traffic import trace_reader as TR, traces as T\n"
            "assert TR.INFLATE is __import__('zlib')\n"
            f"r, _ = T.trace_reuse({str(big_gz)!r})\n"
            "print(json.dumps([r.cum_tokens[-1].item(), r.total_tokens, r.warmup_blocks, r.unique_blocks]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    r, _ = T.trace_reuse(big_gz)
    assert json.loads(out.stdout) == [int(r.cum_tokens[-1]), r.total_tokens, r.warmup_blocks, r.unique_blocks]
