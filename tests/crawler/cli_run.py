"""Running the real ``crawlog`` command line in a subprocess, with a clean environment."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import anyio

from crawler.cli._argv import crawlog_command
from tests.crawler.conftest import ROOT

CLI_TIMEOUT_S = 60


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without crawlog's own variables (a developer's shell may set them),
    plus ``extra``; the repository on PYTHONPATH so test spiders import from any cwd."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("CRAWLOG_") and k not in ("REDIS_URL", "PYTHONPATH")
    }
    env["PYTHONPATH"] = str(ROOT)
    return {**env, **extra}


def crawlog(
    *args: str, cwd: Path = ROOT, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``crawlog ARGS`` run to completion; its exit code and output."""
    return subprocess.run(
        crawlog_command(*args),
        cwd=cwd, env=env if env is not None else clean_env(), capture_output=True, text=True,
        timeout=CLI_TIMEOUT_S, check=False,
    )  # fmt: skip


def free_port() -> int:
    """A TCP port nothing listens on right now (closed again before returning)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def crawlog_done(*args: str, env: dict[str, str] | None = None) -> str:
    """``crawlog ARGS`` run to its end without blocking the event loop, in ``env`` (else a
    clean one), its exit 0 asserted (the test fails with its output otherwise); its stdout."""
    with anyio.fail_after(CLI_TIMEOUT_S):
        done = await anyio.run_process(
            crawlog_command(*args), cwd=ROOT, env=env if env is not None else clean_env(),
            check=False,
        )  # fmt: skip
    assert done.returncode == 0, (args, done.stdout.decode(), done.stderr.decode())
    return done.stdout.decode()
