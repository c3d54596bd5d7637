"""Issue 20, items 1-3: every case of the issue's "Silent defaults and silent misreads" list typed
into a workbook, and its message read. Expected numbers are hand calculations written beside each
assertion (docs/model.md for the model, planner/equations/roofline.py's docstring for the roofline)."""

from __future__ import annotations


import openpyxl
import pytest

from conftest import edit_output, run_cli, value_book
from planner.equations.ttft_fit import ttft_law
from planner.core.errors import InputError
from planner.workbook.input_sheets import write_input_workbook
from planner.plan.build import build_plan
from planner.workbook.writer import write_output

GIB = 2**30
S_8B = 131_072  # Llama-3.1-8B KV bytes per token at tp 1: 2*32*8*128*2 (docs/model.md §2)
MODELS = [{"model": "Llama-3.1-8B", "kv_bytes": 2}, {"model": "Llama-3.1-70B", "kv_bytes": 2}]
GPUS = [{"gpu": "H100 SXM", "hourly_cost": 2.5}]  # catalog: 79.65 GiB, 50 GB/s, 3.35 TB/s, 989.4 TFLOPS
ROW = {"workload": "chat", "model": "Llama-3.1-8B", "gpu": "H100 SXM", "tp": 1, "isl": 1000, "osl": 200,
       "hit_target": 0.5, "t_attn0_ms": 10, "t_ffn0_ms": 90, "t_decode_ms": 1000, "demand_tpm": 1_000_000}


def _book(tmp_path, workloads=None, models=None, gpus=None, optional=None, name="in.xlsx", edit=None,
          settings=None):
    path = tmp_path / name
    write_input_workbook(path, models or MODELS, gpus or GPUS, workloads or [dict(ROW)], settings or {},
                         optional=optional)
    if edit is not None:
        wb = openpyxl.load_workbook(path)
        edit(wb)
        wb.save(path)
    return path


def _header(wb, sheet: str, name: str, new: str) -> str:
    ws = wb[sheet]
    for c in ws[1]:
        if str(c.value).split(" [")[0] == name:
            c.value = new
            return c.coordinate
    raise KeyError(name)


def _set(wb, sheet: str, name: str, row: int, value, fmt: str | None = None) -> str:
    ws = wb[sheet]
    col = next(c.column_letter for c in ws[1] if str(c.value).split(" [")[0].split(" (")[0] == name)
    ws[f"{col}{row}"] = value
    if fmt is not None:
        ws[f"{col}{row}"].number_format = fmt
    return f"{col}{row}"


def _problems(path) -> list[str]:
    with pytest.raises(InputError) as e:
        build_plan(path)
    return [str(p) for p in e.value.problems]


def _text(plan) -> str:
    return "\n".join(map(str, plan.warnings))


# --------------------------------------------------------------------------- item 2: header units
def test_demand_per_day_header_is_converted_with_a_note(tmp_path):
    # the issue: 'demand_tpm (tokens/day)' read as per minute gave 24,166 GPUs; now converted
    path = _book(tmp_path, [dict(ROW, demand_tpm=14_400_000)],
                 edit=lambda wb: _header(wb, "Workloads", "demand_tpm", "demand_tpm (tokens/day)"))
    plan = build_plan(path)
    # hand calc: 14,400,000 tokens/day / 1,440 min/day = 10,000 tokens/min
    assert plan.resolved["demand_tpm"].iat[0] == pytest.approx(10_000.0, rel=1e-12)
    assert any("header 'demand_tpm (tokens/day)' is read in tokens/day: its values are converted to tokens/min "
               "(1 tokens/day = 1/1,440 tokens/min)" in n for n in plan.input.notes)


@pytest.mark.parametrize("column, unit, typed, expected", [
    ("t_fixed_ms", "s", 0.02, 20.0),                      # 0.02 s = 20 ms
    ("demand_tpm", "tokens/hour", 600_000, 10_000.0),     # 600,000 / 60 = 10,000 tokens/min
    ("demand_tpm", "tokens/s", 50, 3_000.0),              # 50 x 60 = 3,000 tokens/min
    ("kv_gbps", "TB/s", 0.05, 50.0),                      # 0.05 TB/s = 50 GB/s
])
def test_convertible_header_units(tmp_path, column, unit, typed, expected):
    path = _book(tmp_path, [dict(ROW, **{column: typed})],
                 edit=lambda wb: _header(wb, "Workloads", column, f"{column} ({unit})"))
    plan = build_plan(path)
    assert plan.resolved[column].iat[0] == pytest.approx(expected, rel=1e-12)
    assert any(f"'{column} ({unit})' is read in {unit}" in n for n in plan.input.notes)


def test_gb_header_on_hbm_is_converted(tmp_path):
    path = _book(tmp_path, gpus=[dict(GPUS[0], hbm_gib=80)],
                 edit=lambda wb: _header(wb, "GPUs", "hbm_gib", "hbm_gib (GB)"))
    plan = build_plan(path)
    # hand calc: 80e9 B / 2^30 = 74.50580597 GiB
    assert plan.input.gpus.records[0]["hbm_gib"] == pytest.approx(80e9 / GIB, rel=1e-12)
    assert plan.input.gpus.records[0]["hbm_gib"] == pytest.approx(74.50580597, rel=1e-9)


@pytest.mark.parametrize("sheet, column, header, said", [
    ("Workloads", "t_fixed_ms", "t_fixed_ms (tokens)", "says tokens, which is not a unit of t_fixed_ms (in ms)"),
    ("Workloads", "demand_tpm", "demand_tpm (GB)", "says GB, which is not a unit of demand_tpm (in tokens/min)"),
    ("Workloads", "isl", "isl (tokens/day)", "says tokens/day, which is not a unit of isl (in tokens)"),
])
def test_contradicting_header_unit_is_refused(tmp_path, sheet, column, header, said):
    cell = {}
    path = _book(tmp_path, edit=lambda wb: cell.setdefault("c", _header(wb, sheet, column, header)))
    probs = _problems(path)
    assert any(p.startswith(f"{sheet}!{cell['c']}: header {header!r} {said}") for p in probs), probs


def test_header_in_the_columns_own_quantity_is_accepted(tmp_path):
    # 'GPUs' is a count, as tp is: factor 1, nothing to convert or refuse
    path = _book(tmp_path, edit=lambda wb: _header(wb, "Workloads", "tp", "tp (GPUs)"))
    plan = build_plan(path)  # the column's own quantity, factor 1: accepted
    assert plan.resolved["tp"].iat[0] == 1


def test_near_miss_header_is_refused_with_the_column_meant(tmp_path):
    # the issue: 'demand (tokens/min)' kept as an extra column gave 0 GPUs, USD 0, master check OK
    cell = {}
    path = _book(tmp_path, edit=lambda wb: cell.setdefault("c", _header(wb, "Workloads", "demand_tpm",
                                                                        "demand (tokens/min)")))
    r = run_cli("run", path, "-o", tmp_path / "out.xlsx", "--no-memo", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert (f"Workloads!{cell['c']}: header 'demand (tokens/min)' names no column of Workloads; it looks like "
            f"demand_tpm") in r.stderr
    assert "rename it 'demand_tpm [tokens/min]'" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "out.xlsx").exists()


def test_note_columns_are_not_near_misses(tmp_path):
    def edit(wb):
        ws = wb["Workloads"]
        ws.cell(1, ws.max_column + 1).value = "note"
        ws.cell(1, ws.max_column + 1).value = "source"
    plan = build_plan(_book(tmp_path, edit=edit))
    assert plan.input.workloads.extras == ["note", "source"]


def test_absent_demand_is_a_warning_on_checks_and_summary(tmp_path):
    path = _book(tmp_path, [dict(ROW, demand_tpm=None)])
    plan = build_plan(path)
    assert "Workloads: no workload has a demand_tpm: the fleet is sized for nothing (0 GPUs, no cost)" in _text(plan)
    out = tmp_path / "out.xlsx"
    write_output(plan, out)
    wb = openpyxl.load_workbook(out)
    assert wb["Summary"]["D4"].value.startswith('=IF(COUNT(results_instances_needed)=0,')
    values = value_book(out, "Checks", "Summary")
    checks = {r[0]: r for r in values["Checks"].iter_rows(values_only=True) if r and r[0]}
    assert checks["workloads have a demand_tpm"][1:4] == ("warning", 1, "WARN")
    assert values["Summary"]["D4"].value == "WARNING: no workload has a demand_tpm: the fleet is sized for nothing"


def test_some_workloads_without_demand_are_named(tmp_path):
    plan = build_plan(_book(tmp_path, [dict(ROW), dict(ROW, workload="batch", demand_tpm=None)]))
    assert "Workloads: 1 of 2 workloads have no demand_tpm and are left out of the fleet (0 GPUs for them): batch" \
        in _text(plan)


# --------------------------------------------------------------------------- item 1: filled blanks
def test_typed_breakdown_without_decode_gets_the_estimated_decode(tmp_path):
    # the issue: a typed breakdown silently set t_decode_ms to 0 (TPM doubled)
    plan = build_plan(_book(tmp_path, [dict(ROW, t_decode_ms=None, batch=1)]))   # batch 1 typed (blank: the HBM fit)
    # hand calc (memory roofline, estimate.decode_ms): Llama-3.1-8B 8.03e9 x 2 B = 16.06e9 B of weights,
    # KV 1 x (1000 + 100) x 131,072 = 144,179,200 B per step; 16.204179e9 B / (3.35e12 x 0.6) = 8.061781 ms
    # per step; x 200 steps / batch 1 = 1,612.356 ms
    assert plan.resolved["t_decode_ms"].iat[0] == pytest.approx(1612.356, abs=1e-2)
    assert plan.results["breakdown_source"].iat[0] == "input"
    assert "t_decode_ms is estimated by the roofline at batch 1 (typed): 1,612.4 ms per request" in _text(plan)


def test_typed_breakdown_without_decode_and_no_bandwidth_is_an_error(tmp_path):
    gpus = [{"gpu": "lab-gpu", "hbm_gib": 80, "pcie_gen": 5, "bf16_tflops": 500}]  # not in the catalog: no hbm_tbps
    path = _book(tmp_path, [dict(ROW, gpu="lab-gpu", t_decode_ms=None)], gpus=gpus)
    probs = _problems(path)
    assert ("Workloads!P2: workload 'chat': t_decode_ms is blank, the breakdown is typed, and its roofline estimate "
            "lacks GPUs.hbm_tbps: type t_decode_ms (0 leaves decode out of chip time and TPM), or fill GPUs.hbm_tbps"
            ) in probs


def test_batch_effect_on_the_estimated_decode_is_said(tmp_path):
    # the issue: batch quietly drove the estimated decode (147k / 559k / 801k TPM at batch 1 / 8 / 32)
    plan = build_plan(_book(tmp_path, [dict(ROW, t_decode_ms=None, batch=8)]))
    # hand calc: min(8.03, 8 x 8.03) e9 x 2 B = 16.06e9 B + 8 x 1100 x 131,072 = 1,153,433,600 B per step:
    # 17.2134336e9 / 2.01e12 = 8.563897 ms; x 200 / 8 = 214.097 ms per request; at batch 1: 1,612.356 ms
    step = (8.03e9 * 2 + 8 * 1100 * S_8B) / (3.35e12 * 0.6) * 1e3
    assert plan.resolved["t_decode_ms"].iat[0] == pytest.approx(200 * step / 8, rel=1e-9)
    assert plan.resolved["t_decode_ms"].iat[0] == pytest.approx(214.097, abs=1e-3)
    assert ("t_decode_ms is estimated by the roofline at batch 8 (typed): 214.1 ms per request (1,612.4 ms at "
            "batch 1); batch is the decode concurrency of this estimate as well as the peak-KV batch") in _text(plan)


def test_planner_filled_cells_are_styled_commented_counted_and_listed(tmp_path):
    path = _book(tmp_path, [dict(ROW, t_decode_ms=None)])
    plan = build_plan(path)
    note = plan.filled_note
    # blank in ROW: batch (G2), max_seq_len (H2), t_decode_ms (P2), alpha (Q2), kv_gbps (T2)
    for part in ("batch 1 (Workloads!G2)", "alpha 1 (Workloads!Q2)", "kv_gbps 1 (Workloads!T2)",
                 "t_decode_ms 1 (Workloads!P2)", "max_seq_len 1 (Workloads!H2)"):
        assert part in note
    out = tmp_path / "out.xlsx"
    write_output(plan, out)
    wb = openpyxl.load_workbook(out)
    ws = wb["Workloads"]
    # hand calc (slofix item 3): blank batch = the full-length requests whose KV fits beside the weights,
    # floor((79.65 x 2^30 - 16.06e9) / (1200 x 131,072)) = floor(441.6) = 441, capped at 256
    assert ws["G2"].value is None and ("blank: the planner uses batch 256, the full-length requests whose KV fits "
                                       "in HBM beside the weights (441), at most 256") in ws["G2"].comment.text
    assert ws["G2"].font.i  # the catalog's filled style: italic
    assert "alpha 0 (no overlap" in ws["Q2"].comment.text
    assert "50 GB/s" in ws["T2"].comment.text  # H100 SXM's PCIe Gen5 link (catalog)
    # the roofline decode at batch 256: 200 x (16.06e9 + 256 x 1100 x 131,072 B) / 2.01e12 B/s / 256 = 20.59 ms
    assert "20.59" in ws["P2"].comment.text and "at batch 256" in ws["P2"].comment.text
    run = {r[0]: r[1] for r in wb["Run"].iter_rows(values_only=True) if r and r[0]}
    assert run["Workloads cells filled by the planner"].startswith("5 (batch 1, alpha 1, max_seq_len 1, kv_gbps 1, "
                                                                     "t_decode_ms 1)")
    r = run_cli("validate", path, cwd=tmp_path)
    assert r.returncode == 0 and "planner: filled: Workloads: 5 blank cell(s) filled by the planner" in r.stderr


# --------------------------------------------------------------------------- item 3: plausibility
MEAS = {"model": "Llama-3.1-70B", "gpu": "H100 SXM", "tp": 4, "hit": 0}


def test_ttft_typed_in_seconds_is_warned_at_its_cell(tmp_path):
    meas = [dict(MEAS, isl=4000, ttft_ms=0.648), dict(MEAS, isl=8000, ttft_ms=1.35)]
    plan = build_plan(_book(tmp_path, optional={"Measurements": meas}))
    # hand calc, roofline at 100% of 4 x 989.4 TFLOPS: Llama-3.1-70B linear params 70.55e9 - 2 x 128,256 x 8,192
    # = 68.448653696e9 -> 2 x 68.448653696e9 x 4000 = 5.47589e14 FLOPs; attention 2 x 80 x 64 x 128 x 4000^2
    # = 2.09715e13; (5.47589e14 + 2.09715e13) / 3.9576e15 s = 143.66 ms
    floor = (2 * (70.55e9 - 2 * 128_256 * 8192) * 4000 + 2 * 80 * 64 * 128 * 4000**2) / (4 * 989.4e12) * 1e3
    assert floor == pytest.approx(143.66, abs=0.01)
    assert (f"Measurements!F2: ttft_ms 0.648 is faster than the roofline at 100% of the GPU's peak ({floor:,.4g} ms "
            f"for 4,000 tokens at hit 0% on 4x H100 SXM): was it typed in seconds (648 ms)?") in _text(plan)
    assert "Measurements!F3: ttft_ms 1.35 is faster than the roofline" in _text(plan)


def test_typed_prefill_in_seconds_is_warned(tmp_path):
    plan = build_plan(_book(tmp_path, [dict(ROW, t_attn0_ms=0.01, t_ffn0_ms=0.09)]))
    # hand calc: Llama-3.1-8B at 100% of 989.4 TFLOPS, 1000 tokens: 2 x (8.03e9 - 1.050673152e9) x 1000
    # + 2 x 32 x 32 x 128 x 1000^2 = 1.39587e13 + 2.62144e11 FLOPs -> 14.37 ms
    assert "Workloads!L2: t_attn0_ms + t_ffn0_ms = 0.1 ms is faster than the roofline at 100% of the GPU's peak " \
           "(14.37 ms" in _text(plan)


def test_tpot_faster_than_hbm_allows_is_warned(tmp_path):
    meas = [dict(MEAS, model="Llama-3.1-8B", tp=1, isl=n, ttft_ms=t, tpot_ms=0.005, osl=200, concurrency=1)
            for n, t in ((2000, 150.0), (8000, 700.0))]
    plan = build_plan(_book(tmp_path, optional={"Measurements": meas}))
    # hand calc: 8.03e9 x 2 B read per step at 100% of 3.35 TB/s = 4.794 ms > 0.005 ms
    assert "Measurements!I2: tpot_ms 0.005 is faster than HBM bandwidth allows: each step reads at least 4.794 ms " \
           "of weights per GPU at 100% of 3.35 TB/s" in _text(plan)


def test_typed_decode_faster_than_hbm_allows_is_warned(tmp_path):
    plan = build_plan(_book(tmp_path, [dict(ROW, t_decode_ms=1.6, batch=1)]))  # 1.6 s typed as ms
    # hand calc: 200 steps x 4.794 ms / batch 1 = 958.8 ms at least
    assert "Workloads!P2: t_decode_ms 1.6 is faster than HBM bandwidth allows: 200 steps reading at least 4.794 ms " \
           "of weights each, shared by batch 1, take 958.8 ms per request" in _text(plan)


def test_fitted_bandwidth_far_below_the_link_is_warned(tmp_path):
    # the issue: B_eff 1.93 GB/s fitted on H100s (PCIe Gen5, 50 GB/s) reported as an "ok" fit
    pts = [(2048, 0), (4096, 0), (8192, 0), (16384, 0), (8192, 0.5), (16384, 0.5)]
    meas = [dict(MEAS, model="Llama-3.1-8B", tp=1, isl=n, hit=h,
                 ttft_ms=float(ttft_law(n, h, 20, 1e-6, 0.05, S_8B, 1.93))) for n, h in pts]
    plan = build_plan(_book(tmp_path, optional={"Measurements": meas}))
    fit = plan.calibration.fits[0]
    assert fit.b_gbps == pytest.approx(1.93, rel=1e-4)  # the law's own points: B recovered
    assert ("Measurements rows 2-7 (Llama-3.1-8B on 1x H100 SXM): fitted B_eff 1.93 GB/s is outside [0.1, 1.2] x the "
            "GPU's host link (50 GB/s), below a tenth of it") in _text(plan)


def test_plain_one_in_a_hit_column_is_warned_and_a_percent_cell_is_not(tmp_path):
    path = _book(tmp_path, [dict(ROW), dict(ROW, workload="full")],
                 edit=lambda wb: (_set(wb, "Workloads", "hit_target", 2, 1, "General"),
                                  _set(wb, "Workloads", "hit_target", 3, 1, "0%")))
    text = _text(build_plan(path))
    assert ("Workloads!J2: hit_target 1 is read as 100% (every input token cached): if 1% was meant, type 0.01 or 1%"
            in text)
    assert "Workloads!J3" not in text


def test_h_star_warning_says_what_holds_at_the_rows_alpha(tmp_path):
    # Ta 0, Tf 100 ms, full KV load L = N S / B = 1000 x 131,072 B / 2.62144 GB/s = 50 ms: delta = 0.5,
    # h* = 1 / 1.5 = 66.7%; target 80%.
    # alpha 0: TTFT = 100 (1 - h) + 50 h falls all the way (100 ms at 0, 60 ms at 0.8): information only.
    # alpha 1: TTFT = max(50 h, 100 (1 - h)) is lowest at h = 2/3 (33.33 ms) and 40 ms at 0.8: a warning.
    base = dict(ROW, hit_target=0.8, t_attn0_ms=0, t_ffn0_ms=100, t_fixed_ms=0, t_decode_ms=0, kv_gbps=2.62144)
    plan = build_plan(_book(tmp_path, [dict(base, alpha=0), dict(base, workload="overlapped", alpha=1)]))
    text = _text(plan)
    assert ("Workloads row 2 (chat): information: hit_target 80.0% is beyond the first-order break-even h* 66.7% "
            "(where the full KV load equals the remaining compute, the fully overlapped model), but at this row's "
            "alpha 0 its TTFT still falls up to the target (100 ms at 0 hit, 60 ms at the target)") in text
    assert ("Workloads row 3 (overlapped): hit_target 80.0% is beyond 66.7%, the hit ratio at which this row's TTFT "
            "is lowest at its alpha 1 (33.33 ms): more hits make its prefill slower here (40 ms at the target") in text
    assert "more hits make prefill slower here" not in text.split("\n")[0]


# --------------------------------------------------------------------------- LibreOffice: the new cells
@pytest.mark.libreoffice
def test_new_cells_recalculate_in_libreoffice(tmp_path, recalc):
    """Summary's demand warning, Checks' demand row, a fitted alpha on Calibration and in Resolved:
    LibreOffice's values equal the stored ones; then a demand typed into the output turns the
    warning off on recalculation (the cells are live)."""
    import numpy as np

    n = np.array([2000, 4000, 8000, 16000, 32000] * 3, dtype=float)
    h = np.array([0] * 5 + [0.5] * 5 + [0.8] * 5)
    y = ttft_law(n, h, 20.0, 3e-7, 0.045, 81_920, 6.0, 0.6)
    meas = [{"model": "Llama-3.1-70B", "gpu": "H100 SXM", "tp": 4, "isl": int(a), "hit": float(b),
             "ttft_ms": float(c)} for a, b, c in zip(n, h, y)]
    wl = [dict(ROW, demand_tpm=None),
          {"workload": "w70", "model": "Llama-3.1-70B", "gpu": "H100 SXM", "tp": 4, "isl": 8000, "osl": 100,
           "hit_target": 0.5, "t_decode_ms": 0}]
    # hit_step 0.5: the test reads Summary, Checks, Calibration and Resolved, not the hit sweep
    # (Sensitivity_Hit: 3 rows a workload, not 21)
    plan = build_plan(_book(tmp_path, wl, optional={"Measurements": meas}, settings={"hit_step": 0.5}))
    assert plan.calibration.fits[0].alpha_fit is not None
    out = tmp_path / "out.xlsx"
    write_output(plan, out)
    # the live edit (checked at the end) is made first: both workbooks in one LibreOffice process
    def demand(wb):
        col = next(c.column_letter for c in wb["Workloads"][1] if str(c.value).startswith("demand_tpm"))
        wb["Workloads"][f"{col}2"] = 1_000_000
        wb["Workloads"][f"{col}3"] = 1_000_000

    edited = edit_output(out, tmp_path / "edited.xlsx", demand, "Workloads")
    again, again_edited = recalc(out, edited)
    stored, fresh = (value_book(p, "Summary", "Checks", "Calibration", "Resolved") for p in (out, again))
    assert fresh["Summary"]["D4"].value == stored["Summary"]["D4"].value == (
        "WARNING: no workload has a demand_tpm: the fleet is sized for nothing")
    rows = lambda wb: {r[0]: r[1:4] for r in wb["Checks"].iter_rows(values_only=True) if r and r[0]}  # noqa: E731
    assert rows(fresh)["workloads have a demand_tpm"] == rows(stored)["workloads have a demand_tpm"] == \
        ("warning", 2, "WARN")
    for wb_s, wb_f in ((stored["Calibration"], fresh["Calibration"]), (stored["Resolved"], fresh["Resolved"])):
        for r_s, r_f in zip(wb_s.iter_rows(), wb_f.iter_rows()):
            for a, b in zip(r_s, r_f):
                if isinstance(a.value, float):
                    assert b.value == pytest.approx(a.value, rel=1e-7, abs=1e-12), (wb_s.title, a.coordinate)
    # live: type a demand for both workloads in the output, recalculate: the warning goes
    fresh2 = value_book(again_edited, "Summary", "Checks")
    assert fresh2["Summary"]["D4"].value in ("", None)
    assert {r[0]: r[1:4] for r in fresh2["Checks"].iter_rows(values_only=True) if r and r[0]}[
        "workloads have a demand_tpm"] == ("warning", 0, "OK")
