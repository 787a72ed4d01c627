"""A task's `RequestSpec` (callback, data, method, body, headers) is in its lane entry and
its ``TaskEnqueued`` event, as the enqueue script writes them; a plain task's entry is
byte for byte what it was before specs existed, and an event written before them decodes
with none."""

from __future__ import annotations

import msgspec
import pytest
import redis.asyncio as aioredis

from eventlog import EventLog, RequestSpec, Task, TaskEnqueued, TaskQueue, decode, encode
from eventlog._tasks import task_decoder, task_encoder

pytestmark = pytest.mark.anyio
SPEC = RequestSpec(
    callback="parse_item",
    data={"category": "lamps", "page": 2},
    method="POST",
    body=b"q=lamps",
    headers={"Content-Type": "application/x-www-form-urlencoded"},
)


def test_a_plain_task_s_entry_has_no_spec_key() -> None:
    plain = Task(task_id="t1", url="http://a.test/", site="http://a.test")
    encoded = task_encoder.encode(plain)
    assert b"spec" not in encoded
    fields = {"task_id": "t1", "url": "http://a.test/", "site": "http://a.test"}
    assert msgspec.msgpack.decode(encoded) == fields
    # Its three fields only: a struct of more than 15 fields heads even a short map with a
    # map 16 header (2 bytes more than a fixmap's).
    assert len(encoded) <= len(msgspec.msgpack.encode(fields)) + 2


def test_an_enqueued_event_written_before_specs_decodes_with_none() -> None:
    new = TaskEnqueued(actor="w", task_id="t1", url="http://a.test/", site="http://a.test")
    version, fields = msgspec.msgpack.decode(encode(new))
    del fields["spec"]
    assert decode(msgspec.msgpack.encode([version, fields])) == new


async def test_the_spec_is_in_the_lane_entry_and_the_event(
    redis_client: aioredis.Redis, job: str, log: EventLog
) -> None:
    queue = TaskQueue(redis_client, job, "w1")
    task = Task(task_id="p1", url="http://a.test/search", site="http://a.test", spec=SPEC)
    assert await queue.enqueue([task], actor="test") == [True]
    (lease,) = await queue.claim(1, block_ms=100)
    assert lease.task.spec == SPEC
    assert task_decoder.decode(task_encoder.encode(task)) == task
    (event,) = [e.event for e in await log.read_range() if isinstance(e.event, TaskEnqueued)]
    assert event.spec == SPEC
