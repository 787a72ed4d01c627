"""A worker's gate (`PolitenessGate.free_loop` running) frees a slot it is done with in
its next acquire's script rather than with a round trip of its own, or `DEFERRED_FREE_S`
later when no acquire comes; the host's limit holds meanwhile (a slot freed late only
holds its host longer), and a stopping gate frees each slot at once again.

Real valkey-server; what is held is read from the host's slots key and the holder's index.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest
import redis.asyncio as aioredis

from crawler._politeness import DEFERRED_FREE_S, Politeness, PolitenessGate
from eventlog import JobKeys, connect

pytestmark = pytest.mark.anyio

HOST = "example.org"
OTHER_HOST = "example.net:8080"
DEADLINE_S = 15.0


async def held(redis: aioredis.Redis, keys: JobKeys, host: str) -> set[bytes]:
    return set(await redis.zrange(keys.host_slots(host), 0, -1))


async def indexed(redis: aioredis.Redis, keys: JobKeys, holder: str) -> set[bytes]:
    return set(await redis.hkeys(keys.slots_held(holder)))


@pytest.fixture
async def other_client(valkey_url: str) -> AsyncIterator[aioredis.Redis]:
    async with connect(valkey_url) as client:
        yield client


async def test_a_slot_done_with_is_freed_by_the_next_acquire_on_any_host(
    redis_client: aioredis.Redis, keys: JobKeys
) -> None:
    gate = PolitenessGate(redis_client, keys, Politeness(per_host=1), holder="w1")
    with anyio.fail_after(DEADLINE_S):
        async with anyio.create_task_group() as tg:
            tg.start_soon(gate.free_loop)
            await anyio.sleep(0)
            async with gate.slot(HOST):
                first = await held(redis_client, keys, HOST)
            # Done with, not freed yet: no round trip of its own.
            assert await held(redis_client, keys, HOST) == first
            assert await indexed(redis_client, keys, "w1") == first
            async with gate.slot(OTHER_HOST):
                # The acquire on another host freed it, and its index entry, first.
                assert await held(redis_client, keys, HOST) == set()
                assert await indexed(redis_client, keys, "w1") == await held(
                    redis_client, keys, OTHER_HOST
                )
            tg.cancel_scope.cancel()


async def test_with_no_acquire_after_it_a_slot_is_freed_within_the_deferred_time(
    redis_client: aioredis.Redis, keys: JobKeys
) -> None:
    gate = PolitenessGate(redis_client, keys, Politeness(per_host=1), holder="w1")
    with anyio.fail_after(DEADLINE_S):
        async with anyio.create_task_group() as tg:
            tg.start_soon(gate.free_loop)
            await anyio.sleep(0)
            async with gate.slot(HOST):
                pass
            done_with = anyio.current_time()
            assert await held(redis_client, keys, HOST)
            while await held(redis_client, keys, HOST):
                await anyio.sleep(0.005)
            freed_after = anyio.current_time() - done_with
            assert await indexed(redis_client, keys, "w1") == set()
            tg.cancel_scope.cancel()
    assert freed_after >= DEFERRED_FREE_S * 0.9


async def test_the_host_s_limit_holds_while_a_free_waits(
    redis_client: aioredis.Redis, other_client: aioredis.Redis, keys: JobKeys
) -> None:
    # Another worker polls the full host: it gets the slot only once the free went out.
    fast = Politeness(per_host=1, max_poll_s=0.005)
    mine = PolitenessGate(redis_client, keys, fast, holder="w1")
    theirs = PolitenessGate(other_client, keys, fast, holder="w2")
    with anyio.fail_after(DEADLINE_S):
        async with anyio.create_task_group() as tg:
            tg.start_soon(mine.free_loop)
            await anyio.sleep(0)
            async with mine.slot(HOST):
                pass
            done_with = anyio.current_time()
            async with theirs.slot(HOST):
                waited = anyio.current_time() - done_with
                assert await indexed(redis_client, keys, "w1") == set()
                assert len(await held(redis_client, keys, HOST)) == 1
            tg.cancel_scope.cancel()
    assert waited >= DEFERRED_FREE_S * 0.9


async def test_a_waiter_of_the_same_gate_takes_the_slot_at_once(
    redis_client: aioredis.Redis, keys: JobKeys
) -> None:
    # A poll far slower than the wake-up, so a loaded machine's slow round trips cannot pass
    # for one.
    poll_s = 5.0
    gate = PolitenessGate(
        redis_client, keys, Politeness(per_host=1, max_poll_s=poll_s), holder="w1"
    )
    order: list[str] = []
    with anyio.fail_after(DEADLINE_S):
        async with anyio.create_task_group() as tg:
            tg.start_soon(gate.free_loop)
            await anyio.sleep(0)
            first_in = anyio.Event()

            async def first() -> None:
                async with gate.slot(HOST):
                    first_in.set()
                    await anyio.sleep(0.05)
                    order.append("first")

            async def second() -> None:
                await first_in.wait()
                async with gate.slot(HOST):
                    order.append("second")
                    # Its acquire freed the first one's slot in the same script.
                    assert len(await held(redis_client, keys, HOST)) == 1

            started = anyio.current_time()
            async with anyio.create_task_group() as both:
                both.start_soon(first)
                both.start_soon(second)
            took = anyio.current_time() - started
            tg.cancel_scope.cancel()
    assert order == ["first", "second"]
    # Woken by the first one's end, not by a poll or the deferred free.
    assert took < poll_s / 2


async def test_a_stopping_gate_frees_each_slot_at_once_and_flush_frees_the_rest(
    redis_client: aioredis.Redis, keys: JobKeys
) -> None:
    gate = PolitenessGate(redis_client, keys, Politeness(per_host=2), holder="w1")
    with anyio.fail_after(DEADLINE_S):
        async with anyio.create_task_group() as tg:
            tg.start_soon(gate.free_loop)
            await anyio.sleep(0)
            async with gate.slot(HOST):
                pass
            assert await held(redis_client, keys, HOST)
            await gate.flush()
            assert await held(redis_client, keys, HOST) == set()
            gate.release_by(anyio.current_time() + DEADLINE_S)
            async with gate.slot(HOST):
                pass
            assert await held(redis_client, keys, HOST) == set()
            assert await indexed(redis_client, keys, "w1") == set()
            tg.cancel_scope.cancel()


async def test_without_the_free_loop_a_slot_is_freed_as_its_block_ends(
    redis_client: aioredis.Redis, keys: JobKeys
) -> None:
    gate = PolitenessGate(redis_client, keys, Politeness(per_host=1), holder="w1")
    with anyio.fail_after(DEADLINE_S):
        async with gate.slot(HOST):
            assert await held(redis_client, keys, HOST)
        assert await held(redis_client, keys, HOST) == set()
