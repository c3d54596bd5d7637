"""Hit ratio against cache capacity without a trace: a stated reuse model (issue 19, item 3).

What a team knows, as parameters (:class:`ReuseModel`):

- ``rate_rps`` requests per second reaching the cache; conversations of ``turns`` turns each,
  ``gap_s`` seconds between turns (conversations start as a Poisson process of rate
  ``rate_rps / turns``);
- a share ``system_share`` of the conversations opens with one shared system prompt of
  ``system_tokens`` tokens (its whole blocks are shared by all of them);
- the first turn adds ``first_tokens`` tokens of its own, each later turn ``turn_tokens`` (the
  previous answer and the new message); a turn's input is the previous turn's input plus those;
- ``block_size`` tokens per block. The cache semantics are :mod:`planner.traffic.traces`' (LRU over
  prefix blocks, the continuous cached prefix counts).

The curve (:func:`hit_curve`). ``D(t)``, the distinct blocks referenced in the last ``t``
seconds (a conversation whose latest turn fell in the window counts that turn's own blocks):

    D(t) = S_b (1 - exp(-rate p_s t)) + rate / turns * (min(g, t) * sum_{j < T-1} c_j + t * c_{T-1})

with ``S_b`` the system prompt's whole blocks and ``c_j`` the own blocks of turn ``j``
(averaged over conversations with and without the prompt). A block last used ``t`` ago has an
LRU rank of about ``D(t)`` plus the blocks nearer the root of its request (Che's
approximation: Che, Tung, Wang 2002, "Hierarchical Web caching systems"; asymptotically exact
for many conversations: Fricker, Robert, Roberts 2012, arXiv:1205.4442). So turn ``j >= 1``
hits ``min(floor(N_{j-1} / bs), max(0, C - D(g)))`` blocks of its previous turn, and the
system prompt's block ``i`` is cached with probability ``1 - exp(-rate p_s t_i)``, ``D(t_i) = C - i``.

Where it is exact, where approximate: at capacity 0 and at a capacity that holds everything
(the ceiling: every repeated full block hits) the curve is exact; in between it is Che's
approximation, which replaces the random number of blocks referenced during a gap by its mean,
so the step at ``C = D(g)`` (the history survives the gap) is sharper than a real trace's.
Conversation ids, arrival bursts, heavy-tailed lengths and several system prompts are outside
the model: use a trace for those. :func:`synthetic_trace` draws a trace from the same
assumptions; ``python -m planner.traffic.reuse_model`` writes one that Workloads ``trace`` can name.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from planner.traffic import traces as tr


@dataclass(frozen=True)
class ReuseModel:
    rate_rps: float = 5.0          # requests per second [1/s]
    turns: int = 4                 # turns per conversation [count]
    gap_s: float = 60.0            # between turns of a conversation [s]
    system_share: float = 0.5      # conversations with the shared system prompt [fraction]
    system_tokens: int = 2048      # shared system prompt [tokens]
    first_tokens: int = 1024       # own tokens of the first turn [tokens]
    turn_tokens: int = 1024        # tokens each later turn adds [tokens]
    block_size: int = 512          # tokens per block [tokens]

    def inputs(self, with_system: bool) -> np.ndarray:
        """Input length of each turn [tokens]."""
        base = (self.system_tokens if with_system else 0) + self.first_tokens
        return base + self.turn_tokens * np.arange(self.turns)

    @property
    def system_blocks(self) -> int:
        return self.system_tokens // self.block_size

    def own_blocks(self, with_system: bool) -> np.ndarray:
        """Blocks of each turn that are the conversation's own (not the shared prompt's) [blocks]."""
        n = -(-self.inputs(with_system) // self.block_size)
        return n - (self.system_blocks if with_system else 0)


def distinct_blocks(mdl: ReuseModel, t, without_system: bool = False) -> np.ndarray:
    """``D(t)``: expected distinct blocks referenced in the last ``t`` seconds [blocks];
    ``without_system``: by the conversations without the system prompt only (the window since
    the prompt's last use holds no request that carries it)."""
    t = np.asarray(t, dtype=float)
    p = mdl.system_share
    if without_system:
        c, share, sys_part = mdl.own_blocks(False) * (1.0 - p), 1.0, 0.0
    else:
        c, share = p * mdl.own_blocks(True) + (1 - p) * mdl.own_blocks(False), 1.0
        sys_part = mdl.system_blocks * (1 - np.exp(-mdl.rate_rps * p * t))
    conv = share * mdl.rate_rps / mdl.turns * (np.minimum(mdl.gap_s, t) * c[:-1].sum() + t * c[-1])
    return sys_part + conv


def time_of(mdl: ReuseModel, blocks, without_system: bool = False) -> np.ndarray:
    """``D^-1``: the window [s] in which ``blocks`` distinct blocks are referenced (bisection)."""
    target = np.atleast_1d(np.asarray(blocks, dtype=float))
    D = lambda x: distinct_blocks(mdl, x, without_system)
    lo, hi = np.zeros_like(target), np.ones_like(target)
    while np.any((D(hi) < target) & np.isfinite(target)) and hi.max() < 1e15:
        hi = np.where(D(hi) < target, hi * 2, hi)
    for _ in range(100):
        mid = (lo + hi) / 2
        below = D(mid) < target
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return np.where(np.isinf(target), np.inf, np.where(target <= 0, 0.0, hi))


def hit_curve(mdl: ReuseModel, capacity_blocks) -> np.ndarray:
    """Hit ratio [fraction of input tokens] at each capacity [blocks], by the model above."""
    caps = np.atleast_1d(np.asarray(capacity_blocks, dtype=float))
    bs, p, sb = mdl.block_size, mdl.system_share, mdl.system_blocks
    d_gap = float(distinct_blocks(mdl, mdl.gap_s))
    lam_s = mdl.rate_rps * p
    out = np.zeros(len(caps))
    for k, C in enumerate(caps):
        # the system prompt's block i: cached when last used within D^-1(C - i)
        if sb and lam_s > 0:
            t_i = time_of(mdl, C - np.arange(sb), without_system=True)
            sys_hits = float(np.sum(np.where(np.isinf(t_i), 1.0, 1 - np.exp(-lam_s * t_i))))
        else:
            sys_hits = 0.0
        room = np.inf if np.isinf(C) else max(0.0, C - d_gap)
        hit_tok = total = 0.0
        for with_sys, share in ((True, p), (False, 1 - p)):
            if share <= 0:
                continue
            n = mdl.inputs(with_sys)
            prev_full = n[:-1] // bs                          # whole blocks of the previous turn
            hist = np.minimum(prev_full, room)                # its blocks that survived the gap
            first = sys_hits if with_sys else 0.0
            later = np.maximum(hist, first)
            hit_tok += share * bs * (first + later.sum())
            total += share * n.sum()
        out[k] = min(hit_tok / total, 1.0)
    return out


def synthetic_trace(mdl: ReuseModel, duration_s: float, seed: int = 0) -> tr.Trace:
    """A Mooncake-format trace drawn from the model's assumptions (requests after ``duration_s`` cut)."""
    rng = np.random.default_rng(seed)
    rate_conv = mdl.rate_rps / mdl.turns
    starts = np.cumsum(rng.exponential(1 / rate_conv, int(rate_conv * duration_s * 1.2) + 10))
    starts = starts[starts < duration_s]
    with_sys = rng.random(len(starts)) < mdl.system_share
    bs = mdl.block_size
    sys_ids = list(range(mdl.system_blocks))
    next_id = mdl.system_blocks
    reqs = []  # (time, hash_ids, input_length)
    for s, ws in zip(starts, with_sys):
        n = mdl.inputs(bool(ws))
        ids: list[int] = list(sys_ids) if ws else []
        for j in range(mdl.turns):
            t = s + j * mdl.gap_s
            keep = (n[j - 1] // bs) if j else len(ids)        # whole blocks of the previous turn
            ids = ids[:keep]
            new = -(-int(n[j]) // bs) - len(ids)
            ids = ids + list(range(next_id, next_id + new))
            next_id += new
            if t <= duration_s:
                reqs.append((t, list(ids), int(n[j])))
    reqs.sort(key=lambda x: x[0])
    out = tr.make_trace([r[1] for r in reqs], bs, [r[2] for r in reqs])
    out.timestamp_s = np.array([r[0] for r in reqs])
    return out


def write_jsonl(t: tr.Trace, path: Path) -> None:
    """The trace as Mooncake JSONL (gzip when the name ends in .gz)."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "wt", encoding="utf-8") as f:
        for i in range(t.requests):
            ids = t.hashes[t.starts[i]:t.starts[i + 1]].tolist()
            f.write(json.dumps({"timestamp": int(round(t.timestamp_s[i] * 1000)), "input_length": int(t.input_length[i]),
                                "output_length": 0, "hash_ids": ids}) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m planner.traffic.reuse_model",
                                 description="Write a synthetic prefix-reuse trace from the reuse model, for "
                                             "Workloads trace, and print the model's hit curve beside its LRU curve.")
    for f, v in asdict(ReuseModel()).items():
        ap.add_argument(f"--{f.replace('_', '-')}", type=type(v), default=v)
    ap.add_argument("--duration-s", type=float, default=3600.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("-o", "--output", type=Path, required=True)
    a = vars(ap.parse_args(argv))
    mdl = ReuseModel(**{k: a[k] for k in asdict(ReuseModel())})
    t = synthetic_trace(mdl, a["duration_s"], a["seed"])
    write_jsonl(t, a["output"])
    r = tr.reuse(t)
    caps = np.unique(np.round(np.logspace(0, math.log10(max(r.unique_blocks, 2)), 9)))
    print(f"wrote {a['output']}: {t.requests} requests, {t.blocks} blocks")
    print("capacity_blocks  model_hit  trace_hit")
    for c, hm, ht in zip(caps, hit_curve(mdl, caps), tr.hit_curve(r, caps)):
        print(f"{c:15,.0f}  {hm:9.4f}  {ht:9.4f}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
