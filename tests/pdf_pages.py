"""Pages per sheet of a workbook printed to PDF by LibreOffice (README page counts, print tests).

LibreOffice's Calc PDF export writes one outline entry (bookmark) per sheet, its ``/Title`` the
sheet name (UTF-16BE hex) and its ``/Dest`` the sheet's first page; the pages themselves are the
``/Kids`` of the page tree in print order. Pages per sheet are the differences of successive
first pages. Only the standard library: the PDF is read as bytes (object dictionaries are not
compressed in LibreOffice's output).

>>> pages_per_sheet(b"")  # no outline
{}
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

_OBJ = re.compile(rb"(\d+)\s+0\s+obj\s*(.*?)endobj", re.S)


def _title(raw: bytes) -> str:
    raw = raw.strip()
    if raw.startswith(b"<"):
        data = bytes.fromhex(raw[1:-1].decode("ascii"))
        return data[2:].decode("utf-16-be") if data[:2] == b"\xfe\xff" else data.decode("latin-1")
    return raw[1:-1].decode("latin-1")


def page_order(pdf: bytes) -> list[int]:
    """Object numbers of the pages in print order (the page tree walked from its root)."""
    objs = {int(n): body for n, body in _OBJ.findall(pdf)}
    roots = [n for n, b in objs.items() if re.search(rb"/Type\s*/Pages\b", b) and b"/Parent" not in b]

    def walk(n: int) -> list[int]:
        body = objs[n]
        if re.search(rb"/Type\s*/Pages\b", body):
            kids = re.search(rb"/Kids\s*\[(.*?)\]", body, re.S)
            return [p for k in re.findall(rb"(\d+)\s+0\s+R", kids[1] if kids else b"") for p in walk(int(k))]
        return [n]

    return [p for r in roots for p in walk(r)]


def pages_per_sheet(pdf: bytes) -> dict[str, int]:
    """Sheet name -> printed pages, in sheet order (sheets that print nothing are absent)."""
    order = page_order(pdf)
    if not order:
        return {}
    index = {n: i for i, n in enumerate(order)}
    marks = []
    for _n, body in _OBJ.findall(pdf):
        t = re.search(rb"/Title\s*(<[0-9A-Fa-f]*>|\((?:[^()\\]|\\.)*\))", body)
        d = re.search(rb"/Dest\s*\[\s*(\d+)\s+0\s+R", body)
        if t and d and int(d[1]) in index:
            marks.append((index[int(d[1])], _title(t[1])))
    marks.sort()
    out = {}
    for k, (start, name) in enumerate(marks):
        end = marks[k + 1][0] if k + 1 < len(marks) else len(order)
        out[name] = out.get(name, 0) + end - start
    return out


def to_pdf(xlsx: Path, out_dir: Path | None = None, timeout: float = 300, profile: Path | None = None) -> bytes:
    """``xlsx`` printed to PDF by LibreOffice headless; the PDF's bytes. With a ``profile`` (the tests'
    session profile) by the test process's running LibreOffice (libreoffice.print_pdf), else by a
    LibreOffice of its own (own profile)."""
    from libreoffice import make_profile, print_pdf, soffice

    if profile is not None:
        with tempfile.TemporaryDirectory(prefix="planner-pdf-") as tmp:
            dest = Path(out_dir or tmp) / (xlsx.stem + ".pdf")
            if print_pdf(xlsx, dest, profile, timeout) is not None:
                return dest.read_bytes()
    binary = soffice()
    if binary is None:
        raise RuntimeError("LibreOffice (soffice) is not installed")
    with tempfile.TemporaryDirectory(prefix="planner-pdf-") as tmp:
        tmp = Path(tmp)
        profile = make_profile(tmp / "profile")
        dest = out_dir or tmp
        subprocess.run([binary, f"-env:UserInstallation={profile.resolve().as_uri()}", "--headless", "--norestore",
                        "--convert-to", "pdf", "--outdir", str(dest), str(xlsx)],
                       capture_output=True, timeout=timeout, env={"HOME": str(profile), "PATH": "/usr/bin:/bin"})
        return (dest / (xlsx.stem + ".pdf")).read_bytes()


LONG = ("Sensitivity_", "Tornado", "Resolved")


def readme_sentence(pages: dict[str, int]) -> str:
    """The README's page count of the example output (``python tests/pdf_pages.py OUT.xlsx``
    prints it; tests/test_print_pages.py checks the README holds it)."""
    total = sum(pages.values())
    long_ = [n for n in pages if n.startswith(LONG)]
    main = ", ".join(f"{n} {pages[n]}" for n in ("Summary", "Results", "Checks", "Explorer", "Charts", "Calibration")
                     if n in pages)
    each = "one page per long table" if all(pages[n] == 1 for n in long_) else \
        ", ".join(f"{n} {pages[n]}" for n in long_)
    return f"Printed by LibreOffice, the example output is {total} pages: {main}, {each}."


if __name__ == "__main__":  # pragma: no cover
    import sys

    print(readme_sentence(pages_per_sheet(to_pdf(Path(sys.argv[1])))))


def _objects(pdf: bytes) -> dict[int, bytes]:
    return {int(n): body for n, body in _OBJ.findall(pdf)}


def _stream(objs: dict[int, bytes], n: int) -> bytes:
    import zlib

    body = objs[n]
    m = re.search(rb"stream\r?\n", body)
    if m is None:
        return b""
    length = re.search(rb"/Length\s+(\d+)(\s+0\s+R)?", body)
    size = int(objs[int(length[1])].strip()) if length and length[2] else int(length[1]) if length else None
    data = body[m.end():m.end() + size] if size is not None else body[m.end():body.rindex(b"endstream")]
    return zlib.decompressobj().decompress(data) if b"FlateDecode" in body[:m.start()] else data


def _to_unicode(cmap: str) -> dict[str, str]:
    """A font's ToUnicode CMap: glyph code (hex) -> text (its bfchar and bfrange entries)."""
    out = {}
    for blk in re.findall(r"beginbfchar(.*?)endbfchar", cmap, re.S):
        for a, u in re.findall(r"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>", blk):
            out[a.upper()] = bytes.fromhex(u).decode("utf-16-be", "replace")
    for blk in re.findall(r"beginbfrange(.*?)endbfrange", cmap, re.S):
        for a, b, u in re.findall(r"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>", blk):
            for k in range(int(a, 16), int(b, 16) + 1):
                out[format(k, f"0{len(a)}X")] = chr(int(u, 16) + k - int(a, 16))
    return out


def page_texts(pdf: bytes) -> dict[str, list[str]]:
    """Sheet name -> the text drawn on each of its printed pages (the page's ``Tj``/``TJ`` strings
    decoded through their fonts' ToUnicode maps, concatenated). Text a cell's clip path hides is
    drawn too, so this tells what a page holds, not whether a cell is cut."""
    objs = _objects(pdf)
    order = page_order(pdf)
    maps: dict[int, dict[str, str]] = {}

    def fonts_of(page: bytes) -> dict[str, int]:
        res = page
        if m := re.search(rb"/Resources\s+(\d+)\s+0\s+R", page):
            res = objs[int(m[1])]
        fdict = re.search(rb"/Font\s*<<(.*?)>>", res, re.S)
        if fdict is None and (m := re.search(rb"/Font\s+(\d+)\s+0\s+R", res)):
            fdict = re.search(rb"<<(.*?)>>", objs[int(m[1])], re.S)
        return {k.decode(): int(v) for k, v in re.findall(rb"/(\w+)\s+(\d+)\s+0\s+R", fdict[1])} if fdict else {}

    def cmap(font: int) -> dict[str, str]:
        if font not in maps:
            m = re.search(rb"/ToUnicode\s+(\d+)\s+0\s+R", objs.get(font, b""))
            maps[font] = _to_unicode(_stream(objs, int(m[1])).decode("latin-1")) if m else {}
        return maps[font]

    def text(n: int) -> str:
        page = objs[n]
        fonts = fonts_of(page)
        refs = re.search(rb"/Contents\s*(\[.*?\]|\d+\s+0\s+R)", page, re.S)
        out, cur = [], {}
        for c in (int(x) for x in re.findall(rb"(\d+)\s+0\s+R", refs[1] if refs else b"")):
            for tok in re.finditer(r"/(\w+)\s+[\d.]+\s+Tf|\[(.*?)\]\s*TJ|<([0-9A-Fa-f]*)>\s*Tj",
                                   _stream(objs, c).decode("latin-1"), re.S):
                if tok[1]:
                    cur = cmap(fonts[tok[1]]) if tok[1] in fonts else {}
                    continue
                width = len(next(iter(cur), "00")) or 2
                for h in (re.findall(r"<([0-9A-Fa-f]*)>", tok[2]) if tok[2] is not None else [tok[3]]):
                    out.append("".join(cur.get(h[i:i + width].upper(), "?") for i in range(0, len(h), width)))
            out.append("\n")
        return "".join(out)

    result, start = {}, 0
    for name, k in pages_per_sheet(pdf).items():
        result[name] = [text(order[i]) for i in range(start, start + k)]
        start += k
    return result
