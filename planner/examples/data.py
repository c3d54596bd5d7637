"""Bundled example input for the planner.

This module holds a small, self-contained example data set for the KV-cache
(prefix-cache) hit-ratio planner, as plain Python data: four module-level
lists of dicts, one per input table.

* MODELS    - model shapes that set the KV-cache bytes per token.
* GPUS      - device memory, host->device (PCIe) bandwidth and hourly cost.
* WORKLOADS - load-test measurements and planning targets per serving set-up.
* SETTINGS  - global key/value settings (quarter, hit-ratio step, currency).

Keys are exactly the column names of each table; a key that is missing (or
set to None) stands for a blank cell.  Model dimensions were looked up in the
models' published config.json files / model cards; where each figure comes
from is cited in the ``source`` column of MODELS and the ``note`` columns of
GPUS and WORKLOADS.  Numbers that are estimates rather than looked-up facts
carry a comment saying so.  The workloads are illustrative, not measurements
of a real deployment.
"""

from typing import Any, Dict, List

# ---------------------------------------------------------------------------
# MODELS
# Columns: model, layers, kv_heads, head_dim, kv_bytes, attention, mla_kv_dim,
#          params_b, weight_bytes, source
# ---------------------------------------------------------------------------
MODELS: List[Dict[str, Any]] = [
    # Dimensions (layers, KV heads, head_dim, MLA width, parameters, ...) are left blank: the
    # planner's model catalog fills them from each model's config.json (green cells in the
    # output, each with a comment citing its source; `planner catalog` lists the entries).
    # Only what the deployment chooses is typed: the KV-cache and weight precision.
    {
        "model": "Qwen2.5-72B",
        "kv_bytes": 2,
        "weight_bytes": 2,
        "source": "model catalog entry Qwen2.5-72B-Instruct (config.json); BF16 weights and KV cache.",
    },
    {
        "model": "Qwen2.5-7B",
        "kv_bytes": 2,
        "weight_bytes": 2,
        "source": "model catalog entry Qwen2.5-7B-Instruct (config.json); BF16 weights and KV cache.",
    },
    {
        "model": "Llama-3.1-8B",
        "kv_bytes": 2,
        "weight_bytes": 2,
        "source": "model catalog entry Llama-3.1-8B-Instruct (config.json); BF16 weights and KV cache.",
    },
    {
        "model": "Llama-3.1-70B",
        "kv_bytes": 2,
        "weight_bytes": 2,
        "source": "model catalog entry Llama-3.1-70B-Instruct (config.json); BF16 weights and KV cache.",
    },
    {
        "model": "Llama-3.1-70B-FP8KV",
        "catalog": "Llama-3.1-70B-Instruct",
        "kv_bytes": 1,
        "weight_bytes": 2,
        "source": (
            "A team label: the `catalog` column names the Llama-3.1-70B-Instruct entry for its "
            "dimensions; BF16 weights served with an FP8 (e4m3) KV cache, e.g. vLLM "
            "--kv-cache-dtype fp8, so 1 byte per KV element."
        ),
    },
    {
        "model": "DeepSeek-V3",
        "kv_bytes": 2,
        "weight_bytes": 1,
        "source": (
            "model catalog entry DeepSeek-V3 (config.json: MLA, kv_lora_rank 512 + qk_rope_head_dim 64 "
            "= 576 cached elements per token per layer, replicated on every tensor-parallel rank; "
            "671B total / 37B active parameters). FP8 weights as released (1 byte per weight); "
            "BF16 latent KV cache."
        ),
    },
    {
        "model": "Llama-3.2-90B-Vision",
        "layers": 100,
        "kv_heads": 8,
        "head_dim": 128,
        "kv_bytes": 2,
        "attention": "gqa",
        "params_b": 88.6,
        "weight_bytes": 2,
        "heads": 64,
        "hidden_size": 8192,
        "source": (
            "Hugging Face meta-llama/Llama-3.2-90B-Vision-Instruct config.json text_config: "
            "num_hidden_layers=100 (80 self-attention + 20 cross-attention), "
            "num_key_value_heads=8, num_attention_heads=64, hidden_size=8192 (head_dim 128); "
            "model card: 88.6B parameters. BF16. Its workloads are calibrated from the "
            "published load test in the Measurements sheet."
        ),
    },
]

# ---------------------------------------------------------------------------
# GPUS
# Columns: gpu, hbm_gib, pcie_gbps, pcie_gen, hourly_cost, note
# hbm_gib is the memory total nvidia-smi reports, in GiB (MiB / 1024), not
# the marketed decimal GB figure.  pcie_gbps is the effective host->device
# copy bandwidth per GPU; blank means the planner's default for pcie_gen.
# ---------------------------------------------------------------------------
GPUS: List[Dict[str, Any]] = [
    # Memory, bandwidths, dense TFLOPS and the host link come from the planner's GPU catalog
    # (vendor datasheets; memory as the device reports it). A row whose own name is not the
    # vendor's names its entry in `catalog`. Typed here: the price, and the two measured-estimate
    # host-to-device bandwidths (typed cells win over the catalog).
    {
        "gpu": "H100-SXM",
        # Estimate: plausible late-2026 on-demand cloud price per GPU-hour.
        "hourly_cost": 2.50,
        "note": (
            "NVIDIA H100 SXM5 80GB HBM3. Datasheet: 3.35 TB/s HBM3, 989.4 dense BF16 "
            "TFLOPS (1,979 is the sparsity figure). nvidia-smi reports 81559 MiB = 79.6 GiB "
            "(totals listed in modal-labs/modal-client PR #2797). PCIe Gen5 x16 "
            "host link; pcie_gbps left blank so the Gen5 default applies "
            "(NVIDIA/nvbandwidth issue #24 shows ~35 GB/s SM-copy H2D and "
            "~53 GB/s D2H on H100, so the real figure depends on copy method "
            "and host). hourly_cost is an estimate."
        ),
    },
    {
        "gpu": "H200-SXM",
        "catalog": "H200",
        # Estimate: ~83% of the 64 GB/s raw Gen5 x16 rate for pinned
        # copy-engine transfers.
        "pcie_gbps": 53,
        # Estimate: plausible late-2026 on-demand cloud price per GPU-hour.
        "hourly_cost": 3.40,
        "note": (
            "NVIDIA H200 SXM 141GB HBM3e. nvidia-smi reports 143771 MiB = "
            "140.4 GiB (seen in many public nvidia-smi logs). PCIe Gen5 x16; "
            "53 GB/s is an estimate close to the ~52.8 GB/s D2H copy measured "
            "on Gen5 Hopper in NVIDIA/nvbandwidth issue #24. hourly_cost is an "
            "estimate."
        ),
    },
    {
        "gpu": "A100-SXM-80GB",
        "catalog": "A100 80GB",
        # Estimate: measured Gen4 x16 peak is ~25 GB/s of 32 GB/s raw.
        "pcie_gbps": 24,
        # Estimate: plausible late-2026 on-demand cloud price per GPU-hour.
        "hourly_cost": 1.30,
        "note": (
            "NVIDIA A100 SXM4 80GB HBM2e. nvidia-smi reports 81920 MiB = "
            "80.0 GiB (modal-labs/modal-client PR #2797). PCIe Gen4 x16; 24 GB/s "
            "is an estimate just under the ~25 GB/s measured peak quoted in "
            "ZaidQureshi/bam issue #54. hourly_cost is an estimate."
        ),
    },
    {
        "gpu": "L40S",
        # Estimate: plausible late-2026 on-demand cloud price per GPU-hour.
        "hourly_cost": 0.95,
        "note": (
            "NVIDIA L40S 48GB GDDR6 (PCIe card). nvidia-smi reports 46068 MiB = "
            "45.0 GiB (modal-labs/modal-client PR #2797). PCIe Gen4 x16; "
            "pcie_gbps left blank so the Gen4 default applies. hourly_cost is "
            "an estimate."
        ),
    },
]

# ---------------------------------------------------------------------------
# WORKLOADS
# Columns: workload, model, gpu, tp, isl, osl, batch, max_seq_len,
#          hit_measured, hit_target, t_attn0_ms, t_ffn0_ms, t_other0_ms,
#          other_scaling, t_fixed_ms, t_decode_ms, alpha, tpm_measured,
#          demand_tpm, note
#
# Every timing, hit ratio and token rate below is an illustrative estimate,
# not a measurement.  They were derived as follows (per GPU, tp-way split):
#   t_ffn0_ms  ~ 2 * active_params * isl / (tp * effective linear FLOP/s)
#   t_attn0_ms ~ 2 * layers * isl^2 * (heads*head_dim) / (tp * attention FLOP/s)
#                (causal; for DeepSeek-V3 MLA heads*head_dim -> 128*(192+128)/2)
#   effective FLOP/s: H100/H200 ~520-600 T linear, ~380-450 T attention (BF16);
#                     DeepSeek-V3 FP8 MoE on H200 ~420 T; A100 ~200-220 T;
#                     L40S ~190 T linear, ~150 T attention.
#   t_decode_ms ~ osl * decode_step / batch, decode_step ~ (weights + batch KV
#                read per GPU) / (0.7 * HBM bandwidth) + a few ms overhead.
#   tpm_measured ~ (isl + osl) * 60000 / (TTFT at hit_measured + t_decode_ms),
#                rounded (batching factor ~1.0-1.05).
# KV at batch * max_seq_len plus weights fits each GPU's hbm_gib.
# ---------------------------------------------------------------------------
WORKLOADS: List[Dict[str, Any]] = [
    # Estimate: all numbers in this row are illustrative.
    {
        "workload": "chat-qwen72b-h100",
        "model": "Qwen2.5-72B",
        "gpu": "H100-SXM",
        "tp": 4,
        "isl": 2048,
        "osl": 400,
        "batch": 64,
        "hit_measured": 0.45,
        "hit_target": 0.60,
        "t_attn0_ms": 3.6,
        "t_ffn0_ms": 143.0,
        "t_other0_ms": 5.9,
        "other_scaling": "linear",
        "t_fixed_ms": 12.0,
        "t_decode_ms": 153.0,
        "alpha": 0.5,
        "tpm_measured": 598000,
        "demand_tpm": 7200000,
        "note": (
            "Customer-support chat: ~1.2k-token shared system prompt + tool "
            "schema reused across sessions, rest is per-user history. Measured "
            "hit is below the prompt share because of HBM-only eviction; "
            "target assumes a host-memory KV tier."
        ),
    },
    # Estimate: all numbers in this row are illustrative.
    {
        "workload": "rag-qwen72b-h200",
        "model": "Qwen2.5-72B",
        "gpu": "H200-SXM",
        "tp": 4,
        "isl": 24576,
        "osl": 500,
        "batch": 16,
        "max_seq_len": 32768,
        "hit_measured": 0.30,
        "hit_target": 0.55,
        "t_attn0_ms": 440.0,
        "t_ffn0_ms": 1654.0,
        "t_other0_ms": 63.0,
        "other_scaling": "quadratic",
        "t_fixed_ms": 15.0,
        "t_decode_ms": 766.0,
        "alpha": 0.6,
        "tpm_measured": 640000,
        "demand_tpm": 2600000,
        "note": (
            "RAG over long contracts: retrieved document chunks (16k-24k "
            "tokens) are reused when several questions hit the same document; "
            "target assumes document-ordered chunk placement. Other time is "
            "unfused mask/softmax work that grows with context (quadratic)."
        ),
    },
    # Estimate: all numbers in this row are illustrative.
    {
        "workload": "agent-llama70b-fp8kv-h100",
        "model": "Llama-3.1-70B-FP8KV",
        "gpu": "H100-SXM",
        "tp": 4,
        "isl": 12288,
        "osl": 300,
        "batch": 48,
        "max_seq_len": 16384,
        "hit_measured": 0.82,
        "hit_target": 0.90,
        "t_attn0_ms": 118.0,
        "t_ffn0_ms": 834.0,
        "t_fixed_ms": 12.0,
        "t_decode_ms": 184.0,
        "alpha": 0.6,
        "tpm_measured": 1950000,
        "demand_tpm": 19500000,
        "note": (
            "Multi-turn tool-using agent: each step re-sends the whole "
            "trajectory and appends a tool result, so most of the prompt is a "
            "cached prefix. FP8 KV halves bytes per token. No separate 'other' "
            "time measured (blank)."
        ),
    },
    # Estimate: all numbers in this row are illustrative.
    {
        "workload": "code-qwen7b-l40s",
        "model": "Qwen2.5-7B",
        "gpu": "L40S",
        "tp": 1,
        "isl": 6144,
        "osl": 64,
        "batch": 32,
        "hit_measured": 0.55,
        "hit_target": 0.75,
        "t_attn0_ms": 50.5,
        "t_ffn0_ms": 492.0,
        "t_other0_ms": 8.0,
        "other_scaling": "const",
        "t_fixed_ms": 6.0,
        "t_decode_ms": 91.0,
        "tpm_measured": 1000000,
        "demand_tpm": 25000000,
        "note": (
            "IDE code completion: repo-context prefix (open files, imports) "
            "shared by consecutive keystroke requests, short completions. "
            "Other time is per-request FIM template and constrained-decoding "
            "set-up (const). alpha blank (no overlap)."
        ),
    },
    # Estimate: all numbers in this row are illustrative.
    {
        "workload": "summarise-llama70b-a100",
        "model": "Llama-3.1-70B",
        "gpu": "A100-SXM-80GB",
        "tp": 4,
        "isl": 12288,
        "osl": 600,
        "batch": 24,
        "hit_measured": 0.05,
        "hit_target": 0.10,
        "t_attn0_ms": 291.0,
        "t_ffn0_ms": 2169.0,
        "t_other0_ms": 98.0,
        "other_scaling": "linear",
        "t_fixed_ms": 15.0,
        "t_decode_ms": 1151.0,
        "alpha": 0.3,
        "tpm_measured": 218000,
        "demand_tpm": 870000,
        "note": (
            "Offline batch summarisation of unrelated reports: only the short "
            "instruction header is shared, so the hit ratio stays low."
        ),
    },
    # Estimate: all numbers in this row are illustrative.
    {
        "workload": "chat-dsv3-h200",
        "model": "DeepSeek-V3",
        "gpu": "H200-SXM",
        "tp": 8,
        "isl": 6144,
        "osl": 800,
        "batch": 64,
        "hit_measured": 0.50,
        "hit_target": 0.70,
        "t_attn0_ms": 31.0,
        "t_ffn0_ms": 135.0,
        "t_other0_ms": 8.3,
        "other_scaling": "const",
        "t_fixed_ms": 25.0,
        "t_decode_ms": 472.0,
        "alpha": 0.7,
        "tpm_measured": 700000,
        "demand_tpm": 14000000,
        "note": (
            "General assistant chat on one 8x H200 node (FP8 weights, "
            "671/8 = 84 GB per GPU). MLA latent KV is replicated on every rank, "
            "so KV bytes per token per GPU do not shrink with tp. Other time is "
            "MoE routing set-up per request (const)."
        ),
    },
    # Estimate: all numbers in this row are illustrative.
    {
        "workload": "rag-dsv3-h200",
        "model": "DeepSeek-V3",
        "gpu": "H200-SXM",
        "tp": 8,
        "isl": 32768,
        "osl": 400,
        "batch": 16,
        "max_seq_len": 36864,
        "hit_measured": 0.35,
        "hit_target": 0.60,
        "t_attn0_ms": 883.0,
        "t_ffn0_ms": 722.0,
        "t_fixed_ms": 25.0,
        "t_decode_ms": 1000.0,
        "alpha": 0.7,
        "tpm_measured": 880000,
        "demand_tpm": 4400000,
        "note": (
            "RAG over 32k-token document bundles; at this length attention "
            "(128 heads, 192/128 qk/v dims) outweighs the 37B-active MoE "
            "layers. 'Other' not measured separately (blank)."
        ),
    },
    # Estimate: all numbers in this row are illustrative.
    {
        "workload": "agent-llama8b-a100-long",
        "model": "Llama-3.1-8B",
        "gpu": "A100-SXM-80GB",
        "tp": 1,
        "isl": 16384,
        "osl": 250,
        "batch": 16,
        "max_seq_len": 20480,
        "hit_measured": 0.93,
        "hit_target": 0.97,
        "t_attn0_ms": 414.0,
        "t_ffn0_ms": 1196.0,
        "t_fixed_ms": 10.0,
        "t_decode_ms": 578.0,
        "tpm_measured": 1230000,
        "demand_tpm": 9800000,
        "note": (
            "Long-session coding agent: 16k-token trajectory, each step adds "
            "~500 tokens. Small model, 128 KiB of BF16 KV per token and Gen4 "
            "PCIe make loading the cached prefix cost more than recomputing "
            "the uncached part at the target hit ratio (load-bound, above the "
            "break-even h*). alpha blank (no overlap)."
        ),
    },
    # Estimate: all numbers in this row are illustrative.
    {
        "workload": "chat-llama8b-l40s",
        "model": "Llama-3.1-8B",
        "gpu": "L40S",
        "tp": 1,
        "isl": 1536,
        "osl": 300,
        "batch": 48,
        "hit_measured": 0.40,
        "hit_target": 0.60,
        "t_attn0_ms": 4.1,
        "t_ffn0_ms": 130.0,
        "t_other0_ms": 8.0,
        "other_scaling": "linear",
        "t_fixed_ms": 6.0,
        "t_decode_ms": 285.0,
        "alpha": 0.5,
        "tpm_measured": 300000,
        "demand_tpm": 9000000,
        "note": (
            "Small-model chat on L40S: ~900-token system prompt reused, short "
            "user turns."
        ),
    },
    # Estimate: all numbers in this row are illustrative.
    {
        "workload": "agent-qwen72b-h200",
        "model": "Qwen2.5-72B",
        "gpu": "H200-SXM",
        "tp": 4,
        "isl": 16384,
        "osl": 350,
        "batch": 32,
        "max_seq_len": 32768,
        "hit_measured": 0.80,
        "hit_target": 0.88,
        "t_attn0_ms": 196.0,
        "t_ffn0_ms": 1103.0,
        "t_other0_ms": 39.0,
        "other_scaling": "quadratic",
        "t_fixed_ms": 15.0,
        "t_decode_ms": 303.0,
        "alpha": 0.6,
        "tpm_measured": 1600000,
        "demand_tpm": 9600000,
        "note": (
            "Multi-turn research agent with web/tool results appended each "
            "turn; sessions pinned to an instance for cache affinity."
        ),
    },
    # Estimate: all numbers in this row are illustrative.
    {
        "workload": "summarise-llama8b-h100",
        "model": "Llama-3.1-8B",
        "gpu": "H100-SXM",
        "tp": 1,
        "isl": 30720,
        "osl": 700,
        "batch": 12,
        "max_seq_len": 32768,
        "hit_measured": 0.02,
        "hit_target": 0.05,
        "t_attn0_ms": 550.0,
        "t_ffn0_ms": 822.0,
        "t_other0_ms": 41.0,
        "other_scaling": "linear",
        "t_fixed_ms": 8.0,
        "t_decode_ms": 1703.0,
        "tpm_measured": 610000,
        "demand_tpm": 1800000,
        "note": (
            "Batch summarisation of long transcripts (30k tokens), almost no "
            "shared prefix. Batch capped at 12 by KV memory at 32k context. "
            "alpha blank (no overlap)."
        ),
    },
    # Estimate: all numbers in this row are illustrative.
    {
        "workload": "code-llama70b-fp8kv-h100",
        "model": "Llama-3.1-70B-FP8KV",
        "gpu": "H100-SXM",
        "tp": 4,
        "isl": 8192,
        "osl": 96,
        "batch": 32,
        "hit_measured": 0.60,
        "hit_target": 0.80,
        "t_attn0_ms": 52.0,
        "t_ffn0_ms": 556.0,
        "t_other0_ms": 24.0,
        "other_scaling": "const",
        "t_fixed_ms": 12.0,
        "t_decode_ms": 71.0,
        "alpha": 0.8,
        "tpm_measured": 1370000,
        "demand_tpm": 13700000,
        "note": (
            "Code completion / next-edit with an 8k repo-context prefix "
            "(retrieved snippets + current file) shared across a burst of "
            "requests. Other time is per-request retrieval packing (const)."
        ),
    },
    # Calibrated: no typed breakdown; t_attn0/t_ffn0/t_fixed/t_decode come from the
    # Measurements sheet (published load test of this deployment, 0 hit, 5 lengths).
    {
        "workload": "vision-llama90b-h100",
        "model": "Llama-3.2-90B-Vision",
        "gpu": "H100-SXM",
        "tp": 4,
        "isl": 3000,
        "osl": 128,
        "batch": 1,
        "hit_target": 0.50,
        "alpha": 0.0,
        "demand_tpm": 250000,  # Estimate: illustrative demand.
        "note": (
            "Breakdown calibrated from MEASUREMENTS (tenstorrent/tt-inference-server "
            "issue #379, 4x H100, concurrency 1). hit_target is illustrative."
        ),
    },
    # Estimated: the same model on 8 GPUs has no measurements: roofline estimate from
    # the model's and the GPU's dimensions (Settings prefill_mfu, decode_mbu).
    {
        "workload": "vision-llama90b-h100-tp8",
        "model": "Llama-3.2-90B-Vision",
        "gpu": "H100-SXM",
        "tp": 8,
        "isl": 3000,
        "osl": 128,
        "batch": 8,
        "hit_target": 0.50,
        "demand_tpm": 2000000,  # Estimate: illustrative demand.
        "note": "Breakdown estimated by the roofline (no load test of tp 8). Illustrative.",
    },
]

# ---------------------------------------------------------------------------
# SETTINGS
# Columns: key, value, note
# ---------------------------------------------------------------------------
SETTINGS: List[Dict[str, Any]] = [
    {
        "key": "quarter",
        "value": "2026-Q4",
        "note": "Planning quarter the prices and demand refer to.",
    },
    {
        "key": "hit_step",
        "value": 0.05,
        "note": "Step between hit ratios in the sweep tables (0, 0.05, ... 1).",
    },
    {
        "key": "currency",
        "value": "USD",
        "note": "Currency of GPUS.hourly_cost.",
    },
    {
        "key": "pcie_sweep_gbps",
        # NVLink-C2C (Grace Hopper) is marketed at 900 GB/s total, 450 GB/s per direction;
        # 200 GB/s stands for a CXL / Gen6 x16-class link. Both are sweep points, not plans.
        "value": "200; 450",
        "note": "Extra host-to-device bandwidths for the PCIe sweep (GB/s).",
    },
    {
        "key": "target_utilization",
        "value": 0.8,
        "note": "Size instances to run 80% busy (20% headroom for peaks); a workload may override it.",
    },
    {
        "key": "hours_per_month",
        "value": 730,
        "note": "Hours billed per month (8,760 h a year / 12).",
    },
]

# ---------------------------------------------------------------------------
# DEMAND (optional sheet): delivered tokens/min per workload for the next four
# quarters. Illustrative growth assumptions, not forecasts: chat +10% a quarter,
# agents +25%, code +15%, RAG and summarisation flat; the 2027-Q1 start is the
# Workloads demand_tpm.
# ---------------------------------------------------------------------------
_GROWTH = {"chat": 1.10, "agent": 1.25, "code": 1.15, "rag": 1.0, "summarise": 1.0, "vision": 1.0}
PERIODS = ["2027-Q1", "2027-Q2", "2027-Q3", "2027-Q4"]
DEMAND: List[Dict[str, Any]] = [
    {"workload": w["workload"], "period": period,
     "demand_tpm": round(w["demand_tpm"] * _GROWTH[w["workload"].split("-")[0]] ** q, -4)}
    for q, period in enumerate(PERIODS) for w in WORKLOADS
]

# ---------------------------------------------------------------------------
# SCENARIOS (optional sheet): named what-ifs, re-planned when the planner runs.
# ---------------------------------------------------------------------------
SCENARIOS: List[Dict[str, Any]] = [
    {"scenario": "H100 price -10%", "sheet": "GPUs", "column": "hourly_cost", "match": "H100-SXM",
     "op": "multiply", "value": 0.9},
    {"scenario": "hit_target +5 points on chat", "sheet": "Workloads", "column": "hit_target",
     "match": "chat-qwen72b-h100", "op": "add", "value": 0.05},
    {"scenario": "hit_target +5 points on chat", "sheet": "Workloads", "column": "hit_target",
     "match": "chat-dsv3-h200", "op": "add", "value": 0.05},
    {"scenario": "hit_target +5 points on chat", "sheet": "Workloads", "column": "hit_target",
     "match": "chat-llama8b-l40s", "op": "add", "value": 0.05},
    {"scenario": "utilisation 70%", "sheet": "Settings", "column": "target_utilization", "op": "set",
     "value": 0.7},
]


# ---------------------------------------------------------------------------
# MEASUREMENTS (optional sheet): published load-test points, one row per point.
# Source of every row: tenstorrent/tt-inference-server issue #379 "GPU Reference scores
# for Llama 3.2 90B Vision", comment by gtobarTT 2025-07-14, table "Performance Benchmark
# Sweeps for Llama-3.2-90B-Vision-Instruct on 4xH100s" (vLLM, concurrency 1, OSL 128):
# https://github.com/tenstorrent/tt-inference-server/issues/379
# ---------------------------------------------------------------------------
_M379 = "tenstorrent/tt-inference-server issue #379 (4xH100, vLLM, concurrency 1): ISL {isl}, OSL 128, TTFT {t} ms, TPOT {p} ms"
MEASUREMENTS: List[Dict[str, Any]] = [
    {"model": "Llama-3.2-90B-Vision", "gpu": "H100-SXM", "tp": 4, "isl": isl, "hit": 0.0, "ttft_ms": t,
     "osl": 128, "tpot_ms": p, "concurrency": 1, "note": _M379.format(isl=isl, t=t, p=p)}
    for isl, t, p in ((128, 105.5, 46.0), (1024, 500.1, 45.9), (2048, 945.6, 46.0), (3072, 1397.4, 46.2),
                      (4096, 1842.8, 46.3))
]
