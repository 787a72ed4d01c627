"""`crawlog retry TASK`: a failed task runs again as its next attempt, once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler._urls import fingerprint
from crawler.testsite import Faults, serve_testsite
from eventlog import EventLog, PageFetched, TaskDone, TaskEvent, TaskFailed, TaskRetried
from tests.crawler.operator_cli import crawlog

pytestmark = pytest.mark.anyio


async def test_a_failed_task_retried_by_an_operator_is_fetched_again_and_done_at_attempt_2(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    log: EventLog,
    job: str,
    valkey_url: str,
    data_dir: Path,
) -> None:
    # Every page answers 500 once; with one attempt allowed, the seed fails for good.
    faults = Faults(error_500_rate=1.0, error_500_times=1)
    async with serve_testsite(pages=20, seed=1, faults=faults) as site:
        seed = site.url + "/"
        task_id = fingerprint(seed)
        await start_job([seed], max_depth=0, max_attempts=1)
        with anyio.fail_after(60):
            assert await (await worker_process("w1", "--exit-when-done")).wait() == 0
            retried = await crawlog(
                valkey_url,
                data_dir,
                "retry",
                "--job",
                job,
                task_id,
                "--reason",
                "the server is fixed",
                "--by",
                "alice",
            )
            assert retried.returncode == 0, retried.stderr
            assert "failed at attempt 1 -> attempt 2" in retried.stdout
            # Run twice: the task is pending now, not ended, so nothing is written again.
            again = await crawlog(
                valkey_url, data_dir, "retry", "--job", job, seed, "--reason", "again"
            )
            assert again.returncode == 2
            assert again.stderr.count("\n") == 1 and "has not ended" in again.stderr
            assert await (await worker_process("w1", "--exit-when-done")).wait() == 0
        fetches = site.fetch_counts().get("/", 0)
    mine = [e.event for e in await log.read_range() if isinstance(e.event, TaskEvent)]
    kinds = [type(e) for e in mine if type(e) in (PageFetched, TaskFailed, TaskRetried, TaskDone)]
    assert kinds == [PageFetched, TaskFailed, TaskRetried, PageFetched, TaskDone]
    retry = next(e for e in mine if isinstance(e, TaskRetried))
    assert (retry.actor, retry.reason) == ("alice", "the server is fixed")
    done = next(e for e in mine if isinstance(e, TaskDone))
    assert done.attempt == 2
    assert fetches == 2
