"""`crawlog status --watch` stops by itself once the job ended, as its help says."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler.testsite import RunningSite
from tests.crawler.operator_cli import crawlog

pytestmark = pytest.mark.anyio


async def test_a_watch_of_a_job_whose_every_task_ended_exits_0_after_showing_it(
    valkey_url: str,
    job: str,
    data_dir: Path,
    site: RunningSite,
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
) -> None:
    await start_job([site.url + "/"], max_depth=1)
    with anyio.fail_after(60):
        assert await (await worker_process("w1", "--exit-when-done")).wait() == 0
    # Before, the watch went on redrawing the same finished numbers until killed.
    with anyio.fail_after(60):
        watched = await crawlog(
            valkey_url, data_dir, "status", "--job", job, "--watch", "--interval", "0.2"
        )
    assert watched.returncode == 0, watched.stderr
    lines = [line for line in watched.stdout.splitlines() if line.startswith("progress ")]
    assert len(lines) == 1 and "(100.0%)" in lines[0], watched.stdout
