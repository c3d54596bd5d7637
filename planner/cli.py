"""Command line: a thin layer over :mod:`planner.plan` (parse arguments, call, report).

Exit status: 0 success; 2 the input is wrong (every problem listed on stderr); 1 anything
else. Never a traceback (set PLANNER_DEBUG=1 to see one for an internal error).
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from pathlib import Path

from . import __version__
from .errors import InputError, Problem

EXIT_OK, EXIT_ERROR, EXIT_INPUT = 0, 1, 2
REPO_ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = REPO_ROOT / "workbooks" / "example.xlsx"


class UsageError(Exception):
    """A wrong path or option (exit 2, like a wrong input)."""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="planner",
        description="KV-cache hit capacity planner: turns hit ratios into TTFT, TPM, GPUs and cost, "
                    "and writes the answer as a live Excel model.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=textwrap.dedent("""\
            examples:
              planner run                                   # plan the bundled example -> out/
              planner run plan-2026q4.xlsx -o out/q4.xlsx   # plan your workbook
              planner template my-input.xlsx                # blank, documented input workbook
              planner validate my-input.xlsx                # check an input, write nothing
            """))
    p.add_argument("--version", action="version", version=f"planner {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="plan every workload row and write the output workbook",
                         formatter_class=argparse.RawDescriptionHelpFormatter,
                         epilog="example:\n  planner run workbooks/example.xlsx -o out/example-plan.xlsx")
    run.add_argument("input", nargs="?", type=Path,
                     help="input workbook (.xlsx/.xlsm); default: the bundled example")
    run.add_argument("-o", "--output", type=Path,
                     help="output workbook; default: out/<input name>-plan.xlsx under the current folder")
    run.add_argument("-q", "--quiet", action="store_true", help="print only problems")

    tpl = sub.add_parser("template", help="write a blank, documented input workbook",
                         formatter_class=argparse.RawDescriptionHelpFormatter,
                         epilog="example:\n  planner template my-input.xlsx")
    tpl.add_argument("path", type=Path, help="where to write the template (.xlsx)")
    tpl.add_argument("--force", action="store_true", help="replace an existing file")

    val = sub.add_parser("validate", help="check an input workbook and report; writes nothing",
                         formatter_class=argparse.RawDescriptionHelpFormatter,
                         epilog="example:\n  planner validate my-input.xlsx")
    val.add_argument("input", type=Path, help="input workbook (.xlsx/.xlsm)")
    return p


def _say(msg: str, quiet: bool = False) -> None:
    if not quiet:
        print(msg)


def _report_problems(err: InputError) -> None:
    n = len(err.problems)
    print(f"planner: the input has {n} problem{'s' if n != 1 else ''}; nothing was written:", file=sys.stderr)
    for line in err.lines():
        print(f"  {line}", file=sys.stderr)


def default_output(input_path: Path) -> Path:
    return Path.cwd() / "out" / f"{input_path.stem}-plan.xlsx"


def check_output_path(input_path: Path, output: Path) -> None:
    """Refuse an output that is the input, is not .xlsx, or is open in Excel."""
    if output.suffix.lower() != ".xlsx":
        raise UsageError(f"{output}: the output must be an .xlsx file")
    if output.resolve() == input_path.resolve() or (output.exists() and os.path.samefile(output, input_path)):
        raise UsageError(f"{output}: the output may not be the input itself; choose another -o path")
    lock = output.parent / f"~${output.name}"
    if lock.exists():
        raise UsageError(f"{output}: the file is open in Excel (lock file {lock.name} beside it); "
                         f"close it or choose another -o path")
    if output.exists() and output.is_dir():
        raise UsageError(f"{output}: is a folder")


def cmd_run(args) -> int:
    from .plan import build_plan
    from .writer import save_atomic, write_output

    src = args.input
    if src is None:
        from .example import example_path

        src = example_path()
    out = args.output or default_output(src)
    if not src.exists():
        raise InputError([Problem(str(src), "no such file")])
    check_output_path(src, out)
    plan = build_plan(src)
    save_atomic(out, lambda tmp: write_output(plan, tmp))
    for note in plan.input.notes:
        print(f"planner: note: {note}", file=sys.stderr)
    for w in plan.warnings:
        print(f"planner: warning: {w}", file=sys.stderr)
    r = plan.results
    _say(f"planner: read {src} ({len(r)} workloads, {len(plan.models)} models, {len(plan.gpus)} GPUs)",
         args.quiet)
    _say(f"planner: wrote {out} (Results, Checks, Sensitivity_Hit, inputs, Resolved, Run; "
         f"{len(plan.warnings)} warning{'s' if len(plan.warnings) != 1 else ''})", args.quiet)
    return EXIT_OK


def cmd_template(args) -> int:
    from .example import write_template
    from .writer import save_atomic

    if args.path.suffix.lower() != ".xlsx":
        raise UsageError(f"{args.path}: the template must be an .xlsx file")
    if args.path.exists() and not args.force:
        raise UsageError(f"{args.path}: exists already; use --force to replace it")
    save_atomic(args.path, write_template)
    print(f"planner: wrote template {args.path}")
    return EXIT_OK


def cmd_validate(args) -> int:
    from .plan import build_plan

    plan = build_plan(args.input)
    for note in plan.input.notes:
        print(f"planner: note: {note}", file=sys.stderr)
    for w in plan.warnings:
        print(f"planner: warning: {w}", file=sys.stderr)
    print(f"planner: {args.input} is valid ({len(plan.results)} workloads, {len(plan.models)} models, "
          f"{len(plan.gpus)} GPUs, {len(plan.warnings)} warnings)")
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    handler = {"run": cmd_run, "template": cmd_template, "validate": cmd_validate}[args.command]
    try:
        return handler(args)
    except InputError as err:
        _report_problems(err)
        return EXIT_INPUT
    except UsageError as err:
        print(f"planner: {err}", file=sys.stderr)
        return EXIT_INPUT
    except OSError as err:  # the output folder cannot be made or written
        where = err.filename or ""
        print(f"planner: cannot write {where}: {err.strerror or err}; nothing was written", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("planner: interrupted; nothing was written", file=sys.stderr)
        return 130
    except Exception as err:  # noqa: BLE001 - the promise is: never a traceback
        if os.environ.get("PLANNER_DEBUG"):
            raise
        print(f"planner: internal error ({type(err).__name__}: {err}); "
              f"set PLANNER_DEBUG=1 for details", file=sys.stderr)
        return EXIT_ERROR
