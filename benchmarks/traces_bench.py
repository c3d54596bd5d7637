"""Benchmark: read a prefix-reuse trace of millions of requests and compute its LRU hit curve.

    python benchmarks/traces_bench.py                    # 1,000,000 requests, Mooncake's layout
    python benchmarks/traces_bench.py --requests 1000000 3000000 --layout mooncake bailian --json out/traces-bench.json

Makes a synthetic trace (gzip JSONL) of multi-turn conversations with a shared system prompt (the
shape of the FAST'25 conversation trace: about 18 blocks a request), in Mooncake's layout
(``make``: 512-token blocks) or in Qwen Bailian's (``make_bailian``: the same conversations and ids,
16-token blocks, ``chat_id``/``parent_chat_id``/``type``/``turn`` and timestamps in seconds with
milliseconds), then runs, each in a fresh process with its peak memory (max RSS):

- ``read``: the whole trace read into memory (``planner.traffic.traces.read_trace``), the path of a
  trace whose ids are not prefix hashes;
- ``all``: what the planner runs, ``planner.traffic.traces.trace_reuse`` (the file read once, a block
  of lines at a time, and passed at once) and the curve at 64 capacities (``hit_curve``): from 4 MiB
  of file on and with a CPU idle (the load average) the read and parse run in a worker process
  (``planner.traffic.trace_reader.read_ahead``) while this one passes the previous block;
- ``worker``: the same with the worker whatever the load; ``single``: the same with no worker (the
  read and the pass one after the other in one process, as main did).

Prints a table and writes JSON: each run's wall time as the user waits it (the process started, its
imports, the work, its exit: ``wall_s``, ``worker_wall_s``, ``single_wall_s``), the CPU time of the
process and of its worker (``cpu_s``, ``worker_cpu_s``; ``import_cpu_s``: the part spent before the
work, Python, numpy and planner's imports, about 0.2 s), the peak RSS of each (the worker is a fork:
its RSS counts the pages it shares with the parent too, so the sum overstates), the 1-minute load
average after the runs, and the curve checked: ``same_as_main`` (the SHA-256 of ``cum_tokens`` and the
counts equal main's at f80325b, ``MAIN`` below, for the four traces of the table) and
``same_as_single`` (the three runs' equal).

Measured on the shared 2-core development machine (numpy 2.4, Python 3.11, isal 1.9), 2026-12-02, on
the traces this script writes (seed 1), each run by ``python benchmarks/traces_bench.py --child TRACE
worker|single``, the two one after the other, in the minutes when the other sessions used at most
0.12 CPU during the run (from ``/proc/stat``, the run's own CPU time taken off): two pairs at Mooncake
1 M, three at the others; main (f80325b, ``git archive``, its own copy of this script, ``all``) once,
at a load average of 0.7. Wall [s]; CPU [s] of the parent + the worker; peak RSS [MB] of the parent +
the worker:

=============  ======================================================  ====================================  ========================
trace          with the worker: wall, CPU                              single process: wall,                 main (f80325b): wall,
               (parent + worker), RSS (parent + worker)                CPU, peak RSS                         CPU, peak RSS
=============  ======================================================  ====================================  ========================
Mooncake, 1 M  1.99-2.21 s, 1.94-2.07 + 1.6 s, 103-114 + 41-43 MB      3.19-3.21 s, 3.2 s, 110-120 MB        3.25 s, 3.23 s, 107 MB
Bailian, 1 M   2.47-3.09 s, 2.03-2.39 + 2.0-2.5 s, 104-109 + 43-47 MB  2.96-3.95 s, 3.0-3.9 s, 111-114 MB    3.99 s, 3.85 s, 109 MB
Mooncake, 3 M  5.44-6.01 s, 5.3-5.8 + 4.1-4.8 s, 221-225 + 42-45 MB    8.51-9.01 s, 8.5-9.0 s, 232-233 MB    9.75 s, 9.67 s, 226 MB
Bailian, 3 M   7.12-7.41 s, 5.7-6.3 + 6.1-6.2 s, 212-216 + 44-47 MB    9.86-10.49 s, 9.9-10.5 s, 223-226 MB  12.09 s, 11.91 s, 219 MB
=============  ======================================================  ====================================  ========================

The whole script at 1 M in both layouts a little later (load average 1.2 after): ``all`` 1.71 s
(Mooncake) and 2.27 s (Bailian), ``single`` 2.45 and 3.12 s, ``same_as_main`` and ``same_as_single``
true. So with a CPU idle the targets hold: a million requests in 2-3 s (4 s asked), three million
in 5.4-7.4 s (10 s asked), 270 MB at most in all (300 MB asked).

(The blocks: 17,749,746 and 53,249,544, of which distinct 5,499,912 and 16,499,897; gzip 45, 57, 138
and 174 MB.) The worker's transport (its parts pickled through a pipe widened to 1 MB, about 100 MB
of arrays a million requests) costs 10-15% more CPU time in all, so where other sessions keep both
CPUs busy the worker loses: Linux shares the CPUs between sessions (autogroups), so this session's
two processes get the one CPU its single process would. Measured at a load of 3 (the other sessions
using about one CPU): Mooncake 1 M 3.2-5.3 s with the worker, 2.7-3.9 s without; Bailian 3 M
10.4-17.5 s and 10.4-16.9 s. Hence the load average rule. Per million requests: the imports 0.2 s,
the decompression 0.45-0.5 s (ISA-L), the parser 1.1-1.2 s (Mooncake's layout) to 1.5 s (Bailian's),
the pass 1.5 s; with the worker the parent's share is the pass, the transport's reading (0.15 s) and
the length notes. Memory at three million: the parent's 212-225 MB (8 bytes per distinct block id,
132 MB: last use, parent check; 8 bytes per counted unit, about 20 MB; 1 bit per access and the
superblock counts, 7 MB; the warm-up's kept chunks, about 15 MB; the interpreter with numpy) and the
worker's 42-47 MB (the interpreter's pages it touches, one 1 MB block of text with its parse's
temporaries): 256-270 MB in all.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


def make(path: Path, requests: int, seed: int = 1) -> int:
    """Write the synthetic trace; returns the number of blocks."""
    rng = np.random.default_rng(seed)
    turns = 4
    convs = -(-requests // turns)
    sys_blocks = 4
    new_per_turn = rng.integers(2, 10, (convs, turns))   # new user + previous output blocks
    start = np.sort(rng.uniform(0, 3600e3, convs))       # ms over one hour
    gap = rng.exponential(60e3, (convs, turns))
    t = start[:, None] + np.cumsum(gap, axis=1) - gap[:, :1]
    order = np.argsort(t.ravel(), kind="stable")[:requests]
    next_id = sys_blocks
    conv_base = np.empty(convs, dtype=np.int64)
    own = np.cumsum(new_per_turn, axis=1)                # own blocks of turn j
    for c in range(convs):                               # each conversation's block ids
        conv_base[c] = next_id
        next_id += int(own[c, -1])
    blocks = 0
    with gzip.open(path, "wt", compresslevel=1) as f:
        for k in order:
            c, j = divmod(int(k), turns)
            n_own = int(own[c, j])
            ids = list(range(sys_blocks)) + list(range(conv_base[c], conv_base[c] + n_own))
            blocks += len(ids)
            f.write(json.dumps({"timestamp": int(t[c, j]), "input_length": len(ids) * 512 - 100,
                                "output_length": 200, "hash_ids": ids}) + "\n")
    return blocks


def make_bailian(path: Path, requests: int, seed: int = 1) -> int:
    """The same conversations as :func:`make` written in the Qwen Bailian layout (``chat_id``,
    ``parent_chat_id``, ``timestamp`` [s] with milliseconds, ``input_length``, ``output_length``,
    ``type``, ``turn``, ``hash_ids``; alibaba-edu/qwen-bailian-usagetraces-anon README) with 16-token
    blocks: the same ids, so the same blocks a request (about 18, inputs of about 290 tokens), and the
    same hit curve in blocks. Returns the number of blocks."""
    rng = np.random.default_rng(seed)
    turns = 4
    convs = -(-requests // turns)
    sys_blocks = 4
    new_per_turn = rng.integers(2, 10, (convs, turns))
    start = np.sort(rng.uniform(0, 3600e3, convs))
    gap = rng.exponential(60e3, (convs, turns))
    t = start[:, None] + np.cumsum(gap, axis=1) - gap[:, :1]
    order = np.argsort(t.ravel(), kind="stable")[:requests]
    next_id = sys_blocks
    conv_base = np.empty(convs, dtype=np.int64)
    own = np.cumsum(new_per_turn, axis=1)
    for c in range(convs):
        conv_base[c] = next_id
        next_id += int(own[c, -1])
    blocks = 0
    chat = {}
    with gzip.open(path, "wt", compresslevel=1) as f:
        for i, k in enumerate(order):
            c, j = divmod(int(k), turns)
            n_own = int(own[c, j])
            ids = list(range(sys_blocks)) + list(range(conv_base[c], conv_base[c] + n_own))
            blocks += len(ids)
            f.write(json.dumps({"chat_id": i, "parent_chat_id": chat.get(c, -1), "timestamp": round(t[c, j] / 1e3, 3),
                                "input_length": len(ids) * 16 - 3, "output_length": 20, "type": "text",
                                "turn": j + 1, "hash_ids": ids}) + "\n")
            chat[c] = i
    return blocks


# main's curves on the traces this script writes (seed 1), by ``_child(..., "all")`` at f80325b (the
# single-process read and pass): the SHA-256 of ``cum_tokens`` (int64, little-endian) and the counts
# (total tokens, warm-up requests, warm-up blocks, distinct blocks, requests). ``same_as_main`` in the output.
MAIN = {
    ("mooncake", 1_000_000): ("bc8078653cda36d3dab1b8d8db84a806a755eec5c1005667f7e4abf02f4730ff",
                              4553175936, 500000, 2749425, 5499912, 1000000),
    ("bailian", 1_000_000): ("e87cae8b8c0a59c8a8e8cdf5087740121cb125592dfa8a5b836f573655dce358",
                             142349248, 500000, 2749425, 5499912, 1000000),
    ("mooncake", 3_000_000): ("e4fd81e669957bc255d1cfb39ae0f1a50079d1e8e70beae8604bfd0fcdde3ea7",
                              13658485376, 1500000, 8248764, 16499897, 3000000),
    ("bailian", 3_000_000): ("bc0f499a195bced3c3548e0e9c99cab57d05e8a0353b13cc365d16ebb0fb6d88",
                             427015168, 1500000, 8248764, 16499897, 3000000),
}


def _peak_rss_mb(ru) -> float:
    """This process's peak RSS [MB]: ``VmHWM`` of ``/proc/self/status`` where there is one (Linux:
    ``ru_maxrss`` keeps the high-water mark of the process before its ``exec``, here the benchmark's
    own, 160 MB after writing a trace), else ``ru_maxrss``."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return ru.ru_maxrss / 1024


def _child(path: str, phase: str) -> None:
    from planner.traffic import trace_reader as TR
    from planner.traffic import traces as T
    c0 = time.process_time()                             # the interpreter, numpy and planner imported
    t0 = time.perf_counter()
    if phase == "read":                                  # the whole trace read into memory
        tr = T.read_trace(path)
        out = {"requests": tr.requests, "blocks": tr.blocks, "read_s": time.perf_counter() - t0}
    else:                                                # "all": read and passed at once, as the planner does
        if phase == "single":                            # ... with no worker: read and passed in this process
            TR.AHEAD_MIN_FILE = float("inf")
        elif phase == "worker":                          # ... with the worker whatever the load average
            TR.AHEAD_IDLE_CPU = -float("inf")
        r, _ = T.trace_reuse(path)
        caps = np.unique(np.round(np.logspace(0, np.log10(r.unique_blocks + 1), 64)))
        h = T.hit_curve(r, caps)
        out = {"requests": r.requests, "unique_blocks": r.unique_blocks, "warmup_blocks": r.warmup_blocks,
               "reuse_curve_s": time.perf_counter() - t0, "ceiling": float(T.hit_curve(r, [np.inf])[0]),
               "points": len(h),
               "curve": (hashlib.sha256(memoryview(np.ascontiguousarray(r.cum_tokens, dtype="<i8"))).hexdigest(),
                         r.total_tokens, r.warmup_requests, r.warmup_blocks, r.unique_blocks, r.requests)}
    ru = resource.getrusage(resource.RUSAGE_SELF)
    rc = resource.getrusage(resource.RUSAGE_CHILDREN)   # the reader's worker (joined by now), if any
    out["max_rss_mb"] = _peak_rss_mb(ru)
    out["worker_max_rss_mb"] = rc.ru_maxrss / 1024
    out["cpu_s"] = ru.ru_utime + ru.ru_stime  # the process's CPU time: what wall time is on an idle core
    out["worker_cpu_s"] = rc.ru_utime + rc.ru_stime
    out["import_cpu_s"] = c0                  # ... of which before the work (Python, numpy, planner's imports)
    print(json.dumps(out))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, nargs="+", default=[1_000_000])
    ap.add_argument("--layout", nargs="+", choices=["mooncake", "bailian"], default=["mooncake"],
                    help="the trace's layout: Mooncake's (512-token blocks) or Qwen Bailian's (16-token blocks)")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        _child(*a.child)
        return 0
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for layout, n in ((x, n) for x in a.layout for n in a.requests):
            path = Path(tmp) / f"trace-{layout}-{n}.jsonl.gz"
            t0 = time.perf_counter()
            blocks = (make if layout == "mooncake" else make_bailian)(path, n)
            gen = time.perf_counter() - t0
            res, wall = {}, {}
            for phase in ("read", "all", "worker", "single"):
                t1 = time.perf_counter()
                p = subprocess.run([sys.executable, __file__, "--child", str(path), phase],
                                   capture_output=True, text=True, check=True)
                wall[phase] = time.perf_counter() - t1          # what a user waits: start, imports, exit
                res[phase] = json.loads(p.stdout)
            ra, rw, rb = res["all"], res["worker"], res["single"]
            want = MAIN.get((layout, n))
            row = {"layout": layout, "requests": n, "blocks": blocks, "unique_blocks": ra["unique_blocks"],
                   "file_mb": path.stat().st_size / 2**20, "generate_s": gen,
                   "read_cpu_s": res["read"]["cpu_s"], "read_max_rss_mb": res["read"]["max_rss_mb"],
                   "wall_s": wall["all"], "cpu_s": ra["cpu_s"], "worker_cpu_s": ra["worker_cpu_s"],
                   "max_rss_mb": ra["max_rss_mb"], "worker_max_rss_mb": ra["worker_max_rss_mb"],
                   "load_average": os.getloadavg()[0],
                   "worker_wall_s": wall["worker"], "worker_main_cpu_s": rw["cpu_s"],
                   "worker_worker_cpu_s": rw["worker_cpu_s"], "worker_main_max_rss_mb": rw["max_rss_mb"],
                   "worker_worker_max_rss_mb": rw["worker_max_rss_mb"],
                   "single_wall_s": wall["single"], "single_cpu_s": rb["cpu_s"], "single_max_rss_mb": rb["max_rss_mb"],
                   "import_cpu_s": ra["import_cpu_s"], "ceiling": ra["ceiling"],
                   "same_as_single": ra["curve"] == rb["curve"] == rw["curve"],
                   "same_as_main": None if want is None else tuple(ra["curve"]) == tuple(rw["curve"]) == want}
            rows.append(row)
            print(" ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()),
                  flush=True)
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
