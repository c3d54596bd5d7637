"""What the load-test model assumes about the engine's scheduler, checked with the independent
simulation of tests/sim_instance.py (issue 16; the numbers are quoted in the README).

The closed-loop model of planner.equations.prefill_passes / queueing assumes prefill first: waiting
prompts run before decode steps, so a wave of c equal requests decodes together, completes together
and the clients send the next wave together (SGLang's scheduler; the simulation in prefill-first
mode reproduces the model to 1e-8, tests/test_prefill_passes.py). vLLM's V1 scheduler is decode
first: running requests' decode tokens are scheduled first and prefill chunks fill the rest of the
budget (vllm/v1/core/sched/scheduler.py, Scheduler.schedule), so the waves break up after the first.

Measured here, closed loops of 40 waves (P = 400 ms, F = 100 ms, 4000 tokens, budget 8192, decode
step 10 + 0.3 b ms):
- the throughput, which sizes Workloads ``concurrency`` (instances_concurrency), holds under both
  policies within 7% (the mixed steps pay the decode step and a pass's fixed cost more often);
- the TTFT does not: with long outputs (osl 200) decode first queues far less than the wave (the
  model is 3.7x high at c = 8, 5.5x at c = 16); with 2-token outputs the queue never drains (the
  model is 27% high at c = 8 and 23% low at c = 16). A single burst (num_requests = c) is the
  model's case under both policies.
"""

from __future__ import annotations

import numpy as np
import pytest

from planner.equations import prefill_passes as pp
from planner.equations import queueing as q
from sim_instance import simulate

P, F, U, M, S0, S1 = 400.0, 100.0, 4000.0, 8192.0, 10.0, 0.3


def _run(osl, c, decode_first, waves=40):
    n = waves * c
    ttft, _tpot, _b, end = simulate(P, S0, S1, osl, clients=c, n=n, budget=M, tokens=U, pass_fixed=F,
                                    stagger=1e-7, with_end=True, decode_first=decode_first)
    return np.asarray(ttft), n * 1000.0 / end


@pytest.mark.parametrize("osl,c", [(200, 8), (200, 16), (2, 8), (2, 16)])
def test_throughput_holds_under_decode_first_the_ttft_does_not(osl, c):
    rate = float(q.closed_loop_rate(c, P, osl, S0, S1, F, U, 0.0, M))
    burst = float(pp.burst_ttft_ms(P, F, U, 0.0, c, M))
    t_pf, x_pf = _run(osl, c, False)
    t_df, x_df = _run(osl, c, True)
    print(f"\nosl {osl} c={c}: throughput model {rate:.4f}/s, prefill-first {x_pf:.4f}, decode-first {x_df:.4f}; "
          f"mean TTFT model {burst:.0f} ms, prefill-first {t_pf.mean():.0f}, decode-first {t_df.mean():.0f} "
          f"(model / decode-first {burst / t_df.mean():.2f}x)")
    assert x_pf == pytest.approx(rate, rel=1e-6) and t_pf.mean() == pytest.approx(burst, rel=1e-6)
    assert x_df == pytest.approx(rate, rel=0.07)
    # the first wave is a burst under both policies: its first request runs alone
    assert t_df[0] == pytest.approx(P, rel=1e-6)
