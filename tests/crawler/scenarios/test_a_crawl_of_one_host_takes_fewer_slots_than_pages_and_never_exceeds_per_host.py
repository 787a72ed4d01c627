"""Real worker processes crawling the test site with ``per_host`` 2 and no delay hand their
slots on to their next request of the host (`crawler._handover`): the site never has more
than 2 requests in flight, though three workers share it; and a worker alone takes fewer
slots from the server (``POLITENESS_ACQUIRE`` calls, counted with MONITOR) than it fetches
pages."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import anyio
import pytest
import redis.asyncio as aioredis

from crawler._politeness import Politeness
from crawler.testsite import Faults, RunningSite, serve_testsite
from eventlog._scripts import POLITENESS_ACQUIRE

pytestmark = pytest.mark.anyio

PER_HOST = 2
PAGES = 40
DEADLINE_S = 120.0
SLOW = Faults(slow_rate=1.0, slow_s=0.02)
"""Every page answered after a moment: the site sees each request in flight."""
ACQUIRE_SHA = hashlib.sha1(POLITENESS_ACQUIRE.encode()).hexdigest()


def pages_fetched(site: RunningSite) -> int:
    return sum(r.path != "/robots.txt" for r in site.requests)


async def test_three_workers_never_have_more_than_per_host_requests_on_the_site(
    start_job: Callable[..., Any], worker_process: Callable[..., Any]
) -> None:
    most = 0
    async with serve_testsite(pages=PAGES, seed=5, faults=SLOW) as site:
        await start_job([site.url + "/"], politeness=Politeness(per_host=PER_HOST))
        with anyio.fail_after(DEADLINE_S):
            workers = [
                await worker_process(name, "--concurrency", "8", "--exit-when-done")
                for name in ("w1", "w2", "w3")
            ]
            async with anyio.create_task_group() as tg:

                async def sample() -> None:
                    nonlocal most
                    while True:
                        most = max(most, site.in_flight())
                        await anyio.sleep(0.001)

                tg.start_soon(sample)
                for worker in workers:
                    assert await worker.wait() == 0
                tg.cancel_scope.cancel()
        fetched = pages_fetched(site)
    assert fetched >= PAGES
    assert 1 <= most <= PER_HOST, most


async def test_a_worker_alone_takes_fewer_slots_from_the_server_than_it_fetches_pages(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    redis_client: aioredis.Redis,
) -> None:
    acquires = 0
    async with serve_testsite(pages=PAGES, seed=5, faults=SLOW) as site:
        await start_job([site.url + "/"], politeness=Politeness(per_host=PER_HOST))
        with anyio.fail_after(DEADLINE_S):
            async with redis_client.monitor() as monitor, anyio.create_task_group() as tg:

                async def count() -> None:
                    nonlocal acquires
                    async for seen in monitor.listen():
                        command = seen.get("command", "")
                        acquires += command.startswith(f"EVALSHA {ACQUIRE_SHA}")

                tg.start_soon(count)
                worker = await worker_process("w1", "--concurrency", "8", "--exit-when-done")
                assert await worker.wait() == 0
                tg.cancel_scope.cancel()
        fetched = pages_fetched(site)
    assert fetched >= PAGES
    assert 0 < acquires < fetched, (acquires, fetched)
