"""Benchmark: the product's phases where the test suite spends its time, in this process.

    python benchmarks/phases_bench.py                 # min of 5 runs of each phase
    python benchmarks/phases_bench.py --repeat 3 --json out/phases.json
    PYTHONPATH=/tmp/base python benchmarks/phases_bench.py   # another planner (e.g. a git archive)

Times ``read_input``, ``build_plan``, ``write_output`` and the memo's ``make_charts`` on two inputs:
the small example (the bundled example cut to 3 workloads, as tests/conftest.py ``edited_example``
makes it for the LibreOffice tests) and the whole bundled example. Each phase runs once to warm up
(imports, matplotlib's fonts), then ``--repeat`` times; the minimum wall and CPU times are reported. The planner is
imported from the path (not this checkout forced first), so a ``PYTHONPATH`` points it elsewhere.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.append(str(HERE.parent / "tests"))  # conftest.edited_example (a test tool); after the planner's path

import planner  # noqa: E402
from planner.inputs.reader import read_input  # noqa: E402
from planner.memo.charts import make_charts  # noqa: E402
from planner.plan.build import build_plan  # noqa: E402
from planner.workbook.writer import write_output  # noqa: E402


def best(fn, repeat: int) -> tuple[float, float]:
    """Minimum wall time and minimum CPU time of this process [s] of ``fn()`` over ``repeat`` runs,
    after one warm-up run (on a shared machine the CPU time varies less)."""
    fn()
    wall, cpu = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return min(wall), min(cpu)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--phases", nargs="+", default=["read_input", "build_plan", "write_output", "make_charts"])
    args = ap.parse_args(argv)
    from conftest import EXAMPLE, edited_example

    print(f"planner: {planner.__file__}")
    out: dict[str, dict[str, tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        small, _ = edited_example(Path(tmp) / "small.xlsx", workloads=3)
        for label, src in (("small", small), ("whole", Path(EXAMPLE))):
            plan = build_plan(src)
            phases = {"read_input": lambda: read_input(src), "build_plan": lambda: build_plan(src),
                      "write_output": lambda: write_output(plan, Path(tmp) / f"{label}-out.xlsx"),
                      "make_charts": lambda: make_charts(plan)}
            out[label] = {name: best(phases[name], args.repeat) for name in args.phases}
            for name, (wall, cpu) in out[label].items():
                print(f"{label:6s} {name:13s} wall {wall * 1000:8.1f} ms  cpu {cpu * 1000:8.1f} ms")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
