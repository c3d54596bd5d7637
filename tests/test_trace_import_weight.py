"""A trace read imports only what it needs (issue 19): not openpyxl, XlsxWriter, pandas or jinja2.

``planner.core.refs`` (reached through ``planner.core.places`` and ``planner.core.errors``) imports
openpyxl's and XlsxWriter's helpers at their first call, so the trace path, which never writes a
cell reference, does not pay their import (about 0.2 s of CPU and 16 MB measured here)."""

import json
import subprocess
import sys

HEAVY = ("openpyxl", "xlsxwriter", "pandas", "jinja2")


def _loaded(code: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys, json\n"
                          f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))))"],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_trace_entry_points_do_not_import_the_workbook_libraries(tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"timestamp": 0, "input_length": 1024, "output_length": 1, "hash_ids": [0, 1]}\n'
                     '{"timestamp": 5, "input_length": 1024, "output_length": 1, "hash_ids": [0, 1]}\n')
    code = ("from planner.traffic import traces as T\n"
            f"r, _ = T.trace_reuse({str(trace)!r}, warmup=0)\n"
            "assert abs(float(T.hit_curve(r, [float('inf')])[0]) - 0.5) < 1e-12\n"
            f"T.read_trace({str(trace)!r})\n"
            "import planner.traffic.reuse_model\n")
    assert _loaded(code) == []


def test_refs_still_make_references_after_the_lazy_import():
    # the helpers are imported at their first call; the texts are XlsxWriter's/openpyxl's own
    code = ("from planner.core import refs\n"
            "assert refs.sheet_ref('Fleet By Period', 2, 1) == \"'Fleet By Period'!$B3\"\n"
            "assert refs.whole_column('Hit_Curve', 27) == 'Hit_Curve!$AB:$AB'\n"
            "assert refs.cell_range(1, 2, 9, 2) == '$C$2:$C$10' and refs.cell(2, 1, True, True) == '$B$3'\n"
            "assert refs.place('Workloads', 7, 9) == 'Workloads!J7'\n"
            "import xlsxwriter.utility as u\n"
            "assert refs.xl_rowcol_to_cell is u.xl_rowcol_to_cell and refs.quote_sheetname is u.quote_sheetname\n")
    assert set(_loaded(code)) == {"openpyxl", "xlsxwriter"}
