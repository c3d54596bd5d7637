"""The held-out UCM 3FS tables read with the shape their source states (issue 16): is their miss at
concurrency 4-8 (bias -14% to -17%, tests/test_published_load.py) the unstated shape of the load test?

The source, docs/source/user-guide/prefix-cache/ds3fs_store.md (ModelEngine-Group/unified-cache-management,
commit cdd44067), states one load-test command, ``vllm bench serve --dataset-name random
--random-output-len 2 --request-rate inf --num-prompts 12 --ignore-eos`` on vLLM >= 0.9.1 (the V1 engine,
decode first), and the "Mean TTFT (ms): 7270.95" that run printed is the document's own DeepSeek-R1-awq
16,000-token concurrency-8 Full Compute cell. The csv's shape columns carry it (num_requests 12 at c = 8,
osl 2, decode first; blank below c = 8, where the document says nothing: one burst of c).

Each row is read three ways from its deployment's concurrency-1 fit (the seed law, as
tests/test_published_load.py fits it), each through the independent discrete-event simulation
tests/sim_instance.py (decode first, chunked prefill at 8192 new tokens per step, the fitted fixed cost
per step) and, for the stated shape, also through the planner's own reading
(planner.equations.decode_first.loop_coefficients, which planner.plan.load_tests uses):

* one burst of c (the planner's reading of a row with num_requests blank; before);
* the stated shape: a closed loop of 8 clients over 12 prompts of 2 output tokens (after);
* the command taken literally (no --max-concurrency): 12 prompts in flight at once.

Result (printed; ``python -m pytest -n 0 -s tests/test_published_load_heldout_shape.py``): the stated
shape moves the c = 8 median error from 16.5% (bias -16.5%) to 13.1% (-11.9%) through the simulator, but
only by scattering it (interquartile range 0.13 -> 0.28): the long prompts go high (up to +24%) and the
short ones (80% hits) lower (to -38%), because the four prompts after the first eight queue behind the
rest of the burst, which costs long prompts most. The planner's law reads the stated shape at 14.0%
(-12.8%), every row within 3.2% of the simulation (with the law's osl the decode steps after the first
token, 1 for 2 output tokens; the last part cycle read as its own prompts, tests/test_decode_first_short.py).
The literal command (12 in flight) is +18.9%. No request
count makes the miss uniform (2c, 3c and 6c scatter more still); the burst's miss is nearly uniform over
prompt length and grows with c (measured / burst 1.01 at c = 2, 1.16 at c = 4, 1.20 at c = 8), which is
what a per-step cost that grows with the batch would give, not a queue of more requests. So the
held-out miss is not explained by the shape the source states; the planner keeps the burst and the
miss is stated in the README.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from conftest import REPO
from sim_instance import simulate
from test_published_load import B_DEFAULT, S_KV, _alone
from planner.equations import decode_first as df
from planner.equations import prefill_passes as pp
from planner.equations.ttft_fit import fit_points


def _heldout() -> pd.DataFrame:
    d = pd.read_csv(REPO / "tests" / "data" / "published_load_heldout.csv")
    assert len(d) == 64 and d["source"].notna().all() and d["shape_source"].notna().all()
    assert (d.scheduler == "decode_first").all() and (d.osl == 2).all() and (d.budget == 8192).all()
    assert (d.num_requests[d.concurrency == 8] == 12).all() and d.num_requests[d.concurrency < 8].isna().all()
    return d


def _sim_mean(P, F, u, c, n, osl, budget):
    # osl output tokens: the first from the prefill, osl - 1 decode steps (the simulator counts decode steps);
    # requests of one burst reach the server 0.01 ms apart, in order; a client's next request 0-2 ms after
    # its last completes (an HTTP client's round trip, as tests/test_decode_first.py); the decode step is
    # negligible at 2 tokens
    t, _, _ = simulate(P, 0.0, 0.0, max(int(osl) - 1, 1), clients=c, n=n, budget=budget, tokens=u,
                       pass_fixed=F, decode_first=True, stagger=0.01, jitter=2.0, seed=5)
    return float(np.mean(t))


def _readings(d):
    out = []
    for ds, g in d.groupby("dataset", sort=False):
        c1 = g[g.concurrency == 1]
        fit = fit_points(c1.isl, c1.hit, c1.ttft_ms, S_KV[ds], B_DEFAULT, 0.0)
        F = float(fit["t_fixed"])
        for r in g[g.concurrency > 1].itertuples():
            P = float(_alone(fit, S_KV[ds], [r.isl], [r.hit])[0])
            u, c, M = max(r.isl * (1 - r.hit), 1.0), int(r.concurrency), float(r.budget)
            n = c if np.isnan(r.num_requests) else int(r.num_requests)
            burst_law = float(pp.burst_ttft_u(P, F, u, c, M))
            # the law's osl counts the decode steps after the first token, as the simulator's does:
            # 2 output tokens are 1 step (planner.plan.load_tests passes a row's osl as typed)
            a, b, k = df.loop_coefficients(u, c, M, n, "mean", 0.0, 0.0, max(r.osl - 1, 1), P, F)
            out.append({"dataset": ds, "c": c, "isl": r.isl, "hit": r.hit, "y": r.ttft_ms,
                        "burst_law": burst_law, "burst_sim": _sim_mean(P, F, u, c, c, r.osl, M),
                        "stated_sim": _sim_mean(P, F, u, c, n, r.osl, M), "stated_law": a * P + b * F + k,
                        "literal_sim": _sim_mean(P, F, u, n, n, r.osl, M)})
    e = pd.DataFrame(out)
    for col in ("burst_law", "burst_sim", "stated_sim", "stated_law", "literal_sim"):
        e["e_" + col] = e[col] / e["y"] - 1
    return e


def _med(x):
    return float(np.median(np.abs(x)))


def _iqr(x):
    return float(np.subtract(*np.percentile(x, [75, 25])))


def test_the_stated_shape_does_not_explain_the_heldout_miss():
    e = _readings(_heldout())
    lines = ["\nheld-out UCM 3FS, from c=1, median |error| (bias) [spread: interquartile range of the error]"]
    for (ds, c), g in list(e.groupby(["dataset", "c"], sort=False)) + [(("all", c), g) for c, g in e.groupby("c")]:
        parts = [f"{k} {_med(g['e_' + k]):.1%} ({np.median(g['e_' + k]):+.1%}) [{_iqr(g['e_' + k]):.2f}]"
                 for k in ("burst_law", "burst_sim", "stated_sim", "stated_law", "literal_sim")]
        lines.append(f"  {ds} c={c}: " + ", ".join(parts))
    print("\n".join(lines))
    # the simulator and the planner's burst agree where the shape is one burst (the reading is the model's)
    assert np.max(np.abs(e.burst_sim / e.burst_law - 1)) < 0.02
    # below c = 8 the stated shape is the burst: the planner's reading and the simulator's are one
    lo = e[e.c < 8]
    assert np.max(np.abs(lo.stated_law / lo.stated_sim - 1)) < 0.02
    at8 = e[e.c == 8]
    # the planner's law reads the stated shape as the simulator runs it (every row within 4%)
    assert np.max(np.abs(at8.stated_law / at8.stated_sim - 1)) < 0.04
    # the stated 12 prompts lower the median miss at c = 8 ...
    assert _med(at8.e_stated_sim) < _med(at8.e_burst_sim)
    # ... but only by scattering it over prompt length: the spread more than doubles, both tables
    for ds, g in at8.groupby("dataset"):
        assert _iqr(g.e_stated_sim) > 2 * _iqr(g.e_burst_sim), ds
        assert g.e_stated_sim[g.isl == 32000].min() > g.e_stated_sim[g.isl == 4000].max() - 0.05, ds
    # the literal command (12 in flight) is far high on the long prompts
    assert np.median(at8.e_literal_sim[at8.isl >= 16000]) > 0.10
    # the burst's miss grows with c, about uniformly: ratio measured / burst by concurrency
    ratio = (e.y / e.burst_sim).groupby(e.c).median()
    print(f"  measured / burst, median by concurrency: {ratio.round(3).to_dict()}")
    assert abs(ratio[2] - 1) < 0.05 and ratio[4] > 1.05 and ratio[8] > ratio[4]
