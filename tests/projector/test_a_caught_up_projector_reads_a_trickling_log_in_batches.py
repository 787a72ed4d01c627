"""A projector that has caught up with a log appended to event by event (a crawl) lets
events gather between reads, instead of reading every few events as they come."""

from __future__ import annotations

from collections.abc import Callable

import anyio
import pytest
import redis.asyncio as aioredis

from eventlog import EventLog, TaskEnqueued
from projector._committed import wait_for_position
from projector._projector import TRICKLE_PAUSE_S, Projector

pytestmark = pytest.mark.anyio
EVENTS = 150
APPEND_EVERY_S = 0.005


async def xread_calls(redis: aioredis.Redis) -> int:
    stats = await redis.info("commandstats")
    return int(stats.get("cmdstat_xread", {}).get("calls", 0))


async def test_a_caught_up_projector_reads_a_trickling_log_in_batches(
    log: EventLog,
    make_projector: Callable[..., Projector],
    redis_client: aioredis.Redis,
    job: str,
) -> None:
    events = [
        TaskEnqueued(actor="seed", task_id=f"t{n}", url=f"http://site.test/{n}", site="x")
        for n in range(EVENTS)
    ]
    async with make_projector(commit_interval_s=0.5) as projector:
        before = await xread_calls(redis_client)
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(projector.run)
                started = anyio.current_time()
                for event in events:
                    # The producer's pace: a crawl appends a few events every few ms.
                    await log.append_many([event])
                    await anyio.sleep(APPEND_EVERY_S)
                took = anyio.current_time() - started
                last = await log.last_id()
                assert last is not None
                assert await wait_for_position(redis_client, job, last, 10) is not None
                tg.cancel_scope.cancel()
        reads = await xread_calls(redis_client) - before
    assert projector.state.job.events == EVENTS
    # About one read per TRICKLE_PAUSE_S while the log trickles in, however long a loaded
    # machine makes the appending (EVENTS x 5 ms and more: 10-20 reads on a quiet one);
    # one per append would be EVENTS.
    allowed = 1.5 * took / TRICKLE_PAUSE_S + 10
    assert reads <= allowed, f"{reads} reads for {EVENTS} events appended in {took:.2f} s"
