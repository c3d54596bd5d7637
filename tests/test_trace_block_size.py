"""A trace that is not what it claims (issue 19): a Mooncake-layout file of 16-token blocks read at
Mooncake's 512 gets a note naming the file, the block size its lengths imply and the one in use, with the
counts; a damaged gzip stream is a located error, not a traceback.

By hand: a request of input 100 tokens and 7 hash blocks fits 16-token blocks (ceil(100 / 16) = 7) and
not 512-token ones (ceil(100 / 512) = 1); read at 512, its 7 blocks stand for 3,584 tokens' KV against the
112 they are (32 times), so the capacities of the curve are off by that.
"""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pytest

from planner.traffic import traces as T


def _write(path: Path, recs, gz=False):
    text = "".join(json.dumps(r) + "\n" for r in recs)
    if gz:
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        path.write_text(text)
    return path


def _mooncake(n, bs, seed=3, fit=1.0):
    """Requests whose hash blocks are ceil(input / bs), but for a share 1 - fit given one block more."""
    rng = random.Random(seed)
    recs, nxt = [], 0
    for i in range(n):
        inp = rng.randint(40, 3000)
        k = -(-inp // bs) + (0 if rng.random() < fit else 1)
        recs.append({"timestamp": i, "input_length": inp, "output_length": 5, "hash_ids": list(range(nxt, nxt + k))})
        nxt += k
    return recs


@pytest.mark.parametrize("gz", [False, True])
def test_sixteen_token_blocks_read_at_512_are_named(tmp_path, gz):
    file = _write(tmp_path / f"chat16.jsonl{'.gz' if gz else ''}", _mooncake(400, 16), gz)
    for notes in (T.trace_reuse(file)[1], T.read_trace(file).notes):      # streamed, and read whole
        strong = [n for n in notes if "look like" in n]
        assert len(strong) == 1, notes
        assert strong[0].startswith(file.name + ": the blocks look like 16-token blocks, not the 512 tokens of "
                                    "the layout's default (trace_block_size blank)")
        assert "400 of 400 requests have exactly ceil(input_length / 16) hash blocks" in strong[0]
        assert "set trace_block_size to 16" in strong[0] and "32 times" in strong[0]
    # stated wrongly: the note says it was stated
    assert any("of trace_block_size:" in n for n in T.trace_reuse(file, block_size=512)[1])
    # stated right: no such note, nor the weaker one
    assert T.trace_reuse(file, block_size=16)[1] == [] and T.read_trace(file, block_size=16).notes == []


def test_right_or_ambiguous_block_sizes_get_no_implied_size(tmp_path):
    ok = _write(tmp_path / "chat512.jsonl", _mooncake(300, 512))
    assert T.trace_reuse(ok)[1] == []
    # 80% fit 16-token blocks, 20% have one block more: not unambiguous, so only the counts' note
    mixed = _write(tmp_path / "mixed.jsonl", _mooncake(300, 16, fit=0.8))
    notes = T.trace_reuse(mixed)[1]
    assert not any("look like" in n for n in notes)
    assert any("more hash blocks than input_length / 512" in n for n in notes)


def test_damaged_deflate_stream_is_a_located_error(tmp_path):
    raw = bytearray(gzip.compress("".join(json.dumps(r) + "\n" for r in _mooncake(50, 512)).encode()))
    raw[10] = raw[11] = 0xFF                      # the first deflate block's header: an invalid block type
    file = tmp_path / "bad.jsonl.gz"
    file.write_bytes(bytes(raw))
    with pytest.raises(T.TraceError) as exc:
        T.trace_reuse(file)
    assert str(exc.value).startswith("bad.jsonl.gz: cannot be read to the end (")
    assert file.read_bytes() == bytes(raw)       # the input is not modified
