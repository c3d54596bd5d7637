r"""Latency at load: the queueing closed forms of issue 16, each beside its Excel twin.

Two things are kept apart everywhere (``docs/model.md``, "Service time and latency at load"):

* the **service time** of a request, the GPU time it costs: its prefill ``P = TTFT(h)`` (the
  design note's formula for a request alone, :func:`planner.equations.kvhit.ttft_ms`) and its share ``D``
  (``t_decode_ms``) of the batched decode. TPM, instance counts and cost come from ``P + D``.
* the **latency users see** at a load: TTFT = waiting for the prefill + ``P``, and TPOT at the
  decode batch that load implies.

The serving instance (the model of every function here, and of the discrete-event simulation in
``tests/test_queueing.py`` that checks them):

* one GPU timeline per instance; a prefill runs as one uninterrupted step of ``P`` ms, first come
  first served; waiting prefills go before decode steps (prefill priority at step boundaries, as
  the vLLM and SGLang schedulers admit waiting requests at the next step);
* every request in decode advances one token per decode step; a step over a batch of ``b``
  requests takes ``s(b) = s0 + s1 b`` ms (the decode-step law: the weights are read once per step,
  ``s0``; each request's KV is read once per step, ``s1`` per request; both at HBM bandwidth).

Step law from the row's own numbers. ``t_decode_ms`` is the decode share per request at the row's
``batch`` ``B``: ``D = osl s(B) / B``, so ``s(B) = D B / osl``. The split of ``s(B)`` into weights
and KV is the ratio of the bytes each step reads: weights per GPU ``W`` against the batch's KV
``B (isl + osl/2) S`` (a request holds its input and, on average, half its output). So a ``D``
calibrated from a measured TPOT (or throughput) keeps its calibration; a roofline ``D`` its
roofline.

Open loop (production traffic, Poisson arrivals at rate ``λ`` per instance):

* prefill wait, non-preemptive priority M/G/1 (Cobham 1954; Kleinrock, *Queueing Systems* vol. 2,
  1976, sec. 3.6): the prefills are the high class, deterministic (one length per workload); the
  decode steps the low class, busy ``λD`` of the time with steps of ``s(B)``::

      E[W] = λ (P² + D s(B)) / (2 (1 - λP))                              (Pollaczek-Khinchine form)

* wait percentiles (:func:`wait_quantile_ms`): the prefill-queue part with an exponential tail and
  an atom at 0 of probability ``1-ρ`` (``ρ = λP``; exact for M/M/1, Kingman's heavy-traffic law for
  M/G/1): ``P(W > t) = ρ exp(-t ρ / E[W_pk])``, plus the decode-step hold-up at its mean; the ``q``
  quantile is ``W_q = r + P/(2(1-ρ)) ln(ρ/(1-q))`` when ``ρ > 1-q``, else ``r``; TTFT_q = P + W_q;
* TPOT: each step serves the tagged request and the others in decode (Little: ``λ osl TPOT``), and
  the decode is held up by every prefill that goes first: those queued behind the request while it
  waited and was prefilled (``λ(W+P)``) and those arriving during its decode (busy ``λP``):
  ``TPOT = (λP(W+P)/osl + s0 + s1) / (1 - λ (P + osl s1))``;
* decode batch by Little's law ``b = λ osl TPOT``; it must fit the HBM (``max_batch_fit``).

Closed loop (a load test of ``c`` clients, ``num_requests`` R, no think time, as ``vllm bench
serve --max-concurrency c`` runs it): the clients start together and their prefills serialise,
request ``k`` waits ``(k-1) P``; with prefill priority the wave then decodes together and the next
wave starts together, so at equal lengths every wave is such a burst: mean TTFT ``P (c+1)/2``
(:func:`closed_loop_ttft`), TPOT ``s(c) + (c-1)P/(2 osl)``, throughput ``c / (cP + osl s(c))``.

SLO inverses (closed forms, so that the workbook recalculates the instance count after an edit):
a TTFT target is a closed form in ``ρ = λP`` (:func:`instances_ttft`: the mean directly, a quantile
through the Lambert W function, Winitzki's approximation, *Uniform approximations for
transcendental functions*, LNCS 2667, 2003, and two Newton steps; relative error below 1e-8,
checked in the tests); a TPOT
target is a quadratic in ``λ`` (:func:`rate_for_tpot`); the HBM fit ``b <= max_batch_fit`` a
conservative chain of two closed forms (:func:`instances_hbm`). Instances = ceil(demand rate / λ).

Units: times in ms, rates in requests/s per instance unless named.
"""

from __future__ import annotations

import numpy as np

from planner.equations.constants import C, N
from planner.equations import prefill_passes as pp
from planner.equations import terms as tm
from planner.equations.kvhit import approx_as_spreadsheets, excel_twin

BINDINGS = ("throughput", "ttft_slo", "tpot_slo", "hbm", "concurrency")
_Q = {"mean": 0.0, "p50": C.Q_P50, "p90": C.Q_P90, "p95": C.Q_P95, "p99": C.Q_P99}


def _f(x):
    return np.asarray(x, dtype=float)


def _div(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        return _f(a) / _f(b)


# --------------------------------------------------------------------------- decode-step law
def default_batch(batch, concurrency, max_fit):
    r"""The decode batch of a workload: ``batch`` when typed, else the fixed ``concurrency``, else
    the batch an instance runs at capacity, the HBM fit capped at the server's sequence limit.

    .. math:: B = batch \ \text{(typed)}, \quad c \ \text{(concurrency)}, \quad
              \max(1, \min(B_{fit}, 256)) \ \text{(else)}

    Why the HBM fit: throughput sizing plans each instance at ``target_utilization`` of its
    capacity, and under the decode-step law an instance's capacity grows with the batch it
    decodes, ``X(B) = B / (B P + osl s(B))`` (which is ``1 / (P + D(B))`` with ``D(B) = osl s(B) /
    B``), up to the batch its KV cache holds: a continuous-batching server admits requests until
    the KV blocks or ``max_num_seqs`` run out (256, vLLM's default). The batch Little's law gives
    at a load below capacity is no alternative here: with ``TPOT = s(B) / (1 - λP)`` it equals
    the amortisation batch only where ``λ (P + D(B)) = 1``, i.e. at full utilisation. Batch 1 (the
    old blank) plans a serving engine that decodes one request at a time.

    Parameters
    ----------
    batch : numeric, typed Workloads batch, NaN when blank [count]
    concurrency : numeric, Workloads concurrency, NaN when blank [count]
    max_fit : numeric, max_batch_fit, full-length requests whose KV fits beside the weights [count]

    Returns
    -------
    numeric, batch [count]
    """
    b, c = _f(batch), _f(concurrency)
    cap = np.maximum(1.0, np.minimum(_f(max_fit), C.MAX_NUM_SEQS))
    return np.where(np.isnan(b), np.where(np.isnan(c), cap, c), b)


@excel_twin(default_batch)
def _(batch, concurrency, max_fit):
    return (f"IF(ISNUMBER({batch}),{batch},IF(ISNUMBER({concurrency}),{concurrency},"
            f"MAX(1,MIN({max_fit},{N.MAX_NUM_SEQS}))))")


def step_floor_ms(batch, isl, osl, s_kv, params_b, active_params_b, weight_bytes, tp, hbm_tbps):
    r"""HBM roofline of one decode step over ``b`` requests: the lowest step time the bytes allow.

    .. math:: s_{min}(b) = \frac{\min(N, b N_a) \cdot 10^9 \cdot w / tp + b (ISL + OSL/2) S}{HBM \cdot 10^{12}}
              \cdot 1000

    The weights per GPU are read once per step (an MoE reads at most ``b`` tokens' active
    experts), each request's KV once; at the full HBM bandwidth, so no step can be faster. (Not at
    Settings ``decode_mbu``: that is a planning assumption, and measured or typed decode times
    commonly run above it (the example's typed decodes at up to 68% of the bandwidth, against 60%); a floor at
    ``decode_mbu`` would overrule a measurement with an assumption.) The step of
    :func:`planner.equations.roofline.decode_ms` (``decode_ms = osl s_min(b) / b``). No bandwidth
    (``hbm_tbps`` blank or 0) gives 0: no floor.

    Parameters
    ----------
    batch : numeric, requests in the step b [count]
    isl, osl : numeric, input / output length [tokens]
    s_kv : numeric, KV bytes per token per GPU S [B]
    params_b, active_params_b : numeric, total / active parameters [1e9] (active 0: params_b)
    weight_bytes : numeric, bytes per weight w [B]
    tp : numeric, GPUs per instance [count]
    hbm_tbps : numeric, HBM bandwidth per GPU [TB/s]

    Returns
    -------
    numeric, step time floor [ms]
    """
    b, act, hbm = _f(batch), _f(active_params_b), _f(hbm_tbps)
    act = np.where(act > 0, act, params_b)
    weights = np.minimum(_f(params_b), b * act) * C.PARAMS_PER_B * _f(weight_bytes) / tp
    kv = b * (_f(isl) + C.HALF * _f(osl)) * s_kv
    bw = hbm * 1e12  # TB/s -> B/s, as roofline.decode_ms
    return np.where(bw > 0, _div((weights + kv) * C.MS_PER_S, np.where(bw > 0, bw, 1.0)), 0.0)


@excel_twin(step_floor_ms)
def _(batch, isl, osl, s_kv, params_b, active_params_b, weight_bytes, tp, hbm_tbps):
    act = f"IF({active_params_b}>0,{active_params_b},{params_b})"
    weights = f"MIN({params_b},{batch}*{act})*{N.PARAMS_PER_B}*{weight_bytes}/{tp}"
    kv = f"{batch}*({isl}+{N.HALF}*{osl})*{s_kv}"
    bw = f"{hbm_tbps}*1E12"
    return f"IF({bw}>0,({weights}+{kv})*{N.MS_PER_S}/({bw}),0)"


def decode_step_ms(t_decode, batch, osl, floor=0.0):
    r"""Decode step time at the batch the decode time holds at, ``s(B)``, bounded by the HBM roofline.

    .. math:: s(B) = \max(D \cdot B / OSL,\ s_{min}(B))  \quad (D > 0;\ D B / OSL \text{ when } D = 0;\
              0 \text{ when } OSL = 0)

    ``B`` is ``t_decode_batch``: the batch the row's ``t_decode_ms`` was measured or estimated at (a
    load test's concurrency when calibrated from one; blank: ``batch``). So a decode calibrated at
    concurrency ``c`` gives the measured step ``s(c)`` (issue 16: read at batch 1 it gave a step
    below the HBM floor). A step faster than the bytes allow at full bandwidth is raised to the floor
    (:func:`step_floor_ms`; the load memo warns at the row).

    Parameters
    ----------
    t_decode : numeric, decode chip time per request D at the batch [ms]
    batch : numeric, concurrent requests B the decode time is amortised over [count]
    osl : numeric, output length [tokens]
    floor : numeric, HBM roofline of the step at B [ms] (0: none)

    Returns
    -------
    numeric, time of one decode step over the batch [ms]
    """
    osl, d = _f(osl), _f(t_decode)
    step = _div(d * batch, np.where(osl > 0, osl, 1.0))
    return np.where(osl > 0, np.where(d > 0, np.maximum(step, floor), step), 0.0)


@excel_twin(decode_step_ms)
def _(t_decode, batch, osl, floor=None):
    step = f"{t_decode}*{batch}/{osl}"
    if floor is not None:
        step = f"IF({t_decode}>0,MAX({step},{floor}),{step})"
    return f"IF({osl}>0,{step},0)"


def step_fixed_ms(step, weights_gib, batch, isl, osl, s_kv):
    r"""Weight-reading part of the decode step, ``s0``.

    .. math:: s_0 = s(B) \cdot W / (W + B (ISL + OSL/2) S / 2^{30})

    The step reads the weights once and each request's KV once (decode is memory-bound); the
    split is the ratio of those bytes. With neither (no weights, no KV) the whole step is fixed.

    Parameters
    ----------
    step : numeric, decode step at the batch s(B) [ms]
    weights_gib : numeric, weights per GPU W [GiB]
    batch : numeric, B [count]
    isl, osl : numeric, input / output length [tokens]
    s_kv : numeric, KV bytes per token per GPU S [B]

    Returns
    -------
    numeric, s0 [ms]
    """
    kv = _f(batch) * (_f(isl) + C.HALF * _f(osl)) * s_kv / C.BYTES_PER_GIB
    tot = _f(weights_gib) + kv
    return np.where(tot > 0, _div(_f(step) * weights_gib, np.where(tot > 0, tot, 1.0)), step)


@excel_twin(step_fixed_ms)
def _(step, weights_gib, batch, isl, osl, s_kv):
    tot = f"({weights_gib}+{batch}*({isl}+{N.HALF}*{osl})*{s_kv}/{N.BYTES_PER_GIB})"
    return f"IF({tot}>0,{step}*{weights_gib}/{tot},{step})"


def step_per_request_ms(step, step_fixed, batch):
    r"""KV-reading part of the decode step per request in the batch, ``s1``.

    .. math:: s_1 = (s(B) - s_0) / B

    Parameters
    ----------
    step : numeric, s(B) [ms]
    step_fixed : numeric, s0 [ms]
    batch : numeric, B [count]

    Returns
    -------
    numeric, s1 [ms per request]
    """
    return (_f(step) - step_fixed) / batch


@excel_twin(step_per_request_ms)
def _(step, step_fixed, batch):
    return f"({step}-{step_fixed})/{batch}"


# --------------------------------------------------------------------------- the load
def closed_loop_rate(concurrency, prefill, osl, s0, s1, t_fixed=np.nan, isl=np.nan, hit=np.nan, budget=np.nan):
    r"""Requests/s one instance completes holding ``c`` requests in flight (Workloads concurrency).

    Every cycle of a client holds the wave's prefills and ``osl`` decode steps over the batch, and
    the GPU is never idle: ``X(c) = c / (T + OSL\, s(c))`` with ``T`` the wave's prefill time,
    ``cP`` for prefills one after another, and with batched prefill (``budget``, the pass budget
    ``max_num_batched_tokens``, and ``t_fixed`` the fixed cost per pass)
    :func:`planner.equations.prefill_passes.wave_prefill_ms`.

    Parameters
    ----------
    concurrency : numeric, c, NaN when blank [count]
    prefill : numeric, P [ms]
    osl : numeric, output length [tokens]
    s0, s1 : numeric, decode-step law [ms], [ms per request]
    t_fixed : numeric, fixed cost per forward pass [ms]; isl [tokens]; hit [fraction]
    budget : numeric, new tokens per forward pass (NaN: one request per pass) [tokens]

    Returns
    -------
    numeric, requests/s per instance (NaN without concurrency)
    """
    c = _f(concurrency)
    if np.all(np.isnan(_f(budget))):
        wave = c * _f(prefill)
    else:
        f0 = np.where(np.isnan(_f(t_fixed)), 0.0, _f(t_fixed))
        wave = pp.wave_prefill_ms(prefill, f0, np.where(np.isnan(_f(isl)), 1.0, _f(isl)),
                                  np.where(np.isnan(_f(hit)), 0.0, _f(hit)), c, budget)
    return _div(c * C.MS_PER_S, wave + _f(osl) * (_f(s0) + _f(s1) * c))


@excel_twin(closed_loop_rate)
def _(concurrency, prefill, osl, s0, s1, t_fixed=None, isl=None, hit=None, budget=None):
    wave = (f"{concurrency}*{prefill}" if budget is None else
            pp.wave_prefill_ms.xl(prefill, t_fixed, isl, hit, concurrency, budget))
    return (f'IF(ISNUMBER({concurrency}),{concurrency}*{N.MS_PER_S}/({wave}+{osl}*({s0}+{s1}*'
            f'{concurrency})),"")')


def load_rate(demand_tpm, isl, osl, instances, chip, utilization, closed_rate=np.nan):
    r"""Request rate one instance serves at the row's load [requests/s].

    .. math::
        λ = \frac{demand}{(ISL+OSL) \cdot 60 \cdot n}\ \text{(with demand)}, \qquad
        λ = u / C\ \text{(without: the load at target utilisation)}, \qquad
        λ = X(c)\ \text{(Workloads concurrency: the closed loop's rate)}

    Parameters
    ----------
    demand_tpm : numeric, delivered tokens/min of the workload, NaN when blank [tokens/min]
    isl, osl : numeric, input / output length [tokens]
    instances : numeric, instances serving it (0 with a demand of 0: the rate is 0) [count]
    chip : numeric, chip time per request P + D [ms]
    utilization : numeric, target busy fraction u [fraction]
    closed_rate : numeric, X(c) [requests/s], NaN without concurrency

    Returns
    -------
    numeric, requests/s per instance
    """
    dem, n = _f(demand_tpm), _f(instances)
    # no instance (a demand of 0 sizes 0) serves no request: 0, not 0/0 (and an unreachable count, inf, gives 0)
    open_ = np.where(np.isnan(dem), _div(_f(utilization) * C.MS_PER_S, chip),
                     np.where(n == 0, 0.0, _div(dem, (_f(isl) + osl) * C.MS_PER_MIN / C.MS_PER_S * n)))
    x = _f(closed_rate)
    return np.where(np.isnan(x), open_, x)


@excel_twin(load_rate)
def _(demand_tpm, isl, osl, instances, chip, utilization, closed_rate=None):
    # no instance (a demand of 0 sizes 0): no load, 0 as in Python, not #DIV/0!; an unreachable count (text;
    # inf in Python) 0 as Python's demand / inf; a blank count blank (no N() over a blank: #NUM! in Gnumeric)
    per = f"{demand_tpm}/(({isl}+{osl})*{N.MS_PER_MIN}/{N.MS_PER_S}*{instances})"
    open_ = (f'IF(ISNUMBER({demand_tpm}),IF(ISNUMBER({instances}),IF({instances}=0,0,{per}),'
             f'IF(ISTEXT({instances}),0,"")),{utilization}*{N.MS_PER_S}/{chip})')
    return open_ if closed_rate is None else f"IF(ISNUMBER({closed_rate}),{closed_rate},{open_})"


def wait_mean_ms(rate, prefill, t_decode, step):
    r"""Mean wait of a request for its prefill, open loop (non-preemptive priority M/G/1).

    .. math:: E[W] = \frac{λ (P^2 + D\, s(B))}{2 (1 - λP)}, \quad λ \text{ in requests/ms}

    Parameters
    ----------
    rate : numeric, request rate per instance [requests/s]
    prefill : numeric, P, the request-alone TTFT at the hit [ms]
    t_decode : numeric, D [ms]
    step : numeric, s(B) [ms]

    Returns
    -------
    numeric, mean wait [ms]; NaN when the prefills alone saturate the instance (λP >= 1)
    """
    lam = _f(rate) / C.MS_PER_S
    rho = lam * prefill
    # compared as spreadsheets compare (15 significant digits): 0.9999999999999999 is saturated
    return np.where(approx_as_spreadsheets(rho) < 1, _div(lam * (_f(prefill) ** 2 + _f(t_decode) * step) * C.HALF, 1 - rho),
                    np.nan)


@excel_twin(wait_mean_ms)
def _(rate, prefill, t_decode, step):
    lam = f"{rate}/{N.MS_PER_S}"
    return f'IF({lam}*{prefill}<1,{lam}*({prefill}^2+{t_decode}*{step})*{N.HALF}/(1-{lam}*{prefill}),"")'


def wait_quantile_ms(rate, prefill, t_decode, step, q):
    r"""The ``q`` quantile of the prefill wait, open loop.

    The wait is the queue of prefills ahead (M/D/1 part: mean ``λP²/(2(1-ρ))``, ``ρ = λP``, taken
    with the exponential tail and an atom at 0 of the M/M/1 form, ``P(W > t) = ρ e^{-tρ/E[W]}``) plus
    the decode steps in progress that hold it up, taken at their mean ``r = λ D s / (2(1-ρ))``:

    .. math:: W_q = r + \frac{P}{2(1-ρ)} \ln\frac{ρ}{1-q}\ \text{if}\ ρ > 1-q,\ \text{else } r

    Parameters
    ----------
    rate : numeric, requests/s per instance
    prefill, t_decode, step : numeric, P, D and s(B) [ms]
    q : numeric, quantile in (0, 1) [fraction]

    Returns
    -------
    numeric, wait quantile [ms]; NaN when the prefills saturate the instance
    """
    lam = _f(rate) / C.MS_PER_S
    P = _f(prefill)
    rho = lam * P
    q = _f(q)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = lam * _f(t_decode) * step * C.HALF / (1 - rho)
        tail = P * C.HALF / (1 - rho) * np.log(rho / (1 - q))
    return np.where(approx_as_spreadsheets(rho) < 1, r + np.where(approx_as_spreadsheets(rho) > approx_as_spreadsheets(1 - q), tail, 0.0), np.nan)


@excel_twin(wait_quantile_ms)
def _(rate, prefill, t_decode, step, q):
    rho = f"({rate}/{N.MS_PER_S}*{prefill})"
    r = f"{rate}/{N.MS_PER_S}*{t_decode}*{step}*{N.HALF}/(1-{rho})"
    tail = f"{prefill}*{N.HALF}/(1-{rho})*LN({rho}/(1-{q}))"
    return f'IF({rho}<1,{r}+IF({rho}>1-{q},{tail},0),"")'


def ttft_load_ms(prefill, wait, concurrency=np.nan, t_fixed=np.nan, isl=np.nan, hit=np.nan, budget=np.nan,
                 q=np.nan):
    r"""TTFT users see at the load: the prefill plus the wait for it.

    .. math::
        TTFT = P + W \ \text{(open loop)}, \qquad
        TTFT_{mean} = P (c+1)/2,\ TTFT_q = P (1 + q (c-1)) \ \text{(a serial burst of c, Workloads concurrency)}

    With the pass budget ``M`` (``max_num_batched_tokens``) and the per-pass fixed cost ``F`` the
    burst is packed into forward passes: :func:`planner.equations.prefill_passes.burst_ttft_ms`
    (blank ``M``: the serial burst above).

    Parameters
    ----------
    prefill : numeric, P [ms]
    wait : numeric, the wait statistic (mean or quantile) [ms], NaN when saturated
    concurrency : numeric, requests in flight per instance, NaN when blank [count]
    t_fixed : numeric, fixed cost per forward pass F [ms] (NaN: 0)
    isl : numeric, input length [tokens]; hit : numeric, hit ratio [fraction]
    budget : numeric, new tokens per forward pass M [tokens] (NaN: one request per pass)
    q : numeric, the quantile of ``wait`` (NaN or 0: the mean) [fraction]

    Returns
    -------
    numeric, TTFT at the load [ms]
    """
    c, q = _f(concurrency), _f(q)
    f0 = np.where(np.isnan(_f(t_fixed)), 0.0, _f(t_fixed))
    n0 = np.where(np.isnan(_f(isl)), 1.0, _f(isl))
    h0 = np.where(np.isnan(_f(hit)), 0.0, _f(hit))
    burst = pp.burst_ttft_ms(prefill, f0, n0, h0, c, budget, q)
    return np.where(np.isnan(c), _f(prefill) + wait, burst)


@excel_twin(ttft_load_ms)
def _(prefill, wait, concurrency=None, t_fixed=None, isl=None, hit=None, budget=None, q=None):
    open_ = f'IF(ISNUMBER({wait}),{prefill}+{wait},"")'
    if concurrency is None:
        return open_
    if budget is not None:
        burst = pp.burst_ttft_ms.xl(prefill, t_fixed, isl, hit, concurrency, budget, q)
    else:
        burst = (f"{prefill}*({concurrency}+1)*{N.HALF}" if q is None else
                 f"{prefill}*(1+{q}*({concurrency}-1))")
    return f"IF(ISNUMBER({concurrency}),{burst},{open_})"


def wait_p90_ms(rate, prefill, t_decode, step):
    """The 90th percentile of the prefill wait: :func:`wait_quantile_ms` at q = 0.9.

    Parameters
    ----------
    rate : numeric, requests/s per instance
    prefill, t_decode, step : numeric, P, D and s(B) [ms]

    Returns
    -------
    numeric, wait p90 [ms]
    """
    return wait_quantile_ms(rate, prefill, t_decode, step, C.Q_P90)


@excel_twin(wait_p90_ms)
def _(rate, prefill, t_decode, step):
    return wait_quantile_ms.xl(rate, prefill, t_decode, step, N.Q_P90)


def ttft_load_p90_ms(prefill, wait_p90, concurrency=np.nan, t_fixed=np.nan, isl=np.nan, hit=np.nan,
                     budget=np.nan):
    """The 90th percentile TTFT at the load: :func:`ttft_load_ms` with the p90 wait (burst: q = 0.9).

    Parameters
    ----------
    prefill : numeric, P [ms]
    wait_p90 : numeric, p90 of the wait [ms]
    concurrency : numeric, NaN when blank [count]
    t_fixed, isl, hit, budget : as :func:`ttft_load_ms`

    Returns
    -------
    numeric, TTFT p90 [ms]
    """
    return ttft_load_ms(prefill, wait_p90, concurrency, t_fixed, isl, hit, budget, C.Q_P90)


@excel_twin(ttft_load_p90_ms)
def _(prefill, wait_p90, concurrency=None, t_fixed=None, isl=None, hit=None, budget=None):
    return ttft_load_ms.xl(prefill, wait_p90, concurrency, t_fixed, isl, hit, budget, q=N.Q_P90)


def burst_holdup_ms(prefill, concurrency, t_fixed=np.nan, isl=np.nan, hit=np.nan, budget=np.nan):
    r"""Prefill time that holds a burst's decodes up, per request, mean [ms]: from a request's first
    token to the end of its wave's prefills, the wave's prefill time less the mean TTFT of the burst.

    .. math:: H = T - \overline{TTFT}_{burst}, \qquad H = (c-1) P / 2 \ \text{(prefills one after another)}

    with ``T`` :func:`planner.equations.prefill_passes.wave_prefill_ms` and the burst's mean
    :func:`planner.equations.prefill_passes.burst_ttft_ms`: a wave's requests decode together after its
    last prefill (prefill first), so request ``j`` waits ``T - TTFT_j`` for it. Prompts packed several to a
    pass (``budget``, ``max_num_batched_tokens``) get their first tokens later and wait less for the
    rest: 8 prompts of 1,024 tokens in passes of 8,192 wait ``(8 - 57/8) P = 0.875 P``, not ``3.5 P``.
    It is the hold-up :func:`tpot_load_ms` gives at a fixed concurrency (Little's law over the loop), so
    the calibration (:func:`planner.plan.load_tests.decode_per_token`) inverts it: Python only.

    Parameters
    ----------
    prefill : numeric, P [ms]
    concurrency : numeric, c [count]
    t_fixed : numeric, fixed cost per forward pass [ms]; isl [tokens]; hit [fraction]
    budget : numeric, new tokens per forward pass (NaN: one request per pass, the serial wave) [tokens]

    Returns
    -------
    numeric [ms]
    """
    c, P = _f(concurrency), _f(prefill)
    if np.all(np.isnan(_f(budget))):
        return (c - 1) * P * C.HALF
    f0 = np.where(np.isnan(_f(t_fixed)), 0.0, _f(t_fixed))
    n = np.where(np.isnan(_f(isl)), 1.0, _f(isl))
    h = np.where(np.isnan(_f(hit)), 0.0, _f(hit))
    return pp.wave_prefill_ms(P, f0, n, h, c, budget) - pp.burst_ttft_ms(P, f0, n, h, c, budget)


def tpot_load_ms(rate, prefill, osl, s0, s1, wait, concurrency=np.nan, ttft_at_c=np.nan):
    r"""Mean time per output token at the load.

    Open loop: the request's ``osl`` decode steps take ``s0 + s1`` each (its own share and the
    weights; the others in decode add ``s1`` per request, Little: ``λ osl TPOT``), and are held up
    by every prefill that goes first: the ones that queued behind it while it waited and was
    prefilled (``λ(W + P)`` of them) and the ones that arrive during its decode (busy ``λP``)::

        TPOT (1 - λP) osl = λ P (W + P) + osl (s0 + s1 + s1 λ osl TPOT)

    .. math::
        TPOT = \frac{λP(W+P)/OSL + s_0 + s_1}{1 - λ (P + OSL\, s_1)} \ \text{(open loop)}, \qquad
        TPOT = \frac{1000\, c / X - TTFT_c}{OSL} \ \text{(a fixed concurrency c)}

    At a fixed concurrency (``rate`` the closed loop's ``X``, ``ttft_at_c`` its mean TTFT, Results
    ``ttft_load_ms``) a client's cycle ``c / X`` is its TTFT and its ``OSL`` decode steps (Little's law
    over the loop; no think time), so the TPOT is what the cycle leaves: the prefill-first wave gives
    ``s(c) + H / OSL`` with ``H`` :func:`burst_holdup_ms`, and a decode-first loop its own. Without
    ``ttft_at_c``: the serial burst, ``s_0 + s_1 c + (c-1) P / (2 OSL)``, which is high where several
    prompts share a pass (+15% for 8 prompts of 1,024 tokens against the simulation, tests/sim_instance.py)
    and low under decode first (-36% for 16 prompts of 6,000 tokens).

    Parameters
    ----------
    rate : numeric, requests/s per instance
    prefill : numeric, P [ms]
    osl : numeric, output length [tokens]
    s0, s1 : numeric, decode-step law [ms], [ms per request]
    wait : numeric, mean prefill wait E[W] [ms] (NaN: saturated)
    concurrency : numeric, NaN when blank [count]
    ttft_at_c : numeric, mean TTFT at the fixed concurrency [ms] (NaN: the serial burst)

    Returns
    -------
    numeric, TPOT [ms]; NaN when there is no output or the instance saturates
    """
    lam = _f(rate) / C.MS_PER_S
    osl = _f(osl)
    P = _f(prefill)
    load = lam * (P + osl * s1)
    den = 1 - load
    osl1 = np.where(osl > 0, osl, 1.0)
    open_ = np.where((approx_as_spreadsheets(load) < 1) & ~np.isnan(_f(wait)), _div(lam * P * (_f(wait) + P) / osl1 + s0 + s1, den), np.nan)
    c = _f(concurrency)
    serial = _f(s0) + _f(s1) * c + _div((c - 1) * P * C.HALF, osl1)
    little = _div(_div(c * C.MS_PER_S, _f(rate)) - _f(ttft_at_c), osl1)
    closed = np.where(np.isnan(_f(ttft_at_c)), serial, little)
    return np.where(osl > 0, np.where(np.isnan(c), open_, closed), np.nan)


@excel_twin(tpot_load_ms)
def _(rate, prefill, osl, s0, s1, wait, concurrency=None, ttft_at_c=None):
    lam = f"{rate}/{N.MS_PER_S}"
    den = f"(1-{lam}*({prefill}+{osl}*{s1}))"
    open_ = f'IF(AND({den}>0,ISNUMBER({wait})),({lam}*{prefill}*({wait}+{prefill})/{osl}+{s0}+{s1})/{den},"")'
    if concurrency is not None:
        closed = (f"{s0}+{s1}*{concurrency}+({concurrency}-1)*{prefill}*{N.HALF}/{osl}" if ttft_at_c is None else
                  f"({concurrency}*{N.MS_PER_S}/{rate}-{ttft_at_c})/{osl}")
        open_ = f"IF(ISNUMBER({concurrency}),{closed},{open_})"
    return f'IF({osl}>0,{open_},"")'


def decode_batch(rate, osl, tpot, concurrency=np.nan):
    r"""Requests in decode at the load, by Little's law.

    .. math:: b = λ \cdot OSL \cdot TPOT \ \text{(open loop)}, \qquad b = c \ \text{(concurrency)}

    Parameters
    ----------
    rate : numeric, requests/s per instance
    osl : numeric, output length [tokens]
    tpot : numeric, TPOT at the load [ms] (NaN: none)
    concurrency : numeric, NaN when blank [count]

    Returns
    -------
    numeric, mean decode batch [requests]
    """
    c = _f(concurrency)
    b = _f(rate) / C.MS_PER_S * _f(osl) * np.where(np.isnan(_f(tpot)), 0.0, tpot)
    return np.where(np.isnan(c), b, c)


@excel_twin(decode_batch)
def _(rate, osl, tpot, concurrency=None):
    b = f"{rate}/{N.MS_PER_S}*{osl}*IF(ISNUMBER({tpot}),{tpot},0)"
    return b if concurrency is None else f"IF(ISNUMBER({concurrency}),{concurrency},{b})"


def hbm_fits(batch, max_fit):
    """``yes`` when the decode batch's KV (at max_seq_len each) fits beside the weights, else ``no``.

    Parameters
    ----------
    batch : numeric, decode batch at the load [requests]
    max_fit : numeric, max_batch_fit of the row [requests]

    Returns
    -------
    str or array of str
    """
    return np.where(_f(batch) <= max_fit, "yes", "no")


@excel_twin(hbm_fits)
def _(batch, max_fit):
    return f'IF({batch}<={max_fit},"yes","no")'


# --------------------------------------------------------------------------- SLO-bound sizing
def slo_quantile(percentile):
    """The quantile a ``slo_percentile`` names (``mean``: 0).

    Parameters
    ----------
    percentile : str or array of str, one of mean, p50, p90, p95, p99

    Returns
    -------
    numeric, q [fraction] (0 for the mean)
    """
    p = np.asarray(percentile, dtype=object)
    return np.vectorize(lambda s: _Q[str(s)], otypes=[float])(p) if p.ndim else np.asarray(_Q[str(p)])


@excel_twin(slo_quantile)
def _(percentile):
    return (f'IF({percentile}="p50",{N.Q_P50},IF({percentile}="p90",{N.Q_P90},IF({percentile}="p95",{N.Q_P95},'
            f'IF({percentile}="p99",{N.Q_P99},0))))')


def demand_rate(demand_tpm, isl, osl):
    r"""Requests per second the whole workload brings.

    .. math:: Λ = demand / ((ISL + OSL) \cdot 60)

    Parameters
    ----------
    demand_tpm : numeric, delivered tokens/min, NaN when blank [tokens/min]
    isl, osl : numeric, input / output length [tokens]

    Returns
    -------
    numeric, requests/s (NaN without demand)
    """
    return _f(demand_tpm) / ((_f(isl) + osl) * C.MS_PER_MIN / C.MS_PER_S)


@excel_twin(demand_rate)
def _(demand_tpm, isl, osl):
    return f'IF(ISNUMBER({demand_tpm}),{demand_tpm}/(({isl}+{osl})*{N.MS_PER_MIN}/{N.MS_PER_S}),"")'


def open_loop_rate(rate_total, concurrency):
    """The demand rate the open-loop targets size for: NaN when Workloads concurrency fixes the
    requests in flight (then TTFT and TPOT do not depend on the instance count; the load memo
    warns when they miss their targets).

    Parameters
    ----------
    rate_total : numeric, Λ requests/s (NaN without demand)
    concurrency : numeric, NaN when blank [count]

    Returns
    -------
    numeric, requests/s
    """
    return np.where(np.isnan(_f(concurrency)), _f(rate_total), np.nan)


@excel_twin(open_loop_rate)
def _(rate_total, concurrency):
    return f'IF(ISNUMBER({concurrency}),"",{rate_total})'


def _lambert_u(a, phi, q):
    """u = W0(a φ (1-q) e^a) / (a φ), capped at 1 (Winitzki start + two Newton steps)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        lnx = np.log(a * phi * (1 - q)) + a
        big = lnx > C.LOG_LIMIT
        ll = np.where(big, lnx, np.log(1 + np.exp(np.where(big, 0.0, lnx))))
        w = ll * (1 - np.log(1 + ll) / (2 + ll))
        for _ in range(2):
            w = w * (1 + lnx - np.log(w)) / (1 + w)
        return np.minimum(1.0, w / (a * phi))


def instances_ttft(rate_total, prefill, t_decode, step, slo, q, concurrency=np.nan, t_fixed=np.nan, isl=np.nan,
                   hit=np.nan, budget=np.nan):
    r"""Smallest instance count whose TTFT statistic meets the target, open loop.

    With ``w = slo - P``, ``k = D s / P`` and ``ρ = λP``:

    * mean (:func:`wait_mean_ms`): ``ρ(P + k)/(2(1-ρ)) = w`` gives ``ρ* = 2w / (P + k + 2w)``;
    * quantile q (:func:`wait_quantile_ms`): where ``ρ <= 1-q`` the wait quantile is the decode
      part ``ρk/(2(1-ρ))``, reaching ``w`` at ``ρ = 2w/(k + 2w)``; above, ``P ln(ρ/(1-q)) + ρk =
      2w(1-ρ)``, i.e. ``ln(ρ/(1-q)) = a(1 - φρ)`` with ``a = 2w/P``, ``φ = (2w + k)/(2w)``, solved by
      the Lambert W function ``ρ* = W0(aφ(1-q)e^a)/(aφ)`` (Winitzki's approximation, LNCS 2667,
      2003, and two Newton steps on ``w + ln w = ln x``: relative error below 1e-8).

    ``n = ceil(Λ P / ρ*)``. NaN without a target or demand; ``inf`` when the target is not above
    the request-alone TTFT (no instance count meets it). With a fixed ``concurrency`` c the TTFT
    does not depend on the count (:func:`ttft_load_ms`, a burst of c): ``inf`` when it misses the
    target there, else NaN.

    Parameters
    ----------
    rate_total : numeric, Λ requests/s of the workload
    prefill, t_decode, step : numeric, P, D, s(B) [ms]
    slo : numeric, TTFT target, NaN when blank [ms]
    q : numeric, quantile (0: the mean) [fraction]
    concurrency : numeric, Workloads concurrency, NaN when blank [count]

    Returns
    -------
    numeric, instances [count]
    """
    P, D, s, w = _f(prefill), _f(t_decode), _f(step), _f(slo) - prefill
    k = D * s / P
    q = _f(q)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho_mean = 2 * w / (P + k + 2 * w)
        rho_low = 2 * w / (k + 2 * w)
        a = 2 * w / P
        rho_tail = _lambert_u(a, (2 * w + k) / (2 * w), q)
        rho = np.where(q > 0, np.where(rho_low <= 1 - q, rho_low, rho_tail), rho_mean)
        n = np.ceil(approx_as_spreadsheets(_f(rate_total) / C.MS_PER_S * P / rho))
    open_ = np.where(np.isnan(_f(slo)) | np.isnan(_f(rate_total)), np.nan, np.where(w > 0, n, np.inf))
    c = _f(concurrency)
    at_c = ttft_load_ms(prefill, np.nan, np.where(np.isnan(c), 1.0, c), t_fixed=t_fixed, isl=isl, hit=hit,
                        budget=budget, q=q)
    return np.where(np.isnan(c), open_, np.where(~np.isnan(_f(slo)) & (at_c > _f(slo)), np.inf, np.nan))


def _ttft_at_concurrency_xl(prefill, q, concurrency, t_fixed, isl, hit, budget) -> str:
    """Excel: the TTFT statistic (mean, or quantile q) of a burst at a fixed concurrency, as
    :func:`ttft_load_ms` gives it (packed into passes when ``budget`` is given)."""
    if budget is not None:
        return pp.burst_ttft_ms.xl(prefill, t_fixed, isl, hit, concurrency, budget, q)
    return f"{prefill}*IF({q}>0,1+{q}*({concurrency}-1),({concurrency}+1)*{N.HALF})"


@excel_twin(instances_ttft)
def _(rate_total, prefill, t_decode, step, slo, q, concurrency=None, t_fixed=None, isl=None, hit=None, budget=None):
    open_ = _instances_ttft_open(rate_total, prefill, t_decode, step, slo, q)
    if concurrency is None:
        return open_
    at_c = _ttft_at_concurrency_xl(prefill, q, concurrency, t_fixed, isl, hit, budget)
    return f'IF(ISNUMBER({concurrency}),IF(AND(ISNUMBER({slo}),{at_c}>{slo}),"unreachable",""),{open_})'


def _rho_xl(P, t_decode, step, slo, q, lnx) -> str:
    """Excel text of ``ρ*`` (:func:`instances_ttft`), from ``ln x`` of the Lambert W argument."""
    w = f"({slo}-{P})"
    k = f"({t_decode}*{step}/{P})"
    a = f"(2*{w}/{P})"
    phi = f"((2*{w}+{k})/(2*{w}))"
    wl = tm.lambert_w_step.xl_term(lnx)          # Winitzki's start and the first Newton step (the terms' text)
    wl = f"({wl}*(1+{lnx}-LN({wl}))/(1+{wl}))"   # the second Newton step
    rho_tail = f"MIN(1,{wl}/({a}*{phi}))"
    rho_low = f"(2*{w}/({k}+2*{w}))"
    rho_mean = f"(2*{w}/({P}+{k}+2*{w}))"
    return f"IF({q}>0,IF({rho_low}<=1-{q},{rho_low},{rho_tail}),{rho_mean})"


def _lnx_xl(P, t_decode, step, slo, q) -> str:
    """Excel text of ``ln x = ln(aφ(1-q)) + a`` (:func:`ttft_log_x`), without its guards."""
    w = f"({slo}-{P})"
    k = f"({t_decode}*{step}/{P})"
    a = f"(2*{w}/{P})"
    phi = f"((2*{w}+{k})/(2*{w}))"
    return f"(LN({a}*{phi}*(1-{q}))+{a})"


def _instances_ttft_open(rate_total, prefill, t_decode, step, slo, q):
    P = prefill
    w = f"({slo}-{P})"
    rho = _rho_xl(P, t_decode, step, slo, q, _lnx_xl(P, t_decode, step, slo, q))
    return (f'IF(AND(ISNUMBER({slo}),ISNUMBER({rate_total})),IF({w}>0,ROUNDUP({rate_total}/{N.MS_PER_S}*{P}/'
            f'({rho}),0),"unreachable"),"")')


def ttft_log_x(prefill, t_decode, step, slo, q):
    r"""First step of :func:`instances_ttft` for a quantile target, kept apart so the spreadsheet
    formulas stay short: ``ln x`` of the Lambert W argument ``x = aφ(1-q)e^a``.

    .. math:: \ln x = \ln(a \varphi (1-q)) + a, \quad a = 2w/P, \; \varphi = (2w + k)/(2w),
              \; w = slo - P, \; k = D s / P

    Parameters
    ----------
    prefill, t_decode, step : numeric, P, D, s(B) [ms]
    slo : numeric, TTFT target, NaN when blank [ms]
    q : numeric, quantile (0: the mean) [fraction]

    Returns
    -------
    numeric, ln x [1]; NaN without a quantile target above P
    """
    P, w = _f(prefill), _f(slo) - prefill
    k = _f(t_decode) * _f(step) / P
    q = _f(q)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = 2 * w / P
        out = np.log(a * ((2 * w + k) / (2 * w)) * (1 - q)) + a
    return np.where((w > 0) & (q > 0), out, np.nan)


@excel_twin(ttft_log_x)
def _(prefill, t_decode, step, slo, q):
    w = f"({slo}-{prefill})"
    return f'IF(AND(ISNUMBER({slo}),{q}>0),IF({w}>0,{_lnx_xl(prefill, t_decode, step, slo, q)[1:-1]},""),"")'


def ttft_rho_max(prefill, t_decode, step, slo, q, lnx):
    r"""Second step of :func:`instances_ttft`: the largest utilisation ``ρ* = λP`` of one instance
    whose TTFT statistic meets the target (the mean, or quantile q; see :func:`instances_ttft`).

    Parameters
    ----------
    prefill, t_decode, step : numeric, P, D, s(B) [ms]
    slo : numeric, TTFT target, NaN when blank [ms]
    q : numeric, quantile (0: the mean) [fraction]
    lnx : numeric, :func:`ttft_log_x` [1]

    Returns
    -------
    numeric, ρ* [fraction]; NaN without a target above P
    """
    P, D, s, w = _f(prefill), _f(t_decode), _f(step), _f(slo) - prefill
    k = D * s / P
    q = _f(q)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        rho_mean = 2 * w / (P + k + 2 * w)
        rho_low = 2 * w / (k + 2 * w)
        a, phi, lnx = 2 * w / P, (2 * w + k) / (2 * w), _f(lnx)
        big = lnx > C.LOG_LIMIT
        ll = np.where(big, lnx, np.log(1 + np.exp(np.where(big, 0.0, lnx))))
        wl = ll * (1 - np.log(1 + ll) / (2 + ll))
        for _ in range(2):
            wl = wl * (1 + lnx - np.log(wl)) / (1 + wl)
        rho_tail = np.minimum(1.0, wl / (a * phi))
        rho = np.where(q > 0, np.where(rho_low <= 1 - q, rho_low, rho_tail), rho_mean)
    return np.where(w > 0, rho, np.nan)


@excel_twin(ttft_rho_max)
def _(prefill, t_decode, step, slo, q, lnx):
    w = f"({slo}-{prefill})"
    return f'IF(ISNUMBER({slo}),IF({w}>0,{_rho_xl(prefill, t_decode, step, slo, q, lnx)},""),"")'


def instances_for_rho(rate_total, prefill, slo, rho, concurrency=np.nan, ttft_at_c=np.nan):
    r"""Last step of :func:`instances_ttft`: the instances that keep each at or below ``ρ*``.

    .. math:: n = \lceil Λ P / ρ^* \rceil

    With a fixed ``concurrency`` c the TTFT does not depend on the count, as in
    :func:`instances_ttft`: ``inf`` when the TTFT statistic at c (``ttft_at_c``, the burst of
    :func:`planner.equations.prefill_passes.burst_ttft_ms` at the target's quantile) misses the
    target, else NaN.

    Parameters
    ----------
    rate_total : numeric, Λ requests/s of the workload
    prefill : numeric, P [ms]
    slo : numeric, TTFT target, NaN when blank [ms]
    rho : numeric, :func:`ttft_rho_max` [fraction]
    concurrency : numeric, Workloads concurrency, NaN when blank [count]
    ttft_at_c : numeric, the TTFT statistic the target applies to at that concurrency [ms]

    Returns
    -------
    numeric, instances [count]; NaN without a target or demand, ``inf`` (``unreachable``) when the
    target is not above the request-alone TTFT, or missed at the fixed concurrency
    """
    P, w = _f(prefill), _f(slo) - prefill
    with np.errstate(divide="ignore", invalid="ignore"):
        n = np.ceil(approx_as_spreadsheets(_f(rate_total) / C.MS_PER_S * P / _f(rho)))
    open_ = np.where(np.isnan(_f(slo)) | np.isnan(_f(rate_total)), np.nan, np.where(w > 0, n, np.inf))
    c, at_c = _f(concurrency), _f(ttft_at_c)
    return np.where(np.isnan(c), open_, np.where(~np.isnan(_f(slo)) & (at_c > _f(slo)), np.inf, np.nan))


@excel_twin(instances_for_rho)
def _(rate_total, prefill, slo, rho, concurrency=None, ttft_at_c=None):
    open_ = (f'IF(AND(ISNUMBER({slo}),ISNUMBER({rate_total})),IF({slo}-{prefill}>0,ROUNDUP({rate_total}/'
             f'{N.MS_PER_S}*{prefill}/{rho},0),"unreachable"),"")')
    if concurrency is None:
        return open_
    return f'IF(ISNUMBER({concurrency}),IF(AND(ISNUMBER({slo}),{ttft_at_c}>{slo}),"unreachable",""),{open_})'


def rate_for_tpot(prefill, osl, s0, s1, t_decode, step, slo):
    r"""Largest request rate per instance whose open-loop mean TPOT is at most ``slo`` [requests/ms].

    With ``E[W] = λ m2 / (2(1-λP))`` (:func:`wait_mean_ms`, ``m2 = P² + D s``) in
    :func:`tpot_load_ms`, ``TPOT(λ) <= T`` multiplied out by ``osl (1-λK)(1-λP)`` (``K = P + osl s1``,
    ``t1 = s0 + s1``) is the quadratic ``A λ² + B λ + C0 <= 0`` with

    .. math::
        A = P (m_2/2 - P^2 - T\, OSL\, K),\quad B = P^2 - OSL\, t_1 P + T\, OSL (K + P),\quad
        C_0 = OSL (t_1 - T)

    ``C0 < 0`` when one request alone meets the target, and the expression is positive at
    ``λ = 1/P``: its first positive root ``λ* = -2 C0 / (B + \sqrt{B^2 - 4 A C_0})`` (the form without
    cancellation) is the bound.

    Parameters
    ----------
    prefill, osl, s0, s1, t_decode, step : numeric, P [ms], OSL [tokens], s0 [ms], s1 [ms], D [ms],
        s(B) [ms]
    slo : numeric, TPOT target T [ms]

    Returns
    -------
    numeric, λ* [requests/ms]
    """
    P, osl, T = _f(prefill), _f(osl), _f(slo)
    t1, K = _f(s0) + s1, P + osl * s1
    m2 = P**2 + _f(t_decode) * step
    A = P * (m2 * C.HALF - P**2 - T * osl * K)
    B = P**2 - osl * t1 * P + T * osl * (K + P)
    c0 = osl * (t1 - T)
    with np.errstate(invalid="ignore", divide="ignore"):
        return -2 * c0 / (B + np.sqrt(B**2 - 4 * A * c0))


@excel_twin(rate_for_tpot)
def _(prefill, osl, s0, s1, t_decode, step, slo):
    P, T = prefill, slo
    t1, K = f"({s0}+{s1})", f"({P}+{osl}*{s1})"
    m2 = f"({P}^2+{t_decode}*{step})"
    A = f"({P}*({m2}*{N.HALF}-{P}^2-{T}*{osl}*{K}))"
    B = f"({P}^2-{osl}*{t1}*{P}+{T}*{osl}*({K}+{P}))"
    c0 = f"({osl}*({t1}-{T}))"
    return f"(-2*{c0}/({B}+SQRT({B}^2-4*{A}*{c0})))"


def instances_tpot(rate_total, prefill, osl, s0, s1, t_decode, step, slo, concurrency=np.nan):
    r"""Smallest instance count whose mean TPOT meets the target, open loop.

    .. math:: n = \lceil Λ / λ^* \rceil, \quad λ^* \text{ from :func:`rate_for_tpot`}

    NaN without a target, demand or output; ``inf`` when a request alone is already slower
    (``s0 + s1 >= slo``). With a fixed ``concurrency`` c the TPOT does not depend on the count
    (:func:`tpot_load_ms`, a burst of c): ``inf`` when it misses the target there, else NaN.

    Parameters
    ----------
    rate_total : numeric, Λ requests/s
    prefill, osl, s0, s1, t_decode, step : as :func:`rate_for_tpot`
    slo : numeric, TPOT target, NaN when blank [ms]
    concurrency : numeric, Workloads concurrency, NaN when blank [count]

    Returns
    -------
    numeric, instances [count]
    """
    t1 = _f(s0) + s1
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = rate_for_tpot(prefill, osl, s0, s1, t_decode, step, slo) * C.MS_PER_S
        n = np.ceil(approx_as_spreadsheets(_f(rate_total) / lam))
    open_ = np.where(np.isnan(_f(slo)) | np.isnan(_f(rate_total)) | (_f(osl) <= 0), np.nan,
                     np.where(t1 < slo, n, np.inf))
    c = _f(concurrency)
    at_c = tpot_load_ms(np.nan, prefill, osl, s0, s1, np.nan, np.where(np.isnan(c), 1.0, c))
    return np.where(np.isnan(c), open_, np.where(~np.isnan(_f(slo)) & (_f(osl) > 0) & (at_c > _f(slo)), np.inf,
                                                 np.nan))


@excel_twin(instances_tpot)
def _(rate_total, prefill, osl, s0, s1, t_decode, step, slo, concurrency=None):
    lam = f"{rate_for_tpot.xl(prefill, osl, s0, s1, t_decode, step, slo)}*{N.MS_PER_S}"
    open_ = (f'IF(AND(ISNUMBER({slo}),ISNUMBER({rate_total}),{osl}>0),IF({s0}+{s1}<{slo},'
             f'ROUNDUP({rate_total}/({lam}),0),"unreachable"),"")')
    if concurrency is None:
        return open_
    at_c = f"{s0}+{s1}*{concurrency}+({concurrency}-1)*{prefill}*{N.HALF}/{osl}"
    return (f'IF(ISNUMBER({concurrency}),IF(AND(ISNUMBER({slo}),{osl}>0),IF({at_c}>{slo},"unreachable",""),""),'
            f'{open_})')


def instances_hbm(rate_total, prefill, osl, s0, s1, t_decode, step, max_fit, ttft_slo=np.nan, tpot_slo=np.nan):
    r"""Smallest instance count whose decode batch fits the HBM, open loop (conservative closed form).

    ``b(λ) = λ osl TPOT(λ) <= B_m``. Without the prefill hold-ups TPOT would be
    ``t1/(1-λK)``, which bounds it from below, so ``λ1 = B_m / (osl t1 + B_m K)`` bounds the answer
    from above; the TPOT the batch may then have, ``B_m / (λ1 osl)``, is at most the TPOT at the
    answer, so :func:`rate_for_tpot` at that TPOT gives ``λ2 <= λ*``: a closed form that never lets
    the batch outgrow the HBM. ``n = ceil(Λ / λ2)``.

    NaN without demand or output, and without a latency target: sizing on throughput alone already
    assumes the row's ``batch`` (its fit is ``hbm_headroom_gib``), so the HBM bound at the load
    enters only the SLO-bound sizing; ``inf`` when not even one request fits (``B_m = 0``).

    Parameters
    ----------
    rate_total : numeric, Λ requests/s
    prefill, osl, s0, s1, t_decode, step : as :func:`rate_for_tpot`
    max_fit : numeric, max_batch_fit B_m [requests]
    ttft_slo, tpot_slo : numeric, the row's targets, NaN when blank [ms]

    Returns
    -------
    numeric, instances [count]
    """
    bm, osl = _f(max_fit), _f(osl)
    rate_total = np.where(np.isnan(_f(ttft_slo)) & np.isnan(_f(tpot_slo)), np.nan, rate_total)
    t1, K = _f(s0) + s1, _f(prefill) + osl * s1
    with np.errstate(divide="ignore", invalid="ignore"):
        lam1 = bm / (osl * t1 + bm * K)
        lam = rate_for_tpot(prefill, osl, s0, s1, t_decode, step, bm / (lam1 * osl)) * C.MS_PER_S
        n = np.ceil(approx_as_spreadsheets(_f(rate_total) / lam))
    return np.where(np.isnan(_f(rate_total)) | (osl <= 0), np.nan, np.where(bm > 0, n, np.inf))


@excel_twin(instances_hbm)
def _(rate_total, prefill, osl, s0, s1, t_decode, step, max_fit, ttft_slo=None, tpot_slo=None):
    lam1 = f"({max_fit}/({osl}*({s0}+{s1})+{max_fit}*({prefill}+{osl}*{s1})))"
    lam = f"{rate_for_tpot.xl(prefill, osl, s0, s1, t_decode, step, f'({max_fit}/({lam1}*{osl}))')}*{N.MS_PER_S}"
    return (f'IF(AND(ISNUMBER({rate_total}),{osl}>0,OR(ISNUMBER({ttft_slo}),ISNUMBER({tpot_slo}))),'
            f'IF({max_fit}>0,ROUNDUP({rate_total}/({lam}),0),"unreachable"),"")')


def instances_concurrency(rate_total, rate_instance, concurrency):
    r"""Instances when each serves a closed loop of ``c`` requests in flight (Workloads concurrency).

    .. math:: n = \lceil Λ / X(c) \rceil, \quad X(c) = c / (cP + OSL\, s(c))

    Parameters
    ----------
    rate_total : numeric, Λ requests/s
    rate_instance : numeric, X(c) requests/s per instance (:func:`load_rate`)
    concurrency : numeric, NaN when blank [count]

    Returns
    -------
    numeric, instances [count] (NaN without concurrency or demand)
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        n = np.ceil(approx_as_spreadsheets(_f(rate_total) / rate_instance))
    return np.where(np.isnan(_f(concurrency)) | np.isnan(_f(rate_total)), np.nan, n)


@excel_twin(instances_concurrency)
def _(rate_total, rate_instance, concurrency):
    return (f'IF(AND(ISNUMBER({concurrency}),ISNUMBER({rate_total})),'
            f'ROUNDUP({rate_total}/{rate_instance},0),"")')


def _num(x):
    """Blank/unreachable text as NaN/inf for the max (Python side of the N()-less Excel IFs)."""
    return _f(x)


def instances_slo(n_throughput, n_ttft, n_tpot, n_hbm, n_conc):
    r"""Instances meeting every target: the largest of the counts each constraint needs.

    .. math:: n = \max(n_{throughput}, n_{ttft}, n_{tpot}, n_{hbm}, n_{concurrency})

    A constraint that no count meets (``inf``: ``unreachable``) is left out here and named by
    :func:`binding`; NaN without demand.

    Parameters
    ----------
    n_throughput, n_ttft, n_tpot, n_hbm, n_conc : numeric, counts (NaN: not applicable) [count]

    Returns
    -------
    numeric, instances [count]
    """
    stack = np.stack(np.broadcast_arrays(*(_num(x) for x in (n_throughput, n_ttft, n_tpot, n_hbm, n_conc))))
    stack = np.where(np.isinf(stack), np.nan, stack)
    with np.errstate(invalid="ignore"):
        out = np.nanmax(np.where(np.isnan(stack), -np.inf, stack), axis=0)
    return np.where(np.isnan(_num(n_throughput)), np.nan, out)


@excel_twin(instances_slo)
def _(n_throughput, n_ttft, n_tpot, n_hbm, n_conc):
    return f'IF(ISNUMBER({n_throughput}),MAX({n_throughput},{n_ttft},{n_tpot},{n_hbm},{n_conc}),"")'


def binding(n, n_throughput, n_ttft, n_tpot, n_hbm, n_conc):
    """Which constraint set the instance count: throughput, ttft_slo, tpot_slo, hbm or concurrency
    (the first in that order on a tie); ``unreachable: <names>`` when a target cannot be met at
    any count; blank without demand.

    Parameters
    ----------
    n : numeric, the SLO-bound count (:func:`instances_slo`) [count]
    n_throughput, n_ttft, n_tpot, n_hbm, n_conc : numeric, each constraint's count [count]

    Returns
    -------
    str or array of str
    """
    cols = [_num(x) for x in (n_throughput, n_ttft, n_tpot, n_hbm, n_conc)]
    n = _num(n)
    cols = np.broadcast_arrays(n, *cols)
    n, cols = cols[0], cols[1:]
    out = np.full(n.shape, "", dtype=object)
    for name, col in reversed(list(zip(BINDINGS, cols))):
        out = np.where(col == n, name, out)
    bad = [np.isinf(c) for c in cols]
    unreach = np.full(n.shape, "", dtype=object)
    for name, b in zip(BINDINGS, bad):
        unreach = np.where(b, np.where(unreach == "", "unreachable: " + name, unreach + ", " + name), unreach)
    out = np.where(unreach != "", unreach, out)
    return np.where(np.isnan(n), "", out)


@excel_twin(binding)
def _(n, n_throughput, n_ttft, n_tpot, n_hbm, n_conc):
    pairs = list(zip(BINDINGS, (n_throughput, n_ttft, n_tpot, n_hbm, n_conc)))
    un = "&".join(f'IF({c}="unreachable",", {name}","")' for name, c in pairs)
    pick = '""'
    for name, c in reversed(pairs):
        pick = f'IF(IF(ISNUMBER({c}),{c},0)={n},"{name}",{pick})'
    return f'IF(ISNUMBER({n}),IF(LEN({un})>0,"unreachable: "&MID({un},3,999),{pick}),"")'


def unreachable_count(binding):
    """Workloads with a latency target (or the HBM fit) no instance count meets: ``binding`` starts
    with ``unreachable`` (:func:`binding`). The Checks sheet counts them as an error.

    Parameters
    ----------
    binding : array of str, the Results binding column

    Returns
    -------
    int, count of such workloads
    """
    return int(sum(1 for b in np.asarray(binding, dtype=object).ravel() if str(b).startswith("unreachable")))


@excel_twin(unreachable_count)
def _(binding):
    return f'COUNTIF({binding},"unreachable*")'


def extra_for_latency(n_slo, n_throughput):
    """What the latency targets add over throughput alone (instances or GPUs), NaN without demand.

    Parameters
    ----------
    n_slo : numeric, SLO-bound count [count]
    n_throughput : numeric, throughput-only count [count]

    Returns
    -------
    numeric, the difference [count]
    """
    return _f(n_slo) - _f(n_throughput)


@excel_twin(extra_for_latency)
def _(n_slo, n_throughput):
    return f'IF(AND(ISNUMBER({n_slo}),ISNUMBER({n_throughput})),{n_slo}-{n_throughput},"")'


# --------------------------------------------------------------------------- the load test (closed loop)
def closed_loop_ttft(prefill, concurrency, num_requests=np.nan, stat="mean"):
    r"""TTFT statistic of a closed-loop load test from the request-alone prefill ``P``.

    ``c`` clients start together and their prefills serialise: request ``k`` of the wave waits
    ``(k-1)P``. With prefill priority the first request's decode cannot advance while the later
    prefills run, so the whole wave decodes together, completes together and the clients send the
    next wave together: with the equal lengths of a load tester's synthetic dataset every wave is
    such a burst (the discrete-event simulation in ``tests/test_queueing.py`` shows it). ``R``
    requests are ``floor(R/c)`` full waves and a last wave of ``r = R mod c``:

    .. math:: \overline{TTFT} = P\, \frac{\lfloor R/c \rfloor c(c+1)/2 + r(r+1)/2}{R}
              \quad (= P (c+1)/2 \text{ when } c \text{ divides } R)

    Spread output lengths desynchronise the waves and queue less: this is the upper end, and what
    published tables at fixed lengths show (issue 16: ``TTFT_1 (c+1)/2`` within about 11% median).
    ``stat``: ``mean``, or ``median``/``p50``/``p90``/``p95``/``p99`` (linear interpolation between
    order statistics, numpy's default, as ``vllm bench serve`` computes percentiles).

    Parameters
    ----------
    prefill : numeric, P [ms]
    concurrency : numeric, clients c [count]
    num_requests : numeric, R (NaN: R = c, one wave) [count]
    stat : str, the statistic

    Returns
    -------
    numeric, TTFT [ms]
    """
    P, c = np.broadcast_arrays(_f(prefill), _f(concurrency))
    R = np.broadcast_to(np.where(np.isnan(_f(num_requests)), c, _f(num_requests)), P.shape)
    c = np.minimum(c, R)
    waves = np.floor(R / c)
    r = R - waves * c
    if stat == "mean":
        return P * (waves * c * (c + 1) * C.HALF + r * (r + 1) * C.HALF) / R
    q = {"median": 0.5, "p50": 0.5, "p90": 0.9, "p95": 0.95, "p99": 0.99}[stat]
    out = np.empty(P.shape)
    for i in np.ndindex(P.shape):
        k, nw, rr = int(round(c[i])), int(round(waves[i])), int(round(r[i]))
        vals = np.concatenate([np.tile(np.arange(1, k + 1), nw), np.arange(1, rr + 1)]) * P[i]
        out[i] = np.quantile(vals, q)
    return out


def prefill_from_load_test(ttft, concurrency, num_requests=np.nan, stat="mean"):
    """Invert :func:`closed_loop_ttft`: the request-alone prefill P that a load test's TTFT implies.

    Every statistic of :func:`closed_loop_ttft` is P times a number fixed by (c, R, stat), so
    ``P = ttft / closed_loop_ttft(1, c, R, stat)``; concurrency 1 returns ``ttft`` exactly.

    Parameters
    ----------
    ttft : numeric, the measured statistic [ms]
    concurrency, num_requests, stat : as :func:`closed_loop_ttft`

    Returns
    -------
    numeric, P [ms]
    """
    t = _f(ttft)
    c = np.broadcast_to(_f(concurrency), t.shape)
    factor = closed_loop_ttft(np.ones(t.shape), c, num_requests, stat)
    return np.where(c <= 1, t, t / factor)
