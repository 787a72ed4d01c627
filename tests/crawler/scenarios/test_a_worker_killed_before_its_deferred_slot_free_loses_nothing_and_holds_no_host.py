"""A worker frees the host slot of a request it is done with in its next acquire, or a
moment later (`PolitenessGate.free_loop`), and its tasks start from the resume point their
claim read with them. SIGKILLed at the worst moment for both — a page fetched, its slot not
freed yet, its step not written — the slot is freed by the lease logic, as a killed
request's is (the restart's take-back under the same name, or the recovery of its leases by
another worker), not after the slot's ttl; and the task, claimed again with its checkpoint,
resumes at the page it died on: every item once, the page before it fetched once.

A real worker process crawls one listing (one task, page after page) with one slot per
host, so that a slot left held stops every request to the site.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
import redis.asyncio as aioredis

from crawler._politeness import DEFAULT_SLOT_TTL_S, Politeness
from crawler.testsite import serve_testsite
from eventlog import EventLog, ItemScraped, JobKeys, TaskDone
from tests.crawler.left_behind import holds_its_name
from tests.crawler.spiders import KILL_AT_PAGE_ENV

pytestmark = pytest.mark.anyio

KILLED_AT = 2
SHORT_LEASE_MS = 2_000
LONG_LEASE_MS = 120_000
"""Longer than the test: a restart takes its own task back, nothing expires."""
SOON_S = DEFAULT_SLOT_TTL_S / 2
"""The next request to the site comes well before the dead slot's ttl would run out,
counted from when it could come: the new worker up (holding its name: a loaded machine's
slow process start does not count) and, for a recovery, the dead one's lease expired."""


@pytest.mark.parametrize("how", ["restart", "recovery"])
async def test_the_killed_worker_s_slot_is_freed_by_the_lease_logic_and_its_task_resumes(
    how: str,
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    redis_client: aioredis.Redis,
    keys: JobKeys,
    log: EventLog,
    tmp_path: Path,
) -> None:
    async with serve_testsite(pages=200, seed=3) as site:
        host = site.url.removeprefix("http://")
        sitemap = site.sitemap
        pages = sitemap.listing_pages(0)
        assert pages > KILLED_AT
        listings = [sitemap.listing_path(0, p) for p in range(1, pages + 1)]
        lease_ms = LONG_LEASE_MS if how == "restart" else SHORT_LEASE_MS
        await start_job(
            [site.url + listings[0]],
            spider="tests.crawler.spiders:ListingSpider",
            max_depth=0,
            lease_ms=lease_ms,
            politeness=Politeness(per_host=1),
        )
        env = {KILL_AT_PAGE_ENV: f"{KILLED_AT}:{tmp_path / 'killed'}"}
        with anyio.fail_after(DEFAULT_SLOT_TTL_S + 30):
            first = await worker_process("w1", env=env)
            assert await first.wait() == -signal.SIGKILL
            killed = time.time()
            # The worst moment: page 2 fetched, its slot done with but not freed. The free
            # comes DEFERRED_FREE_S after the fetch: a loaded machine may parse the page (and
            # die) only after it, and then nothing is left held; what follows holds either way.
            held = await redis_client.zrange(keys.host_slots(host), 0, -1)
            assert len(held) <= 1, "the kill left at most the slot of its last request held"
            assert set(await redis_client.hkeys(keys.slots_held("w1"))) == set(held)
            served_before = len(site.requests)
            name = "w1" if how == "restart" else "w2"
            dead_name = await redis_client.get(keys.worker_lock(name))
            again = await worker_process(name, "--exit-when-done", env=env)
            up = await holds_its_name(redis_client, keys, name, dead_name)
            while len(site.requests) == served_before:
                await anyio.sleep(0.01)
            could_come = max(up, killed + lease_ms / 1000) if how == "recovery" else up
            next_request = time.time() - could_come
            assert await again.wait() == 0
        counts = site.fetch_counts()
        remaining = await redis_client.zrange(keys.host_slots(host), 0, -1)

    # Freed with the task's lease (at once, or once it expired), not after the slot's ttl.
    assert next_request < SOON_S, (
        f"the next request came {next_request:.1f} s after it could (the kill at {killed:.1f})"
    )
    assert remaining == [] and await redis_client.hlen(keys.slots_held("w1")) == 0
    # Resumed at the page it died on: the one before it was fetched once.
    assert counts[listings[0]] == 1 and counts[listings[KILLED_AT - 1]] == 2
    events = [e.event for e in await log.read_range()]
    items = [e.key for e in events if isinstance(e, ItemScraped)]
    assert len(items) == len(set(items)), "no item twice"
    assert len(items) == len(sitemap.category_items(0)), "no item lost"
    assert sum(isinstance(e, TaskDone) for e in events) == 1
