"""A `ScriptBatcher` sends the script calls its concurrent callers make while one is in
flight as one pipeline: each caller gets its own reply (a lost lease its own), a caller
cancelled while it waits is left out without costing the others theirs, and a script the
server forgot (``SCRIPT FLUSH``) is loaded again."""

from __future__ import annotations

from collections.abc import Callable

import anyio
import pytest
import redis.asyncio as aioredis

from eventlog import (
    WORKERS_GROUP,
    HostSlots,
    JobKeys,
    LeaseLost,
    ScriptBatcher,
    SlotAnswer,
    TaskQueue,
)
from tests.eventlog.helpers import checkpoint, fetched, task

pytestmark = pytest.mark.anyio
MakeQueue = Callable[..., TaskQueue]
CALLERS = 12
LEASE_MS = 10_000


async def take(slots: HostSlots, token: str) -> SlotAnswer:
    return await slots.acquire(
        "site.test", token, per_host=1_000, delay_ms=0, ttl_ms=60_000, max_wait_ms=1_000
    )


async def held(redis_client: aioredis.Redis, keys: JobKeys) -> set[str]:
    return {t.decode() for t in await redis_client.zrange(keys.host_slots("site.test"), 0, -1)}


async def test_calls_made_while_one_is_in_flight_go_as_one_batch_each_with_its_reply(
    redis_client: aioredis.Redis, keys: JobKeys
) -> None:
    batcher = ScriptBatcher(redis_client)
    slots = HostSlots(redis_client, keys, "w1", batcher=batcher)
    answers: dict[str, SlotAnswer] = {}

    async def caller(token: str) -> None:
        answers[token] = await take(slots, token)

    tokens = [f"t{i}" for i in range(CALLERS)]
    async with batcher.running(), anyio.create_task_group() as callers:
        for token in tokens:
            callers.start_soon(caller, token)
    # The first went alone; the others, made while it was in flight, in one batch.
    assert (batcher.calls, batcher.batches) == (CALLERS - 1, 1)
    assert sorted(answers) == sorted(tokens)
    assert all(answer.wait_ms == 0 for answer in answers.values())
    assert await held(redis_client, keys) == set(tokens)


async def test_a_caller_cancelled_while_it_waits_is_left_out_and_the_others_get_theirs(
    redis_client: aioredis.Redis, keys: JobKeys
) -> None:
    batcher = ScriptBatcher(redis_client)
    slots = HostSlots(redis_client, keys, "w1", batcher=batcher)
    answers: dict[str, SlotAnswer] = {}

    async def caller(token: str) -> None:
        answers[token] = await take(slots, token)

    async def given_up(scope: anyio.CancelScope) -> None:
        with scope:
            await take(slots, "gone")

    gone = anyio.CancelScope()
    async with batcher.running(), anyio.create_task_group() as callers:
        callers.start_soon(caller, "first")
        callers.start_soon(given_up, gone)
        for i in range(CALLERS):
            callers.start_soon(caller, f"t{i}")
        await anyio.lowlevel.checkpoint()  # every caller has queued its call
        gone.cancel()
    assert gone.cancelled_caught
    assert sorted(answers) == sorted(["first", *(f"t{i}" for i in range(CALLERS))])
    # Never sent: the slot it asked for was not taken.
    assert "gone" not in await held(redis_client, keys)
    assert batcher.calls == CALLERS


async def test_a_script_the_server_forgot_is_loaded_again_for_the_calls_of_a_batch(
    make_queue: MakeQueue, redis_client: aioredis.Redis, keys: JobKeys
) -> None:
    queue = make_queue("w1")
    await queue.ensure_groups()
    slots = HostSlots(redis_client, keys, "w1", batcher=queue.batcher)
    await take(slots, "before")  # the script is loaded...
    await redis_client.script_flush()  # ...and forgotten
    answers: dict[str, SlotAnswer] = {}

    async def caller(token: str) -> None:
        answers[token] = await take(slots, token)

    async with queue.batcher.running(), anyio.create_task_group() as callers:
        # Alone, another script: it loads its own only, so the batch behind it meets NOSCRIPT.
        callers.start_soon(queue.claim, 1)
        for i in range(CALLERS):
            callers.start_soon(caller, f"t{i}")
    assert queue.batcher.batches == 1
    assert all(answers[f"t{i}"].wait_ms == 0 for i in range(CALLERS))
    assert await held(redis_client, keys) == {"before", *(f"t{i}" for i in range(CALLERS))}


async def test_a_lost_lease_in_a_batch_is_told_to_its_own_caller_only(
    make_queue: MakeQueue, redis_client: aioredis.Redis
) -> None:
    w1, w2 = make_queue("w1", lease_ms=LEASE_MS), make_queue("w2", lease_ms=LEASE_MS)
    await w1.enqueue([task(n) for n in range(CALLERS)], actor="seed")
    leases = await w1.claim(CALLERS)
    assert len(leases) == CALLERS
    lost = leases[-1]
    # Another worker took the last task over: w1's write of it is fenced off.
    await redis_client.xclaim(
        w2.keys.tasks(lost.lane), WORKERS_GROUP, "w2", 0, [lost.entry_id], justid=True
    )
    written: dict[str, str | None] = {}
    refused: list[LeaseLost] = []

    async def write(n: int) -> None:
        lease = leases[n]
        task_id = lease.task.task_id
        try:
            written[task_id] = await w1.checkpoint(
                lease, checkpoint(task_id, 1), before=[fetched(task_id, 1)]
            )
        except LeaseLost as exc:
            refused.append(exc)

    async with w1.batcher.running(), anyio.create_task_group() as writers:
        for n in range(CALLERS):
            writers.start_soon(write, n)
    assert w1.batcher.batches == 1 and w1.batcher.calls == CALLERS - 1
    assert [(exc.task_entry, exc.owner) for exc in refused] == [(lost.entry_id, "w2")]
    assert sorted(written) == sorted(lease.task.task_id for lease in leases[:-1])
    assert all(stream_id for stream_id in written.values())
