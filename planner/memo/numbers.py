"""Memo numbers: Excel-style number formatting (a memo cell shows what the workbook cell
shows), the per-workload table's columns, fleet totals, the headline and the findings."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import numpy as np

from planner.core.arrays import coerced_floats
from planner.finance import demand as dm
from planner.finance import fleet as fleet_
from planner.equations import kvhit as m
from planner.core import schema
from planner.plan import columns as sheets

BLANK = "\u2014"  # em dash: a blank workbook cell (no demand, no price)
FMT_MONEY = "#,##0.00"  # money per hour (fleet totals; not a workbook column)


# --------------------------------------------------------------------------- numbers
_FMT_RE = re.compile(r"^(?P<int>[#,0]+)(?:\.(?P<zeros>0*)(?P<hashes>#*))?(?P<pct>%?)$")


def format_number(value: Any, fmt: str, *, signed: bool = False, blank: str = BLANK) -> str:
    """Format ``value`` as a spreadsheet shows it under the Excel number format ``fmt``.

    Parameters
    ----------
    value : numeric or None
        The value; ``None`` and NaN are blank cells.
    fmt : str
        An Excel number format of the simple kinds the workbook uses: ``#,##0``,
        ``#,##0.00``, ``0.000``, ``0.0%``, ``#,##0.###`` (optional decimals).
    signed : bool, default False
        Prefix positive values with ``+`` (for changes).
    blank : str, default em dash
        Text of a blank value.

    Returns
    -------
    str
        The formatted number, rounded half away from zero on its 15 significant digits.

    Examples
    --------
    >>> format_number(657441.2022, "#,##0"), format_number(0.0994, "0.0%", signed=True)
    ('657,441', '+9.9%')
    >>> format_number(2.675, "#,##0.00"), format_number(None, "#,##0")
    ('2.68', '—')
    """
    if value is None:
        return blank
    x = float(value)
    if math.isnan(x):
        return blank
    if math.isinf(x):
        return ("-" if x < 0 else "+" if signed else "") + "\u221e"
    mt = _FMT_RE.match(fmt)
    if not mt:
        raise ValueError(f"unsupported number format {fmt!r}")
    zeros, hashes = len(mt["zeros"] or ""), len(mt["hashes"] or "")
    d = Decimal(f"{x:.15g}")
    if mt["pct"]:
        d = d * 100
    q = d.quantize(Decimal(1).scaleb(-(zeros + hashes)), rounding=ROUND_HALF_UP)
    text = f"{q:{',' if ',' in mt['int'] else ''}.{zeros + hashes}f}"
    if hashes:  # optional decimals: drop trailing zeros beyond the required ones
        whole, _, frac = text.partition(".")
        frac = frac[:zeros] + frac[zeros:].rstrip("0")
        text = whole + ("." + frac if frac else "")
    if text.lstrip("-").strip("0.,") == "" and text.startswith("-"):
        text = text[1:]  # -0.0 shows as 0.0
    if signed and not text.startswith("-") and q != 0:
        text = "+" + text
    return text + ("%" if mt["pct"] else "")


@dataclass(frozen=True)
class Num:
    """A number as the memo prints it: ``str()`` is the formatted text.

    Attributes
    ----------
    value : float or None
        The unrounded value (None when blank).
    text : str
        The formatted text (:func:`format_number`).
    """

    value: float | None
    text: str

    def __str__(self) -> str:
        return self.text

    @property
    def blank(self) -> bool:
        return self.value is None


def num(value: Any, fmt: str, *, signed: bool = False) -> Num:
    """A :class:`Num` of ``value`` under the Excel format ``fmt`` (None/NaN: blank)."""
    v = None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)
    return Num(v, format_number(v, fmt, signed=signed))


_RESULT_FMT = {c.name: c.fmt for c in sheets.RESULTS}
_RESOLVED_FMT = {c.name: c.fmt for c in sheets.RESOLVED}


def result_num(plan, i: int, name: str, *, signed: bool = False) -> Num:
    """Row ``i`` of Results column ``name``, in that column's workbook format."""
    return num(plan.results[name].iat[i], _RESULT_FMT[name], signed=signed)


def resolved_num(plan, i: int, name: str) -> Num:
    """Row ``i`` of Resolved column ``name`` (an input with its default), in its format."""
    return num(plan.resolved[name].iat[i], _RESOLVED_FMT[name])


# --------------------------------------------------------------------------- the table
@dataclass(frozen=True)
class TableColumn:
    """One column of the memo's per-workload table.

    ``key`` is the workbook column it shows: a ``Results`` column, or for
    ``source == "Resolved"`` a ``Resolved`` column (an input with its default applied).
    """

    key: str
    label: str
    unit: str
    source: str = "Results"
    signed: bool = False
    text: bool = False

    def header(self, currency: str) -> str:
        unit = self.unit.replace("currency", currency)
        return f"{self.label} [{unit}]" if unit else self.label


TABLE_COLUMNS: tuple[TableColumn, ...] = (
    TableColumn("hit_target", "Hit target", "", source="Resolved"),
    TableColumn("ttft_alpha0_ms", "TTFT α=0", "ms"),
    TableColumn("ttft_alpha1_ms", "TTFT α=1", "ms"),
    TableColumn("regime", "Regime", "", text=True),
    TableColumn("tpm_delivered_target", "Delivered TPM", "tokens/min"),
    TableColumn("tpm_physical_target", "Physical TPM", "tokens/min"),
    TableColumn("tpm_change_vs_measured", "Δ TPM vs measured", "", signed=True),
    TableColumn("gpus_needed", "GPUs", ""),
    TableColumn("cost_per_mtok_delivered", "Cost", "currency/Mtok"),
)


def table_cell(plan, i: int, col: TableColumn) -> Num | str:
    if col.text:
        return str(plan.results[col.key].iat[i])
    if col.source == "Resolved":
        return resolved_num(plan, i, col.key)
    return result_num(plan, i, col.key, signed=col.signed)


to_floats = coerced_floats  # a Series of any values: NaN where no number (planner.core.arrays)


# --------------------------------------------------------------------------- fleet
def measured_tpm(plan) -> np.ndarray:
    """Delivered TPM of one instance at the measured hit: ``tpm_measured`` when given,
    else the model's ``(isl + osl) · 60000 / C(h_measured)`` [tokens/min]."""
    res = plan.resolved
    model_tpm = m.tpm_delivered(to_floats(res["isl"]), to_floats(res["osl"]), to_floats(plan.results["chip_ms_measured"]))
    given = to_floats(res["tpm_measured"])
    return np.where(np.isnan(given), model_tpm, given)


def fleet_totals(plan) -> dict[str, Any]:
    """Fleet totals over the workloads that give ``demand_tpm`` (see :data:`ASSUMPTIONS`).

    Parameters
    ----------
    plan : planner.plan.build.Plan

    Returns
    -------
    dict
        ``workloads, with_demand, with_cost`` (counts), ``has_demand, has_cost`` (bool),
        and as :class:`Num`: ``demand_tpm`` (Σ demand), ``delivered_tpm`` and
        ``physical_tpm`` (Σ instances_needed · TPM at target), ``cached_tpm`` (their
        difference), ``instances``, ``gpus`` (Σ gpus_needed), ``cost_per_hour``
        (Σ gpus_needed · hourly_cost), ``gpus_baseline``, ``cost_per_hour_baseline`` (the
        same demand at the planning baseline hits, hit_baseline, blank: hit_measured),
        ``gpus_saved``, ``gpus_saved_pct``, ``cost_saved_per_hour`` (baseline minus target) and
        ``gpus_change``, ``cost_change_per_hour`` (target minus baseline, signed).
    """
    r, res = plan.results, plan.resolved
    demand = to_floats(res["demand_tpm"])
    price = to_floats(res["hourly_cost"])
    has_d = ~np.isnan(demand)
    has_c = has_d & ~np.isnan(price)
    inst = to_floats(r["instances_needed"])
    tot = lambda x, mask=has_d: float(np.sum(np.where(mask, x, 0.0)))  # noqa: E731
    n_d, n_c = int(has_d.sum()), int(has_c.sum())
    # the Fleet sheet's Total row and the fleet at the baseline hits (what the Summary shows)
    ft = fleet_.totals(plan)
    g, g_m, cost, cost_m = ft.gpus, ft.gpus_baseline, ft.cost_per_hour, ft.cost_per_hour_baseline
    delivered = tot(inst * to_floats(r["tpm_delivered_target"]))
    physical = tot(inst * to_floats(r["tpm_physical_target"]))
    blank_d = lambda x: x if n_d else None  # noqa: E731
    blank_c = lambda x: x if n_c else None  # noqa: E731
    int_fmt, pct_fmt = schema.FMT_INT, schema.FMT_PCT
    return {
        "workloads": len(r), "with_demand": n_d, "with_cost": n_c,
        "has_demand": n_d > 0, "has_cost": n_c > 0,
        "demand_tpm": num(blank_d(tot(demand)), int_fmt),
        "delivered_tpm": num(blank_d(delivered), int_fmt),
        "physical_tpm": num(blank_d(physical), int_fmt),
        "cached_tpm": num(blank_d(delivered - physical), int_fmt),
        "instances": num(blank_d(tot(inst)), int_fmt),
        "gpus": num(blank_d(g), int_fmt),
        "gpus_baseline": num(blank_d(g_m), int_fmt),
        "gpus_saved": num(blank_d(g_m - g), int_fmt),
        "gpus_change": num(blank_d(g - g_m), int_fmt, signed=True),
        "gpus_saved_pct": num((g_m - g) / g_m if n_d and g_m else None, pct_fmt),
        "cost_per_hour": num(blank_c(cost), FMT_MONEY),
        "cost_per_hour_baseline": num(blank_c(cost_m), FMT_MONEY),
        "cost_saved_per_hour": num(blank_c(cost_m - cost), FMT_MONEY),
        "cost_change_per_hour": num(blank_c(cost - cost_m), FMT_MONEY, signed=True),
        "cost_per_month": num(blank_c(ft.cost_per_month), schema.FMT_INT),
        "cost_per_month_baseline": num(blank_c(ft.cost_per_month_baseline), schema.FMT_INT),
        "cost_saved_per_month": num(blank_c(ft.cost_per_month_baseline - ft.cost_per_month), schema.FMT_INT),
    }


def headline(plan, fleet: dict, quarter: str, currency: str) -> str:
    """The memo's first paragraph, from the fleet totals (plain text)."""
    lead = period_sentence(plan, currency)
    when = "At today's demand (Workloads demand_tpm), the" if lead else (f"For {quarter}, the" if quarter else "The")
    n = fleet["workloads"]
    if not fleet["has_demand"]:
        return (f"{when} {n} workload{'s' if n != 1 else ''} give no demand_tpm, so no GPU count or cost "
                f"is planned; the table gives each workload's TTFT and per-instance TPM at its target hit ratio.")
    nd = fleet["with_demand"]
    scope = f"{nd} workload{'s' if nd != 1 else ''}" + (f" with demand (of {n})" if nd != n else "")
    s = lead + (f"{when} {scope} need {fleet['gpus']} GPUs ({fleet['instances']} serving instances) at their "
                f"target hit ratios")
    s += (f", costing {currency} {fleet['cost_per_month']} per month." if fleet["has_cost"] else ".")
    s += (f" Those instances deliver up to {fleet['delivered_tpm']} tokens/min against a demand of "
          f"{fleet['demand_tpm']} tokens/min, of which the GPUs physically compute {fleet['physical_tpm']} "
          f"tokens/min; the rest is input served from the KV cache.")
    saved = fleet["gpus_saved"].value or 0.0
    at_m = f" At the baseline hit ratios the same demand would need {fleet['gpus_baseline']} GPUs"
    if fleet["has_cost"]:
        at_m += f" ({currency} {fleet['cost_per_month_baseline']} per month)"
    if saved > 0:
        s += (f"{at_m}: the target hits save {fleet['gpus_saved']} GPU{'s' if saved != 1 else ''} "
              f"({fleet['gpus_saved_pct']})"
              + (f" and {currency} {fleet['cost_saved_per_month']} per month." if fleet["has_cost"] else "."))
    elif saved < 0:
        more = num(-saved, schema.FMT_INT)
        s += f"{at_m}: the target hits need {more} GPU{'s' if saved != -1 else ''} more."
    else:
        s += f"{at_m}, as many as at the target hits."
    return s + dm.fleet_sentences(plan, currency)


# --------------------------------------------------------------------------- findings
def findings(plan) -> list[dict[str, str]]:
    """Findings written from the numbers: load-bound rows, targets beyond h*, KV that
    does not fit in HBM, what full overlap would save. Each ``{kind, title, text}``."""
    r, res = plan.results, plan.resolved
    n = len(r)
    out: list[dict[str, str]] = []
    if n == 0:
        return out
    R = lambda i, c, **k: result_num(plan, i, c, **k)  # noqa: E731
    V = lambda i, c: resolved_num(plan, i, c)  # noqa: E731

    fl = plan.flags
    load_bound = [int(i) for i in np.flatnonzero(fl.load_bound)]
    if load_bound:
        parts = [f"{r['workload'].iat[i]} (load {R(i, 'load_ms')} ms vs compute {R(i, 'compute_ms')} ms "
                 f"at {V(i, 'hit_target')} hit, {V(i, 'kv_gbps')} GB/s)" for i in load_bound]
        out.append({"kind": "load-bound", "title": "Load-bound at target",
                    "text": f"Loading the cached KV over PCIe takes longer than the remaining prefill compute for "
                            f"{len(load_bound)} of {n} workloads: " + "; ".join(parts) + ". Their TTFT now "
                            "follows host-to-device bandwidth and overlap, not GPU compute."})
    else:
        who = "The workload is" if n == 1 else "Both workloads are" if n == 2 else f"All {n} workloads are"
        out.append({"kind": "load-bound", "title": "Compute-bound everywhere",
                    "text": f"{who} compute-bound at their target hit: loading the cached KV "
                            f"takes less time than the remaining prefill compute."})

    beyond = [int(i) for i in np.flatnonzero(fl.beyond_h_star)]
    if beyond:
        from planner.plan.trust import h_star_message  # what is true at each row's own alpha (issue 20

        rising = {i for i in beyond if h_star_message(plan, i)[0]}
        parts = [f"{r['workload'].iat[i]} (target {V(i, 'hit_target')}, h* {R(i, 'h_star')}"
                 + ("; its TTFT rises before the target at its own alpha" if i in rising else
                    "; at its own alpha its TTFT still falls up to the target") + ")" for i in beyond]
        out.append({"kind": "h-star", "title": "Target beyond break-even h*",
                    "text": "; ".join(parts) + ". h* is the break-even of the first-order, fully overlapped "
                            "model: past it a further hit adds more KV load time than it saves compute. Where "
                            "the row's own TTFT rises, plan at or below the hit ratio of its lowest TTFT, or "
                            "raise the bandwidth or the overlap."})
    else:
        closest = int(np.argmin(to_floats(r["h_star"]) - to_floats(res["hit_target"])))
        out.append({"kind": "h-star", "title": "Targets below break-even h*",
                    "text": f"Every target hit is at or below its break-even h*; the closest is "
                            f"{r['workload'].iat[closest]} (target {V(closest, 'hit_target')}, "
                            f"h* {R(closest, 'h_star')})."})

    head = to_floats(r["hbm_headroom_gib"])
    no_fit = [int(i) for i in np.flatnonzero(fl.hbm_no_fit)]
    if no_fit:
        parts = [f"{r['workload'].iat[i]} (weights {R(i, 'weights_gib_per_gpu')} GiB + peak KV "
                 f"{R(i, 'kv_peak_gib')} GiB exceed {V(i, 'hbm_gib')} GiB HBM by "
                 f"{num(-head[i], _RESULT_FMT['hbm_headroom_gib'])} GiB; {R(i, 'max_batch_fit')} full-length "
                 f"requests fit, batch is {V(i, 'batch')})" for i in no_fit]
        out.append({"kind": "hbm", "title": "KV does not fit in HBM",
                    "text": "; ".join(parts) + ". These rows need a smaller batch, more tensor parallelism, "
                            "FP8 KV or a larger GPU before their TPM can be met."})
    else:
        t = int(np.argmin(head))
        out.append({"kind": "hbm", "title": "KV fits in HBM",
                    "text": f"Weights and peak KV fit in HBM for every workload; the tightest is "
                            f"{r['workload'].iat[t]} with {R(t, 'hbm_headroom_gib')} GiB left per GPU "
                            f"({R(t, 'max_batch_fit')} full-length requests fit, batch is {V(t, 'batch')})."})

    t0, t1 = to_floats(r["ttft_alpha0_ms"]), to_floats(r["ttft_alpha1_ms"])
    cut = t0 - t1
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(t0 > 0, cut / t0, 0.0)
    order = sorted(range(n), key=lambda i: (-cut[i], i))
    top = [i for i in order[:3] if cut[i] > 0]
    ms_fmt, pct_fmt = _RESULT_FMT["ttft_ms"], schema.FMT_PCT
    if top:
        parts = [f"{r['workload'].iat[i]} {num(cut[i], ms_fmt)} ms ({num(rel[i], pct_fmt)})" for i in top]
        k = int(np.argmax(rel))
        out.append({"kind": "overlap", "title": "What full overlap would save",
                    "text": "Overlapping the KV load fully with compute (α=1 instead of α=0) cuts TTFT at the "
                            "target hit by min(load, compute): most in absolute terms on " + ", ".join(parts)
                            + f"; most in relative terms on {r['workload'].iat[k]} ({num(rel[k], pct_fmt)}). "
                            f"Across all {n} workloads the cut is {num(float(np.min(cut)), ms_fmt)} to "
                            f"{num(float(np.max(cut)), ms_fmt)} ms."})
    else:
        out.append({"kind": "overlap", "title": "What full overlap would save",
                    "text": "Nothing: no workload loads KV at its target hit, so there is nothing to overlap."})
    return out



MEMO_TABLE_MAX = 50  # per-workload table rows; a larger fleet shows its largest demands


def table_rows(plan, limit: int) -> list[int]:
    """Rows of the per-workload table, in input order: all when at most ``limit``, else
    the ``limit`` with the largest demand, as charted (the rest are in the workbook)."""
    return sorted(chart_rows(plan, limit))


def chart_rows(plan, limit: int) -> list[int]:
    """Rows to chart: all when at most ``limit``, else the ``limit`` with the largest
    demand_tpm (rows without demand after, in input order)."""
    demand = to_floats(plan.resolved["demand_tpm"])
    order = sorted(range(len(demand)), key=lambda i: (np.isnan(demand[i]), -np.nan_to_num(demand[i]), i))
    return order[:limit]


def _range(a: float, b: float, fmt: str = "{:,.0f}") -> str:
    return fmt.format(a) if round(a) == round(b) else f"{fmt.format(a)} to {fmt.format(b)}"


def period_sentence(plan, currency: str) -> str:
    """The headline's lead when the plan has periods (Demand sheet or Settings periods):
    ``For 2027-Q1–Q4, the plan needs 584 GPUs (USD 1,190,000 per month) in 2027-Q1 and 700 GPUs
    (...) in 2027-Q4; against the baseline hit ratios the hit targets save USD ... per month
    over the periods.`` ('' without periods). Trailing space."""
    from planner.finance import periods as pr

    names = pr.plan_periods(plan)
    if not names:
        return ""
    t = pr.period_totals(plan)
    money = lambda x: "" if np.isnan(x) else f" ({currency} {x:,.0f} per month)"  # noqa: E731
    first, last = t.iloc[0], t.iloc[-1]
    s = f"For {pr.span_label(names)}, the plan needs {first.gpus_needed:,.0f} GPUs{money(first.cost_per_month)}"
    if len(t) > 1:
        s += f" in {first.period} and {last.gpus_needed:,.0f} GPUs{money(last.cost_per_month)} in {last.period}"
    saved = t["cost_saved_per_month"].to_numpy(dtype=float)
    if np.any(~np.isnan(saved)):
        tot = float(np.nansum(saved)) / len(t)
        verb = "save" if tot >= 0 else "cost"
        s += (f"; against the baseline hit ratios the hit targets {verb} {currency} {abs(tot):,.0f} per month "
              f"on average over the periods")
    return s + ". "


def period_subject(plan, currency: str) -> str:
    """The subject's numbers over the plan's periods: ``584 to 700 GPUs, USD 1,190,000 to 1,400,000
    per month`` (first to last period; '' without periods)."""
    from planner.finance import periods as pr

    if not pr.plan_periods(plan):
        return ""
    t = pr.period_totals(plan)
    first, last = t.iloc[0], t.iloc[-1]
    out = f"{_range(first.gpus_needed, last.gpus_needed)} GPUs"
    if not (np.isnan(first.cost_per_month) or np.isnan(last.cost_per_month)):
        out += f", {currency} {_range(first.cost_per_month, last.cost_per_month)} per month"
    return out
