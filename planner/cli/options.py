"""Shared pieces of the command line: exit codes, :class:`UsageError`, and the checks of
the output path and of the memo/email and provenance options (used by ``run`` and ``diff``)."""

from __future__ import annotations

import os
from pathlib import Path

EXIT_OK, EXIT_ERROR, EXIT_INPUT = 0, 1, 2


class UsageError(Exception):
    """A wrong path or option (exit 2, like a wrong input)."""


def say(msg: str, quiet: bool = False) -> None:
    if not quiet:
        print(msg)


def say_removed(removed, out: Path, quiet: bool = False) -> None:
    """Say which older files beside the workbook ``out`` the run removed (an earlier run's memo
    or charts it did not write again: they would not match the new workbook), and which it left
    because they are symbolic links (``removed``: see :func:`planner.cli.transaction.write_outputs`)."""
    gone = [p.name for p, kind in removed if kind == "removed"]
    links = [p.name for p, kind in removed if kind == "link"]
    if gone:
        say(f"planner: removed {', '.join(gone)} beside {out.name}: left by an earlier run and not written by "
             f"this one, {'they' if len(gone) > 1 else 'it'} would not match the new workbook", quiet)
    if links:
        say(f"planner: left {', '.join(links)} beside {out.name} as {'they are' if len(links) > 1 else 'it is'}: "
             f"a symbolic link is not removed; not written by this run, it may not match the new workbook", quiet)


def default_output(input_path: Path) -> Path:
    return Path.cwd() / "out" / f"{input_path.stem}-plan.xlsx"


def check_file_name(path: Path, what: str) -> None:
    """A path whose name becomes text in the outputs (workbook properties, the memo, an email
    attachment): refused when it holds a line break or is not valid UTF-8 (an undecodable
    byte read from the file system)."""
    from planner.inputs.cells import line_break

    text = str(path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"{text.encode('utf-8', 'backslashreplace').decode()}: the {what} path is not valid "
                         f"UTF-8 (a byte the file system holds cannot be read as a character); rename it") from None
    if brk := line_break(text, strip=False):
        raise UsageError(f"{text!r}: the {what} path contains a line break ({brk}); choose another name")


def check_output_path(input_path: Path, output: Path) -> None:
    """Refuse an output that is the input, is not .xlsx, or is open in Excel; and input or
    output names that cannot become text (:func:`check_file_name`)."""
    check_file_name(input_path, "input")
    check_file_name(output, "output")
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


def memo_options(args, src: Path, out: Path) -> None:
    """Check the memo and email options before anything is read or written."""
    from planner.memo import mail
    from planner.memo import render as memo

    if args.no_memo and (args.eml or args.templates):
        raise UsageError("--no-memo cannot be combined with --eml or --templates")
    if (args.to or args.sender or args.subject) and not args.eml:
        raise UsageError("--to, --from and --subject need --eml PATH")
    if args.templates:
        try:
            memo.check_template_dir(args.templates)
        except ValueError as err:
            raise UsageError(str(err)) from None
    if args.eml:
        check_file_name(args.eml, "--eml")
        if args.eml.suffix.lower() != ".eml":
            raise UsageError(f"{args.eml}: the email must be an .eml file")
        taken = [src, out] + ([] if args.no_memo else list(memo.memo_paths(out).values()))
        if any(args.eml.resolve() == p.resolve() for p in taken):
            raise UsageError(f"{args.eml}: is the input or another output; choose another --eml path")
        if args.eml.is_dir():
            raise UsageError(f"{args.eml}: is a folder")
        try:
            mail.check_headers(args.to, args.sender, args.subject)
        except ValueError as err:
            raise UsageError(str(err)) from None


def fix_provenance(plan, args):
    """--fixed-time / --fixed-sha256 (hidden, for tests): a copy of ``plan`` with the run time
    and input hash replaced (the plan itself is not changed)."""
    import dataclasses
    import datetime as dt
    import re

    if args.fixed_time:
        try:
            t = dt.datetime.fromisoformat(args.fixed_time)
        except ValueError:
            raise UsageError(f"--fixed-time {args.fixed_time!r}: not an ISO 8601 time") from None
        plan = dataclasses.replace(plan, created=t if t.tzinfo else t.replace(tzinfo=dt.timezone.utc))
    if args.fixed_sha256:
        if not re.fullmatch(r"[0-9a-f]{64}", args.fixed_sha256):
            raise UsageError("--fixed-sha256: give 64 lowercase hex digits")
        plan = dataclasses.replace(plan, input=dataclasses.replace(plan.input, sha256=args.fixed_sha256))
    return plan


def add_email_options(group, eml_help: str, subject_default: str) -> None:
    """``--eml``, ``--to``, ``--from`` and ``--subject`` of a command that writes a memo
    (``planner run`` and ``planner diff`` alike)."""
    group.add_argument("--eml", type=Path, metavar="PATH", help=eml_help)
    group.add_argument("--to", action="append", metavar="ADDR", help="recipient of the .eml (repeatable)")
    group.add_argument("--from", dest="sender", metavar="ADDR", help="sender of the .eml")
    group.add_argument("--subject", metavar="S", help=f"subject of the .eml (default: {subject_default})")
