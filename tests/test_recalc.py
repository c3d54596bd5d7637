"""The Excel formulas compute what Python computes: LibreOffice headless recalculates the
output workbooks (profile with OOXMLRecalcMode = 0) and every derived cell is compared."""

from __future__ import annotations

import re
import shutil
import zipfile
from pathlib import Path

import numpy as np
import openpyxl
import pytest

from conftest import EXAMPLE, header_index, same_value, sheet_values, value_book
from planner.plan.build import build_plan
from planner.workbook.writer import write_output

pytestmark = pytest.mark.libreoffice


def compare_sheet(path: Path, sheet: str, frame, label: str = "") -> int:
    """Every column of ``frame`` against the sheet's cached values; returns cells compared."""
    rows = sheet_values(path, sheet)
    assert len(rows) == len(frame), f"{sheet}: {len(rows)} rows, Python has {len(frame)}"
    bad, n = [], 0
    for i, rec in enumerate(frame.to_dict("records")):
        for name, expected in rec.items():
            if name in ("model_row", "gpu_row"):
                continue
            assert name in rows[i], f"{sheet} has no column {name}"
            n += 1
            if not same_value(expected, rows[i][name]):
                bad.append(f"{sheet} row {i + 2} {name}: python {expected!r} sheet {rows[i][name]!r}")
    assert not bad, f"{label}{len(bad)} cells differ:\n" + "\n".join(bad[:30])
    return n


def compare_all(path: Path, plan) -> int:
    """Results, Resolved, every sensitivity table and the Tornado against Python."""
    n = compare_sheet(path, "Results", plan.results)
    n += compare_sheet(path, "Resolved", plan.resolved.drop(columns=["model_row", "gpu_row"]))
    for sheet, frame in plan.sens.frames.items():
        n += compare_sheet(path, sheet, frame)
    n += compare_sheet(path, "Tornado", plan.sens.tornado)
    return n


def checks_counts(path: Path) -> dict[str, tuple]:
    ws = value_book(path, "Checks")["Checks"]
    out = {"master": (ws["B1"].value,)}
    for r in range(6, ws.max_row + 1):
        name, kind, count = ws.cell(r, 1).value, ws.cell(r, 2).value, ws.cell(r, 3).value
        if kind in ("error", "warning"):
            out[name] = (kind, count)
    return out


def rewrite_cell_xml(path: Path, sheet_xml: str, pattern: str, repl: str) -> None:
    """Rewrite one cell inside the xlsx zip (a regex over the sheet XML that must match once),
    leaving every other cached value as XlsxWriter stored it (openpyxl would drop them all)."""
    tmp = path.with_suffix(".tmp")
    with zipfile.ZipFile(path) as zin, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zout:
        for item in zin.infolist():
            data = zin.read(item.filename)
            if item.filename == sheet_xml:
                text, k = re.subn(pattern, repl, data.decode("utf-8"))
                assert k == 1, f"{pattern} matched {k} times in {sheet_xml}"
                data = text.encode("utf-8")
            zout.writestr(item, data)
    shutil.move(tmp, path)


def corrupt_cached_value(path: Path, sheet_xml: str, cell: str, value: str) -> None:
    """Replace the cached <v> of a formula cell inside the xlsx zip."""
    rewrite_cell_xml(path, sheet_xml, rf'(<c r="{cell}"[^>]*>\s*<f>[^<]*</f>\s*<v>)([^<]*)(</v>)',
                     rf"\g<1>{value}\g<3>")


def sheet_xml(path: Path, sheet: str) -> str:
    """The zip member of a sheet, from workbook.xml and its relationships."""
    with zipfile.ZipFile(path) as z:
        wbxml = z.read("xl/workbook.xml").decode()
        rels = z.read("xl/_rels/workbook.xml.rels").decode()
    rid = re.search(rf'<sheet [^>]*name="{sheet}"[^>]*r:id="(rId\d+)"', wbxml).group(1)
    target = re.search(rf'<Relationship [^>]*Id="{rid}"[^>]*Target="([^"]+)"', rels) or \
        re.search(rf'<Relationship [^>]*Target="([^"]+)"[^>]*Id="{rid}"', rels)
    return "xl/" + target.group(1).lstrip("/").removeprefix("xl/")


# ----------------------------------------------------------------------------- the example
EXPLORER_PICK = 6  # the workload chosen in the Explorer before recalculation


@pytest.fixture(scope="module")
def recalculated(tmp_path_factory, lo_profile, example_output) -> dict:
    """Every workbook of this file recalculated by ONE LibreOffice process (recalculate_many:
    its start is paid once, 0.2-1.5 s CPU a workbook): the edited example (:func:`example_recalc`),
    the feature workbook and the live-edited output (their tests below)."""
    from libreoffice import recalculate_many

    d = tmp_path_factory.mktemp("recalc-batch")
    cases = {"example": _example_case(d / "example", example_output), "features": _feature_case(d / "features"),
             "live": _live_edit_case(d / "live")}
    # the feature workbook keeps its charts and comments (LibreOffice opens and saves them: checked below);
    # the others go without (libreoffice.without_charts: nothing a formula reads is in them; the example's
    # 66 charts cost LibreOffice about 2.5 s more to load and store). The feature workbook is stored AND
    # read as values (values_too), so that the values-only copies every other recalculation of the suite
    # reads are held to what openpyxl reads from LibreOffice's store (test_values_copy_...).
    again = (recalculate_many([cases["example"]["edited"]], d / "recalc", profile=lo_profile)
             + recalculate_many([cases["features"]["out"]], d / "recalc", profile=lo_profile, charts=True,
                                values_too=True)
             + recalculate_many([cases["live"]["edited_out"]], d / "recalc", profile=lo_profile))
    for case, done in zip(cases.values(), again):
        case["again"] = done
    return cases


@pytest.fixture(scope="module")
def example_recalc(recalculated) -> dict:
    """The example's output recalculated ONCE for every test of it: a wrong cached value planted
    in Results (the canary) and the Explorer switched to workload EXPLORER_PICK, both by editing
    the sheet XML so that every other cached value stays as written."""
    return recalculated["example"]


def _example_case(d: Path, example_output: Path) -> dict:
    """The edited copy of the example's output for :func:`example_recalc` (not yet recalculated)."""
    from planner.workbook.explorer import EXPLORER_SELECT

    plan = build_plan(EXAMPLE)
    d.mkdir(parents=True)
    out = example_output  # write_output(plan, ...) once for the session (conftest; read-only)
    edited = d / "example-edited.xlsx"
    shutil.copyfile(out, edited)
    col = header_index(value_book(out, "Results")["Results"])["ttft_ms"]  # one sheet read, not 14 MB
    canary = openpyxl.utils.get_column_letter(col) + "3"
    corrupt_cached_value(edited, sheet_xml(edited, "Results"), canary, "987654321")
    pick = openpyxl.utils.get_column_letter(EXPLORER_SELECT[1] + 1) + str(EXPLORER_SELECT[0] + 1)
    rewrite_cell_xml(edited, sheet_xml(edited, "Explorer"), rf'(<c r="{pick}"[^>]*><is><t>)[^<]*(</t>)',
                     rf"\g<1>{plan.results['workload'].iat[EXPLORER_PICK]}\g<2>")
    return {"plan": plan, "out": out, "edited": edited, "canary": canary}


def _rows(ws) -> list[tuple]:
    """A sheet's cells as rows of (value, data_type) of equal length, without trailing blank rows
    and columns."""
    rows = [[(c.value, c.data_type) for c in r] for r in ws.iter_rows()]
    width = max((max((j + 1 for j, v in enumerate(r) if v[0] is not None), default=0) for r in rows), default=0)
    rows = [tuple(r[:width]) + ((None, "n"),) * (width - len(r[:width])) for r in rows]
    while rows and all(v[0] is None for v in rows[-1]):
        rows.pop()
    return rows


def assert_same_cells(stored: Path, values: Path) -> int:
    """Every cell of the values-only copy ``values`` (tests/libreoffice.py ``recalculated_book``) is
    what openpyxl reads from LibreOffice's .xlsx store ``stored`` of the same recalculation: the same
    sheets in the same order, the same type (bool, int, float, str, datetime, None), the same cell
    data type (a text "#N/A" is a text, an error is an error) and the same value, exactly (each
    number as the store's 15-digit text reads back). Returns the cells compared."""
    import libreoffice

    real = openpyxl.load_workbook(stored, data_only=True, read_only=True)
    mine = libreoffice.recalculated_book(values)
    assert mine.sheetnames == real.sheetnames
    bad, n = [], 0
    for name in real.sheetnames:
        a, b = _rows(real[name]), _rows(mine[name])
        assert len(a) == len(b), f"{name}: {len(b)} rows in the values copy, {len(a)} in the store"
        for r, (ra, rb) in enumerate(zip(a, b), start=1):
            assert len(ra) == len(rb), f"{name} row {r}: {len(rb)} columns in the values copy, {len(ra)} in the store"
            for c, ((x, tx), (y, ty)) in enumerate(zip(ra, rb), start=1):
                n += 1
                if type(x) is not type(y) or x != y or (x is not None and tx != ty):
                    bad.append(f"{name}!{openpyxl.utils.get_column_letter(c)}{r}: store {x!r} ({tx}), "
                               f"values copy {y!r} ({ty})")
    real.close()
    assert not bad, f"{len(bad)} of {n} cells differ:\n" + "\n".join(bad[:30])
    return n


def test_values_copy_is_what_openpyxl_reads_from_the_store(recalculated):
    """The suite's recalculations read LibreOffice's values in bulk instead of storing an .xlsx and
    reading it back (about half of each recalculation). That shortcut must give, cell for cell, what
    the store gives: checked here on the feature workbook (every optional sheet, its charts and
    comments: numbers in every format the planner writes, texts, blanks), and on every kind of
    cell the planner does not write by the next test. (Checked once on the whole example too,
    when the shortcut was built: its 63,675 cells the same.)"""
    import libreoffice

    stored = recalculated["features"]["again"]
    assert assert_same_cells(stored, libreoffice.values_twin(stored)) > 20_000


def test_values_copy_errors_booleans_and_dates(tmp_path, lo_profile):
    """What the whole example does not hold: an error of every kind LibreOffice's export names
    (#DIV/0!, #N/A, #VALUE! from Err:502 and Err:519, #NUM!, #NAME?, #REF!, and Err:523, which
    it writes as #N/A), a circular reference, a boolean formula and cell, a date, a date-time and a time, an empty text
    result, a text that looks like a number, an error code or a formula, a text with a comma, a
    quote and a line break, numbers at the edges of the store's 15 digits, a percentage and a
    thousands format: the values-only copy reads each as the store does."""
    import datetime

    import xlsxwriter

    from libreoffice import recalculate_many, values_twin

    src = tmp_path / "kinds.xlsx"
    wb = xlsxwriter.Workbook(src)
    ws = wb.add_worksheet("T")
    formulas = ["=1/0", "=NA()", "=SQRT(-1)", "=10^400", '=VALUE("x")', "=FOOBAR(1)", "=INDEX(B1:B2,5)",
                '="a"+1', "=MATCH(9,B1:B2,0)", "=IRR(B1:B2)", "=1>0", '=IF(1,"")', '="1"', "=ISERROR(1/0)", "=B1/3",
                "=2^60", "=B1*1E20", "=A18", '="a,b"&CHAR(10)&"c""d"', "=B8*1E-7", "=1E15", "=1E14+0.5",
                "=-0.000123456789012345678", "=B1/7", "=12345678901234567", "=1E17"]
    for r, f in enumerate(formulas):
        ws.write_formula(r, 0, f)
    ws.write_number(0, 1, 1)
    ws.write_number(1, 1, 2)
    ws.write_boolean(2, 1, False)
    ws.write_datetime(3, 1, datetime.datetime(2026, 12, 2, 13, 30), wb.add_format({"num_format": "yyyy-mm-dd hh:mm"}))
    ws.write_datetime(4, 1, datetime.datetime(2026, 12, 2), wb.add_format({"num_format": "yyyy-mm-dd"}))
    ws.write_formula(5, 1, "=B4+1", wb.add_format({"num_format": "yyyy-mm-dd"}))
    ws.write_string(6, 1, "0.5")
    ws.write_number(7, 1, 0.1 + 0.2)
    ws.write_string(8, 1, "#N/A")
    ws.write_string(9, 1, "=not a formula")
    ws.write_number(10, 1, 164360.3005535795)  # the store rounds its shortest text half up: ...35795 -> ...3558
    ws.write_formula(11, 1, "=B1/7", wb.add_format({"num_format": "0.00%"}))  # a percentage: the CSV's text is not enough
    ws.write_number(12, 1, 1234567.891, wb.add_format({"num_format": "#,##0"}))
    wb.add_worksheet("Empty")
    wb.close()
    stored = recalculate_many([src], tmp_path / "recalc", profile=lo_profile, store=True, values_too=True)[0]
    assert_same_cells(stored, values_twin(stored))
    got = value_book(values_twin(stored), "T")["T"]
    assert [got.cell(r, 1).value for r in range(1, 11)] == [
        "#DIV/0!", "#N/A", "#VALUE!", "#NUM!", "#VALUE!", "#NAME?", "#VALUE!", "#VALUE!", "#N/A", "#N/A"]
    assert got["A11"].value is True and got["A12"].value is None and got["A13"].value == "1"
    assert got["B4"].value == datetime.datetime(2026, 12, 2, 13, 30)


def test_example_values_before_and_after_recalculation(example_recalc):
    plan, out, again, cell = (example_recalc[k] for k in ("plan", "out", "again", "canary"))
    # before: the cached values a non-calculating viewer shows
    n_before = compare_all(out, plan)
    # canary: a deliberately wrong cached value must come back right after recalculation
    assert value_book(example_recalc["edited"], "Results")["Results"][cell].value == 987654321
    assert value_book(again, "Results")["Results"][cell].value == pytest.approx(
        plan.results["ttft_ms"].iat[1], rel=1e-12)
    n_after = compare_all(again, plan)
    assert n_before == n_after > 10_000
    counts = checks_counts(again)
    assert counts == checks_counts(out)
    assert counts["master"] == ("OK",)
    assert counts["hit_target within break-even h*"] == ("warning", 1)
    # no row was added after the run: the "first row in question" cells of those checks are blank
    for path in (out, again):
        checks = value_book(path, "Checks")["Checks"]
        named = [checks.cell(r, 6).value for r in range(6, checks.max_row + 1)
                 if str(checks.cell(r, 1).value).startswith("every ")]
        assert len(named) == 3 and all(v in (None, "") for v in named)


def test_explorer_follows_the_chosen_workload(example_recalc):
    from planner.workbook.explorer import EXPLORER_INPUTS_TOP, applies_when

    plan, again, pick = example_recalc["plan"], example_recalc["again"], EXPLORER_PICK
    name = plan.results["workload"].iat[pick]
    ws = value_book(again, "Explorer")["Explorer"]
    # the name/value block is that workload's Results and Resolved row
    got = {}
    r = EXPLORER_INPUTS_TOP + 1
    while ws.cell(r, 1).value:
        got[ws.cell(r, 1).value] = ws.cell(r, 2).value
        r += 1
    want = {**plan.resolved.iloc[pick].to_dict(), **plan.results.iloc[pick].to_dict()}
    assert len(got) > 50, [[ws.cell(rr, c).value for c in range(1, 4)] for rr in range(1, 10)]
    for k, v in got.items():
        kind = applies_when("Resolved" if k in plan.resolved else "Results", k)
        if kind is not None and want["attention"] != kind:  # does not apply: blank, not 0
            assert v in (None, ""), (k, v)
            continue
        assert same_value(want[k], v), (k, want[k], v)
    # the hit sweep block: header row at sheet row 3 from column D
    hit_block = plan.sensitivity_hit[plan.sensitivity_hit["workload"] == name].reset_index(drop=True)
    heads = {ws.cell(3, j).value.split(" [")[0]: j for j in range(4, 4 + 12) if ws.cell(3, j).value}
    for i in range(len(hit_block)):
        for col in ("hit", "ttft_alpha0_ms", "ttft_alpha1_ms", "tpm_delivered", "tpm_physical"):
            assert same_value(hit_block[col].iat[i], ws.cell(4 + i, heads[col]).value), (i, col)


# ----------------------------------------------------------------------------- every feature
def write_feature_input(path: Path) -> None:
    """An input workbook written by openpyxl (not by the planner) using every feature:
    MLA, tp > kv_heads, FP8 and 4-bit KV, percent text and percent cells, every
    other_scaling, blanks taking defaults, units in headers, extra columns, a blank row,
    pcie_gen without bandwidth, references differing in case and spaces."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Models"
    ws.append(["Model", "layers", "KV_HEADS", "head_dim (count)", "kv_bytes [B]", "attention", "mla_kv_dim",
               "params_b", "weight_bytes", "source"])
    ws.append(["Qwen2.5-72B", 80, 8, 128, 2, "gqa", None, 72.7, 2, "config.json"])
    ws.append(["DeepSeek-V3", 61, None, None, 2, "MLA", 576, 671, 1, "config.json"])
    ws.append(["Llama-8B-4bit", 32, 8, 128, 0.5, None, None, None, None, "no params: weights 0"])
    ws.append(["Odd-MHA-FP8", 24, 6, 64, 1, "gqa", None, 3, 2, "6 heads, tp 4: uneven"])
    ws = wb.create_sheet("GPUs")
    ws.append(["gpu", "hbm_gib (GiB)", "pcie_gbps", "pcie_gen", "hourly_cost"])
    ws.append(["H100", 80, None, 5, 2.5])
    ws.append(["A100", 80, None, 4, None])
    ws.append(["C2C", 96, 200, None, 4.0])
    ws = wb.create_sheet("Workloads")
    ws.append(["workload", "model", "gpu", "tp", "isl (tokens)", "osl", "batch", "max_seq_len", "hit_measured",
               "hit_target", "t_attn0_ms", "t_ffn0_ms", "t_other0_ms", "other_scaling", "t_fixed_ms",
               "t_decode_ms", "alpha", "tpm_measured", "demand_tpm", "owner"])
    rows = [
        ["w-const-16tp", "qwen2.5-72b", "H100", 16, 8192, 512, 8, None, 0.2, "85%", 120, 300, 20, "const",
         10, 900, 0.5, 900000, 5e6, "team a"],
        ["w-mla", " DeepSeek-V3 ", "h100 ", 8, 32768, 1000, None, 40000, None, 0.6, 800, 900, 50, "linear",
         None, 2000, None, None, 1e7, "team b"],
        [None] * 20,  # blank row: skipped
        # t_decode_ms typed 0: a blank beside a typed breakdown is estimated, and an error here, where
        # the GPU has no hbm_tbps and the model no params_b (issue 20)
        ["w-4bit", "Llama-8B-4bit", "A100", 1, 4000, 300, 64, None, 0.1, 0.95, 10, 40, 5, "quadratic", 3,
         0, 1, 200000, None, None],
        ["w-blank-scaling", "Odd-MHA-FP8", "C2C", 4, 1501, 0, None, None, None, 0, 2, 3, None, None, None,
         50, 0.25, None, 123456, "team c"],
        ["w-hit-one", "Qwen2.5-72B", "C2C", 2, 2048, 256, 4, 4096, 0.5, 1, 20, 80, 0, "linear", 5, 400, 1,
         750000, 3e6, None],
    ]
    for r in rows:
        ws.append(r)
    ws["I2"].number_format = "0%"  # a percent cell holds the fraction already
    ws = wb.create_sheet("Settings")
    ws.append(["key", "value"])
    ws.append(["quarter", "2026-Q4"])
    ws.append(["hit_step", "10%"])
    ws.append(["owner", "capacity team"])  # unknown key: passed through
    wb.save(path)


def _feature_case(d: Path) -> dict:
    """The feature workbook planned and written (recalculated by :func:`recalculated`)."""
    d.mkdir(parents=True)
    src = d / "features.xlsx"
    write_feature_input(src)
    plan = build_plan(src)
    out = d / "features-plan.xlsx"
    write_output(plan, out)
    return {"plan": plan, "out": out}


def test_every_feature_workbook_recalculates_to_python(recalculated):
    plan, out, again = (recalculated["features"][k] for k in ("plan", "out", "again"))
    # LibreOffice opened and saved its charts (the Explorer's and the Charts sheet's) and comments
    with zipfile.ZipFile(out) as z0, zipfile.ZipFile(again) as z:
        assert any(n.startswith("xl/charts/") for n in z0.namelist())
        assert any(n.startswith("xl/charts/") for n in z.namelist())
        assert any(n.startswith("xl/comments") for n in z.namelist())
    assert list(plan.results["workload"]) == ["w-const-16tp", "w-mla", "w-4bit", "w-blank-scaling", "w-hit-one"]
    r = plan.results.set_index("workload")
    res = plan.resolved.set_index("workload")
    # independent spot values
    assert r.at["w-const-16tp", "kv_bytes_per_token_gpu"] == 2 * 80 * 1 * 128 * 2   # replicated: 1 head/GPU
    assert r.at["w-mla", "kv_bytes_per_token_gpu"] == 61 * 576 * 2                  # MLA, any tp
    assert r.at["w-4bit", "kv_bytes_per_token_gpu"] == 2 * 32 * 8 * 128 * 0.5       # 4-bit
    assert r.at["w-blank-scaling", "kv_bytes_per_token_gpu"] == 2 * 24 * 2 * 64 * 1  # ceil(6/4)=2, FP8
    assert res.at["w-const-16tp", "hit_target"] == 0.85                              # "85%" text
    assert res.at["w-const-16tp", "hit_measured"] == 0.2                             # percent cell
    assert res.at["w-mla", "pcie_gbps"] == 50 and res.at["w-4bit", "pcie_gbps"] == 25  # from pcie_gen
    assert res.at["w-mla", "max_seq_len"] == 40000 and res.at["w-4bit", "max_seq_len"] == 4300
    assert res.at["w-mla", "batch"] == 1 and res.at["w-mla", "alpha"] == 0 and res.at["w-mla", "t_fixed_ms"] == 0
    assert res.at["w-blank-scaling", "other_scaling"] == "const"
    assert res.at["w-4bit", "weight_bytes"] == 2 and res.at["w-4bit", "params_b"] == 0
    assert np.isnan(r.at["w-4bit", "gpus_needed"]) and np.isnan(r.at["w-4bit", "cost_per_mtok_delivered"])
    assert np.isnan(res.at["w-mla", "tpm_measured"])  # blank stays blank (NaN), not 0
    assert r.at["w-mla", "tpm_delivered_target"] == r.at["w-mla", "tpm_delivered_model"]
    assert len(plan.hit_grid) == 11  # hit_step "10%"
    assert plan.input.notes and "case or surrounding spaces" in plan.input.notes[0]

    n_before = compare_all(out, plan)
    assert compare_all(again, plan) == n_before
    counts = checks_counts(again)
    assert counts == checks_counts(out)
    assert counts["master"] == ("OK",)
    assert counts["params_b given"] == ("warning", 1)
    assert counts["kv_heads and tp divide"] == ("warning", 1)
    # the extra column and the unknown setting are passed through
    wl = sheet_values(again, "Workloads")
    assert [w["owner"] for w in wl] == ["team a", "team b", None, "team c", None]


# ----------------------------------------------------------------------------- live edit
def _set_by_header(ws, row: int, name: str, value) -> None:
    ws.cell(row, header_index(ws)[name]).value = value


def _live_edit_case(d: Path) -> dict:
    """The example's first five workloads planned, written and edited in the output and in the
    input alike (the output recalculated by :func:`recalculated`)."""
    from conftest import edited_example, trim_workloads

    src, _ = edited_example(d / "in.xlsx", lambda wb: trim_workloads(wb, 5))
    plan = build_plan(src)
    out = d / "plan.xlsx"
    write_output(plan, out)
    edits = [("Workloads", 4, "hit_target", 0.33), ("Workloads", 4, "tp", 8), ("Workloads", 6, "hit_target", 0.99),
             ("GPUs", 3, "pcie_gbps", 12.5), ("Models", 2, "layers", 40), ("Workloads", 5, "isl", 20000)]
    wb_out, wb_in = openpyxl.load_workbook(out), openpyxl.load_workbook(src)
    for sheet, row, name, value in edits:
        for wb in (wb_out, wb_in):
            _set_by_header(wb[sheet], row, name, value)
    edited_out, edited_in = d / "plan-edited.xlsx", d / "input-edited.xlsx"
    wb_out.save(edited_out)
    wb_in.save(edited_in)
    return {"plan": plan, "edited_out": edited_out, "edited_in": edited_in}


def test_live_edit_of_output_matches_fresh_run(recalculated):
    """Edit inputs inside the output (workload hit_target and tp, a GPU's bandwidth, a model's
    layers, a workload's isl); after ONE recalculation Results, Resolved, every sensitivity
    table and the tornado equal a fresh run of the same edit made in the input.
    On the example's first five workloads (a smaller workbook for LibreOffice; the whole example
    is recalculated by the tests above): every edit below still reaches a planned row (GPUs row 3
    is H200-SXM of the second workload, Models row 2 Qwen2.5-72B of the first two)."""
    case = recalculated["live"]
    plan, edited_in, again = case["plan"], case["edited_in"], case["again"]
    assert len(plan.results) == 5
    assert plan.resolved["gpu"].iat[1] == "H200-SXM" and plan.resolved["model"].iat[0] == "Qwen2.5-72B"
    fresh = build_plan(edited_in)
    # the fresh run really carries the edit (sheet rows 4 and 6: the third and fifth workloads)
    assert list(fresh.resolved["workload"]) == list(plan.resolved["workload"])
    assert (fresh.resolved["tp"].iat[2], fresh.resolved["hit_target"].iat[2]) == (8, 0.33)
    assert fresh.resolved["hit_target"].iat[4] == 0.99
    assert (plan.resolved["tp"].iat[2], plan.resolved["hit_target"].iat[2]) != (8, 0.33)
    assert not np.allclose(fresh.results["ttft_ms"], plan.results["ttft_ms"])  # the edit matters
    pcie = "Sensitivity_PCIe"
    assert not np.allclose(fresh.sens.frames[pcie]["h_star"], plan.sens.frames[pcie]["h_star"])
    compare_all(again, fresh)
