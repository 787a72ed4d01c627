"""A worker SIGKILLed mid-crawl, restarted under its name, finishes the crawl exactly.

Counted independently of crawlog's own events, from the test site's request log: every
reachable page fetched, no page fetched twice unless it was in flight at the kill, no item
twice in any output, and replay gives the live state bit for bit.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler.testsite import RunningSite
from eventlog import TaskQueue
from projector._committed import read_committed
from projector._query import query
from projector._store import Store
from tests.crawler.conftest import replay_verify, run_projector

pytestmark = pytest.mark.anyio
LONG_LEASE_MS = 120_000
"""Longer than the test: the restart must resume its own tasks, not wait for expiry."""


async def wait_for_requests(site: RunningSite, count: int) -> None:
    while site.request_count < count:
        await anyio.sleep(0.005)


@pytest.mark.parametrize("kill_at", [0.15, 0.5, 0.85])
async def test_killed_worker_resumes_its_tasks_at_once_and_fetches_nothing_twice(
    kill_at: float,
    site: RunningSite,
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    redis_client: Any,
    job: str,
    valkey_url: str,
    data_dir: Path,
) -> None:
    await start_job([site.url + "/"], lease_ms=LONG_LEASE_MS)
    queue = TaskQueue(redis_client, job, "observer")
    with anyio.fail_after(60):
        first = await worker_process("w1")
        await wait_for_requests(site, int(kill_at * len(site.reachable)))
        first.send_signal(signal.SIGKILL)
        await first.wait()
        in_flight = await queue.leases_of("w1")
        fetched_before = site.fetch_counts()

        again = await worker_process("w1", "--exit-when-done")
        assert await again.wait() == 0
        await run_projector(valkey_url, job, data_dir)

    counts = site.fetch_counts()
    pages = {p: n for p, n in counts.items() if p != "/robots.txt"}
    reachable = {url.removeprefix(site.url) for url in site.reachable}
    assert reachable <= set(pages), f"never fetched: {sorted(reachable - set(pages))[:5]}"
    twice = sorted(p for p, n in pages.items() if n > 1)
    assert len(twice) <= len(in_flight), (twice, in_flight)
    assert all(fetched_before.get(p, 0) == 1 for p in twice), "refetched only what was in flight"

    store = Store(data_dir, job)
    _, state = read_committed(store)
    assert state.job.tasks.get("done") == len(reachable)
    items = query(store, "SELECT count(*), count(DISTINCT key) FROM item_events").rows[0]
    assert items[0] == items[1] == len(reachable)
    assert b"identical" in await replay_verify(valkey_url, job, data_dir)
