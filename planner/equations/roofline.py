"""Roofline estimate of the prefill breakdown and decode time (README "Where do my numbers come from").

Used for a workload with neither a typed breakdown nor measurements of its deployment.

Prefill at 0 hit over ``N = isl`` tokens, on ``tp`` GPUs at ``prefill_mfu`` of the dense peak
(``fp8_tflops`` when the weights are 1 byte (W8A8 FP8) and the GPU gives it, else ``bf16_tflops``:
4-bit weight-only quantisation (W4A16, AWQ/GPTQ) dequantises to BF16 and multiplies at the BF16 rate):

- linear layers (projections, FFN/experts): ``2 · (active_params - embedding - LM head) · N`` FLOPs
  -> ``t_ffn0_ms`` (:func:`embedding_params_b`: the embedding is a lookup and the LM head runs on the
  last position only); a MoE model on ``tp > 1`` GPUs adds its expert-parallel all-to-all
  (:func:`moe_all_to_all_ms`)
- causal attention: ``2 · L · heads · head_dim · N²`` FLOPs (QKᵀ and AV over the causal
  triangle, ``N²/2`` pairs each, 2 FLOPs per multiply-add, widths ``d_qk = d_v = head_dim``)
  -> ``t_attn0_ms``. MLA (absorbed form): the score width is the latent + rope width
  ``mla_kv_dim`` and the value width the latent; both taken as ``mla_kv_dim``:
  ``2 · L · heads · mla_kv_dim · N²`` (overstates the value half by rope/latent, ~6% of
  the attention FLOPs for DeepSeek-V3's 64/512).
- ``t_fixed_ms`` = 0 (an estimate has no fixed overhead to offer).

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


def tp_all_reduce_ms(isl, all_reduces, hidden_size, tp, link_gbps=NVLINK_GBPS):
    """Tensor-parallel all-reduces of a prefill over ``tp`` GPUs [ms].

    Megatron-style tensor parallelism sums each layer's partial outputs across the ``tp`` GPUs:
    one all-reduce after attention and one after the MLP (``all_reduces = 2 x layers`` for a dense
    model; a MoE model whose experts are spread by expert parallelism keeps only the attention's,
    ``layers``). A ring all-reduce of ``N x hidden`` BF16 values sends ``2 (tp - 1) / tp`` of it
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
    ``layers``, ``heads``, ``width`` (head_dim, or mla_kv_dim for MLA), ``peak_tflops`` (FP8 peak
    for 1-byte weights when the GPU gives it: W8A8; BF16 otherwise, also for 4-bit weight-only
    quantisation, W4A16, whose matrix products run at the activations' BF16 rate after
    dequantisation), ``moe`` (MoE layers, k, hidden for the all-to-all term, or None),
    ``embedding_left_out`` (True when the catalog gave the vocabulary size).

    ``raw`` is the model's catalog entry as shipped (:func:`planner.catalog.lookup.catalog_raw`:
    ``hidden_size``, ``vocab_size``, ``extra.tie_word_embeddings``), given by the caller so that the
    equations import nothing above ``planner.core``; None: no entry (the embedding stays in)."""

    att = model.get("attention") or "gqa"
    width = _num(model, "mla_kv_dim" if att == "mla" else "head_dim")
    heads = _num(model, "heads")
    active = _num(model, "active_params_b") or _num(model, "params_b")
    wbytes = float(model.get("weight_bytes") or 2)
    fp8 = _num(gpu, "fp8_tflops")
    peak = fp8 if wbytes == 1 and fp8 is not None else _num(gpu, "bf16_tflops")
    if None in (width, heads, active, peak) or model.get("layers") is None:
        return None
    raw = raw or {}
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
        moe = {"layers": float(model["layers"]) - first_dense, "k": k, "hidden": float(hidden)}
    return {"linear_params_b": linear, "layers": float(model["layers"]), "heads": heads, "width": width,
            "peak_tflops": peak, "moe": moe, "hidden": float(hidden) if hidden else None,
            "embedding_left_out": emb > 0 and linear < active}


def estimate_row(wl: dict, model: dict, gpu: dict, s_kv: float, mfu: float, mbu: float,
                 raw: dict | None = None) -> tuple[dict, list[str]]:
    """Estimated ``t_attn0_ms``, ``t_ffn0_ms``, ``t_fixed_ms``, ``t_decode_ms`` of one workload.

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
    tp, isl = float(wl["tp"]), float(wl["isl"])
    ffn = float(flops_ms(flops_linear(parts["linear_params_b"], isl), tp, parts["peak_tflops"], mfu))
    if parts["moe"] is not None and tp > 1:
        mo = parts["moe"]
        ffn += float(moe_all_to_all_ms(isl, mo["layers"], mo["k"], mo["hidden"], tp))
    if parts["hidden"] and tp > 1:
        reduces = parts["layers"] * (1 if parts["moe"] is not None else 2)
        ffn += float(tp_all_reduce_ms(isl, reduces, parts["hidden"], tp))
    out = {"t_attn0_ms": float(flops_ms(flops_attention(parts["layers"], parts["heads"], parts["width"], isl), tp,
                                        parts["peak_tflops"], mfu)),
           "t_ffn0_ms": ffn,
           "t_fixed_ms": 0.0}
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


def estimate_formulas(r, linear_params_b: float, comm_ms: float) -> dict[str, str]:
    """Excel twins of :func:`estimate_row`'s times for one Resolved row, live over the Settings
    (``s_prefill_mfu``, ``s_decode_mbu``) and the Models/GPUs cells they use. ``r(sheet, name)``
    gives this row's cell (``Resolved``/``Results``) or looked-up value (``Models``/``GPUs``).

    The same choices as the Python: MLA width ``mla_kv_dim``, else ``head_dim``; active
    parameters, else ``params_b``; the FP8 peak only for 1-byte weights when the GPU gives it,
    else BF16 (W4A16 computes at the BF16 peak). Two numbers of the row enter as constants, since
    no Setting moves them: ``linear_params_b`` (the active parameters without embedding and LM
    head, from the catalog's vocabulary size: :func:`roofline_parts`) and ``comm_ms`` (the
    tensor-parallel all-reduce and expert-parallel all-to-all time, link-bound)."""
    width = f'IF({r("Resolved", "attention")}="mla",{r("Resolved", "mla_kv_dim")},{r("Resolved", "head_dim")})'
    act = r("Models", "active_params_b")
    active = f"IF(ISNUMBER({act}),{act},{r('Resolved', 'params_b')})"
    fp8, wb = r("GPUs", "fp8_tflops"), r("Resolved", "weight_bytes")
    peak = f"IF(AND({wb}=1,ISNUMBER({fp8})),{fp8},{r('GPUs', 'bf16_tflops')})"
    tp, isl = r("Resolved", "tp"), r("Resolved", "isl")
    mfu, mbu = setting_name("prefill_mfu"), setting_name("decode_mbu")
    ffn = flops_ms.xl(flops_linear.xl(repr(float(linear_params_b)), isl), tp, peak, mfu)
    return {
        "t_attn0_ms": flops_ms.xl(flops_attention.xl(r("Resolved", "layers"), r("Models", "heads"), width, isl),
                                  tp, peak, mfu),
        "t_ffn0_ms": ffn if comm_ms == 0 else f"{ffn}+{float(comm_ms)!r}",
        "t_decode_ms": decode_ms.xl(r("Resolved", "osl"), r("Resolved", "batch"), isl,
                                    r("Results", "kv_bytes_per_token_gpu"), r("Resolved", "params_b"), active, wb,
                                    tp, r("GPUs", "hbm_tbps"), mbu),
    }


def live_estimate(wl: dict, model: dict, gpu: dict, s_kv: float, mfu: float, mbu: float,
                  raw: dict | None = None) -> tuple[dict, float, float] | None:
    """What :func:`estimate_formulas` computes for a row at these Settings: ``(times, linear_params_b,
    comm_ms)``, or None when the roofline lacks a size. The writer makes a Resolved cell live only
    where these times equal the plan's (a scaled or calibrated value stays a value)."""
    parts = roofline_parts(model, gpu, raw)
    if parts is None:
        return None
    vals, missing = estimate_row(wl, model, gpu, s_kv, mfu, mbu, raw)
    if missing:
        return None
    tp, isl = float(wl["tp"]), float(wl["isl"])
    linear = float(flops_ms(flops_linear(parts["linear_params_b"], isl), tp, parts["peak_tflops"], mfu))
    return vals, float(parts["linear_params_b"]), vals["t_ffn0_ms"] - linear
