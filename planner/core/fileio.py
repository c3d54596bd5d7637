"""File I/O: write a file atomically (temporary file beside the target, then rename)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable


def _file_mode(target: Path) -> int:
    if target.exists():
        return target.stat().st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def save_atomic(target: str | Path, write: Callable[[Path], None]) -> Path:
    """Run ``write(tmp)`` on a temporary file beside ``target``, then rename it into place.

    An existing ``target`` is replaced only once the new file is complete; on any
    failure (or interruption) the temporary file is removed and ``target`` is untouched.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.stem}.", suffix=target.suffix + ".tmp",
                                    dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        write(tmp)
        os.chmod(tmp, _file_mode(target))  # mkstemp makes 0600; follow the umask or the old file
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target
