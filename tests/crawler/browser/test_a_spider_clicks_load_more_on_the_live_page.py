"""A browser spider's ``parse`` drives the live page: it clicks "Load more" until every item
is listed, items the HTML it was given does not hold."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler.testsite import RunningSite
from projector._query import query
from projector._store import Store
from tests.crawler.conftest import run_projector

pytestmark = pytest.mark.anyio


async def test_a_spider_clicks_load_more_until_every_item_is_listed(
    chromium: str,
    scripted_site: RunningSite,
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    valkey_url: str,
    job: str,
    data_dir: Path,
) -> None:
    await start_job(
        [scripted_site.url + "/more"],
        spider="tests.crawler.browser_spiders:LoadMoreSpider",
        browser=True,
    )
    with anyio.fail_after(90):
        worker = await worker_process("w1", "--exit-when-done")
        assert await worker.wait() == 0
        await run_projector(valkey_url, job, data_dir)
    keys = query(Store(data_dir, job), "SELECT key FROM item_events ORDER BY key").rows
    assert sorted(k for (k,) in keys) == sorted(f"/item/{n}" for n in range(1, 41))
    # The later items came through the page's own requests, the clicks.
    assert scripted_site.fetch_counts().get("/api/items?page=4") == 1
