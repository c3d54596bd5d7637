"""Roofline estimate of the prefill breakdown and decode time (README "Where do my numbers come from").

Used for a workload with neither a typed breakdown nor measurements of its deployment.

Prefill at 0 hit over ``N = isl`` tokens, on ``tp`` GPUs, as an additive roofline
(:func:`prefill_part_ms`): every FLOP costs its share of the dense peak at ``prefill_matmul_eff`` (the
matrix products' efficiency; ``fp8_tflops`` when the weights are 1 byte (W8A8 FP8) and the GPU gives it,
else ``bf16_tflops``: 4-bit weight-only quantisation (W4A16, AWQ/GPTQ) dequantises to BF16 and multiplies
at the BF16 rate, at ``prefill_w4a16_eff`` of it) plus the memory traffic that goes with it at the GPU's
``hbm_tbps``, sized so that a GPU of the reference balance (the H100 SXM: 989.4 TFLOPS over 3.35 TB/s)
runs the whole prefill at ``prefill_mfu`` of its peak. The second term is what makes a GPU's achieved
fraction of peak depend on its balance ``peak / bandwidth``: 57% on an H100 SXM (295 FLOP/B), 76% on
the bandwidth-rich, compute-capped H20 (37 FLOP/B), as the published prefills show (README "Roofline
against published prefills"); plus a fixed cost per request ``prefill_request_ms`` and per layer
``prefill_layer_ms``.

- linear layers (projections, FFN/experts): ``2 · (active_params - embedding - LM head) · N`` FLOPs
  -> ``t_ffn0_ms`` (:func:`embedding_params_b`: the embedding is a lookup and the LM head runs on the
  last position only); on ``tp > 1`` GPUs two tensor-parallel all-reduces per layer
  (:func:`tp_all_reduce_ms`). One stated assumption for MoE models: the experts are sharded by tensor
  parallelism, vLLM's default (vllm-project/vllm vllm/config/parallel.py, ``enable_expert_parallel: bool =
  False``, "Use expert parallelism instead of tensor parallelism for MoE layers"): every GPU holds
  ``1/tp`` of every expert and computes every routed row for its slice, so the MoE layer ends in an
  all-reduce like a dense MLP (no all-to-all: :func:`moe_all_to_all_ms` is the expert-parallel
  alternative, not used) and its routed activations are read and written on every GPU
  (:func:`moe_activation_ms`)
- causal attention: ``L · heads · (d_qk + d_v) · N²`` FLOPs (QKᵀ and AV over the causal
  triangle, ``N²/2`` pairs each, 2 FLOPs per multiply-add), written ``2 · L · heads · width · N²``
  with ``width = (d_qk + d_v) / 2``: ``head_dim`` for GQA. MLA prefills in the *non-absorbed*
  (multi-head) form, the "compute friendly approach" vLLM uses for prefill (vllm-project/vllm
  vllm/v1/attention/backends/mla/common.py, module docstring): keys ``qk_nope + qk_rope`` wide
  (``head_dim``, 192 for DeepSeek-V3/R1), values ``v_head_dim`` (128), so ``width = 160``; the
  absorbed form (``mla_kv_dim`` 576 / latent 512) is the decode path and would count 3.4x the FLOPs.
  -> ``t_attn0_ms``.
- ``t_fixed_ms`` = ``prefill_request_ms + prefill_layer_ms x layers`` + :func:`weight_read_ms`
  (+ a MoE's padding rows, :func:`moe_pad_flops`): the cost of a forward pass that does not grow with
  its tokens (per request: HTTP, tokenisation, scheduling and the first sampling step; per layer: the
  launches of an eager prefill; together the intercept of published concurrency-1 TTFT sweeps, their
  defaults the minimax over them, README) and one read of every weight.
- a MoE adds the routed activations' memory traffic (:func:`moe_activation_ms`).

Decode: each of the ``osl`` steps reads the weights once (per GPU ``weights/tp``; for MoE at
most ``batch · active`` parameters distinct, capped at all parameters) and every running
request's KV (``batch · (isl + osl/2) · S`` on average), at ``decode_mbu`` of ``hbm_tbps``;
the per-request chip time is that over ``batch`` (amortised, as the model's times are).
"""

from __future__ import annotations

import numpy as np

from planner.equations.constants import C, N
from planner.equations.kvhit import excel_twin
from planner.core.refs import setting_name


def flops_linear(active_params_b, isl):
    """Linear-layer FLOPs of a prefill at 0 hit.

    Parameters
    ----------
    active_params_b : numeric, parameters active per token [1e9]
    isl : numeric, input length [tokens]

    Returns
    -------
    numeric, FLOPs [FLOP]
    """
    return 2.0 * np.asarray(active_params_b, dtype=float) * C.PARAMS_PER_B * isl


@excel_twin(flops_linear)
def _(active_params_b, isl):
    return f"2*{active_params_b}*{N.PARAMS_PER_B}*{isl}"


def flops_attention(layers, heads, width, isl):
    """Causal self-attention FLOPs of a prefill at 0 hit: ``2·L·heads·width·N²``.

    Parameters
    ----------
    layers : numeric, transformer layers L [count]
    heads : numeric, query heads [count]
    width : numeric, head_dim (GQA) or mla_kv_dim (MLA) [count]
    isl : numeric, input length N [tokens]

    Returns
    -------
    numeric, FLOPs [FLOP]
    """
    return 2.0 * np.asarray(layers, dtype=float) * heads * width * np.asarray(isl, dtype=float) ** 2


@excel_twin(flops_attention)
def _(layers, heads, width, isl):
    return f"2*{layers}*{heads}*{width}*{isl}^2"


def flops_ms(flops, tp, peak_tflops, mfu):
    """Time of ``flops`` on ``tp`` GPUs at ``mfu`` of ``peak_tflops`` each [ms]."""
    return np.asarray(flops, dtype=float) / (tp * peak_tflops * 1e12 * mfu) * C.MS_PER_S


@excel_twin(flops_ms)
def _(flops, tp, peak_tflops, mfu):
    return f"{flops}/({tp}*{peak_tflops}*1E12*{mfu})*{N.MS_PER_S}"


# Defaults of the Settings the additive roofline uses (planner/core/schema.py SETTING_KEYS holds the
# same numbers; tests/test_roofline_published.py checks they agree). Derivations in the README
# section "Roofline against published prefills"; chosen on the shaping and held-out rows of
# tests/data/published_prefill.csv, never on its new rows.
PREFILL_MFU = 0.40           # the whole prefill's fraction of peak on the reference GPU, chosen with the two
#                              fixed costs below by one minimax rule (README "Roofline against published
#                              prefills"; was 0.57, fitted by least squares on three dense sweeps)
PREFILL_MATMUL_EFF = 0.80    # matrix products at 80% of the dense peak: the Maximum Achievable Matmul
#                              FLOPS of an H100 SXM, 792.1 of 989 TFLOPS BF16 = 80.1% (A100 SXM 85.9%),
#                              stas00/ml-engineering compute/accelerator/README.md, MAMF table
# The fixed cost of a prefill, ``prefill_request_ms + prefill_layer_ms x layers`` (README "Roofline against
# published prefills"), and prefill_mfu, chosen together by one rule over EVERY published point of
# tests/data/published_prefill.csv in the sets shaping and heldout (55 points, 4 engines: vLLM with and
# without the UCM connector, SGLang, TensorRT-LLM in NVIDIA NIM; cold by their harnesses: UCM's "Full
# Compute" runs with the HBM prefix cache disabled, NIM's KV cache reuse is off unless
# NIM_ENABLE_KV_CACHE_REUSE=1; tenstorrent's sweeps, whose means include a cached repeat, are the set
# biased and chose nothing since trust5: with them the rule gave 0.41 and 0.16 ms): the triple on a
# grid (0.01, 1 ms, 0.01 ms) whose largest |log(roofline / measured)| is within 1% of the least, and of those the least
# root-mean-square log error (tests/test_roofline_published.py recomputes it). The published intercepts
# grow with the model's depth on TensorRT-LLM (NIM Llama-3-8B, 32 layers: 6-11 ms; Llama-3-70B, 80
# layers: 18-30 ms, the weight read included) and are larger on vLLM (QwQ-32B and DeepSeek-R1 with the UCM
# connector: 96 ms): a per-request constant fitted on the vLLM sweeps alone (32 ms) put the 200-token NIM
# points at up to 4.3x; per layer, as here, the worst point over all 55 is 1.91x.
PREFILL_LAYER_MS = 0.15      # fixed cost per layer [ms] (launches, synchronisation, all-reduce latency)
PREFILL_REQUEST_MS = 0.0     # fixed cost per request [ms] (HTTP, tokenisation, scheduling; 0 by the rule)
W4A16_EFF = 0.6              # W4A16 matrix products at 60% of the BF16 rate once compute-bound:
#                              Marlin (vLLM's W4A16 kernel, also its MoE kernel) at 2048-4000 tokens
#                              ran at 0.60-0.61x torch FP16 (vllm-project/vllm PR #2497, comment
#                              2024-01-24); beyond batch 64 it repeats its batch-64 kernel
#                              (IST-DASLab/marlin issue #2, maintainer comment 2024-01-18)
# The reference balance: the H100 SXM of the GPU catalog (dense BF16 peak [TFLOP/s], HBM [TB/s]), the
# GPU the former prefill_mfu (0.45 of peak for the whole prefill) was quoted for.
REF_PEAK_TFLOPS = 989.4
REF_HBM_TBPS = 3.35


def prefill_part_ms(flops, tp, peak_tflops, mfu, matmul_eff, hbm_tbps, gemm_factor=1.0):
    """Additive roofline time of ``flops`` of a prefill on ``tp`` GPUs [ms].

    ``t = flops / tp x (1 / (peak x e x g) + (1/mfu - 1/e) x ref_hbm / (ref_peak x hbm))`` with
    ``e = max(matmul_eff, mfu)``: the matrix products at ``e`` of the peak (times ``gemm_factor``
    ``g``, W4A16's), plus the memory traffic that goes with them (activations, norms, softmax, GEMM
    tiles re-read: ``(1/mfu - 1/e) / (ref_peak / ref_hbm)`` bytes per FLOP) at the HBM bandwidth, not
    overlapped. Sized so that on a GPU of the reference balance (``REF_PEAK_TFLOPS`` over
    ``REF_HBM_TBPS``, the H100 SXM) and ``g = 1`` the whole part runs at ``mfu`` of the peak. On a GPU
    whose peak is small against its bandwidth (H20: 148 TFLOPS over 4.0 TB/s) the first term dominates
    and the part runs near ``e`` of its peak.

    Parameters
    ----------
    flops : numeric, FLOPs of the part [FLOP]
    tp : numeric, GPUs sharing them [count]
    peak_tflops : numeric, dense peak per GPU [TFLOP/s]
    mfu : numeric, fraction of the peak the whole part reaches on the reference GPU [fraction]
    matmul_eff : numeric, fraction of the peak the matrix products reach [fraction]
    hbm_tbps : numeric, HBM bandwidth per GPU [TB/s]
    gemm_factor : numeric, the matrix products' rate relative to BF16 (W4A16: prefill_w4a16_eff) [fraction]

    Returns
    -------
    numeric, time [ms]
    """
    f = np.asarray(flops, dtype=float)
    e = np.maximum(matmul_eff, mfu)
    mem = (1.0 / mfu - 1.0 / e) * REF_HBM_TBPS / (REF_PEAK_TFLOPS * 1e12 * hbm_tbps)
    return f / tp * (1.0 / (peak_tflops * 1e12 * e * gemm_factor) + mem) * C.MS_PER_S


@excel_twin(prefill_part_ms)
def _(flops, tp, peak_tflops, mfu, matmul_eff, hbm_tbps, gemm_factor="1"):
    e = f"MAX({matmul_eff},{mfu})"
    g = "" if str(gemm_factor) == "1" else f"*{gemm_factor}"
    return (f"{flops}/{tp}*(1/({peak_tflops}*1E12*{e}{g})+(1/{mfu}-1/{e})*{REF_HBM_TBPS!r}/({REF_PEAK_TFLOPS!r}*1E12*"
            f"{hbm_tbps}))*{N.MS_PER_S}")


def decode_ms(osl, batch, isl, s_kv, params_b, active_params_b, weight_bytes, tp, hbm_tbps, mbu):
    """Memory-bandwidth roofline of decode: chip time per request [ms].

    Parameters
    ----------
    osl : numeric, output tokens [tokens]
    batch : numeric, concurrent requests [count]
    isl : numeric, input length [tokens]
    s_kv : numeric, KV bytes per token per GPU [B]
    params_b, active_params_b : numeric, total / active parameters [1e9]
    weight_bytes : numeric, bytes per weight [B]
    tp : numeric, GPUs per instance [count]
    hbm_tbps : numeric, HBM bandwidth per GPU [TB/s]
    mbu : numeric, achieved fraction of HBM bandwidth [fraction]

    Returns
    -------
    numeric, decode chip time per request [ms]
    """
    params_read = np.minimum(np.asarray(params_b, dtype=float), batch * np.asarray(active_params_b, dtype=float))
    weights = params_read * C.PARAMS_PER_B * weight_bytes / tp
    kv = batch * (isl + np.asarray(osl, dtype=float) / 2) * s_kv
    step_ms = (weights + kv) / (hbm_tbps * 1e12 * mbu) * C.MS_PER_S
    return osl * step_ms / batch


@excel_twin(decode_ms)
def _(osl, batch, isl, s_kv, params_b, active_params_b, weight_bytes, tp, hbm_tbps, mbu):
    weights = f"MIN({params_b},{batch}*{active_params_b})*{N.PARAMS_PER_B}*{weight_bytes}/{tp}"
    kv = f"{batch}*({isl}+{osl}/2)*{s_kv}"
    return f"{osl}*(({weights})+({kv}))/({hbm_tbps}*1E12*{mbu})*{N.MS_PER_S}/{batch}"


def _num(rec: dict, name: str) -> float | None:
    v = rec.get(name)
    return None if v is None else float(v)


# NVLink bandwidth per GPU and direction used by the expert-parallel term [GB/s]: NVLink 4 of
# H100/H200 SXM, 900 GB/s bidirectional = 450 GB/s each way (NVIDIA H100 Tensor Core GPU datasheet,
# "NVLink: 900GB/s"); the GPU catalog has no NVLink column, so one figure serves every GPU.
NVLINK_GBPS = 450.0
ACT_BYTES = 2.0  # bytes per activation element moved by the all-to-all (BF16)


def embedding_params_b(vocab_size, hidden_size, tied: bool = False):
    """Parameters of the input embedding and the LM head [1e9]: ``vocab x hidden`` each (once when tied).

    Neither is a per-token matrix product of the prefill: the embedding is a table lookup and the LM
    head runs on the last position only (vLLM computes logits for the sampled positions), so both
    are left out of the per-token FLOPs (``2 x params x N`` would count them for every token:
    14% of Qwen2.5-7B, 2 x 152,064 x 3,584 = 1.09e9 of 7.62e9)."""
    return (1.0 if tied else 2.0) * np.asarray(vocab_size, dtype=float) * hidden_size / C.PARAMS_PER_B


def moe_all_to_all_ms(isl, moe_layers, experts_per_token, hidden_size, tp, link_gbps=NVLINK_GBPS):
    """Expert-parallel communication of a MoE prefill over ``tp`` GPUs [ms].

    Not part of :func:`estimate_row`, which shards the experts by tensor parallelism (vLLM's default):
    the alternative's cost, for a deployment run with ``--enable-expert-parallel``.

    Each token's hidden state (BF16, ``ACT_BYTES`` per element) is sent to each of its
    ``experts_per_token`` experts and the result sent back (dispatch + combine), in every MoE layer;
    with the experts spread evenly, ``(tp - 1) / tp`` of those copies leave their GPU, and the
    traffic is shared by the ``tp`` GPUs' links at ``link_gbps`` each (no overlap with compute
    assumed)::

        t = N x L_moe x 2 x k x hidden x ACT_BYTES x (tp - 1) / tp / tp / link

    Parameters
    ----------
    isl : numeric, tokens computed N [tokens]
    moe_layers : numeric, layers with routed experts L_moe [count]
    experts_per_token : numeric, k [count]
    hidden_size : numeric, model width [count]
    tp : numeric, GPUs the experts are spread over [count]
    link_gbps : numeric, GPU-to-GPU bandwidth per GPU and direction [GB/s]

    Returns
    -------
    numeric, time [ms]
    """
    tp = np.asarray(tp, dtype=float)
    bytes_total = (np.asarray(isl, dtype=float) * moe_layers * 2 * experts_per_token * hidden_size * ACT_BYTES
                   * (tp - 1) / tp)
    return bytes_total / tp / (link_gbps * 1e9) * C.MS_PER_S


def moe_activation_ms(isl, moe_layers, experts_per_token, hidden_size, moe_intermediate, tp, hbm_tbps):
    """Memory traffic of the routed activations of a MoE prefill, per GPU [ms].

    vLLM's fused MoE (vllm/model_executor/layers/fused_moe/fused_moe.py, ``fused_experts``) works on
    ``N x k`` routed rows: the first grouped GEMM reads each token's hidden state once per expert,
    the second writes ``intermediate_cache3`` (``N x k x hidden``), and ``moe_sum`` reads it back:
    ``3 x k x hidden`` BF16 values per token and MoE layer, plus the gate/up output, its activation
    and the down input, ``6 x k x moe_intermediate / tp``. With the experts sharded by tensor
    parallelism (vLLM's default; ``--enable-expert-parallel`` is off) every GPU does this for every
    token, so the hidden-sized part does not shrink with ``tp``. Not proportional to the FLOPs (the
    hidden-sized traffic per FLOP grows as ``k x hidden / (k x hidden x moe_intermediate / tp)``),
    hence a term of its own::

        t = N x L_moe x k x (3 hidden + 6 moe_intermediate / tp) x ACT_BYTES / hbm

    Parameters
    ----------
    isl : numeric, tokens computed N [tokens]
    moe_layers : numeric, layers with routed experts L_moe [count]
    experts_per_token : numeric, k [count]
    hidden_size : numeric, model width [count]
    moe_intermediate : numeric, width of one expert's FFN [count]
    tp : numeric, GPUs the experts are sharded over [count]
    hbm_tbps : numeric, HBM bandwidth per GPU [TB/s]

    Returns
    -------
    numeric, time [ms]
    """
    per_token = (np.asarray(moe_layers, dtype=float) * experts_per_token
                 * (3.0 * hidden_size + 6.0 * np.asarray(moe_intermediate, dtype=float) / tp) * ACT_BYTES)
    return np.asarray(isl, dtype=float) * per_token / (hbm_tbps * 1e12) * C.MS_PER_S


# vLLM's fused MoE kernels pick their row block by this rule (vllm-project/vllm
# vllm/model_executor/layers/fused_moe/fused_marlin_moe.py, ``fused_marlin_moe``: "for block_size_m in
# [8, 16, 32, 48, 64]: if M * topk / E / block_size_m < 0.9: break"), then ``moe_align_block_size`` pads
# every expert's rows to a multiple of the block.
MOE_BLOCKS = (8, 16, 32, 48, 64)


def moe_block_m(isl, experts, experts_per_token):
    """Row block of vLLM's fused MoE kernel at ``isl`` tokens [rows]: the first of ``MOE_BLOCKS``
    with ``isl x k / E / block < 0.9``, else the last (64).

    Parameters
    ----------
    isl : numeric, tokens computed N [tokens]
    experts : numeric, routed experts E [count]
    experts_per_token : numeric, k [count]

    Returns
    -------
    numeric, block [rows]
    """
    m = np.asarray(isl, dtype=float) * experts_per_token / experts
    out = np.full(np.shape(m), float(MOE_BLOCKS[-1]))
    for b in reversed(MOE_BLOCKS[:-1]):
        out = np.where(m / b < 0.9, float(b), out)
    return out if np.ndim(out) else float(out)


@excel_twin(moe_block_m)
def _(isl, experts, experts_per_token):
    m = f"{isl}*{experts_per_token}/{experts}"
    text = repr(float(MOE_BLOCKS[-1]))
    for b in reversed(MOE_BLOCKS[:-1]):
        text = f"IF({m}/{b}<0.9,{b},{text})"
    return text


def moe_pad_flops(block_m, experts, moe_layers, hidden_size, moe_intermediate):
    """FLOPs of the padding rows of a MoE prefill's routed experts, per forward pass [FLOP].

    ``moe_align_block_size`` pads each expert's routed rows up to a multiple of ``block_m``; with the
    remainder of an expert's rows spread evenly over ``[0, block_m)``, ``block_m / 2`` padding rows per
    expert on average, each computed like a real row by the gate/up and down products (``2 x 3 x hidden
    x moe_intermediate`` FLOPs), in every MoE layer::

        flops = experts x block_m / 2 x 2 x 3 x hidden x moe_intermediate x L_moe

    A cost of the pass, not of its tokens (once every expert gets a block): DeepSeek-R1 (256 experts,
    58 MoE layers, 7168 x 2048) at block 64 pads 8,192 rows, 4.185e13 FLOPs (a 4,000-token prefill routes
    32,000 real rows). Dense models have none.

    Parameters
    ----------
    block_m : numeric, the kernel's row block (:func:`moe_block_m`) [rows]
    experts : numeric, routed experts E [count]
    moe_layers : numeric, layers with routed experts L_moe [count]
    hidden_size : numeric, model width [count]
    moe_intermediate : numeric, width of one expert's FFN [count]

    Returns
    -------
    numeric, FLOPs of the whole instance [FLOP]
    """
    return (np.asarray(experts, dtype=float) * block_m / 2 * 2 * 3 * hidden_size * moe_intermediate
            * moe_layers)


@excel_twin(moe_pad_flops)
def _(block_m, experts, moe_layers, hidden_size, moe_intermediate):
    return f"{experts}*{block_m}/2*2*3*{hidden_size}*{moe_intermediate}*{moe_layers}"


def tp_all_reduce_ms(isl, all_reduces, hidden_size, tp, link_gbps=NVLINK_GBPS):
    """Tensor-parallel all-reduces of a prefill over ``tp`` GPUs [ms].

    Megatron-style tensor parallelism sums each layer's partial outputs across the ``tp`` GPUs:
    one all-reduce after attention and one after the MLP (``all_reduces = 2 x layers``; also for a MoE
    model, whose experts the estimate shards by tensor parallelism, vLLM's default). A ring all-reduce of ``N x hidden`` BF16 values sends ``2 (tp - 1) / tp`` of it
    from every GPU, at ``link_gbps`` (no overlap with compute assumed)::

        t = N x all_reduces x hidden x ACT_BYTES x 2 (tp - 1) / tp / link

    Parameters
    ----------
    isl : numeric, tokens computed N [tokens]
    all_reduces : numeric, all-reduces per forward pass [count]
    hidden_size : numeric, model width [count]
    tp : numeric, GPUs per instance [count]
    link_gbps : numeric, GPU-to-GPU bandwidth per GPU and direction [GB/s]

    Returns
    -------
    numeric, time [ms]
    """
    tp = np.asarray(tp, dtype=float)
    per_gpu = np.asarray(isl, dtype=float) * all_reduces * hidden_size * ACT_BYTES * 2 * (tp - 1) / tp
    return per_gpu / (link_gbps * 1e9) * C.MS_PER_S


def roofline_parts(model: dict, gpu: dict, raw: dict | None = None) -> dict | None:
    """What the roofline needs of a model and a GPU, or None when a size is missing.

    Keys: ``linear_params_b`` (active parameters without embedding and LM head [1e9]),
    ``layers``, ``heads``, ``width`` (head_dim; for MLA ``(head_dim + v_head_dim) / 2``, the
    non-absorbed prefill, or ``mla_kv_dim`` when the catalog lacks ``v_head_dim``), ``w4a16``
    (weights under 1 byte: the linear layers at ``prefill_w4a16_eff`` of the peak), ``peak_tflops`` (FP8 peak
    for 1-byte weights when the GPU gives it: W8A8; BF16 otherwise, also for 4-bit weight-only
    quantisation, W4A16, whose matrix products run at the activations' BF16 rate after
    dequantisation), ``moe`` (MoE layers, k, hidden for the all-to-all term, or None),
    ``embedding_left_out`` (True when the catalog gave the vocabulary size).

    ``raw`` is the model's catalog entry as shipped (:func:`planner.catalog.lookup.catalog_raw`:
    ``hidden_size``, ``vocab_size``, ``extra.tie_word_embeddings``), given by the caller so that the
    equations import nothing above ``planner.core``; None: no entry (the embedding stays in)."""

    att = model.get("attention") or "gqa"
    raw = raw or {}
    width = _num(model, "mla_kv_dim" if att == "mla" else "head_dim")
    v_head = (raw.get("extra") or {}).get("v_head_dim")
    if att == "mla" and width is not None and _num(model, "head_dim") and v_head:
        # non-absorbed MLA prefill: keys head_dim (qk_nope + qk_rope) wide, values v_head_dim
        width = (float(model["head_dim"]) + float(v_head)) / 2
    heads = _num(model, "heads")
    active = _num(model, "active_params_b") or _num(model, "params_b")
    wbytes = float(model.get("weight_bytes") or 2)
    fp8 = _num(gpu, "fp8_tflops")
    peak = fp8 if wbytes == 1 and fp8 is not None else _num(gpu, "bf16_tflops")
    if None in (width, heads, active, peak) or model.get("layers") is None:
        return None
    hidden = _num(model, "hidden_size") or raw.get("hidden_size")
    vocab = raw.get("vocab_size")
    emb = 0.0
    if vocab and hidden:
        emb = float(embedding_params_b(vocab, hidden, bool((raw.get("extra") or {}).get("tie_word_embeddings"))))
    linear = active - emb if active > emb else active
    moe = None
    k = _num(model, "experts_per_token")
    if _num(model, "experts") and k and hidden:
        first_dense = float((raw.get("extra") or {}).get("first_dense_layers") or 0)
        inter = (raw.get("extra") or {}).get("moe_intermediate_size") or _num(model, "intermediate_size")
        moe = {"layers": float(model["layers"]) - first_dense, "k": k, "hidden": float(hidden),
               "inter": float(inter) if inter else 0.0, "experts": float(model["experts"])}
    return {"linear_params_b": linear, "layers": float(model["layers"]), "heads": heads, "width": width,
            "peak_tflops": peak, "moe": moe, "hidden": float(hidden) if hidden else None,
            "embedding_left_out": emb > 0 and linear < active, "w4a16": wbytes < 1}


def weight_read_ms(params_b, weight_bytes, tp, hbm_tbps):
    """One forward pass reads every weight once: ``params x bytes / tp`` at the HBM bandwidth [ms].

    Part of an estimated prefill's ``t_fixed_ms``: it does not shrink with the tokens computed (a
    prefill at any hit still runs one forward pass), and a MoE prefill of more tokens than
    ``experts / k`` reaches every expert, so all parameters count (DeepSeek-R1-AWQ on 8x H100:
    671e9 x 0.5 B / 8 / 3.35 TB/s = 12.5 ms).

    Parameters
    ----------
    params_b : numeric, all parameters [1e9]
    weight_bytes : numeric, bytes per weight [B]
    tp : numeric, GPUs sharing the weights [count]
    hbm_tbps : numeric, HBM bandwidth per GPU [TB/s]

    Returns
    -------
    numeric, time [ms]
    """
    return np.asarray(params_b, dtype=float) * C.PARAMS_PER_B * weight_bytes / tp / (hbm_tbps * 1e12) * C.MS_PER_S


@excel_twin(weight_read_ms)
def _(params_b, weight_bytes, tp, hbm_tbps):
    return f"{params_b}*{N.PARAMS_PER_B}*{weight_bytes}/{tp}/({hbm_tbps}*1E12)*{N.MS_PER_S}"


def prefill_settings(settings: dict | None = None) -> dict:
    """The additive roofline's Settings besides ``prefill_mfu`` (``prefill_matmul_eff``,
    ``prefill_layer_ms``, ``prefill_w4a16_eff``) from ``settings``, their defaults where absent."""
    st = settings or {}
    return {"prefill_matmul_eff": float(st.get("prefill_matmul_eff", PREFILL_MATMUL_EFF)),
            "prefill_layer_ms": float(st.get("prefill_layer_ms", PREFILL_LAYER_MS)),
            "prefill_request_ms": float(st.get("prefill_request_ms", PREFILL_REQUEST_MS)),
            "prefill_w4a16_eff": float(st.get("prefill_w4a16_eff", W4A16_EFF))}


def estimate_row(wl: dict, model: dict, gpu: dict, s_kv: float, mfu: float, mbu: float,
                 raw: dict | None = None, settings: dict | None = None) -> tuple[dict, list[str]]:
    """Estimated ``t_attn0_ms``, ``t_ffn0_ms``, ``t_fixed_ms``, ``t_decode_ms`` of one workload.

    Times by :func:`prefill_part_ms` at ``mfu`` and ``settings``' ``prefill_matmul_eff`` (the linear
    layers of 4-bit weights at ``prefill_w4a16_eff`` of the matrix rate); ``t_fixed_ms`` is
    ``prefill_layer_ms`` (:func:`prefill_settings`: defaults where ``settings`` lacks them).
    ``t_ffn0_ms`` holds the linear layers (without embedding and LM head) and, on more than one
    GPU, the tensor-parallel all-reduces (:func:`tp_all_reduce_ms`) and for a MoE model the
    expert-parallel all-to-all (:func:`moe_all_to_all_ms`): all scale with the tokens computed,
    ``1 - h``.

    Returns ``(values, missing)``: ``missing`` names the catalog fields the estimate needs and
    the row lacks (then ``values`` is empty)."""
    att = model.get("attention") or "gqa"
    parts = roofline_parts(model, gpu, raw)
    if parts is None:
        width = _num(model, "mla_kv_dim" if att == "mla" else "head_dim")
        active = _num(model, "active_params_b") or _num(model, "params_b")
        peak = _num(gpu, "bf16_tflops")
        missing = [n for n, v in (("Models.heads", _num(model, "heads")), ("Models.active_params_b or params_b", active),
                                  (f"Models.{'mla_kv_dim' if att == 'mla' else 'head_dim'}", width),
                                  ("GPUs.bf16_tflops", peak)) if v is None]
        return {}, missing or ["Models.layers"]
    hbm = _num(gpu, "hbm_tbps")
    if hbm is None:
        return {}, ["GPUs.hbm_tbps"]
    st = prefill_settings(settings)
    me = st["prefill_matmul_eff"]
    g = st["prefill_w4a16_eff"] if parts["w4a16"] else 1.0
    tp, isl = float(wl["tp"]), float(wl["isl"])
    ffn = float(prefill_part_ms(flops_linear(parts["linear_params_b"], isl), tp, parts["peak_tflops"], mfu, me,
                                hbm, g))
    if parts["moe"] is not None:
        mo = parts["moe"]
        ffn += float(moe_activation_ms(isl, mo["layers"], mo["k"], mo["hidden"], mo["inter"], tp, hbm))
    if parts["hidden"] and tp > 1:
        # two all-reduces per layer (after attention, after the MLP or the TP-sharded experts)
        ffn += float(tp_all_reduce_ms(isl, 2 * parts["layers"], parts["hidden"], tp))
    pad_ms = 0.0
    if parts["moe"] is not None:
        mo = parts["moe"]
        pad_ms = float(prefill_part_ms(moe_pad_flops(moe_block_m(isl, mo["experts"], mo["k"]), mo["experts"],
                                                     mo["layers"], mo["hidden"], mo["inter"]),
                                       tp, parts["peak_tflops"], mfu, me, hbm, g))
    out = {"t_attn0_ms": float(prefill_part_ms(flops_attention(parts["layers"], parts["heads"], parts["width"], isl),
                                              tp, parts["peak_tflops"], mfu, me, hbm)),
           "t_ffn0_ms": ffn,
           "t_fixed_ms": st["prefill_request_ms"] + st["prefill_layer_ms"] * parts["layers"] + float(weight_read_ms(
               _num(model, "params_b") or _num(model, "active_params_b"), float(model.get("weight_bytes") or 2), tp,
               hbm)) + pad_ms}
    dec, _missing = estimate_decode(wl, model, gpu, s_kv, mbu)
    out.update(dec)
    return out, []


def estimate_decode(wl: dict, model: dict, gpu: dict, s_kv: float, mbu: float,
                    batch: float | None = None) -> tuple[dict, list[str]]:
    """Estimated ``t_decode_ms`` of one workload (the memory-bandwidth roofline of :func:`decode_ms`)
    at ``batch`` (default: the row's ``batch``, blank 1).

    Returns ``({"t_decode_ms": ms}, [])``, or ``({}, missing)`` naming the columns it lacks
    (``GPUs.hbm_tbps``, ``Models.params_b``)."""
    hbm = _num(gpu, "hbm_tbps")
    params = _num(model, "params_b")
    missing = [n for n, v in (("GPUs.hbm_tbps", hbm), ("Models.params_b", params)) if v is None]
    if missing:
        return {}, missing
    active = _num(model, "active_params_b") or params
    wbytes = float(model.get("weight_bytes") or 2)
    b = float(batch if batch is not None else (wl.get("batch") or 1))
    return {"t_decode_ms": float(decode_ms(float(wl["osl"]), b, float(wl["isl"]), s_kv, params, active, wbytes,
                                           float(wl["tp"]), hbm, mbu))}, []


def estimate_formulas(r, linear_params_b: float, comm_ms: float, width: float | None = None,
                      w4a16: bool = False, moe_tb: float = 0.0, moe_pad: tuple | None = None) -> dict[str, str]:
    """Excel twins of :func:`estimate_row`'s times for one Resolved row, live over the Settings
    (``s_prefill_mfu``, ``s_decode_mbu``) and the Models/GPUs cells they use. ``r(sheet, name)``
    gives this row's cell (``Resolved``/``Results``) or looked-up value (``Models``/``GPUs``).

    The same choices as the Python: MLA width ``mla_kv_dim``, else ``head_dim``; active
    parameters, else ``params_b``; the FP8 peak only for 1-byte weights when the GPU gives it,
    else BF16 (W4A16 computes at the BF16 peak). Two numbers of the row enter as constants, since
    no Setting moves them: ``linear_params_b`` (the active parameters without embedding and LM
    head, from the catalog's vocabulary size: :func:`roofline_parts`) and ``comm_ms`` (the
    tensor-parallel all-reduce and expert-parallel all-to-all time, link-bound); ``width`` (given:
    the MLA row's non-absorbed width from the catalog's ``v_head_dim``, a constant; None: the
    formula's own choice) and ``w4a16`` (the linear layers at ``s_prefill_w4a16_eff``) likewise.
    ``moe_tb``: a MoE row's routed-activation traffic per GPU [TB] (:func:`moe_activation_ms`), over
    the GPU's ``hbm_tbps``. Over ``s_prefill_matmul_eff`` and the GPU's ``hbm_tbps``
    (:func:`prefill_part_ms`); ``t_fixed_ms`` is ``s_prefill_request_ms + s_prefill_layer_ms x layers``
    plus :func:`weight_read_ms` and, for a MoE row, its routed experts' padding rows (``moe_pad``:
    experts, k, MoE layers, hidden, expert width, constants of the catalog; the block from the row's
    ``isl`` by :func:`moe_block_m`, the FLOPs by :func:`moe_pad_flops` at the linear layers' rate)."""
    if width is None:
        width = f'IF({r("Resolved", "attention")}="mla",{r("Resolved", "mla_kv_dim")},{r("Resolved", "head_dim")})'
    else:
        width = repr(float(width))
    act = r("Models", "active_params_b")
    active = f"IF(ISNUMBER({act}),{act},{r('Resolved', 'params_b')})"
    fp8, wb = r("GPUs", "fp8_tflops"), r("Resolved", "weight_bytes")
    peak = f"IF(AND({wb}=1,ISNUMBER({fp8})),{fp8},{r('GPUs', 'bf16_tflops')})"
    tp, isl = r("Resolved", "tp"), r("Resolved", "isl")
    mfu, mbu = setting_name("prefill_mfu"), setting_name("decode_mbu")
    hbm, me = r("GPUs", "hbm_tbps"), setting_name("prefill_matmul_eff")
    g = setting_name("prefill_w4a16_eff") if w4a16 else "1"
    ffn = prefill_part_ms.xl(flops_linear.xl(repr(float(linear_params_b)), isl), tp, peak, mfu, me, hbm, g)
    pad = ""
    if moe_pad is not None:
        e, k, lm, hid, inter = (repr(float(x)) for x in moe_pad)
        pad = "+" + prefill_part_ms.xl(moe_pad_flops.xl(moe_block_m.xl(isl, e, k), e, lm, hid, inter), tp, peak, mfu,
                                       me, hbm, g)
    return {
        "t_attn0_ms": prefill_part_ms.xl(flops_attention.xl(r("Resolved", "layers"), r("Models", "heads"), width,
                                                            isl), tp, peak, mfu, me, hbm),
        "t_ffn0_ms": ffn + (f"+{float(comm_ms)!r}" if comm_ms else "")
                     + (f"+{float(moe_tb)!r}/{hbm}*{N.MS_PER_S}" if moe_tb else ""),
        "t_fixed_ms": (f"{setting_name('prefill_request_ms')}+{setting_name('prefill_layer_ms')}*{r('Resolved', 'layers')}+"
                       + weight_read_ms.xl(r("Resolved", "params_b"), wb, tp, hbm) + pad),
        "t_decode_ms": decode_ms.xl(r("Resolved", "osl"), r("Resolved", "batch"), isl,
                                    r("Results", "kv_bytes_per_token_gpu"), r("Resolved", "params_b"), active, wb,
                                    tp, r("GPUs", "hbm_tbps"), mbu),
    }


def live_estimate(wl: dict, model: dict, gpu: dict, s_kv: float, mfu: float, mbu: float,
                  raw: dict | None = None, settings: dict | None = None) -> tuple | None:
    """What :func:`estimate_formulas` computes for a row at these Settings: ``(times, linear_params_b,
    comm_ms, mla_width, w4a16, moe_tb, moe_pad)``, or None when the roofline lacks a size. The writer makes a Resolved cell live only
    where these times equal the plan's (a scaled or calibrated value stays a value)."""
    parts = roofline_parts(model, gpu, raw)
    if parts is None:
        return None
    vals, missing = estimate_row(wl, model, gpu, s_kv, mfu, mbu, raw, settings)
    if missing:
        return None
    st = prefill_settings(settings)
    tp, isl = float(wl["tp"]), float(wl["isl"])
    g = st["prefill_w4a16_eff"] if parts["w4a16"] else 1.0
    linear = float(prefill_part_ms(flops_linear(parts["linear_params_b"], isl), tp, parts["peak_tflops"], mfu,
                                   st["prefill_matmul_eff"], float(gpu["hbm_tbps"]), g))
    mla_width = parts["width"] if (model.get("attention") or "gqa") == "mla" else None
    moe_tb, moe_pad = 0.0, None
    if parts["moe"] is not None:
        mo = parts["moe"]  # traffic [TB] = time [ms] x hbm [TB/s] / 1000
        moe_tb = float(moe_activation_ms(isl, mo["layers"], mo["k"], mo["hidden"], mo["inter"], tp, 1.0)) / C.MS_PER_S
        moe_pad = (mo["experts"], mo["k"], mo["layers"], mo["hidden"], mo["inter"])
    moe_ms = moe_tb / float(gpu["hbm_tbps"]) * C.MS_PER_S
    return (vals, float(parts["linear_params_b"]), vals["t_ffn0_ms"] - linear - moe_ms, mla_width, parts["w4a16"],
            moe_tb, moe_pad)
