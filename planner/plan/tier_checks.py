"""Located warnings on the Tiers sheet that still plan (red team 5, issue 19).

* An ``hbm`` tier with a typed ``capacity_gib`` above the HBM a traced workload's instance has left
  after its weights and peak KV (``max(0, hbm_headroom_gib) x tp``, the value a blank cell takes):
  the trace's hits up to that capacity are counted as HBM hits that load nothing, but that HBM is
  taken by the weights and the running batch's KV. Said once per workload, at the tier's cell.
"""

from __future__ import annotations

from planner.core.names import and_more
from planner.core import schema
from planner.core.errors import Problem
from planner.core.places import Place

# a typed capacity within this of the HBM left is the same number typed rounded [GiB]
HBM_ROUNDING_GIB = 0.01


def hbm_tier_warnings(plan) -> list[Problem]:
    """The warning of the module docstring for every traced workload."""
    kvt = getattr(plan.input, "kv_tiers", None)
    tiers_table = plan.input.optional.get(schema.TIERS)
    if kvt is None or tiers_table is None:
        return []
    out: list[Problem] = []
    for t in kvt.tiers:
        if t.kind != "hbm" or t.capacity_gib is None or t.row is None:
            continue
        over = [w for w in kvt.workloads if float(t.capacity_gib) > w.hbm_free_gib + HBM_ROUNDING_GIB]
        if not over:
            continue
        where = Place.of_table(tiers_table, "capacity_gib", t.row)
        said = "; ".join(f"{w.workload!r} {w.hbm_free_gib:,.3g} GiB" for w in over[:3]) \
            + (and_more(len(over), 3, brackets=False))
        out.append(Problem(where, f"hbm tier {t.name!r}: capacity_gib {float(t.capacity_gib):,.6g} is more than the "
                                  f"HBM an instance has left after its weights and peak KV ({said}): the trace's hits "
                                  f"in that capacity are counted as HBM hits with no load, in memory the running "
                                  f"batch holds; leave the cell blank to take what is left, or lower the workloads' "
                                  f"batch"))
    return out
