"""`crawlog console --job NOSUCH` does not start a console on nothing: one line naming the
jobs there are (and how to list them), exit 2, before it listens."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.crawler.operator_cli import crawlog

pytestmark = pytest.mark.anyio


async def test_an_unknown_job_is_one_line_with_the_jobs_there_are_and_exit_2(
    start_job: Callable[..., Any], job: str, valkey_url: str, data_dir: Path
) -> None:
    await start_job(["http://127.0.0.1:9/"])
    with anyio.fail_after(60):
        ran = await crawlog(valkey_url, data_dir, "console", "--job", job + "x", "--port", "0")
    assert ran.returncode == 2, ran.stdout
    assert ran.stdout == ""
    assert ran.stderr.count("\n") == 1, ran.stderr
    assert ran.stderr.startswith(f"crawlog: error: no job '{job}x' here")
    assert f"'{job}'" in ran.stderr and "crawlog jobs" in ran.stderr
