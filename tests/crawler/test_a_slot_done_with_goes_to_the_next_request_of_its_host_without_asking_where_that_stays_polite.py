"""A worker's gate hands a slot it is done with to its next request of the same host
without asking the server (`crawler._handover`): fewer slot scripts than requests, never
more than ``per_host`` requests in flight on the host across workers, every request's start
recorded in its worker's fetches started before it goes; and no handover at all where a
delay applies (the job's or the host's own) or once the slot is old.

Real valkey-server; "in flight" is counted by the requests themselves as they run."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator

import anyio
import pytest
import redis.asyncio as aioredis

from crawler._politeness import Politeness, PolitenessGate
from eventlog import JobKeys, connect

pytestmark = pytest.mark.anyio

HOST = "example.org"
DEADLINE_S = 30.0
REQUEST_S = 0.004
"""How long each request holds its slot."""


class Flight:
    """Requests on the host now, and the most at once."""

    def __init__(self) -> None:
        self.now = 0
        self.most = 0
        self.unrecorded: list[str] = []


@pytest.fixture
async def other_client(valkey_url: str) -> AsyncIterator[aioredis.Redis]:
    async with connect(valkey_url) as client:
        yield client


async def request(
    gate: PolitenessGate, task_id: str, flight: Flight, checker: aioredis.Redis, keys: JobKeys
) -> int:
    async with gate.slot(HOST, task_id) as slot:
        flight.now += 1
        flight.most = max(flight.most, flight.now)
        try:
            if not await checker.hexists(keys.fetches_started(gate.holder), task_id):
                flight.unrecorded.append(task_id)
            await anyio.sleep(REQUEST_S)
        finally:
            flight.now -= 1
        return slot.started_ms


async def crawl(
    gates: list[PolitenessGate], per_gate: int, checker: aioredis.Redis, keys: JobKeys
) -> tuple[Flight, list[int]]:
    """``per_gate`` requests to the host through each gate at once, each gate's
    `free_loop` running as in a worker; the flight and every request's start."""
    flight = Flight()
    starts: list[int] = []

    async def one(gate: PolitenessGate, task_id: str) -> None:
        starts.append(await request(gate, task_id, flight, checker, keys))

    with anyio.fail_after(DEADLINE_S):
        async with anyio.create_task_group() as loops:
            for gate in gates:
                loops.start_soon(gate.free_loop)
            async with anyio.create_task_group() as tg:
                for gate, n in itertools.product(gates, range(per_gate)):
                    tg.start_soon(one, gate, f"{gate.holder}-t{n}")
            for gate in gates:
                await gate.flush()
            loops.cancel_scope.cancel()
    return flight, starts


async def test_a_worker_s_requests_to_one_host_take_fewer_slots_than_they_are(
    redis_client: aioredis.Redis, other_client: aioredis.Redis, keys: JobKeys
) -> None:
    gate = PolitenessGate(redis_client, keys, Politeness(per_host=2), holder="w1")
    flight, _ = await crawl([gate], 24, other_client, keys)
    assert flight.most <= 2
    assert flight.unrecorded == []
    assert gate.acquires + gate.handovers == 24
    assert gate.handovers >= 6, (gate.acquires, gate.handovers)
    assert await redis_client.zcard(keys.host_slots(HOST)) == 0  # all freed in the end


async def test_two_workers_never_have_more_than_per_host_in_flight_on_the_host(
    redis_client: aioredis.Redis, other_client: aioredis.Redis, keys: JobKeys
) -> None:
    politeness = Politeness(per_host=2, max_poll_s=0.01)
    gates = [
        PolitenessGate(redis_client, keys, politeness, holder="w1"),
        PolitenessGate(other_client, keys, politeness, holder="w2"),
    ]
    flight, _ = await crawl(gates, 20, other_client, keys)
    assert flight.most <= 2
    assert flight.unrecorded == []
    assert sum(g.handovers for g in gates) > 0


async def test_with_the_job_s_delay_no_slot_is_handed_over_and_the_starts_keep_it(
    redis_client: aioredis.Redis, other_client: aioredis.Redis, keys: JobKeys
) -> None:
    gate = PolitenessGate(
        redis_client, keys, Politeness(per_host=2, delay_s=0.02, max_poll_s=0.01), holder="w1"
    )
    _, starts = await crawl([gate], 6, other_client, keys)
    assert gate.handovers == 0
    ordered = sorted(starts)
    assert min(b - a for a, b in itertools.pairwise(ordered)) >= 20


async def test_with_the_host_s_own_delay_no_slot_is_handed_over(
    redis_client: aioredis.Redis, other_client: aioredis.Redis, keys: JobKeys
) -> None:
    # As robots.txt's Crawl-delay sets it, for every worker: the job's own delay is 0.
    gate = PolitenessGate(redis_client, keys, Politeness(per_host=2, max_poll_s=0.01))
    await gate.set_delay(HOST, 0.02)
    _, starts = await crawl([gate], 6, other_client, keys)
    assert gate.handovers == 0
    ordered = sorted(starts)
    assert min(b - a for a, b in itertools.pairwise(ordered)) >= 20


async def test_an_old_slot_is_asked_for_again_not_handed_over(
    redis_client: aioredis.Redis, other_client: aioredis.Redis, keys: JobKeys
) -> None:
    # A request holds its slot (4 ms) for longer than a tenth of the slot's ttl: the next one
    # would have less than nine tenths of a fresh slot's life left.
    gate = PolitenessGate(redis_client, keys, Politeness(per_host=1, slot_ttl_s=0.02), holder="w1")
    flight = Flight()
    with anyio.fail_after(DEADLINE_S):
        async with anyio.create_task_group() as tg:
            for n in range(4):
                tg.start_soon(request, gate, f"t{n}", flight, other_client, keys)
    assert gate.handovers == 0
    assert gate.acquires == 4
