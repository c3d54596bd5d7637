"""Shared fixtures and helpers: running the planner, LibreOffice recalculation, edited copies of
the example workbook, problem lines of stderr, reading workbooks back."""

from __future__ import annotations

import collections
import contextlib
import io
import math
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import openpyxl
import pytest

import libreoffice
from libreoffice import make_profile, recalculate, recalculate_many, soffice

_LOAD_WORKBOOK = openpyxl.load_workbook


def load_workbook(filename, read_only=False, keep_vba=False, data_only=False, keep_links=True, rich_text=False):
    """``openpyxl.load_workbook`` (installed in its place for every test), which also opens a
    values-only recalculated copy (tests/libreoffice.py ``recalculate_many``, ``store`` False) as
    the workbook of the values LibreOffice computed; such a copy has no formulas, styles or file,
    so opening it without ``data_only`` is refused with what to do instead."""
    if libreoffice.is_values_copy(filename):
        if not data_only:
            raise AssertionError(f"{filename} is a values-only recalculated copy: open it with data_only=True, "
                                 "or recalculate with store=True to read its formulas, styles or package")
        return libreoffice.recalculated_book(filename)
    return _LOAD_WORKBOOK(filename, read_only=read_only, keep_vba=keep_vba, data_only=data_only,
                          keep_links=keep_links, rich_text=rich_text)


openpyxl.load_workbook = openpyxl.reader.excel.load_workbook = load_workbook

# CI (CI=true, as .ci/run is run) draws the same property-test examples every time, so a landing
# is judged on the examples the developer ran; tests/fuzz_long.sh draws new ones.
from hypothesis import settings as _hypothesis_settings  # noqa: E402

_hypothesis_settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    _hypothesis_settings.load_profile("ci")

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "workbooks" / "example.xlsx"


def planner_env(env_extra: dict | None = None, drop: tuple[str, ...] = ()) -> dict:
    """Environment for running the planner as a subprocess: the repository importable,
    PLANNER_DEBUG (tracebacks) and ``drop`` removed, ``env_extra`` added."""
    env = {k: v for k, v in os.environ.items() if k not in ("PLANNER_DEBUG", *drop)}
    env.update(env_extra or {})
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    return env


def run_planner(*args, cwd: Path, env_extra: dict | None = None, drop: tuple[str, ...] = (),
                timeout: float = 300) -> subprocess.CompletedProcess:
    """``python -m planner ARGS`` in ``cwd``, output captured as text."""
    return subprocess.run([sys.executable, "-m", "planner", *map(str, args)], cwd=cwd,
                          env=planner_env(env_extra, drop), capture_output=True, text=True, timeout=timeout)


def run_cli(*args, cwd: Path, env_extra: dict | None = None, drop: tuple[str, ...] = ()
            ) -> subprocess.CompletedProcess:
    """``planner ARGS`` in this process (``planner.cli.main.main``), in ``cwd``, output captured: the
    same exit status and output as :func:`run_planner` without a new interpreter (environment:
    PLANNER_DEBUG and ``drop`` removed, ``env_extra`` added, all restored after). Use
    ``run_planner`` where the process itself is under test (signals, a real exit status)."""
    from planner.cli import main as cli

    argv = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    saved = dict(os.environ)
    for k in ("PLANNER_DEBUG", *drop):
        os.environ.pop(k, None)
    os.environ.update(env_extra or {})
    here = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.main(argv)
            except SystemExit as e:  # argparse: --help, usage errors
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    finally:
        os.chdir(here)
        for s, h in handlers.items():
            signal.signal(s, h)
        os.environ.clear()
        os.environ.update(saved)
    return subprocess.CompletedProcess(["planner", *argv], code, out.getvalue(), err.getvalue())


def edited_example(dest: Path, edit: Callable[[openpyxl.Workbook], Any] | None = None,
                   workloads: int | None = None) -> tuple[Path, Any]:
    """A copy of the example workbook saved at ``dest`` (folders made) after ``edit(wb)``, cut
    to its first ``workloads`` workloads first when given (:func:`trim_workloads`);
    returns ``(dest, what edit returned)``."""
    wb = openpyxl.load_workbook(EXAMPLE)
    for sheet in ("Demand", "Scenarios"):  # they name the example's workloads, which edits rename
        if sheet in wb.sheetnames:
            del wb[sheet]
    if workloads is not None:
        trim_workloads(wb, workloads)
    extra = edit(wb) if edit else None
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    wb.save(dest)
    return dest, extra


def repeat_workloads(wb: openpyxl.Workbook, n: int, name: str = "{name}-{i}",
                     row_edit: Callable[[list, int], None] | None = None) -> list[int]:
    """Append copies of the Workloads rows (cycling) until the sheet has ``n`` data rows; copy
    ``i`` (0-based) is named ``name.format(name=original, i=i)`` and may be changed in place by
    ``row_edit(values, i)``. Returns the sheet rows appended."""
    ws = wb["Workloads"]
    rows = [[c.value for c in r] for r in ws.iter_rows(min_row=2)]
    added = []
    for i in range(n - len(rows)):
        r = list(rows[i % len(rows)])
        r[0] = name.format(name=r[0], i=i)
        if row_edit:
            row_edit(r, i)
        ws.append(r)
        added.append(ws.max_row)
    return added


def trim_workloads(wb: openpyxl.Workbook, n: int, also: tuple[int, ...] = ()) -> None:
    """Keep only the first ``n`` Workloads rows and the sheet rows ``also`` (a small workbook for
    a LibreOffice test where the whole example proves nothing more: its recalculation costs
    ~7.8 s CPU, ~4.9 s with 3 workloads)."""
    ws = wb["Workloads"]
    for r in range(ws.max_row, n + 1, -1):  # bottom up: the rows above keep their numbers
        if r not in also:
            ws.delete_rows(r)


def shared_file(tmp_path_factory, name: str, make: Callable[[Path], Any]) -> Path:
    """A file made ONCE per test session and shared by every xdist worker: ``make(path)`` writes
    it, under a lock, in the workers' common base folder (pytest-xdist's documented pattern,
    "Making session-scoped fixtures execute only once": ``getbasetemp().parent`` and a file
    lock; here ``fcntl.flock`` from the standard library). Without xdist it is made in this
    session's own base folder. Read-only for the tests: copy it before changing it."""
    import fcntl

    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "shared"
    folder.mkdir(exist_ok=True)
    target = folder / name
    with open(folder / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed
        if not target.exists():
            part = folder / f"part-{name}"  # the same suffix (writers check it); renamed when whole
            make(part)
            os.replace(part, target)
    return target


@pytest.fixture(scope="session")
def example_output(tmp_path_factory) -> Path:
    """The bundled example's output workbook, ``write_output(build_plan(EXAMPLE), path)``, written
    once for the whole session (all workers: :func:`shared_file`; a write costs ~2.6 s CPU)
    and read by test_recalc, test_speed, test_print, test_print_pages, test_sensitivity and
    test_live_cache. Read-only: copy it before editing."""
    def make(path: Path) -> None:
        from planner.plan.build import build_plan
        from planner.workbook.writer import write_output

        write_output(build_plan(EXAMPLE), path)

    return shared_file(tmp_path_factory, "example-plan.xlsx", make)


SMALL_WORKLOADS = 3


@pytest.fixture(scope="session")
def small_example(tmp_path_factory) -> Path:
    """The example cut to its first SMALL_WORKLOADS workloads (no Demand, no Scenarios sheet),
    read-only: for tests of the command line, the transaction, the memo files and the email,
    which reach the same code paths on it as on the whole example (every output file, the
    charts, the staging and commit) in about a third of the time (``planner run``: ~1.5 s
    CPU against ~4.5 s with charts, 0.6 s against 2.2 s with ``--no-memo``). The whole
    example is still planned by test_cli's run without input and recalculated by test_recalc."""
    path, _ = edited_example(tmp_path_factory.mktemp("small-example") / "small.xlsx", workloads=SMALL_WORKLOADS)
    return path


def problem_lines(stderr: str) -> list[str]:
    """The problem lines of an input error on stderr (indented by two spaces), without the indent."""
    return [line[2:] for line in stderr.splitlines() if line.startswith("  ")]


@pytest.fixture(autouse=True)
def _libreoffice_mark_tells_the_truth(request):
    """A test that starts LibreOffice must carry the ``libreoffice`` mark (so ``-m "not libreoffice"``
    is a quick run without it): tests/libreoffice.py refuses to start it for an unmarked test."""
    import libreoffice

    libreoffice.ALLOWED = request.node.get_closest_marker("libreoffice") is not None
    yield
    libreoffice.ALLOWED = None


@pytest.fixture(scope="session")
def lo_profile(tmp_path_factory) -> Path:
    # Not a skip: without LibreOffice the recalculation tests must fail (.ci/run installs it).
    assert soffice() is not None, "LibreOffice (soffice) is required: apt-get install libreoffice-calc-nogui"
    return make_profile(tmp_path_factory.mktemp("lo-profile"))


@pytest.fixture
def recalc(lo_profile, tmp_path):
    """recalc(path) -> path of a copy recalculated by LibreOffice headless (values-only, opened with
    data_only=True; ``store=True`` for an .xlsx LibreOffice stores); recalc(a, b, ...) ->
    their copies, in order, from ONE LibreOffice process (libreoffice.recalculate_many: the
    start is paid once: 0.2-1.5 s CPU and 1-3 s wall saved per workbook, measured)"""
    counter = iter(range(1000))

    def run(path: Path, *more: Path, store: bool = False):
        out_dir = tmp_path / f"recalc-{next(counter)}"
        if not more:
            return recalculate(Path(path), out_dir, profile=lo_profile, store=store)
        return recalculate_many([path, *more], out_dir, profile=lo_profile, store=store)

    return run


def header_index(ws) -> dict[str, int]:
    """Column name (the part before ' [unit]') -> 1-based column index, from row 1."""
    out = {}
    for cell in next(ws.iter_rows(min_row=1, max_row=1)):
        if cell.value is not None:
            out[str(cell.value).split(" [")[0]] = cell.column
    return out


def edit_output_and_input(out: Path, src: Path, edits, tmp_path: Path) -> tuple[Path, Path]:
    """The same cell edits, ``(sheet, row, column name, value)``, made in an output workbook and
    in its input, saved as copies: the output to be recalculated (:func:`edit_cells`: its XML
    edited in place, every other part as the planner wrote it), the input to be planned afresh."""
    wb_in = openpyxl.load_workbook(src)
    cells = []
    for sheet, row, name, value in edits:
        ws = wb_in[sheet]
        ws.cell(row, header_index(ws)[name]).value = value
        col = header_index(read_only_book(out, data_only=True)[sheet])[name]
        cells.append((sheet, f"{openpyxl.utils.get_column_letter(col)}{row}", value))
    e_out, e_in = tmp_path / "out-edited.xlsx", tmp_path / "in-edited.xlsx"
    edit_cells(out, e_out, cells)
    wb_in.save(e_in)
    return e_out, e_in


def edit_output(out: Path, dest: Path, edit: Callable[[openpyxl.Workbook], Any], *sheets: str) -> Path:
    """``edit(book)`` run on the named sheets of the output ``out`` as openpyxl sheets of values
    (:func:`value_book`), and the cells it changed written into a copy at ``dest`` by
    :func:`edit_cells`: an edit written for an openpyxl workbook of the output, without its load
    and save (0.4-1.4 s CPU, measured) and without dropping the other cached values."""
    book = value_book(out, *sheets)
    before = {s: [list(r) for r in book[s].iter_rows(values_only=True)] for s in sheets}
    edit(book)
    cells = []
    for s in sheets:
        for i, row in enumerate(book[s].iter_rows(values_only=True)):
            old = before[s][i] if i < len(before[s]) else []
            for j, v in enumerate(row):
                if v != (old[j] if j < len(old) else None):
                    cells.append((s, f"{openpyxl.utils.get_column_letter(j + 1)}{i + 1}", v))
    assert cells, "the edit changed no cell"
    return edit_cells(out, dest, cells)


def _sheet_parts(z: "zipfile.ZipFile") -> dict[str, str]:
    """Sheet name -> its zip member, from workbook.xml and its relationships."""
    import html
    import re

    wbxml = z.read("xl/workbook.xml").decode()
    rels = dict(re.findall(r'<Relationship [^>]*?Id="(rId\d+)"[^>]*?Target="([^"]+)"', z.read("xl/_rels/workbook.xml.rels").decode()))
    out = {}
    for attrs in re.findall(r"<sheet ([^>]*)/>", wbxml):
        name, rid = re.search(r'name="([^"]*)"', attrs).group(1), re.search(r'r:id="(rId\d+)"', attrs).group(1)
        out[html.unescape(name)] = "xl/" + rels[rid].lstrip("/").removeprefix("xl/")
    return out


def edit_cells(src: Path, dest: Path, cells) -> Path:
    """A copy of the .xlsx ``src`` at ``dest`` with the cells ``(sheet, "T2", value)`` set to a
    number, a text or blank (None), their style kept: the sheet XML is edited in place, so every
    other part (cached values, styles, comments, charts) stays as the planner wrote it. openpyxl's
    load and save of an output does the same edit in 0.4 s CPU for a 3-workload output and 1.4 s for
    the example (measured) and drops every cached value. Each cell must be written in the sheet
    (XlsxWriter writes every styled input cell, blank or not); a cell that is not is an error."""
    import html
    import re
    import zipfile

    by_part: dict[str, list] = {}
    with zipfile.ZipFile(src) as zin:
        parts = _sheet_parts(zin)
        for sheet, ref, value in cells:
            by_part.setdefault(parts[sheet], []).append((ref, value))
        with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zout:
            for info in zin.infolist():
                data = zin.read(info.filename)
                for ref, value in by_part.get(info.filename, ()):
                    pat = re.compile(rb'<c r="' + ref.encode() + rb'"((?: [a-z]+="[^"]*")*?)(?:/>|>.*?</c>)', re.S)
                    m = pat.search(data)
                    assert m is not None, f"{info.filename}: cell {ref} is not written"
                    style = re.search(rb' s="\d+"', m.group(1))
                    s_attr = style.group(0) if style else b""
                    if value is None:
                        cell = b'<c r="%s"%s/>' % (ref.encode(), s_attr)
                    elif isinstance(value, bool):
                        cell = b'<c r="%s"%s t="b"><v>%d</v></c>' % (ref.encode(), s_attr, int(value))
                    elif isinstance(value, (int, float)):
                        cell = b'<c r="%s"%s><v>%s</v></c>' % (ref.encode(), s_attr, repr(float(value)).encode())
                    else:
                        cell = b'<c r="%s"%s t="inlineStr"><is><t>%s</t></is></c>' % (
                            ref.encode(), s_attr, html.escape(str(value), quote=False).encode())
                    data = data[:m.start()] + cell + data[m.end():]
                zout.writestr(info, data)
    return dest


_READ_ONLY_BOOKS: "collections.OrderedDict[tuple, openpyxl.Workbook]" = collections.OrderedDict()


def read_only_book(path: Path, data_only: bool) -> openpyxl.Workbook:
    """``load_workbook(path, data_only=data_only, read_only=True)``, kept open for the next call on
    the same file (the last 8 files of this process): a test file reading several sheets of one
    output (test_recalc: Results, Resolved, each sensitivity table, the Tornado) pays the load
    (the workbook, its shared strings and styles: ~60 ms of the example output's ~80 ms for one
    sheet) once. A read-only sheet is parsed again from the zip at every ``iter_rows``, so what is
    kept is only the opened package. The key is the file's identity and state (inode, size,
    mtime and ctime in ns): a file replaced (a new inode) or written again (a new ctime) is a new
    key, loaded afresh. Shared: read it, never close it (the cache does, at eviction and at the
    end of the session). A values-only recalculated copy is kept the same way."""
    if libreoffice.is_values_copy(path):
        key = (os.path.realpath(path), "values")
        wb = _READ_ONLY_BOOKS.pop(key, None) or libreoffice.recalculated_book(path)
        _READ_ONLY_BOOKS[key] = wb
        return wb
    st = os.stat(path)
    key = (os.path.realpath(path), data_only, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    wb = _READ_ONLY_BOOKS.pop(key, None)
    if wb is None:
        wb = openpyxl.load_workbook(path, data_only=data_only, read_only=True)
    _READ_ONLY_BOOKS[key] = wb  # the most recent last
    while len(_READ_ONLY_BOOKS) > 8:
        _READ_ONLY_BOOKS.popitem(last=False)[1].close()
    return wb


def pytest_sessionfinish(session, exitstatus):
    while _READ_ONLY_BOOKS:
        _READ_ONLY_BOOKS.popitem()[1].close()


def sheet_values(path: Path, sheet: str) -> list[dict]:
    """Rows of a table sheet (header row 1) as dicts of cached values. Read-only mode: only
    that sheet's XML is parsed (a full load parses every sheet of a large output each call); the
    opened package is reused for the same unchanged file (:func:`read_only_book`)."""
    rows = read_only_book(path, data_only=True)[sheet].iter_rows(values_only=True)
    head = next(rows, ())
    idx = {str(h).split(" [")[0]: j for j, h in enumerate(head) if h is not None}
    return [{name: (r[j] if j < len(r) else None) for name, j in idx.items()} for r in rows]


def value_book(path: Path, *sheets: str, formulas: bool = False) -> openpyxl.Workbook:
    """The cached values of the named sheets of ``path``, as an in-memory workbook (``wb[sheet]``
    answers ``cell``, ``["B1"]``, ``iter_rows``, ``values``, ``max_row`` as a loaded sheet does;
    values only, no styles). Each sheet is read in openpyxl's read-only mode: only its XML is
    parsed, where ``load_workbook(path, data_only=True)`` parses and styles every sheet of the
    output (the example's 14 MB of sheet XML, 8 MB of it Sensitivity_Hit) to read one
    (~0.9 s CPU against ~0.06 s). ``formulas=True``: the formulas instead of the cached values."""
    src = read_only_book(path, data_only=not formulas)
    book = openpyxl.Workbook()
    book.remove(book.active)
    for name in sheets:
        ws = book.create_sheet(name)
        for row in src[name].iter_rows(values_only=True):
            ws.append(row)
    return book


def same_value(expected, got, rel: float = 1e-9) -> bool:
    """Python value vs spreadsheet value: numbers to rel 1e-9, NaN/None/'' as blank."""
    blank = lambda v: v is None or v == "" or (isinstance(v, float) and math.isnan(v))
    if blank(expected) or blank(got):
        return blank(expected) and blank(got)
    if isinstance(expected, float) and math.isinf(expected):  # a target no count meets: stored as text
        return got == "unreachable"
    if isinstance(expected, str) or isinstance(got, str):
        return str(expected) == str(got)
    return math.isclose(float(expected), float(got), rel_tol=rel, abs_tol=1e-9)
