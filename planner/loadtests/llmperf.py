"""LLMPerf ``token_benchmark_ray.py`` ``*_summary.json``.

Schema (ray-project/llmperf, re-read at commit f1d6bed4, ``token_benchmark_ray.py``: ``metadata = {"model", "mean_input_tokens",
"stddev_input_tokens", "mean_output_tokens", "stddev_output_tokens", "num_concurrent_requests",
...}`` with ``metadata["results"] = metrics_summary(...)``, written through ``LLMPerfResults.to_dict``,
which flattens nested keys with ``_`` (``src/llmperf/utils.py`` ``flatten_dict``); metric names in
``src/llmperf/common_metrics.py``): ``results_ttft_s_mean``, ``results_ttft_s_quantiles_p50``/
``_p90``/``_p99``, ``results_inter_token_latency_s_mean``, ``results_end_to_end_latency_s_*`` [s];
``results_number_input_tokens_mean``/``results_number_output_tokens_mean`` [tokens, measured per
request]; ``results_num_completed_requests``, ``results_num_completed_requests_per_min``
[requests/min], ``results_mean_output_throughput_token_per_s`` [tokens/s], ``results_number_errors``.
The statistics are over the requests without an error code. ``mean_input_tokens`` (top level) is the
requested mean, used only when the measured one is missing.

``inter_token_latency_s`` is per request the sum of the gaps between streamed chunks divided by the
output tokens: a time per output token, so it fills ``tpot_ms`` and ``itl_ms`` alike.
"""

from __future__ import annotations

from typing import Any

from planner.loadtests.common import LoadTestError, Run, first, number, positive, to_ms, whole

TOOL = "llmperf"


def detect(doc: Any) -> bool:
    return isinstance(doc, dict) and ("results_ttft_s_mean" in doc or (
        "num_concurrent_requests" in doc and any(str(k).startswith("results_") for k in doc)))


def parse(doc: dict, file: str, run: str = "") -> list[Run]:
    r = Run(tool=TOOL, file=file, run=run)
    r.model = str(doc["model"]) if doc.get("model") else None
    done = whole(doc.get("results_num_completed_requests"))
    if done == 0:
        raise LoadTestError(r.at("results_num_completed_requests"), "is 0, no request completed: its statistics are "
                                                                      "not measurements")
    r.num_requests = done
    r.failed = whole(doc.get("results_number_errors"))
    for stat, key in (("mean", "results_ttft_s_mean"), ("median", "results_ttft_s_quantiles_p50"),
                      ("p90", "results_ttft_s_quantiles_p90"), ("p99", "results_ttft_s_quantiles_p99")):
        v = to_ms(doc.get(key), "s")
        if v is not None and v > 0:
            r.ttft[stat] = v
    r.tpot_ms = r.itl_ms = positive(to_ms(doc.get("results_inter_token_latency_s_mean"), "s"))
    r.isl = positive(first(number(doc.get("results_number_input_tokens_mean")), number(doc.get("mean_input_tokens"))))
    r.osl = first(number(doc.get("results_number_output_tokens_mean")), number(doc.get("mean_output_tokens")))
    per_min = positive(doc.get("results_num_completed_requests_per_min"))
    r.request_throughput = per_min / 60 if per_min else None
    r.output_throughput = positive(doc.get("results_mean_output_throughput_token_per_s"))
    if done and r.request_throughput:
        r.duration_s = done / r.request_throughput
    r.concurrency = whole(doc.get("num_concurrent_requests"))
    return [r]
