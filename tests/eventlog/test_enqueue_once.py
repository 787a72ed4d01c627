"""A URL is enqueued once, however many workers discover it at the same moment."""

from __future__ import annotations

from collections.abc import Callable

import anyio
import pytest

from eventlog import EventLog, TaskEnqueued, TaskQueue, connect
from tests.eventlog.helpers import task

pytestmark = pytest.mark.anyio


async def test_fifty_concurrent_enqueues_of_one_url_make_exactly_one_task(
    valkey_url: str, job: str, log: EventLog, make_queue: Callable[..., TaskQueue]
) -> None:
    results: list[bool] = []

    async def discover(n: int) -> None:
        # Each discoverer has its own connection, as fifty worker processes would.
        async with connect(valkey_url) as client:
            queue = TaskQueue(client, job, f"w{n}")
            results.extend(await queue.enqueue([task(1)], actor=f"w{n}"))

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            for n in range(50):
                tg.start_soon(discover, n)

    assert sorted(results) == [False] * 49 + [True]
    enqueued = [e for e in await log.read_range() if isinstance(e.event, TaskEnqueued)]
    assert len(enqueued) == 1
    claimed = await make_queue("reader").claim(100)
    assert [lease.task.task_id for lease in claimed] == ["task-1"]


async def test_a_fingerprint_decides_sameness_not_the_task_id(
    make_queue: Callable[..., TaskQueue],
) -> None:
    queue = make_queue("w1")
    fresh = await queue.enqueue(
        [task(1), task(2), task(3)], actor="w1", fingerprints=["fp-a", "fp-a", "fp-b"]
    )
    assert fresh == [True, False, True]
