"""An entry that does not decode is reported with its ID and moved aside; nothing stops."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import redis.asyncio as aioredis

from eventlog import START, EventLog, PoisonEntry, TaskDone, TaskQueue
from tests.eventlog.helpers import task

pytestmark = pytest.mark.anyio


def done(n: int) -> TaskDone:
    return TaskDone(actor="w1", task_id=f"t{n}", attempt=1)


async def test_a_poison_event_is_reported_after_the_good_ones_before_it(
    log: EventLog, redis_client: aioredis.Redis
) -> None:
    first, second = done(1), done(2)
    await log.append_many([first, second])
    poison_id = (await redis_client.xadd(log.keys.events, {"e": b"\xc1garbage"})).decode()
    await log.append(done(3))

    good = await log.read_after(START)
    assert [e.event for e in good] == [first, second]
    with pytest.raises(PoisonEntry) as caught:
        await log.read_after(good[-1].stream_id)
    assert caught.value.entry_id == poison_id
    assert caught.value.stream == log.keys.events


async def test_a_dead_lettered_event_is_kept_aside_and_reading_goes_on(
    log: EventLog, redis_client: aioredis.Redis
) -> None:
    await redis_client.xadd(log.keys.events, {"e": b"not msgpack at all"})
    third = done(3)
    await log.append(third)
    with pytest.raises(PoisonEntry) as caught:
        await log.read_after(START)
    await log.dead_letter(caught.value)

    [letter] = await log.dead_letters()
    assert (letter.entry_id, letter.stream) == (caught.value.entry_id, log.keys.events)
    assert letter.fields == {b"e": b"not msgpack at all"}
    assert "cannot" in str(caught.value) and letter.reason
    # The log itself is never edited: the reader moves past the poison entry.
    assert await log.length() == 2
    assert [e.event for e in await log.read_after(caught.value.entry_id)] == [third]


async def test_a_poison_task_is_dead_lettered_and_the_rest_are_claimed(
    make_queue: Callable[..., TaskQueue], log: EventLog, redis_client: aioredis.Redis
) -> None:
    queue = make_queue("w1")
    await queue.enqueue([task(1)], actor="seed")
    await redis_client.xadd(queue.keys.tasks(1), {"t": b"\x00\x01"})
    await queue.enqueue([task(2)], actor="seed")

    claimed = await queue.claim(10)
    assert [lease.task.task_id for lease in claimed] == ["task-1", "task-2"]
    assert queue.poisoned == 1
    [letter] = await log.dead_letters()
    assert letter.stream == queue.keys.tasks(1) and "does not decode" in letter.reason
    assert {lease.entry_id for lease in await queue.pending()} == {
        lease.entry_id for lease in claimed
    }
