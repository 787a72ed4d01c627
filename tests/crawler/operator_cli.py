"""Running ``crawlog`` operator commands as a user would: one process per command."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from crawler.cli._argv import crawlog_command

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Ran:
    """What a finished ``crawlog`` process left: its exit status and output."""

    returncode: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


async def crawlog(valkey_url: str, data_dir: Path, *args: str, stdin: str | None = None) -> Ran:
    """``crawlog ARGS --data-dir DATA_DIR`` against the test server."""
    command = crawlog_command(*args, "--data-dir", str(data_dir))
    env = {**os.environ, "REDIS_URL": valkey_url}
    result = await anyio.run_process(
        command,
        env=env,
        cwd=ROOT,
        check=False,
        input=stdin.encode() if stdin is not None else b"",
    )
    return Ran(result.returncode, result.stdout.decode(), result.stderr.decode())


async def crawlog_ok(valkey_url: str, data_dir: Path, *args: str) -> str:
    """`crawlog`, which must exit 0 (the test fails with its output otherwise): its stdout."""
    ran = await crawlog(valkey_url, data_dir, *args)
    assert ran.returncode == 0, (args, ran.stdout, ran.stderr)
    return ran.stdout
