"""KV-hit capacity planner: KV-cache hit ratios to TTFT, TPM, GPUs and cost, as a live Excel model.

The library in five calls (the command line is a thin layer over them)::

    import planner
    p_in = planner.read("workbooks/example.xlsx")    # validated input, or planner.InputError
    plan = planner.plan(p_in)                        # the model evaluated (pandas frames)
    planner.write(plan, "out/plan.xlsx")             # the live workbook, written atomically
    planner.memo(plan, "out/plan.xlsx")              # the memo files beside it
    d = planner.diff("q3.xlsx", "q4.xlsx")           # quarter over quarter

``InputError.problems`` lists every located problem (``Problem.place``, ``Problem.message``).
"""

from __future__ import annotations

from pathlib import Path

from planner.core.errors import InputError, Problem
from planner.core.version import __version__

__all__ = ["InputError", "Problem", "__version__", "diff", "memo", "plan", "read", "write"]


def read(path: str | Path):
    """Read and validate an input workbook: a :class:`~planner.inputs.reader.PlanInput`.

    Raises :class:`InputError` with every problem, each at its place."""
    from planner.inputs.reader import read_input

    return read_input(Path(path))


def plan(source):
    """Evaluate the model: a :class:`~planner.plan.build.Plan` from a path or a :func:`read` input."""
    from planner.plan.build import build_plan

    return build_plan(source)


def write(plan_, path: str | Path) -> Path:
    """Write the live output workbook of ``plan_`` to ``path`` atomically (temporary file, then
    rename); returns the path."""
    from planner.core.fileio import save_atomic
    from planner.workbook.writer import write_output

    path = Path(path)
    save_atomic(path, lambda tmp: write_output(plan_, tmp))
    return path


def memo(plan_, output: str | Path, *, templates: str | Path | None = None) -> list[Path]:
    """Write the memo of ``plan_`` beside the workbook ``output`` (``<output>-memo.md``, ``.html``
    and the charts); returns the files written."""
    from planner.memo.render import build_memo, write_memo

    return write_memo(build_memo(plan_, output, templates=templates))


def diff(old: str | Path, new: str | Path):
    """Compare two plans (input or output workbooks): a :class:`~planner.diff.bridge.Diff`."""
    from planner.diff.bridge import diff_plans

    return diff_plans(old, new)
