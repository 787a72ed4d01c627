"""`PolitenessGate.busy_hosts`: a host is busy once ``per_host`` of the gate's requests
wait for a slot on it (its delay, or its slots all held); `eased` returns when it is busy
no more, `queued` when one more request waits, and `waiting` counts them on every host."""

from __future__ import annotations

from collections.abc import Callable

import anyio
import pytest
import redis.asyncio as aioredis

from crawler._politeness import Politeness, PolitenessGate
from eventlog import JobKeys

pytestmark = pytest.mark.anyio
HOST = "slow.test"
OTHER = "fast.test"
DEADLINE_S = 10.0
POLL_S = 0.005


async def until(condition: Callable[[], bool]) -> None:
    """Poll ``condition`` (the caller's deadline bounds it)."""
    while not condition():
        await anyio.sleep(POLL_S)


async def test_a_host_with_per_host_requests_waiting_is_busy_until_one_gets_its_slot(
    redis_client: aioredis.Redis, keys: JobKeys
) -> None:
    # A delay long enough that the next two requests are queued before it ends even on a
    # loaded machine (were it over first, only one would ever wait and none be busy).
    gate = PolitenessGate(redis_client, keys, Politeness(per_host=2, delay_s=1.5))
    started: list[str] = []

    async def request(host: str) -> None:
        async with gate.slot(host):
            started.append(host)

    with anyio.fail_after(DEADLINE_S):
        async with anyio.create_task_group() as tg:
            tg.start_soon(request, HOST)  # takes the slot; the delay then holds the rest
            await until(lambda: started == [HOST])
            assert gate.busy_hosts() == set()
            tg.start_soon(request, HOST)
            await gate.queued()
            assert gate.waiting == 1 and gate.busy_hosts() == set()
            tg.start_soon(request, OTHER)  # another host: no delay, never waits long
            tg.start_soon(request, HOST)
            await until(lambda: gate.busy_hosts() == {HOST})
            await gate.eased()
            # One of the two got its slot at the delay's end: one waits, not busy.
            assert gate.busy_hosts() == set()
            assert started.count(HOST) == 2 and OTHER in started
    assert gate.waiting == 0
