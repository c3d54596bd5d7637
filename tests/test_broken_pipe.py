"""`planner catalog | head`: the reader of stdout goes away before the planner has printed
everything. That is not a problem of the planner or of its environment: nothing is said on
stderr (it said "environment problem: Broken pipe; nothing was written" before), no traceback,
and the exit code is Python's own for a broken pipe (1)."""

import os
import subprocess
import sys


def test_a_closed_stdout_is_not_an_environment_problem():
    r, w = os.pipe()
    os.close(r)  # the reader is gone before the first write: every write to stdout is EPIPE
    try:
        proc = subprocess.run([sys.executable, "-m", "planner", "catalog"], stdout=w, stderr=subprocess.PIPE,
                              text=True, timeout=120)
    finally:
        os.close(w)
    assert "environment problem" not in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr, proc.stderr
    assert proc.stderr == ""
    assert proc.returncode == 1
