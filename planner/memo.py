"""The planning memo: numbers from a :class:`~planner.plan.Plan`, rendered with jinja2.

The memo is what most readers read and the workbook is what the few who check open, so
both must tell the same numbers. Every number in the memo therefore comes from the
frames the workbook is written from (``plan.results`` and ``plan.resolved``) and is
formatted by one helper, :func:`format_number`, with the Excel number format the
workbook declares for that column (:data:`planner.sheets.RESULTS`,
:mod:`planner.schema`). A memo cell shows exactly what the workbook cell shows:

============================  =============  =====================  ===============
quantity                      Excel format   example                memo
============================  =============  =====================  ===============
TPM, GPUs, instances          ``#,##0``      657441.20              ``657,441``
times                         ``#,##0.00``   75.877266              ``75.88``
hit ratios, h*, changes       ``0.0%``       0.0994                 ``9.9%`` (``+9.9%``)
cost per million tokens       ``#,##0.0000`` 0.253508               ``0.2535``
memory                        ``#,##0.00``   33.793299              ``33.79``
============================  =============  =====================  ===============

Rounding is half away from zero on the value's 15 significant digits, as Excel and
LibreOffice display it (Python's own ``format`` rounds the binary value half to even
and would print ``2.67`` where Excel shows ``2.68``). Fleet totals that are not
workbook cells (GPUs, capacity, cost per hour) are sums defined in
:data:`ASSUMPTIONS` and use the same formats (money per hour: ``#,##0.00``).

Rendering
---------
Three templates, looked up first in a user folder (``--templates DIR``) and then in the
built-in ``templates/`` folder: ``memo.md.j2`` (Markdown), ``memo.html.j2`` (an
email-safe HTML page) and ``memo.txt.j2`` (the plain-text email body). All of them,
built-in or not, render in jinja2's :class:`~jinja2.sandbox.SandboxedEnvironment` with
:class:`~jinja2.StrictUndefined`; the HTML template with HTML autoescaping, the
Markdown template with every printed value Markdown-escaped (:func:`md_escape`), the
text template verbatim. A user template can extend a built-in one as
``{% extends "builtin/memo.html.j2" %}`` and override its blocks. Any error (syntax,
undefined name, unsafe attribute, an exception inside the template) is raised as
:class:`MemoTemplateError` naming the template and line; :func:`build_memo` renders
every template and chart in memory before anything is written, so an error leaves
nothing behind.

Where the built-in templates are: ``templates/`` at the repository root, which always
exists for the documented ``pip install -e .``; a wheel would have to ship them as
``planner/templates`` (the second place :func:`builtin_template_dir` looks).

Template context (the contract for custom templates; numbers are :class:`Num`, which
print formatted and carry ``.value`` and ``.blank`` for tests in ``{% if %}``):

``title, quarter, currency, email`` (True when rendering the email body),
``run`` (``input_file, input_sha256, planner_version, created, workbook``),
``headline`` (a paragraph of plain text), ``fleet`` (see :func:`fleet_totals`),
``columns`` (the per-workload table: ``key, label, unit, header, align``),
``rows`` (per workload: ``workload, model, gpu, tp, alpha, cells`` aligned with
``columns``, every column also by its key, and ``load_bound, beyond_h_star,
kv_fits``), ``findings`` (``kind, title, text``), ``assumptions`` (text),
``equations`` (``name, formula``), ``warnings``, ``notes`` (text),
``charts`` (``key, title, caption, alt, src, width, height``).
"""

from __future__ import annotations

import datetime as _dt
import io
import math
import re
import traceback
import urllib.parse
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from . import __version__, schema, sheets
from . import fleet as fleet_
from . import model as m

TEMPLATE_NAMES: dict[str, str] = {"md": "memo.md.j2", "html": "memo.html.j2", "txt": "memo.txt.j2"}
BLANK = "\u2014"  # em dash: a blank workbook cell (no demand, no price)
FMT_MONEY = "#,##0.00"  # money per hour (fleet totals; not a workbook column)
CHART_TTFT_MAX = 6  # TTFT-vs-hit panels: the workloads with the largest demand
CHART_TPM_MAX = 12  # delivered-vs-physical bars
CHART_GRID_POINTS = 401  # hit resolution of the TTFT curves (0.25 %)
CHART_PX = 700  # display width in the memo: fits the 712 px text column of the HTML memo
CHART_WIDTH_IN = CHART_PX / 96  # 96 px per inch, as on screen, so 8 pt text reads as 8 pt
CHART_DPI = 192  # twice that, sharp on high-density screens


class MemoTemplateError(Exception):
    """A memo template failed to compile or render; the message names template and line."""


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


def _cell(plan, i: int, col: TableColumn) -> Num | str:
    if col.text:
        return str(plan.results[col.key].iat[i])
    if col.source == "Resolved":
        return resolved_num(plan, i, col.key)
    return result_num(plan, i, col.key, signed=col.signed)


def _f(series: pd.Series) -> np.ndarray:
    return pd.to_numeric(series, errors="coerce").to_numpy(dtype=float)


# --------------------------------------------------------------------------- fleet
def measured_tpm(plan) -> np.ndarray:
    """Delivered TPM of one instance at the measured hit: ``tpm_measured`` when given,
    else the model's ``(isl + osl) · 60000 / C(h_measured)`` [tokens/min]."""
    res = plan.resolved
    model_tpm = m.tpm_delivered(_f(res["isl"]), _f(res["osl"]), _f(plan.results["chip_ms_measured"]))
    given = _f(res["tpm_measured"])
    return np.where(np.isnan(given), model_tpm, given)


def fleet_totals(plan) -> dict[str, Any]:
    """Fleet totals over the workloads that give ``demand_tpm`` (see :data:`ASSUMPTIONS`).

    Parameters
    ----------
    plan : planner.plan.Plan

    Returns
    -------
    dict
        ``workloads, with_demand, with_cost`` (counts), ``has_demand, has_cost`` (bool),
        and as :class:`Num`: ``demand_tpm`` (Σ demand), ``delivered_tpm`` and
        ``physical_tpm`` (Σ instances_needed · TPM at target), ``cached_tpm`` (their
        difference), ``instances``, ``gpus`` (Σ gpus_needed), ``cost_per_hour``
        (Σ gpus_needed · hourly_cost), ``gpus_measured``, ``cost_per_hour_measured`` (the
        same demand at the measured hits), ``gpus_saved``, ``gpus_saved_pct``,
        ``cost_saved_per_hour`` (measured minus target) and ``gpus_change``,
        ``cost_change_per_hour`` (target minus measured, signed).
    """
    r, res = plan.results, plan.resolved
    demand = _f(res["demand_tpm"])
    price = _f(res["hourly_cost"])
    has_d = ~np.isnan(demand)
    has_c = has_d & ~np.isnan(price)
    inst = _f(r["instances_needed"])
    tot = lambda x, mask=has_d: float(np.sum(np.where(mask, x, 0.0)))  # noqa: E731
    n_d, n_c = int(has_d.sum()), int(has_c.sum())
    # the Fleet sheet's Total row and the fleet at the measured hits (what the Summary shows)
    ft = fleet_.totals(plan)
    g, g_m, cost, cost_m = ft.gpus, ft.gpus_measured, ft.cost_per_hour, ft.cost_per_hour_measured
    delivered = tot(inst * _f(r["tpm_delivered_target"]))
    physical = tot(inst * _f(r["tpm_physical_target"]))
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
        "gpus_measured": num(blank_d(g_m), int_fmt),
        "gpus_saved": num(blank_d(g_m - g), int_fmt),
        "gpus_change": num(blank_d(g - g_m), int_fmt, signed=True),
        "gpus_saved_pct": num((g_m - g) / g_m if n_d and g_m else None, pct_fmt),
        "cost_per_hour": num(blank_c(cost), FMT_MONEY),
        "cost_per_hour_measured": num(blank_c(cost_m), FMT_MONEY),
        "cost_saved_per_hour": num(blank_c(cost_m - cost), FMT_MONEY),
        "cost_change_per_hour": num(blank_c(cost - cost_m), FMT_MONEY, signed=True),
        "cost_per_month": num(blank_c(ft.cost_per_month), schema.FMT_INT),
        "cost_per_month_measured": num(blank_c(ft.cost_per_month_measured), schema.FMT_INT),
        "cost_saved_per_month": num(blank_c(ft.cost_per_month_measured - ft.cost_per_month), schema.FMT_INT),
    }


def headline(plan, fleet: dict, quarter: str, currency: str) -> str:
    """The memo's first paragraph, from the fleet totals (plain text)."""
    when = f"For {quarter}, the" if quarter else "The"
    n = fleet["workloads"]
    if not fleet["has_demand"]:
        return (f"{when} {n} workload{'s' if n != 1 else ''} give no demand_tpm, so no GPU count or cost "
                f"is planned; the table gives each workload's TTFT and per-instance TPM at its target hit ratio.")
    nd = fleet["with_demand"]
    scope = f"{nd} workload{'s' if nd != 1 else ''}" + (f" with demand (of {n})" if nd != n else "")
    s = (f"{when} {scope} need {fleet['gpus']} GPUs ({fleet['instances']} serving instances) at their "
         f"target hit ratios")
    s += (f", costing {currency} {fleet['cost_per_hour']} per hour ({currency} {fleet['cost_per_month']} per "
          f"month)." if fleet["has_cost"] else ".")
    s += (f" Those instances deliver up to {fleet['delivered_tpm']} tokens/min against a demand of "
          f"{fleet['demand_tpm']} tokens/min, of which the GPUs physically compute {fleet['physical_tpm']} "
          f"tokens/min; the rest is input served from the KV cache.")
    saved = fleet["gpus_saved"].value or 0.0
    at_m = f" At the measured hit ratios the same demand would need {fleet['gpus_measured']} GPUs"
    if fleet["has_cost"]:
        at_m += f" ({currency} {fleet['cost_per_hour_measured']} per hour)"
    if saved > 0:
        s += (f"{at_m}: the target hits save {fleet['gpus_saved']} GPUs ({fleet['gpus_saved_pct']})"
              + (f" and {currency} {fleet['cost_saved_per_hour']} per hour ({currency} "
                 f"{fleet['cost_saved_per_month']} per month)." if fleet["has_cost"] else "."))
    elif saved < 0:
        more = num(-saved, schema.FMT_INT)
        s += f"{at_m}: the target hits need {more} GPUs more."
    else:
        s += f"{at_m}, as many as at the target hits."
    return s + fleet_.fleet_sentences(plan, currency)


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

    load_bound = [i for i in range(n) if r["regime"].iat[i] == "load-bound"]
    if load_bound:
        parts = [f"{r['workload'].iat[i]} (load {R(i, 'load_ms')} ms vs compute {R(i, 'compute_ms')} ms "
                 f"at {V(i, 'hit_target')} hit, {V(i, 'pcie_gbps')} GB/s)" for i in load_bound]
        out.append({"kind": "load-bound", "title": "Load-bound at target",
                    "text": f"Loading the cached KV over PCIe takes longer than the remaining prefill compute for "
                            f"{len(load_bound)} of {n} workloads: " + "; ".join(parts) + ". Their TTFT now "
                            "follows host-to-device bandwidth and overlap, not GPU compute."})
    else:
        who = "The workload is" if n == 1 else "Both workloads are" if n == 2 else f"All {n} workloads are"
        out.append({"kind": "load-bound", "title": "Compute-bound everywhere",
                    "text": f"{who} compute-bound at their target hit: loading the cached KV "
                            f"takes less time than the remaining prefill compute."})

    beyond = [i for i in range(n) if _f(res["hit_target"])[i] > _f(r["h_star"])[i]]
    if beyond:
        parts = [f"{r['workload'].iat[i]} (target {V(i, 'hit_target')}, h* {R(i, 'h_star')})" for i in beyond]
        out.append({"kind": "h-star", "title": "Target beyond break-even h*",
                    "text": "; ".join(parts) + ". Past h* every further hit adds more KV load time than it "
                            "saves compute, so prefill gets slower, not faster: plan at or below h*, or raise "
                            "the PCIe bandwidth or the overlap."})
    else:
        closest = int(np.argmin(_f(r["h_star"]) - _f(res["hit_target"])))
        out.append({"kind": "h-star", "title": "Targets below break-even h*",
                    "text": f"Every target hit is at or below its break-even h*; the closest is "
                            f"{r['workload'].iat[closest]} (target {V(closest, 'hit_target')}, "
                            f"h* {R(closest, 'h_star')})."})

    head = _f(r["hbm_headroom_gib"])
    no_fit = [i for i in range(n) if head[i] < 0]
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

    t0, t1 = _f(r["ttft_alpha0_ms"]), _f(r["ttft_alpha1_ms"])
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


# --------------------------------------------------------------------------- assumptions
ASSUMPTIONS: tuple[str, ...] = (
    "TPM at the target hit is re-hit corrected from the load test: TPM(target) = TPM(measured) · "
    "C(h_measured) / C(h_target); where no TPM was measured the model's own chip time gives it.",
    "TTFT is shown at α=0 (no load/compute overlap, today's conservative case) and α=1 (full overlap); "
    "TPM, GPUs and cost use each workload's own α.",
    "Fleet delivered capacity = Σ instances_needed × tpm_delivered_target over the workloads with "
    "demand_tpm; physical capacity likewise with tpm_physical_target; GPUs = Σ gpus_needed; "
    "cost per hour = Σ gpus_needed × hourly_cost over the workloads with demand and a price.",
    "Instances are sized to run at target_utilization (Settings, or the workload's own): instances = "
    "ceil(demand_tpm / (TPM · target_utilization)); cost per month = cost per hour × hours_per_month.",
    "GPUs at the measured hit = ceil(demand_tpm / (TPM at measured · target_utilization)) × tp, with TPM at "
    "measured = "
    "tpm_measured when given, else the model's (isl + osl) · 60000 / C(h_measured).",
    "Cost counts GPU-hours only (hourly_cost × GPUs) and assumes busy instances; cost per million "
    "tokens = hourly_cost · tp · 10⁶ / (TPM · 60).",
    "KV is loaded from host memory over PCIe per GPU shard; without a measured bandwidth Gen4 x16 is "
    "taken as 25 GB/s and Gen5 x16 as 50 GB/s. Decode time does not change with hits.",
)

EQUATIONS: tuple[tuple[str, str], ...] = (
    ("KV bytes per token per GPU", "S = 2·L·⌈kv_heads/tp⌉·d_head·b (GQA);  S = L·mla_kv_dim·b (MLA)"),
    ("KV load", "T_load(h) = h·N·S / B_pcie"),
    ("Compute after a hit", "T_compute(h) = T_attn0·(1−h²) + T_ffn0·(1−h) + T_other0·f(h)"),
    ("TTFT", "TTFT(h, α) = T_fixed + T_load + T_compute − α·min(T_load, T_compute)"),
    ("Break-even hit", "δ = N·S / (B_pcie·T0),  h* = 1 / (1 + δ)"),
    ("Chip time and TPM", "C(h) = TTFT(h, α) + T_decode;  delivered = (isl + osl)·60000 / C;  "
                          "physical = (isl·(1−h) + osl)·60000 / C"),
    ("GPUs", "instances = ⌈demand / TPM⌉,  GPUs = instances · tp"),
)


# --------------------------------------------------------------------------- charts
@dataclass
class Chart:
    """A PNG chart of the memo: ``filename`` beside the memo, ``cid`` in the email."""

    key: str
    title: str
    caption: str
    alt: str
    png: bytes
    width: int  # display width in the memo [px]
    height: int
    filename: str = ""
    cid: str = ""


MEMO_TABLE_MAX = 50  # per-workload table rows; a larger fleet shows its largest demands


def table_rows(plan, limit: int) -> list[int]:
    """Rows of the per-workload table, in input order: all when at most ``limit``, else
    the ``limit`` with the largest demand, as charted (the rest are in the workbook)."""
    return sorted(chart_rows(plan, limit))


def chart_rows(plan, limit: int) -> list[int]:
    """Rows to chart: all when at most ``limit``, else the ``limit`` with the largest
    demand_tpm (rows without demand after, in input order)."""
    demand = _f(plan.resolved["demand_tpm"])
    order = sorted(range(len(demand)), key=lambda i: (np.isnan(demand[i]), -np.nan_to_num(demand[i]), i))
    return order[:limit]


_BLUE, _ORANGE, _GREY, _LIGHT = "#1F4E79", "#C55A11", "#6B7280", "#9DC3E6"


def _figure_png(fig) -> bytes:
    """The figure as a 256-colour PNG (a third of the full-colour size, same look: the
    charts travel in every copy of the email)."""
    from PIL import Image

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=CHART_DPI, metadata={"Software": None}, facecolor="white")
    img = Image.open(io.BytesIO(buf.getvalue())).convert("RGB")
    small = img.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    out = io.BytesIO()
    small.save(out, format="PNG", optimize=True)
    return out.getvalue()


def _label(text: Any, width: int) -> str:
    """A workload name as chart text: cut to ``width`` characters, ``$`` escaped (matplotlib
    would read ``$...$`` as mathtext)."""
    s = str(text)
    s = s if len(s) <= width else s[:width - 1] + "…"
    return s.replace("$", r"\$")


def _style(ax) -> None:
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    for side in ("left", "bottom"):
        ax.spines[side].set_color("#9CA3AF")
    ax.tick_params(colors="#374151", labelsize=7)
    ax.grid(True, color="#E5E7EB", linewidth=0.8)
    ax.set_axisbelow(True)


def ttft_curves(plan, i: int, hits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """TTFT of workload row ``i`` at α=0 and α=1 over the hit ratios ``hits`` [ms], from
    the model's functions and the row's resolved inputs (as the Sensitivity_Hit sheet)."""
    res = plan.resolved.iloc[i]
    s_kv = float(plan.results["kv_bytes_per_token_gpu"].iat[i])
    load = m.kv_load_ms(hits, float(res["isl"]), s_kv, float(res["pcie_gbps"]))
    comp = m.compute_ms(hits, float(res["t_attn0_ms"]), float(res["t_ffn0_ms"]), float(res["t_other0_ms"]),
                        res["other_scaling"])
    fixed = float(res["t_fixed_ms"])
    return (np.asarray(m.ttft_ms(fixed, load, comp, 0.0), dtype=float),
            np.asarray(m.ttft_ms(fixed, load, comp, 1.0), dtype=float))


def ttft_chart(plan, rows: list[int]) -> bytes:
    """TTFT against hit ratio at α=0 and α=1, one panel per workload, h* and the
    measured/target hits marked (model values on a 0.25 % hit grid)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, PercentFormatter

    res = plan.resolved.iloc[rows].reset_index(drop=True)
    r = plan.results.iloc[rows].reset_index(drop=True)
    grid = np.linspace(0.0, 1.0, CHART_GRID_POINTS)
    k = len(rows)
    ncol = min(3, k)
    nrow = math.ceil(k / ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(CHART_WIDTH_IN, 2.3 * nrow + 0.45), squeeze=False)
    for j in range(k):
        ax = axes[j // ncol][j % ncol]
        t0, t1 = ttft_curves(plan, rows[j], grid)
        ax.plot(grid, t0, color=_BLUE, linewidth=1.8, label="α = 0 (no overlap)")
        ax.plot(grid, t1, color=_ORANGE, linewidth=1.8, linestyle=(0, (4, 2)), label="α = 1 (full overlap)")
        hs = float(r["h_star"].iat[j])
        ax.axvspan(hs, 1.0, color="#F3F4F6", zorder=0, linewidth=0)
        ax.axvline(hs, color=_GREY, linewidth=1, linestyle=":")
        ax.annotate(f"h* {format_number(hs, schema.FMT_PCT)}", xy=(hs, 1.0), xycoords=("data", "axes fraction"),
                    xytext=(-3, -2), textcoords="offset points", ha="right", va="top", fontsize=7.5,
                    color=_GREY)
        ht = float(res["hit_target"].iat[j])
        ax.plot([ht, ht], [r["ttft_alpha0_ms"].iat[j], r["ttft_alpha1_ms"].iat[j]], linestyle="none",
                marker="o", markersize=5, color="#111827", zorder=5,
                label="target hit" if j == 0 else None)
        hm = float(res["hit_measured"].iat[j])
        ax.plot([hm], [ttft_curves(plan, rows[j], np.array([hm]))[0][0]], linestyle="none", marker="o", markersize=5, markerfacecolor="white",
                markeredgecolor="#111827", zorder=5, label="measured hit" if j == 0 else None)
        ax.set_title(_label(r["workload"].iat[j], 34), fontsize=8.5, color="#111827", loc="left")
        ax.set_xlim(0, 1)
        ax.set_ylim(bottom=0)
        ax.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
        if j % ncol == 0:
            ax.set_ylabel("TTFT [ms]", fontsize=8, color="#374151")
        if j // ncol == nrow - 1 or j + ncol >= k:
            ax.set_xlabel("hit ratio", fontsize=8, color="#374151")
        _style(ax)
    for j in range(k, nrow * ncol):
        axes[j // ncol][j % ncol].set_visible(False)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, frameon=False, fontsize=8,
               bbox_to_anchor=(0.5, 0.0))
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    png = _figure_png(fig)
    plt.close(fig)
    return png


def tpm_chart(plan, rows: list[int]) -> bytes:
    """Delivered and physical TPM per instance at the target hit, one bar pair per workload."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    r = plan.results.iloc[rows].reset_index(drop=True)
    k = len(rows)
    names = [_label(x, 30) for x in r["workload"]]
    delivered = r["tpm_delivered_target"].to_numpy(dtype=float)
    physical = r["tpm_physical_target"].to_numpy(dtype=float)
    fig, ax = plt.subplots(figsize=(CHART_WIDTH_IN, 0.34 * k + 1.1))
    y = np.arange(k)[::-1]
    h = 0.38
    ax.barh(y + h / 2, delivered, height=h, color=_BLUE, label="delivered (cached input counts)")
    ax.barh(y - h / 2, physical, height=h, color=_LIGHT, label="physical (tokens computed)")
    top = float(np.nanmax(delivered)) if k else 1.0
    for yy, v in zip(y, delivered):
        ax.text(v + top * 0.01, yy + h / 2, format_number(v, schema.FMT_INT), va="center", fontsize=7,
                color="#374151")
    for yy, v in zip(y, physical):
        ax.text(v + top * 0.01, yy - h / 2, format_number(v, schema.FMT_INT), va="center", fontsize=7,
                color="#6B7280")
    ax.set_yticks(y, names, fontsize=8)
    ax.set_xlim(0, top * 1.14)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: "0" if v == 0 else f"{v / 1e6:g}M"
                                               if v >= 1e6 else f"{v / 1e3:g}k"))
    ax.set_xlabel("tokens/min per serving instance at the target hit", fontsize=8, color="#374151")
    _style(ax)
    ax.grid(False, axis="y")
    ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=2, frameon=False, fontsize=8, borderaxespad=0.3)
    fig.tight_layout()
    png = _figure_png(fig)
    plt.close(fig)
    return png


def make_charts(plan) -> list[Chart]:
    """Both charts, as PNG bytes (not written)."""
    n = len(plan.results)
    out: list[Chart] = []
    if n == 0:
        return out
    rows = chart_rows(plan, CHART_TTFT_MAX)
    which = "every workload" if len(rows) == n else f"the {len(rows)} workloads with the largest demand (of {n})"
    png = ttft_chart(plan, rows)
    out.append(Chart("ttft", "TTFT against hit ratio",
                     f"TTFT at α=0 (solid) and α=1 (dashed) over the hit ratio for {which}; the dotted line "
                     f"is the break-even h*, dots mark the measured (open) and target (filled) hits.",
                     "Line charts of TTFT in milliseconds against hit ratio, with and without overlap",
                     png, CHART_PX, 0))
    rows = chart_rows(plan, CHART_TPM_MAX)
    which = "every workload" if len(rows) == n else f"the {len(rows)} workloads with the largest demand (of {n})"
    png = tpm_chart(plan, rows)
    out.append(Chart("tpm", "Delivered and physical TPM",
                     f"Delivered and physical tokens per minute of one serving instance at the target hit, "
                     f"for {which}; the gap is input served from the KV cache.",
                     "Bar chart of delivered and physical tokens per minute per workload", png, CHART_PX, 0))
    for c in out:
        w, h = _png_size(c.png)
        c.height = round(c.width * h / w)
    return out


def _png_size(png: bytes) -> tuple[int, int]:
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


# --------------------------------------------------------------------------- context
def build_context(plan, *, workbook: str, charts: list[Chart] | None = None, email: bool = False,
                  chart_src: Callable[[Chart], str] | None = None) -> dict[str, Any]:
    """The template context of ``plan`` (see the module docstring for its keys).

    Parameters
    ----------
    plan : planner.plan.Plan
        The plan the workbook was written from.
    workbook : str
        File name of the workbook (the attachment, or the file beside the memo).
    charts : list of Chart, optional
        Charts to embed; ``chart_src(chart)`` gives each image's ``src``.
    email : bool, default False
        Rendering the email body (images by ``cid:``) rather than a file.
    """
    quarter = str(plan.settings.get("quarter") or "").strip()
    currency = str(plan.settings.get("currency") or "").strip()
    fleet = fleet_totals(plan)
    created = plan.created.astimezone(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    columns = [{"key": c.key, "label": c.label, "unit": c.unit.replace("currency", currency),
                "header": c.header(currency), "align": "left" if c.text else "right"} for c in TABLE_COLUMNS]
    rows = []
    r = plan.results
    hit_t, h_star, headroom = _f(plan.resolved["hit_target"]), _f(r["h_star"]), _f(r["hbm_headroom_gib"])
    shown = table_rows(plan, MEMO_TABLE_MAX)
    for i in shown:
        cells = [_cell(plan, i, c) for c in TABLE_COLUMNS]
        row = {c.key: v for c, v in zip(TABLE_COLUMNS, cells)}
        row.update({
            "workload": str(r["workload"].iat[i]), "model": str(r["model"].iat[i]), "gpu": str(r["gpu"].iat[i]),
            "tp": resolved_num(plan, i, "tp"), "alpha": resolved_num(plan, i, "alpha"),
            "hit_measured": resolved_num(plan, i, "hit_measured"), "cells": cells,
            "ttft_ms": result_num(plan, i, "ttft_ms"), "h_star": result_num(plan, i, "h_star"),
            "demand_tpm": resolved_num(plan, i, "demand_tpm"),
            "cost_per_mtok_physical": result_num(plan, i, "cost_per_mtok_physical"),
            "load_bound": r["regime"].iat[i] == "load-bound",
            "beyond_h_star": bool(hit_t[i] > h_star[i]),
            "kv_fits": bool(headroom[i] >= 0),
        })
        rows.append(row)
    charts = charts or []
    src = chart_src or (lambda c: urllib.parse.quote(c.filename))
    return {
        "title": f"KV-cache capacity plan{' ' + quarter if quarter else ''}",
        "quarter": quarter, "currency": currency, "email": email,
        "run": {"input_file": plan.input.path.name, "input_sha256": plan.input.sha256,
                "planner_version": __version__, "created": created, "workbook": workbook},
        "headline": headline(plan, fleet, quarter, currency),
        "fleet": fleet, "columns": columns, "rows": rows, "rows_total": len(r), "rows_omitted": len(r) - len(rows),
        "findings": findings(plan),
        "assumptions": list(ASSUMPTIONS),
        "equations": [{"name": a, "formula": b} for a, b in EQUATIONS],
        "warnings": [str(w) for w in plan.warnings],
        "notes": list(plan.input.notes),
        "charts": [{"key": c.key, "title": c.title, "caption": c.caption, "alt": c.alt, "src": src(c),
                    "width": c.width, "height": c.height} for c in charts],
    }


# --------------------------------------------------------------------------- rendering
_MD_SPECIAL = re.compile(r"([\\`*\[\]<>|#~!&]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z]))")


def md_escape(text: Any) -> str:
    r"""Backslash-escape Markdown's special characters (``*[]<>|#`~!&\``, and ``_`` unless
    inside a word, where CommonMark never reads it as emphasis).

    >>> md_escape("<script>alert(1)</script> | a*b")
    '\\<script\\>alert(1)\\</script\\> \\| a\\*b'
    """
    return _MD_SPECIAL.sub(r"\\\1", str(text))


def builtin_template_dir() -> Path:
    """The built-in templates: ``templates/`` at the repository root (editable install),
    else ``planner/templates`` inside the installed package."""
    here = Path(__file__).resolve().parent
    for cand in (here.parent / "templates", here / "templates"):
        if all((cand / name).is_file() for name in TEMPLATE_NAMES.values()):
            return cand
    raise FileNotFoundError(f"the memo templates are missing (looked in {here.parent / 'templates'} "
                            f"and {here / 'templates'})")


def _pad(value: Any, width: int, align: str = "left") -> str:
    s = str(value)
    return s.rjust(width) if align == "right" else s.ljust(width)


def environments(user_dir: Path | None = None) -> dict[str, Any]:
    """One sandboxed jinja2 environment per output kind (``md``, ``html``, ``txt``).

    Templates are looked up in ``user_dir`` first, then among the built-in ones, which
    are also reachable as ``builtin/<name>`` (to extend them).
    """
    from jinja2 import ChoiceLoader, FileSystemLoader, PrefixLoader, StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment
    from markupsafe import Markup

    builtin = FileSystemLoader(str(builtin_template_dir()))
    loaders = ([FileSystemLoader(str(user_dir))] if user_dir else []) + [builtin]
    loader = ChoiceLoader(loaders + [PrefixLoader({"builtin": builtin})])

    def md_finalize(v):
        return v if isinstance(v, Markup) else md_escape(v)

    envs = {}
    for kind in TEMPLATE_NAMES:
        kw: dict[str, Any] = {"loader": loader, "undefined": StrictUndefined, "keep_trailing_newline": True,
                              "autoescape": kind == "html", "trim_blocks": True, "lstrip_blocks": True}
        if kind == "md":
            kw["finalize"] = md_finalize
        env = SandboxedEnvironment(**kw)
        env.filters["pad"] = _pad
        env.filters["md"] = md_escape
        envs[kind] = env
    return envs


_TEMPLATE_FRAMES = ("top-level template code", "template")


def _template_error(name: str, err: BaseException, user_dir: Path | None) -> MemoTemplateError:
    """A :class:`MemoTemplateError` naming the template (and file) and line of ``err``."""
    from jinja2 import TemplateSyntaxError

    where, line = None, None
    if isinstance(err, TemplateSyntaxError):
        where, line = err.filename or err.name, err.lineno
    else:
        for fs in traceback.extract_tb(err.__traceback__):
            if fs.name in _TEMPLATE_FRAMES or fs.name.startswith("block "):
                where, line = fs.filename, fs.lineno
    shown = name
    if where and Path(where).name != name:
        shown = f"{name} (in {Path(where).name})"
    origin = "custom" if user_dir and where and Path(where).resolve().is_relative_to(user_dir.resolve()) \
        else "built-in"
    msg = str(err).strip().rstrip(".") or type(err).__name__
    kind = {"SecurityError": "unsafe template", "UndefinedError": "undefined name",
            "TemplateSyntaxError": "syntax error", "TemplateNotFound": "template not found"}.get(
        type(err).__name__, type(err).__name__)
    loc = f", line {line}" if line else ""
    return MemoTemplateError(f"template {shown} ({origin}){loc}: {kind}: {msg}; nothing was written")


def render(kind: str, context: dict[str, Any], envs: dict[str, Any], user_dir: Path | None = None) -> str:
    """Render the ``kind`` template (``md``, ``html`` or ``txt``) with ``context``.

    Raises
    ------
    MemoTemplateError
        On any error while loading or rendering the template.
    """
    name = TEMPLATE_NAMES[kind]
    try:
        return envs[kind].get_template(name).render(context)
    except RecursionError as err:
        raise MemoTemplateError(f"template {name}: recursion too deep ({err}); nothing was written") from None
    except Exception as err:  # noqa: BLE001 - any failure inside a template is the template's
        raise _template_error(name, err, user_dir) from None


def check_template_dir(user_dir: Path) -> list[str]:
    """The memo templates that ``user_dir`` overrides; a usage problem raises ValueError."""
    if not user_dir.is_dir():
        raise ValueError(f"{user_dir}: --templates must be a folder")
    found = [n for n in TEMPLATE_NAMES.values() if (user_dir / n).is_file()]
    if not found:
        raise ValueError(f"{user_dir}: holds none of {', '.join(TEMPLATE_NAMES.values())}")
    return found


# --------------------------------------------------------------------------- the memo
@dataclass
class Memo:
    """Everything the memo writes or mails, rendered in memory.

    Attributes
    ----------
    markdown, html : str
        The memo files' text (images referenced by file name).
    email_html, email_text : str
        The email bodies (images referenced by ``cid:``).
    charts : list of Chart
    subject : str
        A subject line: the title, GPUs and cost per hour.
    paths : dict
        Where :func:`write_memo` writes each file (``md``, ``html`` and each chart key).
    """

    markdown: str
    html: str
    email_html: str
    email_text: str
    charts: list[Chart]
    subject: str = ""
    paths: dict[str, Path] = field(default_factory=dict)


def memo_paths(output: Path) -> dict[str, Path]:
    """Files beside the workbook ``output``: ``<stem>-memo.md``, ``<stem>-memo.html``,
    ``<stem>-ttft.png``, ``<stem>-tpm.png``."""
    output = Path(output)
    return {"md": output.with_name(f"{output.stem}-memo.md"),
            "html": output.with_name(f"{output.stem}-memo.html"),
            "ttft": output.with_name(f"{output.stem}-ttft.png"),
            "tpm": output.with_name(f"{output.stem}-tpm.png")}


def build_memo(plan, output: str | Path, *, templates: str | Path | None = None) -> Memo:
    """Render the whole memo of ``plan`` in memory (nothing is written).

    Parameters
    ----------
    plan : planner.plan.Plan
        The same plan the workbook ``output`` is written from.
    output : path
        The workbook; the memo's files go beside it (:func:`memo_paths`).
    templates : path, optional
        A folder whose ``memo.md.j2``, ``memo.html.j2``, ``memo.txt.j2`` replace the
        built-in ones.

    Returns
    -------
    Memo

    Raises
    ------
    MemoTemplateError
        A template failed; nothing has been written.
    """
    output = Path(output)
    user_dir = Path(templates) if templates else None
    paths = memo_paths(output)
    charts = make_charts(plan)
    token = plan.input.sha256[:12]
    for c in charts:
        c.filename = paths[c.key].name
        c.cid = f"{c.key}-{token}@kv-planner"
    envs = environments(user_dir)
    on_disk = build_context(plan, workbook=output.name, charts=charts)
    in_mail = build_context(plan, workbook=output.name, charts=charts, email=True,
                            chart_src=lambda c: f"cid:{c.cid}")
    return Memo(markdown=render("md", on_disk, envs, user_dir), html=render("html", on_disk, envs, user_dir),
                email_html=render("html", in_mail, envs, user_dir),
                email_text=render("txt", in_mail, envs, user_dir), charts=charts,
                subject=subject_line(on_disk), paths=paths)


def subject_line(context: dict[str, Any]) -> str:
    """``KV-cache capacity plan 2026-Q4: 405 GPUs, USD 1,117.60 per hour`` (what applies)."""
    fleet = context["fleet"]
    parts = []
    if fleet["has_demand"]:
        parts.append(f"{fleet['gpus']} GPUs")
    if fleet["has_cost"]:
        parts.append(f"{context['currency']} {fleet['cost_per_hour']} per hour")
    return context["title"] + (": " + ", ".join(parts) if parts else "")


def write_memo(memo: Memo) -> list[Path]:
    """Write the memo files and charts, each atomically (temporary file, then rename)."""
    from .writer import save_atomic

    written = []
    for key, data in ([(c.key, c.png) for c in memo.charts]
                      + [("md", memo.markdown.encode("utf-8")), ("html", memo.html.encode("utf-8"))]):
        written.append(save_atomic(memo.paths[key], lambda tmp, data=data: tmp.write_bytes(data)))
    return written
