"""A retried append (same event_id, first reply lost) writes the event once."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis

from eventlog import EventLog, JobKeys, PageFetched, TaskDone
from eventlog._log import dedup_keys

pytestmark = pytest.mark.anyio


def page(n: int) -> PageFetched:
    return PageFetched(actor="w1", task_id="t1", attempt=1, url=f"http://x/{n}", status=200)


async def test_appending_one_event_returns_its_stream_id(log: EventLog) -> None:
    event = page(1)
    stream_id = await log.append(event)
    assert stream_id is not None
    [entry] = await log.read_after()
    assert (entry.stream_id, entry.event) == (stream_id, event)


async def test_same_event_id_appended_twice_makes_one_entry(log: EventLog) -> None:
    event = page(1)
    first = await log.append(event)
    again = await log.append(event)  # what a retry after a lost reply sends
    assert first is not None and again is None
    assert await log.length() == 1


async def test_a_batch_is_appended_in_order_and_skips_only_repeats(log: EventLog) -> None:
    events = [page(n) for n in range(2500)]  # more than one script call's worth
    ids = await log.append_many(events)
    assert all(ids) and len(set(ids)) == len(events)
    extra = page(9999)
    repeat = await log.append_many([events[7], extra, events[2400]])
    assert repeat[0] is None and repeat[2] is None and repeat[1] is not None
    entries = await log.read_range()
    assert [e.event for e in entries] == [*events, extra]


async def test_a_repeat_in_the_next_dedup_generation_is_still_skipped(
    redis_client: aioredis.Redis, job: str
) -> None:
    log = EventLog(redis_client, job, dedup_window_s=60)
    event = TaskDone(actor="w1", task_id="t1", attempt=1)
    assert await log.append(event) is not None
    # Move the event's id from the current generation set to the previous one, as if the
    # window had rolled over between the first attempt and the retry.
    current, previous = dedup_keys(JobKeys(job), 60)
    await redis_client.rename(current, previous)
    assert await log.append(event) is None
    assert await log.length() == 1


async def test_dedup_sets_expire(log: EventLog, redis_client: aioredis.Redis) -> None:
    await log.append(page(1))
    current, _ = dedup_keys(log.keys, log.dedup_window_s)
    ttl = await redis_client.ttl(current)
    assert 0 < ttl <= 2 * log.dedup_window_s
