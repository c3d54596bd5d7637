"""Render the README picture from the real example output.

    python docs/make_picture.py            # writes docs/example-charts.png

Runs the planner on the bundled example, has LibreOffice headless (recalculating every
formula on load) print the workbook to PDF, and turns the first page of the ``Charts``
sheet into a PNG with pdftoppm (Debian: poppler-utils).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from planner.examples.build import example_path  # noqa: E402
from libreoffice import make_profile, soffice  # noqa: E402
from planner.plan.build import build_plan  # noqa: E402
from planner.workbook.writer import write_output  # noqa: E402


def main(out_png: Path = HERE / "example-charts.png", marker: str = "Charts per workload") -> Path:
    if soffice() is None or shutil.which("pdftoppm") is None:
        raise SystemExit("needs LibreOffice (soffice) and pdftoppm (apt-get install libreoffice-calc-nogui poppler-utils)")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        xlsx = tmp / "example-plan.xlsx"
        write_output(build_plan(example_path()), xlsx)
        profile = make_profile(tmp / "profile")
        subprocess.run([soffice(), f"-env:UserInstallation={profile.as_uri()}", "--headless", "--convert-to", "pdf",
                        "--outdir", str(tmp), str(xlsx)], check=True, capture_output=True, timeout=300)
        pdf = tmp / "example-plan.pdf"
        pages = int(next(line.split()[-1] for line in subprocess.run(
            ["pdfinfo", str(pdf)], capture_output=True, text=True, check=True).stdout.splitlines()
            if line.startswith("Pages:")))
        for page in range(1, pages + 1):
            text = subprocess.run(["pdftotext", "-f", str(page), "-l", str(page), str(pdf), "-"],
                                  capture_output=True, text=True, check=True).stdout
            if marker in text:
                break
        else:
            raise SystemExit(f"no page shows {marker!r}")
        subprocess.run(["pdftoppm", "-png", "-r", "110", "-f", str(page), "-l", str(page), "-singlefile",
                        str(pdf), str(tmp / "page")], check=True)
        shutil.copyfile(tmp / "page.png", out_png)
    print(out_png)
    return out_png


if __name__ == "__main__":
    main()
