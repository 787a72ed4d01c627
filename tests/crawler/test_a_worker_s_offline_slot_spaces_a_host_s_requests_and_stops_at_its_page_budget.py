"""`OfflineRide.slot` while the store is taken for down: a host's requests one at a time,
the job's delay between two, up to the page budget; past it, a request waits for the
store to be back (and its journal flushed), then takes the shared gate's slot."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
import redis.asyncio as aioredis

from crawler._offline import OfflineRide
from crawler._politeness import Politeness, PolitenessGate
from eventlog import JobKeys, Journal, TaskQueue, journal_directory

pytestmark = pytest.mark.anyio
DELAY_S = 0.2


async def test_two_pages_spaced_by_the_delay_then_a_wait_for_the_store(
    redis_client: aioredis.Redis, job: str, tmp_path: Path
) -> None:
    journal = Journal(journal_directory(tmp_path, "w1", job), fsync="never")
    queue = TaskQueue(redis_client, job, "w1", journal=journal)
    gate = PolitenessGate(redis_client, JobKeys(job), Politeness(delay_s=DELAY_S), holder="w1")
    ride = OfflineRide(redis_client, queue, gate, delay_s=DELAY_S, pages=2)
    queue.store_down()

    starts: list[float] = []
    for _ in range(2):
        async with ride.slot("site.test"):
            starts.append(anyio.current_time())
    assert starts[1] - starts[0] >= DELAY_S
    assert ride.fetched == 2

    entered = anyio.Event()

    async def third() -> None:
        async with ride.slot("site.test"):
            entered.set()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(third)
        with anyio.move_on_after(DELAY_S * 3):
            await entered.wait()
        assert not entered.is_set()  # past the budget: waits for the store
        await queue.store_back()
        with anyio.fail_after(5):
            await entered.wait()
    assert ride.fetched == 2
    journal.close()


async def test_requests_waiting_for_the_host_s_turn_do_not_go_past_the_budget(
    redis_client: aioredis.Redis, job: str, tmp_path: Path
) -> None:
    journal = Journal(journal_directory(tmp_path, "w1", job), fsync="never")
    queue = TaskQueue(redis_client, job, "w1", journal=journal)
    gate = PolitenessGate(redis_client, JobKeys(job), Politeness(delay_s=DELAY_S), holder="w1")
    ride = OfflineRide(redis_client, queue, gate, delay_s=DELAY_S, pages=2)
    queue.store_down()
    entered: list[float] = []

    async def request() -> None:
        async with ride.slot("site.test"):
            entered.append(anyio.current_time())

    async with anyio.create_task_group() as tasks:
        for _ in range(4):  # all waiting for the host's turn at once
            tasks.start_soon(request)
        with anyio.fail_after(5):
            while len(entered) < 2:
                await anyio.sleep(0.01)
        await anyio.sleep(DELAY_S * 3)  # room for a third, were the budget not kept
        assert len(entered) == 2
        await queue.store_back()
    assert len(entered) == 4 and ride.fetched == 2
    journal.close()
