"""KV-hit capacity planner: KV-cache hit ratios to TTFT, TPM, GPUs and cost, as a live Excel model.

The library in five calls (the command line is a thin layer over them)::

    import planner
    p_in = planner.read_input("workbooks/example.xlsx")  # validated input, or planner.InputError
    plan = planner.build_plan(p_in)                     # the model evaluated (pandas frames)
    planner.write_workbook(plan, "out/plan.xlsx")       # the live workbook, written atomically
    planner.write_memo(plan, "out/plan.xlsx")           # the memo files beside it
    d = planner.diff_plans("q3.xlsx", "q4.xlsx")        # quarter over quarter

(The names are not the subpackages' names: importing ``planner.plan`` binds that attribute to
the subpackage.)

``InputError.problems`` lists every located problem (``Problem.place``, a :class:`Place`, and ``Problem.message``).
"""

from __future__ import annotations

from pathlib import Path

from planner.core.errors import InputError, Problem
from planner.core.places import Place
from planner.core.version import __version__

__all__ = ["InputError", "Place", "Problem", "__version__", "build_plan", "diff_plans", "read_input", "write_memo",
           "write_workbook"]


def read_input(path: str | Path):
    """Read and validate an input workbook: a :class:`~planner.inputs.reader.PlanInput`.

    Raises :class:`InputError` with every problem, each at its place: the same checks as
    ``planner validate`` (sheet sizes, calibration and each scenario's re-planned state included)."""
    from planner.finance import validation

    return validation.read_checked(Path(path))


def build_plan(source):
    """Evaluate the model: a :class:`~planner.plan.build.Plan` from a :func:`read_input` input, or
    from a path (read with every check, as :func:`read_input` reads it)."""
    from planner.finance import validation
    from planner.finance.period_notes import with_period_notes
    from planner.plan import build

    # the warnings `planner run` and `planner validate` give (a period's decode-first count beyond the search
    # is said above the plan: planner.finance.period_notes)
    return with_period_notes(build.build_plan(source if isinstance(source, build.PlanInput)
                                              else validation.read_checked(source)))


def write_workbook(plan_, path: str | Path) -> Path:
    """Write the live output workbook of ``plan_`` to ``path`` atomically (temporary file, then
    rename); returns the path."""
    from planner.core.fileio import save_atomic
    from planner.workbook.writer import write_output

    path = Path(path)
    save_atomic(path, lambda tmp: write_output(plan_, tmp))
    return path


def write_memo(plan_, output: str | Path, *, templates: str | Path | None = None) -> list[Path]:
    """Write the memo of ``plan_`` beside the workbook ``output`` (``<output>-memo.md``, ``.html``
    and the charts); returns the files written."""
    from planner.memo import render

    return render.write_memo(render.build_memo(plan_, output, templates=templates))


def diff_plans(old: str | Path, new: str | Path):
    """Compare two plans (input or output workbooks): a :class:`~planner.diff.bridge.Diff`."""
    from planner.diff import bridge

    return bridge.diff_plans(old, new)
