"""Issue 20, item 6: the output is live where it said it was, and a viewer that draws charts
from their cache sees them.

- every chart series carries cached values: ``ptCount`` equal to the length of its range and
  each point equal to the value the referenced cell stores (read independently from the sheet
  XML with openpyxl); text categories are ``strRef`` (not ``numRef``);
- money and count axes of the column charts start at zero;
- Checks bounds come from the schema (no hand-copied criteria); no ``N()`` over blanks;
- a measured time cleared in the output turns a Checks row and the master check to ERROR.
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import openpyxl
import pytest
from openpyxl.utils import range_boundaries

from conftest import edit_output, same_value, sheet_values
from planner.core import schema
from planner.examples.build import example_path
from planner.plan.build import build_plan
from planner.workbook.writer import write_output

C = "{http://schemas.openxmlformats.org/drawingml/2006/chart}"


@pytest.fixture(scope="module")
def example_out(example_output) -> Path:
    return example_output  # conftest: written once for the session (read-only here)


def _refs(xml: bytes):
    """(kind, formula, cached points) of every numRef/strRef of a chart part."""
    from xml.etree import ElementTree as ET

    root = ET.fromstring(xml)
    for kind in ("numRef", "strRef"):
        for ref in root.iter(C + kind):
            f = ref.find(C + "f").text
            cache = ref.find(C + ("numCache" if kind == "numRef" else "strCache"))
            n = int(cache.find(C + "ptCount").get("val")) if cache is not None else 0
            pts = {int(p.get("idx")): p.find(C + "v").text for p in (cache.iter(C + "pt") if cache is not None else ())}
            yield kind, f, n, pts


def _split(formula: str) -> tuple[str, tuple[int, int, int, int]]:
    sheet, rng = formula.rsplit("!", 1)
    return sheet.strip("'").replace("''", "'"), range_boundaries(rng.replace("$", ""))


def _cells(grids: dict, formula: str) -> list:
    sheet, (c0, r0, c1, r1) = _split(formula)
    grid = grids[sheet]
    return [grid.get((r, c)) for r in range(r0, r1 + 1) for c in range(c0, c1 + 1)]


def _grids(path, sheets) -> dict:
    """{sheet: {(row, column): cached value}} of the named sheets only, read in openpyxl's
    read-only mode (a full load of the example's output parses every sheet, its 8 MB
    Sensitivity_Hit included, and builds a styled cell object for each)."""
    wb = openpyxl.load_workbook(path, data_only=True, read_only=True)
    try:
        return {s: {(r, c): v for r, row in enumerate(wb[s].iter_rows(values_only=True), 1)
                    for c, v in enumerate(row, 1) if v is not None}
                for s in sheets}
    finally:
        wb.close()


def _grid_rows(path, sheet) -> list[tuple]:
    """The cached values of one sheet's rows, read-only."""
    wb = openpyxl.load_workbook(path, data_only=True, read_only=True)
    try:
        return list(wb[sheet].iter_rows(values_only=True))
    finally:
        wb.close()


def test_every_chart_series_has_its_cells_values_cached(example_out):
    with zipfile.ZipFile(example_out) as z:
        charts = [n for n in z.namelist() if n.startswith("xl/charts/chart")]
        assert len(charts) >= 60
        refs = {name: list(_refs(z.read(name))) for name in charts}
        wb = _grids(example_out, sorted({_split(f)[0] for r in refs.values() for _, f, _, _ in r}))
        checked = 0
        for name in charts:
            for kind, f, n, pts in refs[name]:
                cells = _cells(wb, f)
                assert n == len(cells) and n > 0, (name, f, n, len(cells))
                for i, v in enumerate(cells):
                    if v is None or v == "":
                        assert i not in pts, (name, f, i)  # a blank is a gap, not a 0
                        continue
                    if isinstance(v, str):
                        assert kind == "strRef" and pts[i] == v, (name, f, i, v, pts.get(i))
                    else:
                        assert same_value(float(v), float(pts[i]), rel=1e-12), (name, f, i, v, pts.get(i))
                    checked += 1
    assert checked > 1000


def test_text_categories_are_str_refs(example_out):
    with zipfile.ZipFile(example_out) as z:
        for name in (n for n in z.namelist() if n.startswith("xl/charts/chart")):
            xml = z.read(name).decode()
            if "<c:barChart>" in xml:  # column/bar charts: their categories are names
                cats = re.findall(r"<c:cat>(<c:\w+>)", xml)
                assert cats and set(cats) == {"<c:strRef>"}, (name, cats)


def test_column_chart_value_axes_start_at_zero(example_out):
    """A money or count axis starts at 0 (USD 23,360 must not look like a third of USD 24,528)."""
    with zipfile.ZipFile(example_out) as z:
        for name in (n for n in z.namelist() if n.startswith("xl/charts/chart")):
            xml = z.read(name).decode()
            if "<c:barChart>" in xml and '<c:barDir val="col"/>' in xml:
                val_ax = xml.split("<c:valAx>")[1].split("</c:valAx>")[0]
                assert '<c:min val="0"/>' in val_ax, name


def test_checks_bounds_come_from_the_schema(example_out):
    from planner.workbook.checks_sheet import checks_for

    plan = build_plan(example_path())
    formulas = {c.name: c.formula for c in checks_for(plan, _FakeLayout()).checks}
    ratios = formulas["ratios within their range"]
    for c in schema.columns("Workloads"):
        if c.kind == schema.FRACTION:
            assert f'"<{c.minimum:g}"' in ratios and f'">{c.maximum:g}"' in ratios, c.name
    # demand_growth [-1, 10]: a negative growth is not an error, 11 is
    assert '"<-1"' in ratios and '">10"' in ratios


class _FakeLayout:
    n = 1
    pos = {"Results": {"a": 0}, "Workloads": {"workload": 0}, "Models": {"model": 0}, "GPUs": {"gpu": 0}}


def test_no_n_over_blanks(example_out):
    with zipfile.ZipFile(example_out) as z:
        for name in z.namelist():
            if name.startswith("xl/worksheets/sheet"):
                text = z.read(name).decode()
                assert not re.search(r"<f>[^<]*(?<![A-Z])N\(", text), name


def _cleared_case(d: Path) -> dict:
    """Three of the example's workloads (its first two and sheet row 9), planned, and the first
    measured t_attn0_ms cleared in a copy of the output."""
    from conftest import edited_example, trim_workloads

    # hit_step 0.5: the test reads Checks, not the hit sweep (Sensitivity_Hit: 3 rows a workload, not 21)
    small, _ = edited_example(d / "small.xlsx",
                              lambda wb: (trim_workloads(wb, 2, also=(9,)), _set_setting(wb, "hit_step", 0.5)))
    small_out = d / "plan.xlsx"
    write_output(build_plan(small), small_out)
    found = {}

    def clear(wb):
        ws = wb["Workloads"]
        head = {str(c.value).split(" [")[0]: c.column for c in ws[1]}
        row = next(r for r in range(2, ws.max_row + 1) if isinstance(ws.cell(r, head["t_attn0_ms"]).value, (int, float)))
        found.update(row=row, name=ws.cell(row, head["workload"]).value)
        ws.cell(row, head["t_attn0_ms"]).value = None

    edited = edit_output(small_out, d / "cleared.xlsx", clear, "Workloads")
    return {"small_out": small_out, "edited": edited, **found}


def _mfu_case(d: Path) -> dict:
    """Three of the example's workloads (its first two and the estimated one, sheet row 15),
    planned, and Settings prefill_mfu 0.45 -> 0.30, decode_mbu 0.6 -> 0.5 in a copy of the output."""
    from conftest import edited_example, trim_workloads

    # hit_step 0.5: the test reads Resolved and Results, not the hit sweep (3 rows a workload, not 21)
    small, _ = edited_example(d / "small.xlsx",
                              lambda wb: (trim_workloads(wb, 2, also=(15,)), _set_setting(wb, "hit_step", 0.5)))
    example_out = d / "plan.xlsx"
    write_output(build_plan(small), example_out)
    edited = edit_output(example_out, d / "mfu.xlsx",
                         lambda wb: (_set_setting(wb, "prefill_mfu", 0.30), _set_setting(wb, "decode_mbu", 0.5)), "Settings")
    return {"small": small, "edited": edited}


@pytest.fixture(scope="module")
def recalculated(lo_profile, tmp_path_factory) -> dict:
    """The edited copies of :func:`_cleared_case` and :func:`_mfu_case` recalculated by ONE
    LibreOffice process (libreoffice.recalculate_many): for the two tests below."""
    from libreoffice import recalculate_many

    d = tmp_path_factory.mktemp("recalculated")
    (d / "cleared").mkdir()
    (d / "mfu").mkdir()
    cases = {"cleared": _cleared_case(d / "cleared"), "mfu": _mfu_case(d / "mfu")}
    done = recalculate_many([c["edited"] for c in cases.values()], d / "recalc", profile=lo_profile)
    for case, path in zip(cases.values(), done):
        case["done"] = path
    return cases


@pytest.mark.libreoffice
def test_cleared_measured_time_turns_the_master_check(example_out, recalculated):
    """On three of the example's workloads (its first two and sheet row 9, the one beyond h*,
    now row 4): the whole example's recalculation costs twice the CPU and proves nothing more
    for these checks; the whole example's stored warning is checked below as well."""
    case = recalculated["cleared"]
    small_out, row, name = case["small_out"], case["row"], case["name"]
    # the Checks sheet alone, read-only (a full load of the example's output parses every sheet)
    def stored(path):
        return {row[0]: row for row in _grid_rows(path, "Checks") if row and row[0]}

    checks = stored(case["done"])
    hit = checks["prefill times given"]
    assert 1 in hit and f"Workloads row {row}: {name}" in hit
    assert _grid_rows(case["done"], "Checks")[0][1] != "OK"  # B1, the master check
    # a warning that flags a row names it, stored and recalculated (the run's warning: row 9 of the
    # example beyond h*, row 4 of the small input)

    assert stored(example_out)["hit_target within break-even h*"][5] == "Workloads row 9: agent-llama8b-a100-long"
    for rows in (stored(small_out), checks):
        assert rows["hit_target within break-even h*"][5] == "Workloads row 4: agent-llama8b-a100-long"


def _set_setting(wb, key, value):
    ws = wb["Settings"]
    row = next(r for r in range(2, ws.max_row + 1) if ws.cell(r, 1).value == key)
    ws.cell(row, 2).value = value


def test_estimated_times_are_formulas_over_the_settings(example_out):
    plan = build_plan(example_path())
    est = [i for i, s in enumerate(plan.calibration.source) if s == "estimated"]
    assert est  # the example has a workload estimated from the roofline
    wb = openpyxl.load_workbook(example_out, read_only=True)  # formulas; the Resolved sheet alone is parsed
    try:
        rows = list(wb["Resolved"].iter_rows(values_only=True))
    finally:
        wb.close()
    head = {str(v).split(" [")[0]: j for j, v in enumerate(rows[0]) if v is not None}
    for i in est:
        for col in ("t_attn0_ms", "t_ffn0_ms", "t_decode_ms"):
            f = rows[i + 1][head[col]]
            assert isinstance(f, str) and f.startswith("="), (col, f)
            assert ("s_prefill_mfu" if col != "t_decode_ms" else "s_decode_mbu") in f, (col, f)
            assert "gpus_" in f, (col, f)  # the GPU's peak / bandwidth cells


@pytest.mark.libreoffice
def test_prefill_mfu_edited_in_the_output_recalculates_to_a_fresh_run(recalculated, tmp_path):
    """Settings prefill_mfu 0.45 -> 0.30 and decode_mbu 0.6 -> 0.5 in the OUTPUT, recalculated by
    LibreOffice: Resolved and Results equal a fresh run of the equally edited input.
    On three of the example's workloads, its first two and the estimated one (sheet row 15)
    (:func:`_mfu_case`)."""
    small, done = recalculated["mfu"]["small"], recalculated["mfu"]["done"]
    src = openpyxl.load_workbook(small)
    _set_setting(src, "prefill_mfu", 0.30)
    _set_setting(src, "decode_mbu", 0.5)
    src_path = tmp_path / "mfu-in.xlsx"
    src.save(src_path)
    fresh = build_plan(src_path)
    est = [i for i, s in enumerate(fresh.calibration.source) if s == "estimated"]
    live_res, live = sheet_values(done, "Resolved"), sheet_values(done, "Results")
    for i in est:
        for col in ("t_attn0_ms", "t_ffn0_ms", "t_decode_ms"):
            assert same_value(float(fresh.resolved[col].iat[i]), live_res[i][col], rel=1e-9), (i, col)
    for i in range(len(fresh.results)):
        for col in ("ttft_ms", "tpm_delivered_target", "gpus_needed"):
            assert same_value(fresh.results[col].iat[i], live[i][col], rel=1e-9), (i, col)
    old = build_plan(small)
    assert len(old.results) == 3 and est  # the estimated row is kept
    moved = sum(float(fresh.results["gpus_needed"].iat[i]) != float(old.results["gpus_needed"].iat[i]) for i in est)
    assert moved  # the edit moves the fleet, as a fresh run does
