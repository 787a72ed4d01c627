"""A worker SIGKILLed while it holds many leases of a slow, polite site, only a few of them
with a request on its way: resumed, its tasks fetch their pages. The requests that "may have
reached the site twice" are never fewer than the site's own log shows twice, and more by at
most the requests the site had received and not answered at the kill. Before, every task
taken back counted (its first fetch after the retake), whether or not its lease had sent
anything: the leases held, not the requests in flight."""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
import redis.asyncio as aioredis

from crawler._politeness import Politeness
from crawler.testsite import Faults, serve_testsite
from crawler.testsite._invariants import site_refetches
from eventlog import JobKeys
from eventlog._connection import command
from eventlog._keys import WORKERS_GROUP
from tests.crawler.conftest import run_projector
from tests.crawler.operator_cli import crawlog

pytestmark = pytest.mark.anyio

SLOW = Faults(slow_rate=1.0, slow_s=0.1)
"""Every page answered after a moment: a kill finds requests on their way."""
PER_HOST = 2
"""Requests to the site at once: the rest of the worker's leases wait for a slot."""
LEASES_AT_KILL = 12
"""Leases the worker holds at the kill, at least: many more than it has requests out."""


async def leases_held(redis: aioredis.Redis, job: str, worker: str) -> int:
    """Entries of ``worker``'s pending list, over every lane."""
    held = 0
    for lane in JobKeys(job).lanes:
        # XPENDING's summary: count, first id, last id, then [consumer, count] pairs.
        summary = await command(redis, "XPENDING", lane, WORKERS_GROUP)
        held += sum(int(n) for name, n in summary[3] or () if name.decode() == worker)
    return held


async def test_a_kill_counts_the_requests_in_flight_and_not_the_leases_waiting_for_a_slot(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    redis_client: aioredis.Redis,
    job: str,
    valkey_url: str,
    data_dir: Path,
) -> None:
    async with serve_testsite(pages=60, seed=3, faults=SLOW) as site:
        await start_job([site.url + "/"], politeness=Politeness(per_host=PER_HOST))
        with anyio.fail_after(120):
            first = await worker_process("w1", "--concurrency", "32")
            while not (
                len(site.requests) >= 4
                and site.in_flight() > 0
                and await leases_held(redis_client, job, "w1") >= LEASES_AT_KILL
            ):
                await anyio.sleep(0.005)
            held = await leases_held(redis_client, job, "w1")
            # Counted and killed in one go: the site answers nothing in between.
            in_flight = site.in_flight()
            first.send_signal(signal.SIGKILL)
            assert await first.wait() == -signal.SIGKILL
            # The same name takes its own leases back at once, as a restarted crawl does.
            resumed = await worker_process("w1", "--concurrency", "32", "--exit-when-done")
            assert await resumed.wait() == 0
            await run_projector(valkey_url, job, data_dir)
            ran = await crawlog(valkey_url, data_dir, "report", "--job", job, "--json")
        seen_twice = sum(site_refetches(site).values())
    assert ran.returncode == 0, ran.stderr
    twice = ran.json()["totals"]["requests_maybe_twice"]
    assert seen_twice <= twice <= seen_twice + in_flight, (seen_twice, twice, in_flight, held)
    # Counting every lease taken back, as before, would have been past the bound.
    assert held > seen_twice + in_flight, (seen_twice, in_flight, held)
