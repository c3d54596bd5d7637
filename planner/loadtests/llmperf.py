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

``inter_token_latency_s`` is NOT a time per output token: per request it is ``sum(time_to_next_token)``
divided by the output tokens, and that sum starts with the TTFT itself
(``src/llmperf/ray_clients/openai_chat_completions_client.py``: ``time_to_next_token.append(ttft)`` for
the first chunk, "This should be same as metrics[common_metrics.E2E_LAT]"; ``token_benchmark_ray.py``
``request_metrics[INTER_TOKEN_LAT] /= request_metrics[NUM_OUTPUT_TOKENS]``): it is the end-to-end
latency per output token. Read as a TPOT it counted TTFT/osl in every step (a 2 s TTFT over 100 tokens
doubled a 20 ms TPOT). So ``itl_ms`` is left blank and ``tpot_ms`` is
``(e2e mean - ttft mean) / (output tokens mean - 1)``, vLLM's TPOT definition over the means, with a note.
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
    r.isl = positive(first(number(doc.get("results_number_input_tokens_mean")), number(doc.get("mean_input_tokens"))))
    r.osl = first(number(doc.get("results_number_output_tokens_mean")), number(doc.get("mean_output_tokens")))
    e2e, ttft = to_ms(doc.get("results_end_to_end_latency_s_mean"), "s"), r.ttft.get("mean")
    if e2e is not None and ttft is not None and r.osl is not None and r.osl > 1 and e2e > ttft:
        r.tpot_ms = (e2e - ttft) / (r.osl - 1)
        r.notes.append("tpot_ms is (end_to_end_latency mean - ttft mean) / (output tokens mean - 1); llmperf's "
                       "inter_token_latency_s counts the TTFT in (end-to-end latency per output token), so it "
                       "is not used and itl_ms is blank")
    elif positive(doc.get("results_inter_token_latency_s_mean")) is not None:
        r.notes.append("tpot_ms and itl_ms are blank: llmperf's inter_token_latency_s counts the TTFT in "
                       "(end-to-end latency per output token) and the file has no end-to-end latency mean to "
                       "take the TTFT out of")
    per_min = positive(doc.get("results_num_completed_requests_per_min"))
    r.request_throughput = per_min / 60 if per_min else None
    r.output_throughput = positive(doc.get("results_mean_output_throughput_token_per_s"))
    if done and r.request_throughput:
        r.duration_s = done / r.request_throughput
    r.concurrency = whole(doc.get("num_concurrent_requests"))
    return [r]
