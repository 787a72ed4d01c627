"""A worker SIGKILLed inside a pipeline step, mid-page: the restarted worker redoes the page,
its pipelines run again on its items, and every item is still recorded once, every drop
counted once (the killed page's step never reached the log)."""

from __future__ import annotations

import signal
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler.testsite import serve_testsite
from eventlog import EventLog, ItemScraped, PageFetched
from tests.crawler.conftest import replay_verify, run_projector
from tests.crawler.pipeline_spiders import CALLS_ENV, KILL_IN_PIPELINE_ENV

pytestmark = pytest.mark.anyio
CATEGORY = 0
KILL_AT_PAGE = 2


@pytest.mark.timeout(150)  # several crawlog processes, on a loaded machine
async def test_a_page_killed_in_its_pipeline_is_redone_and_its_items_recorded_once(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    log: EventLog,
    job: str,
    valkey_url: str,
    data_dir: Path,
    tmp_path: Path,
) -> None:
    calls = tmp_path / "calls"
    env = {CALLS_ENV: str(calls), KILL_IN_PIPELINE_ENV: f"{KILL_AT_PAGE}:{tmp_path / 'killed'}"}
    async with serve_testsite(pages=400, seed=3) as site:
        sitemap = site.sitemap
        assert sitemap.listing_pages(CATEGORY) > KILL_AT_PAGE
        numbers = list(sitemap.category_items(CATEGORY))
        await start_job(
            [site.url + sitemap.listing_path(CATEGORY, 1)],
            spider="tests.crawler.pipeline_spiders:PipelineListingSpider",
            max_depth=0,
        )
        with anyio.fail_after(140):
            first = await worker_process("w1", "--exit-when-done", env=env)
            assert await first.wait() == -signal.SIGKILL  # killed in a step on page 2
            again = await worker_process("w1", "--exit-when-done", env=env)
            assert await again.wait() == 0
            await run_projector(valkey_url, job, data_dir)
            assert b"identical" in await replay_verify(valkey_url, job, data_dir)
        origin = site.url
        page_two = site.sitemap.listing_path(CATEGORY, KILL_AT_PAGE)
        fetches = Counter(r.path for r in site.requests)

    assert fetches[page_two] == 2  # fetched, killed before its checkpoint, redone
    ran = Counter(calls.read_text().split())
    redone = [key for key, n in ran.items() if n == 2]
    assert len(redone) == 1, redone  # the item the kill came in: its steps ran again
    assert set(ran) == {f"{origin}/item/{n}" for n in numbers}
    events = [e.event for e in await log.read_range()]
    keys = Counter(e.key for e in events if isinstance(e, ItemScraped))
    assert set(keys) == {f"{origin}/item/{n}" for n in numbers if n % 3 and n % 5}
    assert set(keys.values()) == {1}
    dropped: Counter[str] = Counter()
    for event in events:
        if isinstance(event, PageFetched):
            dropped.update(event.items_dropped)
    assert sum(dropped.values()) == sum(1 for n in numbers if n % 3 == 0 or n % 5 == 0)
