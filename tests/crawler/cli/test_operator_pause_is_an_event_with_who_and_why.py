"""`crawlog pause|resume`: an event with who and why, obeyed by workers, idempotent."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
import redis.asyncio as aioredis

from crawler._urls import fingerprint
from crawler.testsite import serve_testsite
from eventlog import (
    EventLog,
    JobKeys,
    JobPaused,
    JobResumed,
    SitePaused,
    SiteResumed,
    TaskDone,
    TaskPaused,
    TaskResumed,
    read_controls,
)
from tests.crawler.operator_cli import crawlog

pytestmark = pytest.mark.anyio
PAUSE_EVENTS = (JobPaused, JobResumed, SitePaused, SiteResumed, TaskPaused, TaskResumed)


async def control_events(log: EventLog) -> list[Any]:
    return [e.event for e in await log.read_range() if isinstance(e.event, PAUSE_EVENTS)]


async def test_pausing_and_resuming_a_site_and_the_job_appends_who_and_why_once(
    start_job: Callable[..., Any],
    redis_client: aioredis.Redis,
    log: EventLog,
    job: str,
    valkey_url: str,
    data_dir: Path,
) -> None:
    await start_job(["http://127.0.0.1:8765/"])
    run = lambda *args: crawlog(valkey_url, data_dir, *args, "--job", job)  # noqa: E731
    with anyio.fail_after(60):
        paused = await run("pause", "--site", "127.0.0.1:8765", "--reason", "429s", "--by", "bob")
        assert paused.returncode == 0, paused.stderr
        assert "paused site http://127.0.0.1:8765 by bob: 429s" in paused.stdout
        twice = await run("pause", "--site", "http://127.0.0.1:8765", "--reason", "again")
        assert twice.returncode == 0 and "already paused; nothing written" in twice.stdout
        controls = await read_controls(redis_client, JobKeys(job))
        assert controls.paused_sites == {"http://127.0.0.1:8765"}
        resumed = await run("resume", "--site", "127.0.0.1:8765", "--reason", "ok", "--by", "bob")
        assert resumed.returncode == 0, resumed.stderr
        assert (await run("pause", "--reason", "deploy", "--by", "carol")).returncode == 0
        assert (await run("resume", "--reason", "deployed", "--by", "carol")).returncode == 0
        idle = await run("resume", "--reason", "deployed")
        assert idle.returncode == 0 and "not paused; nothing written" in idle.stdout
        unknown = await run("pause", "--site", "elsewhere.example", "--reason", "x")
        assert unknown.returncode == 2 and "no site 'elsewhere.example'" in unknown.stderr
    said = [(type(e), e.actor, e.reason) for e in await control_events(log)]
    assert said == [
        (SitePaused, "bob", "429s"),
        (SiteResumed, "bob", "ok"),
        (JobPaused, "carol", "deploy"),
        (JobResumed, "carol", "deployed"),
    ]


async def test_a_task_paused_from_the_command_line_waits_parked_until_resumed(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    redis_client: aioredis.Redis,
    log: EventLog,
    job: str,
    valkey_url: str,
    data_dir: Path,
) -> None:
    async with serve_testsite(pages=20, seed=1) as site:
        seed = site.url + "/"
        await start_job([seed], max_depth=0)
        run = lambda *args: crawlog(valkey_url, data_dir, *args, "--job", job)  # noqa: E731
        with anyio.fail_after(60):
            paused = await run("pause", "--task", seed, "--reason", "look first", "--by", "dan")
            assert paused.returncode == 0, paused.stderr
            worker = await worker_process("w1", "--exit-when-done")
            # The worker parks the task instead of fetching it.
            while not await redis_client.zcard(JobKeys(job).parked):
                await anyio.sleep(0.05)
            assert site.fetch_counts().get("/", 0) == 0
            resumed = await run("resume", "--task", fingerprint(seed), "--reason", "looked")
            assert resumed.returncode == 0, resumed.stderr
            assert "1 parked task(s) back in the queue" in resumed.stdout
            assert await worker.wait() == 0
            ended = await run("pause", "--task", seed, "--reason", "too late")
            assert ended.returncode == 2 and "has ended (done" in ended.stderr
    kinds = [type(e.event) for e in await log.read_range()]
    assert kinds.index(TaskPaused) < kinds.index(TaskResumed) < kinds.index(TaskDone)
    paused_event = next(e.event for e in await log.read_range() if type(e.event) is TaskPaused)
    assert (paused_event.actor, paused_event.reason) == ("dan", "look first")
