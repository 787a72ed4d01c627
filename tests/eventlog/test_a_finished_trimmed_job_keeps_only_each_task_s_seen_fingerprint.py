"""What a finished job leaves in Redis once its log is trimmed: per task, only its
fingerprint in a seen bucket. Lane entries, leases, checkpoint pointers and delayed tasks
are gone with the task; every other key is one a job, whatever its size, and the event-id
sets of the dedup window expire by themselves (``tools/bench_scale.py`` weighs the bytes)."""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Callable

import msgspec
import pytest
import redis.asyncio as aioredis

from eventlog import (
    WORKERS_GROUP,
    EventLog,
    RetryScheduled,
    Task,
    TaskClaimed,
    TaskDone,
    TaskFailed,
    TaskQueue,
)
from tests.eventlog.helpers import checkpoint, fetched

TASKS = 3_000
BATCH = 500
PER_JOB = {"events", "tasks:<n>", "seen:count", "eids:<n>"}
"""Key shapes a finished job keeps whatever its size (the lanes are three, the dedup
generations at most two)."""


def shape(short_key: str) -> str:
    return re.sub(r"(?<=:)\d+(?=:|$)", "<n>", short_key)


def url_task(n: int) -> Task:
    url = f"http://site.test/page/{n}"
    return Task(task_id=hashlib.blake2b(url.encode(), digest_size=8).hexdigest(), url=url,
                site="http://site.test")  # fmt: skip


async def run_every_task(queue: TaskQueue) -> None:
    """Claim and end every task as a crawl does: checkpointed pages, a retry through the
    delayed set, a failure."""
    while leases := await queue.claim(BATCH):
        for n, lease in enumerate(leases):
            task_id, attempt = lease.task.task_id, lease.task.attempt
            claimed = TaskClaimed(actor="w1", task_id=task_id, attempt=attempt)
            if n % 3 == 0:
                await queue.checkpoint(lease, checkpoint(task_id, 1), before=[claimed])
            if n % 7 == 0 and attempt == 1:
                retry = RetryScheduled(
                    actor="w1", task_id=task_id, attempt=1, delay_s=0.0, reason="503"
                )
                again = msgspec.structs.replace(lease.task, attempt=2)
                await queue.delay(lease, [retry], again, 0.0)
                continue
            if n % 11 == 0:
                end: TaskDone | TaskFailed = TaskFailed(
                    actor="w1", task_id=task_id, attempt=attempt, reason="http 404"
                )
            else:
                end = TaskDone(actor="w1", task_id=task_id, attempt=attempt)
            await queue.finish(lease, end, before=[fetched(task_id, 1)])
        await queue.promote()


@pytest.mark.anyio
async def test_a_finished_trimmed_job_keeps_only_each_task_s_seen_fingerprint(
    redis_client: aioredis.Redis, make_queue: Callable[..., TaskQueue]
) -> None:
    queue = make_queue("w1")
    keys = queue.keys
    for start in range(0, TASKS, BATCH):
        batch = [url_task(n) for n in range(start, start + BATCH)]
        assert all(await queue.enqueue(batch, actor="seed"))
    await run_every_task(queue)
    while await queue.promote() or await queue.remaining():
        await run_every_task(queue)
    log = EventLog(redis_client, keys)
    info = await log.stream_info()
    assert info is not None
    last = info.last_id
    ms, seq = map(int, last.split("-"))
    await log.trim_before(f"{ms}-{seq + 1}")  # as the projector trims what it committed

    found = [k.decode() async for k in redis_client.scan_iter(match=keys.pattern, count=1000)]
    shapes = Counter(shape(keys.short(key)) for key in found)
    per_task = {s for s in shapes if s not in PER_JOB}
    assert per_task == {"seen:<n>"}, f"keys beside the seen buckets: {sorted(per_task)}"
    assert shapes["tasks:<n>"] == 3 and shapes["eids:<n>"] <= 2 and shapes["events"] == 1

    buckets = [key for key in found if shape(keys.short(key)) == "seen:<n>"]
    assert sum([await redis_client.hlen(key) for key in buckets]) == TASKS
    assert await redis_client.get(keys.seen_count) == str(TASKS).encode()
    for lane in keys.lanes:
        assert await redis_client.xlen(lane) == 0
        # crawlog's client keeps the raw reply: the count comes first.
        assert (await redis_client.execute_command("XPENDING", lane, WORKERS_GROUP))[0] == 0
    assert await redis_client.xlen(keys.events) == 0
    for key in found:
        if shape(keys.short(key)) == "eids:<n>":
            assert await redis_client.ttl(key) > 0, "the dedup sets expire by themselves"
