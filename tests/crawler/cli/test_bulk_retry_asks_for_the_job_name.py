"""`crawlog retry --failed`: every failed task of a site, after typing the job name."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler.testsite import serve_testsite
from eventlog import EventLog, TaskRetried
from tests.crawler.operator_cli import crawlog

pytestmark = pytest.mark.anyio


async def test_a_bulk_retry_is_confirmed_by_the_job_name_and_retries_each_task_once(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    log: EventLog,
    job: str,
    valkey_url: str,
    data_dir: Path,
) -> None:
    async with serve_testsite(pages=20, seed=1) as site:
        missing = [f"{site.url}/no/such/page/{n}" for n in range(3)]
        await start_job([site.url + "/", *missing], max_depth=0)
        with anyio.fail_after(60):
            assert await (await worker_process("w1", "--exit-when-done")).wait() == 0
            host = site.url.split("://")[1]
            args = ("retry", "--job", job, "--failed", "--site", host, "--reason", "404 fixed")
            wrong = await crawlog(valkey_url, data_dir, *args, stdin="not-the-job\n")
            assert wrong.returncode == 2, wrong.stdout
            assert "about to retry 3 task(s)" in wrong.stderr and "nothing retried" in wrong.stderr
            assert not [e for e in await log.read_range() if isinstance(e.event, TaskRetried)]
            right = await crawlog(valkey_url, data_dir, *args, "--json", stdin=f"{job}\n")
            assert right.returncode == 0, right.stderr
            retried = right.json()["retried"]
            assert sorted(t["url"] for t in retried) == sorted(missing)
            assert {t["attempt"] for t in retried} == {2}
            # Run again: they are pending now, not failed, so nothing is retried twice.
            again = await crawlog(valkey_url, data_dir, *args, "--yes")
            assert again.returncode == 0 and "no failed tasks to retry" in again.stdout
    retries = [e.event for e in await log.read_range() if isinstance(e.event, TaskRetried)]
    assert len(retries) == 3 and {e.reason for e in retries} == {"404 fixed"}
