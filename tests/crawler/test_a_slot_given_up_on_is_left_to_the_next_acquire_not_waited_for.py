"""A slot left by an error or a cancellation is freed at once by default; with
``release_later`` (a worker riding through a store outage, which gives up on an acquire
the store does not answer) it is not waited for: the gate's next acquire frees it in its
own script, as a slot done with is (`PolitenessGate.free_loop` running).

Real valkey-server; what is held is read from the host's slots key.
"""

from __future__ import annotations

import anyio
import pytest
import redis.asyncio as aioredis

from crawler._politeness import Politeness, PolitenessGate
from eventlog import JobKeys

pytestmark = pytest.mark.anyio

HOST = "example.org"
OTHER_HOST = "example.net:8080"
DEADLINE_S = 5.0


async def held(redis: aioredis.Redis, keys: JobKeys, host: str) -> int:
    """How many slots of ``host`` are held."""
    return int(await redis.zcard(keys.host_slots(host)))


@pytest.mark.parametrize("release_later", [False, True])
async def test_a_slot_left_by_an_error_is_freed_now_or_by_the_next_acquire(
    redis_client: aioredis.Redis, keys: JobKeys, release_later: bool
) -> None:
    gate = PolitenessGate(redis_client, keys, Politeness(per_host=1), holder="w1")
    with anyio.fail_after(DEADLINE_S):
        async with anyio.create_task_group() as tg:
            tg.start_soon(gate.free_loop)
            await anyio.sleep(0)
            with pytest.raises(RuntimeError):
                async with gate.slot(HOST, release_later=release_later):
                    assert await held(redis_client, keys, HOST) == 1
                    raise RuntimeError("the request failed")
            assert await held(redis_client, keys, HOST) == (1 if release_later else 0)
            async with gate.slot(OTHER_HOST):
                assert await held(redis_client, keys, HOST) == 0
            tg.cancel_scope.cancel()


async def test_an_acquire_cancelled_with_release_later_returns_without_a_round_trip(
    redis_client: aioredis.Redis, keys: JobKeys
) -> None:
    gate = PolitenessGate(redis_client, keys, Politeness(per_host=1), holder="w1")
    with anyio.fail_after(DEADLINE_S):
        async with anyio.create_task_group() as tg:
            tg.start_soon(gate.free_loop)
            await anyio.sleep(0)
            async with gate.slot(HOST):
                # The host is full: the second acquire waits, and is given up on.
                with anyio.CancelScope() as scope:
                    scope.deadline = anyio.current_time() + 0.2
                    async with gate.slot(HOST, release_later=True):
                        pytest.fail("the host had no free slot")
                assert scope.cancelled_caught
            tg.cancel_scope.cancel()
