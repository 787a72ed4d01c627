"""A lease moved to the recovery lane is counted by a worker's metrics: the move is its own
append step (``recover``), not a ``requeue``."""

from __future__ import annotations

import msgspec
import pytest
import redis.asyncio as aioredis
from prometheus_client import CollectorRegistry

from crawler._metrics import QueueMetrics, WorkerMetrics
from eventlog import WORKERS_GROUP, TaskQueue, TaskReclaimed
from tests.eventlog.helpers import task

pytestmark = pytest.mark.anyio
LEASE_MS = 10_000


async def test_a_recovered_task_counts_as_a_reclaim(redis_client: aioredis.Redis, job: str) -> None:
    owner = TaskQueue(redis_client, job, "w1", lease_ms=LEASE_MS)
    await owner.enqueue([task(1)], actor="seed")
    [lease] = await owner.claim(1)
    # The owner stalled past its lease (the server's idle time, set rather than waited).
    await redis_client.execute_command(
        "XCLAIM", owner.keys.tasks(lease.lane), WORKERS_GROUP, "w1", 0, lease.entry_id,
        "IDLE", LEASE_MS + 1, "JUSTID",
    )  # fmt: skip
    registry = CollectorRegistry()
    metrics = WorkerMetrics(registry, job=job, worker="w2")
    queue = TaskQueue(redis_client, job, "w2", lease_ms=LEASE_MS, observer=QueueMetrics(metrics))
    [found], _ = await queue.expired()
    event = TaskReclaimed(
        actor="w2",
        task_id=found.task.task_id,
        attempt=1,
        previous_owner="w1",
        deliveries=found.deliveries,
    )
    moved = msgspec.structs.replace(found.task, recoveries=found.recoveries)
    assert await queue.recover([(found, event, moved)]) == [True]
    assert registry.get_sample_value("crawlog_reclaims_total") == 1
    assert registry.get_sample_value("crawlog_events_appended_total") == 1
    count = "crawlog_event_append_seconds_count"
    assert registry.get_sample_value(count, {"step": "recover"}) == 1
