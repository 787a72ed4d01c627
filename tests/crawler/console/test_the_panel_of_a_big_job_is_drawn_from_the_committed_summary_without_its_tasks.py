"""The job's panel does not wait for a big job's state: until every task is read, it is
drawn from the manifest's summary (``LiveProgress.summary_progress``), whose numbers are the
committed state's: the same as the full fold's once the projector has committed the log.
A real log (appended through ``EventLog``) projected by the real ``crawlog project``."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis.asyncio as aioredis

from crawler.ops import LiveProgress
from eventlog import EventLog, JobKeys, PageFetched, TaskClaimed, TaskDone, TaskEnqueued, TaskFailed
from tests.crawler.cli_run import clean_env, crawlog

pytestmark = pytest.mark.anyio
SITES = ("http://127.0.0.1:9001", "http://127.0.0.1:9002")


async def test_the_summary_s_counts_are_the_fold_s_after_a_commit(
    valkey_url: str, redis_client: aioredis.Redis, job: str, data_dir: Path
) -> None:
    events = []
    for n in range(60):
        task_id, site = f"{n:016x}", SITES[n % 2]
        events += [
            TaskEnqueued(actor="t", task_id=task_id, url=f"{site}/{n}", site=site),
            TaskClaimed(actor="w1", task_id=task_id, attempt=1),
        ]
        if n % 10 == 3:
            events.append(TaskFailed(actor="w1", task_id=task_id, attempt=1, reason="http 404"))
        elif n % 10 != 7:  # 7: left running
            events += [
                PageFetched(actor="w1", task_id=task_id, attempt=1, url=f"{site}/{n}", status=200),
                TaskDone(actor="w1", task_id=task_id, attempt=1),
            ]
    await EventLog(redis_client, JobKeys(job)).append_many(events)
    projected = crawlog(
        "project", "--job", job, "--data-dir", str(data_dir), "--once",
        env=clean_env(REDIS_URL=valkey_url),
    )  # fmt: skip
    assert projected.returncode == 0, projected.stderr

    summary = await LiveProgress(redis_client, job, data_dir).summary_progress()
    live = await LiveProgress(redis_client, job, data_dir).refresh()
    assert summary is not None
    assert summary.total.counts.done == 48 and summary.total.counts.failed == 6
    assert summary.total.counts.running == 6
    assert summary.position == live.position
    assert summary.tail_events == 0
    fields = ("discovered", "done", "failed", "running", "pending", "paused", "pages")
    for mine, theirs in zip(summary.sites, live.sites, strict=True):
        for name in fields:
            assert getattr(mine.counts, name) == getattr(theirs.counts, name), name


async def test_before_any_commit_there_is_no_summary(
    redis_client: aioredis.Redis, job: str, data_dir: Path
) -> None:
    assert await LiveProgress(redis_client, job, data_dir).summary_progress() is None
