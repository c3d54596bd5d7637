"""The decode-first open loop in Sensitivity_Hit's hit sweep (issue 16, item 5 "hits under load"): a sweep row of
a workload with scheduler decode_first and no Workloads concurrency has its instances_ttft (hence
instances_needed, load_rps, ...) and its ttft_load_ms / ttft_load_p90_ms from the decode-first search at the
row's hit, held live on the DF_Search_Hit sheet (row-aligned with the sweep, written only when the plan has
such a workload, numbered with the sweep's continuation sheets), as Results at hit_target: by hand, against the
bisection of instances_ttft_df at every hit on random workloads, against Results at hit_target, recalculated by
LibreOffice cell by cell, and by a live edit. The engine of tests/test_decode_first_results.py.
"""

from __future__ import annotations

import math

import numpy as np
import openpyxl
import pytest

from conftest import edit_cells, edit_output_and_input, header_index, same_value, sheet_values, value_book
from planner.equations import decode_first_slo as dslo
from planner.plan import columns as sheets
from planner.plan.build import build_plan
from planner.workbook.explorer import EXPLORER_SELECT
from planner.workbook.writer import write_output
from test_decode_first_results import BASE, GPUS, MODELS, TPM_10
from test_hand_calc import write_input

NAMES = ("instances_ttft", "instances_needed", "load_rps", "ttft_load_ms", "ttft_load_p90_ms")
WORKLOADS = [
    dict(workload="pf-open", demand_tpm=TPM_10, ttft_slo_ms=500, slo_percentile="mean",
         **{**BASE, "scheduler": "prefill_first"}),
    # hit_target 0.5, a point of the sweep; at hit 0 the hand row of tests/test_decode_first_slo.py
    dict(workload="df-hit", demand_tpm=TPM_10, ttft_slo_ms=500, slo_percentile="mean", **{**BASE, "hit_target": 0.5}),
]


def _input(path, workloads, hit_step):
    write_input(path, MODELS, GPUS, workloads)
    wb = openpyxl.load_workbook(path)
    wb["Settings"].append(["hit_step", hit_step])
    wb.save(path)
    return path


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("dfsweep")
    src = _input(d / "in.xlsx", WORKLOADS, 0.25)
    plan = build_plan(src)
    out = d / "out.xlsx"
    names = write_output(plan, out)
    return src, plan, out, names


def _sweep(plan):
    return plan.sens.frames["Sensitivity_Hit"]


def _bisection(plan, frame):
    """instances_ttft_df of each sweep row at its own hit: P and u the sweep's, the rest the workload's."""
    res = plan.resolved.set_index("workload").loc[frame["workload"]]
    r = plan.results.set_index("workload").loc[frame["workload"]]
    f = lambda s: s.to_numpy(dtype=float)  # noqa: E731
    return dslo.instances_ttft_df(f(r["demand_rps_open"]), f(frame["ttft_ms"]), np.nan_to_num(f(res["pass_fixed_ms"])),
                                  f(frame["burst_new_tokens"]), f(res["max_num_batched_tokens"]),
                                  f(r["step_weights_ms"]), f(r["step_kv_ms"]), f(res["osl"]),
                                  f(res["ttft_slo_ms"]), np.nan_to_num(f(r["slo_q"])))


def test_the_sweep_by_hand(built):
    _src, plan, _out, names = built
    assert names.index("DF_Search_Hit") == names.index("Sensitivity_Hit") + 1
    s = _sweep(plan).set_index(["workload", "hit"])
    # hit 0 is the hand row: 7 instances under decode first (6 by the request-alone queue), 475.045 ms mean
    # and 796.46 ms p90 at 10/7 requests/s each
    row = s.loc[("df-hit", 0.0)]
    assert float(row["ttft_ms"]) == pytest.approx(300, rel=1e-12)
    assert float(row["instances_ttft"]) == 7 and float(row["instances_needed"]) == 7
    assert float(row["ttft_load_ms"]) == pytest.approx(475.045, rel=1e-5)
    assert float(row["ttft_load_p90_ms"]) == pytest.approx(796.46, rel=1e-5)
    # the prefill-first row keeps the request-alone queue: 6, and P + W
    pf = s.loc[("pf-open", 0.0)]
    assert float(pf["instances_ttft"]) == 6
    assert float(pf["ttft_load_ms"]) == pytest.approx(float(pf["ttft_ms"] + pf["prefill_wait_ms"]), rel=1e-12)
    # a hit shortens the prefill, and the count falls with it
    counts = s.loc["df-hit", "instances_ttft"].to_numpy(dtype=float)
    assert np.all(np.diff(counts) <= 0) and counts[-1] < counts[0]


def test_every_count_is_the_bisection_and_the_hit_target_row_is_results(built):
    _src, plan, _out, _names = built
    f = _sweep(plan)
    df = f[f["workload"] == "df-hit"]
    assert np.array_equal(df["instances_ttft"].to_numpy(dtype=float), _bisection(plan, df))
    # at hit_target (0.5) the sweep's row is Results' row
    at = df[df["hit"] == 0.5].iloc[0]
    r = plan.results.set_index("workload").loc["df-hit"]
    for name in NAMES:
        assert float(at[name]) == float(r[name]), name
    # the prefill-first rows: the request-alone declaration's values, bit for bit
    from planner.plan.sensitivity import SweepTable, evaluate_table

    t = plan.sens.table("Sensitivity_Hit")
    assert t.helpers == sheets.DF_SEARCH_HIT and t.cols == sheets.SENSITIVITY_HIT_DF
    plain = evaluate_table(SweepTable(t.sheet, t.leads, sheets.SENSITIVITY_HIT), plan.resolved, plan.results)
    pf = (f["workload"] == "pf-open").to_numpy()
    for c in sheets.SENSITIVITY_HIT:
        a, b = f[c.name].to_numpy()[pf], plain[c.name].to_numpy()[pf]
        assert (list(a) == list(b)) if a.dtype == object else np.array_equal(a, b, equal_nan=True), c.name
    # ... and the decode-first rows are not (the request-alone queue's count at hit 0 is 6)
    assert float(plain[(plain["workload"] == "df-hit") & (plain["hit"] == 0)]["instances_ttft"].iat[0]) == 6


def test_random_workloads_at_every_hit(tmp_path):
    # 16 random decode-first workloads (lengths, hit targets, prefill times, pass costs, budgets blank or
    # 2,048-16,384, quantiles, targets 1.1-5 x the request-alone prefill, demands) at the default hit_step:
    # every sweep row's count is the bisection at that row's hit, and the row at hit_target is Results'
    rng = np.random.default_rng(5)
    wl = []
    for i in range(16):
        isl, a0, f0 = int(rng.integers(200, 8000)), rng.uniform(20, 200), rng.uniform(40, 400)
        w = dict(BASE, workload=f"df-{i}", isl=isl, osl=int(rng.choice([50, 200, 800])),
                 hit_target=float(rng.choice([0.0, 0.25, 0.5, 0.8, 0.95])), t_attn0_ms=a0, t_ffn0_ms=f0,
                 t_fixed_ms=rng.uniform(5, 80), pass_fixed_ms=float(rng.uniform(0, 60)),
                 demand_tpm=float(rng.uniform(0.5, 400) * (isl + 200) * 60),
                 ttft_slo_ms=float((a0 + f0) * rng.uniform(1.1, 5)),
                 slo_percentile=str(rng.choice(["mean", "p50", "p90", "p99"])))
        w["max_num_batched_tokens"] = None if i % 4 == 0 else int(rng.choice([2048, 8192, 16384]))
        wl.append(w)
    plan = build_plan(_input(tmp_path / "in.xlsx", wl, 0.05))
    f = _sweep(plan)
    got, want = f["instances_ttft"].to_numpy(dtype=float), _bisection(plan, f)
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    assert same.all(), f[~same][["workload", "hit", "instances_ttft"]]
    assert len(np.unique(got[np.isfinite(got)])) > 30        # counts spread, not one value
    r = plan.results.set_index("workload")
    for name in r.index:
        h = float(plan.resolved.set_index("workload").loc[name, "hit_target"])
        at = f[(f["workload"] == name) & np.isclose(f["hit"].to_numpy(dtype=float), h)].iloc[0]
        for c in NAMES:
            assert same_value(float(r.loc[name, c]), float(at[c]), rel=1e-12), (name, c)


def test_the_sheet(built):
    _src, plan, out, _names = built
    wb = openpyxl.load_workbook(out)
    ws = wb["DF_Search_Hit"]
    h = header_index(ws)
    assert list(h) == [c.name for c in sheets.DF_SEARCH_HIT]
    # row-aligned with the sweep: only df-hit's 5 rows (sheet rows 7-11) written
    written = [r for r in range(2, ws.max_row + 1) if ws.cell(r, 1).value is not None]
    assert written == [7, 8, 9, 10, 11], written
    sw = wb["Sensitivity_Hit"]
    hs = header_index(sw)
    assert "DF_Search_Hit" in sw.cell(7, hs["instances_ttft"]).value
    assert "DF_Search_Hit" not in sw.cell(2, hs["instances_ttft"]).value      # pf-open: the closed form
    assert ws.cell(7, h["df_prefill"]).value == f"=Sensitivity_Hit!$G7"
    longest = max(len(c.value) for row in ws.iter_rows() for c in row if isinstance(c.value, str))
    assert longest < 8192


def test_a_plan_without_such_a_workload_has_no_sweep_search(tmp_path):
    plan = build_plan(_input(tmp_path / "in.xlsx", WORKLOADS[:1], 0.25))
    t = plan.sens.table("Sensitivity_Hit")
    assert t.cols is sheets.SENSITIVITY_HIT and not t.helpers and plan.sens.searched("Sensitivity_Hit") is None
    names = write_output(plan, tmp_path / "out.xlsx")
    assert not any(n.startswith("DF_Search") for n in names)


def _cells(path, sheet):
    ws = value_book(path, sheet)[sheet]  # that sheet's cached values only (a full load parses every sheet)
    return [[c.value for c in row] for row in ws.iter_rows()]


def _same(a, b):
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return (a in (None, "")) == (b in (None, "")) and (a in (None, "") or a == b)


@pytest.mark.libreoffice
def test_libreoffice_recalculates_the_sweep_and_a_live_edit(built, recalc, tmp_path):
    src, plan, out, _names = built
    # the sweep split: one workload a sheet (hit_step 0.1: 11 rows a workload; at most 16 rows a sheet), so
    # df-hit's rows are on Sensitivity_Hit_2 and its search on DF_Search_Hit_2 (no DF_Search_Hit: pf-open's
    # sheet has no searched row)
    d = tmp_path / "split"
    d.mkdir()
    plan_s = build_plan(_input(d / "in.xlsx", WORKLOADS, 0.1))
    split = d / "split.xlsx"
    names = write_output(plan_s, split, max_rows=16)
    assert "Sensitivity_Hit_2" in names and "DF_Search_Hit_2" in names and "DF_Search_Hit" not in names
    # the live edit: df-hit's demand from 10 to 25 requests/s and its target from 500 to 420 ms (Workloads row
    # 3), the Explorer showing df-hit, in the output's input cells and in the input (planned afresh)
    edits = [("Workloads", 3, "demand_tpm", TPM_10 * 2.5), ("Workloads", 3, "ttft_slo_ms", 420)]
    e_out0, e_in = edit_output_and_input(out, src, edits, tmp_path)
    pick = openpyxl.utils.get_column_letter(EXPLORER_SELECT[1] + 1) + str(EXPLORER_SELECT[0] + 1)
    e_out = edit_cells(e_out0, tmp_path / "out-edited-df-hit.xlsx", [("Explorer", pick, "df-hit")])
    e_split = edit_cells(split, d / "split-edited.xlsx", [("Explorer", pick, "df-hit")])
    got, got_e, got_se = recalc(out, e_out, e_split)
    # every cell as Python stored it (the split workbook's sweep sheets from its Explorer-switched copy: the
    # switch moves only the Explorer, whose df-hit block is checked below; one recalculation fewer)
    for path, again, shs in ((out, got, ("Sensitivity_Hit", "DF_Search_Hit", "Explorer", "Results")),
                             (split, got_se, ("Sensitivity_Hit", "Sensitivity_Hit_2", "DF_Search_Hit_2"))):
        for sheet in shs:
            want, have = _cells(path, sheet), _cells(again, sheet)
            assert len(want) == len(have), sheet
            for i, (rw, rh) in enumerate(zip(want, have)):
                for j, (a, b) in enumerate(zip(rw, rh)):
                    assert _same(a, b), (path.name, sheet, i + 1, j + 1, a, b)
    # the edit against a fresh run of the edited input, in the sweep (each hit), the Explorer and Results
    fresh = build_plan(e_in)
    fs = _sweep(fresh)
    fs = fs[fs["workload"] == "df-hit"].reset_index(drop=True)
    assert float(fs.loc[0, "instances_ttft"]) == float(dslo.instances_ttft_df(25.0, 300, 75, 2000, 8192, 20, 0.3,
                                                                              200, 420, 0.0))
    have = [r for r in sheet_values(got_e, "Sensitivity_Hit") if r["workload"] == "df-hit"]
    assert len(have) == len(fs) == 5
    ex = _cells(got_e, "Explorer")
    ex_head = [str(h).split(" [")[0] if h is not None else None for h in ex[2]]
    col = {name: ex_head.index(name) for name in NAMES if name in ex_head}
    assert set(col) == set(NAMES)
    for i in range(len(fs)):
        for name in NAMES:
            want = float(fs.loc[i, name])
            assert same_value(want, have[i][name]), (i, name, want, have[i][name])
            assert same_value(want, ex[3 + i][col[name]]), ("Explorer", i, name)
    assert float(fs.loc[0, "instances_ttft"]) > 7
    r = fresh.results.set_index("workload").loc["df-hit"]
    res = next(x for x in sheet_values(got_e, "Results") if x["workload"] == "df-hit")
    at = fs[fs["hit"] == 0.5].iloc[0]
    for name in NAMES:
        assert same_value(float(r[name]), res[name]) and float(at[name]) == float(r[name]), name
    # the split workbook's Explorer, switched to df-hit, reads DF_Search_Hit_2 (CHOOSE of the sheet its rows are on)
    ss = _sweep(plan_s)
    ss = ss[ss["workload"] == "df-hit"].reset_index(drop=True)
    ex = _cells(got_se, "Explorer")
    for i in range(len(ss)):
        for name in NAMES:
            assert same_value(float(ss.loc[i, name]), ex[3 + i][col[name]]), ("split Explorer", i, name)


def test_the_explorer_finds_a_block_where_the_layout_puts_it():
    # block_sheet / block_row (the Explorer's INDEX into DF_Search_Hit) against Chunks.where, split or not
    from planner.equations.sensitivity import block_row, block_sheet
    from planner.workbook.layout import Chunks

    for k, n, max_rows in ((5, 7, 16), (11, 3, 16), (21, 40, 100), (21, 5, None)):
        ch = Chunks.of("S", k, n * k, max_rows)
        for w in range(n):
            for i in range(k):
                name, row = ch.where(w * k + i)
                sheet = 1 if name == "S" else int(name.split("_")[1])
                assert int(block_sheet(w + 1, k, ch.per_sheet)) == sheet
                assert int(block_row(w + 1, k, ch.per_sheet, i + 2)) == row + 1   # Excel's row (where: 0-based + 1)


def test_search_rows_count_towards_zip64(built, tmp_path, monkeypatch):
    # a DF_Search_Hit row holds about 110 KB of XML against a sweep row's 15 KB: one such sheet passes the
    # 4 GiB a zip member may hold without ZIP64 at about 39,000 rows, while the plan's rows in all are far
    # below ZIP64_ROWS; each searched sweep row counts SEARCH_ROW_WEIGHT times in the writer's decision
    import xlsxwriter

    from planner.workbook import writer

    _src, plan, _out, _names = built
    k = next(t.k for t in plan.sens.tables if t.sheet == "Sensitivity_Hit")
    assert k == 5 and list(plan.sens.searched("Sensitivity_Hit")) == [False, True]  # pf-open, df-hit
    plain = writer.output_rows(plan)
    assert writer.zip64_rows(plan) == plain + writer.SEARCH_ROW_WEIGHT * 1 * k
    used = []
    monkeypatch.setattr(xlsxwriter.Workbook, "use_zip64", lambda self: used.append(True))
    monkeypatch.setattr(writer, "ZIP64_ROWS", plain)  # the plain rows alone would not switch it on
    write_output(plan, tmp_path / "a.xlsx")
    assert used == [True]
