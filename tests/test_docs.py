"""The README's column reference is the schema's (one table drives both)."""

from conftest import REPO
from planner.core import schema


def test_readme_column_reference_matches_schema():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    start = text.index("<!-- columns:start")
    start = text.index("-->", start) + 3
    end = text.index("<!-- columns:end -->")
    assert text[start:end].strip() == schema.markdown().strip(), (
        "README column reference is stale: regenerate it from `python -m planner.core.schema`")


def test_readme_opens_with_the_two_commands():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = text.split("```bash\n")[1:3]
    commands = [b.split("```")[0].strip() for b in blocks]
    assert commands[0] == "python3 -m pip install -e . && planner run"
    assert "pytest" in commands[1] and 'pip install -e ".[test]"' in commands[1]
    ci = (REPO / ".ci" / "run").read_text()
    assert 'python -m pip install -q -e ".[test]" && python -m pytest' in ci
    assert "pip install -q -e . && planner run" in ci  # command 1 runs first, on the same fresh HOME
    assert ci.index("planner run") < ci.index("python -m pytest")
