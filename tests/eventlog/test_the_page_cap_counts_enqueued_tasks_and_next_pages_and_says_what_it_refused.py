"""``--max-pages`` is one count of pages for the job: every task enqueued (its first page)
and every next page a task takes (`TaskQueue.take_page`); once it is reached, nothing more
is enqueued or taken, and `TaskQueue.enqueue_within` says how many tasks the cap refused,
apart from those seen already."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import redis.asyncio as aioredis

from eventlog import JobKeys, TaskQueue
from tests.eventlog.helpers import task

pytestmark = pytest.mark.anyio
CAP = 5


async def test_tasks_and_next_pages_share_the_cap_and_refusals_are_counted_apart_from_seen(
    redis_client: aioredis.Redis, keys: JobKeys, make_queue: Callable[..., TaskQueue]
) -> None:
    queue = make_queue("w1")
    new, past = await queue.enqueue_within([task(1), task(2), task(3)], actor="w1", cap=CAP)
    assert (new, past) == ([True, True, True], 0)
    assert await queue.take_page(CAP)
    assert await queue.take_page(CAP)
    assert not await queue.take_page(CAP), "3 tasks and 2 next pages: the cap of 5 is reached"
    new, past = await queue.enqueue_within([task(1), task(4), task(5)], actor="w1", cap=CAP)
    assert new == [False, False, False]
    assert past == 2, "task 1 was seen already: only tasks 4 and 5 were refused by the cap"
    assert int(await redis_client.get(keys.seen_count) or 0) == CAP


async def test_without_a_cap_enqueue_within_refuses_nothing(
    make_queue: Callable[..., TaskQueue],
) -> None:
    queue = make_queue("w1")
    tasks = [task(n) for n in range(1, 8)]
    assert await queue.enqueue_within(tasks, actor="w1") == ([True] * 7, 0)
