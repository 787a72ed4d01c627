"""``crawlog retry`` of a task whose callback failed: the retried task is the same request
(a POSTed form, its headers) parsed by the same callback with the same data, all of it
rebuilt from the log, not from a worker's memory."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler.testsite import serve_testsite
from eventlog import EventLog, ItemScraped, TaskFailed
from tests.crawler.operator_cli import crawlog
from tests.crawler.request_spiders import FAIL_IN_ENV, SEARCH_PATH

pytestmark = pytest.mark.anyio


async def test_a_retried_search_is_posted_again_and_parsed_by_its_callback(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    log: EventLog,
    job: str,
    valkey_url: str,
    data_dir: Path,
    tmp_path: Path,
) -> None:
    env = {FAIL_IN_ENV: f"parse_search:{tmp_path / 'failed'}"}
    async with serve_testsite(pages=40, seed=3) as site:
        category = site.sitemap.categories[0]
        seed = site.url + site.sitemap.listing_path(0, 1)
        await start_job(
            [seed], spider="tests.crawler.request_spiders:CategorySpider", scope="host", max_depth=1
        )
        with anyio.fail_after(90):
            assert await (await worker_process("w1", "--exit-when-done", env=env)).wait() == 0
            failed = [e.event for e in await log.read_range() if isinstance(e.event, TaskFailed)]
            assert len(failed) == 1 and "parse_search failed once" in failed[0].reason
            retried = await crawlog(
                valkey_url, data_dir, "retry", "--job", job, failed[0].task_id,
                "--reason", "spider fixed",
            )  # fmt: skip
            assert retried.returncode == 0, retried.stderr
            assert await (await worker_process("w1", "--exit-when-done", env=env)).wait() == 0
        posts = [r.path for r in site.requests if r.method == "POST"]
    assert posts == [SEARCH_PATH, SEARCH_PATH]
    items = {
        e.event.key: e.event for e in await log.read_range() if isinstance(e.event, ItemScraped)
    }
    search = items[f"search {category}"]
    assert search.task_id == failed[0].task_id
    assert search.data["method"] == "POST" and search.data["body"] == f"q={category}&page=1"
    assert search.data["data"] == {"category": category} and search.data["header"] == category
