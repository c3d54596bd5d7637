"""A second held-out set of published load tests (issue 16), read only after the load-test model was
fixed and used to choose nothing: tests/data/published_load_heldout2.csv, cited per row.

SGLang's Qwen3.6 cookbook speed cells (sgl-project/sglang docs_new/src/snippets/configs/qwen/
qwen3.6-benchmarks.jsx, commit 4b7077be): Qwen3.6-35B-A3B and -27B, BF16/FP8/NVFP4, on one H200,
B200 or B300 (tp 1), P50 TTFT at max_concurrency 1 (8 requests) and 16 (64 requests), random
8192 in / 1024 out at fixed lengths (--random-range-ratio 1.0), cache flushed. 16 pairs.

What the load test really did, from its stated shape: SGLang runs waiting prefills before decode
(the wave model, planner.equations.prefill_passes), so with equal lengths a closed loop of 16 stays
in waves, every wave a burst, and the P50 TTFT is about 8.5 P (one 8192-token prompt per pass).
These cells run speculative decoding (EAGLE, 3 steps, 4 draft tokens: the low-latency cells of
qwen3.6.jsx) with the acceptance left to the model (the cells set no SGLANG_SIMULATE_ACC_LEN, env
[]), so each request accepts a random number of tokens per step and reaches its 1024th token after
a random number of steps: the completions spread out and after the first wave the prompts arrive
one at a time, as in a desynchronised closed loop. The measured ratio TTFT_16 / TTFT_1 is 1.0-1.9
(median 1.49), where a burst gives 8.5. The GLM-5.2 cells of tests/published_load_other.csv (also
EAGLE, also one prompt per pass) keep their waves: the burst predicts them within 8%; whether those
runs pinned the acceptance length is not in the rows cited there (a hypothesis, not checked).

So the planner's burst reading is far high here (printed, asserted below as the known limit) and the
error is the test's shape, not the prefill law: a desynchronised closed loop is the machine-repairman
queue (c clients, each decoding for Z = (osl - 1) TPOT then asking for a prefill of P from one FCFS
server), whose mean response by mean-value analysis (Reiser and Lavenberg 1980; with the residual
P/2 of a deterministic service in progress) with the test's own TPOT at c = 16 is within about 17%
median. The planner has no input that says a load test desynchronised, so this is reported, not
modelled (README, "How accurate, on published load tests").
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from conftest import REPO
from planner.equations import prefill_passes as pp


def _data() -> pd.DataFrame:
    d = pd.read_csv(REPO / "tests" / "data" / "published_load_heldout2.csv")
    assert d["source"].notna().all() and len(d) == 32
    assert (d.groupby("dataset")["concurrency"].agg(sorted).map(list) == [[1, 16]] * 16).all()
    return d


def _repairman_ms(prefill, think, c):
    """Mean response of one FCFS server of deterministic service ``prefill`` before ``c`` clients that
    think ``think`` ms between requests (approximate MVA: the customers found queued, each a full
    service, the one in service its residual P/2; Reiser and Lavenberg, J. ACM 27, 1980)."""
    queue = busy = 0.0
    for n in range(1, c + 1):
        resp = prefill + (queue - busy) * prefill + busy * prefill / 2
        rate = n / (resp + think)
        queue, busy = rate * resp, rate * prefill
    return resp


def test_repairman_by_hand():
    # c = 2, P = 100, Z = 900: n = 1: R = 100, X = 1/1000, Q = 0.1, U = 0.1;
    # n = 2: R = 100 + (0.1 - 0.1) x 100 + 0.1 x 50 = 105 ms
    assert _repairman_ms(100.0, 900.0, 2) == 105.0


def errors(d: pd.DataFrame) -> pd.DataFrame:
    out = []
    for ds, g in d.groupby("dataset", sort=False):
        one, top = g[g.concurrency == 1].iloc[0], g[g.concurrency == 16].iloc[0]
        p = float(one.ttft_ms)                     # calibrated at c = 1: the request-alone prefill
        burst = {f: float(pp.burst_ttft_ms(p, f, top.isl, top.hit, 16, top.budget, 0.5)) for f in (0.0, p)}
        think = (top.osl - 1) * top.tpot_ms
        out.append({"dataset": ds, "hardware": top.hardware, "measured": top.ttft_ms, "ratio": top.ttft_ms / p,
                    "error_f0": burst[0.0] / top.ttft_ms - 1, "error_fp": burst[p] / top.ttft_ms - 1,
                    "error_repairman": _repairman_ms(p, think, 16) / top.ttft_ms - 1})
    return pd.DataFrame(out)


def test_heldout2_from_concurrency_1():
    e = errors(_data())
    med = lambda x: float(np.median(np.abs(x)))  # noqa: E731
    print(f"\nheld-out 2 (SGLang Qwen3.6, speculative decoding unpinned), c=1 -> c=16, {len(e)} points: median "
          f"|error| burst F=0 {med(e.error_f0):.1%}, F=P {med(e.error_fp):.1%}; desynchronised loop (repairman "
          f"MVA, the test's TPOT) {med(e.error_repairman):.1%}; measured TTFT_16/TTFT_1 median {e.ratio.median():.2f}")
    for hw, g in e.groupby("hardware", sort=False):
        print(f"  {hw}: burst F=0 {med(g.error_f0):.1%}, F=P {med(g.error_fp):.1%}, repairman "
              f"{med(g.error_repairman):.1%} [{len(g)} points]")
    # the known limit: the loop did not keep its waves, the burst reading is high on every point
    assert (e.error_fp > 1.0).all() and (e.ratio < 2.0).all()
    # the stated shape (a desynchronised loop) accounts for it
    assert med(e.error_repairman) < 0.25


# ------------------------------------------------------------- held-out 3: a vLLM V1 sweep at c = 1, 8, 16
def _data3() -> pd.DataFrame:
    d = pd.read_csv(REPO / "tests" / "data" / "published_load_heldout3.csv")
    assert d["source"].notna().all() and len(d) == 9
    return d


def errors3(d: pd.DataFrame) -> pd.DataFrame:
    """Vultr's B200 cookbook (vLLM 0.12/0.16, V1: decode first), 2048 in / 512 out. Calibrated at c = 1
    (P = TTFT_1), predicted at c = 8 and 16 by the decode-first loop of planner.equations.decode_first
    (a burst, then the steady loop; the decode step s0 = the c = 1 TPOT, s1 = 0: the step's growth with
    the batch is not pinned by one TPOT) at both ends of the fixed cost, F = 0 and F = P."""
    from planner.equations import decode_first as df
    out = []
    for ds, g in d.groupby("dataset", sort=False):
        one = g[g.concurrency == 1].iloc[0]
        p, s0 = float(one.ttft_ms), float(one.tpot_ms)
        for r in g[g.concurrency > 1].itertuples():
            pred = {}
            for f in (0.0, p):
                a, b, k0 = df.loop_coefficients(r.isl, r.concurrency, r.budget, r.num_requests, "mean", s0, 0.0, r.osl, p, f)
                pred[f] = a * p + b * f + k0
            out.append({"dataset": ds, "concurrency": int(r.concurrency), "measured": r.ttft_ms,
                        "below_c1": r.ttft_ms < p, "error_f0": pred[0.0] / r.ttft_ms - 1, "error_fp": pred[p] / r.ttft_ms - 1})
    return pd.DataFrame(out)


def test_heldout3_from_concurrency_1():
    e = errors3(_data3())
    print(f"\nheld-out 3 (Vultr B200, vLLM V1, 2048/512), c=1 -> c=8/16, {len(e)} points:")
    for r in e.itertuples():
        print(f"  {r.dataset} c={r.concurrency}: measured {r.measured:.0f} ms, decode-first loop F=0 {r.error_f0:+.1%}, "
              f"F=P {r.error_fp:+.1%}{' (below the c=1 TTFT)' if r.below_c1 else ''}")
    # The known limit, from the data: at 5 of the 6 points the TTFT under load is below the same
    # deployment's TTFT alone (Nemotron Nano 362 -> 152 ms at c = 8), which no queue gives: the
    # c = 1 level, the first of the sweep, holds more than the prefill (no warm-up is stated). Every
    # load-test model that is calibrated at c = 1 is high there; the planner cannot tell.
    assert e.below_c1.sum() == 5 and (e.error_fp[e.below_c1] > 0.4).all()
