"""`crawlog history`: every event of a task, from the archive and the stream's tail."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
import redis.asyncio as aioredis

from crawler._urls import fingerprint
from crawler.testsite import Faults, serve_testsite
from eventlog import EventLog, JobKeys, TaskEvent
from tests.crawler.conftest import run_projector
from tests.crawler.operator_cli import crawlog

pytestmark = pytest.mark.anyio


async def test_history_of_a_url_fetched_twice_shows_the_failed_fetch_and_the_retry(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    redis_client: aioredis.Redis,
    log: EventLog,
    job: str,
    valkey_url: str,
    data_dir: Path,
) -> None:
    faults = Faults(error_500_rate=1.0, error_500_times=1)
    async with serve_testsite(pages=20, seed=1, faults=faults) as site:
        seed = site.url + "/"
        await start_job([seed], max_depth=0, max_attempts=1)
        with anyio.fail_after(90):
            assert await (await worker_process("w1", "--exit-when-done")).wait() == 0
            # The first attempt's events only in the archive, the rest in the stream.
            # Archive the whole log and trim Redis down to the committed position.
            await run_projector(valkey_url, job, data_dir, "--keep-tail", "0")
            assert await redis_client.xlen(JobKeys(job).events) == 1
            retry = await crawlog(
                valkey_url,
                data_dir,
                "retry",
                "--job",
                job,
                seed,
                "--reason",
                "flaky upstream",
                "--by",
                "erin",
            )
            assert retry.returncode == 0, retry.stderr
            assert await (await worker_process("w2", "--exit-when-done")).wait() == 0
            # Given as the user would paste it: another spelling of the same URL.
            shown = await crawlog(valkey_url, data_dir, "history", "--job", job, seed + "#top")
            as_json = await crawlog(
                valkey_url, data_dir, "history", "--job", job, fingerprint(seed), "--json"
            )
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    assert f"task {fingerprint(seed)}  {seed}" in text
    assert (
        "now done at attempt 2; 2 fetch attempt(s): attempt 1 page 1 by w1: HTTP 500, "
        "attempt 2 page 1 by w2: HTTP 200" in text
    )
    assert "no fetch recorded" not in text
    lines = [line for line in text.splitlines() if "task." in line]
    whats = [line.split()[4] for line in lines]
    assert whats[:7] == [
        "task.enqueued",
        "task.claimed",
        "task.page",
        "task.failed",
        "task.retried",
        "task.claimed",
        "task.page",
    ]
    retried = next(line for line in lines if "task.retried" in line)
    assert "erin" in retried and "flaky upstream" in retried
    failed = next(line for line in lines if "task.failed" in line)
    assert "w1" in failed and "HTTP 500" in failed
    data = as_json.json()
    assert (data["status"], data["attempt"]) == ("done", 2)
    # Every event still in Redis is there, and the archived ones before them.
    ids = [e["stream_id"] for e in data["events"]]
    in_redis = [e.stream_id for e in await log.read_range() if isinstance(e.event, TaskEvent)]
    assert ids[-len(in_redis) :] == in_redis and len(ids) > len(in_redis)
    assert [e["type"] for e in data["events"]].count("task.page") == 2


async def test_history_of_a_url_never_enqueued_says_so_and_exits_1(
    start_job: Callable[..., Any], job: str, valkey_url: str, data_dir: Path
) -> None:
    await start_job(["http://127.0.0.1:8765/"])
    with anyio.fail_after(60):
        ran = await crawlog(
            valkey_url, data_dir, "history", "--job", job, "http://127.0.0.1:8765/never/linked"
        )
    assert ran.returncode == 1, ran.stderr
    assert "it was never enqueued" in ran.stdout
