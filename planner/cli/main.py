"""Command line: a thin layer over :mod:`planner.plan.build` (parse arguments, call, report).

Exit status: 0 success; 2 the input is wrong (every problem listed on stderr); 1 anything
else. Never a traceback (set PLANNER_DEBUG=1 to see one for an internal error).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
import textwrap
from pathlib import Path

from planner.core.version import __version__
from planner.cli.options import (EXIT_ERROR, EXIT_INPUT, EXIT_OK, UsageError, fix_provenance, memo_options, say, add_email_options, check_output_path, default_output, say_removed)
from planner.cli.diff import add_parser as add_diff_parser, cmd_diff
from planner.core.errors import InputError


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
              planner catalog --xlsx catalogs.xlsx          # the model and GPU catalogs (rows to copy)
              planner diff q3.xlsx q4.xlsx -o out/q3-q4.xlsx  # what changed, and the cost bridge
              planner measurements r.json -o out/meas.xlsx --gpu H100 --tp 1  # load-test files -> Measurements
              planner run -o out/q4.xlsx --eml out/q4.eml --to team@example.org --from me@example.org
              planner send out/q4.eml --smtp smtp.example.org:587 --starttls --user me@example.org
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
    run.add_argument("-q", "--quiet", action="store_true",
                     help="leave out the progress and the summary lines: print only problems, warnings and "
                          "notes (a filled blank or a converted unit changes a result, so it is always said)")
    memo = run.add_argument_group("memo and email")
    memo.add_argument("--no-memo", action="store_true",
                      help="write only the workbook (no <output>-memo.md/.html and charts beside it; an earlier "
                           "run's there are removed, and named)")
    memo.add_argument("--no-charts", action="store_true",
                      help="write the memo without its two charts (no .png files; quicker)")
    memo.add_argument("--templates", type=Path, metavar="DIR",
                      help="folder whose memo.md.j2, memo.html.j2 and/or memo.txt.j2 replace the built-in "
                           "templates (rendered sandboxed)")
    add_email_options(memo, "also write the memo as an email (.eml): HTML and plain text, charts inline, "
                            "the workbook attached; nothing is sent", "title, GPUs, cost")
    # for tests and reproducible output: fix the run time and the input hash shown in the
    # workbook's Run sheet and the memo (not in --help)
    run.add_argument("--fixed-time", metavar="ISO8601", help=argparse.SUPPRESS)
    run.add_argument("--fixed-sha256", metavar="HEX", help=argparse.SUPPRESS)

    tpl = sub.add_parser("template", help="write a blank, documented input workbook",
                         formatter_class=argparse.RawDescriptionHelpFormatter,
                         epilog="example:\n  planner template my-input.xlsx")
    tpl.add_argument("path", type=Path, help="where to write the template (.xlsx)")
    tpl.add_argument("--force", action="store_true", help="replace an existing file")

    val = sub.add_parser("validate", help="check an input workbook and report; writes nothing",
                         formatter_class=argparse.RawDescriptionHelpFormatter,
                         epilog="example:\n  planner validate my-input.xlsx")
    val.add_argument("input", type=Path, help="input workbook (.xlsx/.xlsm)")

    from planner.cli.catalog import add_parser as add_catalog_parser

    add_catalog_parser(sub)
    add_diff_parser(sub)
    from planner.cli.measurements import add_parser as add_measurements_parser

    add_measurements_parser(sub)

    snd = sub.add_parser("send", help="send an .eml written by planner run --eml over SMTP",
                         formatter_class=argparse.RawDescriptionHelpFormatter,
                         epilog="example:\n  PLANNER_SMTP_PASSWORD=... planner send out/q4.eml "
                                "--smtp smtp.example.org:587 --starttls --user planner@example.org\n\n"
                                "The password is read from the environment variable PLANNER_SMTP_PASSWORD, "
                                "never from the command line.\nThe message is sent byte for byte as written; "
                                "recipients are its To and Cc addresses.")
    snd.add_argument("eml", type=Path, help="the message (.eml)")
    snd.add_argument("--smtp", required=True, metavar="HOST:PORT", help="SMTP server")
    snd.add_argument("--starttls", action="store_true", help="upgrade the connection with STARTTLS")
    snd.add_argument("--user", metavar="U", help="log in as U (password from $PLANNER_SMTP_PASSWORD)")
    snd.add_argument("--timeout", type=float, default=60.0, metavar="S", help="network timeout in seconds")
    return p


def _report_problems(err: InputError) -> None:
    n = len(err.problems)
    print(f"planner: the input has {n} problem{'s' if n != 1 else ''}; nothing was written:", file=sys.stderr)
    for line in err.lines():
        print(f"  {line}", file=sys.stderr)


MAX_WARNINGS_SHOWN = 20


def _print_warnings(plan) -> None:
    """Notes and warnings on stderr; a long list is cut (all of them are in the Checks sheet)."""
    for note in plan.input.notes:
        print(f"planner: note: {note}", file=sys.stderr)
    if plan.filled_note:  # the blanks the planner filled (planner.plan.trust, issue 20)
        print(f"planner: filled: {plan.filled_note}", file=sys.stderr)
    from planner.inputs.measurement_files import filled_note as measurements_filled

    if meas_note := measurements_filled(plan.input):  # rows filled from the load-test files they name (issue 18)
        print(f"planner: filled: {meas_note}", file=sys.stderr)
    for w in plan.warnings[:MAX_WARNINGS_SHOWN]:
        print(f"planner: warning: {w}", file=sys.stderr)
    rest = len(plan.warnings) - MAX_WARNINGS_SHOWN
    if rest > 0:
        print(f"planner: ... and {rest} more warnings: all are listed in the output's Checks sheet", file=sys.stderr)


@contextlib.contextmanager
def _progress(plan, quiet: bool):
    """A progress bar on stderr for writes that take more than about two seconds; none when
    stderr is not a terminal or with --quiet."""
    if quiet or not sys.stderr.isatty():
        yield None
        return
    from tqdm import tqdm

    from planner.workbook.writer import output_rows

    with tqdm(total=output_rows(plan), unit="rows", desc="planner: writing", delay=2, file=sys.stderr,
              mininterval=0.5, leave=False, unit_scale=True) as bar:
        yield bar.update


def cmd_run(args) -> int:
    from planner import build_plan  # every check, and the period notes above the plan (planner.finance.period_notes)
    from planner.workbook.writer import write_output

    src = args.input
    if src is None:
        from planner.examples.build import example_path

        src = example_path()
    out = args.output or default_output(src)
    if not src.exists():
        from planner.inputs.reader import missing_problem

        raise InputError([missing_problem(src)])
    check_output_path(src, out)
    memo_options(args, src, out)
    plan = fix_provenance(build_plan(src), args)
    from planner.memo.render import memo_paths

    make_memo = None
    if not args.no_memo:
        from planner.memo.render import MemoTemplateError, build_memo

        def make_memo():
            # rendered in memory once the outputs are staged (a destination that cannot be
            # written is refused before the charts are drawn) and before the workbook is
            # written (a template error writes nothing)
            try:
                return build_memo(plan, out, templates=args.templates, charts=not args.no_charts)
            except MemoTemplateError as err:
                raise UsageError(str(err)) from None

    # every file a memo may write: one not written this time (charts after --no-charts, all of them
    # after --no-memo) is an earlier run's, removed by the commit
    may_write, removed = memo_paths(out).values(), []
    from planner.cli.transaction import write_outputs

    with _progress(plan, args.quiet) as tick:
        sheet_names, memo_ = write_outputs(
            out, lambda path, tmpdir: write_output(plan, path, progress=tick, tmpdir=tmpdir), make_memo, args.eml,
            memo_paths=may_write, to=args.to, sender=args.sender, subject=args.subject, date=plan.created,
            removed=removed)
    _print_warnings(plan)
    r = plan.results
    say(f"planner: read {src} ({len(r)} workloads, {len(plan.models)} models, {len(plan.gpus)} GPUs)",
         args.quiet)
    w = len(plan.warnings)
    say(f"planner: wrote {out}: {len(sheet_names)} sheets ({', '.join(sheet_names[:4])}, ...); "
         f"{w} warning{'s' if w != 1 else ''}", args.quiet)
    gpus = plan.results["gpus_needed"].sum(min_count=1)
    if gpus == gpus:  # some workloads have demand
        say(f"planner: the workloads with demand need {gpus:,.0f} GPUs at their target hit ratios", args.quiet)
    if memo_ is not None:
        p = memo_.paths
        drawn = f"charts {p['ttft'].name} and {p['tpm'].name} beside it" if memo_.charts else "no charts"
        say(f"planner: wrote memo {p['md']} and {p['html']}, {drawn}", args.quiet)
    say_removed(removed, out, args.quiet)
    if args.eml:
        to = ", ".join(args.to) if args.to else "no recipient yet"
        say(f"planner: wrote email {args.eml} ({to}; not sent: use planner send)", args.quiet)
    return EXIT_OK


def cmd_template(args) -> int:
    from planner.examples.build import write_template
    from planner.cli.transaction import Outputs

    if args.path.suffix.lower() != ".xlsx":
        raise UsageError(f"{args.path}: the template must be an .xlsx file")
    if args.path.exists() and not args.force:
        raise UsageError(f"{args.path}: exists already; use --force to replace it")
    with Outputs([args.path]) as tx:  # staged beside the target, like run's outputs
        write_template(tx.path(args.path))
        tx.commit()
    print(f"planner: wrote template {args.path}")
    return EXIT_OK


def cmd_validate(args) -> int:
    from planner import build_plan  # every check, and the period notes above the plan (planner.finance.period_notes)
    from planner.cli.options import check_file_name

    check_file_name(args.input, "input")
    plan = build_plan(args.input)
    _print_warnings(plan)
    print(f"planner: {args.input} is valid ({len(plan.results)} workloads, {len(plan.models)} models, "
          f"{len(plan.gpus)} GPUs, {len(plan.warnings)} warnings)")
    return EXIT_OK


def cmd_send(args) -> int:
    from planner.memo.mail import PASSWORD_ENV, SendError, parse_smtp, send_eml

    try:
        host, port = parse_smtp(args.smtp)
    except ValueError as err:
        raise UsageError(str(err)) from None
    if not args.eml.is_file():
        raise UsageError(f"{args.eml}: no such file")
    try:
        accepted = send_eml(args.eml, host, port, starttls=args.starttls, user=args.user,
                            password=os.environ.get(PASSWORD_ENV), timeout=args.timeout)
    except ValueError as err:
        raise UsageError(f"{args.eml}: {err}; nothing was sent") from None
    except SendError as err:
        print(f"planner: sending {args.eml} failed: {err}", file=sys.stderr)
        return EXIT_ERROR
    print(f"planner: sent {args.eml} to {', '.join(accepted)} via {host}:{port}")
    return EXIT_OK


class Terminated(BaseException):
    """SIGTERM, turned into an exception so that half-written files are removed."""


def _on_sigterm(signum, frame):  # pragma: no cover - exercised in a subprocess test
    raise Terminated()


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_sigterm)
        # also when started with SIGINT ignored (a background job of a script): Ctrl-C and
        # SIGINT must still stop the run cleanly
        signal.signal(signal.SIGINT, signal.default_int_handler)
    from planner.cli.catalog import cmd_catalog
    from planner.cli.measurements import cmd_measurements

    handler = {"run": cmd_run, "template": cmd_template, "validate": cmd_validate, "send": cmd_send,
               "catalog": cmd_catalog, "diff": cmd_diff, "measurements": cmd_measurements}[args.command]
    import warnings

    # no raw library warnings on stderr (a numpy RuntimeWarning names internal paths): every
    # number is checked for finiteness by the planner itself; PLANNER_DEBUG=1 shows them
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code = _dispatch(handler, args)
    if caught and os.environ.get("PLANNER_DEBUG"):
        for w in caught:
            print(f"planner: debug: {w.category.__name__}: {w.message} ({w.filename}:{w.lineno})", file=sys.stderr)
    return code


def _dispatch(handler, args) -> int:
    from planner.core.failures import environment_message, internal_message, os_error_of

    try:
        return handler(args)
    except InputError as err:
        _report_problems(err)
        return EXIT_INPUT
    except UsageError as err:
        print(f"planner: {err}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print("planner: interrupted; no partial file was left", file=sys.stderr)
        return 130
    except Terminated:
        print("planner: terminated; no partial file was left", file=sys.stderr)
        return 143
    except BrokenPipeError:
        # the reader of stdout went away (`planner catalog | head`): what was asked for was printed
        # as far as it was read, and files a command writes are committed before it prints. Python's
        # documented way out (the signal module's note on SIGPIPE): stdout to devnull, so that the
        # flush at exit does not fail again, and exit 1 as Python does on a broken pipe
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_ERROR
    except MemoryError:
        print("planner: environment problem: out of memory; nothing was written (files already there are "
              "unchanged)", file=sys.stderr)
        return EXIT_ERROR
    except ModuleNotFoundError as err:
        if err.name and err.name.split(".")[0] != "planner":  # a dependency missing: not a bug of the planner
            print(f"planner: environment problem: the Python package {err.name.split('.')[0]!r} is not installed "
                  f"for {sys.executable}: install the planner with its dependencies "
                  f"(python3 -m pip install -e . in its folder); nothing was written", file=sys.stderr)
            return EXIT_ERROR
        if os.environ.get("PLANNER_DEBUG"):
            raise
        print(f"planner: {internal_message(err)}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as err:  # noqa: BLE001 - the promise is: never a traceback
        os_err = os_error_of(err)
        if os_err is not None:  # the disk, a permission, a folder where a file is expected
            print(f"planner: {environment_message(os_err)}; nothing was written "
                  f"(files already there are unchanged)", file=sys.stderr)
            return EXIT_ERROR
        if os.environ.get("PLANNER_DEBUG"):
            raise
        print(f"planner: {internal_message(err)}", file=sys.stderr)
        return EXIT_ERROR
