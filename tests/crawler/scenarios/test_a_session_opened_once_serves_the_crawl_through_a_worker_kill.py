"""A session opened once (the login's cookie, in the job's shared jar) serves every worker
of a ``--cookies`` crawl: a worker SIGKILLed mid-crawl holding tasks, another worker started
after the kill recovers them once their leases expire, and every members-only page is still
fetched with the session — the test site's request log shows no 403 under /members/ and
every member page answered 200.

Real worker processes against the test site; a politeness delay paces the crawl so that the
kill comes mid-crawl. The login itself is done here through a fetcher with the job's jar (as
a worker's fetcher does it); the spider that logs in through the form is in
test_a_spider_logs_in_through_the_form_and_a_killed_worker_s_tasks_keep_the_session.py.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import anyio
import pytest
import redis.asyncio as aioredis

from crawler._cookies import SharedCookies
from crawler._fetch import Fetcher
from crawler._politeness import Politeness
from crawler.testsite import (
    LOGIN_PASSWORD,
    LOGIN_PATH,
    LOGIN_USER,
    MEMBER_PAGES,
    MEMBERS_PREFIX,
    RunningSite,
    serve_testsite,
)
from eventlog import CookieStore, JobKeys, TaskQueue

pytestmark = pytest.mark.anyio
SHORT_LEASE_MS = 2_000
"""The killed worker's tasks go to the other once their leases expire."""
KILL_AFTER = 6
"""Member pages answered before the kill: the crawl is under way, most of it still to do."""
MEMBER_PATHS = frozenset(
    {MEMBERS_PREFIX, *(f"{MEMBERS_PREFIX}{n}" for n in range(1, MEMBER_PAGES + 1))}
)


def member_requests(site: RunningSite) -> list[tuple[str, int]]:
    return [(r.path, r.status) for r in site.requests if r.path.startswith(MEMBERS_PREFIX)]


async def log_in(site: RunningSite, store: CookieStore) -> None:
    """The login, once, through a fetcher with the job's shared jar (as a worker's)."""
    body = urlencode({"user": LOGIN_USER, "password": LOGIN_PASSWORD}).encode()
    form = {"content-type": "application/x-www-form-urlencoded"}
    async with Fetcher(cookies=SharedCookies(store)) as fetcher:
        result = await fetcher.fetch(site.url + LOGIN_PATH, method="POST", body=body, headers=form)
    assert (result.final_url, result.status) == (site.url + MEMBERS_PREFIX, 200)


async def test_a_worker_killed_after_the_login_leaves_the_session_to_the_other(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    redis_client: aioredis.Redis,
    job: str,
) -> None:
    async with serve_testsite(pages=5) as site:
        await start_job(
            [site.url + MEMBERS_PREFIX],
            cookies=True,
            lease_ms=SHORT_LEASE_MS,
            politeness=Politeness(per_host=2, delay_s=0.1),
        )
        await log_in(site, CookieStore(redis_client, JobKeys(job)))
        logged_in_at = len(site.requests)
        queue = TaskQueue(redis_client, job, "observer")
        with anyio.fail_after(90):
            first = await worker_process("w1")
            # Killed holding tasks, its crawl under way (the login's own hop counts too).
            while len(member_requests(site)) < KILL_AFTER + 1 or not await queue.leases_of("w1"):
                await anyio.sleep(0.01)
            first.send_signal(signal.SIGKILL)
            await first.wait()
            held = await queue.leases_of("w1")
            second = await worker_process("w2", "--exit-when-done")
            assert await second.wait() == 0
        after_login = site.requests[logged_in_at:]

    assert held, "the kill should find the first worker holding tasks"
    members = [(r.path, r.status) for r in after_login if r.path.startswith(MEMBERS_PREFIX)]
    assert not [m for m in members if m[1] == 403], members
    assert {path for path, status in members if status == 200} == MEMBER_PATHS
