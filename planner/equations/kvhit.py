"""The KV-hit model: every quantity as a small vectorised function beside its Excel twin.

Each quantity is a numpy function (scalars, arrays and pandas Series all work; branches
are ``np.where``) whose docstring gives the equation, every parameter with its unit in
brackets and the source. Right below it, registered with :func:`excel_twin`, sits the
builder of the same quantity's Excel formula: it takes cell references (strings such as
``"Resolved!$P5"``) for the same parameters and returns the formula text without the
leading ``=``. Keeping both together is what lets a reader check one against the other;
the tests recalculate the Excel side in LibreOffice and compare it with the Python side.

Source of every equation: ``docs/model.md`` in the repository, section 1 (the model) and
section 4 (the derived output columns).

Glossary (the names used throughout the package)
------------------------------------------------
hit : fraction of the input whose KV is already cached, h [0..1]
isl, osl : input / output length [tokens]
s_kv : KV bytes per token per GPU, S [B]
pcie_gbps : effective host-to-device bandwidth per GPU, B_pcie [GB/s = 1e9 B/s]
t_attn0, t_ffn0, t_other0 : attention / FFN / other variable prefill time at 0 hit [ms]
t_fixed : non-scaling prefill overhead [ms]
t_decode : decode chip time per request, D [ms]
alpha : overlap of KV load and compute, α [0..1]
tp : tensor-parallel size, GPUs per serving instance [count]
"""

from __future__ import annotations

import functools
import re
from typing import Callable

import numpy as np

from planner.core.refs import ROW_HOLE
from planner.equations.constants import C, N


_ATOM = re.compile(r"""(?x)^(
      \$?[A-Za-z]{1,3}\$?(\d+|HOLE)(:\$?[A-Za-z]{1,3}\$?(\d+|HOLE))?      # a cell or range: A1, $B$2:$B$9, H<slot> (a row hole)
    | ('[^']+'|[A-Za-z_][\w.]*)!\$?[A-Za-z]{1,3}\$?(\d+|HOLE)(:\$?[A-Za-z]{1,3}\$?(\d+|HOLE))?  # on a sheet
    | (('[^']+'|[A-Za-z_][\w.]*)!)?\$?[A-Za-z]{1,3}:\$?[A-Za-z]{1,3}   # a whole column: Hit_Curve!$C:$C
    | [A-Za-z_][\w.]*                                      # a defined name, TRUE/FALSE
    | \d+(\.\d*)?([Ee][+-]?\d+)?                            # an unsigned number
    | "([^"]|"")*"                                         # a text literal
    )$""".replace("HOLE", ROW_HOLE))


def _balanced_call_or_group(text: str) -> bool:
    """``text`` is one parenthesised group or one function call, NAME(...), as a whole."""
    m = re.match(r"^[A-Za-z_][\w.]*\(|^\(", text)
    if not m or not text.endswith(")"):
        return False
    depth, in_text = 0, False
    for i, ch in enumerate(text):
        if ch == '"':
            in_text = not in_text
        elif not in_text and ch == "(":
            depth += 1
        elif not in_text and ch == ")":
            depth -= 1
            if depth == 0 and i != len(text) - 1:
                return False
    return depth == 0


def xl_arg(arg):
    """An Excel argument made safe to interpolate next to operators: a non-atomic expression
    (``A1+B1``, ``-2``) in parentheses, a cell, name, number, text or call as it is.

    >>> xl_arg("A1+B1"), xl_arg("$C$3"), xl_arg("SUM(A1:A3)"), xl_arg("-2"), xl_arg(0.5)
    ('(A1+B1)', '$C$3', 'SUM(A1:A3)', '(-2)', 0.5)
    """
    if not isinstance(arg, str):
        return arg
    s = arg.strip()
    if _ATOM.match(s) or _balanced_call_or_group(s):
        return arg
    return f"({arg})"


def excel_twin(py_func: Callable) -> Callable[[Callable[..., str]], Callable[..., str]]:
    """Register the decorated function as the Excel formula builder of ``py_func``.

    Its text arguments reach it through :func:`xl_arg`: an expression argument is
    parenthesised, so interpolating it beside an operator cannot change its meaning."""

    def register(xl_func: Callable[..., str]) -> Callable[..., str]:
        @functools.wraps(xl_func)
        def safe(*args, **kwargs):
            return xl_func(*(xl_arg(a) for a in args), **{k: xl_arg(v) for k, v in kwargs.items()})

        py_func.xl = safe
        return safe

    return register


def approx_as_spreadsheets(x):
    """Round to 15 significant digits, as spreadsheets do before INT / ROUNDUP.

    LibreOffice (``rtl::math::approxFloor``) and Excel both snap a value a few ulps off an
    integer onto it, so ``3.0000000000000004`` instances is 3, not 4. Doing the same here
    keeps the Python value equal to the spreadsheet's.
    """
    x = np.asarray(x, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        mag = np.floor(np.log10(np.where(np.isfinite(x) & (x != 0), np.abs(x), 1.0)))
        scale = 10.0 ** (14 - mag)
        rounded = np.round(x * scale) / scale
        # far below 1 (scale overflows) there is no integer to snap to: keep x
        return np.where(np.isfinite(x) & (x != 0) & np.isfinite(rounded), rounded, x)


# --------------------------------------------------------------------------- KV size
def kv_heads_per_gpu(kv_heads, tp):
    r"""KV heads held by one GPU under tensor parallelism.

    .. math:: n_{kv/gpu} = \lceil n_{kv} / tp \rceil

    When ``tp > kv_heads`` each GPU still holds one whole head (heads are replicated, as
    in vLLM and SGLang), so a plain ``kv_heads / tp`` would undercount.

    Parameters
    ----------
    kv_heads : numeric, KV heads of the model [count]
    tp : numeric, tensor-parallel size [count]

    Returns
    -------
    numeric, KV heads per GPU [count]
    """
    return np.ceil(np.asarray(kv_heads, dtype=float) / tp)


@excel_twin(kv_heads_per_gpu)
def _(kv_heads, tp):
    return f"ROUNDUP({kv_heads}/{tp},0)"


def uneven_heads(attention, kv_heads, tp):
    """GQA rows whose KV heads split unevenly: neither kv_heads/tp nor tp/kv_heads is whole.

    Parameters
    ----------
    attention : str or array of str, ``gqa`` or ``mla`` (MLA rows are never uneven)
    kv_heads : numeric, KV heads, 0 where blank [count]
    tp : numeric, tensor-parallel size [count]

    Returns
    -------
    bool or array of bool
    """
    kv = np.asarray(kv_heads, dtype=float)
    tp = np.asarray(tp, dtype=float)
    return (np.asarray(attention) == "gqa") & (np.mod(kv, tp) != 0) & (np.mod(tp, np.where(kv == 0, 1, kv)) != 0)


@excel_twin(uneven_heads)
def _(attention, kv_heads, tp):
    # an array over the rows (1 where uneven): the Checks sheet counts it; kv_heads 0 divides as 1
    return f'({attention}="gqa")*(MOD({kv_heads},{tp})<>0)*(MOD({tp},{kv_heads}+({kv_heads}=0))<>0)'


def kv_bytes_per_token_gpu(attention, layers, kv_heads, head_dim, mla_kv_dim, kv_bytes, tp):
    r"""KV-cache bytes per token held by one GPU, S.

    .. math::
        S_{gqa} = 2 \cdot L \cdot \lceil n_{kv}/tp \rceil \cdot d_{head} \cdot b_{elem}
        \qquad S_{mla} = L \cdot d_{mla} \cdot b_{elem}

    MLA caches one latent per token per layer and every TP rank holds all of it: no K/V
    pair and no division by tp.

    Parameters
    ----------
    attention : str or array of str, ``mla`` for MLA, else GQA/MHA/MQA (``gqa``)
    layers : numeric, transformer layers L [count]
    kv_heads : numeric, KV heads (ignored for MLA) [count]
    head_dim : numeric, head dimension d_head (ignored for MLA) [count]
    mla_kv_dim : numeric, latent + rope width per token per layer (MLA only) [count]
    kv_bytes : numeric, bytes per cached element b_elem (2 BF16, 1 FP8, 0.5 4-bit) [B]
    tp : numeric, tensor-parallel size [count]

    Returns
    -------
    numeric, S [B/token/GPU]
    """
    gqa = C.KV_TENSORS * layers * kv_heads_per_gpu(kv_heads, tp) * head_dim * kv_bytes
    mla = np.asarray(layers, dtype=float) * mla_kv_dim * kv_bytes
    return np.where(np.asarray(attention) == "mla", mla, gqa)


@excel_twin(kv_bytes_per_token_gpu)
def _(attention, layers, kv_heads, head_dim, mla_kv_dim, kv_bytes, tp):
    gqa = f"{N.KV_TENSORS}*{layers}*{kv_heads_per_gpu.xl(kv_heads, tp)}*{head_dim}*{kv_bytes}"
    return f'IF({attention}="mla",{layers}*{mla_kv_dim}*{kv_bytes},{gqa})'


def kv_peak_gib(batch, max_seq_len, s_kv):
    r"""Peak KV memory per GPU when every request of the batch reaches its maximum length.

    .. math:: M_{peak} = B \cdot N_{max} \cdot S / 2^{30}

    Parameters
    ----------
    batch : numeric, concurrent requests [count]
    max_seq_len : numeric, N_max [tokens]
    s_kv : numeric, KV bytes per token per GPU [B]

    Returns
    -------
    numeric, peak KV per GPU [GiB]
    """
    return np.asarray(batch, dtype=float) * max_seq_len * s_kv / C.BYTES_PER_GIB


@excel_twin(kv_peak_gib)
def _(batch, max_seq_len, s_kv):
    return f"{batch}*{max_seq_len}*{s_kv}/{N.BYTES_PER_GIB}"


def weights_gib_per_gpu(params_b, weight_bytes, tp):
    r"""Model weights held by one GPU.

    .. math:: W = params_b \cdot 10^9 \cdot b_{weight} / tp / 2^{30}

    Parameters
    ----------
    params_b : numeric, total parameters, 0 when unknown [10^9]
    weight_bytes : numeric, bytes per weight [B]
    tp : numeric, tensor-parallel size [count]

    Returns
    -------
    numeric, weights per GPU [GiB]
    """
    return np.asarray(params_b, dtype=float) * C.PARAMS_PER_B * weight_bytes / tp / C.BYTES_PER_GIB


@excel_twin(weights_gib_per_gpu)
def _(params_b, weight_bytes, tp):
    return f"{params_b}*{N.PARAMS_PER_B}*{weight_bytes}/{tp}/{N.BYTES_PER_GIB}"


def hbm_headroom_gib(hbm_gib, weights_gib, kv_peak):
    r"""Device memory left after weights and peak KV; negative means it does not fit.

    .. math:: headroom = HBM - W - M_{peak}

    Parameters
    ----------
    hbm_gib : numeric, device memory [GiB]
    weights_gib : numeric, weights per GPU [GiB]
    kv_peak : numeric, peak KV per GPU [GiB]

    Returns
    -------
    numeric, headroom [GiB]
    """
    return np.asarray(hbm_gib, dtype=float) - weights_gib - kv_peak


@excel_twin(hbm_headroom_gib)
def _(hbm_gib, weights_gib, kv_peak):
    return f"{hbm_gib}-{weights_gib}-{kv_peak}"


def max_batch_fit(hbm_gib, weights_gib, max_seq_len, s_kv):
    r"""Largest batch of full-length requests whose KV fits beside the weights.

    .. math:: B_{fit} = \max(0, \lfloor (HBM - W) \cdot 2^{30} / (N_{max} \cdot S) \rfloor)

    Zero (not negative) when the weights alone do not fit.

    Parameters
    ----------
    hbm_gib : numeric, device memory [GiB]
    weights_gib : numeric, weights per GPU [GiB]
    max_seq_len : numeric, N_max [tokens]
    s_kv : numeric, KV bytes per token per GPU [B]

    Returns
    -------
    numeric, requests [count]
    """
    fit = (np.asarray(hbm_gib, dtype=float) - weights_gib) * C.BYTES_PER_GIB / (max_seq_len * s_kv)
    return np.maximum(0.0, np.floor(approx_as_spreadsheets(fit)))


@excel_twin(max_batch_fit)
def _(hbm_gib, weights_gib, max_seq_len, s_kv):
    return f"MAX(0,INT(({hbm_gib}-{weights_gib})*{N.BYTES_PER_GIB}/({max_seq_len}*{s_kv})))"


# --------------------------------------------------------------------------- prefill
def pcie_gbps_of_gen(gen):
    """The host-to-GPU bandwidth of a GPU whose ``pcie_gbps`` is not typed, from its PCIe
    generation: Gen5 x16 ``c_pcie_gen5_gbps``, any other (or none) Gen4 x16 ``c_pcie_gen4_gbps``
    (the Constants sheet; their sources there).

    Parameters
    ----------
    gen : int or array, the GPUs table's ``pcie_gen`` (None when blank)

    Returns
    -------
    float array [GB/s]
    """
    g = np.asarray(gen, dtype=object)
    return np.array([C.PCIE_GEN5_GBPS if v == 5 else C.PCIE_GEN4_GBPS for v in g.ravel()],
                    dtype=float).reshape(g.shape)


@excel_twin(pcie_gbps_of_gen)
def _(gen):
    return f"IF({gen}=5,{N.PCIE_GEN5_GBPS},{N.PCIE_GEN4_GBPS})"


def kv_load_ms(hit, isl, s_kv, pcie_gbps):
    r"""Time to load the cached prefix's KV shard from host memory over PCIe.

    .. math:: T_{load}(h) = h \cdot N \cdot S / B_{pcie}

    Per GPU shard: each GPU loads only its own heads over its own link.

    Parameters
    ----------
    hit : numeric, hit ratio h [fraction]
    isl : numeric, input length N [tokens]
    s_kv : numeric, KV bytes per token per GPU [B]
    pcie_gbps : numeric, host-to-device bandwidth per GPU [GB/s]

    Returns
    -------
    numeric, load time [ms]
    """
    return np.asarray(hit, dtype=float) * isl * s_kv / (pcie_gbps * C.BYTES_PER_GB) * C.MS_PER_S


@excel_twin(kv_load_ms)
def _(hit, isl, s_kv, pcie_gbps):
    return f"{hit}*{isl}*{s_kv}/({pcie_gbps}*{N.BYTES_PER_GB})*{N.MS_PER_S}"


def other_factor(hit, scaling):
    r"""Scaling of the "other" variable time with the hit ratio.

    .. math:: f_{other}(h) = 1 \;(const),\; 1-h \;(linear),\; 1-h^2 \;(quadratic)

    Parameters
    ----------
    hit : numeric, hit ratio h [fraction]
    scaling : str or array of str, one of ``const``, ``linear``, ``quadratic``

    Returns
    -------
    numeric, factor [fraction]
    """
    hit = np.asarray(hit, dtype=float)
    scaling = np.asarray(scaling)
    return np.where(scaling == "linear", 1 - hit, np.where(scaling == "quadratic", 1 - hit**2, 1.0))


@excel_twin(other_factor)
def _(hit, scaling):
    return f'IF({scaling}="linear",1-{hit},IF({scaling}="quadratic",1-{hit}^2,1))'


def compute_ms(hit, t_attn0, t_ffn0, t_other0, scaling):
    r"""Prefill compute time after a hit.

    .. math:: T_{compute}(h) = T_{attn,0}(1-h^2) + T_{ffn,0}(1-h) + T_{other,0} f_{other}(h)

    Attention covers the causal area: suffix tokens still attend to the cached prefix,
    so it falls as 1-h²; FFN/GEMM work is per token and falls as 1-h.

    Parameters
    ----------
    hit : numeric, hit ratio h [fraction]
    t_attn0 : numeric, attention time at 0 hit [ms]
    t_ffn0 : numeric, FFN/GEMM time at 0 hit [ms]
    t_other0 : numeric, other variable time at 0 hit [ms]
    scaling : str or array of str, f_other: ``const``, ``linear`` or ``quadratic``

    Returns
    -------
    numeric, compute time [ms]
    """
    hit = np.asarray(hit, dtype=float)
    return t_attn0 * (1 - hit**2) + t_ffn0 * (1 - hit) + t_other0 * other_factor(hit, scaling)


@excel_twin(compute_ms)
def _(hit, t_attn0, t_ffn0, t_other0, scaling):
    return (f"{t_attn0}*(1-{hit}^2)+{t_ffn0}*(1-{hit})"
            f"+{t_other0}*{other_factor.xl(hit, scaling)}")


def ttft_ms(t_fixed, load, compute, alpha):
    r"""Time to first token with partial overlap of KV load and compute.

    .. math::
        TTFT = T_{fixed} + T_{load} + T_{compute} - \alpha \min(T_{load}, T_{compute})

    α = 0 gives fixed + load + compute; α = 1 gives fixed + max(load, compute).

    Parameters
    ----------
    t_fixed : numeric, non-scaling overhead [ms]
    load : numeric, KV load time [ms]
    compute : numeric, compute time [ms]
    alpha : numeric, overlap α [fraction]

    Returns
    -------
    numeric, TTFT [ms]
    """
    load = np.asarray(load, dtype=float)
    return t_fixed + load + compute - alpha * np.minimum(load, compute)


@excel_twin(ttft_ms)
def _(t_fixed, load, compute, alpha):
    return f"{t_fixed}+{load}+{compute}-{alpha}*MIN({load},{compute})"


def regime(load, compute):
    """``load-bound`` where the KV load takes longer than the compute, else ``compute-bound``.

    Parameters
    ----------
    load : numeric, KV load time [ms]
    compute : numeric, compute time [ms]

    Returns
    -------
    str or array of str
    """
    return np.where(np.asarray(load) > compute, "load-bound", "compute-bound")


@excel_twin(regime)
def _(load, compute):
    return f'IF({load}>{compute},"load-bound","compute-bound")'


# --------------------------------------------------------------------------- first order
def prefill0_ms(t_fixed, t_attn0, t_ffn0, t_other0):
    r"""The whole prefill time at 0 hit, T0 = TTFT(0, ·) (no load, so α does not matter).

    .. math:: T_0 = T_{fixed} + T_{attn,0} + T_{ffn,0} + T_{other,0}

    Parameters
    ----------
    t_fixed, t_attn0, t_ffn0, t_other0 : numeric, prefill times at 0 hit [ms]

    Returns
    -------
    numeric, T0 [ms]
    """
    return np.asarray(t_fixed, dtype=float) + t_attn0 + t_ffn0 + t_other0


@excel_twin(prefill0_ms)
def _(t_fixed, t_attn0, t_ffn0, t_other0):
    return f"{t_fixed}+{t_attn0}+{t_ffn0}+{t_other0}"


def delta(isl, s_kv, pcie_gbps, t0):
    r"""Full-KV load time over 0-hit prefill time, δ.

    .. math:: \delta = N \cdot S / (B_{pcie} \cdot T_0)

    Parameters
    ----------
    isl : numeric, input length N [tokens]
    s_kv : numeric, KV bytes per token per GPU [B]
    pcie_gbps : numeric, bandwidth per GPU [GB/s]
    t0 : numeric, prefill time at 0 hit [ms]

    Returns
    -------
    numeric, δ [ratio]
    """
    return kv_load_ms(1.0, isl, s_kv, pcie_gbps) / t0


@excel_twin(delta)
def _(isl, s_kv, pcie_gbps, t0):
    return f"{isl}*{s_kv}/({pcie_gbps}*{N.BYTES_PER_GB})*{N.MS_PER_S}/{t0}"


def h_star(delta_):
    r"""Break-even hit ratio of the first-order model, where load equals remaining compute.

    .. math:: h^* = 1 / (1 + \delta)

    Parameters
    ----------
    delta_ : numeric, δ [ratio]

    Returns
    -------
    numeric, h* [fraction]
    """
    return 1.0 / (1.0 + np.asarray(delta_, dtype=float))


@excel_twin(h_star)
def _(delta_):
    return f"1/(1+{delta_})"


def first_order_gain(hit, delta_):
    r"""Capacity multiplier of the first-order model (full overlap), Θ(h)/Θ0.

    .. math:: \Theta(h)/\Theta_0 = 1 / \max(1-h, \delta h)

    Peaks at h* with value 1 + 1/δ; beyond h* more hits make prefill slower.

    Parameters
    ----------
    hit : numeric, hit ratio h [fraction]
    delta_ : numeric, δ [ratio]

    Returns
    -------
    numeric, multiplier [ratio]
    """
    hit = np.asarray(hit, dtype=float)
    return 1.0 / np.maximum(1 - hit, delta_ * hit)


@excel_twin(first_order_gain)
def _(hit, delta_):
    return f"1/MAX(1-{hit},{delta_}*{hit})"


# --------------------------------------------------------------------------- chip time and TPM
def chip_ms(ttft, t_decode):
    r"""Chip time per request, C(h) = P(h) + D (decode is unaffected by hits).

    Parameters
    ----------
    ttft : numeric, prefill time P(h) = TTFT(h, α) [ms]
    t_decode : numeric, decode chip time D [ms]

    Returns
    -------
    numeric, C(h) [ms]
    """
    return np.asarray(ttft, dtype=float) + t_decode


@excel_twin(chip_ms)
def _(ttft, t_decode):
    return f"{ttft}+{t_decode}"


def tpm_delivered(isl, osl, chip):
    r"""Delivered tokens per minute: cached input counts as delivered.

    .. math:: TPM_{del} = (ISL + OSL) \cdot 60000 / C(h)

    Parameters
    ----------
    isl, osl : numeric, input / output length [tokens]
    chip : numeric, chip time per request [ms]

    Returns
    -------
    numeric, TPM [tokens/min]
    """
    return (np.asarray(isl, dtype=float) + osl) * C.MS_PER_MIN / chip


@excel_twin(tpm_delivered)
def _(isl, osl, chip):
    return f"({isl}+{osl})*{N.MS_PER_MIN}/{chip}"


def tpm_physical(isl, osl, hit, chip):
    r"""Physical tokens per minute: only tokens the hardware computed.

    .. math:: TPM_{phys} = (ISL(1-h) + OSL) \cdot 60000 / C(h)

    Parameters
    ----------
    isl, osl : numeric, input / output length [tokens]
    hit : numeric, hit ratio h [fraction]
    chip : numeric, chip time per request [ms]

    Returns
    -------
    numeric, TPM [tokens/min]
    """
    return (np.asarray(isl, dtype=float) * (1 - hit) + osl) * C.MS_PER_MIN / chip


@excel_twin(tpm_physical)
def _(isl, osl, hit, chip):
    return f"({isl}*(1-{hit})+{osl})*{N.MS_PER_MIN}/{chip}"


def tpm_delivered_target(tpm_measured, chip_measured, chip_target, tpm_model):
    r"""Delivered TPM at the target hit, re-corrected from a measurement when there is one.

    .. math:: TPM_{del}(h_t) = TPM_{del}(h_m) \cdot C(h_m) / C(h_t)

    Falls back to the model's own TPM where ``tpm_measured`` is blank (NaN).

    Parameters
    ----------
    tpm_measured : numeric, delivered TPM measured at h_m, NaN when not measured [tokens/min]
    chip_measured : numeric, C(h_m) [ms]
    chip_target : numeric, C(h_t) [ms]
    tpm_model : numeric, the model's delivered TPM at h_t [tokens/min]

    Returns
    -------
    numeric, TPM [tokens/min]
    """
    tpm_measured = np.asarray(tpm_measured, dtype=float)
    return np.where(np.isnan(tpm_measured), tpm_model, tpm_measured * chip_measured / chip_target)


@excel_twin(tpm_delivered_target)
def _(tpm_measured, chip_measured, chip_target, tpm_model):
    return f'IF(ISNUMBER({tpm_measured}),{tpm_measured}*{chip_measured}/{chip_target},{tpm_model})'


def tpm_physical_from_delivered(tpm_del, isl, osl, hit):
    r"""Physical TPM from delivered TPM at the same hit ratio.

    .. math:: TPM_{phys} = TPM_{del} \cdot (ISL(1-h) + OSL) / (ISL + OSL)

    Parameters
    ----------
    tpm_del : numeric, delivered TPM [tokens/min]
    isl, osl : numeric, input / output length [tokens]
    hit : numeric, hit ratio h [fraction]

    Returns
    -------
    numeric, TPM [tokens/min]
    """
    isl = np.asarray(isl, dtype=float)
    return tpm_del * (isl * (1 - hit) + osl) / (isl + osl)


@excel_twin(tpm_physical_from_delivered)
def _(tpm_del, isl, osl, hit):
    return f"{tpm_del}*({isl}*(1-{hit})+{osl})/({isl}+{osl})"


def per_gpu(value, tp):
    """A per-instance quantity divided over the instance's ``tp`` GPUs.

    Parameters
    ----------
    value : numeric, per-instance quantity (e.g. TPM [tokens/min])
    tp : numeric, GPUs per instance [count]

    Returns
    -------
    numeric, per GPU
    """
    return np.asarray(value, dtype=float) / tp


@excel_twin(per_gpu)
def _(value, tp):
    return f"{value}/{tp}"


def instances_needed(demand_tpm, tpm, utilization=1.0):
    r"""Serving instances to carry the demand at a target utilisation, NaN where no demand is given.

    .. math:: n = \lceil demand / (TPM_{del}(h_t) \cdot u) \rceil

    Parameters
    ----------
    demand_tpm : numeric, delivered tokens/min to serve, NaN when blank [tokens/min]
    tpm : numeric, delivered TPM of one instance at full speed [tokens/min]
    utilization : numeric, busy fraction the instances are sized for, in (0, 1]; 1 (the default)
        sizes them 100% busy [fraction]

    Returns
    -------
    numeric, instances [count]
    """
    return np.ceil(approx_as_spreadsheets(np.asarray(demand_tpm, dtype=float) / (tpm * np.asarray(utilization, dtype=float))))


@excel_twin(instances_needed)
def _(demand_tpm, tpm, utilization=None):
    if utilization is None:
        return f'IF(ISNUMBER({demand_tpm}),ROUNDUP({demand_tpm}/{tpm},0),"")'
    return f'IF(ISNUMBER({demand_tpm}),ROUNDUP({demand_tpm}/({tpm}*{utilization}),0),"")'


def gpus_needed(instances, tp):
    """GPUs for the instances, NaN where no demand is given.

    Parameters
    ----------
    instances : numeric, serving instances [count]
    tp : numeric, GPUs per instance [count]

    Returns
    -------
    numeric, GPUs [count]
    """
    return np.asarray(instances, dtype=float) * tp


@excel_twin(gpus_needed)
def _(instances, tp):
    return f'IF(ISNUMBER({instances}),{instances}*{tp},"")'


def cost_per_mtok(hourly_cost, tp, tpm):
    r"""Cost of one million tokens, NaN where no price is given.

    .. math:: cost = price_{GPU\cdot h} \cdot tp \cdot 10^6 / (TPM \cdot 60)

    Parameters
    ----------
    hourly_cost : numeric, price of one GPU-hour, NaN when blank [currency/h]
    tp : numeric, GPUs per instance [count]
    tpm : numeric, tokens per minute of one instance [tokens/min]

    Returns
    -------
    numeric, cost [currency per 10^6 tokens]
    """
    return np.asarray(hourly_cost, dtype=float) * tp * C.TOKENS_PER_MTOK / (tpm * C.MIN_PER_HOUR)


@excel_twin(cost_per_mtok)
def _(hourly_cost, tp, tpm):
    return (f'IF(ISNUMBER({hourly_cost}),'
            f'{hourly_cost}*{tp}*{N.TOKENS_PER_MTOK}/({tpm}*{N.MIN_PER_HOUR}),"")')
