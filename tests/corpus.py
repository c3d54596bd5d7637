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


def edit(folder: Path, name: str, change: Callable[[openpyxl.Workbook], list[str]],
         workloads: int | None = None) -> tuple[Path, list[str]]:
    """Copy the example (cut to its first ``workloads`` workloads when given), apply ``change``
    (which returns the expected lines), save."""
    return edited_example(Path(folder) / f"{name}.xlsx", change, workloads=workloads)


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
    from planner.inputs.container import sheet_xml_paths

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


def xlsm_with_macros(folder, source: Path = EXAMPLE):
    """An .xlsm with a VBA project (a copy of ``source``, the example unless given): read (values
    only), nothing run. Not an error."""
    p = folder / "macros.xlsm"

    def change(name, data):
        if name == "[Content_Types].xml":
            return data.replace(b"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml",
                                b"application/vnd.ms-excel.sheet.macroEnabled.main+xml")
        return data

    rezip(source, p, change, {"xl/vbaProject.bin": b"Attribute VB_Name = \"AutoOpen\"\nShell \"touch /tmp/pwned\"\n"})
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
        # workloads that named the renamed model / GPU now dangle (closest names offered, the few listed)
        assert (lost_m, lost_g) == ("Llama-3.1-8B", "H200-SXM")
        hint = {"Models": ": did you mean 'Llama-3.1-70B'? (Models has: Qwen2.5-72B, Qwen2.5-7B, Llama-3.1-70B, "
                          "Llama-3.1-70B-FP8KV, DeepSeek-V3, Llama-3.2-90B-Vision)",
                "GPUs": ": did you mean 'H100-SXM'? (GPUs has: H100-SXM, A100-SXM-80GB, L40S)"}
        ws = wb[W]
        for row in range(2, ws.max_row + 1):
            for name, lost, sheet in (("model", lost_m, "Models"), ("gpu", lost_g, "GPUs")):
                cell = f"{col(ws, name)}{row}"
                if ws[cell].value == lost:
                    lines.append(f"Workloads!{cell}: {name} {lost!r} is not in {sheet}{hint[sheet]}")
        return lines
    return edit(folder, "duplicate-names", change)


def dangling_refs(folder):
    def change(wb):
        return [f"{setc(wb, W, 'model', 3, 'Qwen3-235B')}: model 'Qwen3-235B' is not in Models: did you mean "
                f"'Qwen2.5-7B' or 'Qwen2.5-72B'? (Models has: Qwen2.5-72B, Qwen2.5-7B, Llama-3.1-8B, Llama-3.1-70B, "
                f"Llama-3.1-70B-FP8KV, DeepSeek-V3, Llama-3.2-90B-Vision)",
                # nothing close: no guess, the four valid names listed
                f"{setc(wb, W, 'gpu', 6, 'B200')}: gpu 'B200' is not in GPUs (GPUs has: H100-SXM, H200-SXM, "
                f"A100-SXM-80GB, L40S)"]
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


def case_and_space_refs(folder, workloads: int | None = None):
    """References differing only in case and surrounding spaces (rows 2 and 3): accepted, said
    once. ``workloads``: the example cut to so many workloads first (at least 2)."""
    def change(wb):
        m = wb[W][col(wb[W], "model") + "2"].value
        setc(wb, W, "model", 2, f"  {m.lower()} ")
        setc(wb, W, "gpu", 3, f"{wb[W][col(wb[W], 'gpu') + '3'].value.upper()}  ")
        return []
    return edit(folder, "case-and-space-refs", change, workloads=workloads)


# --------------------------------------------------------------------------- typing mistakes (issue 13)
def typed_numbers(folder):
    """Numbers typed as text a locale reads two ways, fractions of tokens, symbols and units."""
    def change(wb):
        return [
            f"{setc(wb, W, 'isl', 2, '8.192')}: isl '8.192' is ambiguous: 8192 with '.' grouping thousands, or "
            f"8.192 with a decimal point; type the number itself in a number cell (8192 or 8.192), not as text",
            f"{setc(wb, W, 'osl', 3, '1,024')}: osl '1,024' is ambiguous: 1024 with ',' grouping thousands, or "
            f"1.024 with a decimal comma; type the number itself in a number cell (1024 or 1.024), not as text",
            f"{setc(wb, W, 'isl', 4, 2048.5)}: isl 2048.5 is not a whole number",
            f"{setc(wb, W, 'max_seq_len', 5, '8,192.5')}: max_seq_len 8192.5 is not a whole number",
            f"{setc(wb, W, 'isl', 6, '8k')}: isl '8k' has the multiplier 'k' typed in: type the whole number "
            f"(8000, or 8192 if a power of two was meant); the column is in tokens (a whole number)",
            f"{setc(wb, G, 'hourly_cost', 2, '$0.95')}: hourly_cost '$0.95' has the currency symbol '$' typed in: "
            f"drop it and type the number alone (0.95); the column is in currency per GPU-hour (the Settings "
            f"currency)",
            f"{setc(wb, G, 'hourly_cost', 3, '€1,20')}: hourly_cost '€1,20' has the currency symbol '€' typed in: "
            f"drop it and type the number alone (1.2); the column is in currency per GPU-hour (the Settings "
            f"currency)",
            f"{setc(wb, G, 'hourly_cost', 4, '0.95 USD')}: hourly_cost '0.95 USD' has the currency symbol 'USD' "
            f"typed in: drop it and type the number alone (0.95); the column is in currency per GPU-hour (the "
            f"Settings currency)",
            f"{setc(wb, G, 'pcie_gbps', 5, '25 GB/s')}: pcie_gbps '25 GB/s' has the unit 'GB/s' typed in: drop it "
            f"and type the number alone (25); the column is in GB/s (10^9 bytes per second)",
            # hand calc: 80 GB = 80e9 / 2^30 GiB = 74.505... GiB
            f"{setc(wb, G, 'hbm_gib', 2, '80 GB')}: hbm_gib '80 GB' has the unit 'GB' typed in: 80 GB is 74.51 GiB, "
            f"type 74.51; the column is in GiB (2^30 bytes)",
        ]
    return edit(folder, "typed-numbers", change)


def _append_row(ws, first: str) -> int:
    row = ws.max_row + 1
    ws.cell(row, 1, first)
    return row


def totals_row_inside(folder):
    """A TOTAL row right under the last workload: one problem, not eight 'is required'."""
    def change(wb):
        ws = wb[W]
        row = _append_row(ws, "TOTAL")
        ws[f"{col(ws, 'demand_tpm')}{row}"] = f"=SUM({col(ws, 'demand_tpm')}2:{col(ws, 'demand_tpm')}{row - 1})"
        ws2 = wb[G]
        row2 = _append_row(ws2, "Sum")
        return [f"Workloads!A{row}: 'TOTAL' looks like a totals row: remove it, or leave a blank row above it "
                f"(a blank row followed by a totals row ends the table)",
                f"GPUs!A{row2}: 'Sum' looks like a totals row: remove it, or leave a blank row above it "
                f"(a blank row followed by a totals row ends the table)"]
    return edit(folder, "totals-row-inside", change)


def near_miss_headers(folder):
    """Headers that look like a required column but are not one: which was found, what the column is."""
    def change(wb):
        ws = wb[G]
        c = col(ws, "hbm_gib")
        ws[f"{c}1"] = "hbm (GB)"
        ws3 = wb[W]
        c3 = col(ws3, "isl")
        ws3[f"{c3}1"] = "input tokens"
        c4 = col(ws3, "t_fixed_ms")
        ws3[f"{c4}1"] = "t_fixed_ms (tokens)"  # a unit that contradicts the column's (s would be converted)
        # the GPU catalog could fill hbm_gib, but the values typed under 'hbm (GB)' would then be
        # replaced without a word: refused, with the header found and the unit
        return [f"GPUs row 1: column 'hbm_gib' is missing; found 'hbm (GB)' in GPUs!{c}1, ignored: the "
                f"column is hbm_gib, in GiB (2^30 bytes); rename the header, or remove that column to take "
                f"hbm_gib from the catalog",
                f"Workloads row 1: required column 'isl' is missing; found 'input tokens' in Workloads!{c3}1, "
                f"ignored: the column is isl, in tokens (a whole number)",
                f"Workloads!{c4}1: header 't_fixed_ms (tokens)' says tokens, which is not a unit of t_fixed_ms (in ms): "
                f"the values cannot be read as ms; write the header as 't_fixed_ms [ms]' with the values in ms"]
    return edit(folder, "near-miss-headers", change)


def closest_names(folder):
    """References that are near a name: the closest ones offered, the few valid ones listed."""
    def change(wb):
        gpus = "H100-SXM, H200-SXM, A100-SXM-80GB, L40S"
        return [f"{setc(wb, W, 'gpu', 2, 'H100 SXM')}: gpu 'H100 SXM' is not in GPUs: did you mean 'H100-SXM'? "
                f"(GPUs has: {gpus})",
                f"{setc(wb, W, 'gpu', 3, 'h200_sxm5')}: gpu 'h200_sxm5' is not in GPUs: did you mean 'H200-SXM'? "
                f"(GPUs has: {gpus})",
                f"{setc(wb, W, 'model', 4, 'Qwen2.5 72B')}: model 'Qwen2.5 72B' is not in Models: did you mean "
                f"'Qwen2.5-72B'? (Models has: Qwen2.5-72B, Qwen2.5-7B, Llama-3.1-8B, Llama-3.1-70B, "
                f"Llama-3.1-70B-FP8KV, DeepSeek-V3, Llama-3.2-90B-Vision)"]
    return edit(folder, "closest-names", change)


def long_names(folder):
    """Names over 255 characters: Excel's MATCH and COUNTIF cannot look them up."""
    def change(wb):
        tail = ": at most 255 (Excel's MATCH and COUNTIF cannot look up longer text); shorten it"
        # the renamed GPU row keeps its dimensions typed: a name the catalog cannot find fills nothing
        setc(wb, G, "hbm_gib", 2, 80)
        setc(wb, G, "pcie_gen", 2, 5)
        return [f"{setc(wb, W, 'workload', 2, 'w' * 256)}: workload is 256 characters long{tail}",
                f"{setc(wb, W, 'model', 3, 'm' * 300)}: model is 300 characters long{tail}",
                f"{setc(wb, G, 'gpu', 2, 'g' * 256)}: gpu is 256 characters long{tail}",
                # the workloads that named that GPU now dangle
                *[f"Workloads!{col(wb[W], 'gpu')}{r}: gpu 'H100-SXM' is not in GPUs: did you mean 'H200-SXM'? "
                  f"(GPUs has: H200-SXM, A100-SXM-80GB, L40S)"
                  for r in range(2, wb[W].max_row + 1) if wb[W][f"{col(wb[W], 'gpu')}{r}"].value == "H100-SXM"]]
    return edit(folder, "long-names", change)


def totals_row_below_blank(folder):
    """A blank row then a Total row ends the table: accepted, said in a note."""
    def change(wb):
        ws = wb[W]
        row = ws.max_row + 2
        ws.cell(row, 1, "Total")
        ws[f"{col(ws, 'demand_tpm')}{row}"] = 123
        ws.cell(row + 1, 1, "see the notes")
        return []
    return edit(folder, "totals-row-below-blank", change)


def typed_numbers_accepted(folder):
    """Number-as-text in forms only one locale reading fits: read, with one note per sheet."""
    def change(wb):
        setc(wb, W, "isl", 2, "2 048")
        setc(wb, W, "tpm_measured", 2, "598 000")
        setc(wb, W, "demand_tpm", 2, "7.200.000")
        setc(wb, W, "t_ffn0_ms", 2, "143,0")
        setc(wb, G, "hbm_gib", 2, "79,6")
        return []
    return edit(folder, "typed-numbers-accepted", change)


def text_na_workload(folder):
    """A workload named '#N/A' typed as text (a string cell, not an error value) plans."""
    def change(wb):
        ws = wb[W]
        ws["A2"] = "#N/A"
        ws["A2"].data_type = "s"  # openpyxl marks '#N/A' as an error value unless told
        return []
    return edit(folder, "text-na-workload", change)


BAD = {f.__name__: f for f in (not_a_zip, legacy_xls, encrypted, xlsb, empty, zip_bomb, zip_ratio, xml_entities,
                               missing_sheet, missing_column, duplicate_header, duplicate_names, dangling_refs,
                               wrong_values, uncalculated_formula, error_values, merged_cells, formatted_to_last_row,
                               many_problems, typed_numbers, totals_row_inside, near_miss_headers, closest_names,
                               long_names)}
ACCEPTED = {f.__name__: f for f in (xlsm_with_macros, case_and_space_refs, totals_row_below_blank,
                                    typed_numbers_accepted, text_na_workload)}


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "out/corpus")
    out.mkdir(parents=True, exist_ok=True)
    for name, build in {**BAD, **ACCEPTED}.items():
        path, expected = build(out)
        print(f"{path}  ({len(expected)} expected problem lines)")
