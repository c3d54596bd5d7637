"""One LibreOffice process for every recalculation of a test process (run by the system Python,
which has LibreOffice's ``uno`` module: Debian's python3-uno; started by tests/libreoffice.py).

    /usr/bin/python3 tests/lo_bridge.py SOFFICE PROFILE_DIR

starts ``SOFFICE`` headless on a private pipe with the forced-recalculation profile at
``PROFILE_DIR`` (tests/libreoffice.py ``make_profile``), then reads one JSON request a line on
stdin, ``{"src": path, "out": path}`` (and ``"filter"``: ``calc_pdf_Export`` for a PDF), and for each:
loads ``src`` hidden (the profile makes LibreOffice recalculate every formula on load, as for ``soffice
--convert-to``), stores it as .xlsx at ``out`` (the filter ``--convert-to`` uses; or the request's)
and closes it, answering one JSON line, ``{"ok": true}`` or ``{"error": text}``. At the end of
stdin (or ``{"quit": true}``) LibreOffice is terminated and the script exits.

Why: each ``soffice --convert-to`` starts LibreOffice and its Calc filters anew, about 1.3 s of
CPU and 2.5-3.8 s of wall time even for a one-cell workbook (measured on the 2-core machine);
the suite recalculates about 45 times per run.
"""

from __future__ import annotations

import json
import os
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
