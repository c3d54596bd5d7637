"""Named constants of the model.

Each constant lives once here, with the name it carries as a defined name in the output
workbook (sheet ``Constants``), its value, unit and meaning. Python code uses
``C.<attr>`` for the value; the Excel formula builders use ``N.<attr>`` for the defined
name, so no number is ever typed into a formula.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.core.refs import defined_name


@dataclass(frozen=True)
class Constant:
    attr: str  # Python attribute name
    name: str  # Excel defined name
    value: float
    unit: str
    description: str
    editable: bool = False  # an assumption the user may change (styled as input)


CONSTANTS: tuple[Constant, ...] = (
    Constant("BYTES_PER_GIB", defined_name("Constants", "bytes_per_gib"), 2.0**30, "B/GiB", "bytes in one GiB (2^30)"),
    Constant("BYTES_PER_GB", defined_name("Constants", "bytes_per_gb"), 1e9, "B/GB", "bytes in one GB (10^9), the unit of PCIe bandwidth"),
    Constant("MS_PER_S", defined_name("Constants", "ms_per_s"), 1000.0, "ms/s", "milliseconds per second"),
    Constant("MS_PER_MIN", defined_name("Constants", "ms_per_min"), 60000.0, "ms/min", "milliseconds per minute"),
    Constant("MIN_PER_HOUR", defined_name("Constants", "min_per_hour"), 60.0, "min/h", "minutes per hour"),
    Constant("TOKENS_PER_MTOK", defined_name("Constants", "tokens_per_mtok"), 1e6, "tokens", "tokens in one million tokens"),
    Constant("PARAMS_PER_B", defined_name("Constants", "params_per_b"), 1e9, "params", "parameters in one billion (unit of params_b)"),
    Constant("KV_TENSORS", defined_name("Constants", "kv_tensors"), 2.0, "count", "tensors cached per layer for GQA/MHA: one K and one V"),
    Constant("SWING_TOLERANCE", defined_name("Constants", "swing_tolerance"), 1e-3, "tokens/min",
             "tornado swings closer than this tie (ranked by driver order), so swings that are mathematically "
             "equal rank alike in every spreadsheet engine, whatever their rounding noise"),
    Constant("PCIE_GEN4_GBPS", defined_name("Constants", "pcie_gen4_gbps"), 25.0, "GB/s",
             "effective host-to-device bandwidth of PCIe Gen4 x16, used when pcie_gbps is blank", True),
    Constant("PCIE_GEN5_GBPS", defined_name("Constants", "pcie_gen5_gbps"), 50.0, "GB/s",
             "effective host-to-device bandwidth of PCIe Gen5 x16, used when pcie_gbps is blank", True),
    Constant("MONTHS_PER_YEAR", defined_name("Constants", "months_per_year"), 12.0, "month/year", "months in a year (fleet cost per year)"),
    Constant("MONTHS_PER_QUARTER", defined_name("Constants", "months_per_quarter"), 3.0, "month/quarter",
             "months in a quarter (fleet cost per quarter)"),
    # latency at load (planner.equations.queueing, issue 16)
    Constant("HALF", defined_name("Constants", "half"), 0.5, "ratio", "one half: the mean residual of a step in progress, the mean position "
             "of a token in the output, the mean position of a request in a burst"),
    Constant("LOG_LIMIT", defined_name("Constants", "log_limit"), 30.0, "ratio", "above this x, ln(1 + e^x) is x to double precision "
             "(keeps EXP from overflowing in the Lambert-W step of the TTFT-SLO inverse)"),
    Constant("Q_P50", defined_name("Constants", "q_p50"), 0.5, "fraction", "quantile of slo_percentile p50 (median)"),
    Constant("Q_P90", defined_name("Constants", "q_p90"), 0.9, "fraction", "quantile of slo_percentile p90"),
    Constant("Q_P95", defined_name("Constants", "q_p95"), 0.95, "fraction", "quantile of slo_percentile p95"),
    Constant("Q_P99", defined_name("Constants", "q_p99"), 0.99, "fraction", "quantile of slo_percentile p99"),
    # a blank Workloads batch (planner.equations.queueing.default_batch): vLLM's max_num_seqs default,
    # 256 (1,024 only on >= 70 GiB GPUs other than A100); vllm-project/vllm tests/engine/test_arg_utils.py
    # test_defaults_with_usage_context, commit 80445b45067e96b21483ac0f12efe67fa6899270
    Constant("MAX_NUM_SEQS", defined_name("Constants", "max_num_seqs"), 256.0, "requests", "requests a serving "
             "instance runs at once at most when Workloads batch is blank (vLLM's default max_num_seqs)"),
)


class _Values:
    """Numeric values: ``C.BYTES_PER_GIB`` is 1073741824.0."""


class _Names:
    """Excel defined names: ``N.BYTES_PER_GIB`` is ``'c_bytes_per_gib'``."""


C = _Values()
N = _Names()
for _c in CONSTANTS:
    setattr(C, _c.attr, _c.value)
    setattr(N, _c.attr, _c.name)

PCIE_GEN_GBPS = {4: C.PCIE_GEN4_GBPS, 5: C.PCIE_GEN5_GBPS}
