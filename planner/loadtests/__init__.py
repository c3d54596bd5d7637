"""Load-test result files in, Measurements rows out (issue 18).

``planner measurements FILE... -o MEASUREMENTS.xlsx`` reads the result files the load testers
write, detects each file's format from its content, normalises every run to a :class:`Run`
(times in ms, rates per second, mean lengths in tokens: converted once, in the format modules) and
writes one ``Measurements`` row per run (:mod:`planner.loadtests.rows`). Formats, one module each,
each citing the writer's source it follows:

========================== ===========================================================
:mod:`.vllm`               ``vllm bench serve --save-result``/``--append-result``, ``benchmark_serving.py``
:mod:`.sglang`             ``python -m sglang.bench_serving`` JSON lines (``--cache-report``)
:mod:`.aiperf`             AIPerf ``profile_export_aiperf.json``/``.csv``, GenAI-Perf ``*_genai_perf.json``/``.csv``
:mod:`.guidellm`           guidellm ``benchmarks.json``/``.yaml`` (one row per benchmark of a sweep)
:mod:`.llmperf`            LLMPerf ``*_summary.json``
:mod:`.inferenceperf`      inference-perf ``summary_lifecycle_metrics.json`` (+ the Prometheus summary)
:mod:`.prometheus`         server ``/metrics`` scrapes before and after a run (hit ratio, KV load bandwidth)
========================== ===========================================================
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from planner.loadtests import aiperf, guidellm, inferenceperf, llmperf, prometheus, sglang, vllm
from planner.core.places import Place
from planner.loadtests.common import LoadTestError, Run, RunLabel, json_problem, load_json, run_place

KNOWN = ("vLLM bench serve / benchmark_serving.py JSON, SGLang bench_serving JSONL, AIPerf/GenAI-Perf "
         "JSON or CSV, guidellm benchmarks.json/.yaml, LLMPerf *_summary.json, inference-perf "
         "summary_lifecycle_metrics.json, Prometheus /metrics scrapes")

MAX_BYTES = 256 * 2**20  # a result file larger than this is refused (benchmark details can be large)


@dataclass
class Scrape:
    """One Prometheus text scrape (a before or an after)."""
    file: str
    series: dict[str, float]


@dataclass
class Loaded:
    """What the files gave: runs in argument order, problems (all at once), and notes."""
    runs: list[Run] = field(default_factory=list)
    problems: list[LoadTestError] = field(default_factory=list)


def _dispatch(doc: Any, name: str, run: str, path: Path) -> list[Run]:
    if guidellm.detect(doc):
        return guidellm.parse(doc, name)
    if inferenceperf.detect(doc):
        return inferenceperf.parse(doc, name, run, path)
    if inferenceperf.detect_prometheus_summary(doc):
        raise LoadTestError(name, "is inference-perf's Prometheus summary: give its lifecycle report "
                                  "(summary_lifecycle_metrics.json); the summary beside it is read for the hit")
    if llmperf.detect(doc):
        return llmperf.parse(doc, name, run)
    if aiperf.detect(doc):
        return aiperf.parse(doc, name, run)
    if sglang.detect(doc):
        return sglang.parse(doc, name, run)
    if vllm.detect(doc):
        return vllm.parse(doc, name, run)
    if isinstance(doc, dict) and "ttft_s" in doc and "end_to_end_latency_s" in doc:
        # ray-project/llmperf token_benchmark_ray.py writes each request's metrics to
        # *_individual_responses.json beside the *_summary.json it summarises
        raise LoadTestError(name, "is LLMPerf's per-request file (*_individual_responses.json), one entry per "
                                  "request: give the *_summary.json beside it")
    keys = ", ".join(list(doc)[:8]) if isinstance(doc, dict) else type(doc).__name__
    raise LoadTestError(run_place(name, run), f"is JSON but not a load-test result the planner knows "
                                                 f"(keys: {keys}); it reads {KNOWN}")


def _json_lines(text: str, name: str, path: Path) -> list[Run]:
    lines = [(n, ln) for n, ln in enumerate(text.splitlines(), 1) if ln.strip()]
    out: list[Run] = []
    for k, (n, ln) in enumerate(lines):
        try:
            doc = json.loads(ln)
        except json.JSONDecodeError as err:
            last = k == len(lines) - 1
            raise LoadTestError(Place.file_line(name, n), "the last line is cut short (a truncated file: was the run "
                                                    "interrupted?)" if last else f"not valid JSON: {err.msg}") from None
        out += _dispatch(doc, name, RunLabel(f"line {n}", line=n), path)
    return out


def load_file(path: Path) -> list[Run] | Scrape:
    """The runs of one result file (or a Prometheus scrape); a located :class:`LoadTestError` when
    the file cannot be read, is truncated, or is of no known format."""
    name = path.name
    if not path.is_file():
        raise LoadTestError(str(path), "no such file" if not path.exists() else "is not a file")
    if path.stat().st_size > MAX_BYTES:
        raise LoadTestError(name, f"is larger than {MAX_BYTES >> 20} MiB: not a load-test summary")
    if path.suffix.lower() in (".xlsx", ".xlsm", ".xls"):
        raise LoadTestError(name, "is a workbook, not a load-test result (an input workbook goes after --input)")
    raw = path.read_bytes()
    if not raw.strip():
        raise LoadTestError(name, "is empty")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise LoadTestError(name, f"is not a text file; the planner reads {KNOWN}") from None
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            import yaml  # PyYAML: optional, only for guidellm's YAML report
        except ImportError:
            raise LoadTestError(name, "is YAML, which needs PyYAML (pip install pyyaml; it is not a dependency "
                                      "of the planner), or save the guidellm report as benchmarks.json") from None
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as err:
            raise LoadTestError(name, f"is not valid YAML ({str(err).splitlines()[0]}): a truncated file?") from None
        return _dispatch(doc, name, "", path)
    stripped = text.lstrip()
    if stripped[:1] in "{[":
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as err:
            nonblank = [ln for ln in text.splitlines() if ln.strip()]
            if len(nonblank) > 1 and err.msg == "Extra data":
                return _json_lines(text, name, path)
            if len(nonblank) > 1 and nonblank[0].strip().startswith("{") and nonblank[0].strip().endswith("}"):
                return _json_lines(text, name, path)
            raise LoadTestError(name, json_problem(err, text)) from None
        if isinstance(doc, list):
            out: list[Run] = []
            for k, item in enumerate(doc, 1):
                out += _dispatch(item, name, RunLabel(f"item {k}", key=f"[{k - 1}]"), path)
            return out
        return _dispatch(doc, name, "", path)
    if aiperf.detect_csv(text):
        return aiperf.parse_csv(text, name)
    if prometheus.detect(text):
        return Scrape(name, prometheus.parse(text, name))
    raise LoadTestError(name, f"is of no load-test format the planner knows; it reads {KNOWN}")


# file names the tools give their summaries: a folder argument stands for the ones in it
# (AIPerf/GenAI-Perf artifacts, an LLMPerf results folder, an inference-perf report folder)
FOLDER_PATTERNS = ("profile_export_aiperf.json", "*genai_perf.json", "benchmarks.json", "*_summary.json",
                   "summary_lifecycle_metrics.json")


def expand(paths: list[Path]) -> tuple[list[Path], list[LoadTestError]]:
    """Folders replaced by the result files of :data:`FOLDER_PATTERNS` in them (sorted)."""
    out, problems = [], []
    for p in paths:
        if not p.is_dir():
            out.append(p)
            continue
        found = sorted({f for pat in FOLDER_PATTERNS for f in p.glob(pat) if f.is_file()})
        stages = inferenceperf.stage_files(p / "summary_lifecycle_metrics.json")
        if stages:  # an inference-perf report folder: one row per stage, not the pooled run-wide summary
            found = sorted(set(found) - {p / "summary_lifecycle_metrics.json"}) + stages
        if not found:
            problems.append(LoadTestError(str(p), f"is a folder with no result file the planner knows by name "
                                                  f"({', '.join(FOLDER_PATTERNS)}): name the files"))
        out += found
    return out, problems


def load(paths: list[Path]) -> Loaded:
    """Every run of every file, in argument order, with the scrape pairs applied to the result file
    before them, and all problems at once (a duplicate file or run is a problem too)."""
    res = Loaded()
    paths, res.problems = expand(list(paths))
    seen_paths: dict[Path, str] = {}
    items: list[tuple[Path, list[Run] | Scrape]] = []
    for p in paths:
        key = p.resolve()
        if key in seen_paths:
            res.problems.append(LoadTestError(p.name, f"is given twice (also as {seen_paths[key]}): "
                                                      f"one row per run"))
            continue
        seen_paths[key] = str(p)
        try:
            items.append((p, load_file(p)))
        except LoadTestError as err:
            res.problems.append(err)
        except OSError as err:
            res.problems.append(LoadTestError(str(p), f"cannot be read: {err.strerror or err}"))
        except (TypeError, AttributeError, KeyError, ValueError, IndexError) as err:
            # a file that looks like a known format but holds something else where a number or a
            # table was expected: located, not an internal error
            res.problems.append(LoadTestError(p.name, f"has an unexpected layout ({type(err).__name__}: {err}); "
                                                      f"it reads {KNOWN}"))
    last: list[Run] | None = None
    pending: list[Scrape] = []

    def flush_single() -> None:
        if pending:
            res.problems.append(LoadTestError(pending[0].file, "is one Prometheus scrape: give two, taken before "
                                                               "and after the run, after the run's result file"))
            pending.clear()

    for p, got in items:
        if isinstance(got, Scrape):
            pending.append(got)
            if len(pending) == 2:
                before, after = pending
                pending.clear()
                pair = Place.file_pair(before.file, after.file)
                if last is None:
                    res.problems.append(LoadTestError(pair, "scrapes must follow the result file of the run they "
                                                            "bracket"))
                    continue
                if len(last) != 1:
                    res.problems.append(LoadTestError(pair, f"bracket {last[0].file}, which holds {len(last)} runs: "
                                                            f"scrape before and after each run"))
                    continue
                try:
                    diff = prometheus.difference(before.series, after.series, pair)
                except LoadTestError as err:
                    res.problems.append(err)
                    continue
                run = last[0]
                if diff["hit"] is not None:
                    if run.hit is not None:
                        run.notes.append(f"the file's hit {run.hit:.4g} ({run.hit_source}) replaced by the server "
                                         f"metrics' {diff['hit']:.4g}")
                    run.hit, run.hit_source = diff["hit"], diff["hit_source"]
                run.kv_load_gbps = diff["kv_load_gbps"]
                run.notes += diff["notes"]
            continue
        flush_single()
        last = got
        res.runs += got
    flush_single()
    prints: dict[tuple, Run] = {}
    for r in res.runs:
        fp = r.fingerprint()
        if fp in prints:
            res.problems.append(LoadTestError(r.place, f"is the same run as {prints[fp].place} (same tool, duration, "
                                                       f"request count and TTFT): one row per run"))
        else:
            prints[fp] = r
    return res


__all__ = ["KNOWN", "LoadTestError", "Loaded", "Run", "Scrape", "load", "load_file", "load_json"]
