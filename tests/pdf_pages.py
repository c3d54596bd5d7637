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


def to_pdf(xlsx: Path, out_dir: Path | None = None, timeout: float = 300) -> bytes:
    """``xlsx`` printed to PDF by LibreOffice headless (own profile); the PDF's bytes."""
    from libreoffice import make_profile, soffice

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
