"""The diff memo: what changed from OLD to NEW and why the fleet costs what it does now.

Rendered with the planning memo's machinery (:mod:`planner.memo.render`: number formatting,
sandboxed jinja2 environments, template error messages) from the built-in templates
``diff.md.j2``, ``diff.html.j2`` and ``diff.txt.j2`` (the plain-text email body); the
email is built by :func:`planner.memo.mail.build_message` like ``planner run --eml``.

Template context: ``title, currency, email, old, new`` (file names), ``old_quarter,
new_quarter``, ``created``, ``workbook``, ``total`` (``old, new, change`` as :class:`Num`,
``pct``, ``direction``), ``bridge`` (per step: ``step, value, text``), ``bridge_text``
(sentences), ``largest`` (up to five workloads by |cost change|: ``workload, status,
old, new, change, gpus_old, gpus_new``), ``gpus`` (per GPU type: ``gpu, old, new,
change``), ``changes_by_sheet`` (``sheet, count``), ``new_warnings``, ``unpriced``,
``charts``.
"""

from __future__ import annotations

import datetime as _dt
import urllib.parse
from pathlib import Path
from typing import Any

from planner.diff.bridge import Diff
from planner.memo.render import Memo, template_error, data_uri, environments
from planner.memo.charts import Chart, figure_png, png_size, style_axes
from planner.memo.numbers import FMT_MONEY, num
from planner.core.schema import FMT_INT, FMT_PCT

TEMPLATES = {"md": "diff.md.j2", "html": "diff.html.j2", "txt": "diff.txt.j2"}
LARGEST = 5
CHART_PX = 700

STEP_WORDS = {
    "removed": "dropping the workloads that are no longer planned",
    "added": "adding the new workloads",
    "demand": "the new demand of the continuing workloads",
    "hit": "the new hit ratios (target and measured, and their traces and KV tiers)",
    "price": "the new GPU prices",
    "other": "everything else (models, GPUs, parallelism, lengths, times, settings)",
}


def memo_paths(output: Path) -> dict[str, Path]:
    """``<stem>-memo.md``, ``<stem>-memo.html`` and ``<stem>-bridge.png`` beside ``output``."""
    output = Path(output)
    return {"md": output.with_name(f"{output.stem}-memo.md"),
            "html": output.with_name(f"{output.stem}-memo.html"),
            "bridge": output.with_name(f"{output.stem}-bridge.png")}


def _money(v: float | None, signed: bool = False):
    return num(v, FMT_MONEY, signed=signed)


def bridge_sentences(d: Diff, currency: str) -> list[str]:
    """The bridge in words: one sentence per step that changes the cost, in order."""
    out = []
    counts = {s: sum(1 for w in d.workloads if w["status"] == s) for s in ("added", "removed")}
    lat = d.latency or {}
    for step, value in d.bridge[1:-1]:
        part = step == "other" and (lat.get("cost_per_month") or lat.get("gpus"))
        if value == 0 and not part:
            continue
        verb = "adds" if value > 0 else "saves"
        what = STEP_WORDS[step]
        if step in counts:
            n = counts[step]
            what = f"{what} ({n} workload{'s' if n != 1 else ''})"
        tail = ""
        split = d.hit_split or {}
        if step == "hit" and split and (split.get("capacity") or split.get("capacity_gpus")):
            # where the hit step came from (issue 19): the traffic, or the cache capacity
            tail = (f", of which the traffic (hit ratios and traces at the old tiers) {currency} "
                    f"{_money(split['traffic'], signed=True)} and the KV-cache capacity {currency} "
                    f"{_money(split['capacity'], signed=True)}")
        if part:  # the part of `other` the latency targets make (issue 16)
            tail = (f", of which the new latency targets (TTFT/TPOT targets, their percentile, fixed concurrency) "
                    f"{currency} {_money(lat['cost_per_month'], signed=True)} "
                    f"({num(lat['gpus'], FMT_INT, signed=True)} GPUs)")
        out.append(f"{what[0].upper()}{what[1:]}: {verb} {currency} {_money(abs(value))} per month{tail}."
                   .replace("  ", " "))
    if not out:
        out.append("No step changes the fleet cost.")
    return out


def build_context(d: Diff, *, workbook: str, created: _dt.datetime, charts: list[Chart] | None = None,
                  email: bool = False, chart_src=None) -> dict[str, Any]:
    currency = str(d.new.settings.get("currency") or d.old.settings.get("currency") or "").strip()
    old_q = str(d.old.settings.get("quarter") or "").strip()
    new_q = str(d.new.settings.get("quarter") or "").strip()
    c_old, c_new = d.bridge[0][1], d.bridge[-1][1]
    change = c_new - c_old
    direction = "up" if change > 0 else "down" if change < 0 else "unchanged"
    movers = [w for w in d.workloads
              if (w["cost_per_month_new"] or 0.0) - (w["cost_per_month_old"] or 0.0) != 0]
    movers.sort(key=lambda w: -abs((w["cost_per_month_new"] or 0.0) - (w["cost_per_month_old"] or 0.0)))
    largest = [{"workload": w["workload"], "status": w["status"],
                "old": _money(w["cost_per_month_old"]), "new": _money(w["cost_per_month_new"]),
                "change": _money((w["cost_per_month_new"] or 0.0) - (w["cost_per_month_old"] or 0.0), True),
                "gpus_old": num(w["gpus_old"], FMT_INT), "gpus_new": num(w["gpus_new"], FMT_INT)}
               for w in movers[:LARGEST]]
    by_sheet: dict[str, int] = {}
    for c in d.changes:
        by_sheet[c.sheet] = by_sheet.get(c.sheet, 0) + 1
    charts = charts or []
    src = chart_src or (lambda c: urllib.parse.quote(c.filename))
    span = f"{old_q} to {new_q}" if old_q and new_q and old_q != new_q else (new_q or old_q)
    return {
        "title": f"What changed in the capacity plan{': ' + span if span else ''}",
        "currency": currency, "email": email, "workbook": workbook,
        "old": d.old_path.name, "new": d.new_path.name, "old_quarter": old_q, "new_quarter": new_q,
        "old_sha256": d.old.input.sha256, "new_sha256": d.new.input.sha256,
        "created": created.astimezone(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "total": {"old": _money(c_old), "new": _money(c_new), "change": _money(change, True),
                  "pct": num(change / c_old if c_old else None, FMT_PCT, signed=True), "direction": direction},
        "bridge": [{"step": s, "value": _money(v, s not in ("old", "new")), "text": STEP_WORDS.get(s, "")}
                   for s, v in d.bridge],
        "bridge_text": bridge_sentences(d, currency),
        "largest": largest,
        "gpus": [{"gpu": g["gpu"], "old": num(g["gpus_old"], FMT_INT), "new": num(g["gpus_new"], FMT_INT),
                  "change": num(g["gpus_new"] - g["gpus_old"], FMT_INT, signed=True)} for g in d.gpus],
        "workload_counts": {s: sum(1 for w in d.workloads if w["status"] == s)
                            for s in ("added", "removed", "changed", "same")},
        "changes_by_sheet": [{"sheet": k, "count": v} for k, v in by_sheet.items()],
        "changes_total": len(d.changes),
        "new_warnings": list(d.new_warnings),
        "unpriced": list(d.unpriced),
        "charts": [{"key": c.key, "title": c.title, "caption": c.caption, "alt": c.alt, "src": src(c),
                    "width": c.width, "height": c.height} for c in charts],
    }


def bridge_chart(d: Diff, currency: str) -> bytes:
    """The bridge as a waterfall PNG (matplotlib, the planning memo's style)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from planner.memo.charts import CHART_WIDTH_IN

    labels = [s for s, _ in d.bridge]
    bottoms, heights, colors = [], [], []
    running = 0.0
    for s, v in d.bridge:
        if s in ("old", "new"):
            bottoms.append(0.0)
            heights.append(v)
            colors.append("#4472C4")
            running = v
        else:
            bottoms.append(min(running, running + v))
            heights.append(abs(v))
            colors.append("#C00000" if v > 0 else "#00B050")
            running += v
    fig, ax = plt.subplots(figsize=(CHART_WIDTH_IN, 3.2))
    ax.bar(labels, heights, bottom=bottoms, color=colors, width=0.6)
    ax.set_ylabel(f"{currency} per month".strip(), fontsize=8)
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda x, _: f"{x:,.0f}"))
    style_axes(ax)
    fig.tight_layout()
    png = figure_png(fig)
    plt.close(fig)
    return png


def render(kind: str, context: dict[str, Any], envs: dict[str, Any]) -> str:
    name = TEMPLATES[kind]
    try:
        return envs[kind].get_template(name).render(context)
    except Exception as err:  # noqa: BLE001 - a failing template is reported, not raised raw
        raise template_error(name, err, None) from None


def build_memo(d: Diff, output: str | Path, *, created: _dt.datetime) -> Memo:
    """Render the diff memo in memory (nothing is written): a :class:`planner.memo.render.Memo`, so
    :func:`planner.memo.render.write_memo` and :func:`planner.memo.mail.build_message` take it as they are."""
    output = Path(output)
    paths = memo_paths(output)
    currency = str(d.new.settings.get("currency") or "").strip()
    png = bridge_chart(d, currency)
    w, h = png_size(png)
    chart = Chart("bridge", "Fleet cost per month, OLD to NEW", "Each bar is the change one step makes, in the "
                  "fixed order of the bridge; red adds cost, green saves.", "Waterfall of the fleet cost per month",
                  png, CHART_PX, round(CHART_PX * h / w), filename=paths["bridge"].name,
                  cid=f"bridge-{d.new.input.sha256[:12]}@kv-planner")
    envs = environments(None)
    disk = build_context(d, workbook=output.name, created=created, charts=[chart])
    # the standalone HTML carries its chart inside (data: URI); the email refers to it by cid:
    standalone = build_context(d, workbook=output.name, created=created, charts=[chart], chart_src=data_uri)
    mail = build_context(d, workbook=output.name, created=created, charts=[chart], email=True,
                         chart_src=lambda c: f"cid:{c.cid}")
    subject = f"{disk['title']}: {currency} {disk['total']['change']} per month".replace("  ", " ")
    return Memo(render("md", disk, envs), render("html", standalone, envs), render("html", mail, envs),
                render("txt", mail, envs), [chart], subject, paths)


