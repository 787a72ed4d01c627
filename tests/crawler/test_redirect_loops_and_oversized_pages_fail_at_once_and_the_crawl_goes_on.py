"""A redirect loop and a response larger than the cap fail their task at once — no
retry can fix them — each fetched once, while the rest of the site is crawled."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from crawler._fetch import DEFAULT_MAX_RESPONSE_BYTES, ERROR_REDIRECT_LOOP, too_large
from crawler.testsite import HUGE_PATH, LOOP_PATHS, Faults, serve_testsite
from eventlog import EventLog, RetryScheduled, TaskDone, TaskFailed

pytestmark = pytest.mark.anyio


async def test_a_redirect_loop_and_a_huge_page_fail_once_and_the_rest_is_crawled(
    start_job: Callable[..., Any], worker_process: Callable[..., Any], log: EventLog
) -> None:
    faults = Faults(redirect_loop=True, huge_page=True)
    async with serve_testsite(pages=30, seed=8, faults=faults) as site:
        await start_job([site.url + "/"])
        with anyio.fail_after(60):
            assert await (await worker_process("w1", "--exit-when-done")).wait() == 0
        asked = Counter(r.path for r in site.requests)
        pages = {u.removeprefix(site.url) for u in site.reachable} - {HUGE_PATH, *LOOP_PATHS}
    assert asked[HUGE_PATH] == 1 and asked[LOOP_PATHS[0]] == 1 and asked[LOOP_PATHS[1]] == 1
    assert pages <= set(asked)
    events = [e.event for e in await log.read_range()]
    failed = sorted(e.reason for e in events if isinstance(e, TaskFailed))
    assert failed == sorted([ERROR_REDIRECT_LOOP, too_large(DEFAULT_MAX_RESPONSE_BYTES)])
    assert not [e for e in events if isinstance(e, RetryScheduled)]
    assert sum(isinstance(e, TaskDone) for e in events) == len(pages)
