"""A corpus of bad input workbooks, made by code (no hand-saved binaries), each with the
exact problem lines the planner must print.

    python tests/corpus.py OUT_DIR     # writes every case as OUT_DIR/<case>.xlsx and lists them

Each builder takes a folder and returns ``(path, expected)``: ``expected`` is the list of
problem lines (``Sheet!Cell: message``) the planner must report, all of them, and no other.
"""

from __future__ import annotations

import shutil
import sys
import zipfile
from pathlib import Path
from typing import Callable

import openpyxl

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # run as a script: the planner importable (conftest imports it)

from conftest import EXAMPLE, edited_example, repeat_workloads  # noqa: E402
W, M, G = "Workloads", "Models", "GPUs"
OLE2_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def col(ws, name: str) -> str:
    """Column letter of a header (the part before ' [unit]')."""
    for cell in ws[1]:
        if cell.value is not None and str(cell.value).split(" [")[0] == name:
            return cell.column_letter
    raise KeyError(name)


def edit(folder: Path, name: str, change: Callable[[openpyxl.Workbook], list[str]]) -> tuple[Path, list[str]]:
    """Copy the example, apply ``change`` (which returns the expected lines), save."""
    return edited_example(Path(folder) / f"{name}.xlsx", change)


def setc(wb, sheet: str, name: str, row: int, value) -> str:
    ws = wb[sheet]
    c = col(ws, name)
    ws[f"{c}{row}"] = value
    return f"{sheet}!{c}{row}"


def rezip(src: Path, dst: Path, change: Callable[[str, bytes], bytes | None], extra: dict | None = None) -> None:
    """Copy an xlsx member by member; ``change`` may rewrite (or drop, with None) a member."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for item in zin.infolist():
            data = change(item.filename, zin.read(item.filename))
            if data is not None:
                zout.writestr(item, data)
        for name, data in (extra or {}).items():
            zout.writestr(name, data)


def sheet_member(path: Path, sheet: str) -> str:
    from planner.safety import sheet_xml_paths

    with zipfile.ZipFile(path) as z:
        return sheet_xml_paths(z)[sheet]


# --------------------------------------------------------------------------- container cases
def not_a_zip(folder):
    p = folder / "not-a-zip.xlsx"
    p.write_bytes(b"model,layers\nQwen,80\n")
    return p, [f"{p.name}: is not an .xlsx workbook (not a zip archive); save it from Excel as .xlsx"]


def legacy_xls(folder):
    p = folder / "legacy.xlsx"
    p.write_bytes(OLE2_MAGIC + b"\x00" * 504 + "Workbook".encode("utf-16-le") + b"\x00" * 1024)
    return p, [f"{p.name}: is a legacy Excel 97-2003 (.xls) workbook, whatever its name says: open it in Excel "
               f"and save it as .xlsx"]


def encrypted(folder):
    p = folder / "encrypted.xlsx"
    p.write_bytes(OLE2_MAGIC + b"\x00" * 504 + "EncryptionInfo".encode("utf-16-le") + b"\x00" * 64
                  + "EncryptedPackage".encode("utf-16-le") + b"\x00" * 1024)
    return p, [f"{p.name}: the workbook is password-protected (encrypted): remove the password in Excel "
               f"(File > Info > Protect Workbook) and save again"]


def xlsb(folder):
    p = folder / "binary.xlsx"
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr("xl/workbook.bin", b"\x83\x01\x00")
    return p, [f"{p.name}: is an Excel binary workbook (.xlsb): save it as .xlsx"]


def empty(folder):
    p = folder / "empty.xlsx"
    p.write_bytes(b"")
    return p, [f"{p.name}: the file is empty (0 bytes)"]


def _bomb(folder, name: str, mib: int) -> Path:
    p = folder / f"{name}.xlsx"
    shutil.copyfile(EXAMPLE, p)
    with zipfile.ZipFile(p, "a", zipfile.ZIP_DEFLATED) as z, z.open("xl/media/padding.xml", "w", force_zip64=True) as f:
        chunk = b" " * 2**20
        for _ in range(mib):
            f.write(chunk)
    return p


def zip_bomb(folder):
    """300 MiB of spaces inflating from about 0.3 MiB: above both the size and the ratio limit."""
    p = _bomb(folder, "zip-bomb", 300)
    with zipfile.ZipFile(p) as z:
        info = z.getinfo("xl/media/padding.xml")
        total = sum(i.file_size for i in z.infolist())
    ratio = info.file_size / info.compress_size
    return p, [f"{p.name}: would inflate to {total / 2**20:,.1f} MiB, above the limit of 256.0 MiB: refused "
               f"(a zip bomb, or far larger than a planning workbook)",
               f"{p.name}: member xl/media/padding.xml compresses {ratio:,.0f}:1 (300.0 MiB), above the limit "
               f"of 100:1: refused as a possible zip bomb"]


def zip_ratio(folder):
    """20 MiB of spaces: under the size limit, far above the compression-ratio limit."""
    p = _bomb(folder, "zip-ratio", 20)
    with zipfile.ZipFile(p) as z:
        info = z.getinfo("xl/media/padding.xml")
    return p, [f"{p.name}: member xl/media/padding.xml compresses {info.file_size / info.compress_size:,.0f}:1 "
               f"(20.0 MiB), above the limit of 100:1: refused as a possible zip bomb"]


def xml_entities(folder):
    """A billion-laughs DTD inside the Workloads sheet."""
    p = folder / "entities.xlsx"
    member = sheet_member(EXAMPLE, W)
    dtd = (b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<!DOCTYPE worksheet [<!ENTITY a "aaaaaaaaaa">'
           + b"".join(b'<!ENTITY %s "&%s;&%s;&%s;&%s;&%s;&%s;&%s;&%s;&%s;&%s;">' % ((chr(98 + i).encode(),)
                      + (chr(97 + i).encode(),) * 10) for i in range(9)) + b"]>\n")

    def change(name, data):
        if name == member:
            body = data.split(b"?>", 1)[1]
            return dtd + body.replace(b"<t>", b"<t>&j;", 1) if b"<t>" in body else dtd + body
        return data

    rezip(EXAMPLE, p, change)
    return p, [f"{p.name}: contains XML entity or DTD declarations: refused (a possible entity-expansion "
               f"attack); save the workbook again from Excel"]


def xlsm_with_macros(folder):
    """An .xlsm with a VBA project: read (values only), nothing run. Not an error."""
    p = folder / "macros.xlsm"

    def change(name, data):
        if name == "[Content_Types].xml":
            return data.replace(b"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml",
                                b"application/vnd.ms-excel.sheet.macroEnabled.main+xml")
        return data

    rezip(EXAMPLE, p, change, {"xl/vbaProject.bin": b"Attribute VB_Name = \"AutoOpen\"\nShell \"touch /tmp/pwned\"\n"})
    return p, []


# --------------------------------------------------------------------------- sheet and cell cases
def missing_sheet(folder):
    def change(wb):
        del wb[G]
        return [f"GPUs: the sheet is missing (the workbook has: {', '.join(wb.sheetnames)})"]
    return edit(folder, "missing-sheet", change)


def missing_column(folder):
    def change(wb):
        ws = wb[W]
        ws.delete_cols(ws[col(ws, "hit_target") + "1"].column)
        return ["Workloads row 1: required column 'hit_target' is missing"]
    return edit(folder, "missing-column", change)


def duplicate_header(folder):
    def change(wb):
        ws = wb[W]
        c = col(ws, "note")
        ws[f"{c}1"] = " ISL (tokens) "
        return [f"Workloads!{c}1: column 'isl' appears twice (also {col(ws, 'isl')}1)"]
    return edit(folder, "duplicate-header", change)


def duplicate_names(folder):
    def change(wb):
        first_m, lost_m = wb[M]["A2"].value, wb[M]["A4"].value
        first_g, lost_g = wb[G]["A2"].value, wb[G]["A3"].value
        first_w = wb[W]["A2"].value
        a = setc(wb, M, "model", 4, f" {first_m.upper()} ")
        b = setc(wb, G, "gpu", 3, first_g)
        c = setc(wb, W, "workload", 5, first_w)
        lines = [f"{a}: model {first_m.upper()!r} duplicates row 2", f"{b}: gpu {first_g!r} duplicates row 2",
                 f"{c}: workload {first_w!r} duplicates row 2"]
        # workloads that named the renamed model / GPU now dangle
        ws = wb[W]
        for row in range(2, ws.max_row + 1):
            for name, lost, sheet in (("model", lost_m, "Models"), ("gpu", lost_g, "GPUs")):
                cell = f"{col(ws, name)}{row}"
                if ws[cell].value == lost:
                    lines.append(f"Workloads!{cell}: {name} {lost!r} is not in {sheet}")
        return lines
    return edit(folder, "duplicate-names", change)


def dangling_refs(folder):
    def change(wb):
        return [f"{setc(wb, W, 'model', 3, 'Qwen3-235B')}: model 'Qwen3-235B' is not in Models",
                f"{setc(wb, W, 'gpu', 6, 'B200')}: gpu 'B200' is not in GPUs"]
    return edit(folder, "dangling-refs", change)


def wrong_values(folder):
    """Text in numbers, negatives and zeros, ratios out of range, non-integer tp, bad choice."""
    def change(wb):
        return [
            f"{setc(wb, W, 'isl', 2, 'about 2k')}: isl 'about 2k' is not a number",
            f"{setc(wb, W, 'osl', 3, -5)}: osl -5 is outside [0, 1e+09]",
            f"{setc(wb, G, 'hbm_gib', 2, 0)}: hbm_gib 0 is outside (0, 1e+06]: it must be positive",
            f"{setc(wb, W, 'hit_target', 4, 1.3)}: hit_target 1.3 is outside [0, 1]",
            f"{setc(wb, W, 'hit_target', 5, 85)}: hit_target 85 is outside [0, 1] (a ratio: write 0.85 or 85%)",
            f"{setc(wb, W, 'tp', 6, 2.5)}: tp 2.5 is not a whole number",
            f"{setc(wb, W, 'alpha', 7, 1.5)}: alpha 1.5 is outside [0, 1]",
            f"{setc(wb, W, 'other_scaling', 8, 'cubic')}: other_scaling 'cubic' is not one of const, linear, quadratic",
            f"{setc(wb, W, 't_decode_ms', 9, True)}: t_decode_ms True is not a number",
            f"{setc(wb, M, 'kv_bytes', 3, 0)}: kv_bytes 0 is outside [0.125, 8]",
        ]
    return edit(folder, "wrong-values", change)


def uncalculated_formula(folder):
    def change(wb):
        where = setc(wb, W, "isl", 3, "=1024*8")  # openpyxl saves formulas without a cached value
        return [f"{where}: isl holds a formula that was never calculated: open and save it in Excel, or type "
                f"the value"]
    return edit(folder, "uncalculated-formula", change)


def error_values(folder):
    def change(wb):
        return [f"{setc(wb, W, 't_ffn0_ms', 3, '#DIV/0!')}: t_ffn0_ms holds the Excel error #DIV/0!: fix the "
                f"formula or type the value",
                f"{setc(wb, M, 'layers', 2, '#N/A')}: layers holds the Excel error #N/A: fix the formula or type "
                f"the value"]
    return edit(folder, "error-values", change)


def merged_cells(folder):
    def change(wb):
        ws = wb[W]
        ws.merge_cells("A3:C3")  # keeps A3; B3 and C3 lose their values
        return ["Workloads!A3:C3: merged cells in the table: unmerge them (a merge keeps only its first cell's value)",
                "Workloads!B3: model is required", "Workloads!C3: gpu is required"]
    return edit(folder, "merged-cells", change)


def formatted_to_last_row(folder):
    """Formatting reaches row 1,048,576 and column XFD (no data there), plus one real error."""
    from openpyxl.styles import PatternFill

    def change(wb):
        ws = wb[W]
        ws.cell(1_048_576, 16_384).fill = PatternFill("solid", fgColor="FFFF00")
        ws.cell(1_048_576, 1).number_format = "0.00"
        return [f"{setc(wb, W, 'hit_target', 3, 1.3)}: hit_target 1.3 is outside [0, 1]"]
    return edit(folder, "formatted-to-last-row", change)


def many_problems(folder):
    """More problems than are listed: the list is cut with the count of the rest."""
    def change(wb):
        ws = wb[W]
        repeat_workloads(wb, ws.max_row - 1 + 300, "bulk-{i}")
        c = col(ws, "hit_target")
        lines = []
        for row in range(2, ws.max_row + 1):
            ws[f"{c}{row}"] = 2
            lines.append(f"Workloads!{c}{row}: hit_target 2 is outside [0, 1] (a ratio: write 0.02 or 2%)")
        return lines
    return edit(folder, "many-problems", change)


def case_and_space_refs(folder):
    """References differing only in case and surrounding spaces: accepted, said once."""
    def change(wb):
        m = wb[W][col(wb[W], "model") + "2"].value
        setc(wb, W, "model", 2, f"  {m.lower()} ")
        setc(wb, W, "gpu", 3, f"{wb[W][col(wb[W], 'gpu') + '3'].value.upper()}  ")
        return []
    return edit(folder, "case-and-space-refs", change)


BAD = {f.__name__: f for f in (not_a_zip, legacy_xls, encrypted, xlsb, empty, zip_bomb, zip_ratio, xml_entities,
                               missing_sheet, missing_column, duplicate_header, duplicate_names, dangling_refs,
                               wrong_values, uncalculated_formula, error_values, merged_cells, formatted_to_last_row,
                               many_problems)}
ACCEPTED = {f.__name__: f for f in (xlsm_with_macros, case_and_space_refs)}


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "out/corpus")
    out.mkdir(parents=True, exist_ok=True)
    for name, build in {**BAD, **ACCEPTED}.items():
        path, expected = build(out)
        print(f"{path}  ({len(expected)} expected problem lines)")
