"""End to end: a spider logs in through the test site's form (``Follow(url, method="POST",
form=...)``) in a ``--cookies`` crawl, then crawls the members-only pages; that worker is
SIGKILLed mid-crawl holding tasks, and another, started after the kill, finishes with the
session the login opened — the request log shows no 403 under /members/ after the login,
and every member page answered 200.

Needs ``Follow``'s ``method`` and ``form`` fields (the requests part of issue 15): skipped
where ``Follow`` has no ``method`` field yet.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any

import anyio
import pytest
import redis.asyncio as aioredis

from crawler._politeness import Politeness
from crawler._spider import Follow
from crawler.testsite import LOGIN_PATH, MEMBER_PAGES, MEMBERS_PREFIX, serve_testsite
from eventlog import EventLog, ItemScraped, TaskQueue

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(
        "method" not in Follow.__struct_fields__,
        reason="needs Follow(url, method='POST', form={...}) (the requests part of issue 15)",
    ),
]
SHORT_LEASE_MS = 2_000
KILL_AFTER = 6
"""Member pages answered before the kill."""
MEMBER_PATHS = frozenset(
    {MEMBERS_PREFIX, *(f"{MEMBERS_PREFIX}{n}" for n in range(1, MEMBER_PAGES + 1))}
)


async def test_a_login_through_the_form_serves_the_crawl_after_a_worker_is_killed(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    redis_client: aioredis.Redis,
    job: str,
) -> None:
    async with serve_testsite(pages=5) as site:
        await start_job(
            [site.url + LOGIN_PATH],
            spider="tests.crawler.cookie_spiders:LoginSpider",
            cookies=True,
            lease_ms=SHORT_LEASE_MS,
            politeness=Politeness(per_host=2, delay_s=0.1),
        )
        queue = TaskQueue(redis_client, job, "observer")
        with anyio.fail_after(120):
            # The first worker logs in and is killed holding tasks, its crawl under way;
            # the second, started after the kill, has only the session the jar kept.
            first = await worker_process("w1")
            while sum(
                r.path.startswith(MEMBERS_PREFIX) for r in site.requests
            ) < KILL_AFTER or not await queue.leases_of("w1"):
                await anyio.sleep(0.01)
            first.send_signal(signal.SIGKILL)
            await first.wait()
            held = await queue.leases_of("w1")
            second = await worker_process("w2", "--exit-when-done")
            assert await second.wait() == 0
        requests = list(site.requests)

    assert held, "the kill should find the first worker holding tasks"
    posts = [i for i, r in enumerate(requests) if r.method == "POST" and r.path == LOGIN_PATH]
    assert posts, "the spider logged in through the form"
    after = requests[posts[0] :]
    members = [(r.path, r.status) for r in after if r.path.startswith(MEMBERS_PREFIX)]
    assert not [m for m in members if m[1] == 403], members
    assert {path for path, status in members if status == 200} == MEMBER_PATHS
    events = await EventLog(redis_client, job).read_range()
    items = {e.event.key for e in events if isinstance(e.event, ItemScraped)}
    assert items == {f"{site.url}{MEMBERS_PREFIX}{n}" for n in range(1, MEMBER_PAGES + 1)}
