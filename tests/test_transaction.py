"""One run, one transaction (issue 17): the outputs of ``run`` and ``diff`` are staged in a
private folder beside the destination and committed together; every exit path leaves no
file in $TMPDIR or beside the output that was not there before; failures are classified."""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import EXAMPLE, SMALL_WORKLOADS, edited_example, planner_env, repeat_workloads, run_cli, trim_workloads
from planner.cli import transaction
from planner.cli.transaction import STAGE_PREFIX, Outputs, signals_held

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mounts a tmpfs: needs root (CI runs as root)")


def tree(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (relative path -> bytes); folders as ``name/``."""
    out = {}
    for p in sorted(folder.rglob("*")):
        rel = str(p.relative_to(folder))
        out[rel + ("/" if p.is_dir() else "")] = b"" if p.is_dir() else p.read_bytes()
    return out


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """A fresh, empty $TMPDIR for in-process runs (tempfile caches its folder: patch it)."""
    d = tmp_path / "tmpdir"
    d.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(d))
    return d


@pytest.fixture
def old_outputs(tmp_path):
    """An output folder holding last quarter's workbook, memo and email."""
    out = tmp_path / "out"
    out.mkdir()
    for name in ("plan.xlsx", "plan-memo.md", "plan-memo.html", "plan-ttft.png", "plan-tpm.png", "plan.eml"):
        (out / name).write_bytes(f"old {name}".encode())
    return out


# ----------------------------------------------------------------------------- the unit
def test_outputs_commit_moves_every_file_and_leaves_no_stage(tmp_path):
    a, b = tmp_path / "x" / "a.xlsx", tmp_path / "y" / "b.eml"
    with Outputs([a, b]) as tx:
        stage = tx.tmpdir
        assert stage.parent == a.parent and stage.name.startswith(f"{STAGE_PREFIX}{os.getpid()}@{transaction._host()}-")
        assert oct(stage.stat().st_mode & 0o777) == "0o700"           # private
        assert tempfile.gettempdir() == str(stage)                   # any library's temp files land here
        tx.path(a).write_bytes(b"A")
        tx.path(b).write_bytes(b"B")
        assert tx.path(b).name == "b.eml" and not a.exists()         # final names, nothing in place yet
        tx.commit()
    assert a.read_bytes() == b"A" and b.read_bytes() == b"B"
    assert sorted(os.listdir(a.parent)) == ["a.xlsx"] and sorted(os.listdir(b.parent)) == ["b.eml"]
    assert tempfile.gettempdir() != str(stage)


def test_outputs_without_commit_touch_nothing_and_remove_made_folders(tmp_path):
    (tmp_path / "keep.xlsx").write_bytes(b"old")
    with pytest.raises(RuntimeError, match="boom"):
        with Outputs([tmp_path / "keep.xlsx", tmp_path / "new" / "deep" / "m.md"]) as tx:
            tx.path(tmp_path / "keep.xlsx").write_bytes(b"new")
            raise RuntimeError("boom")
    assert tree(tmp_path) == {"keep.xlsx": b"old"}


def test_commit_refuses_a_missing_output_and_touches_nothing(tmp_path):
    with pytest.raises(RuntimeError, match="not written before commit"):
        with Outputs([tmp_path / "a.xlsx", tmp_path / "b.md"]) as tx:
            tx.path(tmp_path / "a.xlsx").write_bytes(b"A")
            tx.commit()
    assert tree(tmp_path) == {}


def test_an_optional_output_not_written_is_removed_by_the_commit_and_put_back_on_failure(tmp_path, monkeypatch):
    """An optional target the run does not stage (a chart after --no-charts) loses its older
    file in the commit; when a later rename of the same commit fails, the older file is back."""
    a, chart, md, link = (tmp_path / n for n in ("a.xlsx", "a-ttft.png", "a-memo.md", "a-tpm.png"))
    a.write_bytes(b"old A")
    chart.write_bytes(b"old chart")
    (tmp_path / "elsewhere.png").write_bytes(b"not ours")
    link.symlink_to(tmp_path / "elsewhere.png")  # a symbolic link there is left alone
    with Outputs([a, chart, link], optional=[chart, link]) as tx:
        tx.path(a).write_bytes(b"new A")
        tx.commit()
    assert tree(tmp_path) == {"a.xlsx": b"new A", "a-tpm.png": b"not ours", "elsewhere.png": b"not ours"}
    link.unlink()
    chart.write_bytes(b"old chart")
    real = os.replace

    def flaky(src, dst):  # the memo's rename fails, after the chart was removed
        if Path(dst).name == "a-memo.md":
            raise OSError(5, "Input/output error", str(dst))
        return real(src, dst)

    monkeypatch.setattr(transaction.os, "replace", flaky)
    with pytest.raises(OSError, match="Input/output error"):
        with Outputs([a, chart, md], optional=[chart]) as tx:
            tx.path(a).write_bytes(b"newer A")
            tx.path(md).write_bytes(b"memo")
            tx.commit()
    assert tree(tmp_path) == {"a.xlsx": b"new A", "a-ttft.png": b"old chart", "elsewhere.png": b"not ours"}
    with pytest.raises(ValueError, match="optional output must be one of the targets"):
        Outputs([a], optional=[chart])


@pytest.mark.parametrize("fail_at", [1, 2, 3])
def test_a_rename_failing_inside_the_commit_puts_every_earlier_output_back(tmp_path, monkeypatch, fail_at):
    """The set is committed whole or not at all: when the k-th rename fails (a disk error, a
    target made read-only meanwhile), the targets already replaced get their old files back,
    and a target that did not exist before is removed again."""
    (tmp_path / "a.xlsx").write_bytes(b"old A")
    (tmp_path / "b.md").write_bytes(b"old B")  # c.html did not exist
    real, calls = os.replace, []

    def flaky(src, dst):
        if not str(src).endswith(".previous"):  # the renames of the commit, not of the roll-back
            calls.append(dst)
            if len(calls) == fail_at:
                raise OSError(5, "Input/output error", str(dst))
        return real(src, dst)

    monkeypatch.setattr(transaction.os, "replace", flaky)
    with pytest.raises(OSError, match="Input/output error"):
        with Outputs([tmp_path / "a.xlsx", tmp_path / "b.md", tmp_path / "c.html"]) as tx:
            for name, data in (("a.xlsx", b"new A"), ("b.md", b"new B"), ("c.html", b"new C")):
                tx.path(tmp_path / name).write_bytes(data)
            tx.commit()
    assert tree(tmp_path) == {"a.xlsx": b"old A", "b.md": b"old B"}


def test_signals_are_held_during_the_commit():
    """A SIGTERM sent inside the held block arrives after it, never inside (here: after the
    two 'renames' are recorded)."""
    got = []

    def handler(signum, frame):
        got.append(("signal", list(steps)))

    steps: list[str] = []
    old = signal.signal(signal.SIGTERM, handler)
    try:
        with signals_held():
            os.kill(os.getpid(), signal.SIGTERM)
            steps.append("workbook")
            steps.append("memo")
            assert got == []
        assert got == [("signal", ["workbook", "memo"])]
    finally:
        signal.signal(signal.SIGTERM, old)


def test_stale_stage_of_a_killed_run_is_removed_live_one_kept(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    host = transaction._host()
    (tmp_path / f"{STAGE_PREFIX}{dead.pid}@{host}-abc").mkdir()
    (tmp_path / f"{STAGE_PREFIX}{dead.pid}@{host}-abc" / "x.xlsx").write_bytes(b"half")
    live = tmp_path / f"{STAGE_PREFIX}{os.getppid()}@{host}-def"
    elsewhere = tmp_path / f"{STAGE_PREFIX}{dead.pid}@other-host-ghi"  # another machine's pid: not judged here
    live.mkdir()
    elsewhere.mkdir()
    with Outputs([tmp_path / "p.xlsx"]) as tx:
        tx.path(tmp_path / "p.xlsx").write_bytes(b"P")
        tx.commit()
    assert sorted(os.listdir(tmp_path)) == sorted([live.name, elsewhere.name, "p.xlsx"])


# ----------------------------------------------------------------------------- run: failures late
def _cli_run(src: Path, tmp_path, out: Path, *extra):
    return run_cli("run", src, "-o", out / "plan.xlsx", "--fixed-time", "2026-10-01T09:00:00", *extra,
                   cwd=tmp_path)


def test_memo_path_is_a_folder_nothing_touched(tmp_path, small_example, old_outputs, private_tmp):
    (old_outputs / "plan-memo.html").unlink()
    (old_outputs / "plan-memo.html").mkdir()
    before = tree(old_outputs)
    r = _cli_run(small_example, tmp_path, old_outputs)
    assert r.returncode == 1, r.stderr
    assert f"environment problem: {old_outputs / 'plan-memo.html'}: is a folder" in r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    assert tree(old_outputs) == before and tree(private_tmp) == {}


def test_eml_folder_cannot_be_made_nothing_written(tmp_path, small_example, old_outputs, private_tmp):
    (tmp_path / "blocker").write_bytes(b"a file")
    before = tree(tmp_path)
    r = _cli_run(small_example, tmp_path, old_outputs, "--eml", tmp_path / "blocker" / "mail" / "q4.eml")
    assert r.returncode == 1, r.stderr
    assert f"{tmp_path / 'blocker'}: a part of the path is a file" in r.stderr
    assert tree(tmp_path) == before


def test_a_run_without_charts_removes_the_older_charts_in_its_commit(tmp_path, small_example, old_outputs,
                                                                      private_tmp):
    """--no-charts: last quarter's plan-ttft.png / plan-tpm.png do not stay beside the new memo
    (which shows no chart); the old email, not asked for this time, is not the memo's and stays."""
    r = _cli_run(small_example, tmp_path, old_outputs, "--no-charts")
    assert r.returncode == 0, r.stderr
    after = tree(old_outputs)
    assert sorted(after) == ["plan-memo.html", "plan-memo.md", "plan.eml", "plan.xlsx"]
    assert after["plan.eml"] == b"old plan.eml" and after["plan-memo.md"] != b"old plan-memo.md"
    assert b".png" not in after["plan-memo.md"] and tree(private_tmp) == {}
    assert "no charts" in r.stdout


def test_a_run_without_memo_removes_the_older_memo_and_charts_and_says_so(tmp_path, small_example, old_outputs,
                                                                          private_tmp):
    """--no-memo: last quarter's memo and charts do not stay beside the new workbook (they describe
    the old plan); the commit removes them and the run names them. The old email, not the memo's
    file, stays. On the old code all four files stayed, unmentioned."""
    r = _cli_run(small_example, tmp_path, old_outputs, "--no-memo")
    assert r.returncode == 0, r.stderr
    after = tree(old_outputs)
    assert sorted(after) == ["plan.eml", "plan.xlsx"] and after["plan.eml"] == b"old plan.eml"
    assert after["plan.xlsx"].startswith(b"PK") and tree(private_tmp) == {}
    assert ("planner: removed plan-memo.md, plan-memo.html, plan-ttft.png, plan-tpm.png beside plan.xlsx: left by "
            "an earlier run and not written by this one, they would not match the new workbook") in r.stdout
    again = _cli_run(small_example, tmp_path, old_outputs, "--no-memo")  # nothing left to remove: nothing said
    assert again.returncode == 0 and "removed" not in again.stdout


def test_a_run_without_memo_leaves_a_symbolic_link_and_says_so(tmp_path, small_example, old_outputs, private_tmp):
    (tmp_path / "shared-memo.md").write_bytes(b"someone else's")
    (old_outputs / "plan-memo.md").unlink()
    (old_outputs / "plan-memo.md").symlink_to(tmp_path / "shared-memo.md")
    r = _cli_run(small_example, tmp_path, old_outputs, "--no-memo", "-q")
    assert r.returncode == 0 and r.stdout == "", r.stdout  # -q: problems only
    assert (old_outputs / "plan-memo.md").is_symlink() and (tmp_path / "shared-memo.md").read_bytes() == b"someone else's"
    assert sorted(tree(old_outputs)) == ["plan-memo.md", "plan.eml", "plan.xlsx"]
    (old_outputs / "plan-memo.html").write_bytes(b"old")
    r = _cli_run(small_example, tmp_path, old_outputs, "--no-memo")
    assert "planner: removed plan-memo.html beside plan.xlsx: left by an earlier run and not written by this one, " \
           "it would not match the new workbook" in r.stdout
    assert "planner: left plan-memo.md beside plan.xlsx as it is: a symbolic link is not removed" in r.stdout


def test_without_memo_an_older_memo_is_put_back_when_the_commit_fails(tmp_path, monkeypatch):
    """The removal is part of the commit: when a later step of it fails, the workbook and every
    removed memo file are back as they were."""
    from planner.cli.transaction import write_outputs

    out = tmp_path / "plan.xlsx"
    memo = [tmp_path / n for n in ("plan-memo.md", "plan-memo.html", "plan-ttft.png", "plan-tpm.png")]
    for p in [out] + memo:
        p.write_bytes(f"old {p.name}".encode())
    before = tree(tmp_path)
    real = os.unlink

    def flaky(path, *a, **k):  # the last removal fails, after the workbook and three memo files
        if Path(path).name == "plan-tpm.png":
            raise OSError(5, "Input/output error", str(path))
        return real(path, *a, **k)

    monkeypatch.setattr(transaction.os, "unlink", flaky)
    removed: list = []
    with pytest.raises(OSError, match="Input/output error"):
        write_outputs(out, lambda path, tmpdir: path.write_bytes(b"new"), None, memo_paths=memo, removed=removed)
    monkeypatch.setattr(transaction.os, "unlink", real)
    assert tree(tmp_path) == before and removed == []
    write_outputs(out, lambda path, tmpdir: path.write_bytes(b"new"), None, memo_paths=memo, removed=removed)
    assert tree(tmp_path) == {"plan.xlsx": b"new"} and removed == [(p, "removed") for p in memo]


def test_a_diff_without_memo_removes_the_older_diff_memo(tmp_path, small_example, private_tmp):
    from planner.diff.memo import memo_paths

    other = tmp_path / "other.xlsx"
    other.write_bytes(small_example.read_bytes())
    out = tmp_path / "out" / "d.xlsx"
    old = list(memo_paths(out).values())
    out.parent.mkdir()
    for p in old:
        p.write_bytes(b"an earlier diff's")
    r = run_cli("diff", small_example, other, "-o", out, "--no-memo", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert sorted(tree(out.parent)) == ["d.xlsx"]
    assert f"planner: removed {', '.join(p.name for p in old)} beside d.xlsx" in r.stdout


def test_the_outputs_are_staged_before_the_charts_are_drawn(tmp_path, small_example, private_tmp, monkeypatch):
    """A destination that cannot be written is refused before the memo's charts are drawn (they
    were about 1.7 s of a 2 s failing run of the example); run and diff alike."""
    from planner.diff import memo as diff_memo
    from planner.memo import render

    drawn = []
    real_charts, real_bridge = render.make_charts, diff_memo.bridge_chart
    monkeypatch.setattr(render, "make_charts", lambda plan: drawn.append("run") or real_charts(plan))
    monkeypatch.setattr(diff_memo, "bridge_chart", lambda d, cur: drawn.append("diff") or real_bridge(d, cur))
    (tmp_path / "blocker").write_bytes(b"a file")
    blocked = tmp_path / "blocker" / "out" / "plan.xlsx"
    r = run_cli("run", small_example, "-o", blocked, cwd=tmp_path)
    assert r.returncode == 1 and f"{tmp_path / 'blocker'}: a part of the path is a file" in r.stderr, r.stderr
    new, _ = edited_example(tmp_path / "new.xlsx", lambda wb: (trim_workloads(wb, SMALL_WORKLOADS),
                                                                setattr(wb["Workloads"]["A2"], "value", "renamed")))
    r = run_cli("diff", small_example, new, "-o", blocked, cwd=tmp_path)
    assert r.returncode == 1 and "a part of the path is a file" in r.stderr, r.stderr
    assert drawn == [] and tree(private_tmp) == {}
    for cmd in (["run", small_example], ["diff", small_example, new]):  # a destination that can be staged
        r = run_cli(*cmd, "-o", tmp_path / "out" / f"{cmd[0]}.xlsx", cwd=tmp_path)
        assert r.returncode == 0, r.stderr
    assert drawn == ["run", "diff"]


@pytest.mark.parametrize("fails", [".eml", "-memo.html", ".xlsx"])
def test_disk_full_at_any_step_nothing_touched(tmp_path, small_example, old_outputs, private_tmp, monkeypatch, fails):
    """ENOSPC injected when the named output is staged: the message names the disk and the path;
    the old set is intact, no staged or temporary file is left."""
    import pathlib

    import xlsxwriter.workbook

    real_write, real_zip = pathlib.Path.write_bytes, xlsxwriter.workbook.ZipFile

    def full(path):
        return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    def write_bytes(self, data):
        if self.name.endswith(fails):
            raise full(self)
        return real_write(self, data)

    def zip_file(file, *a, **k):  # XlsxWriter writes the workbook through its ZipFile (and wraps the error)
        if str(file).endswith(fails):
            raise full(file)
        return real_zip(file, *a, **k)

    monkeypatch.setattr(pathlib.Path, "write_bytes", write_bytes)
    monkeypatch.setattr(xlsxwriter.workbook, "ZipFile", zip_file)
    before = tree(old_outputs)
    # the workbook is staged first, before any memo file: its case draws no charts (the other two
    # fail after the charts were staged, and show those staged files removed too)
    charts = ["--no-charts"] if fails == ".xlsx" else []
    r = _cli_run(small_example, tmp_path, old_outputs, "--eml", old_outputs / "plan.eml", *charts)
    assert r.returncode == 1, r.stderr
    assert "environment problem" in r.stderr and "the disk is full" in r.stderr, r.stderr
    assert fails in r.stderr and "internal error" not in r.stderr
    assert tree(old_outputs) == before and tree(private_tmp) == {}


@needs_root
def test_real_disk_full_on_tmpfs(tmp_path, private_tmp):
    """A 256 KiB tmpfs: the workbook (about 400 KB) cannot be written. Exit 1, the cause and the
    path; the old file and nothing else on the file system."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)], check=True)
    try:
        (mnt / "plan.xlsx").write_bytes(b"old plan")
        # the whole example (the workbook must be over 256 KiB); the workbook is the point: --no-charts
        r = run_cli("run", EXAMPLE, "-o", mnt / "plan.xlsx", "--no-charts", cwd=tmp_path)
        assert r.returncode == 1, r.stderr
        assert "the disk is full" in r.stderr and str(mnt) in r.stderr and "internal error" not in r.stderr
        assert tree(mnt) == {"plan.xlsx": b"old plan"} and tree(private_tmp) == {}
    finally:
        import gc

        gc.collect()  # the failed ZipFile's handle lives in a reference cycle until collected
        if subprocess.run(["umount", str(mnt)]).returncode:
            subprocess.run(["umount", "-l", str(mnt)], check=True)
            pytest.fail("a file on the full disk was left open")


# ----------------------------------------------------------------------------- every exit path
def _internal(monkeypatch):
    from planner.memo import render as memo

    monkeypatch.setattr(memo, "memo_files", lambda m: (_ for _ in ()).throw(ZeroDivisionError("injected")))


EXITS = {
    # name: (arguments after the input, setup, exit status, text on stderr)
    "ok": ([], None, 0, ""),
    "input problem": (None, None, 2, "problem"),
    "usage problem": (["--to", "x@example.org"], None, 2, "need --eml"),
    "internal error": ([], _internal, 1, "this is a bug in the planner: please report it"),
}


@pytest.mark.parametrize("case", list(EXITS))
@pytest.mark.parametrize("command", ["run", "diff"])
def test_every_exit_path_leaves_nothing_new(tmp_path, private_tmp, monkeypatch, case, command, small_example):
    args, setup, code, said = EXITS[case]
    src = tmp_path / "src"
    src.mkdir()
    small = lambda wb: trim_workloads(wb, SMALL_WORKLOADS)  # every exit path, at a third of the time
    old, new = src / "old.xlsx", src / "new.xlsx"  # copies of small_example: the example so cut
    shutil.copyfile(small_example, old)
    shutil.copyfile(small_example, new)
    if args is None:  # a wrong cell
        new, _ = edited_example(src / "new.xlsx", lambda wb: (small(wb), setattr(wb["Settings"]["B3"], "value", "oops")))
        args = []
    if setup:
        setup(monkeypatch)
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_bytes(b"keep")
    before = tree(tmp_path)
    head = ["run", new] if command == "run" else ["diff", old, new]
    r = run_cli(*head, "-o", out / "plan.xlsx", *args, cwd=tmp_path)
    assert r.returncode == code, r.stderr
    assert said in r.stderr and "Traceback" not in r.stderr
    after = tree(tmp_path)
    new_files = sorted(set(after) - set(before))
    if code == 0:
        expected = {"run": ["plan-memo.html", "plan-memo.md", "plan-tpm.png", "plan-ttft.png", "plan.xlsx"],
                    "diff": ["plan-bridge.png", "plan-memo.html", "plan-memo.md", "plan.xlsx"]}[command]
        assert new_files == [f"out/{n}" for n in expected]
    else:
        assert new_files == []
    assert {k: v for k, v in after.items() if k in before} == before
    assert tree(private_tmp) == {}


# ----------------------------------------------------------------------------- signals, lock
@pytest.fixture(scope="module")
def big_input(tmp_path_factory) -> Path:
    # 500 workloads: the kill comes within ~10 ms of the staging folder appearing, and writing them
    # lasts over a second (a run that committed first leaves no stage and fails the test)
    path, _ = edited_example(tmp_path_factory.mktemp("big") / "big.xlsx", lambda wb: repeat_workloads(wb, 500))
    return path


def _popen(args, cwd: Path, tmpdir: Path):
    return subprocess.Popen([sys.executable, "-m", "planner", *map(str, args)], cwd=cwd,
                            env=planner_env({"TMPDIR": str(tmpdir)}), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _wait_for(cond, proc, timeout=120.0, what="") -> None:
    deadline = time.time() + timeout
    while not cond():
        assert proc.poll() is None, f"the run ended before {what}: {proc.communicate()}"
        assert time.time() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


# SIGTERM/SIGINT while writing 1,000 workloads: tests/test_hardening.py::test_interrupted_run_leaves_no_partial_file
# (it checks the output folder, the old memo and $TMPDIR)


def test_a_second_run_waits_for_the_lock_and_then_commits_its_whole_set(tmp_path, small_example):
    out, tmpd = tmp_path / "out", tmp_path / "tmp"
    out.mkdir()
    tmpd.mkdir()
    log = tmp_path / "stderr.txt"
    fd = os.open(out, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)  # another run is committing in this folder
    try:
        with open(log, "w") as err_file:
            proc = subprocess.Popen([sys.executable, "-m", "planner", "run", str(small_example), "-o", str(out / "plan.xlsx"),
                                     "--eml", str(out / "plan.eml")], cwd=tmp_path,
                                    env=planner_env({"TMPDIR": str(tmpd)}), stdout=subprocess.DEVNULL, stderr=err_file)
        _wait_for(lambda: "waiting for another planner run" in log.read_text(), proc, timeout=180, what="the lock")
        time.sleep(0.5)
        assert proc.poll() is None          # it waits, having written nothing
        assert os.listdir(out) == []
    finally:
        os.close(fd)
    assert proc.wait(timeout=180) == 0, log.read_text()
    assert f"waiting for another planner run writing in {out} to finish" in log.read_text()
    assert sorted(os.listdir(out)) == ["plan-memo.html", "plan-memo.md", "plan-tpm.png", "plan-ttft.png",
                                       "plan.eml", "plan.xlsx"]
    assert tree(tmpd) == {}


@pytest.mark.slow
def test_sigkill_leftover_is_cleaned_by_the_next_run(tmp_path, small_example, big_input):
    out, tmpd = tmp_path / "out", tmp_path / "tmp"
    out.mkdir()
    tmpd.mkdir()
    proc = _popen(["run", big_input, "-o", out / "plan.xlsx", "--no-memo"], tmp_path, tmpd)
    _wait_for(lambda: any(n.startswith(STAGE_PREFIX) for n in os.listdir(out)), proc, what="staging")
    proc.kill()
    proc.communicate()
    assert any(n.startswith(STAGE_PREFIX) for n in os.listdir(out))  # SIGKILL cannot clean up
    r = run_cli("run", small_example, "-o", out / "plan.xlsx", "--no-memo", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert os.listdir(out) == ["plan.xlsx"]


# ----------------------------------------------------------------------------- classified failures
def test_symlink_loops_are_named_not_internal_errors(tmp_path, small_example, private_tmp):
    loop = tmp_path / "loop.xlsx"
    loop.symlink_to(loop)
    r = run_cli("run", loop, "-o", tmp_path / "out" / "p.xlsx", cwd=tmp_path)
    assert r.returncode == 2 and f"{loop}: is a symbolic link that loops" in r.stderr, r.stderr
    folder = tmp_path / "loopdir"
    folder.symlink_to(folder)
    r = run_cli("run", small_example, "-o", folder / "p.xlsx", "--no-memo", cwd=tmp_path)
    assert r.returncode == 1 and "environment problem" in r.stderr and "symbolic links" in r.stderr, r.stderr
    assert sorted(os.listdir(tmp_path)) == ["loop.xlsx", "loopdir", "tmpdir"] and tree(private_tmp) == {}


@needs_root
def test_read_only_file_system_is_an_environment_problem(tmp_path, small_example, private_tmp):
    mnt = tmp_path / "ro"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], check=True)
    try:
        (mnt / "plan.xlsx").write_bytes(b"old")
        subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
        r = run_cli("run", small_example, "-o", mnt / "plan.xlsx", "--no-charts", cwd=tmp_path)  # refused at staging
        assert r.returncode == 1, r.stderr
        assert f"environment problem: {mnt}" in r.stderr and "the file system is read-only" in r.stderr, r.stderr
        assert tree(mnt) == {"plan.xlsx": b"old"} and tree(private_tmp) == {}
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def test_permission_denied_is_an_environment_problem(tmp_path, small_example, private_tmp, monkeypatch):
    """(As root a chmod does not stop a write: the refusal is injected where the staging folder is made.)"""
    def denied(*a, **k):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(k.get("dir") or a[-1]))
    monkeypatch.setattr(transaction.tempfile, "mkdtemp", denied)
    r = run_cli("run", small_example, "-o", tmp_path / "out" / "p.xlsx", "--no-charts", cwd=tmp_path)  # refused at staging
    assert r.returncode == 1
    assert f"environment problem: {tmp_path / 'out'}: permission denied" in r.stderr, r.stderr
    assert sorted(os.listdir(tmp_path)) == ["tmpdir"]  # the folder made for the output is removed again


@pytest.mark.slow
def test_two_runs_on_one_output_leave_one_runs_whole_set(tmp_path, small_example):
    """Started together with different (fixed) input hashes: whichever commits last, the
    workbook's Run sheet, the memo and the email all carry the same run's hash."""
    import email

    import openpyxl

    out, tmpd = tmp_path / "out", tmp_path / "tmp"
    out.mkdir()
    tmpd.mkdir()
    hashes = ["a" * 64, "b" * 64]
    # the hashes are the point, not the charts: --no-charts (the set is workbook, memo, email)
    procs = [_popen(["run", small_example, "-o", out / "plan.xlsx", "--eml", out / "plan.eml", "--fixed-sha256", h,
                     "--no-charts"], tmp_path, tmpd) for h in hashes]
    for p in procs:
        _, err = p.communicate(timeout=180)
        assert p.returncode == 0, err
    run = {r[0]: r[1] for r in openpyxl.load_workbook(out / "plan.xlsx", read_only=True)["Run"].iter_rows(
        values_only=True) if r and r[0]}
    sha = run["input SHA-256"]
    assert sha in hashes
    assert sha in (out / "plan-memo.html").read_text() and sha[:12] in (out / "plan-memo.md").read_text()
    msg = email.message_from_bytes((out / "plan.eml").read_bytes())
    attached = next(p for p in msg.walk() if p.get_filename() == "plan.xlsx").get_payload(decode=True)
    assert attached == (out / "plan.xlsx").read_bytes()
    assert tree(tmpd) == {} and not [n for n in os.listdir(out) if n.startswith(STAGE_PREFIX)]


def test_out_of_memory_is_an_environment_problem(tmp_path, small_example, private_tmp, monkeypatch):
    from planner.plan import build as plan

    monkeypatch.setattr(plan, "build_plan", lambda src: (_ for _ in ()).throw(MemoryError()))
    r = run_cli("run", small_example, "-o", tmp_path / "p.xlsx", cwd=tmp_path)
    assert r.returncode == 1 and "environment problem: out of memory; nothing was written" in r.stderr
    assert "internal error" not in r.stderr and sorted(os.listdir(tmp_path)) == ["tmpdir"]


def test_library_warnings_never_reach_stderr(tmp_path, small_example, monkeypatch):
    import warnings

    from planner.plan import build as plan

    real = plan.build_plan

    def noisy(src):
        import numpy as np

        np.log(np.zeros(1))  # RuntimeWarning: divide by zero encountered in log
        warnings.warn("a library's own warning", DeprecationWarning)
        return real(src)
    monkeypatch.setattr(plan, "build_plan", noisy)
    r = run_cli("validate", small_example, cwd=tmp_path)
    assert r.returncode == 0 and "Warning" not in r.stderr and "divide by zero" not in r.stderr, r.stderr
    d = run_cli("validate", small_example, cwd=tmp_path, env_extra={"PLANNER_DEBUG": "1"})
    assert "planner: debug: RuntimeWarning: divide by zero" in d.stderr


def test_a_missing_dependency_is_an_environment_problem(capsys):
    """A Python without the planner's dependencies (pandas not installed) is the environment's
    problem, said as such with what to do; a missing planner module stays an internal error."""
    from planner.cli import main as cli

    def missing(_args):
        raise ModuleNotFoundError("No module named 'pandas'", name="pandas")

    assert cli._dispatch(missing, None) == 1
    err = capsys.readouterr().err
    assert "environment problem: the Python package 'pandas' is not installed" in err and "pip install" in err
    assert "internal error" not in err

    def ours(_args):
        raise ModuleNotFoundError("No module named 'planner.nowhere'", name="planner.nowhere")

    assert cli._dispatch(ours, None) == 1
    assert "internal error" in capsys.readouterr().err
