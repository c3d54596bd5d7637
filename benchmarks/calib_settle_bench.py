"""Benchmark of the calibration's convergence: ``python benchmarks/calib_settle_bench.py [out.json]``.

Mixed concurrency 1/2/4/8 calibrations with hits, from the held-out UCM 3FS tables
(tests/data/published_load_heldout.csv): per dataset, the number of refits and the CPU time of
build_plan, and the fitted values (as JSON to ``out.json`` when given). Issue 16's note has the
numbers before and after the secant on the per-pass fixed cost (planner.plan.calibrate).
"""
import atexit
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from planner.workbook.input_sheets import write_input_workbook
from planner.plan.build import build_plan
import planner.plan.calibrate as cal
orig = cal.fit_points
calls = []
def counted(*a, **k):
    calls.append(1); return orig(*a, **k)
cal.fit_points = counted
d = pd.read_csv(Path(__file__).resolve().parents[1] / "tests" / "data" / "published_load_heldout.csv")
tmp = Path(tempfile.mkdtemp(prefix="calib-settle-"))  # the input workbooks, removed at exit
atexit.register(shutil.rmtree, tmp, True)
MODELS = {"qwq32b": dict(model="QwQ-32B", layers=64, kv_heads=8, head_dim=128, kv_bytes=2, params_b=32.8),
          "dsr1awq": dict(model="DeepSeek-R1-AWQ", layers=61, kv_heads=1, head_dim=576, kv_bytes=2, params_b=671)}
out = {}
for ds, g in d.groupby("dataset"):
    key = "qwq32b" if "qwq" in ds else "dsr1awq"
    mod = MODELS[key]
    for pick in ("seven", "all"):
        gg = g if pick == "all" else pd.concat([g[g.concurrency == 1].head(4), g[g.concurrency == 8].head(3)])
        meas = [dict(model=mod["model"], gpu="H100 SXM", tp=int(r.tp), isl=r.isl, hit=r.hit, ttft_ms=r.ttft_ms,
                     concurrency=int(r.concurrency), ttft_stat="mean") for r in gg.itertuples()]
        wl = [dict(workload="w", model=mod["model"], gpu="H100 SXM", tp=int(gg.tp.iloc[0]), isl=8000, osl=2, hit_target=0.5, t_decode_ms=0)]
        src = tmp / f"mixed_{ds}_{pick}.xlsx"
        write_input_workbook(src, [mod], [dict(gpu="H100 SXM", hbm_gib=80, pcie_gen=5, hbm_tbps=3.35, bf16_tflops=989.4)], wl, {}, optional={"Measurements": meas})
        calls.clear(); c0 = time.process_time()
        plan = build_plan(src)
        f = plan.calibration.fits[0]
        print(f"{ds} {pick} ({len(meas)} points, c={sorted(set(gg.concurrency))}): {len(calls)} fits, build_plan CPU {time.process_time()-c0:.2f} s")
        out[f"{ds}/{pick}"] = dict(t_fixed=f.t_fixed, k_attn=f.k_attn, k_ffn=f.k_ffn, b_gbps=f.b_gbps)
if len(sys.argv) > 1:
    Path(sys.argv[1]).write_text(json.dumps(out))
