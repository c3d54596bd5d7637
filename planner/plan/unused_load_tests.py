"""A load test that calibrates no workload because its ``tp`` is not the workload's (red team 7, issue 20).

Measurements calibrate the workloads of their deployment, (model, gpu, tp). A load test typed with the
number of GPUs of the node (8) for a deployment of tp 4, or with tp 1 for one GPU of a tp-2 pair, matches
no workload: the workload of that model and GPU is estimated by the roofline instead (or keeps its typed
times), and nothing said so (the memo skips a fit with no workload). The times do depend on tp, so a
test at another tp is rightly not used; the warning says which workload it nearly matched, at the
Measurements rows. A deployment with no workload of its model and GPU at all (a shared Measurements
sheet) says nothing.
"""

from __future__ import annotations

from planner.core.errors import Problem
from planner.core.names import fold_name
from planner.core.places import Place


def unused_load_test_warnings(plan) -> list[Problem]:
    """One warning per calibrated deployment that no workload uses while a workload of its model and
    GPU runs at another tp."""
    calib = plan.calibration
    if calib is None or not getattr(calib, "fits", None):
        return []
    res = plan.resolved
    used = {j for j in calib.fit_index if j is not None and j >= 0}
    out = []
    for k, f in enumerate(calib.fits):
        if k in used:
            continue
        near = [(str(res["workload"].iat[i]), int(res["tp"].iat[i]), calib.source[i]) for i in range(len(res))
                if fold_name(str(res["model"].iat[i])) == fold_name(f.model)
                and fold_name(str(res["gpu"].iat[i])) == fold_name(f.gpu) and int(res["tp"].iat[i]) != f.tp]
        if not near:
            continue
        rows = sorted(int(r) for r in f.points["row"])
        how = {"estimated": "estimated by the roofline instead", "input": "planned at its typed times"}
        said = "; ".join(f"{w!r} at tp {tp} ({how.get(src, src)})" for w, tp, src in near[:3])
        out.append(Problem(Place.at_rows("Measurements", rows[0], rows[-1], f.label),
                           f"this load test at tp {f.tp} calibrates no workload: {said} runs {f.model} on {f.gpu} at "
                           f"another tp, and times are calibrated per (model, gpu, tp); if the test ran at the "
                           f"workload's tp, type that tp in the Measurements rows (tp is the GPUs of one instance, "
                           f"not of the node)"))
    return out
