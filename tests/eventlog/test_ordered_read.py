"""The projector's read: every event after a position, in log order, in batches."""

from __future__ import annotations

import anyio
import pytest

from eventlog import START, EventLog, TaskDone

pytestmark = pytest.mark.anyio


def done(n: int) -> TaskDone:
    return TaskDone(actor="w1", task_id=f"t{n}", attempt=1)


async def test_reading_in_batches_returns_every_event_once_in_order(log: EventLog) -> None:
    events = [done(n) for n in range(250)]
    await log.append_many(events)
    seen, position = [], START
    while batch := await log.read_after(position, count=40):
        assert len(batch) <= 40
        seen += [entry.event for entry in batch]
        position = batch[-1].stream_id
    assert seen == events


async def test_reading_after_the_end_returns_nothing(log: EventLog) -> None:
    [last] = await log.append_many([done(1)])
    assert last is not None
    assert await log.read_after(last) == []


async def test_a_blocking_read_wakes_up_when_an_event_is_appended(log: EventLog) -> None:
    received = []

    async def reader() -> None:
        received.extend(await log.read_after(START, block_ms=4000))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            await anyio.wait_all_tasks_blocked()
            await log.append(event := done(1))
    assert [e.event for e in received] == [event]


async def test_a_blocking_read_never_blocks_past_the_socket_timeout(log: EventLog) -> None:
    # redis-py takes a read that outlasts the socket timeout for a dead connection and
    # retries it; an uncapped BLOCK would hang for minutes. The cap keeps it below.
    assert log._max_block_ms < 1000 * log.redis.connection_pool.connection_kwargs["socket_timeout"]


async def test_events_are_read_back_by_stream_id_in_one_round_trip(log: EventLog) -> None:
    events = [done(n) for n in range(5)]
    ids = await log.append_many(events)
    wanted = [ids[1], ids[3], "1-1"]  # the last one does not exist (trimmed or never there)
    found = await log.read_ids([i for i in wanted if i is not None])
    assert found == {ids[1]: events[1], ids[3]: events[3]}
