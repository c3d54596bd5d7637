"""A CJK font installed after matplotlib built its font cache (README command 1 draws the memo
charts before command 2 installs the font) is still found by the memo charts (issue 21)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from planner.memo.charts import FONT_FAMILIES


def _installed_cjk() -> str | None:
    from matplotlib import font_manager

    names = {f.name for f in font_manager.fontManager.ttflist}
    return next((f for f in FONT_FAMILIES[1:] if f in names), None)


def test_font_installed_after_the_cache_is_found(tmp_path):
    family = _installed_cjk()
    if family is None:
        pytest.fail("no CJK font installed: the README's second command installs fonts-droid-fallback")
    cfg = tmp_path / "mpl"
    # a stale cache: built now, then the CJK family taken out, as if the font came later
    build = textwrap.dedent(f"""
        import json, pathlib
        from matplotlib import font_manager
        import matplotlib
        path = pathlib.Path(matplotlib.get_cachedir())
        cache = next(path.glob("fontlist-*.json"))
        data = json.loads(cache.read_text())
        data["ttflist"] = [f for f in data["ttflist"] if f["name"] != {family!r}]
        cache.write_text(json.dumps(data))
    """)
    env = {"MPLCONFIGDIR": str(cfg), "PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, "-c", build], check=True, env=env)
    check = textwrap.dedent(f"""
        import json
        from matplotlib import font_manager
        stale = {family!r} not in {{f.name for f in font_manager.fontManager.ttflist}}
        from planner.memo.charts import _fonts, undrawable
        print(json.dumps({{"stale": stale, "families": _fonts()["font.family"], "missing": undrawable(["\\u804a\\u5929"])}}))
    """)
    out = subprocess.run([sys.executable, "-c", check], check=True, env=env, capture_output=True, text=True)
    got = json.loads(out.stdout)
    assert got["stale"], "the test did not make a stale cache"
    assert family in got["families"]
    assert got["missing"] == ""
