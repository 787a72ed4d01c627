"""A restarted worker SIGKILLed in the middle of taking its pending list back (while its
HTTP stack loads in a thread beside it) loses nothing: the next restart takes every task
back, and each entry's delivery count says how many take-backs reached it.

The take-back re-delivers a chunk of entries at a time (XREADGROUP from an id, in a
MULTI with the XPENDING that reads the new counts): a kill between two chunks leaves the
first ones delivered once more than the rest, never an entry half-taken.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any

import anyio
import pytest
import redis.asyncio as aioredis

from crawler.testsite import RunningSite
from eventlog import TERMINAL_EVENT_TYPES, EventLog
from tests.crawler.left_behind import (
    deliveries,
    leased_by_a_killed_worker,
    wait_until_delivered,
)

pytestmark = pytest.mark.anyio
TASKS = 30_000
"""Enough for a take-back of ~15 chunks (a few tenths of a second) to be killed inside."""
LONG_LEASE_MS = 120_000
"""Longer than the test: nothing may expire and move meanwhile."""


async def test_a_worker_killed_while_taking_its_tasks_back_loses_none(
    site: RunningSite,
    worker_process: Callable[..., Any],
    redis_client: aioredis.Redis,
    job: str,
) -> None:
    queue, held = await leased_by_a_killed_worker(
        redis_client, job, site.url, TASKS, lease_ms=LONG_LEASE_MS, checkpointed=True
    )
    first, last = held[0], held[-1]

    with anyio.fail_after(60):
        killed = await worker_process("w1")
        # The worst moment: the first chunk is taken back, the rest is not yet.
        await wait_until_delivered(redis_client, queue, first, 2)
        killed.send_signal(signal.SIGKILL)
        await killed.wait()
        after_kill = await deliveries(redis_client, queue, first, last)
        assert len(after_kill) == TASKS, "every task still leased by w1"
        assert after_kill[last.entry_id] == 1, "killed before its take-back ended"

        again = await worker_process("w1")
        await wait_until_delivered(redis_client, queue, last, 2)
        # Frozen as it is: no graceful stop hands anything back.
        again.send_signal(signal.SIGKILL)
        await again.wait()

    now = await deliveries(redis_client, queue, first, last)
    events = [entry.event for entry in await EventLog(redis_client, job).read_range()]
    finished = sum(isinstance(event, TERMINAL_EVENT_TYPES) for event in events)
    assert len(now) + finished == TASKS, "nothing lost: each task pending, or finished once"
    reached = [entry_id for entry_id, count in after_kill.items() if count == 2]
    assert 0 < len(reached) < TASKS
    assert reached == [lease.entry_id for lease in held[: len(reached)]], "whole chunks, in order"
    for entry_id, count in now.items():
        # Delivered by the claim, by the killed take-back if it got that far, and again.
        assert count == after_kill[entry_id] + 1, entry_id
    ckpt = await redis_client.hlen(queue.keys.ckpt)
    assert ckpt == len(now), "every unfinished task keeps its resume point"
