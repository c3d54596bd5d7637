"""The ``planner diff OLD NEW`` command: its arguments and :func:`cmd_diff` (the library
part is :mod:`planner.diff.bridge`; :mod:`planner.cli.main` dispatches here)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from planner.cli.options import (EXIT_OK, UsageError, memo_options, say, add_email_options, check_output_path,
                                 say_removed)


def add_parser(sub) -> None:
    """The ``diff`` subcommand and its options."""
    dif = sub.add_parser("diff", help="compare two plans: input changes, workload changes, cost bridge",
                         formatter_class=argparse.RawDescriptionHelpFormatter,
                         epilog="example:\n  planner diff plan-2026q3.xlsx plan-2026q4.xlsx -o out/q3-q4-diff.xlsx")
    dif.add_argument("old", type=Path, help="the earlier plan: an input workbook or a planner output")
    dif.add_argument("new", type=Path, help="the later plan: an input workbook or a planner output")
    dif.add_argument("-o", "--output", type=Path,
                     help="diff workbook; default: out/<old>-vs-<new>-diff.xlsx under the current folder")
    dif.add_argument("-q", "--quiet", action="store_true", help="print only problems")
    dmemo = dif.add_argument_group("memo and email")
    dmemo.add_argument("--no-memo", action="store_true",
                       help="write only the workbook (no <output>-memo.md/.html and chart beside it; an earlier "
                            "diff's there are removed, and named)")
    add_email_options(dmemo, "also write the diff memo as an email (.eml), the diff workbook attached; nothing "
                             "is sent", "title and cost change")
    dif.add_argument("--fixed-time", metavar="ISO8601", help=argparse.SUPPRESS)


def cmd_diff(args) -> int:
    """planner diff OLD NEW: compare two plans (see planner.diff.bridge)."""
    import datetime as dt

    from planner.diff.bridge import diff_plans
    from planner.diff.memo import build_memo, memo_paths
    from planner.diff.workbook import write_diff
    from planner.cli.transaction import write_outputs

    old, new = args.old, args.new
    if old.resolve() == new.resolve() or (old.exists() and new.exists() and os.path.samefile(old, new)):
        raise UsageError(f"{new}: OLD and NEW are the same file; give two different plans")
    out = args.output or Path.cwd() / "out" / f"{old.stem}-vs-{new.stem}-diff.xlsx"
    for src in (old, new):  # (a missing input is reported with the other file's problems below)
        check_output_path(src if src.exists() else Path(os.devnull), out)
        if out.resolve() == src.resolve():
            raise UsageError(f"{out}: the output may not be the input itself; choose another -o path")
    args.templates = None
    memo_options(args, old, out)
    if args.eml and any(args.eml.resolve() == p.resolve() for p in
                        [new] + ([] if args.no_memo else list(memo_paths(out).values()))):
        raise UsageError(f"{args.eml}: is an input or another output; choose another --eml path")
    created = dt.datetime.now(dt.timezone.utc)
    if args.fixed_time:
        try:
            created = dt.datetime.fromisoformat(args.fixed_time)
        except ValueError:
            raise UsageError(f"--fixed-time {args.fixed_time!r}: not an ISO 8601 time") from None
        created = created if created.tzinfo else created.replace(tzinfo=dt.timezone.utc)
    d = diff_plans(old, new)
    make_memo = None if args.no_memo else (lambda: build_memo(d, out, created=created))  # drawn once staged
    removed: list = []  # an earlier diff's memo there, after --no-memo: removed by the commit
    _, memo_ = write_outputs(out, lambda path, tmpdir: write_diff(d, path, created), make_memo, args.eml,
                             memo_paths=memo_paths(out).values(), to=args.to, sender=args.sender,
                             subject=args.subject, date=created, removed=removed)
    counts = {s: sum(1 for w in d.workloads if w["status"] == s) for s in ("added", "removed", "changed")}
    cur = str(d.new.settings.get("currency") or "").strip()
    say(f"planner: compared {old} with {new}: {len(d.changes)} input cells changed; workloads "
         f"{counts['added']} added, {counts['removed']} removed, {counts['changed']} changed", args.quiet)
    say(f"planner: fleet cost per month {cur} {d.bridge[0][1]:,.2f} -> {cur} {d.bridge[-1][1]:,.2f} "
         f"({d.total_change:+,.2f}); wrote {out}", args.quiet)
    if memo_ is not None:
        say(f"planner: wrote memo {memo_.paths['md']} and {memo_.paths['html']}", args.quiet)
    say_removed(removed, out, args.quiet)
    if args.eml:
        say(f"planner: wrote email {args.eml} (not sent: use planner send)", args.quiet)
    return EXIT_OK
