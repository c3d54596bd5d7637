"""Published TTFT-vs-concurrency tables from projects other than UCM (issue 16), cited per row in
tests/data/published_load_other.csv; read only after the load-test model was fixed, used to choose
nothing. The numbers are printed and quoted in the README ("How accurate, on published load tests").

- SGLang's cookbook speed cells (sgl-project/sglang docs and pull requests): GLM-5.2 on H200, B200,
  GB300 and Qwen3.5-4B on MI300X, P50 TTFT at max_concurrency 1 and 16, ISL 8192 (1024 for the 4B).
  SGLang runs waiting prefills before decode batches, so a closed loop of equal lengths moves in
  waves, the burst the model describes; the pass budget is SGLang's ``chunked_prefill_size``
  (8192 on GPUs under 160 GB, 16384 above: python/sglang/srt/server_args.py) unless the cell sets it.
- One vLLM concurrency sweep (ai.wmx.dev, Qwen2.5-0.5B on one L4, 256 in / 128 out, c = 1-32).

Calibrated at concurrency 1, the request-alone prefill is the measured TTFT there: ``P = TTFT_1``.
Each table has one input length, so the fixed cost per pass ``F`` cannot be told from per-token work
(tests/test_published_load.py fits it from several lengths): the prediction is given at both ends,
``F = 0`` (all per-request work, as planner.plan.calibrate reads a deployment with one length) and
``F = P`` (all fixed per pass). Where one prompt fills a pass (``isl >= budget``) the two coincide.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from conftest import REPO
from planner.equations import prefill_passes as pp

Q = {"median": 0.5, "mean": np.nan}


def _data() -> pd.DataFrame:
    d = pd.read_csv(REPO / "tests" / "data" / "published_load_other.csv")
    assert d["source"].notna().all() and len(d) == 16
    assert (d.groupby("dataset")["concurrency"].min() == 1).all()
    return d


def errors(d: pd.DataFrame) -> pd.DataFrame:
    out = []
    for ds, g in d.groupby("dataset", sort=False):
        p = float(g[g.concurrency == 1].ttft_ms.iloc[0])
        for r in g[g.concurrency > 1].itertuples():
            q = Q[r.ttft_stat]
            at = {f: float(pp.burst_ttft_ms(p, f, r.isl, r.hit, r.concurrency, r.budget, q)) for f in (0.0, p)}
            out.append({"dataset": ds, "engine": r.engine, "concurrency": int(r.concurrency),
                        "one_per_pass": r.isl * (1 - r.hit) >= r.budget, "measured": r.ttft_ms,
                        "error_f0": at[0.0] / r.ttft_ms - 1, "error_fp": at[p] / r.ttft_ms - 1,
                        "error_serial": p * (1 + 0.5 * (r.concurrency - 1)) / r.ttft_ms - 1})
    return pd.DataFrame(out)


def test_other_projects_from_concurrency_1():
    e = errors(_data())
    med = lambda x: float(np.median(np.abs(x)))  # noqa: E731
    print(f"\nother projects, from c=1: {len(e)} points; median |error| F=0 {med(e.error_f0):.1%}, F=P "
          f"{med(e.error_fp):.1%}, serial {med(e.error_serial):.1%}")
    for r in e.itertuples():
        print(f"  {r.dataset} c={r.concurrency}: F=0 {r.error_f0:+.1%}, F=P {r.error_fp:+.1%}, serial "
              f"{r.error_serial:+.1%}{' (one prompt per pass)' if r.one_per_pass else ''}")
    one = e[e.one_per_pass]
    # one prompt per pass: the prediction does not depend on F, and holds (measured -8.1% and +0.7%)
    assert len(one) == 2 and np.allclose(one.error_f0, one.error_fp)
    assert (one.error_f0.abs() <= 0.15).all()
    # several prompts per pass: F decides, and one input length cannot tell it (the bracket is wide)
    several = e[~e.one_per_pass & (e.concurrency >= 4)]
    assert (several.error_f0 > several.error_fp).all()
