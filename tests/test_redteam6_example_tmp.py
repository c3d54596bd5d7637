"""``planner run`` without an input, from an install without the repository's ``workbooks/`` folder (a wheel),
rebuilds the bundled example in a temporary folder; that folder must not outlive the run (red team 6, issue
21's "the README's commands on a fresh machine": the standard's "never leave temp files").

Before: every such run left ``$TMPDIR/planner-example-*/example.xlsx`` behind.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = """
import sys
from pathlib import Path
import planner.examples.build as b
b.REPO_WORKBOOKS = Path(sys.argv[1])          # as installed from a wheel: no workbooks/ beside the package
p = b.example_path()
assert p.exists() and p.parent.name.startswith("planner-example-"), p
print(p)
"""


def test_the_rebuilt_example_is_removed_when_the_process_ends(tmp_path):
    env = dict(os.environ, TMPDIR=str(tmp_path / "t"))
    (tmp_path / "t").mkdir()
    r = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "no-workbooks")], capture_output=True,
                       text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    made = Path(r.stdout.strip())
    assert made.parent.parent == tmp_path / "t"      # it was made in this test's TMPDIR ...
    assert not made.parent.exists()                   # ... and is gone
    assert list((tmp_path / "t").iterdir()) == []
