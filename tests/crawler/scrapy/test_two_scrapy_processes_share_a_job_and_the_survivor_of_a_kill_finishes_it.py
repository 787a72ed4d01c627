"""Two Scrapy processes crawl one job through crawler.scrapy, sharing its queue: one is
SIGKILLed at 30 %, and the other, without being restarted, recovers the requests the dead
one held once their leases expire, and finishes the crawl exactly: every reachable page
fetched, a page fetched twice only if the dead process held it, each item exported once."""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler.testsite import RunningSite
from eventlog import JobKeys, read_leases
from projector import Store, read_committed
from tests.crawler.conftest import replay_verify, run_projector
from tests.crawler.scrapy.test_a_scrapy_crawl_killed_at_30_percent_resumes_with_nothing_lost_or_doubled import (  # noqa: E501
    KILL_AT,
    exported_items,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(240)]
LEASE_S = 6
"""Short, so the survivor takes the dead process's requests over within the test; long
enough that a loaded machine's stall of a few seconds does not expire a live process's
lease (recovered, it would count as a recovery of what the dead one did not hold)."""


async def test_the_survivor_recovers_what_the_killed_process_held_and_finishes(
    scrapy_site: RunningSite,
    scrapy_process: Callable[..., Any],
    redis_client: Any,
    job: str,
    valkey_url: str,
    data_dir: Path,
) -> None:
    site = scrapy_site
    reachable = {url.removeprefix(site.url) for url in site.reachable}
    lease = {"CRAWLOG_LEASE": str(LEASE_S)}
    with anyio.fail_after(200):
        doomed = await scrapy_process(env={**lease, "CRAWLOG_WORKER": "doomed"})
        survivor = await scrapy_process(env={**lease, "CRAWLOG_WORKER": "survivor"})
        while site.request_count < int(KILL_AT * len(reachable)):
            await anyio.sleep(0.005)
        doomed.send_signal(signal.SIGKILL)
        await doomed.wait()
        leases, _ = await read_leases(redis_client, JobKeys(job))
        held = {i.url.removeprefix(site.url) for i in leases if i.url and i.worker == "doomed"}
        fetched_before = site.fetch_counts()
        assert await survivor.wait() == 0
        await run_projector(valkey_url, job, data_dir)

    pages = {p: n for p, n in site.fetch_counts().items() if p != "/robots.txt"}
    assert reachable <= set(pages), f"never fetched: {sorted(reachable - set(pages))[:5]}"
    twice = {p for p, n in pages.items() if n > 1}
    assert twice <= held, f"refetched though the dead process did not hold them: {twice - held}"
    assert all(fetched_before.get(p, 0) == 1 for p in twice)
    _, state = read_committed(Store(data_dir, job))
    assert state.job.tasks.get("done") == len(reachable)
    recovered = {t.url.removeprefix(site.url) for t in state.tasks.values() if t.recoveries}
    assert recovered == held, (leases, "what the dead process held was recovered, and only that")
    urls = [item["data"]["url"] for item in await exported_items(valkey_url, job, data_dir)]
    assert len(urls) == len(set(urls)) == len(reachable)
    assert b"identical" in await replay_verify(valkey_url, job, data_dir)
