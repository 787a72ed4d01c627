"""A spider whose next page is a page its task fetched (itself, or one before it) does not
hammer the site: each URL of the loop is requested once, the task ends done with the
loop as its reason and the next page counted as dropped, and the crawl ends by itself; a
worker SIGKILLed inside the loop and restarted still sees it (the checkpoint remembers
the task's latest pages). A spider that asks for the same URL again with ``dont_filter``
gets it, up to the job's page cap. Counted from the site's own request log."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler._task_steps import NEXT_PAGE_FETCHED, TASK_PAGE_CAP
from eventlog import AnyEvent, EventLog, PageFetched, TaskDone
from tests.crawler.conftest import run_projector
from tests.crawler.hostile_site import Route, serve_hostile
from tests.crawler.operator_cli import crawlog
from tests.crawler.spiders import KILL_AT_PAGE_ENV

pytestmark = pytest.mark.anyio

PAGE = Route(b"<html><body>a page</body></html>")
LONG_LEASE_MS = 120_000
"""Longer than the test: the restarted worker takes its task back, no expiry waited for."""


async def crawled(log: EventLog, worker_process: Callable[..., Any]) -> list[AnyEvent]:
    """The job's events once a worker has crawled it to the end."""
    with anyio.fail_after(60):
        worker = await worker_process("w1", "--exit-when-done")
        assert await worker.wait() == 0, "the crawl ends by itself"
    return [entry.event for entry in await log.read_range()]


async def test_a_next_page_that_is_the_page_itself_is_requested_once_and_reported(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    log: EventLog,
    job: str,
    valkey_url: str,
    data_dir: Path,
) -> None:
    async with serve_hostile({"/loop": PAGE}) as site:
        await start_job([site.url + "/loop"], spider="tests.crawler.spiders:SelfLoopSpider")
        events = await crawled(log, worker_process)
        assert site.requests.count("/loop") == 1
    [done] = [e for e in events if isinstance(e, TaskDone)]
    assert done.reason == NEXT_PAGE_FETCHED and done.counts.pages == 1
    [page] = [e for e in events if isinstance(e, PageFetched)]
    assert page.dropped == {NEXT_PAGE_FETCHED: 1}
    with anyio.fail_after(60):
        await run_projector(valkey_url, job, data_dir)
        report = await crawlog(valkey_url, data_dir, "report", "--job", job, "--json")
    assert report.returncode == 0, report.stderr
    assert json.loads(report.stdout)["totals"]["dropped"] == {NEXT_PAGE_FETCHED: 1}


async def test_a_loop_of_two_pages_requests_each_once_and_a_kill_inside_it_changes_nothing(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    log: EventLog,
    tmp_path: Path,
) -> None:
    async with serve_hostile({"/a": PAGE, "/b": PAGE}) as site:
        await start_job(
            [site.url + "/a"],
            spider="tests.crawler.spiders:PingPongSpider",
            lease_ms=LONG_LEASE_MS,
        )
        with anyio.fail_after(60):
            # Killed while parsing /b: /a's checkpoint is written, /b's step is not.
            marker = tmp_path / "killed"
            killed = await worker_process("w1", env={KILL_AT_PAGE_ENV: f"2:{marker}"})
            await killed.wait()
            assert marker.exists(), "the worker died inside the loop"
        events = await crawled(log, worker_process)
        # /b was in flight at the kill; /a, checkpointed before it, is not asked for again.
        assert (site.requests.count("/a"), site.requests.count("/b")) == (1, 2)
    [done] = [e for e in events if isinstance(e, TaskDone)]
    assert done.reason == NEXT_PAGE_FETCHED and done.counts.pages == 2


async def test_the_same_url_again_with_dont_filter_is_fetched_up_to_the_task_page_cap(
    start_job: Callable[..., Any], worker_process: Callable[..., Any], log: EventLog
) -> None:
    async with serve_hostile({"/again": PAGE}) as site:
        await start_job(
            [site.url + "/again"],
            spider="tests.crawler.spiders:SamePageAgainSpider",
            max_task_pages=5,
        )
        events = await crawled(log, worker_process)
        assert site.requests.count("/again") == 5
    [done] = [e for e in events if isinstance(e, TaskDone)]
    assert done.reason == TASK_PAGE_CAP and done.counts.pages == 5
