"""One text of the equations (planner/equations/text.py) feeds README.md, docs/model.md and the
memo (issue 21: the instance formula had drifted apart in four copies)."""

from __future__ import annotations

from pathlib import Path

from planner.equations import text as T
from planner.memo.render import ASSUMPTIONS

ROOT = Path(__file__).resolve().parents[1]


def test_readme_and_model_doc_hold_the_generated_block():
    for name in ("README.md", "docs/model.md"):
        doc = (ROOT / name).read_text(encoding="utf-8")
        assert T.replace_block(doc) == doc, f"{name}: run python docs/make_equations.py"


def test_memo_states_the_instance_equation():
    assert any(T.INSTANCES in a for a in ASSUMPTIONS)


def test_no_stale_instance_formula_anywhere():
    stale = "ceil(demand_tpm / tpm_delivered_target)"
    for p in [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "planner").rglob("*.py"),
              *(ROOT / "templates").glob("*.j2")]:
        assert stale not in p.read_text(encoding="utf-8"), p
    assert "ceil(demand / TPM)" not in (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_instance_equation_is_the_code():
    # instances_needed = ceil(demand / (TPM * u)): 1,000,000 tokens/min over 300,000 at 0.8 -> ceil(4.1667) = 5
    import numpy as np

    from planner.equations import kvhit as m

    got = m.instances_needed(np.array([1_000_000.0]), np.array([300_000.0]), np.array([0.8]))
    assert float(np.asarray(got)[0]) == 5
