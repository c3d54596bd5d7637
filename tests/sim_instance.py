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

Batched prefill (``budget`` given, issue 16 "under load"): instead of one prefill per step, a step
is one forward pass over up to ``budget`` new prompt tokens taken from the waiting requests in
order, a prompt of ``tokens`` new tokens split across passes when it does not fit (chunked
prefill, as vLLM's scheduler fills ``max_num_batched_tokens``); a request's first token comes at
the end of the pass that holds its last prompt token. A pass costs ``pass_fixed`` plus the
variable work of its tokens, ``(prefill - passes_alone * pass_fixed) / tokens`` per token, so a
request alone still takes ``prefill``. Requests sent at the same instant reach the server
``stagger`` ms apart (the engine starts a pass as soon as one request is there).

Decode first (``decode_first``, with a ``budget``; vLLM V1's scheduler, which schedules the running
requests' decode tokens first and fills the rest of ``max_num_batched_tokens`` with prefill chunks:
vllm-project/vllm ``vllm/v1/core/sched/scheduler.py``, ``Scheduler.schedule``, "First, schedule the
RUNNING requests"): every step advances all decoding requests by one token and takes up to
``budget - b`` new prompt tokens from the waiting requests; it costs ``s0 + s1 b`` for the decodes
plus, when it holds prompt tokens, ``pass_fixed`` and their variable work.
"""

from __future__ import annotations

import bisect
import random
from collections import deque


def _send(pending: deque, at: float, delay: float) -> None:
    """A client's next request reaches the server at ``at + delay``; ``pending`` stays in time order."""
    if delay:
        bisect.insort(pending, at + delay)
    else:
        pending.append(at)


def simulate(prefill: float, s0: float, s1: float, osl: int, *, rate: float | None = None,
             n: int = 10_000, clients: int | None = None, seed: int = 1, budget: float | None = None,
             tokens: float = 1.0, pass_fixed: float = 0.0, stagger: float = 0.0, with_end: bool = False,
             decode_first: bool = False, jitter: float = 0.0):
    """Run the instance; returns (ttft list, tpot list, time-average decode batch), per request in
    order of arrival (ttft: arrival to first token; tpot: first token to last / osl); with
    ``with_end`` also the time the last request completes [ms]. ``jitter`` [ms]: in a closed loop,
    each client sends its next request a uniform random ``[0, jitter)`` ms after its previous one
    completes (a client's and the network's turnaround), on top of ``stagger``."""
    rng = random.Random(seed)
    if rate is not None:
        t, arrivals = 0.0, []
        for _ in range(n):
            t += rng.expovariate(rate)
            arrivals.append(t)
        pending = deque(arrivals)           # not yet arrived
    else:
        pending = deque([k * stagger for k in range(min(clients, n))])
    alone = 1
    while budget is not None and alone * budget < tokens - 1e-9:
        alone += 1                           # passes a prompt takes alone
    per_token = (prefill - alone * pass_fixed) / tokens
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
            waiting.append([next_id, a, 0.0])   # request id, arrival, prompt tokens done
            next_id += 1
        if decode_first and budget is not None and (waiting or decoding):
            b = len(decoding)
            room, finished = budget - b, []
            while waiting and room > 1e-9:
                head = waiting[0]
                take = min(tokens - head[2], room)
                room -= take
                head[2] += take
                if head[2] >= tokens - 1e-9:
                    finished.append(waiting.popleft())
            took = budget - b - room
            step = (pass_fixed + took * per_token if took > 1e-9 else 0.0) + (s0 + s1 * b if b else 0.0)
            batch_area += b * step
            t += step
            still, k = [], 0
            for r in decoding:
                r[1] -= 1
                if r[1] <= 0:
                    tpot[r[0]] = (t - r[2]) / osl
                    done += 1
                    if clients is not None and sent < n:
                        _send(pending, t + k * stagger, rng.random() * jitter if jitter else 0.0)
                        sent += 1
                        k += 1
                else:
                    still.append(r)
            decoding = still
            for rid, a, _ in finished:
                ttft[rid] = t - a
                decoding.append([rid, osl, t])
            continue
        if waiting and budget is not None:
            room, finished = budget, []
            while waiting and room > 1e-9:
                head = waiting[0]
                left = tokens - head[2]
                take = min(left, room)
                room -= take
                head[2] += take
                if head[2] >= tokens - 1e-9:
                    finished.append(waiting.popleft())
            step = pass_fixed + (budget - room) * per_token
            batch_area += len(decoding) * step
            t += step
            for rid, a, _ in finished:
                ttft[rid] = t - a
                decoding.append([rid, osl, t])
            continue
        if waiting:
            rid, a, _ = waiting.popleft()
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
            still, k = [], 0
            for r in decoding:
                r[1] -= 1
                if r[1] <= 0:
                    tpot[r[0]] = (t - r[2]) / osl
                    done += 1
                    if clients is not None and sent < n:   # the client sends its next request now
                        _send(pending, t + k * stagger, rng.random() * jitter if jitter else 0.0)
                        sent += 1
                        k += 1
                else:
                    still.append(r)
            decoding = still
            continue
        if pending:
            t = pending[0]                   # idle until the next arrival
        else:
            break
    return (ttft, tpot, batch_area / t, t) if with_end else (ttft, tpot, batch_area / t)
