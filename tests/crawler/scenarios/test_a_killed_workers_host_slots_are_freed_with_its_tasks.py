"""A worker SIGKILLed while its pages are in flight leaves its per-host slots held; they are
freed when its tasks are taken back (its restart, same name) or recovered (another worker,
once the lease expires): the crawl does not sit idle until the slots' ttl.

Real worker processes against the test site, every page answered late so that requests are
in flight at the kill, the default politeness (2 a host, slots kept 30 s); the site's own
request log says when the next page was asked for.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
import redis.asyncio as aioredis

from crawler._politeness import DEFAULT_PER_HOST, DEFAULT_SLOT_TTL_S, Politeness
from crawler.testsite import Faults, RunningSite, serve_testsite
from eventlog import JobKeys
from tests.crawler.left_behind import holds_its_name, kill_while
from tests.crawler.operator_cli import crawlog

pytestmark = pytest.mark.anyio

ROBOTS_PATH = "/robots.txt"
SLOW_S = 0.5
"""Every page is answered this late: what the request log times is the response."""
FIRST_REQUEST_S = 2.0
"""The target: a restarted crawl's first page request within this long of its start;
counted here from the moment the restarted worker holds its name (its first write, before
any task: robots.txt is the job's, read from Redis, not asked again), so that a loaded
machine's slow process start does not count (the name it takes over at once:
tests/eventlog/test_worker_name_lock.py)."""
LOAD_SLACK_S = 4.0
"""What a loaded 2-core machine may add to the target (the worker's start after its name:
its journal, its take-back, its HTTP client). A first request before the dead slots'
expiry is in time whatever the load; waiting them out (`DEFAULT_SLOT_TTL_S`) is neither."""
LONG_LEASE_MS = 120_000
"""Longer than the test: the restart must take its own tasks back, not wait for expiry."""
SHORT_LEASE_MS = 2_000
LATE_S = SLOW_S + 0.5
"""Responses to requests in flight at the kill are written (and logged) up to this long
after it, with room for a loaded machine."""
SLOW_PAGES = Faults(slow_rate=1.0, slow_s=SLOW_S)
DEADLINE_S = DEFAULT_SLOT_TTL_S + 30
"""Long enough to see the old behaviour fail (waiting out the ttl) on its assertion."""


async def held_slots(redis: aioredis.Redis, keys: JobKeys, host: str) -> int:
    return int(await redis.zcard(keys.host_slots(host)))


async def every_slot_in_flight(
    redis: aioredis.Redis, keys: JobKeys, site: RunningSite, host: str
) -> bool:
    """Whether all the host's slots are held and the site has as many requests on their
    way. Not told by when the slots were taken: a slot handed over from one request to
    the next (`crawler._handover`) keeps its first take's time."""
    return (
        await held_slots(redis, keys, host) == DEFAULT_PER_HOST
        and site.in_flight() == DEFAULT_PER_HOST
    )


async def first_after(site: RunningSite, moment: float) -> float:
    """When the first page (robots.txt aside) answered after ``moment`` was written."""
    while True:
        times = [r.time for r in site.requests if r.time > moment and r.path != ROBOTS_PATH]
        if times:
            return min(times)
        await anyio.sleep(0.01)


async def kill_with_pages_in_flight(
    site: RunningSite,
    worker_process: Callable[..., Any],
    redis: aioredis.Redis,
    keys: JobKeys,
) -> tuple[float, float]:
    """Start w1, SIGKILL it while it holds every slot of the host; the time of the kill and
    when the first of the slots it left would expire."""
    host = site.url.removeprefix("http://")
    w1 = await worker_process("w1")
    await kill_while(w1, lambda: every_slot_in_flight(redis, keys, site, host))
    killed = time.time()
    await w1.wait()
    left = await redis.zrange(keys.host_slots(host), 0, -1, withscores=True)
    assert len(left) == DEFAULT_PER_HOST, "the kill left them held"
    return killed, min(float(expiry) for _, expiry in left) / 1000


async def test_a_restarted_worker_fetches_at_once_not_after_its_dead_slots_expire(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    redis_client: aioredis.Redis,
    keys: JobKeys,
    valkey_url: str,
    data_dir: Path,
) -> None:
    async with serve_testsite(pages=120, seed=1, faults=SLOW_PAGES) as site:
        await start_job([site.url + "/"], lease_ms=LONG_LEASE_MS, politeness=Politeness())
        with anyio.fail_after(DEADLINE_S):
            _, expiry = await kill_with_pages_in_flight(site, worker_process, redis_client, keys)
            # The site still answers the requests the kill left in flight (and logs them):
            # restarted once they are answered, so that none is taken for the restart's.
            await site.no_connections()
            # Nothing moves: no worker is alive to wait for the slots, and the progress says
            # so, with how to resume (not that someone waits for a host slot).
            status = await crawlog(valkey_url, data_dir, "status", "--job", keys.job)
            assert "no worker alive" in status.stdout, status.stdout + status.stderr
            assert "waiting for a host slot" not in status.stdout, status.stdout
            # At once all the same: the dead process's name is taken over (it runs no more),
            # its tasks taken back and, with them, its slots freed.
            assert await held_slots(redis_client, keys, site.url.removeprefix("http://")) > 0
            restarted = time.time()
            dead_name = await redis_client.get(keys.worker_lock("w1"))
            await worker_process("w1")
            up = await holds_its_name(redis_client, keys, "w1", dead_name)
            answered = await first_after(site, restarted)
    asked = answered - SLOW_S
    assert asked < expiry or asked - up < FIRST_REQUEST_S + LOAD_SLACK_S, (
        f"first page asked {asked - restarted:.1f} s after the restart, "
        f"{asked - up:.1f} s after it held its name, {asked - expiry:.1f} s after the dead "
        "slots expired"
    )


async def test_a_worker_recovering_a_dead_ones_tasks_is_not_held_up_by_its_slots(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    redis_client: aioredis.Redis,
    keys: JobKeys,
) -> None:
    async with serve_testsite(pages=120, seed=1, faults=SLOW_PAGES) as site:
        await start_job([site.url + "/"], lease_ms=SHORT_LEASE_MS, politeness=Politeness())
        with anyio.fail_after(DEADLINE_S):
            killed, expiry = await kill_with_pages_in_flight(
                site, worker_process, redis_client, keys
            )
            await worker_process("w2")  # another name: it must wait for w1's leases to expire
            up = await holds_its_name(redis_client, keys, "w2", None)
            answered = await first_after(site, killed + LATE_S)
    asked = answered - SLOW_S
    # w1's leases expire SHORT_LEASE_MS after its last renewal; w2 recovers them and, with
    # them, w1's slots: its first page comes then (or once w2 is up), not when the slots'
    # ttl runs out. At load 20 w2 once asked 6.9 s after it was up, 15.9 s after the kill:
    # still well before the slots' expiry, which is the claim.
    ready = max(killed + SHORT_LEASE_MS / 1000, up)
    assert asked < expiry or asked - ready < FIRST_REQUEST_S + LOAD_SLACK_S, (
        f"first page asked {asked - killed:.1f} s after the kill, "
        f"{asked - up:.1f} s after w2 was up, {asked - expiry:.1f} s after the dead slots "
        "expired"
    )
