"""Checks made on the raw file before openpyxl parses it, and a fast scan of sheet XML.

* The container: empty files, legacy ``.xls`` and password-encrypted workbooks (both OLE2
  compound files), ``.xlsb``, zips that are not workbooks, and zip bombs (total inflated
  size and per-member compression ratio, read from the zip directory before anything is
  inflated) are refused with a clear message.
* XML: openpyxl parses through defusedxml when it is installed; :func:`require_defusedxml`
  makes that a hard requirement, so entity-expansion attacks are refused.
* The sheet scan (:func:`scan_sheet`) reads a worksheet's XML once with regular
  expressions to find the last row that holds a value, formula cells that were never
  calculated, and merged ranges. The reader then asks openpyxl only for the rows and
  columns that matter, so a sheet whose formatting reaches row 1,048,576 (or column XFD)
  costs no more than its data.
"""

from __future__ import annotations

import posixpath
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from planner.core.errors import InputError, Problem

MAX_TOTAL_INFLATED = 256 * 2**20   # bytes the whole archive may inflate to
MAX_RATIO = 100                    # inflated / compressed, for members above RATIO_MIN_SIZE
RATIO_MIN_SIZE = 2**20
OLE2_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ENCRYPTED = "EncryptedPackage".encode("utf-16-le")


def require_defusedxml() -> None:
    """Fail loudly if openpyxl would parse XML without defusedxml."""
    from openpyxl.xml import DEFUSEDXML

    if not DEFUSEDXML:  # pragma: no cover - defusedxml is a dependency
        raise RuntimeError("defusedxml is not installed: refusing to parse workbooks without it")


def _mb(n: int) -> str:
    return f"{n / 2**20:,.1f} MiB"


def check_container(path: Path, data: bytes | None = None) -> None:
    """Raise :class:`InputError` unless ``path`` looks like a safe .xlsx/.xlsm archive.
    ``data``: the file's bytes, read once by the caller (the reader parses and hashes the
    same bytes); default: read ``path``."""
    import io

    name = path.name
    if data is None:
        data = path.read_bytes()
    if len(data) == 0:
        raise InputError([Problem(name, "the file is empty (0 bytes)")])
    head = data[:8]
    if head == OLE2_MAGIC:
        if _ENCRYPTED in data:
            raise InputError([Problem(name, "the workbook is password-protected (encrypted): remove the "
                                            "password in Excel (File > Info > Protect Workbook) and save again")])
        raise InputError([Problem(name, "is a legacy Excel 97-2003 (.xls) workbook, whatever its name says: "
                                        "open it in Excel and save it as .xlsx")])
    if not zipfile.is_zipfile(io.BytesIO(data)):
        raise InputError([Problem(name, "is not an .xlsx workbook (not a zip archive); save it from Excel "
                                        "as .xlsx")])
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            infos = z.infolist()
    except (zipfile.BadZipFile, OSError) as exc:
        raise InputError([Problem(name, f"is a damaged zip archive ({exc})")]) from None
    names = {i.filename for i in infos}
    if "xl/workbook.bin" in names:
        raise InputError([Problem(name, "is an Excel binary workbook (.xlsb): save it as .xlsx")])
    if "xl/workbook.xml" not in names and "mimetype" in names and "content.xml" in names:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            kind = z.read("mimetype")[:80].decode("ascii", "replace").strip()
        if kind.startswith("application/vnd.oasis.opendocument.spreadsheet"):  # LibreOffice's own format
            raise InputError([Problem(name, "is an OpenDocument spreadsheet (.ods), whatever its name says: save "
                                            "it as .xlsx (LibreOffice: File > Save As > Excel 2007-365)")])
    if "xl/workbook.xml" not in names:
        raise InputError([Problem(name, "is a zip archive but not an Excel workbook (no xl/workbook.xml); "
                                        "save it from Excel as .xlsx")])
    total = sum(i.file_size for i in infos)
    problems = []
    if total > MAX_TOTAL_INFLATED:
        problems.append(Problem(name, f"would inflate to {_mb(total)}, above the limit of "
                                      f"{_mb(MAX_TOTAL_INFLATED)}: refused (a zip bomb, or far larger than a "
                                      f"planning workbook)"))
    for i in infos:
        if i.file_size > RATIO_MIN_SIZE and i.file_size > MAX_RATIO * max(i.compress_size, 1):
            problems.append(Problem(name, f"member {i.filename} compresses {i.file_size / max(i.compress_size, 1):,.0f}:1 "
                                          f"({_mb(i.file_size)}), above the limit of {MAX_RATIO}:1: refused as a "
                                          f"possible zip bomb"))
    if problems:
        raise InputError(problems)


# --------------------------------------------------------------------------- sheet XML scan
_CELL = re.compile(rb"<(?:\w+:)?c\b([^>]*?)(?:/>|>(.*?)</(?:\w+:)?c>)", re.S)
_REF = re.compile(rb'\br="([A-Z]{1,3})(\d+)"')
_HAS_VALUE = re.compile(rb"<(?:\w+:)?v>[^<]|<(?:\w+:)?is>")
_HAS_FORMULA = re.compile(rb"<(?:\w+:)?f\b")
_MERGE = re.compile(rb'<(?:\w+:)?mergeCell\b[^>]*\bref="([A-Z]+\d+(?::[A-Z]+\d+)?)"')
# a row hidden in Excel (by hand or by a filter): <row r="5" hidden="1" ...>
_HIDDEN_ROW = re.compile(rb'<(?:\w+:)?row\b(?=[^>]*\bhidden="(?:1|true)")[^>]*?\br="(\d+)"')


@dataclass
class SheetScan:
    last_row: int | None                    # last row holding a value (None: cells without r=)
    uncalculated: set[str] = field(default_factory=set)  # "B7": formula without a cached value
    merged: list[str] = field(default_factory=list)      # "A3:C3"
    hidden_rows: frozenset[int] = frozenset()            # rows hidden in Excel (by hand or a filter)


def scan_sheet(xml: bytes) -> SheetScan:
    last = 0
    uncalculated: set[str] = set()
    for m in _CELL.finditer(xml):
        ref = _REF.search(m.group(1))
        if ref is None:
            return SheetScan(None, set(), [x.decode() for x in _MERGE.findall(xml)], _hidden_rows(xml))
        inner = m.group(2) or b""
        if _HAS_VALUE.search(inner):
            last = max(last, int(ref.group(2)))
        elif _HAS_FORMULA.search(inner):
            uncalculated.add((ref.group(1) + ref.group(2)).decode())
            last = max(last, int(ref.group(2)))
    return SheetScan(last, uncalculated, [x.decode() for x in _MERGE.findall(xml)], _hidden_rows(xml))


def _hidden_rows(xml: bytes) -> frozenset[int]:
    return frozenset(int(r) for r in _HIDDEN_ROW.findall(xml))


_SHEET = re.compile(rb'<(?:\w+:)?sheet\b[^>]*?\bname="([^"]*)"[^>]*?\br:id="([^"]+)"|'
                    rb'<(?:\w+:)?sheet\b[^>]*?\br:id="([^"]+)"[^>]*?\bname="([^"]*)"')
_REL = re.compile(rb'<Relationship\b([^>]*)/?>')


def sheet_xml_paths(z: zipfile.ZipFile) -> dict[str, str]:
    """Sheet name -> path of its XML inside the archive (from workbook.xml and its rels)."""
    from html import unescape

    wb = z.read("xl/workbook.xml")
    try:
        rels = z.read("xl/_rels/workbook.xml.rels")
    except KeyError:
        return {}
    targets = {}
    for m in _REL.finditer(rels):
        attrs = dict(re.findall(rb'(\w+)="([^"]*)"', m.group(1)))
        if b"Id" in attrs and b"Target" in attrs:
            t = attrs[b"Target"].decode()
            targets[attrs[b"Id"].decode()] = t.lstrip("/") if t.startswith("/") else posixpath.normpath(
                posixpath.join("xl", t))
    out = {}
    for m in _SHEET.finditer(wb):
        name, rid = (m.group(1), m.group(2)) if m.group(1) is not None else (m.group(4), m.group(3))
        if rid.decode() in targets:
            out[unescape(name.decode("utf-8"))] = targets[rid.decode()]
    return out
