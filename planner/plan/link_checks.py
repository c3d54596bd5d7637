"""Typed bandwidths and lengths that plan but most likely were not meant (red team 7, issue 20 items 2-3).

* Workloads ``kv_gbps`` and a Tiers ``read_gbps`` (dram, ssd, remote) over :data:`LINK_FACTOR` x the
  GPU's host link (``pcie_gbps`` as planned: typed, else the catalog's, else its PCIe generation's):
  KV read from host memory, an SSD or the network reaches HBM through that link, so it cannot arrive
  faster. Network and NIC rates are stated in Gb/s (a 400 Gb/s RDMA NIC carries 50 GB/s), so the
  number is most likely Gb/s typed in a GB/s column: the KV load is then planned 8x too fast (more
  hits look free, h* moves up). A warning, not a refusal: KV fetched from a peer GPU's HBM over
  NVLink (hundreds of GB/s) is faster than the host link and legitimate.
* Workloads ``max_seq_len`` below the row's own ``isl + osl``: no request of the row is that short
  at its mean lengths, so the peak KV (``batch x max_seq_len x S``), the HBM check and the batch that
  fits (``max_batch_fit``, the default ``batch`` and the estimated decode) are planned for
  requests shorter than the row's own; most likely thousands (``128`` for 128k) typed as tokens.

Each at its cell; stderr, the Checks sheet and the memo carry them as the other warnings.
"""

from __future__ import annotations

import numpy as np

from planner.core.errors import Problem
from planner.core.names import and_more, fold_name
from planner.core.places import Place
from planner.core import schema

# a host link carries at most its nominal rate; twice it is no such link (typed_checks.PCIE_FACTOR_MAX)
LINK_FACTOR = 2.0
GBIT_PER_GBYTE = 8.0  # [Gb/GB]


def _floats(frame, name: str) -> np.ndarray:
    return frame[name].to_numpy(dtype=float) if name in frame else np.full(len(frame), np.nan)


def link_warnings(plan) -> list[Problem]:
    """The warnings of the module docstring, each at its cell."""
    wt, res = plan.input.workloads, plan.resolved
    link = _floats(res, "pcie_gbps")
    out: list[Problem] = []
    for i, rec in enumerate(wt.records):
        if i >= len(res):
            break
        kv, lk = rec.get("kv_gbps"), link[i]
        if kv is not None and np.isfinite(lk) and float(kv) > LINK_FACTOR * lk:
            out.append(Problem(Place.of_table(wt, "kv_gbps", i),
                               f"kv_gbps {float(kv):,.6g} GB/s is {float(kv) / lk:,.3g}x {rec.get('gpu')}'s host link "
                               f"({lk:,.4g} GB/s), through which KV from host memory, an SSD or the network reaches "
                               f"HBM: typed in Gb/s ({float(kv) / GBIT_PER_GBYTE:,.4g} GB/s; a 400 Gb/s NIC carries "
                               f"50 GB/s)? The KV load is planned at the typed rate (if the KV comes from a peer "
                               f"GPU's HBM over NVLink, the rate can be right)"))
        msl, isl, osl = rec.get("max_seq_len"), rec.get("isl"), rec.get("osl")
        if msl is not None and isl is not None and osl is not None and float(msl) < float(isl) + float(osl):
            need = float(isl) + float(osl)
            out.append(Problem(Place.of_table(wt, "max_seq_len", i),
                               f"max_seq_len {float(msl):,.0f} tokens is shorter than the row's own request (isl + "
                               f"osl = {need:,.0f} tokens): the peak KV, the HBM check and the batch that fits are "
                               f"planned for requests {need / float(msl):,.3g}x shorter than its own; typed in "
                               f"thousands ({float(msl) * 1000:,.0f} tokens)? (blank: isl + osl)"))
    out += _tier_warnings(plan, link)
    return out


def _tier_warnings(plan, link: np.ndarray) -> list[Problem]:
    """A Tiers ``read_gbps`` over the host link of a traced workload's GPU: once per tier."""
    kvt = getattr(plan.input, "kv_tiers", None)
    table = plan.input.optional.get(schema.TIERS)
    if kvt is None or table is None:
        return []
    names = [fold_name(str(w)) for w in plan.resolved["workload"].tolist()]
    traced = {fold_name(str(w.workload)) for w in kvt.workloads}
    out = []
    for t in kvt.tiers:
        if t.kind == "hbm" or t.read_gbps is None or t.row is None:
            continue
        over = [(plan.resolved["workload"].iat[i], link[i]) for i, n in enumerate(names)
                if n in traced and np.isfinite(link[i]) and float(t.read_gbps) > LINK_FACTOR * link[i]]
        if not over:
            continue
        said = "; ".join(f"{w!r} {lk:,.4g} GB/s" for w, lk in over[:3]) + and_more(len(over), 3, brackets=False)
        out.append(Problem(Place.of_table(table, "read_gbps", t.row),
                           f"{t.kind} tier {t.name!r}: read_gbps {float(t.read_gbps):,.6g} GB/s is over "
                           f"{LINK_FACTOR:g}x the host link of the GPUs it serves ({said}), through which a {t.kind} "
                           f"tier's KV reaches HBM: typed in Gb/s ({float(t.read_gbps) / GBIT_PER_GBYTE:,.4g} GB/s; "
                           f"a 400 Gb/s NIC carries 50 GB/s)? Its hits are loaded at the typed rate"))
    return out
