"""One run, one transaction: every output of a run is staged in a private folder beside
its destination, then moved into place together (issue 17).

:class:`Outputs` is used by ``planner run`` and ``planner diff``::

    with Outputs([workbook, memo_md, memo_html, eml]) as tx:
        write_output(plan, tx.path(workbook), tmpdir=tx.tmpdir)
        tx.path(memo_md).write_bytes(...)
        tx.commit()              # every file renamed into place, signals held off

Promises (each has a test in ``tests/test_transaction.py``):

* **Nothing the user had is touched before** :meth:`Outputs.commit`. The staged files
  live in ``.planner-stage-<pid>@<host>-<random>/`` (mode 0700) in each destination folder (the
  same file system, so the final step is a ``rename``); each keeps its final file name, so
  an ``.eml`` attaches the workbook under its real name.
* **Nothing is left behind** on any exit path: the staging folders (and the folders the
  run had to create for its outputs) are removed when the ``with`` block ends, by an
  exception, ``KeyboardInterrupt`` (SIGINT) or the SIGTERM exception of :mod:`planner.cli.main`.
  XlsxWriter's constant-memory temporary files go into the staging folder too
  (``tmpdir``, and :data:`tempfile.tempdir` for the duration, so any library's
  ``tempfile`` use lands there). A run killed with SIGKILL cannot clean up: its folder
  is removed by the next run on the same destination on the same machine (the pid in the
  name is no longer alive).
* **The set is committed together**: SIGINT and SIGTERM are blocked while the files are
  renamed (:func:`signals_held`), so an interruption lands before the first
  rename or after the last, never between the workbook and its memo.
* **Two runs cannot interleave**: an exclusive :func:`fcntl.flock` on each destination
  *folder* (a documented equivalent of a lock file that leaves no file behind) is held
  from staging to commit. A second run on the same folder waits (and says so), then
  commits its whole set after the first. (Locks are advisory and local: a folder on a
  network file system shared by two machines is not covered.)
* **An output this run does not write is not left stale**: a target given as *optional*
  (``Outputs(..., optional=[...])``; :func:`write_outputs` passes every file the memo may
  write) that is not staged is removed by the commit, in the same held block, and put
  back if the commit fails: a ``--no-charts`` run does not leave last quarter's
  ``<stem>-ttft.png`` beside the new memo, and a ``--no-memo`` run does not leave last
  quarter's memo and charts beside the new workbook (:attr:`Outputs.removed` lists them, and
  the command says so). A symbolic link there is left alone (:attr:`Outputs.links_kept`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import signal
import sys
import tempfile
from pathlib import Path

STAGE_PREFIX = ".planner-stage-"
_STAGE = re.compile(re.escape(STAGE_PREFIX) + r"(\d+)@([^-]*)-")


def _host() -> str:
    """This machine's name, as it can stand in a folder name (a stale folder is only judged
    by the machine whose process made it: a pid means nothing on another host)."""
    import socket

    return re.sub(r"[^A-Za-z0-9.]", "_", socket.gethostname())[:40]
_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def _file_mode(target: Path) -> int:
    """The mode of the file replaced, else 0666 less the umask (mkstemp would make 0600)."""
    try:
        return target.stat().st_mode & 0o777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def remove_stale(folder: Path) -> list[Path]:
    """Remove staging folders in ``folder`` whose run no longer exists (killed with SIGKILL).
    Called with the folder's lock held, so a live run's folder is never taken."""
    removed = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for name in names:
        m = _STAGE.match(name)
        if m and m.group(2) == _host() and not _alive(int(m.group(1))):
            shutil.rmtree(folder / name, ignore_errors=True)
            removed.append(folder / name)
    return removed


@contextlib.contextmanager
def signals_held():
    """SIGINT and SIGTERM held off: recorded while the block runs, delivered (to the handlers
    in place before) when it ends. Python-level, not ``pthread_sigmask``: a process-directed
    signal goes to any thread that does not block it, and Python runs its handler in the main
    thread whichever thread received it. A no-op off the main thread."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    old = {s: signal.getsignal(s) for s in _SIGNALS}
    for s in _SIGNALS:
        signal.signal(s, lambda signum, frame: pending.append(signum))
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        for signum in dict.fromkeys(pending):
            signal.raise_signal(signum)


class Outputs:
    """The outputs of one run, staged and committed together (see the module docstring).

    Parameters
    ----------
    targets : list of path
        Every file the run writes. Their folders are made if missing (and removed again if
        the run does not commit).
    optional : list of path, optional
        Targets (also listed in ``targets``) the run may leave unwritten: the commit removes
        an older regular file of that name instead of requiring a staged one.
    wait_message : callable, optional
        Called with the folder when another run holds its lock (default: a line on stderr).
    """

    def __init__(self, targets, *, optional=(), wait_message=None):
        self.targets = [Path(os.path.abspath(t)) for t in targets]
        if len({str(t) for t in self.targets}) != len(self.targets):
            raise ValueError("two outputs of one run have the same path")
        self.optional = {Path(os.path.abspath(t)) for t in optional}
        if not self.optional <= set(self.targets):
            raise ValueError("an optional output must be one of the targets")
        self._wait = wait_message or (lambda d: print(f"planner: waiting for another planner run writing in "
                                                      f"{d} to finish", file=sys.stderr))
        self._stage: dict[Path, Path] = {}   # destination folder -> its staging folder
        self._locks: list[int] = []
        self._made: list[Path] = []           # folders this run created (removed unless committed)
        self._saved_tempdir: str | None = None
        self._tempdir_set = False
        self.committed = False
        self.removed: list[Path] = []      # older optional targets the commit removed
        self.links_kept: list[Path] = []   # optional targets not written that are symbolic links: left alone

    # ------------------------------------------------------------------ setup
    def _make_folder(self, folder: Path) -> None:
        missing = []
        p = folder
        while not p.exists():
            missing.append(p)
            p = p.parent
        if not p.is_dir():  # the first part that exists is a file: name it, not the folder below
            raise NotADirectoryError(errno.ENOTDIR, "not a folder", str(p))
        for d in reversed(missing):
            try:
                os.mkdir(d)
            except FileExistsError:  # another run made it just now: not ours to remove
                continue
            self._made.append(d)
        if not folder.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, "not a folder", str(folder))

    def _lock(self, folder: Path) -> None:
        import fcntl

        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        self._locks.append(fd)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._wait(folder)
            fcntl.flock(fd, fcntl.LOCK_EX)

    def __enter__(self) -> "Outputs":
        for t in self.targets:
            if t.is_dir():
                raise IsADirectoryError(errno.EISDIR, "is a folder, a file is expected here", str(t))
        try:
            with signals_held():  # a folder made is a folder recorded, to be removed
                for folder in sorted({t.parent for t in self.targets}):  # one order: no deadlock
                    self._make_folder(folder)
            for folder in sorted({t.parent for t in self.targets}):
                self._lock(folder)
                remove_stale(folder)
                with signals_held():
                    self._stage[folder] = Path(tempfile.mkdtemp(prefix=f"{STAGE_PREFIX}{os.getpid()}@{_host()}-",
                                                                dir=folder))
            self._saved_tempdir = tempfile.tempdir
            tempfile.tempdir, self._tempdir_set = str(self.tmpdir), True
        except BaseException:
            self._cleanup()
            raise
        return self

    # ------------------------------------------------------------------ use
    @property
    def tmpdir(self) -> Path:
        """The staging folder of the first target: for XlsxWriter's temporary files."""
        return self._stage[self.targets[0].parent]

    def path(self, target) -> Path:
        """Where to write ``target`` (one of the targets) before the commit."""
        t = Path(os.path.abspath(target))
        if t not in self.targets:
            raise KeyError(f"{target} is not an output of this run")
        return self._stage[t.parent] / t.name

    def commit(self) -> None:
        """Move every staged file into place (all of them must exist), signals held off."""
        staged = [(self.path(t), t) for t in self.targets]
        missing = [str(t) for s, t in staged if not s.is_file() and t not in self.optional]
        # an optional target not written: an older regular file there is removed (below)
        staged = [(s, t) for s, t in staged if s.is_file() or (t.is_file() and not t.is_symlink())]
        if missing:
            raise RuntimeError(f"output(s) not written before commit: {', '.join(missing)}")
        for s, t in staged:
            if t.is_dir() and not t.is_symlink():
                raise IsADirectoryError(errno.EISDIR, "is a folder, a file is expected here", str(t))
        gone = [t for s, t in staged if not s.is_file()]  # older files this run does not write again
        links = [t for t in self.targets if t in self.optional and t.is_symlink() and not self.path(t).is_file()]
        with signals_held():
            for s, t in staged:
                if s.is_file():
                    os.chmod(s, _file_mode(t))
            # what each target held, kept in its staging folder (a hard link: same file system),
            # so that a rename failing part-way puts every earlier target back as it was
            backups: list[tuple[Path, Path | None]] = []
            for s, t in staged:
                keep = None
                if t.exists() and not t.is_symlink():
                    keep = s.with_name(s.name + ".previous")
                    try:
                        os.link(t, keep)
                    except OSError:  # no hard links here: a copy does the same
                        shutil.copy2(t, keep)
                backups.append((t, keep))
            done: list[tuple[Path, Path | None]] = []
            try:
                for (s, t), backup in zip(staged, backups):
                    if s.is_file():
                        os.replace(s, t)
                    else:  # not written by this run: the older file goes (its backup is kept)
                        os.unlink(t)
                    done.append(backup)
            except BaseException:
                for t, keep in reversed(done):
                    with contextlib.suppress(OSError):
                        if keep is not None:
                            os.replace(keep, t)
                        else:
                            os.unlink(t)
                raise
            self.committed = True
            self.removed, self.links_kept = gone, links
            self._made.clear()  # the folders hold the outputs now

    # ------------------------------------------------------------------ teardown
    def _cleanup(self) -> None:
        with signals_held():
            if self._tempdir_set:
                tempfile.tempdir = self._saved_tempdir
                self._tempdir_set = False
            for d in self._stage.values():
                shutil.rmtree(d, ignore_errors=True)
            self._stage.clear()
            for d in reversed(self._made):
                with contextlib.suppress(OSError):
                    os.rmdir(d)  # only if still empty
            self._made.clear()
            for fd in self._locks:
                with contextlib.suppress(OSError):
                    os.close(fd)  # closing the descriptor releases the flock
            self._locks.clear()

    def __exit__(self, *exc) -> None:
        self._cleanup()



@contextlib.contextmanager
def _writing(target):
    """An ``OSError`` that names no file (a ``write`` on a full disk) is given the output's
    path; XlsxWriter's ``FileCreateError`` is unwrapped to the ``OSError`` inside."""
    from planner.core.failures import os_error_of

    try:
        yield
    except Exception as err:
        e = os_error_of(err)
        if e is None:
            raise
        if e.filename is None or STAGE_PREFIX in str(e.filename):  # the user's path, not the staged one
            raise OSError(e.errno, e.strerror or str(e), str(target)) from err
        raise e from None


def write_outputs(out, write_workbook, memo=None, eml=None, *, memo_paths=(), to=None, sender=None, subject=None,
                  date=None, removed: list | None = None):
    """The outputs of ``planner run`` / ``planner diff`` as one transaction.

    The staging folders are made (and locked) first, so a destination that cannot be written
    is refused before anything is drawn or rendered. Then ``memo`` (a
    :class:`planner.memo.render.Memo`, or a callable returning one, called here: the memo's
    charts are drawn only once the outputs can be staged), ``write_workbook(path, tmpdir)``
    writes the workbook at ``path`` (staged) and returns what the caller wants back, the
    memo's files (:func:`planner.memo.render.memo_files`) and the ``.eml`` (built from the
    staged workbook, attached under its final name) are staged beside it, and everything is
    committed together. ``memo_paths``: every file the memo may write (its ``memo_paths``);
    one this memo does not write (charts after ``--no-charts``; every one of them without a
    memo, ``--no-memo``: an earlier run's memo beside a new workbook would not match it) is
    removed by the commit. ``removed``: a list extended with the files removed so, then with
    the symbolic links left alone, as ``(path, "removed" | "link")``.
    Returns ``(write_workbook's result, the memo or None)``.
    """
    from planner.memo.render import memo_files

    if memo is not None and not memo_paths:
        if callable(memo):
            raise ValueError("a memo built inside the transaction needs its memo_paths")
        memo_paths = memo.paths.values()
    may_write = [Path(p) for p in memo_paths]  # without a memo too: an older one there is removed
    targets = [Path(out)] + may_write + ([Path(eml)] if eml else [])
    with Outputs(targets, optional=may_write) as tx:
        if callable(memo):
            memo = memo()
        files = memo_files(memo) if memo is not None else []  # (tx.path refuses a file not in may_write)
        with _writing(out):
            result = write_workbook(tx.path(out), tx.tmpdir)
        for p, data in files:
            with _writing(p):
                tx.path(p).write_bytes(data)
        if eml:
            from planner.memo.mail import build_message, message_bytes

            msg = build_message(memo, tx.path(out), to=to, sender=sender, subject=subject, date=date)
            with _writing(eml):
                tx.path(eml).write_bytes(message_bytes(msg))
        tx.commit()
    if removed is not None:
        removed.extend([(p, "removed") for p in tx.removed] + [(p, "link") for p in tx.links_kept])
    return result, memo
