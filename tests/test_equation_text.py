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


def test_every_instance_formula_carries_the_utilisation():
    """The instance count in every form the texts write it (``ceil(...)``, ``⌈...⌉``) divides by
    the utilisation: the memo's "model in brief" once said ``instances = ⌈demand / TPM⌉`` four lines
    below the assumption that sized them at target_utilization (tests/golden/example-memo.md)."""
    import re

    form = re.compile(r"(?:ceil\(|⌈)\s*demand(?:_tpm)?\s*/\s*\(?\s*(?:TPM|tpm)[^⌉)]*[⌉)]")
    texts = [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "planner").rglob("*.py"),
             *(ROOT / "templates").glob("*.j2"), *(ROOT / "tests" / "golden").glob("example-memo.*")]
    bad = [f"{p.name}: {m.group()}" for p in texts for m in form.finditer(p.read_text(encoding="utf-8"))
           if "utilization" not in m.group() and "· u" not in m.group()]
    assert bad == []
    assert any("target_utilization" in f for n, f in T.BRIEF if n == "GPUs")


def test_the_instance_equation_is_the_code():
    # instances_needed = ceil(demand / (TPM * u)): 1,000,000 tokens/min over 300,000 at 0.8 -> ceil(4.1667) = 5
    import numpy as np

    from planner.equations import kvhit as m

    got = m.instances_needed(np.array([1_000_000.0]), np.array([300_000.0]), np.array([0.8]))
    assert float(np.asarray(got)[0]) == 5
