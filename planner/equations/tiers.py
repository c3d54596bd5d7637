"""The KV tiers' equations (issue 19), each a small vectorised function with its Excel twin right
below (as in :mod:`planner.equations.kvhit`): the hit of a stored curve at a capacity, the
effective KV bandwidth of the tiers' hits, the units of a tier bought, and the tier sweep's
break-even price and cost optimum. Used by :mod:`planner.inputs.kv_tiers` (the plan's values) and
:mod:`planner.workbook.kv_tiers_sheets` / :mod:`planner.workbook.tier_worth` (the sheets).
"""

from __future__ import annotations

import numpy as np

from planner.equations.constants import C, N
from planner.equations.kvhit import excel_twin, xl_arg
from planner.equations.tables import largest, product_of, sum_of, typed_or

NO_LOAD_GBPS = 1e290  # effective bandwidth when every hit is served from HBM (nothing to load; x 1e9 stays finite in Excel)


def curve_hit(x, caps, hits, count):
    r"""Linear interpolation in a stored hit curve, flat beyond its ends.

    .. math:: h(x) = h_i + (x - c_i) (h_{i+1} - h_i) / (c_{i+1} - c_i), \quad c_i \le x < c_{i+1}

    (Excel: ``i = MATCH(x, C, 1)``, the same order of operations.)

    Parameters
    ----------
    x : numeric, capacity [GiB]
    caps : increasing capacities of the curve, ``caps[0] = 0`` [GiB]
    hits : hit ratios at them [fraction]
    count : int, points of the curve (``len(caps)``) [count]

    Returns
    -------
    numeric [fraction]
    """
    xs, ys = np.asarray(caps, dtype=float)[:count], np.asarray(hits, dtype=float)[:count]
    x = np.asarray(x, dtype=float)
    i = np.clip(np.searchsorted(xs, x, side="right") - 1, 0, len(xs) - 1)
    last = i >= len(xs) - 1
    j = np.minimum(i + 1, len(xs) - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        mid = ys[i] + (x - xs[i]) * (ys[j] - ys[i]) / (xs[j] - xs[i])
    return np.where(last, ys[-1], mid)


@excel_twin(curve_hit)
def _(x, caps, hits, count):
    i = f"MATCH({x},{caps},1)"
    return (f"IF({i}>={count},INDEX({hits},{count}),INDEX({hits},{i})+({x}-INDEX({caps},{i}))*"
            f"(INDEX({hits},{i}+1)-INDEX({hits},{i}))/(INDEX({caps},{i}+1)-INDEX({caps},{i})))")


def effective_kv_gbps(hit, load_per_gbps, base_kv_gbps):
    r"""The KV bandwidth a hit is loaded at, over the tiers: ``hit / sum_t(h_t / B_t)``; HBM hits
    load nothing (:data:`NO_LOAD_GBPS` when every hit is in HBM), no hit keeps the base bandwidth.

    .. math:: B_{eff} = h / \sum_t (h_t / B_t)

    Parameters
    ----------
    hit : numeric, total hit of the tiers [fraction]
    load_per_gbps : numeric, ``sum_t h_t / B_t`` over the loaded tiers [1/(GB/s)]
    base_kv_gbps : numeric, the workload's KV bandwidth without tiers [GB/s]

    Returns
    -------
    numeric [GB/s]
    """
    hit, lp = np.asarray(hit, dtype=float), np.asarray(load_per_gbps, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(lp > 0, hit / lp, np.where(hit > 0, NO_LOAD_GBPS, base_kv_gbps))


@excel_twin(effective_kv_gbps)
def _(hit, load_per_gbps, base_kv_gbps):
    return f"IF({load_per_gbps}>0,{hit}/{load_per_gbps},IF({hit}>0,{NO_LOAD_GBPS:.0E},{base_kv_gbps}))"


def units_per_instance(inst):
    """Units bought of a tier of scope ``instance``: one per serving instance; 0 without demand.

    Parameters
    ----------
    inst : numeric, serving instances, NaN without demand [count]

    Returns
    -------
    numeric [count]
    """
    return np.nan_to_num(np.asarray(inst, dtype=float))


@excel_twin(units_per_instance)
def _(inst):
    return typed_or.xl(inst, 0)  # IF(ISNUMBER(x),x,0), not N(x): see saved_or_zero


def units_per_node(gpus, gpus_per_node):
    r"""Units bought of a tier of scope ``node``: one per node, ``ceil(gpus / gpus_per_node)``; 0
    without demand.

    Parameters
    ----------
    gpus : numeric, GPUs, NaN without demand [count]
    gpus_per_node : numeric [count]

    Returns
    -------
    numeric [count]
    """
    gpus = np.nan_to_num(np.asarray(gpus, dtype=float))
    return np.ceil(gpus / gpus_per_node - 1e-12)


@excel_twin(units_per_node)
def _(gpus, gpus_per_node):
    return f"ROUNDUP({typed_or.xl(gpus, 0)}/{gpus_per_node},0)"


def units_of(scope: str, inst, gpus, gpus_per_node):
    """Units bought of a tier: instances (scope ``instance``), nodes (``node``), 1 (``pool``)
    [count]; 0 without demand. ``units_of.xl`` is the same choice of twins."""
    if scope == "instance":
        return units_per_instance(inst)
    if scope == "node":
        return units_per_node(gpus, gpus_per_node)
    return np.ones_like(np.asarray(inst, dtype=float))


def _units_xl(scope: str, inst: str, gpus: str, gpus_per_node: str) -> str:
    if scope == "instance":
        return units_per_instance.xl(inst)
    if scope == "node":
        return units_per_node.xl(gpus, gpus_per_node)
    return "1"


units_of.xl = _units_xl


def declared_or_ceiling(declared, ceiling):
    """A tier's declared capacity, or the curve's ceiling (every distinct block) when it declares none.

    Parameters
    ----------
    declared : numeric [GiB]
    ceiling : numeric, the last capacity of the curve [GiB]

    Returns
    -------
    numeric [GiB]
    """
    d = np.asarray(declared, dtype=float)
    return np.where(d > 0, d, ceiling)


@excel_twin(declared_or_ceiling)
def _(declared, ceiling):
    return f"IF({declared}>0,{declared},{ceiling})"


def curve_last(caps, first, count):
    """The last capacity of a workload's curve rows: ``caps`` at 1-based row ``first + count - 1``.

    Parameters
    ----------
    caps : array, the curve sheet's capacity column (row 1 the header) [GiB]
    first : int, 1-based sheet row of the workload's first point [row]
    count : int, its points [count]

    Returns
    -------
    numeric [GiB]
    """
    return np.asarray(caps, dtype=float)[int(first) + int(count) - 2]


@excel_twin(curve_last)
def _(caps, first, count):
    return f"INDEX({caps},{first}+{count}-1)"


def saved_or_zero(without, with_):
    r"""What a tier saves, a blank side (no demand: no GPUs, no cost) counting as 0.

    .. math:: s = n(without) - n(with), \quad n(x) = x \text{ if a number, else } 0

    Written with ``IF(ISNUMBER(x),x,0)``, not ``N(x)``: ``N()`` of a formula's ``""`` is
    engine-dependent (issue 21 reports #NUM! in Gnumeric; not checked here, Gnumeric is not
    installed), the ISNUMBER test is 0 in every engine (the project's pattern,
    :func:`planner.equations.tables.typed_or`).

    Parameters
    ----------
    without : numeric, NaN when blank [count or currency/month]
    with_ : numeric, NaN when blank [same unit]

    Returns
    -------
    numeric [same unit]
    """
    return typed_or(without, 0.0) - typed_or(with_, 0.0)


@excel_twin(saved_or_zero)
def _(without, with_):
    return f"{typed_or.xl(without, 0)}-{typed_or.xl(with_, 0)}"


def total_cost(gpu_cost, tier_cost):
    r"""The month's cost of a sweep point: its GPUs (0 without demand) plus the tiers bought.

    .. math:: c = n(c_{gpu}) + c_{tier}, \quad n(x) = x \text{ if a number, else } 0

    Parameters
    ----------
    gpu_cost : numeric, NaN without demand or price [currency/month]
    tier_cost : numeric [currency/month]

    Returns
    -------
    numeric [currency/month]
    """
    return typed_or(gpu_cost, 0.0) + np.asarray(tier_cost, dtype=float)


@excel_twin(total_cost)
def _(gpu_cost, tier_cost):
    return f"{typed_or.xl(gpu_cost, 0)}+{tier_cost}"


def break_even_price(saved, capacity, units):
    r"""The price per GiB-month at which a tier's GPU savings equal its cost; blank when nothing
    is bought.

    .. math:: p^* = saved / (capacity \cdot units)

    Parameters
    ----------
    saved : numeric, GPU cost saved [currency/month]
    capacity : numeric [GiB]
    units : numeric, units bought [count]

    Returns
    -------
    numeric, NaN when nothing is bought [currency/(GiB month)]
    """
    bought = np.asarray(capacity, dtype=float) * np.asarray(units, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(bought > 0, np.asarray(saved, dtype=float) / bought, np.nan)


@excel_twin(break_even_price)
def _(saved, capacity, units):
    return f'IF({capacity}*{units}>0,{saved}/({capacity}*{units}),"")'


def per_unit_bought(saved, bought):
    """:func:`break_even_price` over several tiers: the savings per GiB bought in all (blank when none).

    Parameters
    ----------
    saved : numeric [currency/month]
    bought : numeric, GiB x units summed [GiB]

    Returns
    -------
    numeric, NaN when nothing is bought [currency/(GiB month)]
    """
    b = np.asarray(bought, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b > 0, np.asarray(saved, dtype=float) / b, np.nan)


@excel_twin(per_unit_bought)
def _(saved, bought):
    return f'IF({bought}>0,{saved}/{bought},"")'


def net_saving(gpu_cost_saved, tier_cost):
    r"""What a tier saves in a month net of its own cost.

    .. math:: s = \Delta c_{gpu} - c_{tier}

    Parameters
    ----------
    gpu_cost_saved : numeric, GPU cost saved by the tier [currency/month]
    tier_cost : numeric, the tier's cost [currency/month]

    Returns
    -------
    numeric [currency/month]
    """
    return np.asarray(gpu_cost_saved, dtype=float) - np.asarray(tier_cost, dtype=float)


@excel_twin(net_saving)
def _(gpu_cost_saved, tier_cost):
    return f"{gpu_cost_saved}-{tier_cost}"


# The fleet's cost of a pool tier from its traced workloads' charges of it. A ``pool`` tier is bought
# once (README "Tiers": scope); each workload's Tier_Value row charges it the whole pool (what the
# tier is worth to that workload alone), so the fleet pays the largest of those charges once, not
# their sum (two workloads on one 4 TiB pool do not buy 8 TiB): Excel ``MAX``, tables.largest.
pool_once = largest


def minimum(x):
    """The lowest entry (Excel ``MIN``; blanks skipped).

    Parameters
    ----------
    x : array of numeric [any unit]

    Returns
    -------
    float [same unit]
    """
    return float(np.nanmin(np.asarray(x, dtype=float)))


@excel_twin(minimum)
def _(x):
    return f"MIN({x})"


def at_minimum(values, costs):
    """The entry of ``values`` in the row of the lowest ``costs`` (the first such row).

    Parameters
    ----------
    values : array [any unit]
    costs : array of numeric [currency/month]

    Returns
    -------
    the entry [unit of values]
    """
    return np.asarray(values)[int(np.nanargmin(np.asarray(costs, dtype=float)))]


@excel_twin(at_minimum)
def _(values, costs):
    return f"INDEX({values},MATCH(MIN({costs}),{costs},0))"


def kv_gbps_of_trace(typed_hit, typed_gbps, pcie_gbps, tier_gbps):
    """A traced workload's KV bandwidth in Resolved: with a typed hit_target the tiers do not set
    the load (the typed kv_gbps, else the GPU's PCIe); else the tiers' effective bandwidth.

    Parameters
    ----------
    typed_hit : numeric, Workloads hit_target, NaN when blank [fraction]
    typed_gbps : numeric, Workloads kv_gbps, NaN when blank [GB/s]
    pcie_gbps : numeric, the GPU's PCIe bandwidth [GB/s]
    tier_gbps : numeric, :func:`effective_kv_gbps` of the tiers [GB/s]

    Returns
    -------
    numeric [GB/s]
    """
    typed_hit, typed_gbps = np.asarray(typed_hit, dtype=float), np.asarray(typed_gbps, dtype=float)
    return np.where(np.isnan(typed_hit), tier_gbps, np.where(np.isnan(typed_gbps), pcie_gbps, typed_gbps))


@excel_twin(kv_gbps_of_trace)
def _(typed_hit, typed_gbps, pcie_gbps, tier_gbps):
    return f"IF(ISNUMBER({typed_hit}),IF(ISNUMBER({typed_gbps}),{typed_gbps},{pcie_gbps}),{tier_gbps})"


def hbm_free_gib(headroom_gib, tp):
    r"""HBM of an instance left for the KV cache: the GPU's headroom (never below 0) times its GPUs.

    .. math:: free = \max(0, headroom) \cdot tp

    Parameters
    ----------
    headroom_gib : numeric, HBM per GPU after weights and peak KV [GiB]
    tp : numeric, GPUs per instance [count]

    Returns
    -------
    numeric [GiB]
    """
    h = np.asarray(headroom_gib, dtype=float)
    return np.where(h > 0.0, h, 0.0) * np.asarray(tp, dtype=float)  # a blank headroom is 0, as MAX(0, blank)


@excel_twin(hbm_free_gib)
def _(headroom_gib, tp):
    return f"MAX(0,{headroom_gib})*{tp}"


def hits_text(without, with_):
    """The Summary's ``hit without / with`` text of a tier: two whole percentages.

    Parameters
    ----------
    without, with_ : numeric, hit ratios without and with the tier [fraction]

    Returns
    -------
    str
    """
    return f"{100 * float(without):.0f}% / {100 * float(with_):.0f}%"


@excel_twin(hits_text)
def _(without, with_):
    return f'TEXT({without},"0%")&" / "&TEXT({with_},"0%")'


# --------------------------------------------------------------------------- the tiers' sums (Tier_Hits, Tier_Worth)
def curve_gib(blocks, block_size, bytes_per_token_instance):
    r"""The cache capacity of a hit-curve point: its blocks at the instance's KV bytes per token.

    .. math:: c = n_{blocks} \cdot b \cdot S_{inst} / 2^{30}

    Parameters
    ----------
    blocks : numeric, cache size of the point [blocks]
    block_size : numeric, tokens per KV block [tokens/block]
    bytes_per_token_instance : numeric, KV bytes per token of one serving instance, S x tp [B/token]

    Returns
    -------
    numeric [GiB]

    Source: docs/model.md, the KV tiers (a block of ``b`` tokens holds ``b S_inst`` bytes);
    :mod:`planner.inputs.kv_tiers` computes the curve's ``grid_gib`` so.
    """
    return np.asarray(blocks, dtype=float) * block_size * bytes_per_token_instance / C.BYTES_PER_GIB


@excel_twin(curve_gib)
def _(blocks, block_size, bytes_per_token_instance):
    return f"{product_of.xl(blocks, block_size, bytes_per_token_instance)}/{N.BYTES_PER_GIB}"


def hits_upto_capacity(*capacities):
    r"""The capacity of tiers 1..k together, where the curve is read for their joint hit ratio.

    .. math:: c_{1..k} = \sum_{j \le k} c_j

    Parameters
    ----------
    *capacities : numeric, each tier's capacity [GiB]

    Returns
    -------
    numeric [GiB]
    """
    return sum_of(*capacities)


def whole_blocks_gib(capacity_gib, block_size, bytes_per_token_instance):
    r"""A tier's capacity as the whole KV blocks it holds, back in GiB: a cache holds no part of a block.

    .. math:: c' = \lfloor c \cdot 2^{30} / (b\, S_{inst}) \rfloor \cdot b\, S_{inst} / 2^{30}

    (the rule of :func:`planner.traffic.traces.capacity_blocks`, with its 1e-9 block of slack), so the
    curve is read at the blocks the tier holds: 1.5 blocks of DRAM hit as 1 block does, not half-way
    to 2 blocks.

    Parameters
    ----------
    capacity_gib : numeric, capacity of one tier [GiB]
    block_size : numeric, tokens per KV block [tokens/block]
    bytes_per_token_instance : numeric, KV bytes per token of one serving instance, S x tp [B/token]

    Returns
    -------
    numeric [GiB]
    """
    per_block = np.asarray(block_size, dtype=float) * bytes_per_token_instance / C.BYTES_PER_GIB
    return np.floor(np.asarray(capacity_gib, dtype=float) / per_block + 1e-9) * per_block


@excel_twin(whole_blocks_gib)
def _(capacity_gib, block_size, bytes_per_token_instance):
    per_block = f"({product_of.xl(block_size, bytes_per_token_instance)}/{N.BYTES_PER_GIB})"
    return f"INT({xl_arg(capacity_gib)}/{per_block}+1E-09)*{per_block}"


@excel_twin(hits_upto_capacity)
def _(*capacities):
    return sum_of.xl(*capacities)


def served_by(hit_upto, hit_upto_before):
    r"""The hit ratio served by tier k: the hit of tiers 1..k less that of tiers 1..k-1.

    .. math:: h_k = h_{1..k} - h_{1..k-1}

    Parameters
    ----------
    hit_upto : numeric, hit ratio of tiers 1..k together [fraction]
    hit_upto_before : numeric, hit ratio of tiers 1..k-1 together (0 for the first tier) [fraction]

    Returns
    -------
    numeric [fraction]
    """
    return np.asarray(hit_upto, dtype=float) - np.asarray(hit_upto_before, dtype=float)


@excel_twin(served_by)
def _(hit_upto, hit_upto_before):
    return f"{hit_upto}-{hit_upto_before}"


def total_hit(*tier_hits):
    r"""The hit ratio of all tiers (or of a subset, such as the HBM ones): the sum of theirs; 0 for none.

    .. math:: h = \sum_k h_k

    Parameters
    ----------
    *tier_hits : numeric, each tier's served hit ratio [fraction]

    Returns
    -------
    numeric [fraction]
    """
    return sum_of(*tier_hits)


@excel_twin(total_hit)
def _(*tier_hits):
    return sum_of.xl(*tier_hits)


def load_per_gbps(hits, read_gbps):
    r"""KV load per byte of the loaded tiers: each tier's hit over its read bandwidth, summed
    (HBM tiers, which load nothing, are left out by the caller); 0 when no tier loads.

    .. math:: L = \sum_k h_k / B_k, \qquad B_{eff} = h / L

    Parameters
    ----------
    hits : sequence of numeric, the loaded tiers' served hit ratios [fraction]
    read_gbps : sequence of numeric, their read bandwidths, one per hit [GB/s]

    Returns
    -------
    numeric [1/(GB/s)]

    Source: docs/model.md, the KV tiers (the load time is the sum of each tier's bytes over its bandwidth).
    """
    if len(hits) != len(read_gbps):
        raise ValueError(f"load_per_gbps: {len(hits)} hits but {len(read_gbps)} bandwidths")
    return sum_of(*(np.asarray(h, dtype=float) / np.asarray(b, dtype=float) for h, b in zip(hits, read_gbps)))


def _load_per_gbps_xl(hits, read_gbps) -> str:
    if len(hits) != len(read_gbps):
        raise ValueError(f"load_per_gbps.xl: {len(hits)} hits but {len(read_gbps)} bandwidths")
    return sum_of.xl(*(f"{xl_arg(h)}/{xl_arg(b)}" for h, b in zip(hits, read_gbps)))


load_per_gbps.xl = _load_per_gbps_xl


def tier_cost(capacity_gib, cost_per_gib_month, units):
    r"""The month's cost of one tier: capacity x price x units bought.

    .. math:: c_t = cap_t \cdot p_t \cdot u_t

    Parameters
    ----------
    capacity_gib : numeric, the tier's capacity per unit [GiB]
    cost_per_gib_month : numeric, its price [currency/(GiB month)]
    units : numeric, units bought (instances, nodes or 1 for a pool) [count]

    Returns
    -------
    numeric [currency/month]
    """
    return product_of(capacity_gib, cost_per_gib_month, units)


@excel_twin(tier_cost)
def _(capacity_gib, cost_per_gib_month, units):
    return product_of.xl(capacity_gib, cost_per_gib_month, units)


def tiers_cost(*tier_costs):
    r"""The month's cost of the tiers bought: the sum of each tier's (0 when none is bought).

    .. math:: c = \sum_t c_t

    Parameters
    ----------
    *tier_costs : numeric, each tier's cost [currency/month]

    Returns
    -------
    numeric [currency/month]
    """
    return sum_of(*tier_costs)


@excel_twin(tiers_cost)
def _(*tier_costs):
    return sum_of.xl(*tier_costs)


def bought_gib(capacities, units):
    r"""GiB bought over several rows: each capacity times its units bought, summed.

    .. math:: G = \sum_i cap_i \cdot u_i

    Parameters
    ----------
    capacities : sequence of numeric, capacity per unit [GiB]
    units : sequence of numeric, units bought, one per capacity [count]

    Returns
    -------
    numeric [GiB]
    """
    if len(capacities) != len(units):
        raise ValueError(f"bought_gib: {len(capacities)} capacities but {len(units)} unit counts")
    return sum_of(*(product_of(c, u) for c, u in zip(capacities, units)))


def _bought_gib_xl(capacities, units) -> str:
    if len(capacities) != len(units):
        raise ValueError(f"bought_gib.xl: {len(capacities)} capacities but {len(units)} unit counts")
    return sum_of.xl(*(product_of.xl(c, u) for c, u in zip(capacities, units)))


bought_gib.xl = _bought_gib_xl
