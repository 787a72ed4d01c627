"""`crawlog history` of a task of hundreds of pages (a listing up to its page cap) names
its first and last fetch attempts and lists its first and last events, saying how many
are left out between; ``--json`` keeps every one."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler.cli.history import ATTEMPTS_NAMED, EVENTS_LISTED, elided
from tests.crawler.conftest import run_projector
from tests.crawler.hostile_site import Route, serve_hostile
from tests.crawler.operator_cli import crawlog

PAGES = 300


def test_a_short_list_is_shown_whole_and_a_long_one_by_its_ends() -> None:
    assert elided([1, 2, 3], 4) == ([1, 2, 3], 0, [])
    assert elided(list(range(10)), 5) == ([0, 1, 2], 5, [8, 9])
    assert elided(list(range(10)), 10) == (list(range(10)), 0, [])


@pytest.mark.anyio
async def test_the_history_of_a_task_of_many_pages_is_bounded_and_its_json_whole(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    job: str,
    valkey_url: str,
    data_dir: Path,
) -> None:
    async with serve_hostile({"/again": Route(b"<html><body>a page</body></html>")}) as site:
        url = site.url + "/again"
        await start_job(
            [url], spider="tests.crawler.spiders:SamePageAgainSpider", max_task_pages=PAGES
        )
        with anyio.fail_after(120):
            assert await (await worker_process("w1", "--exit-when-done")).wait() == 0
            await run_projector(valkey_url, job, data_dir)
            shown = await crawlog(valkey_url, data_dir, "history", "--job", job, url)
            as_json = await crawlog(valkey_url, data_dir, "history", "--job", job, url, "--json")
        assert site.requests.count("/again") == PAGES
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    assert f"{PAGES} fetch attempt(s): attempt 1 page 1 by w1: HTTP 200" in text
    assert f"… {PAGES - ATTEMPTS_NAMED} more …" in text
    assert f"attempt 1 page {PAGES} by w1: HTTP 200" in text
    events = json.loads(as_json.stdout)["events"]
    listed = [line for line in text.splitlines() if " task." in line]
    assert len(listed) == EVENTS_LISTED < len(events)
    assert f"{len(events) - EVENTS_LISTED} events not listed" in text
    assert len(json.loads(as_json.stdout)["fetch_attempts"]) == PAGES
