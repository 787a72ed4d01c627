"""Files that other processes read while they change: atomic replacement, and file locks."""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
import time
from pathlib import Path

LOCK_POLL_S = (0.005, 0.05)
"""First and longest pause between two tries of a taken lock."""


def fsync_dir(directory: Path) -> None:
    """Make a rename in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data``: readers see the old bytes or the new, never a mix.

    Temporary file, fsync, rename, fsync of the directory: after a crash the file holds
    one of the two versions, whole.
    """
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as sink:
            sink.write(data)
            sink.flush()
            os.fsync(sink.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


def flock_within(fd: int, timeout_s: float) -> bool:
    """Take an exclusive flock on ``fd``, waiting up to ``timeout_s``; False if still taken.

    An flock is released by the kernel when its holder dies, so a killed process never
    leaves a lock behind; polling (not a blocking flock) keeps the wait bounded.
    """
    deadline = time.monotonic() + timeout_s
    pause, longest = LOCK_POLL_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(pause)
            pause = min(pause * 2, longest)
