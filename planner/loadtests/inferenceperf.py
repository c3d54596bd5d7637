"""kubernetes-sigs inference-perf reports: ``summary_lifecycle_metrics.json`` (or a stage's
``stage_N_lifecycle_metrics.json``), with ``summary_prometheus_metrics.json`` beside it.

Schema (kubernetes-sigs/inference-perf ``inference_perf/reportgen/base.py``, ``ResponsesSummary``:
``benchmark_time_seconds``, ``load_summary``, ``successes``, ``failures``): ``load_summary.{count,
send_duration, requested_rate, achieved_rate, concurrency}`` (rate in requests/s; ``concurrency``
when the stage had one). ``summarize_requests`` writes ``send_duration``/``requested_rate``/
``achieved_rate``/``concurrency`` only for a stage report (``stage_N_lifecycle_metrics.json``); the
run-wide ``summary_lifecycle_metrics.json`` has ``load_summary.{count, schedule_delay}`` only
(kubernetes-sigs/inference-perf ``inference_perf/reportgen/base.py``, commit 7de5ef2e); ``successes.count``; ``successes.latency.{time_to_first_token,
time_per_output_token, inter_token_latency, request_latency}.{mean, median, p90, p99, ...}`` [s]
(``summarize``: ``median`` for p50, ``p{p:g}`` otherwise); ``successes.throughput.{requests_per_sec,
input_tokens_per_sec, output_tokens_per_sec, total_tokens_per_sec}``; lengths in
``successes.prompt_tokens.{total, cached, mean}`` (newer: cached from the server's
``usage.prompt_tokens_details.cached_tokens``) or ``successes.prompt_len.mean`` (older), and
``successes.output_len.mean``; ``failures.count``.

The Prometheus summary (``summarize_prometheus_metrics``) has ``successes.prefix_cache_hit_percent.mean``
= 100 x hits / queries of the server's prefix cache, and 0.0 when the server counted no queries:
a 0 from it is taken with a note saying it may mean "not counted".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from planner.loadtests.common import LoadTestError, Run, dig, first, number, positive, to_ms, whole

TOOL = "inference-perf"


def detect(doc: Any) -> bool:
    return isinstance(doc, dict) and "load_summary" in doc and isinstance(doc.get("successes"), dict) \
        and isinstance(dig(doc, "successes", "latency"), dict)


def detect_prometheus_summary(doc: Any) -> bool:
    return isinstance(doc, dict) and "load_summary" in doc and isinstance(
        dig(doc, "successes", "prefix_cache_hit_percent"), dict)


def stage_files(path: Path) -> list[Path]:
    """The ``stage_N_lifecycle_metrics.json`` reports in the folder of ``path``, in stage order."""
    found = [(whole(f.name.split("_")[1]), f) for f in path.parent.glob("stage_*_lifecycle_metrics.json")
             if f.is_file() and f.name.split("_")[1].isdigit()]
    return [f for _, f in sorted(found)]


def _prom_hit(path: Path) -> tuple[float | None, str]:
    """The hit ratio of ``summary_prometheus_metrics.json`` beside ``path``, when it is there."""
    beside = path.with_name(path.name.replace("lifecycle_metrics", "prometheus_metrics"))
    if beside == path or not beside.is_file():
        return None, ""
    try:
        doc = json.loads(beside.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise LoadTestError(beside.name, f"cannot be read as JSON ({err})") from None
    pct = number(dig(doc, "successes", "prefix_cache_hit_percent", "mean"))
    usage = number(dig(doc, "successes", "kv_cache_usage_percentage", "mean"))
    if pct == 0 and not usage:
        # _ratio(hits, queries) is 0 when no query was counted, and a KV cache at 0% use under load
        # means the scrape read none of the server's cache gauges (the kubecon-na-2025 demo reports of
        # kubernetes-sigs/inference-perf 7de5ef2e, "chunking_and_prefix_caching" included, are all so):
        # not a measured 0 hit
        return None, f"{beside.name} has prefix_cache_hit_percent 0 and kv_cache_usage_percentage " \
                     f"{'0' if usage == 0 else 'missing'}: the server's cache metrics were not scraped, so no hit was taken"
    return (None, "") if pct is None else (pct / 100, beside.name)


def parse(doc: dict, file: str, run: str = "", path: Path | None = None) -> list[Run]:
    r = Run(tool=TOOL, file=file, run=run)
    s = doc["successes"]
    ok = whole(s.get("count"))
    if not ok:
        raise LoadTestError(r.at("successes.count"), "is 0: no request succeeded")
    r.num_requests = ok
    r.failed = whole(dig(doc, "failures", "count"))
    lat = s.get("latency") or {}
    for stat in ("mean", "median", "p90", "p99"):
        v = to_ms(dig(lat, "time_to_first_token", stat), "s")
        if v is not None and v > 0:
            r.ttft[stat] = v
    r.tpot_ms = positive(to_ms(dig(lat, "time_per_output_token", "mean"), "s"))
    r.itl_ms = positive(to_ms(dig(lat, "inter_token_latency", "mean"), "s"))
    tp = s.get("throughput") or {}
    r.request_throughput = positive(tp.get("requests_per_sec"))
    r.output_throughput = positive(tp.get("output_tokens_per_sec"))
    r.total_throughput = positive(tp.get("total_tokens_per_sec"))
    prompt = s.get("prompt_tokens") if isinstance(s.get("prompt_tokens"), dict) else {}
    total = number(prompt.get("total"))
    r.isl = positive(first(number(prompt.get("mean")), total / ok if total else None, dig(s, "prompt_len", "mean")))
    out_len = first(dig(s, "output_len", "mean"), dig(s, "output_tokens", "mean"))
    r.osl = number(out_len)
    r.duration_s = positive(first(doc.get("benchmark_time_seconds"), dig(doc, "load_summary", "send_duration")))
    ls = doc.get("load_summary") or {}
    r.request_rate = positive(ls.get("requested_rate"))
    r.concurrency = whole(ls.get("concurrency"))
    if r.concurrency:
        # a CONCURRENT stage: a closed loop at concurrency_level; its requested_rate is the rate the
        # load generator sets at run time to pace num_requests (ConcurrentLoadStage.rate, "set at
        # runtime for load generation"), not an arrival rate the test asked for
        r.request_rate = None
    elif not ls.get("requested_rate") and ls:
        # the run-wide summary (reportgen/base.py generate_reports: summarize_requests over every stage's
        # requests, no stage_rate): its TTFT mixes every stage's load, and a row without a load shape is
        # read as one request at a time, so it is refused and the stage files named instead
        stages = stage_files(path) if path is not None else []
        named = (f"read the stage reports beside it instead ({', '.join(p.name for p in stages)}; give the "
                 f"folder or the files)" if stages else
                 "read the stage_N_lifecycle_metrics.json reports inference-perf writes beside it (per_stage, "
                 "on by default)")
        raise LoadTestError(r.place, f"is the run-wide summary: its load_summary has no requested_rate or "
                                     f"concurrency (it pools every stage of the run, so its TTFT is no one "
                                     f"load's); {named}")
    cached = number(prompt.get("cached"))
    if total and cached:
        r.hit, r.hit_source = cached / total, "successes.prompt_tokens cached / total"
    else:
        if total and cached == 0:
            r.notes.append("successes.prompt_tokens.cached is 0: a 0 hit, or a server that does not report "
                           "cached tokens; not taken as the hit")
        hit, where = _prom_hit(path) if path is not None else (None, "")
        if hit is None and where:
            r.notes.append(where)
        elif hit is not None:
            r.hit, r.hit_source = hit, f"{where} prefix_cache_hit_percent / 100"
            if hit == 0:
                r.notes.append(f"{where}: prefix_cache_hit_percent is 0, which inference-perf also writes when "
                               f"the server counted no prefix-cache queries: check the server's metrics")
    model = first(doc.get("model"), dig(doc, "config", "model"))
    r.model = str(model) if model else None
    return [r]
