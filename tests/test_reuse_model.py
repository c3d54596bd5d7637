"""The reuse model without a trace (planner.traffic.reuse_model) against a trace drawn from the same
assumptions, its curve taken by the exact one-pass LRU (planner.traffic.traces).

Where the model is exact (capacity 0, and the ceiling: worked by hand below) the two agree to
the trace's sampling noise; in between, where the model is Che's approximation, within 0.06 (inside the steps, where the mean count of a gap stands for a random one),
and within 0.01 on the plateau between the system prompt's and the history's steps.
"""

from __future__ import annotations

import numpy as np
import pytest

from planner.traffic import reuse_model as R
from planner.traffic import traces as T


def test_ceiling_by_hand():
    """Defaults: 512-token blocks, 4 turns, a 2,048-token prompt in half the conversations,
    1,024 own tokens first, +1,024 a turn. With the prompt: inputs 3072, 4096, 5120, 6144 (sum
    18,432), hits 2048 (the prompt), 3072, 4096, 5120 (sum 14,336). Without: inputs 1024..4096
    (sum 10,240), hits 0, 1024, 2048, 3072 (sum 6,144). Ceiling = (14,336 + 6,144) / (18,432 +
    10,240) = 20,480 / 28,672 = 0.714286."""
    mdl = R.ReuseModel()
    assert R.hit_curve(mdl, [np.inf])[0] == pytest.approx(20480 / 28672, abs=1e-12)
    assert R.hit_curve(mdl, [0])[0] == 0.0


@pytest.mark.parametrize("mdl, duration", [
    (R.ReuseModel(), 3600.0),
    (R.ReuseModel(rate_rps=2, gap_s=120, turns=6, system_share=0.8, first_tokens=700, turn_tokens=300,
                  block_size=16), 900.0),
])
def test_model_against_a_trace_from_the_same_assumptions(mdl, duration):
    t = R.synthetic_trace(mdl, duration, seed=3)
    r = T.reuse(t)
    d_gap = float(R.distinct_blocks(mdl, mdl.gap_s))  # the history's step sits here
    caps = np.unique(np.round(np.logspace(0, np.log10(r.unique_blocks), 12)))
    model, trace = R.hit_curve(mdl, caps), T.hit_curve(r, caps)
    assert np.max(np.abs(model - trace)) < 0.06  # inside the steps (Che: mean instead of random counts)
    plateau = (caps > 3 * mdl.system_blocks + 50) & (caps < 0.5 * d_gap)
    assert plateau.any()
    assert np.max(np.abs(model - trace)[plateau]) < 0.01
    assert abs(R.hit_curve(mdl, [np.inf])[0] - T.hit_curve(r, [np.inf])[0]) < 0.01


def test_synthetic_trace_follows_its_assumptions():
    mdl = R.ReuseModel(rate_rps=3, turns=3, gap_s=30)
    t = R.synthetic_trace(mdl, 1200, seed=1)
    assert abs(t.requests / 1200 - 3) < 0.5  # the arrival rate
    # every input is one of the stated turn lengths, blocks covering it
    allowed = set(mdl.inputs(True)) | set(mdl.inputs(False))
    assert set(t.input_length.tolist()) <= allowed
    assert np.all(np.diff(t.starts) == -(-t.input_length // mdl.block_size))
