"""``planner measurements FILE... -o MEASUREMENTS.xlsx``: argument parsing and the report; the
work is in :func:`planner.loadtests.load` and :mod:`planner.loadtests.rows`."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

EPILOG = """\
examples:
  vllm bench serve --model meta-llama/Llama-3.1-8B-Instruct --save-result --result-filename r.json ...
  planner measurements r.json -o out/meas.xlsx --gpu "H100 SXM" --tp 1 --hit 0
  planner measurements sglang.jsonl before.prom after.prom -o out/meas.xlsx --model Llama-3.1-8B-Instruct \\
      --gpu H100 --tp 1          # the two scrapes after a result file give its hit ratio
  planner measurements benchmarks.json -o out/meas.xlsx --input plan.xlsx   # gpu/tp from the plan's Workloads

Formats are detected from the content: vLLM bench serve / benchmark_serving.py (JSON, JSON lines),
SGLang bench_serving (JSON lines), AIPerf / GenAI-Perf (JSON, CSV), guidellm (benchmarks.json,
.yaml with PyYAML), LLMPerf (*_summary.json), inference-perf (summary_lifecycle_metrics.json), and
Prometheus /metrics scrapes (two, before and after a run, after its result file). One Measurements
row per run; copy the rows into the Measurements sheet of your input workbook and plan it (or
name the files in that sheet's file column: planner run reads them the same way).
"""


def _fraction(text: str) -> float:
    t = text.strip()
    try:
        v = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number (a fraction: 0.5 or 50%)") from None
    if not math.isfinite(v) or not 0 <= v <= 1:
        raise argparse.ArgumentTypeError(f"{text!r} is outside [0, 1] (a fraction: 0.5 or 50%)")
    return v


def _tp(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 1 <= v <= 100000:
        raise argparse.ArgumentTypeError(f"{text!r} is outside [1, 100000]")
    return v


def add_parser(sub) -> None:
    p = sub.add_parser("measurements", help="read load-test result files and write Measurements rows",
                       description="Read load-test result files (vLLM, SGLang, AIPerf/GenAI-Perf, guidellm, "
                                   "LLMPerf, inference-perf, Prometheus scrapes) and write one Measurements row "
                                   "per run. The inputs are never modified.",
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG)
    p.add_argument("files", nargs="+", type=Path, metavar="FILE", help="result files, in order")
    p.add_argument("-o", "--output", type=Path, required=True, metavar="MEASUREMENTS.xlsx",
                   help="the workbook to write (sheet Measurements); an existing one is replaced only once "
                        "the new one is complete, as planner run does")
    p.add_argument("--model", help="model of every run (a Models row or a catalog model); default: the file's")
    p.add_argument("--gpu", help="GPU type of every run (a GPUs row or a catalog GPU)")
    p.add_argument("--tp", type=_tp, help="tensor-parallel size of every run")
    p.add_argument("--hit", type=_fraction, help="prefix-cache hit ratio of runs whose file and metrics carry "
                                                 "none (0.5 or 50%%)")
    p.add_argument("--input", type=Path, metavar="WORKBOOK",
                   help="an input workbook: model and GPU names are matched to its rows, and gpu/tp taken from "
                        "its Workloads when a model runs on one deployment")
    p.add_argument("--allow-failed", action="store_true",
                   help="keep runs with failed requests (their statistics cover the completed ones; the row's "
                        "note says how many failed)")
    p.add_argument("-q", "--quiet", action="store_true", help="print only problems")


def cmd_measurements(args) -> int:
    from planner.cli.options import EXIT_OK, UsageError, check_output_path
    from planner.core.errors import InputError, Problem
    from planner.core.fileio import save_atomic
    from planner.loadtests import load
    from planner.loadtests.rows import Options, build_rows

    out = args.output
    for src in list(args.files) + ([args.input] if args.input else []):
        if src.exists():
            check_output_path(src, out)
    if out.suffix.lower() != ".xlsx":
        raise UsageError(f"{out}: the output must be an .xlsx file")
    if (out.parent / f"~${out.name}").exists():
        raise UsageError(f"{out}: the file is open in Excel (lock file ~${out.name} beside it); close it or "
                         f"choose another -o path")
    if out.is_dir():
        raise UsageError(f"{out}: is a folder")
    workbook, book_problems = None, []
    if args.input is not None:
        from planner.inputs.reader import read_input

        try:
            workbook = read_input(args.input)
        except InputError as err:  # listed with the files' own problems, in one answer
            book_problems = list(err.problems)
    loaded = load(args.files)
    if book_problems:  # the rows are matched to the workbook's names: only the files' own problems
        raise InputError(book_problems + [p if isinstance(p, Problem) else Problem(p.place, p.message)
                                          for p in loaded.problems])
    opts = Options(model=args.model, gpu=args.gpu, tp=args.tp, hit=args.hit, allow_failed=args.allow_failed,
                   workbook=workbook)
    rows, notes, problems = build_rows(loaded.runs, opts)
    problems = loaded.problems + problems
    if not problems and not rows:
        problems = [Problem(", ".join(f.name for f in args.files), "hold no run")]
    if problems:
        raise InputError([p if isinstance(p, Problem) else Problem(p.place, p.message) for p in problems])
    save_atomic(out, lambda tmp: write_workbook(tmp, rows))
    if not args.quiet:
        for place, note in notes:
            print(f"planner: note: {place}: {note}", file=sys.stderr)
    print(f"planner: wrote {len(rows)} Measurements row{'s' if len(rows) != 1 else ''} to {out}")
    return EXIT_OK


def write_workbook(path: Path, rows: list[dict]) -> None:
    """The Measurements workbook: one sheet ``Measurements`` written by the input-sheet writer (the
    same headers, units, notes, styles and validation as the template's)."""
    import xlsxwriter

    from planner.loadtests.rows import EXTRAS
    from planner.workbook.input_sheets import write_input_sheet
    from planner.workbook.styles import WB_OPTIONS, Formats

    extras = [e for e in EXTRAS if any(r.get(e) is not None for r in rows)]
    wb = xlsxwriter.Workbook(str(path), {**WB_OPTIONS, "in_memory": True})  # small: its parts zipped from memory (planner.workbook.writer.IN_MEMORY_ROWS)
    # no model/gpu dropdowns: they would list the Models/GPUs sheets, which this workbook has not
    write_input_sheet(wb, Formats(wb), "Measurements", rows, extras, ref_dropdowns=False)
    wb.close()
