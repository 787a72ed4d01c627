"""A restarted worker holding more tasks than it runs at once keeps renewing the ones
waiting in its backlog: another worker's recovery never moves them, so no task that never
ran is counted as recovered (three such moves and it would be aborted)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest
import redis.asyncio as aioredis

from crawler._politeness import Politeness
from crawler.testsite import RunningSite
from eventlog import EventLog, TaskDone, TaskReclaimed
from tests.crawler.left_behind import leased_by_a_killed_worker

pytestmark = pytest.mark.anyio
TASKS = 24
"""The worker fixture runs 4 at a time: 20 wait in the backlog."""
LEASE_MS = 2_000
SLOW = Politeness(per_host=1, delay_s=0.25)
"""A request every 0.25 s: the backlog waits ~5 s, two and a half lease times."""


async def test_a_restarted_worker_keeps_the_backlog_it_has_not_started(
    site: RunningSite,
    worker_process: Callable[..., Any],
    redis_client: aioredis.Redis,
    job: str,
) -> None:
    _, held = await leased_by_a_killed_worker(
        redis_client, job, site.url, TASKS, lease_ms=LEASE_MS, politeness=SLOW
    )

    before = len(site.requests)
    with anyio.fail_after(60):
        restarted = await worker_process("w1", "--exit-when-done")
        # Once w1 works (its first request: its leases taken back), another worker, looking
        # for expired leases to recover all along. Started together, on a loaded machine
        # w2 could come up first and recover leases older than their 2 s before w1 ran.
        while len(site.requests) == before:
            await anyio.sleep(0.01)
        other = await worker_process("w2", "--exit-when-done")
        assert await restarted.wait() == 0
        assert await other.wait() == 0

    events = [entry.event for entry in await EventLog(redis_client, job).read_range()]
    moved = [event.task_id for event in events if isinstance(event, TaskReclaimed)]
    assert moved == [], "a waiting lease expired and was moved"
    done = [event.task_id for event in events if isinstance(event, TaskDone)]
    assert sorted(done) == sorted(lease.task.task_id for lease in held), "each done once"
