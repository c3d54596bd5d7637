"""Rewrite the equations block of README.md and docs/model.md from planner/equations/text.py."""

from pathlib import Path

from planner.equations.text import replace_block

ROOT = Path(__file__).resolve().parents[1]
for name in ("README.md", "docs/model.md"):
    p = ROOT / name
    p.write_text(replace_block(p.read_text(encoding="utf-8")), encoding="utf-8")
    print("wrote", p)
