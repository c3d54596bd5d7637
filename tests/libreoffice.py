"""Recalculate a workbook in LibreOffice headless (used by the tests and the benchmark).

LibreOffice normally trusts the values cached in an .xlsx. A private profile whose
``registrymodifications.xcu`` sets ``OOXMLRecalcMode`` to 0 ("always recalculate")
forces every formula to be computed on load. The tests then read LibreOffice's own values:
in bulk from the running LibreOffice (a values-only copy, :func:`recalculate_many`), or,
with ``store=True`` (and without python3-uno), from the .xlsx LibreOffice stores again,
read back with openpyxl.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

_XCU = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Calc/Formula/Load"><prop oor:name="OOXMLRecalcMode" oor:op="fuse"><value>0</value></prop></item>
<item oor:path="/org.openoffice.Office.Calc/Formula/Load"><prop oor:name="ODFRecalcMode" oor:op="fuse"><value>0</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Misc"><prop oor:name="FirstRun" oor:op="fuse"><value>false</value></prop></item>
</oor:items>
"""


ALLOWED: bool | None = None  # set per test by tests/conftest.py: False for a test without the mark


def soffice() -> str | None:
    """Path of the LibreOffice binary, or None (AssertionError in a test without the libreoffice mark)."""
    assert ALLOWED is not False, "this test starts LibreOffice: mark it @pytest.mark.libreoffice"
    for name in ("soffice", "libreoffice"):
        found = shutil.which(name)
        if found:
            return found
    return None


def make_profile(folder: Path) -> Path:
    """A LibreOffice user profile that recalculates every formula on load."""
    user = folder / "user"
    user.mkdir(parents=True, exist_ok=True)
    (user / "registrymodifications.xcu").write_text(_XCU, encoding="utf-8")
    return folder


def recalculate(src: Path, out_dir: Path, profile: Path | None = None, timeout: float = 300,
                charts: bool = False, comments: bool = False, store: bool = False) -> Path:
    """Load ``src`` in LibreOffice with forced recalculation; its copy in ``out_dir`` is values-only
    (with the bridge) or an .xlsx LibreOffice stores (``store=True``, or without the bridge).

    Returns the path of the recalculated copy (same file name). ``src`` is not modified.
    ``charts``, ``comments``, ``store``: as :func:`recalculate_many`.
    """
    return recalculate_many([src], out_dir, profile, timeout, charts=charts, comments=comments, store=store)[0]


_DRAWING_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/drawing"


_COMMENT_RELS = ("http://schemas.openxmlformats.org/officeDocument/2006/relationships/comments",
                 "http://schemas.openxmlformats.org/officeDocument/2006/relationships/vmlDrawing")


def without_charts(src: Path, dest: Path, comments: bool = True) -> Path:
    """A copy of the .xlsx ``src`` at ``dest`` without its charts: every ``xl/charts/`` part, every
    ``xl/drawings/drawingN.xml`` (the chart anchors), the sheets' ``<drawing>`` elements, their
    relationships and content types; with ``comments`` False also without the cell comments
    (``xl/commentsN.xml``, their ``vmlDrawing`` parts and ``<legacyDrawing>`` elements). Nothing a
    formula reads is in those parts. LibreOffice spends about a third of a small output's load and
    store on the charts and more than half of the example's store (measured: 2.5 -> 1.8 s and
    6.6 -> 4.1 s a workbook), and about a quarter of what is left on the comments (1.6 -> 1.2 s
    load, 1.7 -> 1.3 s store of the small example, means of four). Stored uncompressed
    (LibreOffice reads it as fast; the copy is deleted with the test's folder)."""
    import re
    import zipfile

    parts = [r"xl/charts/", r"xl/drawings/drawing\d+\.xml$", r"xl/drawings/_rels/drawing\d+\.xml\.rels$"]
    rels = [_DRAWING_REL]
    if not comments:
        parts += [r"xl/comments\d+\.xml$", r"xl/drawings/vmlDrawing\d+\.vml$"]
        rels += list(_COMMENT_RELS)
    drop = re.compile("|".join(parts))
    rel = re.compile(rb'<Relationship [^>]*Type="(?:' + b"|".join(re.escape(r.encode()) for r in rels) + rb')"[^>]*/>')
    element = re.compile(rb'<drawing r:id="[^"]*"/>' + (b"" if comments else rb'|<legacyDrawing r:id="[^"]*"/>'))
    override = re.compile(rb'<Override PartName="/xl/(?:charts/chart|drawings/drawing' + (b"" if comments else b"|comments")
                          + rb')\d+\.xml"[^>]*/>')
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dest, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            name = info.filename
            if drop.match(name):
                continue
            data = zin.read(name)
            if re.fullmatch(r"xl/worksheets/sheet\d+\.xml", name):
                data = element.sub(b"", data)
            elif re.fullmatch(r"xl/worksheets/_rels/sheet\d+\.xml\.rels", name):
                data = rel.sub(b"", data)
            elif name == "[Content_Types].xml":
                data = override.sub(b"", data)
            zout.writestr(name, data)
    return dest


def recalculate_many(srcs, out_dir: Path, profile: Path | None = None, timeout: float = 300,
                     charts: bool = False, comments: bool = False, store: bool = False,
                     values_too: bool = False) -> list[Path]:
    """:func:`recalculate` for several workbooks. With a ``profile`` (the tests' session profile) and
    LibreOffice's ``uno`` module for the system Python (Debian's python3-uno), the workbooks go to
    this process's one running LibreOffice (:class:`_Bridge`, tests/lo_bridge.py): its start is
    paid once per test process instead of once per call. Otherwise ``soffice --convert-to`` takes
    them all in ONE new process (measured, alternating on one profile: three small outputs 17.6 s
    CPU in three calls, 14.6 s in one; two 6.6 -> 6.4 s; three one-cell workbooks 4.5 -> 1.9 s).
    Either way every formula is recalculated on load (the profile's OOXMLRecalcMode 0). The file
    names must differ (they keep their names in ``out_dir``). Returns the recalculated copies, in
    order. ``charts`` and ``comments`` False (the default): LibreOffice gets a copy without the
    charts and the cell comments (:func:`without_charts`; the copies come back without them);
    ``True`` for a test that reads them in the recalculated copy (``charts`` keeps both).

    ``store`` False (the default) with the bridge: LibreOffice does not store the copy; the bridge
    reads its values over UNO (tests/lo_bridge.py ``sheet_values``) and the returned path names a
    *values-only copy*: ``openpyxl.load_workbook(path, data_only=True)`` (patched by
    tests/conftest.py) and conftest's ``value_book``/``sheet_values`` answer from those values
    (:func:`recalculated_book`: what openpyxl reads from LibreOffice's own .xlsx store, the same
    cell for cell, checked by test_recalc), while no file exists at the path, so a test that reads
    formulas, styles or the package fails at once: it asks for ``store=True``. The store and its
    reading with openpyxl are about half of each recalculation (measured: the small example's
    store 0.5-0.8 s and the whole example's 1.5-1.6 s, against 0.12-0.2 s for the values).
    ``charts`` or ``comments`` True implies ``store``. ``values_too`` with a store: the values are
    read as well, as the values-only copy :func:`values_twin` of each stored copy (for the test
    that holds the two the same)."""
    srcs = [Path(s) for s in srcs]
    names = [s.stem for s in srcs]
    assert len(set(names)) == len(names), f"two workbooks of one batch share a name: {names}"
    binary = soffice()
    if binary is None:
        raise RuntimeError("LibreOffice (soffice) is not installed")
    out_dir.mkdir(parents=True, exist_ok=True)
    if not charts:
        bare = out_dir / ".without-charts"
        bare.mkdir(exist_ok=True)
        srcs = [without_charts(s, bare / (s.stem + ".xlsx"), comments) if s.suffix.lower() == ".xlsx" else s
                for s in srcs]
    results = [out_dir / (name + ".xlsx") for name in names]
    if profile is not None and _Bridge.usable():
        bridge = _Bridge.for_profile(binary, profile)
        for src, out in zip(srcs, results):
            stored = store or charts or comments  # charts and comments are read from the package
            if stored and not values_too:
                bridge.convert(src, out, timeout)
                continue
            values = out_dir / ".values" / (out.stem + ".json")
            values.parent.mkdir(exist_ok=True)
            bridge.convert(src, out if stored else None, timeout, values=values)
            _VALUES[os.path.realpath(values_twin(out) if stored else out)] = values
        return results
    if values_too:
        raise RuntimeError("values_too reads the values through the running LibreOffice (tests/lo_bridge.py), which "
                           "needs a profile and LibreOffice's uno module for /usr/bin/python3 (Debian's python3-uno, "
                           "which README.md's test command installs)")
    own_profile = profile is None
    if own_profile:
        profile = make_profile(Path(tempfile.mkdtemp(prefix="lo-profile-")))
    cmd = [binary, f"-env:UserInstallation={profile.resolve().as_uri()}", "--headless", "--norestore",
           "--convert-to", "xlsx:Calc MS Excel 2007 XML", "--outdir", str(out_dir), *map(str, srcs)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout * len(srcs),
                              env={**os.environ, "HOME": str(profile)})
    finally:
        if own_profile:
            shutil.rmtree(profile, ignore_errors=True)
    missing = [r.name for r in results if not r.exists()]
    if proc.returncode != 0 or missing:
        raise RuntimeError(f"LibreOffice failed ({proc.returncode}; missing {missing}): {proc.stdout} {proc.stderr}")
    return results


_VALUES: dict[str, Path] = {}  # realpath of a values-only copy -> its JSON values (recalculate_many, store False)

# LibreOffice's error codes as its .xlsx export writes them (sc/source/filter/excel/xltools.cxx
# GetXclErrorCode; any other code is written #N/A), checked on every kind test_recalc meets
ERROR_TEXT = {502: "#VALUE!", 504: "#VALUE!", 507: "#VALUE!", 509: "#VALUE!", 510: "#VALUE!", 511: "#VALUE!",
              519: "#VALUE!", 522: "#VALUE!", 503: "#NUM!", 521: "#NULL!", 524: "#REF!", 525: "#NAME?",
              530: "#NAME?", 531: "#NAME?", 532: "#DIV/0!", 32767: "#N/A"}


def values_twin(stored: Path) -> Path:
    """The values-only copy read beside the stored copy ``stored`` (``recalculate_many(values_too=True)``)."""
    return Path(stored).with_name(Path(stored).stem + "-values.xlsx")


def is_values_copy(path) -> bool:
    """Whether ``path`` names a values-only recalculated copy (:func:`recalculate_many`, store False)."""
    try:
        return os.path.realpath(path) in _VALUES
    except TypeError:  # a file object
        return False


def recalculated_book(path):
    """The values-only copy at ``path`` as an in-memory openpyxl workbook, each cell the value
    openpyxl's ``load_workbook(data_only=True)`` reads from LibreOffice's .xlsx store of it
    (tests/lo_bridge.py ``sheet_values`` says what each cell is): a number as :func:`_cell` reads
    it, a boolean as a bool, a date as openpyxl makes it, an error as the text the store writes
    (:data:`ERROR_TEXT` for LibreOffice's ``Err:NNN``; its ``#DIV/0!``, ``#N/A``, ``#NUM!``, ...
    as they are) with the error data type, any other text with the text type, an empty text or
    cell as None. Sheets in LibreOffice's order."""
    import json

    import openpyxl
    from openpyxl.utils.datetime import from_excel

    with open(_VALUES[os.path.realpath(path)], encoding="utf-8") as f:
        sheets = json.load(f)
    book = openpyxl.Workbook()
    book.remove(book.active)
    for sheet in sheets:
        ws = book.create_sheet(sheet["name"])
        for r, row in enumerate(sheet["rows"], start=1):
            values, kinds = [], {}
            for c, v in enumerate(row, start=1):
                if type(v) is dict:
                    if "error" in v:
                        text = v["error"]
                        v = ERROR_TEXT.get(int(text[4:]), "#N/A") if text.startswith("Err:") else text
                        kinds[c] = "e"
                    elif "bool" in v:
                        v = v["bool"]
                    else:
                        v = from_excel(_cell(v["date"]))
                else:
                    v = _cell(v)
                    if type(v) is str:  # a text that reads as an error code or a formula stays a text
                        kinds[c] = "s"
                values.append(v)
            ws.append(values)
            for c, kind in kinds.items():
                ws._cells[r, c].data_type = kind
    return book


def _cell(v):
    """A value of ``getDataArray`` as openpyxl reads it from LibreOffice's store. The store writes a
    number with at most 15 significant digits, rounding the shortest text that gives the double
    back half up (checked on the whole example's 24,093 numbers: Python's own 15-digit rounding of
    the double misses 282 of them by one in the last digit), and openpyxl reads it as an int when
    the text has no point or exponent (LibreOffice writes a whole number below 1e17 without one:
    12345678901234567 as 12345678901234600, 1e17 as 1E+017)."""
    if v is None or v == "":
        return None
    if type(v) is not float:
        return v
    text = repr(v)
    if len(text.split("e")[0].lstrip("-").replace(".", "").strip("0")) > 15:  # more digits than the store keeps
        x = Decimal(text)
        x = x.quantize(Decimal(1).scaleb(x.adjusted() - 14), rounding=ROUND_HALF_UP)
        return int(x) if x == x.to_integral_value() and abs(x) < 10 ** 17 else float(x)
    return int(v) if v.is_integer() and abs(v) < 1e17 else v


def print_pdf(src: Path, out: Path, profile: Path, timeout: float = 300) -> Path | None:
    """``src`` printed to the PDF ``out`` by this process's running LibreOffice (:class:`_Bridge`; the
    filter ``soffice --convert-to pdf`` uses, charts and all), or None without the bridge (the caller
    then starts its own LibreOffice). Saves a LibreOffice start per PDF (about 2-3 s CPU)."""
    binary = soffice()
    if binary is None or not _Bridge.usable():
        return None
    _Bridge.for_profile(binary, profile).convert(src, out, timeout, "calc_pdf_Export")
    return out


SYSTEM_PYTHON = "/usr/bin/python3"  # Debian's, the one python3-uno is built for


class _Bridge:
    """This process's running LibreOffice (tests/lo_bridge.py under the system Python), one per
    profile, stopped at exit. A conversion that fails or times out stops it (the next starts anew)
    and raises."""

    _usable: bool | None = None
    _open: dict = {}

    @classmethod
    def usable(cls) -> bool:
        if cls._usable is None:
            cls._usable = os.path.exists(SYSTEM_PYTHON) and subprocess.run(
                [SYSTEM_PYTHON, "-c", "import uno"], capture_output=True).returncode == 0
        return cls._usable

    @classmethod
    def for_profile(cls, binary: str, profile: Path) -> "_Bridge":
        key = str(Path(profile).resolve())
        bridge = cls._open.get(key)
        if bridge is None or bridge.proc.poll() is not None:
            bridge = cls._open[key] = cls(binary, Path(key))
        return bridge

    def __init__(self, binary: str, profile: Path):
        import atexit

        self.proc = subprocess.Popen([SYSTEM_PYTHON, str(Path(__file__).with_name("lo_bridge.py")), binary, str(profile)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
                                     start_new_session=True)  # its own group: a kill takes LibreOffice too
        atexit.register(self.stop)
        answer = self._answer(120)
        if not answer.get("ready"):
            self.stop()
            raise RuntimeError(f"LibreOffice bridge did not start: {answer}")

    def _answer(self, timeout: float) -> dict:
        import json
        import selectors

        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        try:
            if not sel.select(timeout):
                self.stop()
                raise RuntimeError(f"LibreOffice bridge: no answer in {timeout:.0f} s")
        finally:
            sel.close()
        line = self.proc.stdout.readline()
        if not line:
            self.stop()
            raise RuntimeError(f"LibreOffice bridge ended (exit {self.proc.poll()})")
        return json.loads(line)

    def convert(self, src: Path, out: Path | None, timeout: float, filter_name: str | None = None,
                values: Path | None = None) -> None:
        """``src`` stored at ``out`` (None: not stored) and its values written as JSON at ``values``."""
        import json

        made = [p for p in (out, values) if p is not None]
        for p in made:
            if p.exists():
                p.unlink()
        req = {"src": str(Path(src).resolve()), "out": str(out.resolve()) if out is not None else None}
        if values is not None:
            req["values"] = str(values.resolve())
        if filter_name:
            req["filter"] = filter_name
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        answer = self._answer(timeout)
        if not answer.get("ok") or not all(p.exists() for p in made):
            raise RuntimeError(f"LibreOffice failed on {src}: {answer}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                import signal

                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
