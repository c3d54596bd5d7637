"""SGLang ``python -m sglang.bench_serving`` results: one JSON object per line, appended to
``--output-file`` (sgl-project/sglang ``python/sglang/bench_serving.py``, ``benchmark()``:
``file.write(json.dumps(result) + "\\n")``).

Keys (same units as vLLM's, which it was adapted from): ``backend``, ``dataset_name``,
``request_rate`` (``float("inf")`` when unlimited, which ``json.dumps`` writes as a bare
``Infinity``), ``max_concurrency``, ``random_input_len``/``random_output_len``, ``duration`` [s],
``completed``, ``total_input_tokens``, ``total_output_tokens``, ``request_throughput``
[requests/s], ``input_throughput``/``output_throughput`` [tokens/s], ``{mean,median,std,p99}_{ttft,
tpot,itl,e2e_latency}_ms`` (newer versions add p90/p95), and ``concurrency``: the *measured* mean
number of requests in flight (sum of latencies / duration), not the configured cap, which is
``max_concurrency``. The result names no model (it is ``--model`` of the run): give ``--model``.

With ``--cache-report`` a ``cache_report`` block carries the server's prefix-cache accounting:
``total_prompt_tokens``, ``total_cached_tokens``, ``cache_hit_rate_pct`` and the cached tokens by
tier (``device_cached_tokens``, ``host_cached_tokens``, ``storage_cached_tokens``; null for a tier
that is not configured). The version read for this module (sgl-project/sglang commit 0033168)
predates the report; the keys follow issue 18 and a newer bench_serving seen in the code corpus
(``if cache_report: result["cache_report"] = _cache_report(outputs, total_input_tokens)``, its test
checking ``total_cached_tokens``, ``total_prompt_tokens`` and ``device_cached_tokens``). That newer
writer also adds ``"errors"``: the first three distinct error messages, not a count, read as "some
requests failed". The hit is ``total_cached_tokens / total_prompt_tokens``.
"""

from __future__ import annotations

from typing import Any

from planner.loadtests.common import Run, number, positive
from planner.loadtests.vllm import serving_run

TOOL = "sglang bench_serving"


def detect(doc: Any) -> bool:
    return isinstance(doc, dict) and "completed" in doc and "duration" in doc and (
        "input_throughput" in doc or "mean_e2e_latency_ms" in doc or "cache_report" in doc
        or "total_output_tokens_retokenized" in doc)


def parse(doc: dict, file: str, run: str = "") -> list[Run]:
    r = serving_run(doc, TOOL, file, run)
    model = doc.get("model_id") or doc.get("model") or doc.get("model_path")
    r.model = str(model) if model else None
    r.total_throughput = positive(doc.get("total_throughput"))
    if r.total_throughput is None and positive(doc.get("input_throughput")) and r.output_throughput:
        r.total_throughput = positive(doc["input_throughput"]) + r.output_throughput
    rep = doc.get("cache_report")
    if isinstance(rep, dict):
        prompt, cached = number(rep.get("total_prompt_tokens")), number(rep.get("total_cached_tokens"))
        if prompt and cached is not None:
            r.hit = cached / prompt
            r.hit_source = "cache_report total_cached_tokens / total_prompt_tokens"
        elif number(rep.get("cache_hit_rate_pct")) is not None:
            r.hit = number(rep["cache_hit_rate_pct"]) / 100
            r.hit_source = "cache_report cache_hit_rate_pct / 100"
        if prompt:
            tiers = [f"{t} {number(rep.get(f'{t}_cached_tokens')) / prompt:.1%}"
                     for t in ("device", "host", "storage") if number(rep.get(f"{t}_cached_tokens")) is not None]
            if tiers:
                r.notes.append("hit by tier (cached / prompt tokens): " + ", ".join(tiers))
    return [r]
