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
    Setting("prefill_mfu", FRACTION, 0.41, "roofline estimate: fraction of the dense peak a whole prefill "
            "reaches on a GPU of the H100 SXM's balance (989.4 TFLOPS over 3.35 TB/s); other GPUs by their own "
            "balance through the memory term (0.41: chosen with prefill_layer_ms and prefill_request_ms as the "
            "minimax over the published concurrency-1 TTFTs of tests/data/published_prefill.csv, README "
            "'Roofline against published prefills'; was 0.57, 0.45 before)", 0, 1, True),
    Setting("prefill_matmul_eff", FRACTION, 0.8, "roofline estimate: fraction of the dense peak the prefill's "
            "matrix products reach (0.8: Maximum Achievable Matmul FLOPS of an H100 SXM, 792 of 989 TFLOPS, "
            "stas00/ml-engineering compute/accelerator/README.md); the rest of prefill_mfu is memory traffic "
            "at the GPU's hbm_tbps", 0, 1, True),
    Setting("prefill_layer_ms", NUMBER, 0.16, "roofline estimate: fixed cost of a prefill per layer in ms "
            "(launches, synchronisation, all-reduce latency; t_fixed_ms of estimated rows is prefill_request_ms "
            "+ this x layers + one read of the weights + a MoE's padding rows; 0.16: with prefill_mfu and "
            "prefill_request_ms the minimax over the published concurrency-1 TTFTs of four engines, README "
            "'Roofline against published prefills'; was 1.05, fitted on vLLM and SGLang sweeps only)", 0, 1e6),
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
    out.append(f"`{SETTINGS}` (optional; columns `key`, `value`)\n")
    out.append("| key | type | default | description |")
    out.append("|---|---|---|---|")
    for s in SETTING_KEYS:
        default = "; ".join(map(str, s.default)) if isinstance(s.default, tuple) else s.default
        out.append(f"| {s.key} | {s.kind} | {default} | {s.description} |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":  # pragma: no cover
    print(markdown())
