"""NVIDIA AIPerf ``profile_export_aiperf.json``/``.csv`` and GenAI-Perf ``*_genai_perf.json``/``.csv``.

JSON (ai-dynamo/aiperf, re-read at commit db4f6397: ``aiperf/exporters/json_exporter.py``,
``aiperf/common/models/export_models.py``: ``JsonExportData`` "designed to
mimic the structure of the GenAI-Perf JSON output"): one object per metric, ``{"unit": ..., "avg":
..., "p50": ..., "p90": ..., "p99": ..., "min": ..., "max": ..., "std": ...}`` under the metric's tag:
``time_to_first_token``, ``inter_token_latency``, ``request_latency``, ``input_sequence_length``,
``output_sequence_length``, ``request_throughput``, ``output_token_throughput``, ``request_count``,
``error_request_count``, ``benchmark_duration``; ``input_config`` holds the run's configuration
(AIPerf: ``endpoint.model_names``, ``loadgen.concurrency``, ``loadgen.request_rate``; older GenAI-Perf:
the CLI arguments, ``model``, ``concurrency``, ``request_rate``; newer GenAI-Perf, whose
``ConfigCommand.to_json_dict`` writes the sections ``model_names``, ``subcommand``, ``verbose``,
``template_filename``, ``analyze``, ``endpoint``, ``perf_analyzer``, ``input``, ``output``,
``tokenizer``, ``process`` (triton-inference-server/perf_analyzer ``genai-perf/genai_perf/config/
input/config_command.py``, commit 263c5f6e): ``model_names`` and ``perf_analyzer.stimulus``
(``{"concurrency": N}`` or ``{"request_rate": R}``; ``analyze.sweep_parameters.concurrency`` is the
default sweep range, not the load). Time units are the writer's tags (``aiperf/common/
enums/metric_enums.py`` ``MetricTimeUnit``: ``ns``, ``us``, ``ms``, ``sec``): AIPerf converts to its
display units (ms; ``benchmark_duration`` in sec) before export, GenAI-Perf files may carry ``ns``
(the raw records, before its scaling); every value is converted by its own ``unit``.

CSV (``aiperf/exporters/csv_exporter.py``): a first section with the header ``Metric,avg,min,max,
p1,...,p99,std`` and one row per request metric named ``<Header> (<unit>)`` (``Time to First Token
(ms)``), then a blank line and a ``Metric,Value`` section (``Request Throughput (requests/sec)``,
``Request Count``). GenAI-Perf's CSV has the same two sections, with ``Time To First Token (ms)`` and
numbers grouped with thousands separators (``"1,234.56"``), read here as 1234.56.

``inter_token_latency`` in both tools is (request latency - TTFT) / (output tokens - 1) per request:
vLLM's TPOT, so it fills ``tpot_ms`` and ``itl_ms`` alike.
"""

from __future__ import annotations

import csv
import io
import re
from typing import Any

from planner.core.places import Place
from planner.loadtests.common import LoadTestError, Run, dig, first, number, parse_number_text, positive, to_ms, whole

TOOL_AIPERF = "aiperf"
TOOL_GENAI = "genai-perf"

# CSV metric names (lower case, unit stripped) -> JSON tag
_CSV_NAMES = {
    "time to first token": "time_to_first_token", "inter token latency": "inter_token_latency",
    "request latency": "request_latency", "input sequence length": "input_sequence_length",
    "output sequence length": "output_sequence_length", "request throughput": "request_throughput",
    "output token throughput": "output_token_throughput", "request count": "request_count",
    "error request count": "error_request_count", "benchmark duration": "benchmark_duration",
    "total output tokens": "total_output_tokens",
}


def _metrics(doc: dict) -> dict:
    """The metric objects: at the top level, or under ``records`` (some export versions)."""
    return doc["records"] if isinstance(doc.get("records"), dict) and "time_to_first_token" in doc["records"] \
        else doc


def detect(doc: Any) -> bool:
    if not isinstance(doc, dict):
        return False
    ttft = _metrics(doc).get("time_to_first_token")
    return isinstance(ttft, dict) and "unit" in ttft


def _find(cfg: Any, key: str) -> Any:
    """The first scalar ``key`` anywhere in the run configuration (GenAI-Perf versions nest it
    differently: ``concurrency``, ``perf_analyzer.stimulus.concurrency``, ``loadgen.concurrency``).
    ``analyze`` is skipped: GenAI-Perf's config always carries ``analyze.sweep_parameters.concurrency``
    (the default sweep range ``{"min": 1, "max": 1024}``), which is not the run's load; a value
    GenAI-Perf wrote for an unset field (``""``) and dicts/lists are not values."""
    if isinstance(cfg, dict):
        v = cfg.get(key)
        if v is not None and v != "" and not isinstance(v, (dict, list)):
            return v
        for k, v in cfg.items():
            if k == "analyze":
                continue
            found = _find(v, key)
            if found is not None:
                return found
    return None


def detect_csv(text: str) -> bool:
    head = text.lstrip("\ufeff").splitlines()[:1]
    return bool(head) and head[0].replace('"', "").lower().startswith("metric,") and \
        "time to first token" in text.lower()


def _ms(metric: dict | None, stat: str, where: str) -> float | None:
    if not isinstance(metric, dict):
        return None
    try:
        v = to_ms(metric.get(stat), str(metric.get("unit", "ms")))
    except ValueError as err:
        raise LoadTestError(where, f"{err} in a time metric") from None
    return v if v is not None and v > 0 else None


def _per_s(metric: dict | None, where: str) -> float | None:
    """A rate's ``avg`` in per-second (``requests/sec``, ``tokens/sec``; ``per sec``)."""
    if not isinstance(metric, dict):
        return None
    unit = str(metric.get("unit", "")).lower()
    v = positive(metric.get("avg"))
    if v is None:
        return None
    if unit.endswith("/ms") or unit.endswith("per ms"):
        return v * 1e3
    if unit and not re.search(r"(/|per )s(ec)?(ond)?$", unit):
        raise LoadTestError(where, f"rate unit {metric.get('unit')!r} is not per second")
    return v


def _run(doc: dict, tool: str, file: str, run: str = "", keyed: bool = True, prefix: str = "") -> Run:
    """``keyed``: ``doc`` is the file's JSON (at key path ``prefix``), so a problem names its key
    path; a CSV's rows are read into the same layout but have no keys: the place is the file."""
    r = Run(tool=tool, file=file, run=run)
    where = (lambda key: r.at(prefix + key)) if keyed else (lambda _key: r.place)
    ttft = doc.get("time_to_first_token")
    for key, stat in (("avg", "mean"), ("p50", "median"), ("p90", "p90"), ("p99", "p99")):
        v = _ms(ttft, key, where("time_to_first_token.unit"))
        if v is not None:
            r.ttft[stat] = v
    r.tpot_ms = r.itl_ms = _ms(doc.get("inter_token_latency"), "avg", where("inter_token_latency.unit"))
    r.isl = positive(dig(doc, "input_sequence_length", "avg"))
    r.osl = number(dig(doc, "output_sequence_length", "avg"))
    r.request_throughput = _per_s(doc.get("request_throughput"), where("request_throughput.unit"))
    r.output_throughput = _per_s(doc.get("output_token_throughput"), where("output_token_throughput.unit"))
    r.num_requests = whole(dig(doc, "request_count", "avg"))
    r.failed = whole(dig(doc, "error_request_count", "avg"))
    dur = doc.get("benchmark_duration")
    if isinstance(dur, dict):
        ms = to_ms(dur.get("avg"), str(dur.get("unit", "sec")))
        r.duration_s = ms / 1e3 if ms else None
    if r.duration_s is None and r.num_requests and r.request_throughput:
        r.duration_s = r.num_requests / r.request_throughput
    if r.num_requests == 0:
        raise LoadTestError(where("request_count.avg"), "is 0: no request completed")
    return r


def parse(doc: dict, file: str, run: str = "") -> list[Run]:
    cfg = doc.get("input_config") if isinstance(doc.get("input_config"), dict) else {}
    # AIPerf's input_config is its UserConfig (endpoint.model_names, loadgen.*); GenAI-Perf's newer
    # config (ConfigCommand.to_json_dict) also has an ``endpoint`` section, but its model_names are at
    # the top level beside ``perf_analyzer``
    tool = TOOL_AIPERF if ("loadgen" in cfg or isinstance(dig(cfg, "endpoint", "model_names"), list)) \
        and "perf_analyzer" not in cfg else TOOL_GENAI
    m = _metrics(doc)
    r = _run(m, tool, file, run, prefix="" if m is doc else "records.")
    names = first(dig(cfg, "endpoint", "model_names"), cfg.get("model"), cfg.get("model_names"),
                  _find(cfg, "model_names"))
    if isinstance(names, list):
        names = names[0] if len(names) == 1 else None
    r.model = str(names) if names else None
    stim = dig(cfg, "perf_analyzer", "stimulus")  # GenAI-Perf config: {"concurrency": 4} or {"request_rate": 2.0}
    stim = stim if isinstance(stim, dict) else {}
    conc = whole(first(dig(cfg, "loadgen", "concurrency"), stim.get("concurrency"), stim.get("session_concurrency"),
                       _find(cfg, "concurrency")))
    rate = number(first(dig(cfg, "loadgen", "request_rate"), stim.get("request_rate"),
                        stim.get("session_request_rate"), _find(cfg, "request_rate")))
    r.request_rate = rate if rate and rate > 0 else None
    r.concurrency = conc if conc and conc > 0 else None
    if r.concurrency is None and r.request_rate is None:
        r.notes.append("the file gives neither concurrency nor request rate: type the load shape")
    return [r]


def parse_csv(text: str, file: str) -> list[Run]:
    """The two-section CSV: per metric either the stat columns or a single ``Value``."""
    doc: dict[str, dict] = {}
    header: list[str] = []
    rows = csv.reader(io.StringIO(text.lstrip("\ufeff")))
    for row in rows:
        if not row or not any(c.strip() for c in row):
            continue
        if row[0].strip().lower() == "metric":
            header = [h.strip().lower() for h in row]
            continue
        m = re.match(r"^(.*?)\s*(?:\(([^)]*)\))?\s*$", row[0].strip())
        name, unit = m.group(1).strip().lower(), (m.group(2) or "").strip()
        tag = _CSV_NAMES.get(name)
        if tag is None or not header:
            continue
        vals = {}
        for h, cell in zip(header[1:], row[1:]):
            # GenAI-Perf's fetch_stat writes "N/A" for a statistic it does not have
            # (genai-perf/genai_perf/export_data/exporter_utils.py); Python's float formatting "nan"
            missing = cell.strip().lower() in ("", "n/a", "na", "nan", "none")
            v = None if missing else parse_number_text(cell)
            if not missing and v is None:
                raise LoadTestError(Place.file_line(file, rows.line_num), f"{row[0]!r} {h} {cell!r} is not a number")
            vals["avg" if h == "value" else h] = v
        vals["unit"] = unit  # "ms", "tokens", "requests/sec", "per sec", ""; a time without a unit is refused
        doc[tag] = vals
    if "time_to_first_token" not in doc:
        raise LoadTestError(file, "has no 'Time to First Token' row (a truncated export?)")
    tool = TOOL_GENAI if "Time To First Token" in text else TOOL_AIPERF
    r = _run(doc, tool, file, keyed=False)
    r.notes.append("the CSV export carries no model or load shape: they come from the options")
    return [r]
