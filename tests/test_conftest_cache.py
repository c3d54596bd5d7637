"""conftest's reuse of an opened read-only workbook (``read_only_book``) never answers from a
file that has changed since: the same path written again, in place or replaced, is read afresh."""

from __future__ import annotations

import os

import openpyxl

from conftest import sheet_values, value_book


def _book(path, value) -> None:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "T"
    ws.append(["x [unit]"])
    ws.append([value])
    wb.save(path)


def test_a_file_written_again_is_read_again(tmp_path):
    path = tmp_path / "t.xlsx"
    _book(path, 1)
    assert sheet_values(path, "T") == [{"x": 1}]
    assert sheet_values(path, "T") == [{"x": 1}]          # the same unchanged file: the same rows
    # in place (same inode), the same size, the same mtime put back: the ctime still moves
    st = os.stat(path)
    other = tmp_path / "o.xlsx"
    _book(other, 2)
    data = other.read_bytes()
    assert len(data) == st.st_size                     # the same size: only the content differs
    with open(path, "r+b") as fh:
        fh.write(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(path).st_ino == st.st_ino and os.stat(path).st_mtime_ns == st.st_mtime_ns
    assert sheet_values(path, "T") == [{"x": 2}]
    assert value_book(path, "T")["T"]["A2"].value == 2
    # replaced by another file (a new inode), as the planner's commit does
    _book(other, 3)
    os.replace(other, path)
    assert sheet_values(path, "T") == [{"x": 3}]
    assert value_book(path, "T")["T"]["A2"].value == 3
