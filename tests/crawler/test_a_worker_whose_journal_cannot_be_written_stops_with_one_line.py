"""A worker whose journal's disk is full stops taking tasks with one line that says so and
what to do (exit 2): a write it cannot journal is not sent."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
import redis.asyncio as aioredis

from crawler.cli._argv import crawlog_command
from crawler.testsite import RunningSite
from eventlog import EventLog, PageFetched, journal_directory
from tests.crawler.conftest import ROOT

pytestmark = pytest.mark.anyio


async def test_a_full_journal_disk_stops_the_worker_in_one_line(
    site: RunningSite,
    start_job: Callable[..., Any],
    redis_client: aioredis.Redis,
    valkey_url: str,
    job: str,
    data_dir: Path,
) -> None:
    await start_job([site.url + "/"], obey_robots=False)
    journal = journal_directory(data_dir, "w1", job)
    journal.mkdir(parents=True)
    # Its first segment is a device where every write fails as on a full disk (ENOSPC).
    (journal / "00000001.journal").symlink_to("/dev/full")
    command = crawlog_command(
        "worker", "--job", job, "--name", "w1", "--data-dir", str(data_dir), "--exit-when-done"
    )  # fmt: skip
    with anyio.fail_after(90):
        done = await anyio.run_process(
            command, env={**os.environ, "REDIS_URL": valkey_url}, cwd=ROOT, check=False
        )
    lines = done.stderr.decode().strip().splitlines()
    assert done.returncode == 2, lines
    assert "cannot write the worker's journal" in lines[-1]
    assert "No space left on device" in lines[-1] and "free space" in lines[-1]
    assert "Traceback" not in done.stderr.decode()
    events = [entry.event for entry in await EventLog(redis_client, job).read_range()]
    assert not [e for e in events if isinstance(e, PageFetched)]  # nothing sent unjournalled
