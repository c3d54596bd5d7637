"""Issue 16, red team 7b: load tests typed as an analyst types them that planned silently wrong.

Each test fails on the code before it (main 8a63f7a).

* a test run with fewer requests than its concurrency (``vllm bench serve --max-concurrency 16
  --num-prompts 8``: 8 were in flight, never 16) held its decode at batch 16: the step planned twice
  the measured one.
"""

from __future__ import annotations

import pytest

from test_load_calib import OSL, S0, S1, _plan, _sim_rows


def test_fewer_requests_than_concurrency_hold_the_decode_at_the_requests(tmp_path):
    # the simulated deployment at 8 in flight, one wave of 8 requests, with its throughput; typed once
    # with its true concurrency 8 and once as run, --max-concurrency 16 with 8 prompts
    rows8 = _sim_rows(8, 8, with_throughput=True)
    rows16 = [dict(r, concurrency=16) for r in rows8]
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for plan in (_plan(tmp_path / "a", rows8), _plan(tmp_path / "b", rows16)):
        r, res = plan.resolved.iloc[0], plan.results.iloc[0]
        # hand calc: the decode step over the 8 in flight s(8) = s0 + 8 s1 = 10 + 1.6 = 11.6 ms, so the
        # share per request t_decode = osl s(8) / 8 = 100 x 11.6 / 8 = 145 ms, held at batch 8
        assert S0 + 8 * S1 == pytest.approx(11.6) and OSL == 100
        assert r["t_decode_ms"] == pytest.approx(145.0, rel=1e-6)
        assert r["t_decode_batch"] == 8     # was 16 for the second: the step 145 x 16 / 100 = 23.2 ms
        assert res["decode_step_ms"] == pytest.approx(11.6, rel=1e-6)
