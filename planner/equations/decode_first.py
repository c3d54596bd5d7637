r"""The closed loop under a decode-first scheduler (vLLM V1), issue 16 "under load".

vLLM's V1 scheduler schedules the running requests' decode tokens first and fills the rest of the
step's token budget ``M`` (``max_num_batched_tokens``) with prefill chunks of the waiting requests,
first come first served (vllm-project/vllm ``vllm/v1/core/sched/scheduler.py``,
``Scheduler.schedule``: "First, schedule the RUNNING requests", then the WAITING ones within
``token_budget``). SGLang schedules waiting prefills first (the wave model of
:mod:`planner.equations.prefill_passes`): a wave of ``c`` requests prefills, then decodes together.
Under decode first the wave breaks up after the first: a request that completes frees its client,
whose next prompt is prefilled beside the others' decode tokens, so in a long steady run prompts
rarely queue behind each other unless the prefills fill the GPU.

The model of a closed loop of ``c`` clients (no think time) with equal lengths (a load tester's
synthetic dataset: ``vllm bench serve --dataset-name random --ignore-eos``), each request ``u`` new
prompt tokens and ``osl`` output tokens; a step over ``b`` decoding requests costs
``s(b) = s0 + s1 b`` (0 when ``b = 0``) plus, when it holds prompt tokens, the per-pass fixed cost
``F`` and their variable work ``V / u`` per token, ``V = max(P - K F, 0)``, ``K = ceil(u / M)`` the
passes of a request alone (so a request alone still takes ``P``):

* **the train** (steady, decode not saturated by prefill): under decode first a request that
  completes in a step is followed by the next client's one step later (each was prefilled one pass
  after the other and decodes one token per step whatever the step holds), and a client's next
  prompt reaches the engine while the step after its completion runs (the HTTP round trip and the
  tokenisation take milliseconds; the engine starts the next step at once), so it waits for that
  step. The returning prompts form a train: the first finds only decode steps and takes
  ``T_a = k (s(c-1) + F) + V`` with ``k = ceil(u / (M - c + 1))`` steps beside the ``c - 1``
  decodes; each of the ``c - 1`` others waits for the step in progress, a step of the train, and
  then its own ``k`` steps, each holding ``t = min(M - c + 1, (c - 1) u)`` prompt tokens:

  .. math:: T_{train} = \big(T_a + (c - 1)(1 + k)\,(s(c-1) + F + t V / u)\big) / c

* **groups** (where a whole prompt fits in a step beside the decodes, ``u <= M - c + 1``; the
  steady state there, in place of the train): the prompts prefilled in the same step decode
  together, complete together and come back together, so after the head the ``c - 1``
  followers return in groups of ``n = floor((M - c + 1)/u)`` whole prompts
  (``J = ceil((c-1)/n)`` groups, the first of ``n1 = min(n, c-1)``, the last of
  ``r = c - 1 - (J-1) n``), each waiting for the step in progress (the previous group's) and then
  taking its own. With ``step(x) = s(c-1) + F + x V``: the head
  ``step(1)``, the first group ``step(1) + step(n1)``, a middle one ``2 step(n)``, the last
  ``step(n) + step(r)``; the mean over the cycle of ``c``.

* **the way there, where one whole prompt fits but not two** (``M - c + 1 < 2u <= 2 (M - c + 1)``,
  ``n = 1``, e.g. ``u = M/2``): the steady state is one prompt a step (the group law with ``n = 1``:
  the head ``step(1)``, every follower ``2 step(1)``), but the loop reaches it from the first burst
  through the train: the burst's prompts come back about two a step, and in steps of
  ``m = M - c + 1`` prompt tokens a prompt spans ``1 + u/m`` steps on average (one whole, the next
  split across two), so a follower of the train waits the step in progress and then those,
  ``(2 + u/m) step(m/u)``; each cycle ``d = floor(u / (m - u))`` more followers fall into one a
  step at ``2 step(1)``, so after the burst, cycle ``j = 1, 2, ...`` holds ``n_j = min(c - 1, d j)``
  of them and

  .. math:: T_j = \big(step(1) + 2 n_j\,step(1) + (c - 1 - n_j)(2 + u/m)\,step(m/u)\big) / c

  (each cycle at least the prefill-bound ``T_s``), the steady state from cycle
  ``L = ceil((c - 1)/d)`` on (:func:`transient_cycles`, :func:`loop_coefficients`); a long run
  (Workloads ``concurrency``) is the steady state. Measured against the simulation in
  ``tests/test_decode_first_half.py``.

* **prefill-bound** (the prompts fill every step): every step holds ``m = M - b_s`` prompt tokens
  and the ``b_s`` requests in decode; a step completes ``m/u`` prompts, each decodes ``osl`` steps,
  so ``b_s = osl\,m/u``, i.e. ``b_s = \min(osl\,M/(u + osl), c - 1)``; the step takes
  ``τ = s(b_s) + F + m V/u`` and the throughput is ``X = m/(u τ)``; Little's law over the loop,
  ``c = X (T + osl\,τ)``, gives

  .. math:: T_s = τ\,(c\,u/m - osl)

* the steady mean TTFT is the larger, ``T = \max(T_{train}, T_s)`` (the groups' in place of the
  train where they apply; :func:`steady_ttft_ms`);
* a test of ``R`` requests starts with a burst of ``c`` on the idle engine (the wave model,
  :func:`planner.equations.prefill_passes.burst_values`), then runs steady: the mean over the test
  is ``(c B + (R - c) T) / R`` (:func:`loop_coefficients`; ``R`` blank: one burst).

A client that returns within the same step boundary (no round trip: the first prompt of a step's
completions enters the very next step) breaks the train: then every prompt takes ``T_a`` alone and
``max(T_a, T_s)`` holds instead; the two bracket what a real client's round trip gives (measured
in ``tests/test_decode_first.py``).

The open loop (Poisson arrivals from a demand) under decode first is the M/G/1 prefill queue of
:mod:`planner.equations.queueing` with the prompt's service beside the decode batch,
``P_df = k (s̄(b) + F) + V`` (:func:`open_batch`, :func:`open_prefill_ms`, :func:`open_ttft_ms`).

Checked against the independent discrete-event simulation ``tests/sim_instance.py``
(``decode_first=True``) in ``tests/test_decode_first.py``; where it holds and where it breaks is in
``docs/model.md`` ("The scheduler"). Every branch is linear in ``(P, F)``: ``a P + b F + k0``, which
the calibration from a load test inverts (:mod:`planner.plan.load_tests`).
"""

from __future__ import annotations

import numpy as np

from planner.core.schema import SCHEDULERS  # noqa: F401 (the values the scheduler columns take)
from planner.equations.kvhit import excel_twin
from planner.equations import prefill_passes as pp
from planner.equations import terms as tm
from planner.equations import queueing as qu
from planner.equations.constants import C, N

EPS = pp.EPS


def _f(x):
    return np.asarray(x, dtype=float)


def _ceil(x):
    return np.ceil(_f(x) - EPS)


def _shape(u, budget, s0, s1, osl, concurrency):
    """The pass structure of both branches (NaN budget: one prompt per pass beside the decodes)."""
    U, M, S0, S1, L, c = np.broadcast_arrays(np.maximum(_f(u), 1.0), _f(budget), _f(s0), _f(s1), _f(osl),
                                             _f(concurrency))
    M = np.where(np.isfinite(M), M, U + np.maximum(c - 1, 0.0))
    K = _ceil(U / M)                                   # passes of a request alone
    b = np.maximum(c - 1, 0.0)
    m = np.maximum(M - b, 1.0)
    k = _ceil(U / m)                                   # steps of a prompt beside c - 1 decodes
    s_b = np.where(b > 0, S0 + S1 * b, 0.0)
    tok = np.minimum(m, b * U)                         # prompt tokens of a step of the train
    b_s = np.clip(L * M / (U + L), 0.0, b)             # decodes beside a full prefill chunk
    m_s = np.maximum(M - b_s, 1.0)
    s_s = np.where(b_s > 0, S0 + S1 * b_s, 0.0)
    g = c * U / m_s - L                                # T_s / tau
    return U, K, k, s_b, tok, m_s, s_s, g, c


def _groups(U, M, c):
    """The followers' groups where a whole prompt fits beside the decodes (``u <= M - c + 1``):
    ``n`` whole prompts share a step (``n = floor((M - c + 1)/u)``), ``J = ceil((c-1)/n)`` groups, the
    first of ``n1 = min(n, c-1)``, the last of ``r = c - 1 - (J-1) n``; returns (whole, n, n1, nB, nC, r)."""
    b = np.maximum(c - 1, 0.0)
    room = np.maximum(np.where(np.isfinite(M), M, U + b) - b, 1.0)
    whole = np.isfinite(M) & (U <= room + EPS)         # a whole prompt fits in a step beside the decodes
    n = np.maximum(np.floor(room / U + EPS), 1.0)
    J = np.where(b > 0, _ceil(b / n), 0.0)
    n1 = np.minimum(n, b)
    r = b - np.maximum(J - 1, 0.0) * n
    nB = np.maximum(J - 2, 0.0) * n
    nC = np.where(J >= 2, r, 0.0)
    return whole, n, n1, nB, nC, r


def _group_values(P, F, s_b, n, n1, r):
    """The steps and TTFTs of the group law (module docstring): ``step(x) = s(c-1) + F + x (P - F)``;
    the head ``T_a = step(1)``; the first group ``A = step(1) + step(n1)``; a middle group
    ``B = 2 step(n)``; the last ``C = step(n) + step(r)``."""
    V = P - F

    def step(x):
        return s_b + F + x * V

    return step(1.0), step(1.0) + step(n1), 2 * step(n), step(n) + step(r)


def steady_coefficients(u, budget, s0, s1, osl, concurrency):
    r"""Both branches of the steady mean TTFT as ``a P + b F + k0``.

    Train: ``a = (1 + w t/u)/c``, ``b = (k - K + w (1 - K t/u))/c``, ``k0 = (k + w) s(c-1)/c`` with
    ``w = (c-1)(1+k)``; prefill-bound: ``a = g m/u``,
    ``b = g (1 - K m / u)``, ``k0 = g s(b_s)``, ``g = c u / m - osl`` (module docstring; both with
    ``V = P - K F``, i.e. ``P >= K F``).

    Parameters
    ----------
    u : numeric, new prompt tokens per request [tokens]
    budget : numeric, M, ``max_num_batched_tokens`` [tokens]
    s0, s1 : numeric, decode-step law [ms], [ms per request]
    osl : numeric, output length [tokens]
    concurrency : numeric, c [count]

    Returns
    -------
    ((a, b, k0) train, (a, b, k0) prefill-bound) : arrays
    """
    train, group, whole, bound = _branches(u, budget, s0, s1, osl, concurrency)
    train = tuple(np.where(whole, gv, tv) for gv, tv in zip(group, train))
    return train, bound


def _branches(u, budget, s0, s1, osl, concurrency):
    """The coefficients ``(a, b, k0)`` of the train, of the group law, where the group law is the
    steady state (a whole prompt fits beside the decodes), and of the prefill-bound loop."""
    U, K, k, s_b, tok, m_s, s_s, g, c = _shape(u, budget, s0, s1, osl, concurrency)
    w = (c - 1) * (1 + k)                              # train steps the c - 1 followers wait, summed
    train = ((1 + w * tok / U) / c, ((k - K) + w * (1 - K * tok / U)) / c, (k + w) * s_b / c)
    # the group law (a prompt fits beside the decodes): step(x) = x P + (1 - x) F + s; the sum
    # T_a + n1 A + nB B + nC C over c, each a sum of two steps but the head's one
    whole, n, n1, nB, nC, r = _groups(U, _f(budget), c)
    xs = 1 + n1 * (1 + n1) + nB * 2 * n + nC * (n + r)          # the prompts' count of V, summed
    steps = 1 + 2 * (n1 + nB + nC)                               # steps waited, summed
    group = (xs / c, (steps - xs) / c, steps * s_b / c)
    bound = (g * m_s / U, g * (1 - K * m_s / U), g * s_s)
    return train, group, whole, bound


def transient_cycles(u, budget, concurrency):
    r"""Cycles of a closed loop under decode first before the train left by the first burst is gone,
    where one whole prompt fits in a step beside the decodes but two do not.

    .. math::
        d = \lfloor u / (M - c + 1 - u) \rfloor,\quad L = \max(\lceil (c - 1)/d \rceil, 1)
        \quad (M - c + 1 < 2u \le 2 (M - c + 1)),\qquad L = 0 \text{ elsewhere}

    Each cycle ``d`` more of the train's ``c - 1`` followers fall into one prompt a step (module
    docstring, "the way there"); derived from and checked against the independent simulation
    (``tests/test_decode_first_half.py``: the cycle at which the simulated loop settles is ``L - 1``
    to ``L`` over ``u/M`` from 0.5 to 0.99 and ``c`` from 4 to 32).

    Parameters
    ----------
    u : numeric, new prompt tokens per request [tokens]
    budget : numeric, M, ``max_num_batched_tokens`` (NaN: none) [tokens]
    concurrency : numeric, c [count]

    Returns
    -------
    numeric, L [cycles] (0 where the steady state is reached at once or the law is another branch)
    """
    one, d, b = _transient(u, budget, concurrency)
    return np.where(one, np.maximum(_ceil(b / d), 1.0), 0.0)


def _transient(u, budget, concurrency):
    """``(one, d, c - 1)``: where one whole prompt fits beside the decodes but two do not, and the
    followers ``d = floor(u / (M - c + 1 - u))`` (at least 1) that fall into one a step each cycle."""
    U, M, c = np.broadcast_arrays(np.maximum(_f(u), 1.0), _f(budget), _f(concurrency))
    b = np.maximum(c - 1, 0.0)
    room = np.where(np.isfinite(M), M - b, np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        one = (b > 0) & (U <= room + EPS) & (2 * U > room + EPS)
        d = np.maximum(np.floor(U / np.maximum(room - U, EPS) + EPS), 1.0)
    return one, d, b


def _part_cycle(u, budget, s0, s1, osl, c, k):
    """The mean ``(a, b, k0)`` of a test's last cycle of ``k < c`` requests: the head and ``k - 1``
    followers, the only prompts left to return (the other clients have sent their last), beside the
    ``c - 1`` decodes: the group law over ``k - 1`` followers where a whole prompt fits beside the
    decodes (groups of ``n``, the first of ``min(n, k - 1)``), else the train's head and ``k - 1``
    followers with ``t = min(M - c + 1, (k - 1) u)`` prompt tokens a step (module docstring)."""
    U, K, kk, s_b, _tok, _m_s, _s_s, _g, cc = (float(x) for x in _shape(u, budget, s0, s1, osl, c))
    unit_p, unit_f, unit_s = np.eye(3)
    f = float(k) - 1.0
    whole = bool(_groups(U, _f(budget), cc)[0])
    room = max(float(budget) - (cc - 1), 1.0) if whole else np.nan
    if whole:
        n = max(np.floor(room / U + EPS), 1.0)
        J = float(_ceil(f / n)) if f > 0 else 0.0
        n1, r = min(n, f), f - max(J - 1, 0.0) * n
        nB, nC = max(J - 2, 0.0) * n, (r if J >= 2 else 0.0)
        vals = _group_values(unit_p, unit_f, s_b * unit_s, n, n1, r)
        total = vals[0] + n1 * vals[1] + nB * vals[2] + nC * vals[3]
    else:
        v = unit_p - K * unit_f
        tok = min(max(float(budget) - (cc - 1), 1.0) if np.isfinite(float(budget)) else U, f * U)
        total = kk * (s_b * unit_s + unit_f) + v + f * (1 + kk) * (s_b * unit_s + unit_f + tok * v / U)
    return total / float(k)


def _transient_cycle(u, budget, s0, s1, c, j):
    """``(a, b, k0)`` of cycle ``j`` after the burst on the way to one prompt a step (module
    docstring): ``T_j = (step(1) + 2 n_j step(1) + (c - 1 - n_j)(2 + u/m) step(m/u)) / c`` with
    ``step(x) = x P + (1 - x) F + s(c-1)`` (one pass alone, ``K = 1``), ``m = M - c + 1``."""
    _one, d, b = _transient(u, budget, c)
    d, b = float(d), float(b)
    x = (float(budget) - b) / max(float(u), 1.0)          # prompts a step of the train holds, m/u
    s = float(s0) + float(s1) * b
    n_j = min(b, d * j)
    w = (b - n_j) * (2 + 1 / x)                         # the train followers' steps, summed
    return ((1 + 2 * n_j + w * x) / c, w * (1 - x) / c, (1 + 2 * n_j + w) * s / c)


def steady_ttft_ms(prefill, t_fixed, u, budget, s0, s1, osl, concurrency, q=np.nan):
    r"""Mean TTFT of a long steady closed loop of ``c`` clients under a decode-first scheduler.

    .. math::
        T = \max\Big(\frac{T_a + (c-1)(1+k)(s(c-1) + F + t V/u)}{c},\ τ (c u / m - osl)\Big),\quad
        T_a = k (s(c-1) + F) + V,\ τ = s(b_s) + F + m V / u

    with ``V = max(P - ceil(u/M) F, 0)``, ``k = ceil(u / (M - c + 1))``,
    ``t = min(M - c + 1, (c-1) u)``, ``m = M - b_s``, ``b_s = min(osl M / (u + osl), c - 1)``
    (module docstring). At ``c = 1``: ``P``. A quantile ``q`` (the values of one cycle ordered: the
    train's head ``T_a``, then its ``c - 1`` followers at ``(1+k)(s(c-1) + F + t V/u)``; linear
    interpolation at position ``q (c-1)``, numpy's default): ``max(T_a + min(q (c-1), 1) (T_f - T_a), T_s)``;
    under the group law the ordered value at position ``ceil(q (c-1))`` (head, first group, last,
    middle: the upper of the two numpy would interpolate, which keeps the Excel formula short).

    Parameters
    ----------
    prefill : numeric, request-alone prefill P (``ttft_ms``) [ms]
    t_fixed : numeric, fixed cost per forward pass F [ms]
    u : numeric, new prompt tokens per request (:func:`planner.equations.prefill_passes.new_tokens`) [tokens]
    budget : numeric, M, new tokens per step (``max_num_batched_tokens``) [tokens]
    s0, s1 : numeric, decode-step law (``step_weights_ms``, ``step_kv_ms``) [ms], [ms per request]
    osl : numeric, output length [tokens]
    concurrency : numeric, c, NaN when blank [count]
    q : numeric, quantile (NaN or 0: the mean) [fraction]

    Returns
    -------
    numeric, mean (or quantile) TTFT [ms] (NaN without concurrency)
    """
    P, F = _f(prefill), _f(t_fixed)
    U, K, k, s_b, tok, m_s, s_s, g, c = _shape(u, budget, s0, s1, osl, concurrency)
    V = np.maximum(P - K * F, 0.0)
    t_a = k * (s_b + F) + V
    t_f = (1 + k) * (s_b + F + tok * V / U)            # a follower of the train
    qq = np.broadcast_to(np.nan_to_num(_f(q), nan=0.0), t_a.shape)
    t_train = np.where(qq > 0, t_a + np.minimum(qq * (c - 1), 1.0) * (t_f - t_a), (t_a + (c - 1) * t_f) / c)
    # the group law where a prompt fits beside the decodes (module docstring)
    whole, n, n1, nB, nC, r = _groups(U, _f(budget), c)
    g_a, g_A, g_B, g_C = _group_values(P, F, s_b, n, n1, r)
    g_mean = (g_a + n1 * g_A + nB * g_B + nC * g_C) / np.maximum(c, 1.0)
    j = _ceil(qq * np.maximum(c - 1, 0.0))             # the ordered value at position ceil(q (c - 1))
    g_q = np.where(j < 1, g_a, np.where(j <= n1, g_A, np.where(j <= n1 + nC, g_C, g_B)))
    t_train = np.where(whole, np.where(qq > 0, g_q, g_mean), t_train)
    t_s = (s_s + F + m_s * V / U) * g
    return np.where(np.isfinite(_f(concurrency) * U), np.maximum(t_train, t_s), np.nan)


@excel_twin(steady_ttft_ms)
def _(prefill, t_fixed, u, budget, s0, s1, osl, concurrency, q=None):
    c = concurrency
    # the loop's terms, as planner.equations.terms writes them (their columns shorten this text)
    b = tm.loop_others.xl_term(c)
    m = tm.loop_pass_tokens.xl_term(u, budget, c)
    v = tm.loop_variable_ms.xl_term(prefill, t_fixed, u, budget, c)
    k = tm.loop_prompt_steps.xl_term(u, budget, c)
    s_b = tm.loop_step_ms.xl_term(s0, s1, c)
    b_s = tm.loop_steady_decodes.xl_term(u, budget, osl, c)
    m_s = f"MAX({m}-{b_s},1)"
    s_s = f"IF({b_s}>0,{s0}+{s1}*{b_s},0)"
    tok = f"MIN(MAX({m}-{b},1),{b}*{u})"
    t_a = f"{k}*({s_b}+{t_fixed})+{v}"
    t_f = f"(1+{k})*({s_b}+{t_fixed}+{tok}*{v}/{u})"
    mean = f"({t_a}+{b}*{t_f})/MAX({c},1)"
    # the group law where a whole prompt fits beside the decodes (u <= M - c + 1), written as
    # values alpha H + X V with H = s(c-1) + F the step's overhead and V = P - F: the head H + V,
    # the first group 2H + (1 + n1) V, a middle one 2H + 2n V, the last 2H + (n + r) V
    n = tm.loop_group_size.xl_term(u, budget, c)
    jg = f"CEILING({b}/{n}-{EPS:g},1)"
    r = f"({b}-({jg}-1)*{n})"
    hh = f"({s_b}+{t_fixed})"
    vg = f"({prefill}-{t_fixed})"
    sum_x = f"IF({b}>{n},1+{n}*(1+{n})+2*{n}^2*({jg}-2)+{r}*({n}+{r}),1+{b}*(1+{b}))"
    g_mean = f"({hh}*(2*{c}-1)+{vg}*{sum_x})/MAX({c},1)"
    whole = f"AND(ISNUMBER({budget}),{u}<={budget}-{b}+{EPS:g})"
    if q is None:
        t_train = f"IF({whole},{g_mean},{mean})"
    else:
        quantile = f"{t_a}+MIN({q}*{b},1)*({t_f}-({t_a}))"
        j = f"CEILING({q}*{b}-{EPS:g},1)"             # the ordered position ceil(q (c-1)), 0: the head
        xv = f"IF({j}<=MIN({n},{b}),1+MIN({n},{b}),IF({j}<={n}+{r},{n}+{r},2*{n}))"
        g_q = f"IF({j}<1,{hh}+{vg},2*{hh}+{vg}*{xv})"
        q_val = f"IF({whole},{g_q},{quantile})"
        t_train = q_val if q in pp.POSITIVE_Q else f"IF({q}>0,{q_val},IF({whole},{g_mean},{mean}))"
    t_s = f"({s_s}+{t_fixed}+{m_s}*{v}/{u})*({c}*{u}/{m_s}-{osl})"
    return f'IF(ISNUMBER({c}),MAX({t_train},{t_s}),"")'


def loop_coefficients(u, concurrency, budget, num_requests, stat, s0, s1, osl, p0, f0=0.0):
    r"""``(a, b, k0)`` with a decode-first load test's TTFT statistic ``= a P + b F + k0``.

    The test of ``R`` requests is a burst of ``c`` on the idle engine (the wave model's
    coefficients, :func:`planner.equations.prefill_passes.burst_values`) and ``R - c`` requests at
    the steady TTFT (:func:`steady_coefficients`): mean ``(Σ_burst + (R - c) T) / R``; where one
    whole prompt fits beside the decodes but two do not, the cycles after the burst are the way
    there of the module docstring, cycle ``j`` at ``max(T_j, T_s)``, ``c`` requests each (the last
    one the rest), the steady state from cycle :func:`transient_cycles` on; a quantile the
    linear interpolation of the ordered values (numpy's default, as ``vllm bench serve``). ``R``
    blank or ``<= c``: one burst, the wave model exactly. The steady branch (train or prefill-bound)
    and the order of the values are those at ``(p0, f0)``: each branch is linear, the statistic is
    their maximum, so the branch that gives the smaller ``P`` for the measured TTFT is the one that
    binds (:mod:`planner.plan.load_tests` passes the prefill read at ``F = 0``).

    Parameters
    ----------
    u : float, new prompt tokens per request [tokens]
    concurrency : float, c [count]
    budget : float, M [tokens]
    num_requests : float, R (NaN: c) [count]
    stat : str, ``mean``, ``median``/``p50``, ``p90``, ``p95`` or ``p99``
    s0, s1 : float, decode-step law [ms], [ms per request]
    osl : float, output length [tokens]
    p0, f0 : float, the prefill and per-pass fixed cost that choose the branch [ms]

    Returns
    -------
    (a, b, k0) : floats
    """
    c = int(round(float(concurrency)))
    r_tot = c if not np.isfinite(num_requests) else int(round(float(num_requests)))
    c = max(1, min(c, r_tot))
    a_b, b_b = pp.burst_values(u, c, budget)
    steady = []
    if r_tot > c:
        tr, gr, wh, bd = _branches(u, budget, s0, s1, osl, c)
        train, group, bound = (np.array([float(x) for x in v]) for v in (tr, gr, bd))
        cycles = float(transient_cycles(u, budget, c))
        n_s = r_tot - c
        if cycles > 0:
            # cycle j = 1, 2, ... after the burst (c requests each, the last the rest), until the
            # steady state at cycle L; each at least the prefill-bound branch (at (p0, f0))
            n_cyc = int(min(np.ceil(n_s / c), cycles))
            counts = np.full(n_cyc + 1, float(c))
            counts[-1] = max(n_s - c * n_cyc, 0.0)
            counts[:n_cyc] = np.minimum(c, np.maximum(n_s - c * np.arange(n_cyc), 0.0))
            after = [np.array(_transient_cycle(u, budget, s0, s1, c, j)) for j in range(1, n_cyc + 1)] + [group]
            at = lambda v: v[0] * p0 + v[1] * f0 + v[2]  # noqa: E731
            after = [tuple(v if at(v) >= at(bound) else bound) for v in after]
            steady = [(after, counts)]
        else:
            # full cycles at the cycle's mean; a last part cycle of k < c requests is the head and the
            # k - 1 prompts left to return (_part_cycle), not the whole cycle's mean
            part = n_s % c
            now = [tuple(group if bool(wh) else train)]
            counts = np.array([float(n_s - part)])
            if part:
                now.append(tuple(_part_cycle(u, budget, s0, s1, osl, c, part)))
                counts = np.append(counts, float(part))
            steady = [(now, counts), ([tuple(bound)], np.array([float(n_s)]))]
    best = None
    for entries, counts in (steady or [([(0.0, 0.0, 0.0)], np.array([0.0]))]):
        a = np.concatenate([a_b, [e[0] for e in entries]])
        b = np.concatenate([b_b, [e[1] for e in entries]])
        k0 = np.concatenate([np.zeros(len(a_b)), [e[2] for e in entries]])
        w = np.concatenate([np.ones(len(a_b)), counts])
        if stat == "mean":
            coef = tuple(float((w * x).sum() / r_tot) for x in (a, b, k0))
        else:
            q = {"median": 0.5, "p50": 0.5, "p90": 0.9, "p95": 0.95, "p99": 0.99}[stat]
            keep = w > 0
            a, b, k0, w = a[keep], b[keep], k0[keep], w[keep]
            order = np.argsort(a * p0 + b * f0 + k0, kind="stable")
            a, b, k0, cum = a[order], b[order], k0[order], np.cumsum(w[order])
            x = q * (r_tot - 1)
            k_lo = int(np.floor(x))
            i0, i1 = (int(np.searchsorted(cum, kk, side="right")) for kk in (k_lo, min(k_lo + 1, r_tot - 1)))
            fr = x - k_lo
            coef = tuple(float(y[i0] + fr * (y[i1] - y[i0])) for y in (a, b, k0))
        value = coef[0] * p0 + coef[1] * f0 + coef[2]
        if best is None or value > best[0]:       # the statistic is the maximum of the branches
            best = (value, coef)
    return best[1]


def concurrency_ttft_u(prefill, t_fixed, u, concurrency, budget, q, scheduler, s0, s1, osl):
    r"""TTFT at a fixed concurrency (Workloads ``concurrency``) under the workload's scheduler.

    .. math::
        TTFT = \text{burst}(P, F, u, c, M, q) \ \text{(prefill_first, blank)}, \qquad
        TTFT = \text{steady}(P, F, u, M, s_0, s_1, osl, c, q) \ \text{(decode_first)}

    Prefill first every cycle of the loop is a burst of ``c``
    (:func:`planner.equations.prefill_passes.burst_ttft_u`); decode first the loop runs steady,
    :func:`steady_ttft_ms`.

    Parameters
    ----------
    prefill, t_fixed, u, concurrency, budget, q : as :func:`planner.equations.prefill_passes.burst_ttft_u`
    scheduler : str or array of str, ``prefill_first``, ``decode_first`` or blank
    s0, s1 : numeric, decode-step law [ms], [ms per request]
    osl : numeric, output length [tokens]

    Returns
    -------
    numeric, TTFT [ms] (NaN without concurrency)
    """
    burst = pp.burst_ttft_u(prefill, t_fixed, u, concurrency, budget, q)
    df = np.asarray(scheduler, dtype=object) == "decode_first"
    if not np.any(df):
        return burst
    steady = steady_ttft_ms(prefill, t_fixed, u, budget, s0, s1, osl, concurrency, q)
    return np.where(df, steady, burst)


@excel_twin(concurrency_ttft_u)
def _(prefill, t_fixed, u, concurrency, budget, q, scheduler, s0, s1, osl):
    burst = pp.burst_ttft_u.xl(prefill, t_fixed, u, concurrency, budget, q)
    steady = steady_ttft_ms.xl(prefill, t_fixed, u, budget, s0, s1, osl, concurrency, q)
    return f'IF({scheduler}="decode_first",{steady},{burst})'


def _is_df(scheduler):
    return np.asarray(scheduler, dtype=object) == "decode_first"


def steady_for(scheduler, prefill, t_fixed, u, budget, s0, s1, osl, concurrency, q=np.nan):
    """:func:`steady_ttft_ms` where the workload's ``scheduler`` is ``decode_first``, else NaN (blank).

    Parameters
    ----------
    scheduler : str or array of str, the Workloads scheduler
    prefill, t_fixed, u, budget, s0, s1, osl, concurrency, q : as :func:`steady_ttft_ms`

    Returns
    -------
    numeric, TTFT [ms] (NaN unless decode first at a fixed concurrency)
    """
    return np.where(_is_df(scheduler), steady_ttft_ms(prefill, t_fixed, u, budget, s0, s1, osl, concurrency, q),
                    np.nan)


@excel_twin(steady_for)
def _(scheduler, prefill, t_fixed, u, budget, s0, s1, osl, concurrency, q=None):
    return f'IF({scheduler}="decode_first",{steady_ttft_ms.xl(prefill, t_fixed, u, budget, s0, s1, osl, concurrency, q)},"")'


def steady_mean_for(scheduler, prefill, t_fixed, u, budget, s0, s1, osl, concurrency):
    """The mean of :func:`steady_for` (Results ``ttft_steady_ms``). Parameters as :func:`steady_for`.

    Returns
    -------
    numeric, mean TTFT [ms]
    """
    return steady_for(scheduler, prefill, t_fixed, u, budget, s0, s1, osl, concurrency)


@excel_twin(steady_mean_for)
def _(scheduler, prefill, t_fixed, u, budget, s0, s1, osl, concurrency):
    return steady_for.xl(scheduler, prefill, t_fixed, u, budget, s0, s1, osl, concurrency)


def steady_p90_for(scheduler, prefill, t_fixed, u, budget, s0, s1, osl, concurrency):
    """The 90th percentile of :func:`steady_for` (Results ``ttft_steady_p90_ms``). Parameters as
    :func:`steady_for`.

    Returns
    -------
    numeric, p90 TTFT [ms]
    """
    return steady_for(scheduler, prefill, t_fixed, u, budget, s0, s1, osl, concurrency, C.Q_P90)


@excel_twin(steady_p90_for)
def _(scheduler, prefill, t_fixed, u, budget, s0, s1, osl, concurrency):
    return steady_for.xl(scheduler, prefill, t_fixed, u, budget, s0, s1, osl, concurrency, N.Q_P90)


def by_scheduler(scheduler, decode_first, prefill_first):
    """The decode-first value where the workload's ``scheduler`` is ``decode_first``, else the
    prefill-first one (blank scheduler: prefill first, the wave model).

    Parameters
    ----------
    scheduler : str or array of str
    decode_first, prefill_first : numeric, the two values [any unit]

    Returns
    -------
    numeric
    """
    return np.where(_is_df(scheduler), _f(decode_first), _f(prefill_first))


@excel_twin(by_scheduler)
def _(scheduler, decode_first, prefill_first):
    return f'IF({scheduler}="decode_first",{decode_first},{prefill_first})'


def ttft_load_sched_ms(prefill, wait, concurrency, t_fixed, isl, hit, budget, scheduler, steady):
    """Mean TTFT at the row's load (Results ``ttft_load_ms``): at a fixed concurrency with the
    scheduler ``decode_first`` the steady loop's (``steady``, :func:`steady_mean_for`), else
    :func:`planner.equations.queueing.ttft_load_ms` (the open loop, or the burst of a prefill-first loop).

    Parameters
    ----------
    prefill, wait, concurrency, t_fixed, isl, hit, budget : as :func:`planner.equations.queueing.ttft_load_ms`
    scheduler : str or array of str
    steady : numeric, the decode-first steady TTFT [ms]

    Returns
    -------
    numeric, TTFT at the load [ms]
    """
    base = qu.ttft_load_ms(prefill, wait, concurrency, t_fixed, isl, hit, budget)
    return np.where(_is_df(scheduler) & np.isfinite(_f(concurrency)), _f(steady), base)


@excel_twin(ttft_load_sched_ms)
def _(prefill, wait, concurrency, t_fixed, isl, hit, budget, scheduler, steady):
    base = qu.ttft_load_ms.xl(prefill, wait, concurrency, t_fixed, isl, hit, budget)
    return f'IF(AND(ISNUMBER({concurrency}),{scheduler}="decode_first"),{steady},{base})'


def ttft_load_p90_sched_ms(prefill, wait_p90, concurrency, t_fixed, isl, hit, budget, scheduler, steady_p90):
    """p90 TTFT at the row's load (Results ``ttft_load_p90_ms``): as :func:`ttft_load_sched_ms` with
    :func:`planner.equations.queueing.ttft_load_p90_ms` and the steady p90 (:func:`steady_p90_for`).

    Parameters
    ----------
    prefill, wait_p90, concurrency, t_fixed, isl, hit, budget : as :func:`planner.equations.queueing.ttft_load_p90_ms`
    scheduler : str or array of str
    steady_p90 : numeric, the decode-first steady p90 [ms]

    Returns
    -------
    numeric, p90 TTFT at the load [ms]
    """
    base = qu.ttft_load_p90_ms(prefill, wait_p90, concurrency, t_fixed, isl, hit, budget)
    return np.where(_is_df(scheduler) & np.isfinite(_f(concurrency)), _f(steady_p90), base)


@excel_twin(ttft_load_p90_sched_ms)
def _(prefill, wait_p90, concurrency, t_fixed, isl, hit, budget, scheduler, steady_p90):
    base = qu.ttft_load_p90_ms.xl(prefill, wait_p90, concurrency, t_fixed, isl, hit, budget)
    return f'IF(AND(ISNUMBER({concurrency}),{scheduler}="decode_first"),{steady_p90},{base})'


# ----------------------------------------------------------------------------- the open loop, decode first
def _open_k(U, M, b):
    """Steps of a prompt beside ``b`` decodes, ``ceil(u / (M - b))`` (NaN budget: one step)."""
    room = np.maximum(np.where(np.isfinite(M), M, U + b) - b, 1.0)
    return _ceil(U / room)


def open_batch(rate, prefill, t_fixed, u, budget, s0, s1, osl):
    r"""Decode batch of the open loop (Poisson arrivals) under a decode-first scheduler.

    Every step advances each decoding request by one token and costs ``s(b) = s0 + s1 b``, plus
    ``F`` and the prompt work when it holds prompt tokens; the prompts take ``k F + V`` of GPU time
    each (``k = ceil(u / (M - b))`` chunks, ``V = P - K F``, ``K = ceil(u/M)``), a fraction
    ``λ (k F + V)`` of the time, and the steps the rest, so ``TPOT = s(b) / (1 - λ(kF + V))``; with
    Little's law ``b = λ osl TPOT``:

    .. math:: b = \frac{λ\, osl\, s_0}{1 - λ (k F + V) - λ\, osl\, s_1}

    solved with ``k = K`` and then once more with ``k`` at that batch.

    Parameters
    ----------
    rate : numeric, requests/s per instance
    prefill : numeric, P, request-alone prefill [ms]
    t_fixed : numeric, F, fixed cost per forward pass [ms]
    u : numeric, new prompt tokens per request [tokens]
    budget : numeric, M, ``max_num_batched_tokens`` (NaN: one prompt a step) [tokens]
    s0, s1 : numeric, decode-step law [ms], [ms per request]
    osl : numeric, output length [tokens]

    Returns
    -------
    numeric, mean decode batch [requests] (NaN when the instance saturates)
    """
    lam = _f(rate) / 1000.0
    P, F, U, M = _f(prefill), _f(t_fixed), np.maximum(_f(u), 1.0), _f(budget)
    K = _open_k(U, M, 0.0)
    V = np.maximum(P - K * F, 0.0)

    def solve(k):
        den = 1 - lam * (k * F + V) - lam * _f(osl) * _f(s1)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(den > 0, lam * _f(osl) * _f(s0) / den, np.nan)

    b0 = solve(K)
    return solve(_open_k(U, M, np.nan_to_num(b0, nan=0.0)))


@excel_twin(open_batch)
def _(rate, prefill, t_fixed, u, budget, s0, s1, osl):
    lam = f"({rate}/1000)"

    def k_at(b):
        return f"CEILING({u}/MAX(IF(ISNUMBER({budget}),{budget},{u}+{b})-{b},1)-{EPS:g},1)"

    v = f"MAX({prefill}-{k_at(0)}*{t_fixed},0)"

    def solve(k):
        den = f"(1-{lam}*({k}*{t_fixed}+{v})-{lam}*{osl}*{s1})"
        return f'IF({den}>0,{lam}*{osl}*{s0}/{den},"")'

    b0 = solve(k_at(0))
    return solve(k_at(f"N({b0})"))


def open_prefill_ms(prefill, t_fixed, u, budget, s0, s1, batch):
    r"""A prompt's time in the engine beside ``b`` decodes under decode first (the open loop's
    service time of the prefill queue): ``k`` steps, each paying the decode step and ``F``, and its
    variable work ``V``:

    .. math:: P_{df} = k\,(s̄(b) + F) + V, \quad k = \lceil u / (M - b) \rceil,\ V = P - \lceil u/M \rceil F

    ``s̄(b)`` the mean decode part of a step (:func:`open_step_ms`). At ``b = 0``: ``P``.

    Parameters
    ----------
    prefill, t_fixed, u, budget, s0, s1 : as :func:`open_batch`
    batch : numeric, b, decode batch (:func:`open_batch`) [requests]

    Returns
    -------
    numeric, P_df [ms]
    """
    P, F, U, M, b = _f(prefill), _f(t_fixed), np.maximum(_f(u), 1.0), _f(budget), _f(batch)
    V = np.maximum(P - _open_k(U, M, 0.0) * F, 0.0)
    return _open_k(U, M, b) * (open_step_ms(s0, s1, b) + F) + V


def open_step_ms(s0, s1, batch):
    r"""The decode part of a step in the open loop: the requests in decode are Poisson with mean ``b``
    (an M/G/inf stage), so a step carries the weights read with probability ``1 - e^{-b}`` and the
    KV of ``b`` requests on average: ``s̄(b) = (1 - e^{-b}) s0 + s1 b``.

    Parameters
    ----------
    s0, s1 : numeric, decode-step law [ms], [ms per request]
    batch : numeric, b [requests]

    Returns
    -------
    numeric, s̄(b) [ms]
    """
    b = np.maximum(_f(batch), 0.0)
    return (1 - np.exp(-b)) * _f(s0) + _f(s1) * b


@excel_twin(open_step_ms)
def _(s0, s1, batch):
    return f"((1-EXP(-MAX({batch},0)))*{s0}+{s1}*MAX({batch},0))"


@excel_twin(open_prefill_ms)
def _(prefill, t_fixed, u, budget, s0, s1, batch):
    def k_at(b):
        return f"CEILING({u}/MAX(IF(ISNUMBER({budget}),{budget},{u}+{b})-{b},1)-{EPS:g},1)"

    v = f"MAX({prefill}-{k_at(0)}*{t_fixed},0)"
    return f"{k_at(batch)}*({open_step_ms.xl(s0, s1, batch)}+{t_fixed})+{v}"


def open_ttft_ms(rate, prefill, t_fixed, u, budget, s0, s1, osl, batch):
    r"""Mean TTFT of the open loop (Poisson arrivals at ``rate``) under a decode-first scheduler:
    the M/G/1 prefill queue of :func:`planner.equations.queueing.wait_mean_ms` with the prompt's
    service beside the decode batch, ``P_df`` (:func:`open_prefill_ms`) in place of ``P``:

    .. math:: TTFT = P_{df} + \frac{λ (P_{df}^2 + D\, s̄(b))}{2 (1 - λ P_{df})}, \quad D = osl\, s̄(b) / b

    with ``b`` the decode batch of :func:`open_batch` (a cell of its own in a workbook). Checked
    against the independent simulation (``tests/test_decode_first_open.py``; where it holds:
    docs/model.md, "the scheduler").

    Parameters
    ----------
    rate, prefill, t_fixed, u, budget, s0, s1, osl : as :func:`open_batch`
    batch : numeric, b, :func:`open_batch` (NaN or blank: saturated) [requests]

    Returns
    -------
    numeric, mean TTFT [ms] (NaN when the instance saturates)
    """
    b = _f(batch)
    p_df = open_prefill_ms(prefill, t_fixed, u, budget, s0, s1, np.nan_to_num(b, nan=0.0))
    s = open_step_ms(s0, s1, np.nan_to_num(b, nan=0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        d = np.where(b > 0, _f(osl) * s / b, 0.0)
    wait = qu.wait_mean_ms(rate, p_df, d, s)
    return np.where(np.isfinite(b), p_df + wait, np.nan)


@excel_twin(open_ttft_ms)
def _(rate, prefill, t_fixed, u, budget, s0, s1, osl, batch):
    p_df = open_prefill_ms.xl(prefill, t_fixed, u, budget, s0, s1, batch)
    s = open_step_ms.xl(s0, s1, batch)
    d = f"IF({batch}>0,{osl}*{s}/{batch},0)"
    wait = qu.wait_mean_ms.xl(rate, f"({p_df})", d, s)
    return f'IF(ISNUMBER({batch}),IF(ISNUMBER({wait}),({p_df})+{wait},""),"")'
