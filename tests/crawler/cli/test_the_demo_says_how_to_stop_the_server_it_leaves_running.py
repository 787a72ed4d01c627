"""`crawlog demo` on crawlog's own server leaves it running (later commands use it) and
says how to stop it; the command it prints stops it."""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from crawler.cli._argv import crawlog_command
from eventlog._server import PID_FILE, _alive
from tests.crawler.cli_run import clean_env
from tests.crawler.conftest import ROOT
from tests.server_helpers import server_dir

STOP = "stop it with: "


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    with server_dir(tmp_path / "home") as directory:
        yield directory


def test_the_demo_says_how_to_stop_the_server_it_leaves_running(home: Path) -> None:
    demo = subprocess.run(
        crawlog_command("demo", "--pages", "50", "--data-dir", str(home)),
        cwd=ROOT, env=clean_env(), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert demo.returncode == 0, demo.stdout + demo.stderr
    pid = int((home / PID_FILE).read_text())
    assert _alive(pid), "the server stays for the commands the demo suggests"
    [line] = [line for line in demo.stdout.splitlines() if STOP in line]
    assert f"(pid {pid})" in line
    command = shlex.split(line.split(STOP, 1)[1])
    assert command[:3] == ["crawlog", "server", "stop"]
    stopped = subprocess.run(
        crawlog_command(*command[1:]),
        cwd=ROOT, env=clean_env(), capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert stopped.returncode == 0, stopped.stderr
    assert not _alive(pid)
