"""The normalised load-test record and the helpers every format module shares.

One :class:`Run` per measured run (a ``vllm bench serve`` invocation, one benchmark of a
guidellm sweep, ...). Every time is converted to milliseconds and every rate to per-second
here, once (:func:`to_ms`); a statistic the file does not carry stays ``None`` (never 0).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from planner.core.places import Place, as_place

# time units as the writers spell them -> milliseconds per unit
#   vLLM / SGLang / guidellm: ms in the key names; LLMPerf, inference-perf: seconds;
#   AIPerf: MetricTimeUnit tags "ns", "us", "ms", "sec" (ai-dynamo/aiperf
#   aiperf/common/enums/metric_enums.py); GenAI-Perf: "ms" after its scaling, "ns" before it.
_MS_PER = {"ns": 1e-6, "nanoseconds": 1e-6, "us": 1e-3, "µs": 1e-3, "microseconds": 1e-3,
           "ms": 1.0, "milliseconds": 1.0, "s": 1e3, "sec": 1e3, "secs": 1e3, "second": 1e3, "seconds": 1e3}


class LoadTestError(Exception):
    """A located problem with one result file (``place: message``): ``place`` a
    :class:`~planner.core.places.Place` (the whole file ``vllm.json``, a line ``b.jsonl line 3``, a
    key path ``vllm.json: completed``; a plain text is a whole file named by it)."""

    def __init__(self, place: Place | str, message: str):
        self.place = as_place(place)
        self.message = message
        super().__init__(f"{self.place}: {message}")


class RunLabel(str):
    """Which run of a file, as the Measurements ``source`` cell names it (``line 3``, ``item 2``,
    ``benchmark 2 of 5 (poisson)``), keeping where the run is: ``line`` (1-based, a JSON line)
    or ``key`` (the key path of a JSON list's item, ``[1]``). See :func:`run_place`."""

    line: int | None
    key: str | None

    def __new__(cls, text: str, line: int | None = None, key: str | None = None) -> "RunLabel":
        self = super().__new__(cls, text)
        self.line, self.key = line, key
        return self


def run_place(file: str, run: str, key: str | None = None) -> Place:
    """Where run ``run`` of ``file`` is (``key``: a key path inside the run): a line of a JSON-lines
    file, a key path of a JSON file, a labelled part (a benchmark of a sweep), or the whole file.

    >>> run_place("b.jsonl", RunLabel("line 3", line=3), "completed"), run_place("v.json", "", "completed")
    ('b.jsonl line 3: completed', 'v.json: completed')
    >>> run_place("r.json", RunLabel("item 2", key="[1]")), run_place("g.json", "benchmark 2 of 5")
    ('r.json: [1]', 'g.json benchmark 2 of 5')
    """
    line, base = getattr(run, "line", None), getattr(run, "key", None)
    path = ".".join(k for k in (base, key) if k) or None
    if line is not None:
        return Place.file_key(file, path, line) if path else Place.file_line(file, line)
    if run and base is None:
        return Place(file, label=str(run), key=key)
    return Place.file_key(file, path) if path else Place.whole(file)


@dataclass
class Run:
    """One measured run, normalised: times in ms, rates per second, lengths in tokens.

    ``ttft`` maps a statistic name (``mean``, ``median``, ``p90``, ``p99``) to its value in ms.
    ``failed`` is the number of failed requests the file reports (None: it does not say).
    """

    tool: str                      # "vllm bench serve", "sglang bench_serving", ...
    file: str                      # the file name as given
    run: str                       # which run of the file: "line 3", "benchmark 2 of 5", "" for the only one
    model: str | None = None
    gpu: str | None = None         # from the file's metadata, when it has one
    tp: int | None = None
    concurrency: int | None = None
    request_rate: float | None = None  # None: unlimited or a closed loop
    num_requests: int | None = None    # completed
    failed: int | None = None
    failure_text: str = ""         # failures the file reports without a count
    duration_s: float | None = None
    isl: float | None = None
    osl: float | None = None
    ttft: dict[str, float] = field(default_factory=dict)
    tpot_ms: float | None = None
    itl_ms: float | None = None
    request_throughput: float | None = None
    output_throughput: float | None = None
    total_throughput: float | None = None
    hit: float | None = None
    hit_source: str = ""
    kv_load_gbps: float | None = None
    scheduler: str | None = None      # the engine's scheduler, only when the file names the server
    scheduler_source: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def place(self) -> Place:
        """Where the run is in its file (:func:`run_place`): ``b.jsonl line 3``, ``vllm.json``."""
        return run_place(self.file, self.run)

    def at(self, key: str) -> Place:
        """Where key path ``key`` of this run is: ``vllm.json: completed``, ``b.jsonl line 3: completed``."""
        return run_place(self.file, self.run, key)

    @property
    def source(self) -> str:
        """The Measurements ``source`` cell: file, run and tool."""
        run = f", {self.run}" if self.run else ""
        return f"{self.file}{run} ({self.tool})"

    def fingerprint(self) -> tuple:
        """What makes two records the same run (the same file given twice, a copy)."""
        r = lambda v: None if v is None else round(float(v), 6)
        return (self.tool, r(self.duration_s), self.num_requests, r(self.ttft.get("mean")),
                r(self.ttft.get("median")), r(self.output_throughput), r(self.isl))


def to_ms(value: Any, unit: str) -> float | None:
    """A time statistic converted to milliseconds.

    Parameters
    ----------
    value : number or None
        The statistic in ``unit``.
    unit : str
        The writer's unit tag (``ns``, ``us``, ``ms``, ``s``/``sec``).

    Returns
    -------
    float or None
        The value in [ms]; None when ``value`` is missing or not finite.
    """
    v = number(value)
    if v is None:
        return None
    try:
        return v * _MS_PER[unit.strip().lower()]
    except KeyError:
        raise ValueError(f"unknown time unit {unit!r}") from None


def number(value: Any) -> float | None:
    """A finite float, or None (missing, null, NaN, infinite, or not a number)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str):
        value = parse_number_text(value)
        if value is None:
            return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


_GROUPED = re.compile(r"^[+-]?\d{1,3}(,\d{3})+(\.\d+)?$")
_PLAIN = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


def parse_number_text(text: str) -> float | None:
    """A number as the load testers print it: ``1234.5``, ``1,234.56`` (GenAI-Perf's CSV groups
    thousands with commas and always uses ``.`` as the decimal mark), ``N/A`` or blank -> None."""
    t = text.strip().replace("\u202f", "").replace("\xa0", "")
    if _GROUPED.match(t):
        t = t.replace(",", "")
    if not _PLAIN.match(t):
        low = t.lower()
        if low in ("inf", "+inf", "infinity", "+infinity"):
            return math.inf
        return None
    return float(t)


def positive(value: Any) -> float | None:
    """A statistic that must be positive to mean anything: 0 and negatives read as 'not measured'
    (vLLM writes 0 for a TTFT it could not measure: ``np.mean(ttfts or 0)``)."""
    v = number(value)
    return v if v is not None and v > 0 else None


def whole(value: Any) -> int | None:
    v = number(value)
    return int(round(v)) if v is not None else None


def load_json(path: Path, text: str) -> Any:
    """Parse ``text`` as JSON (bare ``Infinity``/``NaN`` accepted, as Python's json.dumps writes
    them); a truncated or broken file raises a located :class:`LoadTestError`."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise LoadTestError(path.name, json_problem(err, text)) from None


def json_problem(err: json.JSONDecodeError, text: str) -> str:
    where = f"line {err.lineno}, column {err.colno}"
    if err.pos >= len(text.rstrip()) - 1 or "Unterminated" in err.msg:
        return f"the JSON ends before it is complete at {where} (a truncated file: was the run interrupted, " \
               f"or the copy cut short?)"
    return f"not valid JSON at {where}: {err.msg}"


def dig(doc: Any, *path: str) -> Any:
    """``doc[path[0]][path[1]]...``, None where a level is missing."""
    for key in path:
        if not isinstance(doc, dict) or key not in doc:
            return None
        doc = doc[key]
    return doc


def first(*values: Any) -> Any:
    """The first value that is not None."""
    for v in values:
        if v is not None:
            return v
    return None
