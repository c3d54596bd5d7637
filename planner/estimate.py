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

from .constants import C, N
from .model import excel_twin


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
    return f"({flops})/({tp}*{peak_tflops}*1E12*{mfu})*{N.MS_PER_S}"


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


def estimate_formulas(r) -> dict[str, str]:
    """Excel twins of :func:`estimate_row`'s times for one Resolved row, live over the Settings
    (``s_prefill_mfu``, ``s_decode_mbu``) and the Models/GPUs cells they use. ``r(sheet, name)``
    gives this row's cell (``Resolved``/``Results``) or looked-up value (``Models``/``GPUs``).
    The same choices as the Python: MLA width ``mla_kv_dim``, else ``head_dim``; active
    parameters, else ``params_b``; the FP8 peak when the weights are 1 byte or less and the GPU
    gives it, else BF16."""
    width = f'IF({r("Resolved", "attention")}="mla",{r("Resolved", "mla_kv_dim")},{r("Resolved", "head_dim")})'
    act = r("Models", "active_params_b")
    active = f"IF(ISNUMBER({act}),{act},{r('Resolved', 'params_b')})"
    fp8, wb = r("GPUs", "fp8_tflops"), r("Resolved", "weight_bytes")
    peak = f"IF(AND({wb}<=1,ISNUMBER({fp8})),{fp8},{r('GPUs', 'bf16_tflops')})"
    tp, isl = r("Resolved", "tp"), r("Resolved", "isl")
    mfu, mbu = "s_prefill_mfu", "s_decode_mbu"
    return {
        "t_attn0_ms": flops_ms.xl(flops_attention.xl(r("Resolved", "layers"), r("Models", "heads"), width, isl),
                                  tp, peak, mfu),
        "t_ffn0_ms": flops_ms.xl(flops_linear.xl(active, isl), tp, peak, mfu),
        "t_decode_ms": decode_ms.xl(r("Resolved", "osl"), r("Resolved", "batch"), isl,
                                    r("Results", "kv_bytes_per_token_gpu"), r("Resolved", "params_b"), active, wb,
                                    tp, r("GPUs", "hbm_tbps"), mbu),
    }


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
    hbm = _num(gpu, "hbm_tbps")
    params = _num(model, "params_b")
    if hbm is not None and params is not None:
        out["t_decode_ms"] = float(decode_ms(float(wl["osl"]), float(wl.get("batch") or 1), isl, s_kv, params,
                                             active, wbytes, tp, hbm, mbu))
    return out, []
