"""Located warnings for typed mistakes that still plan without an error (issue 20, red team of
items 2, 3 and 5): each is a number the planner can use, but one that most likely is not what
was meant, so it is said at its cell (stderr, Checks, memo) instead of planned silently.

* a ratio of exactly 1 typed as a plain number where 1% may have been meant, in the columns the
  first landing did not cover: Workloads ``hit_baseline`` (100%: every saving of the target
  vanishes), Demand ``hit_target`` and Workloads ``demand_growth`` (+100%: doubling every period);
* ``demand_growth`` of -100%: the workload's demand is 0 from the second period on;
* a growth that has nothing to grow: a workload without a Workloads ``demand_tpm`` but with a
  growth rate and Demand rows in only some of Settings ``periods`` needs nothing in the others;
* a Demand period that is not one of Settings ``periods`` (``FY27 Q1`` beside ``2027-Q1..2027-Q4``):
  planned as a period of its own, after them;
* every Models/GPUs magnitude beyond published configs and datasheets (an HBM bandwidth typed in
  GB/s, an HBM size in MiB, ``params_b`` in millions...: :data:`planner.core.schema.PLAUSIBLE`,
  :mod:`planner.inputs.plausible`), an hourly cost above :data:`HOURLY_COST_MAX` a GPU-hour (per
  month?), a host link over :data:`PCIE_FACTOR_MAX` x its PCIe generation's (in Gb/s?);
* a demand below one request an hour (typed in millions of tokens/min?). A measured TTFT or TPOT
  typed in microseconds is said by :func:`planner.plan.trust.measurement_bounds`, in one pass with
  the same rows' fast side (typed in seconds?).
"""

from __future__ import annotations

import numpy as np

from planner.core.names import and_more
from planner.core.errors import Problem
from planner.core.places import Place

# HBM size and bandwidth typed in MiB or GB/s (and every other Models/GPUs magnitude): one table,
# planner.core.schema.PLAUSIBLE, checked by planner.inputs.plausible.
# An on-demand GPU-hour costs 1-15 in the currencies a GPU is usually priced in (AWS p5.48xlarge,
# 8x H100, USD 98.32/h on demand: 12.29 a GPU-hour); 100 a GPU-hour is no GPU's, 1,825 is USD 2.50/h
# typed per month (x 730 h). Checked only in these currencies (a GPU-hour is thousands in JPY).
HOURLY_COST_MAX = 100.0
HOURLY_COST_CURRENCIES = {"USD", "EUR", "GBP", "CHF", "CAD", "AUD", "SGD"}
# A PCIe x16 link of the GPU's generation carries PCIE_GEN_GBPS (effective: Gen4 25, Gen5 50 GB/s;
# raw 32 and 64): twice that is no PCIe link, 512 is Gen5's 64 GB/s typed in Gb/s.
PCIE_FACTOR_MAX = 2.0


def _cell(table, col: str, i: int) -> Place:
    return Place.of_table(table, col, i)


def _one(table, col: str, i: int, what: str) -> Problem:
    return Problem(_cell(table, col, i), f"{col} 1 is read as 100% ({what}): if 1% was meant, type 0.01 or 1%; "
                                         f"type 100% to say 100% is meant")


def typed_warnings(plan) -> list[Problem]:
    """Every warning of the module docstring, each at its cell."""
    from planner.inputs.period_labels import fold, parse_periods

    p_in = plan.input
    out: list[Problem] = []
    wt = p_in.workloads
    ones = getattr(wt, "plain_ones", set())
    for i, _ in enumerate(wt.records):
        if ("hit_baseline", i) in ones:
            out.append(_one(wt, "hit_baseline", i, "the fleet runs with every input token cached today, so the "
                                                   "hit target saves nothing against it"))
        if ("demand_growth", i) in ones:
            out.append(_one(wt, "demand_growth", i, "the demand doubles every period"))
    dem = p_in.optional.get("Demand")
    for col, i in sorted(getattr(dem, "plain_ones", set()) if dem is not None else ()):
        if col == "hit_target":
            out.append(_one(dem, col, i, "every input token of the period cached"))
    out += _scenario_ones(p_in)
    out += _scenario_percents(p_in)
    periods = parse_periods(p_in.settings.get("periods"))[0]
    if periods and p_in.settings.get("demand_growth") == 1:  # the Settings cell's format is not kept
        out.append(Problem(Place.whole("Settings"), "demand_growth 1 is read as +100% a period (the demand doubles "
                                                    "every period): if 1% was meant, type 0.01 or 1%"))
    res = plan.resolved
    growth = res["demand_growth"].to_numpy(dtype=float) if "demand_growth" in res else np.zeros(len(res))
    settings_zero: list[str] = []  # workloads taking Settings demand_growth -100%: one warning for them all
    for i, r in enumerate(wt.records):
        g = float(growth[i]) if i < len(growth) else float("nan")
        if len(periods) < 2 or np.isnan(g):
            continue
        own = r.get("demand_growth") is not None
        where = _cell(wt, "demand_growth", i) if own else Place.whole("Settings")
        if g == -1 and r.get("demand_tpm") is not None:
            if own:
                out.append(Problem(where, f"demand_growth -100% makes {r['workload']!r} need nothing from {periods[1]} "
                                          f"on (its demand times 0): if a fall of 1% a period was meant, type -0.01 or -1%"))
            else:
                settings_zero.append(str(r["workload"]))
        if r.get("demand_tpm") is None and g != 0 and dem is not None:
            have = {fold(x.get("period")) for x in dem.records
                    if str(x.get("workload", "")).strip().lower() == str(r["workload"]).strip().lower()
                    and x.get("demand_tpm") is not None}
            missing = [p for p in periods if fold(p) not in have]
            if have and missing:
                out.append(Problem(where, f"{r['workload']!r} has demand_growth {g:+.1%} and Demand rows, but no "
                                          f"Workloads demand_tpm to grow: it needs nothing in {', '.join(missing)} "
                                          f"(growth grows demand_tpm from the first of Settings periods; type it, or "
                                          f"the Demand rows of those periods)"))
    if settings_zero:
        more = and_more(len(settings_zero), 5, brackets=False)
        out.append(Problem(Place.whole("Settings"), f"demand_growth -100% makes {len(settings_zero)} workload(s) need "
                                                    f"nothing from {periods[1]} on (their demand times 0: "
                                                    f"{', '.join(settings_zero[:5])}{more}): if a fall of 1% a period "
                                                    f"was meant, type -0.01 or -1%"))
    if dem is not None and periods:
        known, said = {fold(p) for p in periods}, set()
        for i, rec in enumerate(dem.records):
            p = rec.get("period")
            if p is None or fold(p) in known or fold(p) in said:
                continue
            said.add(fold(p))
            out.append(Problem(_cell(dem, "period", i),
                               f"period {p!r} is not one of Settings periods ({periods[0]} .. {periods[-1]}): it is "
                               f"planned as a period of its own, after them, with only its Demand rows; if it is one "
                               f"of them, type it as {periods[0]} is typed"))
    out += _slow_measurements(plan)
    out += _gpu_units(plan)
    out += _tiny_demand(plan)
    out += _tpm_measured_off(plan)
    from planner.plan.demand_scale import huge_demand_warnings  # per-day demand in the per-minute column

    out += huge_demand_warnings(plan)
    from planner.plan.breakdown_checks import partial_breakdown_warnings  # t_attn0_ms typed, t_ffn0_ms blank

    out += partial_breakdown_warnings(plan)
    return out


# the Scenarios columns whose plain 1 is most likely 1% (red team 7), as the same columns of Workloads
# and Settings are warned: alpha and target_utilization of 1 are ordinary values and are not here
SCENARIO_ONES = {("workloads", "hit_target"): "every input token cached in the scenario",
                 ("workloads", "hit_measured"): "the load test ran with every input token cached",
                 ("workloads", "hit_baseline"): "the fleet runs with every input token cached today, so the hit "
                                                "target saves nothing against it",
                 ("workloads", "demand_growth"): "the demand doubles every period",
                 ("settings", "demand_growth"): "the demand doubles every period"}


def _scenario_ones(p_in) -> list[Problem]:
    """A Scenarios ``set`` of a plain ``1`` into a fraction column of :data:`SCENARIO_ONES`."""
    scn = p_in.optional.get("Scenarios")
    out: list[Problem] = []
    for col, i in sorted(getattr(scn, "plain_ones", set()) if scn is not None else ()):
        rec = scn.records[i]
        key = (str(rec.get("sheet") or "").strip().lower(), str(rec.get("column") or "").strip().lower())
        if col == "value" and key in SCENARIO_ONES and str(rec.get("op") or "").strip().lower() == "set":
            out.append(Problem(_cell(scn, "value", i),
                               f"scenario {rec.get('scenario')!r} sets {key[1]} to 1, read as 100% "
                               f"({SCENARIO_ONES[key]}): if 1% was meant, type 0.01 or 1%; type 100% to say 100% "
                               f"is meant"))
    return out


def _scenario_percents(p_in) -> list[Problem]:
    """A Scenarios ``multiply`` or ``add`` by a value typed as a percentage (red team 7): ``multiply
    demand_tpm 10%`` multiplies by 0.1 (a 90% cut) where +10% may have been meant, and ``add
    demand_tpm 10%`` adds 0.1 tokens/min. An ``add`` into a fraction column (hit_target +10%) is
    what it says and is not warned; a multiply by 100% or more reads as meant (110% is +10%)."""
    from planner.core import schema

    scn = p_in.optional.get("Scenarios")
    out: list[Problem] = []
    for col, i in sorted(getattr(scn, "percent_cells", set()) if scn is not None else ()):
        rec = scn.records[i]
        op, v = str(rec.get("op") or "").strip().lower(), rec.get("value")
        sheet, column = str(rec.get("sheet") or "").strip(), str(rec.get("column") or "").strip()
        kinds = ([k.kind for k in schema.SETTING_KEYS if k.key == column.lower()] if sheet.lower() == "settings" else
                 [c.kind for c in schema.COLUMNS if c.sheet.lower() == sheet.lower() and c.name == column.lower()])
        if not isinstance(v, float):
            continue
        if op == "multiply" and 0 < v < 1:
            out.append(Problem(_cell(scn, "value", i),
                               f"scenario {rec.get('scenario')!r} multiplies {column} by {v:.0%}, that is by {v:g} "
                               f"(a {1 - v:.0%} cut): if +{v:.0%} was meant, type {1 + v:.0%} or {1 + v:g}"))
        elif op == "add" and kinds and kinds[0] != schema.FRACTION:
            out.append(Problem(_cell(scn, "value", i),
                               f"scenario {rec.get('scenario')!r} adds {v:.0%}, that is the number {v:g}, to {column}: "
                               f"to raise it by {v:.0%}, use op multiply with {1 + v:.0%}"))
    return out


# A measured TPM of one instance against the model's at the same hit ratio, (isl + osl) x 60,000 /
# chip time: the model's times are roofline estimates or fits within 0.5-2x (README 'Roofline against
# published prefills'), so a factor of 20 is no estimate's error but a rate typed per second (60x)
# or per hour (1/60x), or for the whole fleet. A warning, not a refusal (red team 7): the low side is
# also what a true per-minute measurement gives at a load test with fewer requests in flight than the
# plan's batch (t_decode_ms is the decode amortised over t_decode_batch: a test at concurrency 1 of a
# decode-bound row measures up to 1/batch of the model's TPM) or on a small model whose step time is
# the engine's overheads, not the HBM roofline (a 0.5B model: 0.3 ms of weights a step against several
# ms measured); the ratio alone cannot tell those from a rate typed per second.
TPM_FACTOR = 20.0


def _tpm_measured_off(plan) -> list[Problem]:
    wt, r = plan.input.workloads, plan.results
    if "chip_ms_measured" not in r:
        return []
    out = []
    for i, rec in enumerate(wt.records):
        typed = rec.get("tpm_measured")
        if typed is None or i >= len(r):
            continue
        chip = float(r["chip_ms_measured"].iat[i])
        model = (float(rec["isl"]) + float(rec["osl"])) * 60000.0 / chip if chip > 0 else float("nan")
        if not np.isfinite(model) or model <= 0:
            continue
        ratio = float(typed) / model
        if ratio > TPM_FACTOR or ratio < 1 / TPM_FACTOR:
            hint = ("typed per second (x 60 is {:,.0f} tokens/min)?".format(float(typed) * 60) if ratio < 1
                    else "the fleet's throughput rather than one instance's?")
            out.append(Problem(_cell(wt, "tpm_measured", i),
                               f"tpm_measured {float(typed):,.0f} is {ratio:,.3g}x the model's delivered TPM of one "
                               f"instance at hit_measured ({model:,.0f} tokens/min: (isl + osl) x 60,000 / "
                               f"{chip:,.4g} ms): {hint}"))
    return out


def _slow_measurements(plan) -> list[Problem]:
    """The Models/GPUs magnitudes of :data:`planner.core.schema.PLAUSIBLE` (an HBM bandwidth typed in
    GB/s...). The Measurements rows' slow side, typed in microseconds, is checked with their fast
    side in one pass: :func:`planner.plan.trust.measurement_bounds`."""
    from planner.inputs.plausible import input_warnings

    return input_warnings(plan.input)


def _gpu_units(plan) -> list[Problem]:
    """GPUs values typed in another unit than the column's: ``hourly_cost`` per
    month (or per node), ``pcie_gbps`` in Gb/s. Each a located warning, the value planned as typed."""
    from planner.equations.constants import PCIE_GEN_GBPS

    gpus = plan.input.gpus
    currency = str(plan.input.settings.get("currency") or "USD").strip().upper()
    out: list[Problem] = []
    for i, g in enumerate(gpus.records):
        cost = g.get("hourly_cost")
        if cost is not None and currency in HOURLY_COST_CURRENCIES and float(cost) > HOURLY_COST_MAX:
            out.append(Problem(_cell(gpus, "hourly_cost", i),
                               f"hourly_cost {float(cost):,.6g} {currency}/h is beyond any GPU-hour's price "
                               f"(about 1-15 {currency}): typed per month ({float(cost) / 730:,.4g} {currency}/h at "
                               f"730 h a month), or for a whole node rather than one GPU?"))
        link, gen = g.get("pcie_gbps"), g.get("pcie_gen")
        if gen is None and link is not None:  # a typed link leaves pcie_gen unfilled: the catalog's
            from planner.catalog.lookup import find

            entry = find(str(g.get("catalog") or g.get("gpu")), "gpu")
            gen = None if entry is None else entry.values.get("pcie_gen")
        if link is not None and gen in PCIE_GEN_GBPS and float(link) > PCIE_FACTOR_MAX * PCIE_GEN_GBPS[gen]:
            out.append(Problem(_cell(gpus, "pcie_gbps", i),
                               f"pcie_gbps {float(link):,.6g} GB/s is over {PCIE_FACTOR_MAX:g}x what a PCIe Gen{gen} x16 "
                               f"link carries ({PCIE_GEN_GBPS[gen]:g} GB/s): typed in Gb/s ({float(link) / 8:,.4g} "
                               f"GB/s)? (a host link that is no PCIe, such as NVLink-C2C, leaves pcie_gen blank)"))
    return out


def _tiny_demand(plan) -> list[Problem]:
    """A demand below one request an hour, ``(isl + osl) / 60`` tokens/min: no workload is planned
    for that; a demand typed in millions (7.2 for 7,200,000) or thousands of tokens/min. Workloads
    ``demand_tpm`` and Demand ``demand_tpm`` (tokens/min after any unit conversion)."""
    wt = plan.input.workloads
    per_hour = {}
    out: list[Problem] = []

    def check(table, i: int, rec: dict, wl: dict) -> None:
        d = rec.get("demand_tpm")
        if d is None or wl.get("isl") is None or wl.get("osl") is None:
            return
        one = (float(wl["isl"]) + float(wl["osl"])) / 60.0
        if 0 < float(d) < one:
            out.append(Problem(_cell(table, "demand_tpm", i),
                               f"demand_tpm {float(d):,.6g} tokens/min is less than one request an hour of "
                               f"{wl.get('workload')} ((isl + osl) / 60 = {one:,.4g} tokens/min): typed in millions "
                               f"({float(d) * 1e6:,.0f}) or thousands ({float(d) * 1e3:,.0f}) of tokens/min?"))

    for i, rec in enumerate(wt.records):
        per_hour[str(rec.get("workload")).strip().lower()] = rec
        check(wt, i, rec, rec)
    dem = plan.input.optional.get("Demand")
    if dem is not None:
        for i, rec in enumerate(dem.records):
            wl = per_hour.get(str(rec.get("workload")).strip().lower())
            if wl is not None:
                check(dem, i, rec, wl)
    return out
