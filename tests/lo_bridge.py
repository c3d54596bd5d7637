"""One LibreOffice process for every recalculation of a test process (run by the system Python,
which has LibreOffice's ``uno`` module: Debian's python3-uno; started by tests/libreoffice.py).

    /usr/bin/python3 tests/lo_bridge.py SOFFICE PROFILE_DIR

starts ``SOFFICE`` headless on a private pipe with the forced-recalculation profile at
``PROFILE_DIR`` (tests/libreoffice.py ``make_profile``), then reads one JSON request a line on
stdin, ``{"src": path, "out": path}`` (and ``"filter"``: ``calc_pdf_Export`` for a PDF; ``"values"``: a
path), and for each: loads ``src`` hidden (the profile makes LibreOffice recalculate every formula on
load, as for ``soffice --convert-to``), stores it as .xlsx at ``out`` (the filter ``--convert-to``
uses; or the request's; no store when ``out`` is null), writes its cell values as JSON at ``values``
(:func:`sheet_values`) and closes it, answering one JSON line, ``{"ok": true}`` or ``{"error": text}``. At the end of
stdin (or ``{"quit": true}``) LibreOffice is terminated and the script exits.

Why: each ``soffice --convert-to`` starts LibreOffice and its Calc filters anew, about 1.3 s of
CPU and 2.5-3.8 s of wall time even for a one-cell workbook (measured on the 2-core machine);
the suite recalculates about 45 times per run.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import uno
from com.sun.star.beans import PropertyValue


def _props(**kw):
    out = []
    for k, v in kw.items():
        p = PropertyValue()
        p.Name, p.Value = k, v
        out.append(p)
    return tuple(out)


def _url(path: str) -> str:
    return uno.systemPathToFileUrl(os.path.abspath(path))


# every sheet as CSV (token 12, -1: one file a sheet, "<name>-<sheet>.csv"), texts quoted (token 7), the
# values not as shown (token 9 false): a number unquoted, TRUE/FALSE for a boolean, an ISO date for a date
_CSV = ("Text - txt - csv (StarCalc)", "44,34,76,1,,0,true,true,false,false,false,-1")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(?: \d{2}:\d{2}:\d{2})?|\d{2}:\d{2}:\d{2}")  # a date, date-time or time
_FIELD = re.compile(r'"((?:[^"]|"")*)"|([^,\n]*)')


def _csv_cells(text: str) -> list[list[tuple[str, bool]]]:
    """The fields of LibreOffice's CSV as rows of (text, quoted)."""
    rows, row, i, n = [], [], 0, len(text)
    while i < n:
        m = _FIELD.match(text, i)
        quoted = m.group(1) is not None
        row.append((m.group(1).replace('""', '"') if quoted else m.group(2), quoted))
        i = m.end()
        if i < n and text[i] == ",":
            i += 1
        else:
            rows.append(row)
            row = []
            i += 1
    return rows


def sheet_values(doc, scratch: str) -> list[dict]:
    """Every sheet's used area as LibreOffice computed it, in two bulk reads: ``getDataArray`` over
    UNO (a float or a text a cell, "" when empty, None for an error) and one CSV store of every
    sheet (``_CSV``, in ``scratch``), which says what the array does not: an error's text
    (``Err:502``, ``#DIV/0!``), and which numbers are booleans (TRUE/FALSE) or dates (an ISO text).
    A cell is a float, a text, "" (blank), or {"error": text}, {"bool": b} or {"date": number}.
    tests/libreoffice.py turns them into the values openpyxl reads from LibreOffice's .xlsx store,
    in a tenth of the time the store takes (0.1-0.2 s against 0.5-2.4 s a workbook, measured)."""
    prefix = os.path.join(scratch, "values")
    doc.storeToURL(_url(prefix + ".csv"), _props(FilterName=_CSV[0], FilterOptions=_CSV[1], Overwrite=True))
    out = []
    for sheet in doc.Sheets:
        cursor = sheet.createCursor()
        cursor.gotoEndOfUsedArea(False)
        end = cursor.RangeAddress
        rows = [list(r) for r in sheet.getCellRangeByPosition(0, 0, end.EndColumn, end.EndRow).getDataArray()]
        path = f"{prefix}-{sheet.Name}.csv"
        with open(path, encoding="utf-8", newline="") as f:
            fields = _csv_cells(f.read())
        os.unlink(path)
        for r, row in enumerate(rows):
            for c, v in enumerate(row):
                if v is None or type(v) is float:
                    text, quoted = fields[r][c] if r < len(fields) and c < len(fields[r]) else ("", False)
                    if v is None:
                        row[c] = {"error": text}
                    elif not quoted and text in ("TRUE", "FALSE"):
                        row[c] = {"bool": text == "TRUE"}
                    elif not quoted and _DATE.fullmatch(text):
                        row[c] = {"date": v}
        out.append({"name": sheet.Name, "rows": rows})
    return out


def main(soffice: str, profile: str) -> int:
    pipe = f"planner_lo_{os.getpid()}"
    env = {**os.environ, "HOME": profile}
    proc = subprocess.Popen([soffice, f"-env:UserInstallation={_url(profile)}", "--headless", "--norestore",
                             "--invisible", "--nologo", "--nodefault",
                             f"--accept=pipe,name={pipe};urp;StarOffice.ComponentContext"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        local = uno.getComponentContext()
        resolver = local.ServiceManager.createInstanceWithContext("com.sun.star.bridge.UnoUrlResolver", local)
        ctx = None
        deadline = time.monotonic() + 120
        while ctx is None:
            try:
                ctx = resolver.resolve(f"uno:pipe,name={pipe};urp;StarOffice.ComponentContext")
            except Exception:
                if proc.poll() is not None or time.monotonic() > deadline:
                    print(json.dumps({"error": f"LibreOffice did not start (exit {proc.poll()})"}), flush=True)
                    return 1
                time.sleep(0.05)
        desktop = ctx.ServiceManager.createInstanceWithContext("com.sun.star.frame.Desktop", ctx)
        print(json.dumps({"ready": True}), flush=True)
        for line in sys.stdin:
            req = json.loads(line)
            if req.get("quit"):
                break
            try:
                doc = desktop.loadComponentFromURL(_url(req["src"]), "_blank", 0, _props(Hidden=True))
                if doc is None:
                    raise RuntimeError(f"LibreOffice could not load {req['src']}")
                try:
                    # no calculateAll(): the profile's OOXMLRecalcMode 0 has recalculated every formula on load, as
                    # for --convert-to (a second pass cost 0.04-0.14 s a workbook; test_recalc's canary, a wrong
                    # stored value that must come back right, fails if the load did not recalculate)
                    # the filter --convert-to uses for .xlsx, or for .pdf ("calc_pdf_Export", as `--convert-to pdf`)
                    if req.get("values"):
                        with open(req["values"], "w", encoding="utf-8") as f:
                            json.dump(sheet_values(doc, os.path.dirname(req["values"])), f)
                    if req.get("out"):
                        doc.storeToURL(_url(req["out"]), _props(FilterName=req.get("filter", "Calc MS Excel 2007 XML"),
                                                                Overwrite=True))
                finally:
                    doc.close(True)
                print(json.dumps({"ok": True}), flush=True)
            except Exception as e:  # the answer says what failed; the caller raises it
                print(json.dumps({"error": f"{type(e).__name__}: {e}"}), flush=True)
        try:
            desktop.terminate()
        except Exception:  # the bridge goes down with the office: expected
            pass
        return 0
    finally:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
