"""Memo charts (matplotlib, PNG): TTFT vs hit per workload and delivered vs physical TPM."""

from __future__ import annotations

from pathlib import Path

import io
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from planner.equations import kvhit as m
from planner.core import schema
from planner.memo.numbers import chart_rows, format_number

CHART_TTFT_MAX = 6  # TTFT-vs-hit panels: the workloads with the largest demand
CHART_TPM_MAX = 12  # delivered-vs-physical bars
CHART_GRID_POINTS = 401  # hit resolution of the TTFT curves (0.25 %)
CHART_PX = 700  # display width in the memo: fits the 712 px text column of the HTML memo
CHART_WIDTH_IN = CHART_PX / 96  # 96 px per inch, as on screen, so 8 pt text reads as 8 pt
CHART_DPI = 192  # twice that, sharp on high-density screens


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



_BLUE, _ORANGE, _GREY, _LIGHT = "#1F4E79", "#C55A11", "#6B7280", "#9DC3E6"

# Chart text: DejaVu Sans (matplotlib's own) first, then fonts that cover Chinese, Japanese
# and Korean names; matplotlib falls back glyph by glyph along this list (those installed).
FONT_FAMILIES = ("DejaVu Sans", "Noto Sans CJK JP", "Noto Sans CJK SC", "Source Han Sans", "WenQuanYi Zen Hei",
                 "Droid Sans Fallback", "Arial Unicode MS", "Microsoft YaHei", "MS Gothic", "Malgun Gothic")
NO_GLYPH_NOTE = ("Some characters of the workload names could not be drawn in the charts: no installed font has "
                 "them (install a font that covers them, e.g. Debian's fonts-noto-cjk or fonts-droid-fallback).")


_FONTS_SYNCED = False


def _add_fonts_installed_since_cache() -> None:
    """Add the system fonts matplotlib's font cache does not know yet (installed after the cache
    was built, e.g. a CJK font installed after a first run): ``FontManager.addfont`` for each, once
    per process, so chart text finds them without deleting the user's cache."""
    global _FONTS_SYNCED
    if _FONTS_SYNCED:
        return
    _FONTS_SYNCED = True
    from matplotlib import font_manager

    known = {Path(f.fname).resolve() for f in font_manager.fontManager.ttflist}
    for path in font_manager.findSystemFonts():
        if Path(path).resolve() not in known:
            try:
                font_manager.fontManager.addfont(path)
            except (OSError, RuntimeError, ValueError):  # a file FreeType cannot read: skip it
                continue


def _fonts():
    """rc settings for chart text: the installed families of FONT_FAMILIES, in that order."""
    from matplotlib import font_manager

    _add_fonts_installed_since_cache()
    have = {f.name for f in font_manager.fontManager.ttflist}
    # the families themselves, not the generic "sans-serif": matplotlib falls back glyph by
    # glyph only along an explicit list of families
    return {"font.family": [f for f in FONT_FAMILIES if f in have] or ["DejaVu Sans"]}


def undrawable(texts) -> str:
    """The characters of ``texts`` that no installed chart font can draw ('' when all can)."""
    from matplotlib import font_manager
    from matplotlib.ft2font import FT2Font

    fonts = [FT2Font(font_manager.findfont(font_manager.FontProperties(family=name), fallback_to_default=False))
             for name in _fonts()["font.family"]]
    missing = []
    for ch in sorted({c for t in texts for c in str(t) if not c.isspace()}):
        if not any(f.get_char_index(ord(ch)) for f in fonts):
            missing.append(ch)
    return "".join(missing)


def figure_png(fig) -> bytes:
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


def style_axes(ax) -> None:
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
    load = m.kv_load_ms(hits, float(res["isl"]), s_kv, float(res["kv_gbps"]))
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
        style_axes(ax)
    for j in range(k, nrow * ncol):
        axes[j // ncol][j % ncol].set_visible(False)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, frameon=False, fontsize=8,
               bbox_to_anchor=(0.5, 0.0))
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    png = figure_png(fig)
    plt.close(fig)
    return png


def tpm_chart(plan, rows: list[int]) -> bytes:
    """Delivered and physical TPM per GPU at the target hit (per instance / tp), one bar pair per
    workload: instances of different tp compare per GPU."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    r = plan.results.iloc[rows].reset_index(drop=True)
    k = len(rows)
    names = [_label(x, 30) for x in r["workload"]]
    tp = plan.resolved["tp"].iloc[rows].to_numpy(dtype=float)
    delivered = m.per_gpu(r["tpm_delivered_target"].to_numpy(dtype=float), tp)
    physical = m.per_gpu(r["tpm_physical_target"].to_numpy(dtype=float), tp)
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
    ax.set_xlabel("tokens/min per GPU at the target hit (one instance's TPM / tp)", fontsize=8, color="#374151")
    style_axes(ax)
    ax.grid(False, axis="y")
    ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=2, frameon=False, fontsize=8, borderaxespad=0.3)
    fig.tight_layout()
    png = figure_png(fig)
    plt.close(fig)
    return png


def make_charts(plan) -> list[Chart]:
    """Both charts, as PNG bytes (not written)."""
    n = len(plan.results)
    if n == 0:
        return []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot  # noqa: F401 - imported before rc_context: its import would reset the fonts

    with matplotlib.rc_context(_fonts()):
        return _make_charts(plan, n)


def _make_charts(plan, n: int) -> list[Chart]:
    # panels and bars in the memo table's order (input order); when there are more workloads
    # than panels, the ones with the largest demand are chosen (then shown in table order)
    specs = (
        ("ttft", CHART_TTFT_MAX, ttft_chart, "TTFT against hit ratio",
         "TTFT at α=0 (solid) and α=1 (dashed) over the hit ratio for {which}; the dotted line "
         "is the break-even h*, dots mark the measured (open) and target (filled) hits.",
         "Line charts of TTFT in milliseconds against hit ratio, with and without overlap"),
        ("tpm", CHART_TPM_MAX, tpm_chart, "Delivered and physical TPM per GPU",
         "Delivered and physical tokens per minute per GPU at the target hit (one serving instance's "
         "TPM divided by its tp, so deployments of different tp compare), for {which}; the gap is "
         "input served from the KV cache.",
         "Bar chart of delivered and physical tokens per minute per GPU per workload"),
    )
    out: list[Chart] = []
    shown: set[int] = set()
    for key, limit, draw, title, caption, alt in specs:
        rows = sorted(chart_rows(plan, limit))
        shown |= set(rows)
        which = "every workload" if len(rows) == n else (f"the {len(rows)} workloads with the largest demand "
                                                         f"(of {n}), in the table's order")
        out.append(Chart(key, title, caption.format(which=which), alt, draw(plan, rows), CHART_PX, 0))
    missing = undrawable(plan.results["workload"].iloc[sorted(shown)])
    for c in out:
        if missing:
            c.caption += " " + NO_GLYPH_NOTE
        w, h = png_size(c.png)
        c.height = round(c.width * h / w)
    return out


def png_size(png: bytes) -> tuple[int, int]:
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
