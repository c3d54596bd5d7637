"""The planning memo: numbers from a :class:`~planner.plan.build.Plan`, rendered with jinja2.

The memo is what most readers read and the workbook is what the few who check open, so
both must tell the same numbers. Every number in the memo therefore comes from the
frames the workbook is written from (``plan.results`` and ``plan.resolved``) and is
formatted by one helper, :func:`format_number`, with the Excel number format the
workbook declares for that column (:data:`planner.plan.columns.RESULTS`,
:mod:`planner.core.schema`). A memo cell shows exactly what the workbook cell shows:

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
kv_fits``), ``findings`` (``kind, title, text``), ``breakdown`` (text lines: which
workloads' times are typed, calibrated with each fit's error, or estimated; empty when all
are typed), ``assumptions`` (text),
``equations`` (``name, formula``), ``warnings``, ``notes`` (text),
``charts`` (``key, title, caption, alt, src, width, height``).
"""

from __future__ import annotations

import datetime as _dt
import re
import traceback
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from planner.core.version import __version__
from planner.equations import text as equation_text
from planner.plan.calibrate import memo_lines
from planner.memo.charts import Chart, make_charts
from planner.memo.numbers import (MEMO_TABLE_MAX, TABLE_COLUMNS, to_floats, findings, fleet_totals, headline, period_subject, resolved_num, result_num, table_cell, table_rows)
from planner.plan import load_notes as load_memo
from planner.workbook.tier_worth import memo_findings
from planner.finance import periods as _periods

TEMPLATE_NAMES: dict[str, str] = {"md": "memo.md.j2", "html": "memo.html.j2", "txt": "memo.txt.j2"}


class MemoTemplateError(Exception):
    """A memo template failed to compile or render; the message names template and line."""



# --------------------------------------------------------------------------- assumptions
ASSUMPTIONS: tuple[str, ...] = (
    "TPM at the target hit is re-hit corrected from the load test: TPM(target) = TPM(measured) · "
    "C(h_measured) / C(h_target); where no TPM was measured the model's own chip time gives it.",
    "TTFT is shown at α=0 (no load/compute overlap, today's conservative case) and α=1 (full overlap); "
    "TPM, GPUs and cost use each workload's own α.",
    "Fleet delivered capacity = Σ instances_needed × tpm_delivered_target over the workloads with "
    "demand_tpm; physical capacity likewise with tpm_physical_target; GPUs = Σ gpus_needed; "
    "cost per hour = Σ gpus_needed × hourly_cost over the workloads with demand and a price.",
    "Instances are sized to run at target_utilization (Settings, or the workload's own): "
    f"{equation_text.INSTANCES}; cost per month = cost per hour × hours_per_month.",
    "GPUs at the baseline hit (Workloads hit_baseline, the hit ratio the fleet runs at today; blank: hit_measured, "
    "the load test's) are sized as at the target, with the same demand, target_utilization and latency targets: "
    "ceil(demand_tpm / (TPM at the baseline · target_utilization)) × tp on throughput, with TPM at the baseline = "
    "tpm_measured re-hit corrected to it when given, else the model's (isl + osl) · 60000 / C(h_baseline); what "
    "the target saves is baseline minus target (negative: a cost, warned at the workload).",
    "Cost counts GPU-hours only (hourly_cost × GPUs) and assumes busy instances; cost per million "
    "tokens = hourly_cost · tp · 10⁶ / (TPM · 60).",
    "KV is loaded from host memory over PCIe per GPU shard; without a measured bandwidth Gen4 x16 is "
    "taken as 25 GB/s and Gen5 x16 as 50 GB/s. Decode time does not change with hits.",
)

EQUATIONS: tuple[tuple[str, str], ...] = equation_text.BRIEF  # the memo's "model in brief" (one source)


# --------------------------------------------------------------------------- context
def build_context(plan, *, workbook: str, charts: list[Chart] | None = None, email: bool = False,
                  chart_src: Callable[[Chart], str] | None = None) -> dict[str, Any]:
    """The template context of ``plan`` (see the module docstring for its keys).

    Parameters
    ----------
    plan : planner.plan.build.Plan
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
    span = _periods.span_label(_periods.plan_periods(plan)) or quarter  # the plan's periods, else the run's
    fleet = fleet_totals(plan)
    created = plan.created.astimezone(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    columns = [{"key": c.key, "label": c.label, "unit": c.unit.replace("currency", currency),
                "header": c.header(currency), "align": "left" if c.text else "right"} for c in TABLE_COLUMNS]
    rows = []
    r = plan.results
    hit_t, h_star, headroom = to_floats(plan.resolved["hit_target"]), to_floats(r["h_star"]), to_floats(r["hbm_headroom_gib"])
    shown = table_rows(plan, MEMO_TABLE_MAX)
    for i in shown:
        cells = [table_cell(plan, i, c) for c in TABLE_COLUMNS]
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
        "title": f"KV-cache capacity plan{' ' + span if span else ''}",
        "period_subject": period_subject(plan, currency), "span": span,
        "quarter": quarter, "currency": currency, "email": email,
        "run": {"input_file": plan.input.path.name, "input_sha256": plan.input.sha256,
                "planner_version": __version__, "created": created, "workbook": workbook},
        "headline": headline(plan, fleet, quarter, currency),
        "fleet": fleet, "columns": columns, "rows": rows, "rows_total": len(r), "rows_omitted": len(r) - len(rows),
        "findings": findings(plan) + load_memo.findings(plan) + memo_findings(plan),  # + latency at load (16), KV tiers (19)
        "breakdown": memo_lines(plan),  # where the times come from: typed / calibrated / estimated
        "assumptions": list(ASSUMPTIONS),
        "equations": [{"name": a, "formula": b} for a, b in EQUATIONS],
        "warnings": [str(w) for w in plan.warnings],
        "notes": list(plan.input.notes),
        "charts": [{"key": c.key, "title": c.title, "caption": c.caption, "alt": c.alt, "src": src(c),
                    "width": c.width, "height": c.height} for c in charts],
    }


# --------------------------------------------------------------------------- rendering
_MD_BREAKS = re.compile("[\r\n\v\f\x1c\x1d\x1e\x85\u2028\u2029]+")
_MD_SPECIAL = re.compile(r"([\\`*\[\]<>|#~!&]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z]))")


def md_escape(text: Any) -> str:
    r"""Backslash-escape Markdown's special characters (``*[]<>|#`~!&\``, and ``_`` unless
    inside a word, where CommonMark never reads it as emphasis).

    >>> md_escape("<script>alert(1)</script> | a*b")
    '\\<script\\>alert(1)\\</script\\> \\| a\\*b'
    """
    return _MD_SPECIAL.sub(r"\\\1", _MD_BREAKS.sub(" ", str(text)))  # a line break would end a table row


def builtin_template_dir() -> Path:
    """The built-in templates: ``templates/`` at the repository root (editable install),
    else ``planner/templates`` inside the installed package."""
    here = Path(__file__).resolve().parent.parent  # planner/
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


def template_error(name: str, err: BaseException, user_dir: Path | None) -> MemoTemplateError:
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
        raise template_error(name, err, user_dir) from None


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


def build_memo(plan, output: str | Path, *, templates: str | Path | None = None, charts: bool = True) -> Memo:
    """Render the whole memo of ``plan`` in memory (nothing is written).

    Parameters
    ----------
    plan : planner.plan.build.Plan
        The same plan the workbook ``output`` is written from.
    output : path
        The workbook; the memo's files go beside it (:func:`memo_paths`).
    templates : path, optional
        A folder whose ``memo.md.j2``, ``memo.html.j2``, ``memo.txt.j2`` replace the
        built-in ones.
    charts : bool, default True
        Draw the two charts. False renders the memo without them (no chart files, no chart
        sections, as for a plan with no workloads): quicker, drawing them is about 1.7 s of a
        4 s run of the example (``planner run --no-charts``).

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
    charts = make_charts(plan) if charts else []
    token = plan.input.sha256[:12]
    for c in charts:
        c.filename = paths[c.key].name
        c.cid = f"{c.key}-{token}@kv-planner"
    envs = environments(user_dir)
    on_disk = build_context(plan, workbook=output.name, charts=charts)
    # the standalone HTML carries its charts inside (data: URIs), so it shows them when sent
    # or opened on its own; the email refers to its inline parts by cid:
    standalone = build_context(plan, workbook=output.name, charts=charts, chart_src=data_uri)
    in_mail = build_context(plan, workbook=output.name, charts=charts, email=True,
                            chart_src=lambda c: f"cid:{c.cid}")
    return Memo(markdown=render("md", on_disk, envs, user_dir), html=render("html", standalone, envs, user_dir),
                email_html=render("html", in_mail, envs, user_dir),
                email_text=render("txt", in_mail, envs, user_dir), charts=charts,
                subject=subject_line(on_disk), paths=paths)


def data_uri(chart: Chart) -> str:
    """A chart as a ``data:image/png;base64,...`` URI (a self-contained ``<img src>``)."""
    import base64

    return "data:image/png;base64," + base64.b64encode(chart.png).decode("ascii")


def subject_line(context: dict[str, Any]) -> str:
    """``KV-cache capacity plan 2027-Q1–Q4: 584 to 700 GPUs, USD 1,190,000 to 1,400,000 per month`` over the
    plan's periods, else ``KV-cache capacity plan 2026-Q4: 405 GPUs, USD 815,848 per month`` (what applies)."""
    fleet = context["fleet"]
    parts = []
    if context.get("period_subject"):
        parts.append(context["period_subject"])
    else:
        if fleet["has_demand"]:
            parts.append(f"{fleet['gpus']} GPUs")
        if fleet["has_cost"]:
            parts.append(f"{context['currency']} {fleet['cost_per_month']} per month")
    return context["title"] + (": " + ", ".join(parts) if parts else "")


def memo_files(memo: Memo) -> list[tuple[Path, bytes]]:
    """Each file of the memo (charts, Markdown, HTML) and its bytes, in writing order."""
    return [(memo.paths[key], data) for key, data in
            [(c.key, c.png) for c in memo.charts]
            + [("md", memo.markdown.encode("utf-8")), ("html", memo.html.encode("utf-8"))]]


def write_memo(memo: Memo) -> list[Path]:
    """Write the memo files and charts, each atomically (temporary file, then rename).
    ``planner run`` stages them with the workbook instead (:mod:`planner.cli.transaction`)."""
    from planner.core.fileio import save_atomic

    return [save_atomic(path, lambda tmp, data=data: tmp.write_bytes(data)) for path, data in memo_files(memo)]
