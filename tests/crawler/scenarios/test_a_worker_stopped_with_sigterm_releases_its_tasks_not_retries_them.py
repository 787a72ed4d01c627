"""SIGTERM on a worker mid-crawl: each task it gives back is logged as released
(``TaskReleased``, by that worker, "worker stopped"), not as a retry; ``history`` says
released, and the report and ``status`` count no retry for it."""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
import redis.asyncio as aioredis

from crawler._politeness import Politeness
from crawler.testsite import RunningSite
from eventlog import EventLog, RetryScheduled, TaskReleased
from tests.crawler.conftest import run_projector
from tests.crawler.left_behind import leased_by_a_killed_worker, wait_until_delivered
from tests.crawler.operator_cli import crawlog

pytestmark = pytest.mark.anyio
TASKS = 12
"""The worker fixture runs 4 at a time: the rest wait in the backlog when SIGTERM comes."""
LONG_LEASE_MS = 120_000
SLOW = Politeness(per_host=1, delay_s=0.5)


async def test_a_worker_stopped_with_sigterm_releases_its_tasks_not_retries_them(
    site: RunningSite,
    worker_process: Callable[..., Any],
    redis_client: aioredis.Redis,
    job: str,
    log: EventLog,
    valkey_url: str,
    data_dir: Path,
) -> None:
    queue, held = await leased_by_a_killed_worker(
        redis_client, job, site.url, TASKS, lease_ms=LONG_LEASE_MS, politeness=SLOW
    )
    with anyio.fail_after(60):
        worker = await worker_process("w1")
        await wait_until_delivered(redis_client, queue, held[-1], 2)
        worker.send_signal(signal.SIGTERM)
        assert await worker.wait() == 0
        events = [e.event for e in await log.read_range()]
        released = [e for e in events if isinstance(e, TaskReleased)]
        assert released, "SIGTERM came while tasks waited in the backlog"
        assert {(e.actor, e.reason, e.attempt) for e in released} == {("w1", "worker stopped", 1)}
        assert not [e for e in events if isinstance(e, RetryScheduled)]

        await run_projector(valkey_url, job, data_dir)
        report = await crawlog(valkey_url, data_dir, "report", "--job", job, "--json")
        text = await crawlog(valkey_url, data_dir, "report", "--job", job)
        status = await crawlog(valkey_url, data_dir, "status", "--job", job, "--json")
        history = await crawlog(valkey_url, data_dir, "history", "--job", job, released[0].task_id)

    retries = report.json()["retries"]
    assert (retries["total"], retries["released"]) == (0, len(released)), retries
    assert f"released (handed back by a stopping worker, not a retry): {len(released)}" in (
        text.stdout
    ), text.stdout
    assert status.json()["total"]["retries"] == 0, status.stdout
    assert history.returncode == 0, history.stderr
    assert "task.released" in history.stdout, history.stdout
    assert "released by w1: worker stopped" in history.stdout, history.stdout
    assert "retry_scheduled" not in history.stdout, history.stdout
