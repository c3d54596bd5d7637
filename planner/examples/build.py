"""The bundled example input and the blank template.

``python -m planner.examples.build`` rewrites ``workbooks/example.xlsx`` and
``workbooks/template.xlsx`` from :mod:`planner.examples.data` and the schema.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

from planner.examples import data as example_data

from planner.core import schema
from planner.core.fileio import save_atomic
from planner.workbook.input_sheets import write_input_workbook

REPO_WORKBOOKS = Path(__file__).resolve().parents[2] / "workbooks"


def _settings(rows) -> dict:
    return {r["key"]: r["value"] for r in rows}


def write_example(path: Path) -> None:
    write_input_workbook(path, example_data.MODELS, example_data.GPUS, example_data.WORKLOADS,
                         _settings(example_data.SETTINGS),
                         title="KV-hit capacity planner: example input (illustrative numbers; sources "
                               "in the source/note columns)",
                         optional={"Measurements": example_data.MEASUREMENTS, "Demand": example_data.DEMAND,
                                   "Scenarios": example_data.SCENARIOS})


def _template_rows() -> tuple[list[dict], list[dict], list[dict]]:
    """One example row per sheet, taken from the example data."""
    wl = dict(example_data.WORKLOADS[0])
    model = next(m for m in example_data.MODELS if m["model"] == wl["model"])
    gpu = next(g for g in example_data.GPUS if g["gpu"] == wl["gpu"])
    keep = lambda rec, sheet: {k: v for k, v in rec.items() if k in {c.name for c in schema.columns(sheet)}}
    return [keep(model, "Models")], [keep(gpu, "GPUs")], [keep(wl, "Workloads")]


# Left blank in the template's example workload: the times come from Measurements or the
# roofline estimate unless someone has profiled them (README "Where do my numbers come from").
TEMPLATE_BLANK = ("t_attn0_ms", "t_ffn0_ms", "t_other0_ms", "t_fixed_ms", "t_decode_ms")


def write_template(path: Path) -> None:
    m, g, w = _template_rows()
    w = [{k: v for k, v in w[0].items() if k not in TEMPLATE_BLANK}]
    write_input_workbook(path, m, g, w, {s.key: s.default for s in schema.SETTING_KEYS},
                         title="KV-hit capacity planner: input template (replace the example rows)",
                         # the optional sheets with their headers only, so that replacing the example
                         # rows leaves nothing that names them (README sheet: their columns)
                         optional={"Measurements": [], "Demand": [], "Scenarios": [], "Tiers": []})


def example_path() -> Path:
    """The bundled example workbook; rebuilt into a temporary folder when the package is
    installed without the repository's ``workbooks/`` folder."""
    p = REPO_WORKBOOKS / "example.xlsx"
    if p.exists():
        return p
    tmp = Path(tempfile.mkdtemp(prefix="planner-example-")) / "example.xlsx"
    # removed when the process ends (red team 6: each `planner run` of a wheel install left its folder behind)
    atexit.register(shutil.rmtree, tmp.parent, True)
    write_example(tmp)
    return tmp


if __name__ == "__main__":  # pragma: no cover
    REPO_WORKBOOKS.mkdir(exist_ok=True)
    print(save_atomic(REPO_WORKBOOKS / "example.xlsx", write_example))
    print(save_atomic(REPO_WORKBOOKS / "template.xlsx", write_template))
