"""``crawlog history TASK`` says what a task asks for when it is not a plain GET parsed by
``parse``: its method (and body size), its own headers, its callback and its data; a plain
task's history has no such line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler._urls import fingerprint
from crawler.testsite import serve_testsite
from eventlog import EventLog, TaskEnqueued
from tests.crawler.operator_cli import crawlog
from tests.crawler.request_spiders import SEARCH_PATH

pytestmark = pytest.mark.anyio


async def test_history_names_the_method_headers_callback_and_data(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    log: EventLog,
    job: str,
    valkey_url: str,
    data_dir: Path,
) -> None:
    async with serve_testsite(pages=40, seed=3) as site:
        category = site.sitemap.categories[0]
        seed = site.url + site.sitemap.listing_path(0, 1)
        await start_job(
            [seed],
            spider="tests.crawler.request_spiders:CategorySpider",
            scope="host",
            max_depth=1,
        )
        with anyio.fail_after(90):
            assert await (await worker_process("w1", "--exit-when-done")).wait() == 0
            enqueued = {
                e.event.url: e.event.task_id
                for e in await log.read_range()
                if isinstance(e.event, TaskEnqueued)
            }
            search = await crawlog(
                valkey_url, data_dir, "history", "--job", job, enqueued[site.url + SEARCH_PATH]
            )
            plain = await crawlog(valkey_url, data_dir, "history", "--job", job, seed)
            by_url = await crawlog(
                valkey_url, data_dir, "history", "--job", job, site.url + SEARCH_PATH
            )
    assert search.returncode == 0, search.stderr
    body = len(f"q={category}&page=1")
    request = (
        f"POST with a {body} B body, headers Content-Type, X-Crawl-Test, "
        f'callback parse_search, data {{"category":"{category}"}}'
    )
    assert f"request {request}\n" in search.stdout
    assert f"depth 1, linked from task {fingerprint(seed)}; {request}" in search.stdout
    assert plain.returncode == 0, plain.stderr
    assert "request " not in plain.stdout
    # The URL names the GET of it, which no page asked for; the POST is another task.
    assert by_url.returncode != 0
    assert "another method or body" in by_url.stdout
