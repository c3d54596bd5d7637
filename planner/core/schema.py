"""The one schema table of every input column.

It drives reading and validation (:mod:`planner.inputs.reader`), the blank template and the
units/notes of the output's input sheets (:mod:`planner.workbook.writer`), the named default
cells of the output workbook, and the README's column reference
(``python -m planner.core.schema`` prints it as Markdown).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from planner.core.refs import defined_name

# kinds of value
TEXT = "text"        # free text (names)
INT = "int"          # whole number
NUMBER = "number"    # real number
FRACTION = "fraction"  # real number in [0, 1]; percent cells and "85%" text accepted
CHOICE = "choice"    # one of `choices` (case-insensitive text, or numbers)
NUMBERS = "numbers"  # a list of positive numbers in one cell: "200; 900" (Settings only)
ANY = "any"          # a number or a text, kept as typed (Scenarios.value)

# number formats used for inputs and outputs (also by the writer)
# Measurements / Workloads scheduler (planner.equations.decode_first): how a TTFT at concurrency > 1 is read
SCHEDULERS = ("prefill_first", "decode_first")

FMT_INT = "#,##0"
FMT_NUM = "#,##0.00"
FMT_PCT = "0.0%"
FMT_ELEM_BYTES = "#,##0.###"
FMT_COST4 = "#,##0.0000"  # bytes per element: fractional (FP4 is 0.5)


@dataclass(frozen=True)
class Column:
    sheet: str
    name: str
    unit: str
    kind: str
    description: str
    required: bool | str = False  # True, False, or a condition label ("gqa", "mla", "pcie", "catalog")
    default: Any = None           # value used when blank; "isl+osl" for max_seq_len
    minimum: float | None = None
    maximum: float | None = None
    min_open: bool = False        # minimum excluded (value must be > minimum)
    choices: tuple = ()
    key: bool = False             # unique name of its sheet
    ref: str | None = None        # sheet whose key this column names
    fmt: str | None = None        # number format in the workbook
    calc: bool = True             # read by the Resolved sheet (False: descriptive, catalog and estimate only)
    label: str = ""               # readable name for people (blank: the description)

    @property
    def header(self) -> str:
        """Header as written to workbooks: the name with its unit in brackets."""
        return f"{self.name} [{self.unit}]" if self.unit else self.name

    @property
    def title(self) -> str:
        """Readable label (Explorer, Checks, memo): ``label``, else the description, capitalised."""
        text = self.label or self.description or self.name
        return text[:1].upper() + text[1:]

    @property
    def default_name(self) -> str:
        """Excel defined name holding the default (``d_<name>``)."""
        return defined_name("Defaults", self.name)

    def range_text(self) -> str:
        if self.kind == CHOICE:
            return " / ".join(str(c) for c in self.choices)
        if self.minimum is None and self.maximum is None:
            return ""
        lo = "(" if self.min_open else "["
        lo_v = _fmt_bound(self.minimum) if self.minimum is not None else "-inf"
        hi_v = _fmt_bound(self.maximum) if self.maximum is not None else "inf"
        hi = "]" if self.maximum is not None else ")"
        return f"{lo}{lo_v}, {hi_v}{hi}"


def _fmt_bound(v: float) -> str:
    if abs(v) >= 1e6:
        return f"{v:g}"  # 1e+09
    return str(int(v)) if float(v).is_integer() else str(v)


M, G, W = "Models", "GPUs", "Workloads"
MEAS, DEM, SCN = "Measurements", "Demand", "Scenarios"  # optional input sheets
TIERS = "Tiers"  # optional: the KV-cache tiers (planner.inputs.kv_tiers)

COLUMNS: tuple[Column, ...] = (
    # ---------------------------------------------------------------- Models
    Column(M, "model", "", TEXT, "unique model name", True, key=True),
    Column(M, "layers", "count", INT, "transformer layers L", "catalog", minimum=1, maximum=1e5, fmt=FMT_INT),
    Column(M, "kv_heads", "count", INT, "KV heads (= attention heads for MHA, 1 for MQA)", "gqa",
           minimum=1, maximum=1e5, fmt=FMT_INT),
    Column(M, "head_dim", "count", INT, "head dimension d_head", "gqa", minimum=1, maximum=1e5, fmt=FMT_INT),
    Column(M, "kv_bytes", "B", NUMBER, "bytes per cached KV element: 2 BF16/FP16, 1 FP8, 0.5 4-bit "
           "(blank on a catalog model: 2)", "catalog", minimum=0.125, maximum=8, fmt=FMT_ELEM_BYTES),
    Column(M, "attention", "", CHOICE, "gqa (GQA/MHA/MQA) or mla (DeepSeek-style latent)",
           default="gqa", choices=("gqa", "mla"), label="Attention kind: gqa (GQA/MHA/MQA) or mla (latent)"),
    Column(M, "mla_kv_dim", "count", INT, "MLA: latent + rope width per token per layer "
           "(kv_lora_rank + qk_rope_head_dim)", "mla", minimum=1, maximum=1e6, fmt=FMT_INT),
    Column(M, "params_b", "1e9", NUMBER, "total parameters in billions (blank: weights taken as 0)",
           minimum=0, min_open=True, maximum=1e6, fmt=FMT_NUM),
    Column(M, "weight_bytes", "B", NUMBER, "bytes per weight: 2 BF16, 1 FP8, 0.5 4-bit", default=2,
           minimum=0.125, maximum=8, fmt=FMT_ELEM_BYTES),
    Column(M, "catalog", "", TEXT, "model catalog entry to take blank dimensions from, when the row's own "
           "name is a team label (blank: the model name itself is looked up)", calc=False),
    Column(M, "heads", "count", INT, "query (attention) heads", minimum=1, maximum=1e5, fmt=FMT_INT, calc=False),
    Column(M, "hidden_size", "count", INT, "hidden size (model width)", minimum=1, maximum=1e7, fmt=FMT_INT, calc=False),
    Column(M, "intermediate_size", "count", INT, "FFN intermediate size (per expert for MoE)", minimum=1,
           maximum=1e7, fmt=FMT_INT, calc=False),
    Column(M, "active_params_b", "1e9", NUMBER, "parameters active per token in billions (MoE; blank: "
           "params_b)", minimum=0, min_open=True, maximum=1e6, fmt=FMT_NUM),
    Column(M, "experts", "count", INT, "routed experts (MoE; blank: dense)", minimum=1, maximum=1e5,
           fmt=FMT_INT, calc=False),
    Column(M, "experts_per_token", "count", INT, "experts active per token (MoE)", minimum=1, maximum=1e5,
           fmt=FMT_INT, calc=False),
    # ---------------------------------------------------------------- GPUs
    Column(G, "gpu", "", TEXT, "unique GPU type name", True, key=True),
    Column(G, "hbm_gib", "GiB", NUMBER, "device memory", "catalog", minimum=0, min_open=True, maximum=1e6,
           fmt=FMT_NUM),
    Column(G, "pcie_gbps", "GB/s", NUMBER, "effective host-to-device bandwidth per GPU "
           "(blank: from pcie_gen)", "pcie", minimum=0.001, maximum=1e6, fmt=FMT_NUM),
    Column(G, "pcie_gen", "", CHOICE, "PCIe generation, 4 (25 GB/s) or 5 (50 GB/s), used when "
           "pcie_gbps is blank", "pcie", choices=(4, 5), fmt=FMT_INT),
    Column(G, "hourly_cost", "currency/h", NUMBER, "price of one GPU-hour (blank: no cost columns)",
           minimum=0, maximum=1e9, fmt=FMT_NUM),
    Column(G, "catalog", "", TEXT, "GPU catalog entry to take blank cells from, when the row's own name is a "
           "team label (blank: the GPU name itself is looked up)", calc=False),
    Column(G, "hbm_tbps", "TB/s", NUMBER, "device memory (HBM) bandwidth", minimum=0, min_open=True,
           maximum=1e4, fmt=FMT_NUM),
    Column(G, "bf16_tflops", "TFLOPS", NUMBER, "dense BF16 peak (not the sparsity figure)", minimum=0,
           min_open=True, maximum=1e6, fmt=FMT_NUM, calc=False),
    Column(G, "fp8_tflops", "TFLOPS", NUMBER, "dense FP8 peak (not the sparsity figure)", minimum=0,
           min_open=True, maximum=1e6, fmt=FMT_NUM, calc=False),
    # ---------------------------------------------------------------- Workloads
    Column(W, "workload", "", TEXT, "unique workload name", True, key=True),
    Column(W, "model", "", TEXT, "a model of the Models sheet", True, ref=M),
    Column(W, "gpu", "", TEXT, "a GPU of the GPUs sheet", True, ref=G),
    Column(W, "tp", "count", INT, "tensor-parallel size: GPUs per serving instance", True,
           minimum=1, maximum=1e5, fmt=FMT_INT),
    Column(W, "isl", "tokens", INT, "input length per request", True, minimum=1, maximum=1e9,
           fmt=FMT_INT),
    Column(W, "osl", "tokens", INT, "output length per request", True, minimum=0, maximum=1e9,
           fmt=FMT_INT),
    Column(W, "batch", "count", INT, "concurrent requests per instance: the batch of the peak KV and, when "
           "t_decode_ms is estimated, the decode batch whose weight reads are shared (blank: concurrency, else "
           "the full-length requests whose KV fits in HBM, max_batch_fit, at most 256, vLLM's default "
           "max_num_seqs; said in a note)", minimum=1,
           maximum=1e9, fmt=FMT_INT),
    Column(W, "max_seq_len", "tokens", INT, "maximum sequence length N_max (blank: isl + osl)",
           default="isl+osl", minimum=1, maximum=1e9, fmt=FMT_INT),
    Column(W, "hit_measured", "fraction", FRACTION, "hit ratio during the load test", default=0,
           minimum=0, maximum=1, fmt=FMT_PCT),
    Column(W, "hit_target", "fraction", FRACTION, "planning hit ratio", True, minimum=0, maximum=1,
           fmt=FMT_PCT),
    Column(W, "t_attn0_ms", "ms", NUMBER, "attention prefill time at 0 hit (blank: calibrated from Measurements, "
           "else estimated from the catalog dimensions)", minimum=0, maximum=1e9,
           fmt=FMT_NUM),
    Column(W, "t_ffn0_ms", "ms", NUMBER, "FFN/GEMM prefill time at 0 hit (blank: calibrated, else estimated)",
           minimum=0, maximum=1e9,
           fmt=FMT_NUM),
    Column(W, "t_other0_ms", "ms", NUMBER, "other variable prefill time at 0 hit", default=0,
           minimum=0, maximum=1e9, fmt=FMT_NUM),
    Column(W, "other_scaling", "", CHOICE, "how t_other0_ms scales: const (1), linear (1-h), "
           "quadratic (1-h^2)", default="const", choices=("const", "linear", "quadratic")),
    Column(W, "t_fixed_ms", "ms", NUMBER, "non-scaling prefill overhead (dispatch, communication)",
           default=0, minimum=0, maximum=1e9, fmt=FMT_NUM),
    Column(W, "t_decode_ms", "ms", NUMBER, "decode chip time per request (unaffected by hits; blank: "
           "calibrated from Measurements tpot_ms, else estimated by the roofline; 0 leaves decode out)",
           default=0, minimum=0, maximum=1e9, fmt=FMT_NUM),
    Column(W, "alpha", "fraction", FRACTION, "overlap of KV load and compute: 0 none, 1 full",
           default=0, minimum=0, maximum=1, fmt=FMT_PCT),
    Column(W, "tpm_measured", "tokens/min", NUMBER, "delivered TPM of one instance measured at "
           "hit_measured (blank: model value)", minimum=0, min_open=True, maximum=1e15, fmt=FMT_INT),
    Column(W, "demand_tpm", "tokens/min", NUMBER, "delivered tokens/min the fleet must serve "
           "(blank: no GPU count)", minimum=0, maximum=1e15, fmt=FMT_INT),
    Column(W, "kv_gbps", "GB/s", NUMBER, "effective KV load bandwidth of this workload (blank: the "
           "calibrated B_eff of its deployment, else the GPU's pcie_gbps)", minimum=0.001, maximum=1e6,
           fmt=FMT_NUM),
    Column(W, "target_utilization", "fraction", FRACTION, "busy fraction instances are sized for (blank: "
           "Settings target_utilization)", minimum=0, min_open=True, maximum=1, fmt=FMT_PCT),
    Column(W, "concurrency", "count", INT, "requests in flight per instance, fixed (a load tester's or a server's "
           "concurrency limit: a burst of this many per instance); blank: the load demand_tpm implies, open loop",
           minimum=1, maximum=65536, fmt=FMT_INT),
    Column(W, "ttft_slo_ms", "ms", NUMBER, "time-to-first-token target at the planned load, on the statistic "
           "slo_percentile names (blank: none)", minimum=0, min_open=True, maximum=1e9, fmt=FMT_NUM),
    Column(W, "tpot_slo_ms", "ms", NUMBER, "time-per-output-token target at the planned load, on the mean "
           "(blank: none)", minimum=0, min_open=True, maximum=1e9, fmt=FMT_NUM),
    Column(W, "slo_percentile", "", CHOICE, "statistic the TTFT target applies to: mean, p50, p90, p95 or p99",
           default="p90", choices=("mean", "p50", "p90", "p95", "p99")),
    Column(W, "trace", "", TEXT, "prefix-reuse trace of this workload's traffic (Mooncake or Qwen Bailian "
           "JSONL, plain or .gz), a path relative to the input workbook's folder; with it hit_target may be "
           "blank and comes from the trace and the Tiers", calc=False),
    Column(W, "trace_block_size", "tokens", INT, "tokens per hash block of the trace (blank: 512 for "
           "Mooncake, 16 for Bailian)", minimum=1, maximum=1e6, fmt=FMT_INT, calc=False),
    Column(W, "hit_baseline", "fraction", FRACTION, "planning baseline: the hit ratio the fleet runs at today, "
           "against which the Summary and Fleet_By_Period count the savings of hit_target (blank: "
           "hit_measured, the load test's, said on the Summary)", minimum=0, maximum=1, fmt=FMT_PCT),
    Column(W, "demand_growth", "fraction/period", FRACTION, "growth of demand_tpm per planning period, "
           "compounded over Settings periods (blank: Settings demand_growth; a plain number above 1 is refused "
           "as a probable percentage: type 10% or 0.1, and 150% for +150%)", minimum=-1, maximum=10,
           fmt=FMT_PCT),
    Column(W, "t_decode_batch", "count", INT, "requests in decode at which t_decode_ms holds (blank: batch; "
           "calibrated from a load test: the test's concurrency): the decode step is t_decode_ms x t_decode_batch / "
           "osl, at least the HBM roofline of that batch", minimum=1, maximum=1e9, fmt=FMT_INT),
    # ---------------------------------------------------------------- Measurements (optional)
    Column(W, "pass_fixed_ms", "ms", NUMBER, "part of t_fixed_ms paid once per forward pass, shared by the "
           "requests a burst packs into one pass (blank: t_fixed_ms; calibrated from load tests at concurrency "
           "> 1 only: 0, the fixed cost read per request, as those tests cannot tell the two apart)",
           minimum=0, maximum=1e9, fmt=FMT_NUM),
    Column(W, "max_num_batched_tokens", "tokens", INT, "new prompt tokens the server packs into one forward pass "
           "(vLLM --max-num-batched-tokens; a burst at Workloads concurrency is packed into passes of this many; "
           "blank: Settings max_num_batched_tokens)", minimum=1, maximum=1e9, fmt=FMT_INT),
    Column(W, "scheduler", "", CHOICE, "the serving engine's scheduler, for the TTFT at a fixed concurrency: "
           "prefill_first (SGLang: a burst of concurrency requests, prefills first) or decode_first (vLLM V1: the "
           "steady closed loop of planner.equations.decode_first); blank: prefill_first. A per-workload column, "
           "as each workload names its own deployment and engine", choices=SCHEDULERS),
    Column(MEAS, "model", "", TEXT, "a model of the Models sheet (or the model catalog)", True, ref=M),
    Column(MEAS, "gpu", "", TEXT, "a GPU of the GPUs sheet (or the GPU catalog)", True, ref=G),
    Column(MEAS, "tp", "count", INT, "tensor-parallel size of the measured deployment", True,
           minimum=1, maximum=1e5, fmt=FMT_INT),
    Column(MEAS, "isl", "tokens", NUMBER, "mean input length of the load test", True, minimum=1, maximum=1e9,
           fmt=FMT_NUM),
    Column(MEAS, "hit", "fraction", FRACTION, "prefix-cache hit ratio during the test", True,
           minimum=0, maximum=1, fmt=FMT_PCT),
    Column(MEAS, "ttft_ms", "ms", NUMBER, "measured time to first token: the statistic named in ttft_stat", True,
           minimum=0, min_open=True, maximum=1e9, fmt=FMT_NUM),
    Column(MEAS, "alpha", "fraction", FRACTION, "load/compute overlap of the serving stack", default=0,
           minimum=0, maximum=1, fmt=FMT_PCT),
    Column(MEAS, "osl", "tokens", NUMBER, "mean output length of the test", minimum=0, maximum=1e9, fmt=FMT_NUM),
    Column(MEAS, "tpot_ms", "ms", NUMBER, "measured mean time per output token", minimum=0, min_open=True,
           maximum=1e9, fmt=FMT_NUM),
    Column(MEAS, "concurrency", "count", INT, "requests in flight during the test: a closed loop of this many "
           "clients (the old header batch is read as concurrency)", default=1, minimum=1, maximum=65536, fmt=FMT_INT),
    Column(MEAS, "ttft_stat", "", CHOICE, "which statistic ttft_ms is: mean, median, p90 or p99", default="mean",
           choices=("mean", "median", "p90", "p99")),
    Column(MEAS, "request_rate", "requests/s", NUMBER, "open-loop arrival rate of the test (blank: a closed loop "
           "at concurrency)", minimum=0, min_open=True, maximum=1e9, fmt=FMT_NUM),
    Column(MEAS, "num_requests", "count", INT, "requests completed in the test", minimum=1, maximum=1e12,
           fmt=FMT_INT),
    Column(MEAS, "duration_s", "s", NUMBER, "wall-clock duration of the test", minimum=0, min_open=True,
           maximum=1e9, fmt=FMT_NUM),
    Column(MEAS, "ttft_p50_ms", "ms", NUMBER, "median time to first token", minimum=0, min_open=True,
           maximum=1e9, fmt=FMT_NUM),
    Column(MEAS, "ttft_p90_ms", "ms", NUMBER, "90th percentile time to first token", minimum=0, min_open=True,
           maximum=1e9, fmt=FMT_NUM),
    Column(MEAS, "ttft_p99_ms", "ms", NUMBER, "99th percentile time to first token", minimum=0, min_open=True,
           maximum=1e9, fmt=FMT_NUM),
    Column(MEAS, "itl_ms", "ms", NUMBER, "measured mean inter-token latency", minimum=0, min_open=True,
           maximum=1e9, fmt=FMT_NUM),
    Column(MEAS, "request_throughput", "requests/s", NUMBER, "measured completed requests per second",
           minimum=0, min_open=True, maximum=1e12, fmt=FMT_NUM),
    Column(MEAS, "output_throughput", "tokens/s", NUMBER, "measured output tokens per second", minimum=0,
           min_open=True, maximum=1e15, fmt=FMT_NUM),
    Column(MEAS, "total_throughput", "tokens/s", NUMBER, "measured input + output tokens per second",
           minimum=0, min_open=True, maximum=1e15, fmt=FMT_NUM),
    Column(MEAS, "source", "", TEXT, "where the row came from: the result file and the run in it"),
    Column(MEAS, "file", "", TEXT, "load-test result file to fill this row from (vLLM, SGLang, AIPerf/GenAI-Perf, "
           "guidellm, LLMPerf or inference-perf; a path relative to the input workbook's folder; a result and "
           "its two /metrics scrapes separated by ';'): blank cells are taken from the file, a typed cell wins "
           "(warned when the file differs); a file of several runs stands for one row per run, or for the one "
           "run a typed source names", calc=False),
    Column(MEAS, "max_num_batched_tokens", "tokens", INT, "the tested server's new prompt tokens per forward pass "
           "(vLLM --max-num-batched-tokens; blank: Settings max_num_batched_tokens)", minimum=1, maximum=1e9,
           fmt=FMT_INT),
    Column(MEAS, "scheduler", "", CHOICE, "the tested engine's scheduler, which sets how a TTFT at concurrency > 1 "
           "is read: prefill_first (SGLang: each wave of concurrency requests prefills, then decodes together) or "
           "decode_first (vLLM V1: running decodes first, prefill chunks in the rest of max_num_batched_tokens; the "
           "waves break into a steady train); blank: prefill_first, said at each row at concurrency > 1 (filled "
           "from a load-test file only when it names the server: sglang bench_serving's native sglang backend)",
           choices=SCHEDULERS),
    # ---------------------------------------------------------------- Demand (optional)
    Column(DEM, "workload", "", TEXT, "a workload of the Workloads sheet", True, ref=W),
    Column(DEM, "period", "", TEXT, "planning period, e.g. 2027-Q1", True),
    Column(DEM, "demand_tpm", "tokens/min", NUMBER, "delivered tokens/min the workload needs in the period "
           "(blank: none in that period; a period whose demands are all blank is an error)",
           minimum=0, maximum=1e15, fmt=FMT_INT),
    # ---------------------------------------------------------------- Tiers (optional)
    Column(TIERS, "tier", "", TEXT, "name of the KV-cache tier", True, key=True),
    Column(TIERS, "kind", "", CHOICE, "hbm (GPU prefix cache), dram (host memory), ssd (local NVMe) or "
           "remote (a pool over the network); tiers nest in this order", True,
           choices=("hbm", "dram", "ssd", "remote")),
    Column(TIERS, "capacity_gib", "GiB", NUMBER, "capacity the traced traffic's cache sees in this tier "
           "(hbm blank: HBM left after weights and peak KV, times the instance's GPUs)", minimum=0,
           maximum=1e9, fmt=FMT_NUM),
    Column(TIERS, "scope", "", CHOICE, "what one capacity_gib is bought for: instance (each serving "
           "instance), node (each node of gpus_per_node GPUs) or pool (once)", default="instance",
           choices=("instance", "node", "pool")),
    Column(TIERS, "read_gbps", "GB/s", NUMBER, "read bandwidth into each GPU's HBM (blank: the workload's "
           "kv_gbps; not used for hbm: its hits load nothing)", minimum=0.001, maximum=1e6, fmt=FMT_NUM),
    Column(TIERS, "cost_per_gib_month", "currency/GiB/month", NUMBER, "price of one GiB of the tier per "
           "month (blank: 0, nothing bought)", minimum=0, maximum=1e9, fmt=FMT_COST4),
    Column(DEM, "demand_unit", "", CHOICE, "unit of this row's demand_tpm: tokens/min, tokens/hour or "
           "tokens/day (converted to tokens/min in Demand_Calc)", default="tokens/min",
           choices=("tokens/min", "tokens/hour", "tokens/day")),
    Column(DEM, "hit_target", "fraction", FRACTION, "planning hit ratio of the workload in this period "
           "(blank: the workload's hit_target)", minimum=0, maximum=1, fmt=FMT_PCT),
    # ---------------------------------------------------------------- Scenarios (optional)
    Column(SCN, "scenario", "", TEXT, "name of the what-if scenario (rows of one name form one scenario)",
           True),
    Column(SCN, "sheet", "", TEXT, "input sheet the override applies to: Models, GPUs, Workloads or "
           "Settings", True),
    Column(SCN, "column", "", TEXT, "column (or Settings key) to override", True),
    Column(SCN, "match", "", TEXT, "row name (workload, model or GPU) to override; blank: every row"),
    Column(SCN, "op", "", CHOICE, "set (replace), add (add to) or multiply (multiply by)", True,
           choices=("set", "add", "multiply")),
    Column(SCN, "value", "", ANY, "the value to set, add or multiply by", True),
)

# ---------------------------------------------------------------- plausibility (Models, GPUs)
@dataclass(frozen=True)
class Plausible:
    """The values of a column that no published model or GPU has, read as a probable unit mistake.

    A typed value below ``low`` or above ``high`` plans as typed, with a located warning: it is
    merely implausible (a new GPU or model may reach it), so it is said, not refused. A value beyond
    the column's ``maximum``, which is physically impossible, is refused (:mod:`planner.inputs.cells`)
    and the refusal ends with ``over_max``. ``high_says``/``low_says`` say what the bound is and why
    (the extremes of published configs and datasheets, ``source``); ``high_hint``/``low_hint`` the
    probable mistake, where ``{conv}`` is the value divided by ``high_div``/``low_div`` (``,.4g``).
    Checked by :mod:`planner.inputs.plausible` on typed cells only (a catalog value is its source's).
    """
    sheet: str
    name: str
    low: float | None
    high: float | None
    high_says: str = ""
    high_hint: str = ""
    high_div: float = 1.0
    low_says: str = ""
    low_hint: str = ""
    low_div: float = 1.0
    over_max: str = ""
    source: str = ""


_MODELS_SRC = ("the 19 models of planner/catalog/data/models.json, each from its config.json "
               "(layers 28-126, heads 28-128, head_dim 128-192, hidden_size 2,048-16,384, "
               "intermediate_size 768-53,248, params_b 7.25-1,026, experts 8-384)")
_GPUS_SRC = ("the GPUs of planner/catalog/data/gpus.json, each from its datasheet (hbm_gib 22.5-256, "
             "hbm_tbps 0.3-8, bf16_tflops 121-2,500, fp8_tflops 242.5-5,000, pcie_gbps 25-173)")
_BITS = ("bytes, not bits: a 16-bit BF16 element is 2 bytes, 8-bit FP8 is 1, 4-bit is 0.5")

PLAUSIBLE: tuple[Plausible, ...] = (
    Plausible(M, "layers", None, 1000, "is beyond any published model's depth (the deepest, Llama-3.1-405B, "
              "has 126 layers)", "its hidden_size typed here (8,192 is Llama-3.1-70B's width, 80 its layers)?",
              source=_MODELS_SRC),
    Plausible(M, "heads", None, 1024, "is beyond any published model's attention heads (the most, "
              "Llama-3.1-405B and DeepSeek-V3, have 128)", "its hidden_size or head_dim typed here?",
              source=_MODELS_SRC),
    Plausible(M, "kv_heads", None, 1024, "is beyond any published model's KV heads (the most, DeepSeek-V3's "
              "MHA-style 128)", "its hidden_size or head_dim typed here?", source=_MODELS_SRC),
    Plausible(M, "head_dim", None, 1024, "is beyond any published model's head dimension (64-256: gpt-oss "
              "64, Llama 128, DeepSeek-V3 192, Gemma 256)", "its hidden_size typed here (head_dim is "
              "hidden_size / heads on most models: 8,192 / 64 = 128)?", source=_MODELS_SRC),
    Plausible(M, "hidden_size", 256, 131072, "is beyond any published model's width (the widest, "
              "Llama-3.1-405B, has 16,384)", "its intermediate_size typed here, or a number of parameters?",
              low_says="is narrower than any served LLM (the catalog's narrowest, Qwen3-30B-A3B, has 2,048)",
              low_hint="its layers typed here (80 is Llama-3.1-70B's layers, 8,192 its width)?",
              source=_MODELS_SRC),
    Plausible(M, "intermediate_size", None, 1048576, "is beyond any published model's FFN width (the widest, "
              "Llama-3.1-405B, has 53,248)", "a number of parameters typed here?", source=_MODELS_SRC),
    Plausible(M, "mla_kv_dim", None, 16384, "is beyond any published MLA width (DeepSeek-V3/R1 and Kimi-K2: "
              "kv_lora_rank 512 + qk_rope_head_dim 64 = 576)", "a per-layer width times the layers typed "
              "here?", source=_MODELS_SRC),
    Plausible(M, "params_b", 0.01, 4000, "is beyond any published model (the largest, Kimi-K2, has 1,026 "
              "billion parameters)", "typed in millions of parameters ({conv} billion; 8,000 for an 8B)?",
              high_div=1000, low_says="is below the smallest language model served (GPT-2 and SmolLM have "
              "0.12-0.14 billion parameters)", low_hint="typed in trillions ({conv} billion)?",
              low_div=0.001, source=_MODELS_SRC),
    Plausible(M, "active_params_b", 0.01, 10000, "is beyond any published model (the largest, Kimi-K2, has "
              "1,026 billion parameters, 32 of them active)", "typed in millions of parameters ({conv} "
              "billion)?", high_div=1000, low_says="is below the smallest language model served",
              low_hint="typed in trillions ({conv} billion)?", low_div=0.001, source=_MODELS_SRC),
    Plausible(M, "experts", None, 4096, "is beyond any published MoE (the most routed experts: Qwen3-Next's "
              "512, Kimi-K2's 384)", "", source=_MODELS_SRC),
    Plausible(M, "experts_per_token", None, 64, "is beyond any published MoE's routing (2-10 experts a token: "
              "Mixtral 2, DeepSeek-V3 and Kimi-K2 8, Qwen3-Next 10)", "", source=_MODELS_SRC),
    Plausible(M, "weight_bytes", None, 4, "is more than FP32's 4 bytes a weight (no model is served in FP64)",
              f"typed in bits ({{conv}} bytes)? The column is in {_BITS}", high_div=8,
              over_max=f"(typed in bits? the column is in {_BITS})", source="IEEE 754 / OCP FP8 widths"),
    Plausible(M, "kv_bytes", None, 4, "is more than FP32's 4 bytes a cached element (no KV cache is kept in "
              "FP64)", f"typed in bits ({{conv}} bytes)? The column is in {_BITS}", high_div=8,
              over_max=f"(typed in bits? the column is in {_BITS})", source="IEEE 754 / OCP FP8 widths"),
    Plausible(G, "hbm_gib", 1, 1024, "is beyond any GPU's memory (the largest have 288 GB)",
              "typed in MiB ({conv} GiB)?", high_div=1024, low_says="is below any data-centre GPU's memory "
              "(the smallest, T4 and L4, have 16-24 GB)", low_hint="typed in TiB or TB ({conv} GiB)?",
              low_div=1 / 1024, over_max="(typed in bytes or KiB? the column is in GiB: 80 GB is 74.5 GiB)",
              source=_GPUS_SRC + "; B300 and MI355X 288 GB (vendor datasheets)"),
    Plausible(G, "hbm_tbps", None, 30, "is beyond any GPU's memory bandwidth (the fastest, B200, has 8 TB/s)",
              "typed in GB/s ({conv} TB/s)?", high_div=1000,
              over_max="(typed in GB/s or bytes/s? the column is in TB/s: an H100 SXM has 3.35)", source=_GPUS_SRC),
    Plausible(G, "bf16_tflops", 5, 20000, "is beyond any GPU's dense BF16 peak (the fastest, GB200, has "
              "2,500 TFLOPS)", "typed in GFLOPS ({conv} TFLOPS), or a sparsity figure of many GPUs?",
              high_div=1000, low_says="is below any data-centre GPU's BF16 peak (the catalog's slowest, L4, "
              "has 121 TFLOPS)", low_hint="typed in PFLOPS ({conv} TFLOPS)?", low_div=0.001,
              over_max="(typed in GFLOPS or FLOPS? the column is in TFLOPS: an H100 SXM has 989)", source=_GPUS_SRC),
    Plausible(G, "fp8_tflops", 5, 40000, "is beyond any GPU's dense FP8 peak (the fastest, GB200, has "
              "5,000 TFLOPS)", "typed in GFLOPS ({conv} TFLOPS)?", high_div=1000,
              low_says="is below any FP8 GPU's peak (the catalog's slowest, L4, has 242.5 TFLOPS)",
              low_hint="typed in PFLOPS ({conv} TFLOPS)?", low_div=0.001,
              over_max="(typed in GFLOPS or FLOPS? the column is in TFLOPS: an H100 SXM has 1,979)", source=_GPUS_SRC),
    Plausible(G, "pcie_gbps", 0.5, 1000, "is beyond any host link (the fastest, NVLink-C2C of GH200/GB200, "
              "carries 450 GB/s each way)", "typed in MB/s ({conv} GB/s) or Gb/s?", high_div=1000,
              low_says="is below a PCIe Gen3 x1 lane (about 1 GB/s)", low_hint="typed in TB/s ({conv} GB/s)?",
              low_div=0.001, over_max="(typed in MB/s or bytes/s? the column is in GB/s: PCIe Gen5 x16 "
              "carries about 50)", source=_GPUS_SRC + "; PCI-SIG lane rates"),
)


@dataclass(frozen=True)
class Relation:
    """Two columns of one row that must (``error``) or should (``warning``) keep an order:
    the product of ``small`` at most ``large_scale`` x the product of ``large`` (give or take
    :data:`RELATION_SLACK`: a rounded 8 against the catalog's 8.03 passes). Checked on every row with
    at least one of the cells typed (catalog values are consistent with their source), by
    :mod:`planner.inputs.plausible`; an ``error`` with one side the catalog's is said as a warning
    (the row may be another model's, typed in part); ``says`` ends the message, ``source`` why."""
    sheet: str
    small: tuple[str, ...]
    large: tuple[str, ...]
    severity: str
    says: str
    large_scale: float = 1.0
    attention: str | None = None  # only rows of this attention kind
    at: str = ""                  # the column the message is said at (blank: small[0])
    source: str = ""


RELATION_SLACK = 0.05  # a relation is broken when small > (1 + this) x large_scale x large
RELATIONS: tuple[Relation, ...] = (
    Relation(M, ("kv_heads",), ("heads",), "error", "a KV head serves one or more query heads (GQA groups the "
             "query heads over the KV heads, MHA has one each), so kv_heads is at most heads: are the two "
             "swapped?", attention="gqa", source="Ainslie et al. 2023, GQA, arXiv:2305.13245 section 2"),
    Relation(M, ("experts_per_token",), ("experts",), "error", "a token is routed to experts_per_token of the "
             "experts, so it is at most experts: are the two swapped?", source="Fedus et al. 2021, "
             "Switch Transformers (top-k routing), arXiv:2101.03961"),
    Relation(M, ("active_params_b",), ("params_b",), "error", "the parameters active per token are part of the "
             "model, so active_params_b is at most params_b: are the two swapped?"),
    Relation(M, ("layers",), ("hidden_size",), "warning", "every published model is wider than it is deep "
             "(Llama-3.1-70B: 80 layers, 8,192 wide): are layers and hidden_size swapped?", source=_MODELS_SRC),
    Relation(M, ("layers", "hidden_size", "hidden_size"), ("params_b",), "warning", "the attention's query "
             "and output projections alone hold about 2 x hidden_size^2 parameters a layer, so params_b is at "
             "least layers x hidden_size^2 / 1e9: typed in another unit, or the dimensions of another model?",
             large_scale=1e9, at="params_b", source="Vaswani et al. 2017 (W_Q and W_O, each hidden_size x hidden_size)"),
    Relation(G, ("bf16_tflops",), ("fp8_tflops",), "warning", "every GPU with FP8 runs it at twice its dense "
             "BF16 rate (H100 SXM: 989 and 1,979 TFLOPS): are the two swapped, or is one a sparsity figure?",
             source=_GPUS_SRC),
)


def plausible(sheet: str, name: str) -> Plausible | None:
    """The :data:`PLAUSIBLE` entry of a column, or None."""
    for p in PLAUSIBLE:
        if p.sheet == sheet and p.name == name:
            return p
    return None


SHEETS = (M, G, W)
OPTIONAL_SHEETS = (MEAS, DEM, SCN, TIERS)  # read when present; carried to the output as inputs
SETTINGS = "Settings"
SHEET_ORDER = SHEETS + (SETTINGS,) + OPTIONAL_SHEETS  # order of problems and of input sheets


@dataclass(frozen=True)
class Setting:
    key: str
    kind: str
    default: Any
    description: str
    minimum: float | None = None
    maximum: float | None = None
    min_open: bool = False


SETTING_KEYS: tuple[Setting, ...] = (
    Setting("quarter", TEXT, "", "label of the planning run, e.g. 2026-Q4"),
    Setting("hit_step", FRACTION, 0.05, "step of the hit-ratio sensitivity grid", 0, 1, True),
    Setting("currency", TEXT, "USD", "currency of hourly_cost and the cost columns"),
    Setting("pcie_sweep_gbps", NUMBERS, (), "further host-to-device bandwidths for the PCIe sweep beside "
            "Gen4 and Gen5, in GB/s, separated by ';' (e.g. '200; 450' for C2C-class links)"),
    Setting("prefill_mfu", FRACTION, 0.40, "roofline estimate: fraction of the dense peak a whole prefill "
            "reaches on a GPU of the H100 SXM's balance (989.4 TFLOPS over 3.35 TB/s); other GPUs by their own "
            "balance through the memory term (0.40: chosen with prefill_layer_ms and prefill_request_ms as the "
            "minimax over the published cold concurrency-1 TTFTs of tests/data/published_prefill.csv, README "
            "'Roofline against published prefills'; was 0.41 with a sweep whose means include a cached "
            "repeat, 0.57, 0.45 before)", 0, 1, True),
    Setting("prefill_matmul_eff", FRACTION, 0.8, "roofline estimate: fraction of the dense peak the prefill's "
            "matrix products reach (0.8: Maximum Achievable Matmul FLOPS of an H100 SXM, 792 of 989 TFLOPS, "
            "stas00/ml-engineering compute/accelerator/README.md); the rest of prefill_mfu is memory traffic "
            "at the GPU's hbm_tbps", 0, 1, True),
    Setting("prefill_layer_ms", NUMBER, 0.15, "roofline estimate: fixed cost of a prefill per layer in ms "
            "(launches, synchronisation, all-reduce latency; t_fixed_ms of estimated rows is prefill_request_ms "
            "+ this x layers + one read of the weights + a MoE's padding rows; 0.15: with prefill_mfu and "
            "prefill_request_ms the minimax over the published concurrency-1 TTFTs of four engines, README "
            "'Roofline against published prefills'; was 0.16 with a sweep whose means include a cached repeat, "
            "1.05 fitted on vLLM and SGLang sweeps only)", 0, 1e6),
    Setting("prefill_request_ms", NUMBER, 0.0, "roofline estimate: fixed cost of a prefill per request in ms "
            "(HTTP, tokenisation, scheduling, the first sampling step; 0: the same minimax found no cost per "
            "request beyond the per-layer one; raise it for a deployment whose short prompts you have timed, "
            "e.g. vLLM with a KV connector, whose published intercepts reach 96 ms)", 0, 1e6),
    Setting("prefill_w4a16_eff", FRACTION, 0.6, "roofline estimate: fraction of the BF16 rate reached by "
            "4-bit weight-only (W4A16: AWQ, GPTQ) matrix products at prefill (0.6: Marlin at 2048-4000 "
            "tokens ran at 0.60-0.61x FP16, vllm-project/vllm PR #2497)", 0, 1, True),
    Setting("decode_mbu", FRACTION, 0.6, "roofline estimate: achieved fraction of HBM bandwidth during decode "
            "(0.6: Databricks, 'LLM Inference Performance Engineering: Best Practices', 2023, measured MBU "
            "around 60% at small batch)", 0, 1, True),
    Setting("target_utilization", FRACTION, 1.0, "busy fraction instances are sized for (Workloads may override "
            "per row): instances = ceil(demand_tpm / (tpm_delivered_target x target_utilization)); 0.8 leaves "
            "20% headroom", 0, 1, True),
    Setting("trace_warmup", FRACTION, 0.5, "share of a trace's first requests that only warm the cache and "
            "are not counted in its hit ratio (0.5: kvcache-ai's simulator measures the last 50%)", 0, 1),
    Setting("gpus_per_node", NUMBER, 8.0, "GPUs per node, for the cost of node-scope Tiers (8: HGX/DGX "
            "H100/H200/B200 nodes)", 1, 1e4),
    Setting("periods", TEXT, "", "planning periods for demand by growth: labels separated by ';' "
            "('2027-Q1; 2027-Q2') or a quarter range ('2027-Q1..2027-Q4'); each workload with a demand_tpm "
            "gets it in the first period, grown by demand_growth in each next one (a Demand row of the "
            "workload and period wins; blank: periods only from the Demand sheet)"),
    Setting("demand_growth", FRACTION, 0.0, "growth of every workload's demand_tpm per period over Settings "
            "periods, compounded (Workloads demand_growth overrides per row; 0.1 = +10% a period; a plain number "
            "above 1 is refused as a probable percentage: type 150% for +150%)", -1, 10),
    Setting("max_num_batched_tokens", NUMBER, 8192.0, "new prompt tokens a server packs into one forward pass "
            "(chunked prefill), for bursts at Workloads concurrency and for load tests at concurrency > 1 "
            "(8192: vLLM's default for its OpenAI server on GPUs of 70 GiB or more, H100/H200/H20; 2048 on "
            "smaller GPUs; vllm-project/vllm vllm/engine/arg_utils.py EngineArgs.get_batch_defaults)", 1, 1e9),
    Setting("hours_per_month", NUMBER, 730.0, "hours billed per month for the fleet cost per month "
            "(730 = 8,760 h a year / 12)", 0, 744, True),
)


def columns(sheet: str) -> tuple[Column, ...]:
    return tuple(c for c in COLUMNS if c.sheet == sheet)


def column(sheet: str, name: str) -> Column:
    for c in COLUMNS:
        if c.sheet == sheet and c.name == name:
            return c
    raise KeyError(f"{sheet}.{name}")


def markdown() -> str:
    """The column reference as Markdown tables (used in README.md)."""
    out = []
    for sheet in SHEETS + OPTIONAL_SHEETS:
        out.append(f"`{sheet}`" + (" (optional)" if sheet in OPTIONAL_SHEETS else "") + "\n")
        out.append("| column | unit | type | range | default | required | description |")
        out.append("|---|---|---|---|---|---|---|")
        for c in columns(sheet):
            req = {True: "yes", False: "no", "gqa": "gqa", "mla": "mla",
                   "pcie": "pcie_gbps or pcie_gen", "catalog": "yes, unless the catalog gives it"}[c.required]
            default = "" if c.default is None else str(c.default)
            out.append(f"| {c.name} | {c.unit} | {c.kind} | {c.range_text()} | {default} | {req} "
                       f"| {c.description} |")
        out.append("")
    out.append("Plausible magnitudes (`Models`, `GPUs`): a typed value outside the range is planned as typed "
               "with a warning at its cell (beyond every published model or GPU: a probable unit mistake); a "
               "value beyond the column's range above is refused, with the probable unit\n")
    out.append("| sheet | column | warned below | warned above | why | refused above the range as |")
    out.append("|---|---|---|---|---|---|")
    for p in PLAUSIBLE:
        lo = "" if p.low is None else _fmt_bound(p.low)
        hi = "" if p.high is None else _fmt_bound(p.high)
        why = "; ".join(x for x in (p.high_says and f"above: {p.high_says}", p.low_says and f"below: {p.low_says}") if x)
        out.append(f"| {p.sheet} | {p.name} | {lo} | {hi} | {why} | {p.over_max.strip('()')} |")
    out.append("")
    out.append("Orders within a row (`Models`, `GPUs`; judged when one of the cells is typed)\n")
    out.append("| sheet | rule | refused or warned | why |")
    out.append("|---|---|---|---|")
    for r in RELATIONS:
        rhs = " x ".join(r.large) if r.large_scale == 1 else f"{r.large_scale:g} x " + " x ".join(r.large)
        out.append(f"| {r.sheet} | {' x '.join(r.small)} <= {rhs} | "
                   f"{'refused' if r.severity == 'error' else 'warned'} | {r.says} {r.source} |")
    out.append("")
    out.append(f"`{SETTINGS}` (optional; columns `key`, `value`)\n")
    out.append("| key | type | default | description |")
    out.append("|---|---|---|---|")
    for s in SETTING_KEYS:
        default = "; ".join(map(str, s.default)) if isinstance(s.default, tuple) else s.default
        out.append(f"| {s.key} | {s.kind} | {default} | {s.description} |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":  # pragma: no cover
    print(markdown())
