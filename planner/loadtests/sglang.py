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
``max_concurrency``. The older result names no model (it is ``--model`` of the run): give ``--model``.
Newer versions (``python/sglang/benchmark/serving.py``, read at sgl-project/sglang commit 00f9ec47)
add ``tag``, ``server_info`` (the server's ``/server_info``: its ``ServerArgs`` with ``model_path``,
``served_model_name`` and ``tp_size``, read for the model and tp), ``total_throughput``,
``p90``/``p95`` of each latency, ``max_output_tokens_per_s``, ``max_concurrent_requests``, and write
``request_rate`` as the string ``"trace"`` when requests follow a trace's timestamps.

With ``--cache-report`` a ``cache_report`` block carries the server's prefix-cache accounting:
``total_prompt_tokens``, ``total_cached_tokens``, ``cache_hit_rate_pct`` and the cached tokens by
tier (``device_cached_tokens``, ``host_cached_tokens``, ``storage_cached_tokens``; null for a tier
that is not configured; ``storage_backend``), confirmed in ``python/sglang/benchmark/serving.py``
at commit 00f9ec47 (``total_prompt_tokens`` sums the prompt lengths of the successful requests, as
``total_input_tokens`` does). The older ``bench_serving.py`` (commit 0033168) predates the report. An
agentic-replay writer seen in the code corpus also adds ``"errors"``: the first three distinct error
messages, not a count, read as "some requests failed". The hit is ``total_cached_tokens / total_prompt_tokens``.
"""

from __future__ import annotations

from typing import Any

from planner.loadtests.common import Run, number, positive, whole
from planner.loadtests.vllm import serving_run

TOOL = "sglang bench_serving"


def detect(doc: Any) -> bool:
    return isinstance(doc, dict) and "completed" in doc and "duration" in doc and (
        "input_throughput" in doc or "mean_e2e_latency_ms" in doc or "cache_report" in doc
        or "total_output_tokens_retokenized" in doc)


def server_scheduler(doc: dict, info: dict) -> tuple[str | None, str]:
    """The server's scheduler when the file names the server, else ``(None, "")``.

    ``backend`` ``sglang`` is bench_serving's client of SGLang's native ``/generate`` API, which only
    an SGLang server answers; a ``server_info`` block is the server's own ``/server_info`` (its
    ServerArgs). SGLang runs waiting prefills before decode steps (``Scheduler.get_next_batch_to_run``:
    a new prefill batch first, else the running decode batch; sgl-project/sglang
    ``python/sglang/srt/managers/scheduler.py``): prefill first, unless ``enable_mixed_chunk`` mixes a
    prefill chunk into the decode batch (then neither law is the engine's: left blank). Every other
    backend (``sglang-oai``, ``vllm``, ``openai``, ...) is an OpenAI-compatible client that says
    nothing about the server."""
    if info.get("enable_mixed_chunk"):
        return None, ""
    if info:
        return "prefill_first", "server_info (an SGLang server, prefill first)"
    if str(doc.get("backend") or "").lower() == "sglang":
        return "prefill_first", "backend sglang (SGLang's native /generate API, prefill first)"
    return None, ""


def parse(doc: dict, file: str, run: str = "") -> list[Run]:
    r = serving_run(doc, TOOL, file, run)
    info = doc.get("server_info") if isinstance(doc.get("server_info"), dict) else {}
    if isinstance(info.get("decode"), list) and info["decode"] and isinstance(info["decode"][0], dict):
        info = info["decode"][0]  # a PD-disaggregated router answers per role (as bench_serving reads it)
    model = doc.get("model_id") or doc.get("model") or doc.get("model_path") or \
        info.get("served_model_name") or info.get("model_path")
    r.model = str(model) if model else None
    if r.tp is None:
        r.tp = whole(info.get("tp_size"))
    r.scheduler, r.scheduler_source = server_scheduler(doc, info)
    r.total_throughput = positive(doc.get("total_throughput"))
    if r.total_throughput is None and positive(doc.get("input_throughput")) and r.output_throughput:
        r.total_throughput = positive(doc["input_throughput"]) + r.output_throughput
    rep = doc.get("cache_report")
    if isinstance(rep, dict):
        prompt, cached = number(rep.get("total_prompt_tokens")), number(rep.get("total_cached_tokens"))
        if prompt and cached is not None:
            r.hit = cached / prompt
            r.hit_source = "cache_report total_cached_tokens / total_prompt_tokens"
            if cached == 0:
                r.notes.append("cache_report total_cached_tokens is 0: a 0 hit, or a server started without "
                               "--enable-cache-report (it then reports no cached tokens): check the server")
        elif number(rep.get("cache_hit_rate_pct")) is not None:
            r.hit = number(rep["cache_hit_rate_pct"]) / 100
            r.hit_source = "cache_report cache_hit_rate_pct / 100"
        if prompt:
            tiers = [f"{t} {number(rep.get(f'{t}_cached_tokens')) / prompt:.1%}"
                     for t in ("device", "host", "storage") if number(rep.get(f"{t}_cached_tokens")) is not None]
            if tiers:
                r.notes.append("hit by tier (cached / prompt tokens): " + ", ".join(tiers))
    return [r]
