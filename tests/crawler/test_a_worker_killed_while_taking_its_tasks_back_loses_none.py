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

from crawler._job import JobConfig, save_config
from crawler.testsite import RunningSite
from eventlog import (
    TERMINAL_EVENT_TYPES,
    CheckpointSaved,
    Counts,
    Cursor,
    EventLog,
    JobKeys,
    Lease,
    Task,
    TaskQueue,
)
from eventlog._connection import command
from eventlog._keys import WORKERS_GROUP

pytestmark = pytest.mark.anyio
TASKS = 30_000
"""Enough for a take-back of ~15 chunks (a few tenths of a second) to be killed inside."""
SETUP_BATCH = 1_000
SETUP_CONCURRENCY = 50
"""Checkpoints written at once (each on a connection of the client's pool)."""
LONG_LEASE_MS = 120_000
"""Longer than the test: nothing may expire and move meanwhile."""


async def _leased_and_checkpointed(queue: TaskQueue, site: str) -> list[Lease]:
    """The state a SIGKILLed ``w1`` leaves: TASKS tasks leased by it, each checkpointed."""
    held: list[Lease] = []
    limiter = anyio.CapacityLimiter(SETUP_CONCURRENCY)

    async def checkpoint(lease: Lease) -> None:
        saved = CheckpointSaved(
            actor="w1", task_id=lease.task.task_id, attempt=1,
            cursor=Cursor(page=1, url=lease.task.url), counts=Counts(pages=1),
        )  # fmt: skip
        async with limiter:
            await queue.checkpoint(lease, saved)

    for start in range(0, TASKS, SETUP_BATCH):
        batch = [
            Task(task_id=f"{n:016x}", url=f"{site}/item/{n + 1}", site=site)
            for n in range(start, start + SETUP_BATCH)
        ]
        await queue.enqueue(batch, actor="test")
        leases = await queue.claim(len(batch))
        async with anyio.create_task_group() as tg:
            for lease in leases:
                tg.start_soon(checkpoint, lease)
        held += leases
    return held


async def _deliveries(redis: aioredis.Redis, queue: TaskQueue) -> dict[str, int]:
    """Each of w1's pending entries (one lane here) with its delivery count."""
    [lane] = {key for key in queue.keys.lanes if await redis.xlen(key)}
    reply = await command(redis, "XPENDING", lane, WORKERS_GROUP, "-", "+", TASKS, "w1")
    return {entry[0].decode(): int(entry[3]) for entry in reply}


async def _count_of(redis: aioredis.Redis, queue: TaskQueue, lease: Lease) -> int:
    reply = await command(
        redis, "XPENDING", queue.keys.lanes[lease.lane], WORKERS_GROUP,
        lease.entry_id, lease.entry_id, 1, "w1",
    )  # fmt: skip
    return int(reply[0][3]) if reply else 0


async def _finished(log: EventLog) -> int:
    """Tasks that reached a terminal event (they leave the pending list)."""
    entries = await log.read_range()
    return sum(isinstance(entry.event, TERMINAL_EVENT_TYPES) for entry in entries)


async def test_a_worker_killed_while_taking_its_tasks_back_loses_none(
    site: RunningSite,
    worker_process: Callable[..., Any],
    redis_client: aioredis.Redis,
    job: str,
) -> None:
    config = JobConfig(
        seeds=(site.url + "/",), obey_robots=False, max_depth=0, lease_ms=LONG_LEASE_MS
    )
    await save_config(redis_client, JobKeys(job), config)
    queue = TaskQueue(redis_client, job, "w1", lease_ms=LONG_LEASE_MS)
    held = await _leased_and_checkpointed(queue, site.url)
    first_entry, last_entry = held[0], held[-1]

    with anyio.fail_after(60):
        first = await worker_process("w1")
        # The worst moment: the first chunk is taken back, the rest is not yet.
        while await _count_of(redis_client, queue, first_entry) < 2:
            await anyio.sleep(0.001)
        first.send_signal(signal.SIGKILL)
        await first.wait()
        after_kill = await _deliveries(redis_client, queue)
        assert len(after_kill) == TASKS, "every task still leased by w1"
        assert after_kill[last_entry.entry_id] == 1, "killed before its take-back ended"

        again = await worker_process("w1")
        while await _count_of(redis_client, queue, last_entry) < 2:
            await anyio.sleep(0.01)
        # Frozen as it is: no graceful stop hands anything back.
        again.send_signal(signal.SIGKILL)
        await again.wait()

    now = await _deliveries(redis_client, queue)
    finished = await _finished(EventLog(redis_client, job))
    assert len(now) + finished == TASKS, "nothing lost: each task pending, or finished once"
    reached = [entry_id for entry_id, count in after_kill.items() if count == 2]
    assert 0 < len(reached) < TASKS
    assert reached == [lease.entry_id for lease in held[: len(reached)]], "whole chunks, in order"
    for entry_id, count in now.items():
        # Delivered by the claim, by the killed take-back if it got that far, and again.
        assert count == after_kill[entry_id] + 1, entry_id
    ckpt = await redis_client.hlen(queue.keys.ckpt)
    assert ckpt == len(now), "every unfinished task keeps its resume point"
