"""A fourth held-out set of published load tests (issue 16), gathered and read only after the
load-test model was fixed, used to choose nothing: tests/data/published_load_heldout4.csv, cited per
row (each row's ``source``; the column ``predictable`` says whether the stated shape is one the
model describes, and why not).

SGLang speed cells at max_concurrency 1 and 16, random 8192 in / 1024 out, P50 TTFT:

* predictable (``yes``): Ling-3.0-flash INT4 / MXFP4 high-throughput on H200 and B200 (pull request
  #34363: 80 exact-length requests, no speculative decoding), GLM-5.2-FP8 on MI355X (no MTP on AMD);
* ``assumed_shape``: Ling-3.0-flash MXFP4 on GB10 with speculation off (pull request #36364 does not
  restate the workload: the cookbook's assumed);
* not predictable from the stated shape, kept and reported apart: Ling-3.0-tiny on H200 (no
  --random-range-ratio, so bench_serving's default draws random lengths and the loop desynchronises:
  TTFT_16 / TTFT_1 is 1.0-1.1), DeepSeek-V4-Flash on H200 and Ling-3.0-flash on GB10 with DSpark
  speculative decoding (acceptance left to the model, as tests/test_published_load_heldout2.py).

SGLang runs waiting prefills first, so a closed loop of equal lengths moves in waves of 16 and the
median is the burst's (planner.equations.prefill_passes, the same at any number of waves). Calibrated
at concurrency 1 the request-alone prefill is ``P = TTFT_1``; one input length cannot tell the
per-pass fixed cost ``F`` from per-token work, so the planner's reading is ``F = 0`` (as
planner.plan.calibrate reads a deployment measured at one length) and ``F = P`` is printed as the
other end. With one prompt per pass (H200, GB10: budget 8192) the two coincide.

Measured (``python -m pytest -n 0 -s tests/test_published_load_heldout4.py``): the five predictable
points -7.5%, -4.8%, -6.9%, +3.1%, +5.5% at F = 0, median |error| 5.5%; GB10 (shape assumed) -18.8%;
the unpredictable ones far off: Ling-3.0-tiny +659% and +774% (measured TTFT_16 / TTFT_1 1.12 and 0.97),
DeepSeek-V4-Flash with DSpark +296% (2.15), Ling-3.0-flash with DSpark on GB10 -74% (32.8).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from conftest import REPO
from planner.equations import prefill_passes as pp


def _data() -> pd.DataFrame:
    d = pd.read_csv(REPO / "tests" / "data" / "published_load_heldout4.csv")
    assert len(d) == 20 and d["source"].notna().all()
    assert (d.groupby("dataset")["concurrency"].agg(sorted).map(list) == [[1, 16]] * 10).all()
    assert set(d.predictable) == {"yes", "assumed_shape", "no_random_lengths", "no_spec_decode"}
    return d


def errors(d: pd.DataFrame) -> pd.DataFrame:
    out = []
    for ds, g in d.groupby("dataset", sort=False):
        p = float(g[g.concurrency == 1].ttft_ms.iloc[0])
        r = g[g.concurrency == 16].iloc[0]
        at = {f: float(pp.burst_ttft_ms(p, f, r.isl, r.hit, 16, r.budget, 0.5)) for f in (0.0, p)}
        out.append({"dataset": ds, "predictable": r.predictable, "ratio": r.ttft_ms / p,
                    "one_per_pass": r.isl >= r.budget,
                    "error_f0": at[0.0] / r.ttft_ms - 1, "error_fp": at[p] / r.ttft_ms - 1})
    return pd.DataFrame(out)


def test_hand_burst_median_for_one_and_two_prompts_per_pass():
    # 16 prompts of 8192 tokens, budget 8192, F = 0: request j ends after j + 1 prompts' work,
    # TTFT_j = (j + 1) P; the median of 1..16 P (positions 7 and 8 of 0..15) is 8.5 P
    assert float(pp.burst_ttft_ms(100.0, 0.0, 8192, 0.0, 16, 8192, 0.5)) == 850.0
    # budget 16384: the first prompt alone (P), then two a pass: 1, 3, 3, 5, 5, ..., 15, 15, 17 P;
    # positions 7 and 8 hold 9 P and 9 P
    assert float(pp.burst_ttft_ms(100.0, 0.0, 8192, 0.0, 16, 16384, 0.5)) == 900.0


def test_fourth_heldout_set_from_concurrency_1():
    e = errors(_data())
    med = lambda x: float(np.median(np.abs(x)))  # noqa: E731
    lines = ["\nheld-out 4 (SGLang, c = 1 -> 16, P50 TTFT), burst from TTFT_1:"]
    for r in e.itertuples():
        lines.append(f"  {r.dataset} [{r.predictable}]: measured TTFT_16/TTFT_1 {r.ratio:.2f}; F=0 {r.error_f0:+.1%}, "
                     f"F=P {r.error_fp:+.1%}{' (one prompt per pass)' if r.one_per_pass else ''}")
    for k, g in e.groupby("predictable", sort=False):
        lines.append(f"  {k}: {len(g)} points, median |error| at F=0 {med(g.error_f0):.1%}")
    print("\n".join(lines))
    ok = e[e.predictable == "yes"]
    assert len(ok) == 5
    assert med(ok.error_f0) <= 0.15 and (ok.error_f0.abs() <= 0.15).all()     # the target, every point
    one = e[e.one_per_pass]
    assert np.allclose(one.error_f0, one.error_fp)                           # F cannot matter there
    # the known limits, stated not hidden: random lengths and free-running speculation desynchronise
    # the loop, far from any wave of equal prompts
    assert (e[e.predictable == "no_random_lengths"].ratio < 1.5).all()
    assert (e[e.predictable == "no_random_lengths"].error_f0 > 3).all()
