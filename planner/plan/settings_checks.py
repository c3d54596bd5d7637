"""Settings values that plan but most likely were not meant (red team 7, issue 20's finance view).

* ``hours_per_month`` outside a month of around-the-clock service, 28 to 31 days x 24 h = 672 to 744 h
  (the schema refuses above 744): ``160`` (a month's working hours) or ``30`` (its days) scales every
  cost per month, quarter and year of the Summary, Fleet and Fleet_By_Period by ``160 / 730``. A GPU
  of the fleet is paid by the hour around the clock; a part-time fleet can be meant, so it is a
  warning at the cell, not a refusal.
* ``target_utilization`` below :data:`UTILIZATION_LOW` (Settings or a Workloads cell): a fleet sized to
  be busy under a tenth of the time, 10x the GPUs its throughput needs; ``0.08`` typed for 80%, or
  ``0.05`` for 50%. Latency targets have their own columns (``ttft_slo_ms``, ``tpot_slo_ms``), so a low
  utilisation is not how headroom for latency is planned; still a warning, as it may be meant.
* a ``demand_growth`` typed (Settings, or Workloads cells) while Settings ``periods`` is blank: growth
  compounds over Settings periods only, so it plans nothing (no Fleet_By_Period from it) and nothing
  said so; the analyst who typed a growth expects the periods it grows over.
"""

from __future__ import annotations

from planner.core.errors import Problem
from planner.core.places import Place

HOURS_PER_DAY = 24.0
MONTH_HOURS = (28 * HOURS_PER_DAY, 31 * HOURS_PER_DAY)  # [h]: February to a 31-day month
UTILIZATION_LOW = 0.1  # [fraction]


def settings_warnings(plan) -> list[Problem]:
    """The warnings of the module docstring, each at its Settings cell."""
    p_in = plan.input
    return _hours(p_in) + _utilization(p_in) + _growth_without_periods(p_in)


def _growth_without_periods(p_in) -> list[Problem]:
    from planner.inputs.period_labels import parse_periods

    if parse_periods(p_in.settings.get("periods"))[0]:
        return []
    places = getattr(p_in, "setting_places", {})
    said = ("is typed, but Settings periods is blank: demand grows only over Settings periods, so the growth "
            "plans nothing; type the periods it grows over in Settings periods (2027-Q1..2027-Q4, or "
            "2027-Q1; 2027-Q2)")
    out = []
    g = p_in.settings.get("demand_growth")
    if "demand_growth" in places and g not in (None, 0):
        out.append(Problem(places["demand_growth"], f"demand_growth {float(g):.4g} {said}"))
    wt = p_in.workloads
    typed = [i for i, r in enumerate(wt.records) if r.get("demand_growth") not in (None, 0)]
    if typed:
        i = typed[0]
        more = f" (and {len(typed) - 1} more row(s))" if len(typed) > 1 else ""
        out.append(Problem(Place.of_table(wt, "demand_growth", i),
                           f"demand_growth {float(wt.records[i]['demand_growth']):.4g}{more} {said}"))
    return out


def _utilization(p_in) -> list[Problem]:
    def said(u: float) -> str:
        return (f"target_utilization {u:.4g} sizes the fleet to be busy {u:.1%} of the time ({1 / u:,.3g}x the "
                f"GPUs its throughput needs): typed {u:.0%} for {u * 10:.0%}? (type {u * 10:.4g} or {u * 10:.0%} for "
                f"{u * 10:.0%}; latency targets are ttft_slo_ms and tpot_slo_ms)")

    out = []
    u = p_in.settings.get("target_utilization")
    if u is not None and 0 < float(u) < UTILIZATION_LOW:
        where = getattr(p_in, "setting_places", {}).get("target_utilization") or Place.whole("Settings")
        out.append(Problem(where, said(float(u))))
    wt = p_in.workloads
    for i, rec in enumerate(wt.records):
        v = rec.get("target_utilization")
        if v is not None and 0 < float(v) < UTILIZATION_LOW:
            out.append(Problem(Place.of_table(wt, "target_utilization", i), said(float(v))))
    return out


def _hours(p_in) -> list[Problem]:
    h = p_in.settings.get("hours_per_month")
    if h is None:
        return []
    h = float(h)
    lo, hi = MONTH_HOURS
    if lo <= h <= hi:
        return []
    where = getattr(p_in, "setting_places", {}).get("hours_per_month") or Place.whole("Settings")
    hint = (f"typed in days ({h:,.0f} days = {h * HOURS_PER_DAY:,.0f} h)?" if h <= 31 else
            "typed as a month's working hours (about 160)?" if h < lo else "")
    return [Problem(where, f"hours_per_month {h:,.6g} is not a month of around-the-clock service ({lo:,.0f}-{hi:,.0f} "
                           f"h, 28-31 days x 24 h; 730 = 8,760 / 12): every cost per month, quarter and year is "
                           f"{h / 730:,.3g}x what 730 h give; {hint} The GPUs of the fleet are paid by the hour "
                           f"whether busy or not; if the fleet really runs {h:,.6g} h a month, ignore this")]
