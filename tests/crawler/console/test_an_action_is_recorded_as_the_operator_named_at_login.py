"""In a real browser: the operator named at login (``&as=alice`` on the printed URL) is who
an action from the page is recorded as, in the log and on the page (which says who acts
from it), not the user the console runs as; a login that names nobody acts as the
console's ``--user``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

from crawler.testsite import serve_testsite
from eventlog import EventLog, SitePaused, SiteResumed
from tests.crawler.console.conftest import CONSOLE_ACTOR, RunningConsole

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(120)]


async def act_on_the_site(page: Any, site: str, verb: str, reason: str) -> str:
    row = page.locator("#sites-table tbody tr", has_text=site)
    await row.get_by_placeholder(f"reason to {verb}").fill(reason)
    await row.get_by_role("button", name=verb.capitalize()).click()
    await page.wait_for_selector("#flash.ok")
    return str(await page.inner_text("#flash"))


async def test_the_actor_in_the_log_is_the_name_given_at_login(
    start_job: Callable[..., Any],
    console: Callable[..., Awaitable[RunningConsole]],
    browsers: Callable[[str], Awaitable[Any]],
    log: EventLog,
    job: str,
) -> None:
    async with serve_testsite(pages=5, seed=1) as site:
        await start_job([site.url + "/"])
        running = await console()
        alice = await (await browsers("alice")).new_page()
        nobody = await (await browsers("nobody")).new_page()
        with anyio.fail_after(60):
            await alice.goto(running.login_url("alice"))
            await alice.goto(f"{running.base}/jobs/{job}/sites")
            assert await alice.inner_text("#actor") == "acting as alice@console"
            said = await act_on_the_site(alice, site.url, "pause", "asked to wait")
            assert "by alice@console" in said

            await nobody.goto(running.url)
            await nobody.goto(f"{running.base}/jobs/{job}/sites")
            assert await nobody.inner_text("#actor") == f"acting as {CONSOLE_ACTOR}"
            said = await act_on_the_site(nobody, site.url, "resume", "go on")
            assert f"by {CONSOLE_ACTOR}" in said
    actors = [
        (type(e.event), e.event.actor, e.event.reason)
        for e in await log.read_range()
        if isinstance(e.event, SitePaused | SiteResumed)
    ]
    assert actors == [
        (SitePaused, "alice@console", "asked to wait"),
        (SiteResumed, CONSOLE_ACTOR, "go on"),
    ]
