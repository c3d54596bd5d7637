"""A baseline target no instance count meets, in a plan with periods: Demand_Calc stored the number ``inf``
(red team 6, the issue 20 checker's finance workbook with an SLO: the TTFT target sized at the baseline hit).

XlsxWriter writes a formula's cached value as given, so ``<v>inf</v>``: no valid cell value. openpyxl could
not open the output ("could not read worksheets ... invalid literal for int() with base 10: 'inf'"), and
Excel repairs the file on opening; an output is also an input of ``planner diff``. Results already writes
such a count as ``"unreachable"``, as its formula says (tests/test_redteam5_unreachable_baseline.py), and
Demand_Calc did for the target's chain but not for the baseline's.

The deployment is that test's: P = 400 ms request alone at the baseline hit 0 > the 300 ms target, so
``instances_ttft_baseline`` is unreachable in every period; at the target hit 0.8 the TTFT is 104.388608 ms.
"""

from __future__ import annotations

import math
import zipfile

import openpyxl
import pytest

from planner.plan.build import build_plan
from planner.workbook.writer import write_output
from test_hand_calc import write_input
from test_redteam5_unreachable_baseline import GPUS, MODELS, WLS


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    d = tmp_path_factory.mktemp("rt6periods")
    src = d / "in.xlsx"
    write_input(src, MODELS, GPUS, WLS)
    wb = openpyxl.load_workbook(src)
    wb["Settings"].append(["periods", "2027-Q1..2027-Q2"])
    wb["Settings"].append(["demand_growth", 0.5])
    wb.save(src)
    plan = build_plan(src)
    assert math.isinf(float(plan.results["instances_ttft_baseline"].iat[0]))
    o = d / "out.xlsx"
    write_output(plan, o)
    return o


def _calc(path) -> list[dict]:
    ws = openpyxl.load_workbook(path, data_only=True)["Demand_Calc"]
    rows = list(ws.iter_rows(values_only=True))
    head = [str(h).split(" [")[0] if h else h for h in rows[0]]
    return [dict(zip(head, r)) for r in rows[1:] if r[0] in ("met-at-target",)]


def test_no_cell_stores_a_non_finite_number(out):
    with zipfile.ZipFile(out) as z:
        bad = [n for n in z.namelist() if n.startswith("xl/worksheets/")
               and any(t in z.read(n) for t in (b"<v>inf</v>", b"<v>-inf</v>", b"<v>nan</v>"))]
    assert bad == []


def test_demand_calc_says_unreachable_as_its_formula(out):
    rows = _calc(out)      # opens: before, openpyxl raised on the inf
    assert [r["period"] for r in rows] == ["2027-Q1", "2027-Q2"]
    for r in rows:
        assert r["instances_ttft_baseline"] == "unreachable"
        assert str(r["binding_baseline"]).startswith("unreachable")


@pytest.mark.libreoffice
def test_libreoffice_agrees(out, recalc):
    got = _calc(recalc(out))
    want = _calc(out)
    assert len(got) == len(want) == 2
    for a, b in zip(got, want):
        assert a["instances_ttft_baseline"] == b["instances_ttft_baseline"] == "unreachable"
        for k, v in b.items():   # every cell of the row as stored
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                assert a[k] == pytest.approx(v, rel=1e-9), k
            else:
                assert (a[k] or "") == (v or ""), k
