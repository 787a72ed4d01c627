"""Helpers for tests that start crawlog's private valkey-server in their own data directory."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from eventlog._exceptions import CrawlogError
from eventlog._replica_set import stop_replica_set
from eventlog._server import PID_FILE, _wait_gone, stop_server

# Environment variables that would point crawlog somewhere other than the test's directory.
CRAWLOG_ENV = ("REDIS_URL", "CRAWLOG_HOME")


def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unset the variables that redirect crawlog, here and in the subprocesses tests start."""
    for name in CRAWLOG_ENV:
        monkeypatch.delenv(name, raising=False)


def stop_or_kill(directory: Path) -> None:
    """Stop the server of ``directory`` whatever state the test left it in."""
    with contextlib.suppress(CrawlogError):
        stop_server(directory, timeout_s=5)
    # A test that failed half-way may leave a server that no longer answers.
    with contextlib.suppress(OSError, ValueError):
        pid = int((directory / PID_FILE).read_text())
        os.kill(pid, signal.SIGKILL)
        _wait_gone(pid, 5)


@contextlib.contextmanager
def server_dir(directory: Path) -> Iterator[Path]:
    """``directory``, with whatever server a test started there stopped afterwards."""
    try:
        yield directory
    finally:
        stop_or_kill(directory)


def python(code: str, *args: str) -> list[str]:
    """argv running ``code`` in this interpreter (the venv with crawlog installed)."""
    return [sys.executable, "-c", code, *args]


TEST_DOWN_AFTER_MS = 3_000
"""The Sentinels of a test's replica set call a silent primary down after this long.

Not shorter: a Sentinel that has just switched to a new primary counts that primary silent
from the switch until it first answers on a new connection; on a loaded machine (a whole
suite on two cores) that can outlast a short down-after, and the Sentinels then call the
new primary down and fail over again."""
TEST_FAILOVER_TIMEOUT_MS = 3_000


def stop_or_kill_replica_set(directory: Path) -> None:
    """Stop every member of the replica set of ``directory``, whatever state it is in."""
    with contextlib.suppress(CrawlogError):
        stop_replica_set(directory, timeout_s=5)
    root = directory / "replicas"
    for pidfile in root.glob(f"*/{PID_FILE}"):
        with contextlib.suppress(OSError, ValueError):
            pid = int(pidfile.read_text())
            os.kill(pid, signal.SIGKILL)
            _wait_gone(pid, 5)


_MEMBER_EVENTS = re.compile(
    r"[+-](s|o)down|switch-master|elected-leader|selected-slave|promoted-slave|failover-end"
    r"|failover-abort|convert-to-slave|tilt|PRIMARY MODE|REPLICAOF|Ready to accept"
    r"|Full resync|Partial resync|Flushing old data|Finished with success|Connection with"
)
_LOG_TIME = re.compile(r":(\w) \d\d \w{3} \d{4} (\d\d:\d\d:\d\d\.\d{3})")
"""A member's log line: its role then (M primary, S replica, X Sentinel) and the time."""


def replica_set_story(directory: Path) -> str:
    """What the members of the replica set of ``directory`` logged of down calls,
    promotions and role changes, in time order: for the message of a failover test that
    failed, so a failure on a loaded machine explains itself."""
    found: list[tuple[str, str]] = []
    for log in sorted((directory / "replicas").glob("*/valkey.log")):
        with contextlib.suppress(OSError):
            for line in log.read_text(errors="replace").splitlines():
                when = _LOG_TIME.search(line)
                if when and _MEMBER_EVENTS.search(line):
                    event = line[when.end() :].strip()
                    found.append((when[2], f"{log.parent.name} ({when[1]}): {event}"))
    found.sort(key=lambda pair: pair[0])
    return "\n".join(["the replica set's members logged:", *(f"{t} {e}" for t, e in found)])
