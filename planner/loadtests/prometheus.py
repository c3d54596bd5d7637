"""Server metrics in the Prometheus text format, scraped before and after a run (``curl
http://server:8000/metrics > before.prom``): the difference of the two scrapes is that run's hit
ratio and, with a KV offload connector, its measured KV load bandwidth.

Series read (summed over their label sets, e.g. several engines or models):

- vLLM prefix cache, in tokens (vllm-project/vllm ``vllm/v1/metrics/loggers.py``):
  ``vllm:prefix_cache_queries`` and ``vllm:prefix_cache_hits`` (counters, exposed with ``_total``),
  older servers ``vllm:gpu_prefix_cache_queries``/``vllm:gpu_prefix_cache_hits``; a KV connector's
  ``vllm:external_prefix_cache_queries``/``_hits``. hit = Δhits / Δqueries of the GPU prefix cache;
  with a connector, its hits are tokens the GPU cache missed, so the total hit is
  (Δhits + Δexternal hits) / Δqueries, and both parts are named in the row's note.
- vLLM KV offload: ``vllm:kv_offload_load_bytes_total`` [B] and ``vllm:kv_offload_load_time_total``
  [s]: bandwidth = Δbytes / Δtime [GB/s, 10^9 B/s] (the ``kv_load_gbps`` column). Older servers (the
  OffloadingConnector metrics before the flat load/store names; vLLM 0.24 serves only these, later
  ones keep them as deprecated) have ``vllm:kv_offload_total_bytes_total`` and
  ``vllm:kv_offload_total_time_total`` with a ``transfer_type`` label, ``CPU_to_GPU`` for loads and
  ``GPU_to_CPU`` for stores: their ``CPU_to_GPU`` series are read when the flat ones are absent
  (stores are never mixed in).
- SGLang: ``sglang:cache_hit_rate``, a gauge (fraction): the after scrape's value.

A counter that goes down between the scrapes (a restarted server, or the scrapes swapped) is an
error, as is a pair with no prefix-cache traffic between them (no hit to report, not a 0 hit).
"""

from __future__ import annotations

import math
import re

from planner.core.places import Place
from planner.loadtests.common import LoadTestError

_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)(\s+\S+)?\s*$")

HITS = ("vllm:prefix_cache_hits", "vllm:gpu_prefix_cache_hits")
QUERIES = ("vllm:prefix_cache_queries", "vllm:gpu_prefix_cache_queries")
_TRANSFER = re.compile(r'transfer_type="([^"]*)"')


def detect(text: str) -> bool:
    lines = [ln for ln in text.splitlines() if ln.strip()][:50]
    return bool(lines) and any(ln.startswith(("# HELP ", "# TYPE ")) for ln in lines) or bool(lines) and all(
        ln.startswith("#") or _LINE.match(ln) for ln in lines) and any(":" in ln.split("{")[0] for ln in lines)


def parse(text: str, file: str) -> dict[str, float]:
    """Series name (``_total`` suffix dropped) -> sum over label sets."""
    out: dict[str, float] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if not m:
            raise LoadTestError(Place.file_line(file, n), f"is not a Prometheus sample line: {line[:60]!r} "
                                                    f"(a truncated scrape?)")
        name, value = m.group(1), m.group(3)
        tt = _TRANSFER.search(m.group(2) or "")
        try:
            v = float(value)
        except ValueError:
            raise LoadTestError(Place.file_line(file, n), f"{name} value {value!r} is not a number") from None
        if name.endswith("_total"):
            name = name[: -len("_total")]
        if name.endswith(("_created", "_bucket")) or not math.isfinite(v):
            continue
        out[name] = out.get(name, 0.0) + v
        if tt:  # the labelled offload series also per direction: name[cpu_to_gpu]
            key = f"{name}[{tt.group(1).lower()}]"
            out[key] = out.get(key, 0.0) + v
    return out


def difference(before: dict[str, float], after: dict[str, float], files: Place) -> dict:
    """hit, the source of it, the KV load bandwidth and notes from a before/after pair."""
    def delta(name: str) -> float | None:
        if name not in after:
            return None
        d = after[name] - before.get(name, 0.0)
        if d < 0:
            raise LoadTestError(files, f"{name} went down from {before[name]:g} to {after[name]:g}: the server "
                                       f"restarted between the scrapes, or they are in the wrong order (before, after)")
        return d

    res: dict = {"hit": None, "hit_source": "", "kv_load_gbps": None, "notes": []}
    q = next((delta(n) for n in QUERIES if n in after), None)
    h = next((delta(n) for n in HITS if n in after), None)
    qname = next((n for n in QUERIES if n in after), "")
    if q is not None and h is not None:
        if q == 0:
            raise LoadTestError(files, f"{qname} did not change between the scrapes: no prefix-cache traffic was "
                                       f"counted, so they give no hit ratio (scrape the server that served the run)")
        ext = delta("vllm:external_prefix_cache_hits")
        res["hit"] = (h + (ext or 0)) / q
        res["hit_source"] = f"{files}: Δ{qname.replace('queries', 'hits')}" + (" + Δexternal hits" if ext else "") \
            + f" / Δ{qname}"
        if ext:
            res["notes"].append(f"hit by tier: GPU prefix cache {h / q:.1%}, KV connector {ext / q:.1%}")
    elif "sglang:cache_hit_rate" in after:
        res["hit"] = after["sglang:cache_hit_rate"]
        res["hit_source"] = f"{files}: sglang:cache_hit_rate (after)"
    b, t = delta("vllm:kv_offload_load_bytes"), delta("vllm:kv_offload_load_time")
    names = "Δkv_offload_load_bytes / Δkv_offload_load_time"
    if b is None and t is None:
        b, t = delta("vllm:kv_offload_total_bytes[cpu_to_gpu]"), delta("vllm:kv_offload_total_time[cpu_to_gpu]")
        names = 'Δkv_offload_total_bytes / Δkv_offload_total_time, transfer_type="CPU_to_GPU"'
    if b and t:
        res["kv_load_gbps"] = b / t / 1e9
        res["notes"].append(f"KV offload load bandwidth {b / t / 1e9:.3g} GB/s ({names})")
    if res["hit"] is None and res["kv_load_gbps"] is None:
        raise LoadTestError(files, "have no prefix-cache series (vllm:prefix_cache_queries/hits, "
                                   "vllm:gpu_prefix_cache_*, sglang:cache_hit_rate) nor KV offload counters")
    return res
