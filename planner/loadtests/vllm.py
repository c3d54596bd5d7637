"""vLLM serving benchmark results: ``vllm bench serve --save-result`` (one JSON object),
``--append-result`` (one JSON object per line) and the older ``benchmarks/benchmark_serving.py``.

Key names and units, as the writer spells them (vllm-project/vllm ``vllm/benchmarks/serve.py``, re-read
at commit 009e6d4a, and ``benchmarks/benchmark_serving.py`` at 0049e29c:
``benchmark()`` builds ``result``, ``process_one_metric`` adds ``mean_/median_/std_/pNN_<metric>_ms``,
``main_async`` adds ``model_id``, ``num_prompts``, ``request_rate`` (the string ``"inf"`` when
unlimited), ``burstiness``, ``max_concurrency`` and the ``--metadata KEY=VALUE`` pairs; ``--append-result``
writes a newline, then the next object):

- ``duration`` [s], ``completed``, ``failed`` (newer files), ``total_input_tokens``,
  ``total_output_tokens``, ``request_throughput`` [requests/s], ``output_throughput`` and
  ``total_token_throughput`` [tokens/s];
- ``mean_ttft_ms``, ``median_ttft_ms``, ``p99_ttft_ms`` (the percentiles of ``--metric-percentiles``,
  default ``99``), the same for ``tpot``, ``itl``, ``e2el`` [ms]. Every mean is
  ``np.mean(values or 0) * 1000``: 0 when nothing was measured (no request completed, or an
  endpoint that does not stream gives no TTFT), so 0 is read as "not measured", never as a time.
- The older ``benchmarks/benchmark_serving.py`` spells its goodput key ``request_goodput:`` (with the
  colon) and has no ``failed``; failures are then counted from its ``errors`` list (one message per
  request, "" for a success), else ``num_prompts - completed``. That version writes the per-request
  arrays (``ttfts``, ``itls``, ``errors``, ...) even without ``--save-detailed`` (it deletes them before
  merging the result); ``serve.py`` writes them with ``--save-detailed`` and always keeps
  ``latencies`` and ``queue_times``.
- ``max_concurrent_requests`` is the measured peak, not the cap (``max_concurrency``); with
  ``--ramp-up-strategy`` the file has ``ramp_up_strategy``/``ramp_up_start_rps``/``ramp_up_end_rps`` and
  ``request_rate`` ``"inf"``: no single rate, and not all requests at once.
"""

from __future__ import annotations

from typing import Any

from planner.loadtests.common import LoadTestError, Run, number, positive, whole

TOOL = "vllm bench serve"
TOOL_OLD = "vllm benchmark_serving.py"
STATS = {"mean": "mean", "median": "median", "p50": "median", "p90": "p90", "p99": "p99"}


def detect(doc: Any) -> bool:
    return isinstance(doc, dict) and "completed" in doc and "duration" in doc and (
        "model_id" in doc or "total_token_throughput" in doc or "mean_e2el_ms" in doc) \
        and "input_throughput" not in doc


def ttft_stats(doc: dict, metric: str = "ttft", suffix: str = "_ms") -> dict[str, float]:
    """``mean_ttft_ms``, ``median_ttft_ms``, ``p90_ttft_ms``, ``p99_ttft_ms`` -> {stat: ms} (positive only)."""
    out = {}
    for key in ("mean", "median", "p50", "p90", "p99"):
        v = positive(doc.get(f"{key}_{metric}{suffix}"))
        if v is not None and STATS[key] not in out:
            out[STATS[key]] = v
    return out


def rate(value: Any) -> float | None:
    """``request_rate``: a number, or ``"inf"``/``Infinity`` (all requests at once) -> None."""
    v = number(value)
    return v if v is not None and v > 0 else None


def serving_run(doc: dict, tool: str, file: str, run: str) -> Run:
    """The fields vLLM and SGLang's benchmark results share (SGLang's bench_serving started as a
    copy of vLLM's benchmark_serving.py)."""
    completed = whole(doc.get("completed"))
    r = Run(tool=tool, file=file, run=run)
    if completed is None:
        raise LoadTestError(r.at("completed"), f"{doc.get('completed')!r} is not a count: not a finished benchmark "
                                               f"result")
    sent = whole(doc.get("num_prompts"))
    if completed == 0:
        raise LoadTestError(r.at("completed"), f"is 0, no request completed{f' (all {sent} failed)' if sent else ''}: its "
                                     f"statistics are zeros, not measurements")
    r.num_requests = completed
    failed = whole(doc.get("failed"))
    errors = [e for e in doc.get("errors") or [] if e] if isinstance(doc.get("errors"), list) else []
    if failed is None and errors:
        if isinstance(doc.get("ttfts"), list):  # --save-detailed / --output-details: one entry per request
            failed = len(errors)
        else:  # some SGLang versions: the first distinct error messages, not a count
            r.failure_text = f"the file reports failed requests (errors: {str(errors[0])[:80]!r})"
    if failed is None and sent is not None and sent >= completed:
        failed = sent - completed
    r.failed = failed
    r.duration_s = positive(doc.get("duration"))
    tin, tout = number(doc.get("total_input_tokens")), number(doc.get("total_output_tokens"))
    r.isl = tin / completed if tin else None
    r.osl = tout / completed if tout is not None else None
    r.ttft = ttft_stats(doc)
    r.tpot_ms = positive(doc.get("mean_tpot_ms"))
    r.itl_ms = positive(doc.get("mean_itl_ms"))
    r.request_throughput = positive(doc.get("request_throughput"))
    r.output_throughput = positive(doc.get("output_throughput"))
    r.request_rate = rate(doc.get("request_rate"))
    mc = whole(doc.get("max_concurrency"))
    r.concurrency = mc if mc and mc > 0 else None
    ramp = doc.get("ramp_up_strategy")
    if ramp:
        # vllm bench serve --ramp-up-strategy: request_rate stays "inf" while the rate climbs from
        # ramp_up_start_rps to ramp_up_end_rps; not "all at once", and no single rate
        r.request_rate = None
        r.notes.append(f"request rate ramped {ramp} from {doc.get('ramp_up_start_rps')} to "
                       f"{doc.get('ramp_up_end_rps')} requests/s: no single rate; request_rate left blank")
    elif str(doc.get("request_rate")).strip().lower() == "trace":
        # sglang bench_serving --use-trace-timestamps writes request_rate "trace": the trace's timing
        r.notes.append("requests sent at the trace's timestamps (request_rate \"trace\"): no single rate; "
                       "request_rate left blank")
    elif r.concurrency is None and r.request_rate is None:
        n = sent or completed + (failed or 0)  # SGLang writes no num_prompts
        r.concurrency = n
        r.notes.append(f"request_rate unlimited and no max_concurrency: all {n} requests were sent at once; "
                       f"concurrency taken as {n}")
    # --metadata KEY=VALUE pairs a team may have recorded (vllm bench serve --metadata tp=4 gpu=H100)
    r.tp = whole(doc.get("tp", doc.get("tensor_parallel_size")))
    gpu = doc.get("gpu", doc.get("gpu_type"))
    r.gpu = str(gpu).strip() if gpu not in (None, "") else None
    return r


def parse(doc: dict, file: str, run: str = "") -> list[Run]:
    tool = TOOL_OLD if "request_goodput:" in doc else TOOL
    if whole(doc.get("run_number")) == -1:
        # vllm bench sweep serve (vllm/benchmarks/sweep/serve.py run_comb, read at 0031557f) writes its
        # --warmup-num-prompts run as warmup.json with run_number -1, beside the measured run=N.json
        raise LoadTestError(f"{file} {run}".strip(), "is vllm bench sweep's warm-up run (run_number -1), not a "
                                                     "measurement: give the run=N.json files (or the summary.json "
                                                     "of the combination)")
    r = serving_run(doc, tool, file, run)
    model = doc.get("model_id") or doc.get("model")
    r.model = str(model) if model else None
    r.total_throughput = positive(doc.get("total_token_throughput"))
    return [r]
