"""guidellm ``benchmarks.json`` (and ``benchmarks.yaml``): one row per benchmark of a sweep.

Schema (vllm-project/guidellm ``src/guidellm/benchmark/schemas/report.py`` ``GenerativeBenchmarksReport``:
``metadata``, ``config``, ``benchmarks``; ``schemas/benchmark.py`` ``GenerativeBenchmark``: ``config``,
``metrics``, ``duration`` [s]; ``schemas/metrics.py`` ``GenerativeMetrics``): per benchmark
``metrics.<name>`` is a ``StatusDistributionSummary`` with ``successful``/``errored``/``incomplete``/
``total``, each a ``DistributionSummary`` (``mean``, ``median``, ``percentiles.{p50,p90,p95,p99,...}``,
``schemas/statistics.py``). Names used: ``time_to_first_token_ms``, ``time_per_output_token_ms``,
``inter_token_latency_ms`` [ms], ``requests_per_second``, ``output_tokens_per_second``,
``tokens_per_second`` [1/s], ``prompt_token_count``, ``output_token_count`` [tokens],
``request_concurrency``; ``metrics.request_totals.{successful, errored, incomplete, total}``.
The scheduling strategy is ``config.strategy`` (``scheduler/strategies.py``: ``type_`` one of
``synchronous``, ``concurrent`` (``streams``), ``throughput`` (``max_concurrency``), ``constant`` and
``poisson`` (``rate`` [requests/s]), ``trace``); older reports (tags v0.2.1 and v0.3.1:
``benchmark/benchmark.py`` ``GenerativeBenchmark``, ``scheduler/worker.py``
``GenerativeRequestsWorkerDescription``, re-read for this) keep it under ``args.strategy``, the
totals in ``request_totals`` beside ``metrics`` (and ``run_stats.requests_made``), the model in
``worker.backend_model``, and ``start_time``/``end_time``/``duration`` on the benchmark: read as
fallbacks. The metric names and ``DistributionSummary`` keys (``percentiles.p50/p90/p99``) are the
same in v0.3.1 and at HEAD (ee7a7745; v0.4/v0.5 moved the config to ``config`` with
``config.backend.model``, as read). ``incomplete`` requests (cut off when a timed benchmark
ends) are not failures; ``errored`` ones are.

``.yaml`` needs PyYAML, which is not a dependency of the planner: without it a YAML report is refused
with a message saying so (save the report as JSON, or ``pip install pyyaml``).
"""

from __future__ import annotations

from typing import Any

from planner.loadtests.common import LoadTestError, Run, dig, first, number, positive, whole

TOOL = "guidellm"


def detect(doc: Any) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("benchmarks"), list) and any(
        isinstance(b, dict) and isinstance(b.get("metrics"), dict) for b in doc["benchmarks"])


def _stat(metrics: dict, name: str, stat: str = "mean") -> float | None:
    s = dig(metrics, name, "successful")
    if not isinstance(s, dict):
        return None
    if stat in ("mean", "median"):
        return number(s.get(stat))
    return number(dig(s, "percentiles", stat))


def _model(report: dict, bench: dict) -> str | None:
    for path in (("config", "backend", "model"), ("config", "requests", "model"), ("config", "model"),
                 ("args", "model"), ("config", "backend_kwargs", "model"), ("worker", "backend_model")):
        for doc in (bench, report):
            v = dig(doc, *path)
            if isinstance(v, str) and v:
                return v
    v = dig(report, "config", "model") or dig(report, "args", "model")
    return v if isinstance(v, str) and v else None


def parse(doc: dict, file: str, run: str = "") -> list[Run]:
    benches = doc["benchmarks"]
    out = []
    for k, b in enumerate(benches, 1):
        label = f"benchmark {k} of {len(benches)}"
        r = Run(tool=TOOL, file=file, run=label)
        m = b.get("metrics")
        if not isinstance(m, dict):
            raise LoadTestError(r.place, "has no metrics")
        strat = first(dig(b, "config", "strategy"), dig(b, "args", "strategy"), {})
        kind = str(first(strat.get("type_"), strat.get("type"), "")) if isinstance(strat, dict) else ""
        r.run = f"{label} ({kind or 'strategy not named'})"
        totals = first(m.get("request_totals"), b.get("request_totals"), dig(b, "run_stats", "requests_made"), {})
        ok = whole(totals.get("successful")) if isinstance(totals, dict) else None
        r.failed = whole(totals.get("errored")) if isinstance(totals, dict) else None
        if ok == 0:
            raise LoadTestError(r.place, "no request succeeded: its statistics are not measurements")
        r.num_requests = ok
        r.model = _model(doc, b)
        for stat, key in (("mean", "mean"), ("median", "median"), ("p90", "p90"), ("p99", "p99")):
            v = _stat(m, "time_to_first_token_ms", key)
            if v is not None and v > 0:
                r.ttft[stat] = v
        r.tpot_ms = positive(_stat(m, "time_per_output_token_ms"))
        r.itl_ms = positive(_stat(m, "inter_token_latency_ms"))
        r.request_throughput = positive(_stat(m, "requests_per_second"))
        r.output_throughput = positive(_stat(m, "output_tokens_per_second"))
        r.total_throughput = positive(_stat(m, "tokens_per_second"))
        r.isl = positive(_stat(m, "prompt_token_count"))
        r.osl = number(_stat(m, "output_token_count"))
        times = b if "end_time" in b else (b.get("run_stats") or {})
        r.duration_s = positive(first(b.get("duration"), (number(times.get("end_time")) or 0) -
                                      (number(times.get("start_time")) or 0) or None))
        if kind == "synchronous":
            r.concurrency = 1
        elif kind == "concurrent":
            r.concurrency = whole(strat.get("streams"))
        elif kind in ("constant", "poisson"):
            r.request_rate = positive(strat.get("rate"))
            r.concurrency = whole(strat.get("max_concurrency"))
        elif kind == "throughput":
            r.concurrency = whole(strat.get("max_concurrency"))
            if r.concurrency is None:
                mean_c = _stat(m, "request_concurrency")
                r.notes.append("throughput strategy without max_concurrency: as many requests in flight as the "
                               "server took" + (f" (mean {mean_c:.1f})" if mean_c else "") + "; concurrency left blank")
        else:
            r.notes.append(f"strategy {kind or '(none)'!r}: load shape not read; type concurrency or request_rate")
        out.append(r)
    if not out:
        raise LoadTestError(file, "has no benchmarks")
    return out
