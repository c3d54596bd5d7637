"""An independent discrete-event simulation of one serving instance (plain Python, no library).

Written for the tests of :mod:`planner.equations.queueing` and sharing no code with it. The instance:

* one GPU timeline; a prefill is one uninterrupted step of ``prefill`` ms, first come first served;
  at every step boundary waiting prefills go first (prefill priority, as vLLM/SGLang admit waiting
  requests at the next step); the prefill produces the first token;
* then the request decodes ``osl`` tokens, one per decode step; a step over ``b`` requests takes
  ``s0 + s1 * b`` ms and advances all of them;
* the GPU idles only when nothing waits and nothing decodes.

Arrivals: open loop (Poisson at ``rate`` per ms) or closed loop (``c`` clients started together,
each sending its next request the moment the previous one completes, ``num_requests`` in all).
"""

from __future__ import annotations

import random
from collections import deque


def simulate(prefill: float, s0: float, s1: float, osl: int, *, rate: float | None = None,
             n: int = 10_000, clients: int | None = None, seed: int = 1):
    """Run the instance; returns (ttft list, tpot list, time-average decode batch), per request in
    order of arrival (ttft: arrival to first token; tpot: first token to last / osl)."""
    rng = random.Random(seed)
    if rate is not None:
        t, arrivals = 0.0, []
        for _ in range(n):
            t += rng.expovariate(rate)
            arrivals.append(t)
        pending = deque(arrivals)           # not yet arrived
    else:
        pending = deque([0.0] * min(clients, n))
    sent = len(pending)
    waiting: deque = deque()                # (request id, arrival) in the prefill queue
    decoding: list = []                     # [request id, tokens left, first-token time]
    ttft = [0.0] * n
    tpot = [0.0] * n
    arrival_of = {}
    next_id = 0
    t = 0.0
    batch_area = 0.0
    done = 0
    while done < n:
        while pending and pending[0] <= t:
            a = pending.popleft()
            arrival_of[next_id] = a
            waiting.append((next_id, a))
            next_id += 1
        if waiting:
            rid, a = waiting.popleft()
            t0 = max(t, a)
            batch_area += len(decoding) * (t0 + prefill - t)
            t = t0 + prefill
            ttft[rid] = t - a
            decoding.append([rid, osl, t])
            continue
        if decoding:
            step = s0 + s1 * len(decoding)
            batch_area += len(decoding) * step
            t += step
            still = []
            for r in decoding:
                r[1] -= 1
                if r[1] <= 0:
                    tpot[r[0]] = (t - r[2]) / osl
                    done += 1
                    if clients is not None and sent < n:   # the client sends its next request now
                        pending.append(t)
                        sent += 1
                else:
                    still.append(r)
            decoding = still
            continue
        if pending:
            t = pending[0]                   # idle until the next arrival
        else:
            break
    return ttft, tpot, batch_area / t
