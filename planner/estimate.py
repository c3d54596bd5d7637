"""Roofline estimate of the prefill breakdown and decode time (README "Where do my numbers come from").

Used for a workload with neither a typed breakdown nor measurements of its deployment.

Prefill at 0 hit over ``N = isl`` tokens, on ``tp`` GPUs at ``prefill_mfu`` of the dense peak
(``bf16_tflops``, or ``fp8_tflops`` when the weights are 1 byte or less and the GPU gives it):

- linear layers (projections, FFN/experts): ``2 · active_params · N`` FLOPs -> ``t_ffn0_ms``
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

from .constants import C


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


def flops_ms(flops, tp, peak_tflops, mfu):
    """Time of ``flops`` on ``tp`` GPUs at ``mfu`` of ``peak_tflops`` each [ms]."""
    return np.asarray(flops, dtype=float) / (tp * peak_tflops * 1e12 * mfu) * C.MS_PER_S


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


def _num(rec: dict, name: str) -> float | None:
    v = rec.get(name)
    return None if v is None else float(v)


def estimate_row(wl: dict, model: dict, gpu: dict, s_kv: float, mfu: float, mbu: float) -> tuple[dict, list[str]]:
    """Estimated ``t_attn0_ms``, ``t_ffn0_ms``, ``t_fixed_ms``, ``t_decode_ms`` of one workload.

    Returns ``(values, missing)``: ``missing`` names the catalog fields the estimate needs and
    the row lacks (then ``values`` is empty)."""
    att = model.get("attention") or "gqa"
    width = _num(model, "mla_kv_dim" if att == "mla" else "head_dim")
    heads = _num(model, "heads")
    active = _num(model, "active_params_b") or _num(model, "params_b")
    wbytes = float(model.get("weight_bytes") or 2)
    peak = _num(gpu, "fp8_tflops") if wbytes <= 1 and gpu.get("fp8_tflops") is not None else _num(gpu, "bf16_tflops")
    missing = [n for n, v in (("Models.heads", heads), ("Models.active_params_b or params_b", active),
                              (f"Models.{'mla_kv_dim' if att == 'mla' else 'head_dim'}", width),
                              ("GPUs.bf16_tflops", peak)) if v is None]
    if missing:
        return {}, missing
    tp, isl = float(wl["tp"]), float(wl["isl"])
    out = {"t_attn0_ms": float(flops_ms(flops_attention(float(model["layers"]), heads, width, isl), tp, peak, mfu)),
           "t_ffn0_ms": float(flops_ms(flops_linear(active, isl), tp, peak, mfu)),
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
