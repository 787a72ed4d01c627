"""A browser crawl behind a login whose token the site keeps in ``localStorage`` and
``sessionStorage``: the worker logs in once, is SIGKILLed mid-crawl, and the worker
restarted under its name continues logged in from the session kept in the store — the
site counts one login in all, and every app page was rendered with its content (asked
for with the token), none refused for a missing one."""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from crawler.testsite import APP_PAGES, APP_TOKEN, RunningSite
from eventlog import BrowserSessionStore, JobKeys, SessionIdentity

pytestmark = pytest.mark.anyio
LONG_LEASE_MS = 120_000
"""Longer than the test: the restart must resume its own tasks, not wait for expiry."""
CONTENT = "/app/api/page?n="


def contents(site: RunningSite, status: int) -> set[int]:
    """The app pages whose content the site answered with ``status``."""
    return {
        int(r.path.removeprefix(CONTENT))
        for r in site.requests
        if r.path.startswith(CONTENT) and r.status == status
    }


async def test_a_killed_browser_worker_s_restart_continues_logged_in_with_one_login(
    chromium: str,
    scripted_site: RunningSite,
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    redis_client: Any,
    job: str,
) -> None:
    site = scripted_site
    await start_job(
        [site.url + "/app/"],
        spider="tests.crawler.browser_spiders:AppSpider",
        browser=True,
        lease_ms=LONG_LEASE_MS,
    )
    with anyio.fail_after(90):
        first = await worker_process("w1")
        while site.logins() < 1 or len(contents(site, 200)) < 6:  # logged in, under way
            await anyio.sleep(0.01)
        first.send_signal(signal.SIGKILL)
        await first.wait()
        assert len(contents(site, 200)) <= APP_PAGES, "killed before the crawl's end"

        again = await worker_process("w1", "--exit-when-done")
        assert await again.wait() == 0

    assert site.logins() == 1
    assert contents(site, 200) == set(range(APP_PAGES + 1))
    assert not contents(site, 403), "no page asked for its content without the token"
    stored = await BrowserSessionStore(redis_client, JobKeys(job)).read(
        SessionIdentity(user_agent=await _user_agent(redis_client, job))
    )
    assert stored.state is not None
    storage = stored.state.origins[site.url]
    assert storage.local["token"] == storage.session["token"] == APP_TOKEN


async def _user_agent(redis_client: Any, job: str) -> str:
    from crawler._job import load_config

    config = await load_config(redis_client, JobKeys(job))
    return config.fetch_config().user_agent
