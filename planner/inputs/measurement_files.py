"""Measurements rows that name a load-test result file (issue 18): the reader fills them from it.

A ``Measurements`` row whose ``file`` cell names a result file (a path relative to the input
workbook's folder, as Workloads ``trace`` is; a result and its two ``/metrics`` scrapes separated
by ``;``) is read with the same parsers as ``planner measurements`` (:mod:`planner.loadtests`) and
turned into row values by the same code (:func:`planner.loadtests.rows.build_rows`), so a row filled
here is the row ``planner measurements`` writes. Why a column of its own and not ``source``:
``source`` is the label ``planner measurements`` writes (``file, run (tool)``), not a path, and the
rows pasted from it carry one; reading it as a path would turn every pasted row into a file error.

The rules:

* **Blank cells are filled from the file; a typed cell wins.** A typed ``model``, ``gpu``, ``tp``
  or ``hit`` plays the part of ``--model``/``--gpu``/``--tp``/``--hit`` (what the file cannot know);
  gpu and tp the file does not say come from the one Workloads deployment of the model, as with
  ``--input``. A typed number that differs from the file's (beyond 1e-9 relative) is kept and
  warned about at its cell, naming both values.
* Every filled cell is recorded in ``Table.filled`` (column -> provenance) and written as the
  catalog's fills are (green italic, a comment naming the file, the run and the tool); the
  ``planner: filled:`` line and the Run sheet count them (:func:`filled_note`, :func:`run_rows`).
* A file of several runs (a guidellm sweep, vLLM ``--append-result`` or SGLang JSON lines) stands
  for one row per run, each at the naming row's place, unless the row's typed ``source`` is the
  label of one of them (``sglang.jsonl, line 2 (sglang bench_serving)``, as the output writes it):
  then that run only. So the output, which has one row per run, each naming its file and run, is
  a valid input again.
* One run named by two rows is a problem (one row per run).
* A file that is not there is a problem, unless every required cell of the row is typed (an
  output, whose rows hold every value, read from another folder): then a note, and the typed row.
* Problems are located at the row's ``file`` cell and name the file as typed
  (``Measurements!X3: results/vllm.json: no such file ...``): a missing, unreadable, truncated or
  unknown file, failed requests, a run also named by another row; every one at once.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from planner.core.names import and_more
from planner.catalog.lookup import GPU, MODEL
from planner.core import schema
from planner.core.errors import Problem
from planner.core.places import Place
from planner.inputs.places import cell_place
from planner.loadtests import LoadTestError, load
from planner.loadtests.rows import Options, build_rows, resolve

NAME_COLUMNS = ("model", "gpu", "tp")  # typed: the options; compared with the file's own below
REL = 1e-9                             # a typed number within this of the file's is the same

# the hints of planner.loadtests.rows name command-line options; in a workbook row they are cells
_HINTS = (
    (r"rerun the test, or give --allow-failed to keep the row( \(its note says so\))?",
     "rerun the test, or write the row with planner measurements --allow-failed and type it"),
    (r"give --model NAME \(a Models row or a catalog model\)", "type it in this row's model cell"),
    (r"give --(model|gpu) with one", r"type the \1 in this row"),
    (r"give --gpu and --tp", "type gpu and tp in this row"),
    (r" \(--gpu NAME\)| \(--tp N\)", ""),
    (r": give (them|it) as options?, or --input WORKBOOK whose Workloads run (.*) on one deployment$",
     r": type \1 in this row, or run \2 on one deployment in Workloads"),
)


def _hint(message: str) -> str:
    for pat, rep in _HINTS:
        message = re.sub(pat, rep, message)
    return message


def resolve_path(input_path: Path, text: str) -> Path:
    """``text`` as a path: absolute as given, else relative to the input workbook's folder."""
    p = Path(str(text).strip())
    return p if p.is_absolute() else Path(input_path).resolve().parent / p


def _parts(text: Any) -> list[str]:
    return [t.strip() for t in str(text).split(";") if t.strip()]


def _relocate(place: str, names: dict[str, str]) -> str:
    """A loadtests place (``vllm.json line 2``, ``vllm.json: completed``, ``a.prom -> b.prom``) with
    each file named as typed: a structured place keeps its parts (line, key path, label) in the
    typed file; a scrape pair (two files' names) is renamed name by name."""
    if isinstance(place, Place) and place.sheet in names:
        return place.in_file(names[place.sheet])
    out = []
    for token in place.split(" -> "):
        for name, typed in names.items():
            if token == name or token.startswith(name + " "):
                token = typed + token[len(name):]
                break
        out.append(token)
    return " -> ".join(out)


def missing_columns(title: str, cols, col_of: dict[str, int], rows: list[int], records: list[dict]) -> list[Problem]:
    """Required columns absent from a Measurements header that has ``file``: a problem only when a
    row names no file to take them from."""
    bare = [r for r, rec in zip(rows, records) if rec.get("file") in (None, "")]
    if not bare:
        return []
    why = f" (row {bare[0]} names no load-test file to take it from)"
    return [Problem(Place.at_row(title, 1), f"required column {c.name!r} is missing{why}")
            for c in cols if c.required is True and c.name not in col_of]


def _differs(col, typed: Any, got: Any) -> bool:
    if col.kind == schema.TEXT or col.kind == schema.CHOICE:
        return str(typed).strip().lower() != str(got).strip().lower()
    a, b = float(typed), float(got)
    return abs(a - b) > REL * max(abs(a), abs(b), 1e-300)


def _show(v: Any) -> str:
    return f"{v:,.6g}" if isinstance(v, float) else str(v)


def fill_measurements(path: Path, table, models, gpus, workloads, problems: list[Problem],
                      notes: list[str]) -> None:
    """Fill, in place, the rows of the Measurements ``table`` whose ``file`` cell names result files
    (see the module docstring); sets ``table.filled`` and adds to ``table.warnings``."""
    if "file" not in table.positions or not any(r.get("file") for r in table.records):
        return
    cols = [c for c in schema.columns(schema.MEAS) if c.name != "file"]
    from planner.inputs.cells import parse_value  # local: the reader imports this module

    book = SimpleNamespace(models=models, gpus=gpus, workloads=workloads, path=Path(path)) \
        if models is not None and gpus is not None and workloads is not None else None
    records, rows, filled, index_of = [], [], [], {}
    runs_seen: dict[tuple, str] = {}     # run fingerprint -> "row N (file run)"
    for i, rec in enumerate(table.records):
        index_of[i] = []
        text = rec.get("file")
        if text in (None, "") or not _parts(text):
            index_of[i].append(len(records))
            records.append(rec), rows.append(table.rows[i]), filled.append({})
            continue
        here = cell_place(table, "file", i)
        row_no = table.rows[i]
        paths, names, bad = [], {}, False
        complete = all(rec.get(c.name) is not None for c in cols if c.required is True)
        for part in _parts(text):
            p = resolve_path(path, part)
            if not p.exists():
                where = (f"{part}: no such file (looked for {p}; a relative path is relative to the input "
                         f"workbook's folder)")
                if complete:  # every value typed (an output read from another folder): the file is not needed
                    notes.append(f"{here}: {where}: the row's typed values are used")
                else:
                    problems.append(Problem(here, where))
                bad = True
                continue
            paths.append(p)
            names[p.name], names[str(p)] = part, part
        if bad:  # the row stays as typed; its problems are said, nothing is planned
            index_of[i].append(len(records))
            records.append(rec), rows.append(table.rows[i]), filled.append({})
            continue
        loaded = load(paths)
        chosen = _chosen(loaded.runs, rec.get("source"))
        if chosen is not None:  # the typed source names one run of the file: that run only
            loaded.runs = [chosen]
        located = [Problem(here, f"{_relocate(e.place, names)}: {_hint(e.message)}") for e in loaded.problems]
        typed_tp = rec.get("tp")
        opts = Options(model=rec.get("model"), gpu=rec.get("gpu"), tp=int(typed_tp) if typed_tp else None,
                       hit=rec.get("hit"), workbook=book)
        got_rows, run_notes, row_problems = build_rows(loaded.runs, opts)
        located += [Problem(here, f"{_relocate(e.place, names)}: {_hint(e.message)}") for e in row_problems]
        if located or not got_rows:
            problems.extend(located or [Problem(here, f"{text}: holds no run")])
            index_of[i].append(len(records))
            records.append(rec), rows.append(table.rows[i]), filled.append({})
            continue
        for run, row in zip(loaded.runs, got_rows):  # no problem: one row per run, in order
            label = _relocate(run.place, names)
            fp = run.fingerprint()
            if fp in runs_seen:
                problems.append(Problem(here, f"{label}: is the same run as {runs_seen[fp]}: one row per run"))
            runs_seen.setdefault(fp, f"row {row_no} ({label})")
            prov = f"from the load-test file {label} ({run.tool})"
            mine = [n for pl, n in run_notes if pl == run.place]
            deployment = next((n for n in mine if "from the Workloads of" in n), None)
            new, came = dict(rec), {}
            for c in cols:
                v = row.get(c.name)
                if v is None:
                    continue
                value, err = parse_value(c, v, None)
                if err:
                    problems.append(Problem(cell_place(table, c.name, i), f"{label}: {err}"))
                    continue
                if rec.get(c.name) is None:
                    new[c.name] = value
                    came[c.name] = ("the file and run this row was filled from" if c.name == "source" else
                                    f"{deployment} (the file does not say; {label})"
                                    if deployment and c.name in ("gpu", "tp") else prov)
                elif c.name not in NAME_COLUMNS + ("source",) and _differs(c, rec[c.name], value):
                    table.warnings.append((cell_place(table, c.name, i),
                                           f"{c.name} {_show(rec[c.name])} is typed; {label} says {_show(value)}: "
                                           f"the typed value is used"))
            _name_contradictions(table, i, rec, run, label, book)
            for note in mine:
                # the option notes are said as typed-cell warnings above, a blank hit as a problem below,
                # the deployment in the gpu/tp comments
                if "from --" not in note and "--hit" not in note and not note.startswith("hit is blank") \
                        and note != deployment:
                    notes.append(f"{here}: {label}: {note}")
            if new.get("concurrency") is None and new.get("request_rate") is None:
                # a file that names no load (a rate ramp, a trace replay, a strategy without a cap): a
                # blank load shape would be read as one request at a time, which the run was not
                problems.append(Problem(cell_place(table, "concurrency", i),
                                        f"concurrency or request_rate is required: {label} does not give its "
                                        f"load shape; type concurrency (a closed loop) or request_rate (an "
                                        f"open loop), else the row would be read as one request at a time"
                                        + (f" (the file holds {len(loaded.runs)} runs: give this one a row of "
                                           f"its own, its source typed as {run.source!r})"
                                           if len(loaded.runs) > 1 else "")))
            for c in cols:
                if c.required is True and new.get(c.name) is None:
                    why = (f"{label} carries no prefix-cache hit ratio; type it (0 with prefix caching off)"
                           if c.name == "hit" else f"{label} does not give it; type it")
                    problems.append(Problem(cell_place(table, c.name, i), f"{c.name} is required: {why}"))
            index_of[i].append(len(records))
            records.append(new), rows.append(table.rows[i]), filled.append(came)
    table.plain_ones = {(col, j) for col, k in table.plain_ones for j in index_of.get(k, ())}
    table.records[:], table.rows[:] = records, rows
    table.filled = filled


def _chosen(runs: list, source: Any):
    """The run whose ``source`` label (as ``planner measurements`` and the output write it) the row's
    typed ``source`` is, when the file holds several; else None (every run)."""
    if source is None or len(runs) < 2:
        return None
    want = str(source).strip().lower()
    return next((r for r in runs if r.source.strip().lower() == want), None)


def _name_contradictions(table, i: int, rec: dict, run, label: str, book) -> None:
    """A typed model, gpu or tp the file's own says otherwise: warned at the cell (the typed one is used)."""
    for col, kind, theirs in (("model", MODEL, run.model), ("gpu", GPU, run.gpu)):
        mine = rec.get(col)
        if mine is None or not theirs:
            continue
        opts = Options(workbook=book)
        try:
            same = resolve(str(mine), kind, opts, "", col) == resolve(str(theirs), kind, opts, "", col)
        except LoadTestError:
            same = str(mine).strip().lower() == str(theirs).strip().lower()
        if not same:
            table.warnings.append((cell_place(table, col, i), f"{col} {mine!r} is typed; {label} says {theirs!r}: "
                                                              f"the typed {col} is used"))
    if rec.get("tp") is not None and run.tp is not None and int(rec["tp"]) != int(run.tp):
        table.warnings.append((cell_place(table, "tp", i), f"tp {int(rec['tp'])} is typed; {label}'s metadata says "
                                                            f"{int(run.tp)}: the typed tp is used"))


def _from_files(t) -> list[dict[str, str]]:
    """The cells filled from load-test files (not those the planner filled, planner.plan.trust:
    their comment starts "blank: the planner")."""
    return [{k: v for k, v in c.items() if not str(v).startswith("blank: the planner")} for c in t.filled]


def _filled_cells(p_in) -> dict[str, list[str]]:
    t = p_in.optional.get(schema.MEAS)
    per: dict[str, list[str]] = {}
    if t is None:
        return per
    for i, came in enumerate(_from_files(t)):
        for col in came:
            place = cell_place(t, col, i)
            if place not in per.setdefault(col, []):
                per[col].append(place)
    return per


def filled_note(p_in) -> str | None:
    """The ``planner: filled:`` line of the Measurements cells taken from load-test files."""
    t = p_in.optional.get(schema.MEAS)
    if t is None:
        return None
    files = _from_files(t)
    total = sum(len(c) for c in files)
    if not total:
        return None
    per = _filled_cells(p_in)
    parts = []
    for col, cells in per.items():
        n = sum(col in c for c in files)
        more = and_more(len(cells), 3, brackets=False)
        parts.append(f"{col} {n} ({', '.join(cells[:3])}{more})")
    rows = sum(1 for c in files if c)
    return (f"Measurements: {total} cell(s) of {rows} row(s) filled from the load-test files their file cell names "
            f"(each is green italic in the output's Measurements sheet, with a comment naming the file and run): "
            + "; ".join(parts))


def run_rows(p_in) -> dict[str, str]:
    """The Run sheet's line on the Measurements cells filled from load-test files."""
    t = p_in.optional.get(schema.MEAS)
    files = _from_files(t) if t is not None else []
    total = sum(len(c) for c in files)
    if not total:
        return {}
    rows = sum(1 for c in files if c)
    return {"Measurements cells filled from load-test files": f"{total} in {rows} row(s): green italic cells, each "
                                                                f"with a comment naming the file and run"}
