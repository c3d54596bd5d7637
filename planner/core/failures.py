"""Every failure of a command is one of three kinds (issue 17, item 7):

* a located input problem (:class:`~planner.core.errors.InputError`, a wrong option): exit 2;
* an **environment** problem, named as such with the path and the cause (disk full,
  permission, read-only file system, a folder where a file is expected, out of memory):
  exit 1 — :func:`environment_message`;
* a genuine internal error: exit 1, with a line saying how to report it — :func:`internal_message`.

Library exceptions that wrap an ``OSError`` (XlsxWriter's ``FileCreateError``) are unwrapped
first (:func:`os_error_of`), so a full disk under XlsxWriter is a full disk, not a bug.
"""

from __future__ import annotations

import errno
import os

REPORT = ("this is a bug in the planner: please report it to the planner's maintainers (the issue "
          "tracker of its repository) with the command line, this message and, if you can, the input "
          "workbook; PLANNER_DEBUG=1 shows the traceback")

CAUSES = {
    errno.ENOSPC: "the disk is full (no space left on the device)",
    errno.EDQUOT: "the disk quota is exceeded",
    errno.EFBIG: "the file is too large for the file system",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EROFS: "the file system is read-only",
    errno.EISDIR: "is a folder, where a file is expected",
    errno.ENOTDIR: "a part of the path is a file, where a folder is expected",
    errno.ELOOP: "too many levels of symbolic links (a symlink loop?)",
    errno.ENAMETOOLONG: "the file name is too long",
    errno.ENOENT: "no such file or folder",
    errno.EMFILE: "too many open files",
    errno.EIO: "input/output error (a failing disk or a lost network share?)",
    errno.ETXTBSY: "the file is busy",
    errno.EBUSY: "the file or device is busy",
}


def os_error_of(err: BaseException) -> OSError | None:
    """The ``OSError`` behind ``err`` (itself, a wrapped first argument, or its cause chain)."""
    seen = set()
    e: BaseException | None = err
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, OSError):
            return e
        inner = e.args[0] if e.args and isinstance(e.args[0], OSError) else None
        if inner is not None:
            return inner
        e = e.__cause__ or e.__context__
    return None


def environment_message(err: OSError) -> str:
    """``cannot write /x/plan.xlsx: the disk is full (...)``: the path and the cause."""
    cause = CAUSES.get(err.errno or -1) or (err.strerror or str(err) or type(err).__name__)
    where = err.filename if err.filename is not None else ""
    if isinstance(where, bytes):
        where = os.fsdecode(where)
    where = str(where)
    if err.filename2:
        where += f" -> {err.filename2}"
    return f"environment problem: {where + ': ' if where else ''}{cause}"


def internal_message(err: BaseException) -> str:
    return f"internal error ({type(err).__name__}: {err}); {REPORT}"
