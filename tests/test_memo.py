"""The planning memo: golden files, numbers equal to the workbook's, escaping, sandboxed
custom templates, atomic writing. The command line runs in this process
(``planner.cli.main.main`` through ``conftest.run_cli``); the hidden options ``--fixed-time`` and ``--fixed-sha256`` fix
the run time and input hash so the memo is byte-for-byte reproducible.

Regenerate the golden files after an intended change of the memo or the example with
``PLANNER_UPDATE_GOLDEN=1 python -m pytest tests/test_memo.py`` and review the diff.
"""

from __future__ import annotations

import base64
import email
import email.policy
import math
import os
import re
from html.parser import HTMLParser
from pathlib import Path

import openpyxl
import pytest

from conftest import EXAMPLE, REPO, edited_example, run_cli, sheet_values, value_book
from planner.memo import render as memo
from planner.memo import charts as memo_charts
from planner.memo import numbers as memo_numbers
from planner.plan.build import build_plan

GOLDEN = REPO / "tests" / "golden"
FIXED_TIME = "2026-10-01T09:00:00+00:00"
FIXED_SHA = "0123456789abcdef" * 4
FIXED = ("--fixed-time", FIXED_TIME, "--fixed-sha256", FIXED_SHA)
XSS = "<script>alert(1)</script>"


# --------------------------------------------------------------------------- helpers
planner = run_cli  # in this process: a subprocess adds an interpreter start and nothing else here


def set_workload_names(wb, names: dict[int, str]) -> None:
    """Rename Workloads rows (1-based data row -> new name)."""
    ws = wb["Workloads"]
    col = next(c.column for c in ws[1] if str(c.value).split(" [")[0].strip().lower() == "workload")
    renamed = {}
    for row, name in names.items():
        renamed[ws.cell(row + 1, col).value] = name
        ws.cell(row + 1, col).value = name
    # the example's Demand and Scenarios sheets name workloads too: rename them there as well
    for sheet, head in (("Demand", "workload"), ("Scenarios", "match")):
        if sheet in wb.sheetnames:
            ws = wb[sheet]
            j = next(c.column for c in ws[1] if str(c.value).split(" [")[0].strip().lower() == head)
            for r in range(2, ws.max_row + 1):
                if ws.cell(r, j).value in renamed:
                    ws.cell(r, j).value = renamed[ws.cell(r, j).value]


def md_unescape(text: str) -> str:
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", text)


def md_table(md: str) -> tuple[list[str], list[list[str]]]:
    """Header and body cells of the per-workload table of a Markdown memo."""
    lines = md.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| Workload |"))
    split = lambda line: [md_unescape(c.strip()) for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
    header = split(lines[start])
    body = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        body.append(split(line))
    return header, body


class Tables(HTMLParser):
    """Every <table> of an HTML page: rows of cells, each cell a list of text pieces
    (split at tags), plus the ``src`` of every <img>."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tables: list[list[list[list[str]]]] = []
        self.stack: list[list] = []
        self.cell: list[str] | None = None
        self.images: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.stack.append([])
        elif tag == "tr" and self.stack:
            self.stack[-1].append([])
        elif tag in ("td", "th") and self.stack:
            self.cell = []
            self.stack[-1][-1].append(self.cell)
        elif tag == "img":
            self.images.append(dict(attrs)["src"])

    def handle_endtag(self, tag):
        if tag == "table":
            self.tables.append(self.stack.pop())
        elif tag in ("td", "th"):
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None and data.strip():
            self.cell.append(data.strip())


def html_table(html: str) -> tuple[list[str], list[list[list[str]]]]:
    p = Tables()
    p.feed(html)
    table = next(t for t in p.tables if t and t[0] and t[0][0] == ["Workload"])
    return [" ".join(c) for c in table[0]], table[1:]


def parse_number(text: str) -> tuple[float | None, float]:
    """A printed number -> (value, half a unit of its last digit); blank -> (None, 0)."""
    t = text.strip()
    if t == memo_numbers.BLANK:
        return None, 0.0
    pct = t.endswith("%")
    core = t.rstrip("%").replace(",", "")
    assert re.fullmatch(r"[+-]?\d+(\.\d+)?", core), f"not a formatted number: {text!r}"
    decimals = len(core.split(".")[1]) if "." in core else 0
    half = 0.5 * 10.0 ** -decimals
    value = float(core)
    return (value / 100, half / 100) if pct else (value, half)


def assert_printed(text: str, expected, what: str) -> None:
    """``text`` is ``expected`` within its printed rounding (and blank iff blank)."""
    value, half = parse_number(text)
    blank = expected is None or expected == "" or (isinstance(expected, float) and math.isnan(expected))
    if value is None or blank:
        assert value is None and blank, f"{what}: printed {text!r}, workbook has {expected!r}"
        return
    assert abs(value - float(expected)) <= half * (1 + 1e-9) + 1e-12, (
        f"{what}: printed {text!r} is not the workbook's {expected!r} within its rounding")


def workbook_rows(path: Path) -> dict[str, list[dict]]:
    return {"Results": sheet_values(path, "Results"), "Resolved": sheet_values(path, "Resolved")}


@pytest.fixture(scope="module")
def example_run(tmp_path_factory) -> Path:
    """The example planned once with the memo and an .eml, time and hash fixed."""
    d = tmp_path_factory.mktemp("example")
    r = planner("run", EXAMPLE, "-o", d / "plan.xlsx", "--eml", d / "plan.eml", "--to", "cap@example.org",
                "--from", "planner@example.org", *FIXED, cwd=d)
    assert r.returncode == 0, r.stderr
    return d


# --------------------------------------------------------------------------- golden
def _golden(name: str, got: str) -> None:
    path = GOLDEN / name
    if os.environ.get("PLANNER_UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(got, encoding="utf-8", newline="")
    assert path.is_file(), f"{path} is missing: run with PLANNER_UPDATE_GOLDEN=1 to create it"
    want = path.read_text(encoding="utf-8")
    assert got == want, (f"{name} differs from the golden file; if the change is intended, regenerate "
                         f"with PLANNER_UPDATE_GOLDEN=1 and review the diff")


def test_golden_markdown_memo(example_run):
    _golden("example-memo.md", (example_run / "plan-memo.md").read_text(encoding="utf-8"))


def test_golden_html_memo(example_run):
    html = (example_run / "plan-memo.html").read_text(encoding="utf-8")
    # the standalone page carries its charts as data: URIs, byte for byte the PNGs beside it
    # (the PNG bytes depend on the installed fonts, so the golden file holds a placeholder)
    uris = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
    assert [base64.b64decode(u) for u in uris] == [(example_run / f"plan-{k}.png").read_bytes()
                                                   for k in ("ttft", "tpm")]
    assert not re.search(r'src="(?!data:)', html), "the standalone memo refers to a file"
    _golden("example-memo.html", re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "data:image/png;base64,...", html))


def test_golden_text_body(example_run):
    msg = email.message_from_bytes((example_run / "plan.eml").read_bytes(), policy=email.policy.default)
    text = msg.get_body(preferencelist=("plain",)).get_content()
    assert "\n" not in text.replace("\r\n", "")  # CRLF line ends, as mail has them
    _golden("example-memo.txt", text.replace("\r\n", "\n"))


def test_run_writes_memo_and_charts_beside_the_workbook(example_run):
    names = sorted(os.listdir(example_run))
    assert names == ["plan-memo.html", "plan-memo.md", "plan-tpm.png", "plan-ttft.png", "plan.eml",
                     "plan.xlsx"]  # and no temporary file left over
    for png in ("plan-ttft.png", "plan-tpm.png"):
        data = (example_run / png).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    md = (example_run / "plan-memo.md").read_text(encoding="utf-8")
    html = (example_run / "plan-memo.html").read_text(encoding="utf-8")
    assert "![" in md and "](plan-ttft.png)" in md and "](plan-tpm.png)" in md
    p = Tables()
    p.feed(html)
    assert [src.split(",")[0] for src in p.images] == ["data:image/png;base64"] * 2  # self-contained
    # provenance: quarter, input file, the (fixed) hash, the planner version, the time
    from planner.core.version import __version__

    for text in (md, html):
        # the plan's periods (Demand sheet 2027-Q1..Q4), not the run's quarter (Settings quarter 2026-Q4)
        assert "2027-Q1–Q4" in text and "example.xlsx" in text and FIXED_SHA in text
        assert f"planner {__version__}" in text.lower() and "2026-10-01 09:00 UTC" in text
    # the workbook's Run sheet carries the same fixed provenance
    wb = value_book(example_run / "plan.xlsx", "Run")
    run = {r[0]: r[1] for r in wb["Run"].iter_rows(min_row=2, values_only=True) if r[0]}
    assert run["input SHA-256"] == FIXED_SHA
    assert str(run["created (UTC)"]).startswith("2026-10-01T09:00")


def test_html_memo_is_email_safe(example_run):
    html = (example_run / "plan-memo.html").read_text(encoding="utf-8")
    assert "<style" not in html and "<link" not in html and "<script" not in html.lower()
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)  # no external assets
    assert "url(" not in html and "@import" not in html
    assert 'charset="utf-8"' in html
    assert html.count("<table") >= 3 and "max-width:760px" in html


# --------------------------------------------------------------------------- numbers
def _check_table(header, rows, wb_rows, cell_text, name_of):
    cols = memo_numbers.TABLE_COLUMNS
    assert len(rows) == len(wb_rows["Results"]) > 0
    for i, row in enumerate(rows):
        assert name_of(row) == wb_rows["Results"][i]["workload"]
        assert len(row) == len(cols) + 1
        for j, c in enumerate(cols):
            text = cell_text(row[j + 1])
            expected = wb_rows[c.source][i][c.key]
            if c.text:
                assert text == expected, f"row {i} {c.key}"
            else:
                assert_printed(text, expected, f"row {i + 1} {c.key}")


def test_every_number_of_the_markdown_table_is_the_workbooks(example_run):
    header, rows = md_table((example_run / "plan-memo.md").read_text(encoding="utf-8"))
    assert header == ["Workload"] + [c.header("USD") for c in memo_numbers.TABLE_COLUMNS]
    _check_table(header, rows, workbook_rows(example_run / "plan.xlsx"), lambda c: c, lambda r: r[0])


def test_every_number_of_the_html_table_is_the_workbooks(example_run):
    header, rows = html_table((example_run / "plan-memo.html").read_text(encoding="utf-8"))
    assert header[1:] == [" ".join(x for x in (c.label, c.unit.replace("currency", "USD")) if x)
                          for c in memo_numbers.TABLE_COLUMNS]
    _check_table(header, rows, workbook_rows(example_run / "plan.xlsx"), lambda c: " ".join(c),
                 lambda r: r[0][0])


def test_headline_totals_are_the_workbooks_sums(example_run):
    wb = workbook_rows(example_run / "plan.xlsx")
    res, resolved = wb["Results"], wb["Resolved"]
    md = (example_run / "plan-memo.md").read_text(encoding="utf-8")
    head = md.split("## Per workload")[0]
    gpus = sum(r["gpus_needed"] for r in res)
    cost = sum(r["gpus_needed"] * v["hourly_cost"] for r, v in zip(res, resolved))
    delivered = sum(r["instances_needed"] * r["tpm_delivered_target"] for r in res)
    demand = sum(v["demand_tpm"] for v in resolved)
    m = re.search(r"need ([\d,]+) GPUs \(([\d,]+) serving instances\)", head)
    assert m, head
    assert_printed(m[1], gpus, "fleet GPUs")
    assert_printed(m[2], sum(r["instances_needed"] for r in res), "fleet instances")
    # money per month: Σ gpus_needed x hourly_cost x hours_per_month (730, Settings default)
    assert_printed(re.search(r"costing USD ([\d,.]+) per month", head)[1], cost * 730, "fleet cost per month")
    assert_printed(re.search(r"deliver up to ([\d,]+) tokens/min", head)[1], delivered, "fleet delivered TPM")
    assert_printed(re.search(r"demand of ([\d,]+) tokens/min", head)[1], demand, "fleet demand")
    # GPUs at the baseline hits (hit_baseline blank in the example: hit_measured):
    # ceil(demand / (TPM at hit_measured x target_utilization)) x tp, as the assumptions say
    measured = 0
    for r, v in zip(res, resolved):
        tpm_m = v["tpm_measured"]  # blank (the calibrated/estimated rows): the model's TPM at hit_measured
        if tpm_m in (None, ""):
            tpm_m = (v["isl"] + v["osl"]) * 60000 / r["chip_ms_measured"]
        measured += math.ceil(round(v["demand_tpm"] / (tpm_m * v["target_utilization"]), 9)) * v["tp"]
    m = re.search(r"would need ([\d,]+) GPUs", head)
    assert_printed(m[1], measured, "GPUs at the measured hits")
    assert f"save {int(measured - gpus):,} GPUs" in head


def test_findings_are_written_from_the_numbers(example_run):
    wb = workbook_rows(example_run / "plan.xlsx")
    res, resolved = wb["Results"], wb["Resolved"]
    md = md_unescape((example_run / "plan-memo.md").read_text(encoding="utf-8"))
    findings = md.split("## Findings")[1].split("\n## ")[0]
    load_bound = [r["workload"] for r in res if r["regime"] == "load-bound"]
    beyond = [r["workload"] for r, v in zip(res, resolved) if v["hit_target"] > r["h_star"]]
    assert load_bound and beyond  # the example has both
    for name in load_bound + beyond:
        assert name in findings
    assert "Load-bound at target" in findings and "beyond break-even h*" in findings
    assert "KV fits in HBM" in findings
    cut = {r["workload"]: r["ttft_alpha0_ms"] - r["ttft_alpha1_ms"] for r in res}
    top = max(cut, key=cut.get)
    assert f"{top} {memo_numbers.format_number(cut[top], '#,##0.00')} ms" in findings
    # the warnings of the run are in the memo
    assert "## Warnings" in md and "beyond the first-order break-even" in md.split("## Warnings")[1]


def test_kv_that_does_not_fit_is_a_finding(tmp_path):
    def edit(wb):
        ws = wb["Workloads"]
        col = next(c.column for c in ws[1] if str(c.value).split(" [")[0].strip().lower() == "batch")
        ws.cell(2, col).value = 4000

    # three workloads: the finding is the edited first row's; the others add nothing to it
    src, _ = edited_example(tmp_path / "in" / "edited.xlsx", edit, workloads=3)
    plan = build_plan(src)
    text = " ".join(f["text"] for f in memo_numbers.findings(plan) if f["kind"] == "hbm")
    name = plan.results["workload"].iat[0]
    assert plan.results["hbm_headroom_gib"].iat[0] < 0
    assert name in text and "exceed" in text
    assert memo_numbers.format_number(-plan.results["hbm_headroom_gib"].iat[0], "#,##0.00") in text


# --------------------------------------------------------------------------- format helper
@pytest.mark.parametrize("value, fmt, signed, text", [
    (657441.2022, "#,##0", False, "657,441"),
    (1234567.5, "#,##0", False, "1,234,568"),        # half away from zero, as Excel
    (2.675, "#,##0.00", False, "2.68"),              # Python's format gives 2.67
    (-2.675, "#,##0.00", False, "-2.68"),
    (0.0994, "0.0%", True, "+9.9%"),
    (-0.0004, "0.0%", True, "0.0%"),                 # no "-0.0%"
    (0.25350800, "#,##0.0000", False, "0.2535"),
    (0.5, "#,##0.###", False, "0.5"),
    (3.0, "#,##0.###", False, "3"),
    (1.23456, "0.000", False, "1.235"),
    (None, "#,##0", False, memo_numbers.BLANK),
    (float("nan"), "0.0%", False, memo_numbers.BLANK),
])
def test_format_number_is_the_workbooks_display(value, fmt, signed, text):
    assert memo_numbers.format_number(value, fmt, signed=signed) == text


def test_format_number_refuses_unknown_formats():
    with pytest.raises(ValueError):
        memo_numbers.format_number(1.0, "0.00E+00")


# --------------------------------------------------------------------------- escaping
def test_hostile_workload_name_is_escaped(tmp_path):
    odd = "a|b *c* _d_ $x$ [e](f)"
    # three workloads (the two renamed and one more): every output file, the charts and the
    # email are written as for the whole example, and each shows the names
    src, _ = edited_example(tmp_path / "in" / "edited.xlsx", lambda wb: set_workload_names(wb, {1: XSS, 2: odd}),
                            workloads=3)
    out = tmp_path / "out" / "plan.xlsx"
    r = planner("run", src, "-o", out, "--eml", tmp_path / "out" / "plan.eml", *FIXED, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    html = (tmp_path / "out" / "plan-memo.html").read_text(encoding="utf-8")
    assert "<script" not in html.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    header, rows = html_table(html)
    assert rows[0][0][0] == XSS  # shown as text, exactly
    md = (tmp_path / "out" / "plan-memo.md").read_text(encoding="utf-8")
    assert XSS not in md and r"\<script\>alert(1)\</script\>" in md
    header, rows = md_table(md)
    assert [row[0] for row in rows[:2]] == [XSS, odd]  # the pipe did not split the row
    assert all(len(row) == len(header) for row in rows)
    msg = email.message_from_bytes((tmp_path / "out" / "plan.eml").read_bytes(), policy=email.policy.default)
    body = msg.get_body(preferencelist=("html",)).get_content()
    assert "<script" not in body.lower() and "&lt;script&gt;" in body
    text = msg.get_body(preferencelist=("plain",)).get_content()
    assert XSS in text  # plain text is shown as text: nothing to escape


# --------------------------------------------------------------------------- custom templates
def _custom(tmp_path: Path, files: dict[str, str]) -> Path:
    d = tmp_path / "tpl"
    d.mkdir(exist_ok=True)
    for name, text in files.items():
        (d / name).write_text(text, encoding="utf-8")
    return d


def _assert_nothing_written(out_dir: Path, before: dict[str, bytes]) -> None:
    now = {p.name: p.read_bytes() for p in out_dir.iterdir()} if out_dir.exists() else {}
    assert now == before, "a failed run must leave the output folder as it was (no partial memo, no temporaries)"


@pytest.mark.parametrize("template, kind, line", [
    ("{{ ''.__class__.__mro__ }}", "unsafe", 1),
    ("ok\n{% for x in rows %}{{ x.__init__.__globals__ }}{% endfor %}", "unsafe", 2),
    ("line 1\nline 2\n{{ no_such_thing }}\n", "undefined", 3),
    ("a\n{% if %}\n", "syntax error", 2),
    ("{{ self._TemplateReference__context }}", "unsafe", 1),
])
def test_hostile_or_broken_custom_template_is_refused(tmp_path, template, kind, line, small_example):
    # the first case draws the charts (rendered in memory, then refused: no PNG may be written);
    # the others are about the template alone, so they skip drawing them (--no-charts). The
    # example cut to 3 workloads (conftest.small_example): the template is refused the same way
    # whatever the rows, and the charts are drawn for it as for the whole example
    charts = [] if "__mro__" in template else ["--no-charts"]
    tpl = _custom(tmp_path, {"memo.html.j2": template})
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    old = {"plan.xlsx": b"old workbook", "plan-memo.md": b"old memo", "plan-memo.html": b"old html"}
    for name, data in old.items():
        (out_dir / name).write_bytes(data)
    r = planner("run", small_example, "-o", out_dir / "plan.xlsx", "--templates", tpl, "--eml", out_dir / "p.eml",
                *charts, cwd=tmp_path)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr
    assert "memo.html.j2" in r.stderr and f"line {line}" in r.stderr and kind in r.stderr, r.stderr
    assert "(custom)" in r.stderr and "nothing was written" in r.stderr
    _assert_nothing_written(out_dir, old)


def test_hostile_template_error_message_is_clear(tmp_path):
    tpl = _custom(tmp_path, {"memo.html.j2": "{{ ''.__class__.__mro__ }}"})
    with pytest.raises(memo.MemoTemplateError) as err:
        memo.render("html", {}, memo.environments(tpl), tpl)
    msg = str(err.value)
    assert msg.startswith("template memo.html.j2 (custom), line 1: unsafe template:")
    assert "__class__" in msg and msg.endswith("nothing was written")


def test_custom_template_overrides_one_and_extends_the_builtin(tmp_path):
    tpl = _custom(tmp_path, {
        "memo.md.j2": '{% extends "builtin/memo.md.j2" %}{% block headline %}Custom headline: '
                      '{{ fleet.gpus }} GPUs; first {{ rows[0].workload }}{% endblock %}',
        "memo.html.j2": "<p>{{ rows[0].workload }} {{ '<b>' }} {{ rows[0].tpm_delivered_target }}</p>\n",
    })
    # three workloads: the headline's sum of gpus_needed is over the Results rows, whatever their number
    src, _ = edited_example(tmp_path / "in" / "edited.xlsx", lambda wb: set_workload_names(wb, {1: XSS}), workloads=3)
    out = tmp_path / "out" / "plan.xlsx"
    r = planner("run", src, "-o", out, "--templates", tpl, "--no-charts", cwd=tmp_path)  # charts: not this test's
    assert r.returncode == 0, r.stderr
    res = sheet_values(out, "Results")
    md = (tmp_path / "out" / "plan-memo.md").read_text(encoding="utf-8")
    gpus = sum(x["gpus_needed"] for x in res)
    assert f"Custom headline: {gpus:,.0f} GPUs; first \\<script\\>" in md
    assert "## Per workload at the target hit" in md  # the rest is the built-in template
    html = (tmp_path / "out" / "plan-memo.html").read_text(encoding="utf-8")
    assert html == (f"<p>&lt;script&gt;alert(1)&lt;/script&gt; &lt;b&gt; "
                    f"{memo_numbers.format_number(res[0]['tpm_delivered_target'], '#,##0')}</p>\n")


def test_templates_option_must_be_a_folder_with_a_memo_template(tmp_path):
    r = planner("run", EXAMPLE, "-o", tmp_path / "o" / "p.xlsx", "--templates", tmp_path / "nope", cwd=tmp_path)
    assert r.returncode == 2 and "--templates must be a folder" in r.stderr
    (tmp_path / "empty").mkdir()
    r = planner("run", EXAMPLE, "-o", tmp_path / "o" / "p.xlsx", "--templates", tmp_path / "empty", cwd=tmp_path)
    assert r.returncode == 2 and "holds none of memo.md.j2" in r.stderr
    assert not (tmp_path / "o").exists()


def test_no_memo_writes_only_the_workbook(tmp_path, small_example):
    r = planner("run", small_example, "-o", tmp_path / "p.xlsx", "--no-memo", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert os.listdir(tmp_path) == ["p.xlsx"]
    assert "wrote memo" not in r.stdout


@pytest.fixture(scope="module")
def small_run(tmp_path_factory, small_example):
    """``planner run`` of the example cut to 3 workloads (conftest.small_example) with the memo and
    its charts, time and hash fixed, over an older p-memo.md: (its folder, the run). Read-only:
    the umask test checks its files, the --no-charts test compares its own memo with its memo."""
    d = tmp_path_factory.mktemp("small-run")
    (d / "p-memo.md").write_text("old")
    r = planner("run", small_example, "-o", d / "p.xlsx", *FIXED, cwd=d)
    assert r.returncode == 0, r.stderr
    return d, r


def test_no_charts_writes_the_memo_without_them(tmp_path, small_example, small_run):
    """``--no-charts`` (build_memo(charts=False)): no PNG, no image in the Markdown, the HTML or
    the email, and otherwise the same memo as the charted run of the same plan (every line of it
    is a line of that memo, in the same order; only the chart sections are gone). On the example
    cut to 3 workloads, as its charted run (``small_run``): the same memo paths as the whole example."""
    d = tmp_path / "out"
    r = planner("run", small_example, "-o", d / "p.xlsx", "--no-charts", "--eml", d / "plan.eml", "--to",
                "cap@example.org", "--from", "planner@example.org", *FIXED, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(d)) == ["p-memo.html", "p-memo.md", "p.xlsx", "plan.eml"]
    assert f"wrote memo {d / 'p-memo.md'} and {d / 'p-memo.html'}, no charts" in r.stdout
    md = (d / "p-memo.md").read_text(encoding="utf-8")
    html = (d / "p-memo.html").read_text(encoding="utf-8")
    assert ".png" not in md and "<img" not in html
    msg = email.message_from_bytes((d / "plan.eml").read_bytes(), policy=email.policy.default)
    assert not [p for p in msg.walk() if p.get_content_maintype() == "image"]
    charted = (small_run[0] / "p-memo.md").read_text(encoding="utf-8").splitlines()
    it = iter(charted)
    assert all(any(line == c for c in it) for line in md.splitlines())  # an ordered sub-list
    gone = [c for c in charted if c not in md.splitlines()]
    assert any("](p-ttft.png)" in c for c in gone) and any("](p-tpm.png)" in c for c in gone)


def test_memo_files_follow_the_umask_and_replace_old_ones(small_run):
    umask = os.umask(0)
    os.umask(umask)
    tmp_path, r = small_run  # run over an older p-memo.md
    assert sorted(os.listdir(tmp_path)) == ["p-memo.html", "p-memo.md", "p-tpm.png", "p-ttft.png", "p.xlsx"]
    assert (tmp_path / "p-memo.md").read_text(encoding="utf-8").startswith("# KV-cache capacity plan")
    for name in os.listdir(tmp_path):
        assert oct((tmp_path / name).stat().st_mode & 0o777) == oct(0o666 & ~umask), name
    assert f"wrote memo {tmp_path / 'p-memo.md'}" in r.stdout


@pytest.fixture(scope="module")
def example_plan():
    """``build_plan(EXAMPLE)`` once for the chart tests below, which read it and change nothing."""
    return build_plan(EXAMPLE)


def test_charts_show_the_workloads_with_the_largest_demand(example_plan):
    plan = example_plan
    rows = memo_numbers.chart_rows(plan, 6)
    demand = plan.resolved["demand_tpm"].to_numpy(dtype=float)
    assert len(rows) == min(6, len(demand))
    assert sorted(demand[rows], reverse=True) == list(demand[rows])
    assert min(demand[rows]) >= max(d for i, d in enumerate(demand) if i not in rows)
    assert memo_numbers.chart_rows(plan, 100) == sorted(range(len(demand)), key=lambda i: (-demand[i], i))


def test_chart_curves_meet_the_workbook_at_the_target_hit(example_plan):
    import numpy as np

    plan = example_plan
    for i in range(len(plan.results)):
        h = np.array([plan.resolved["hit_target"].iat[i]])
        t0, t1 = memo_charts.ttft_curves(plan, i, h)
        assert t0[0] == pytest.approx(plan.results["ttft_alpha0_ms"].iat[i], rel=1e-12)
        assert t1[0] == pytest.approx(plan.results["ttft_alpha1_ms"].iat[i], rel=1e-12)


def test_chart_text_draws_cjk_names(tmp_path, small_example):
    """Workload names in Chinese/Japanese are drawn (a CJK font is installed by .ci/run and the
    README's test command): no 'missing glyph' warning, no note in the captions; and the
    check that would add the note finds nothing missing. On the example cut to 3 workloads
    (conftest.small_example): the charts show every one of them, the renamed first row too."""
    import warnings

    plan = build_plan(small_example)
    assert all(0 in memo_numbers.chart_rows(plan, k) for k in (memo_charts.CHART_TTFT_MAX, memo_charts.CHART_TPM_MAX))
    names = plan.results["workload"].to_numpy(dtype=object).copy()
    names[0] = "聊天-客服 チャット"
    plan.results["workload"] = names
    assert memo_charts.undrawable(["聊天-客服 チャット", "abc"]) == ""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib warns "Glyph ... missing from font(s)"
        charts = memo_charts.make_charts(plan)
    assert all(memo_charts.NO_GLYPH_NOTE not in c.caption for c in charts)
    # a character no font has (a private-use code point) is reported, not dropped silently
    assert memo_charts.undrawable(["x\ue000"]) == "\ue000"
