"""In a real browser: Pause on the Sites page (with a reason) is a SitePaused event from
the console's user; the worker parks the site's tasks and the page shows them parked,
without a reload; Resume puts them back, the site is fetched and the panel's numbers move."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest
import redis.asyncio as aioredis

from crawler.testsite import serve_testsite
from eventlog import EventLog, JobKeys, SitePaused, SiteResumed
from tests.crawler.console.conftest import CONSOLE_ACTOR, RunningConsole

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(150)]


async def test_a_site_paused_from_the_page_has_its_tasks_parked_and_resumed(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    console: Callable[..., Awaitable[RunningConsole]],
    browser: Any,
    screenshot: Callable[[Any, str], Awaitable[Any]],
    redis_client: aioredis.Redis,
    log: EventLog,
    job: str,
) -> None:
    async with serve_testsite(pages=30, seed=1) as site:
        await start_job([site.url + "/"])
        running = await console()
        page = await browser.new_page()
        with anyio.fail_after(60):
            await page.goto(running.url)  # the token URL: into a cookie, then the panel
            await page.goto(f"{running.base}/jobs/{job}/sites")
            row = page.locator("#sites-table tbody tr", has_text=site.url)
            await row.get_by_placeholder("reason to pause").fill("they asked us to wait")
            await row.get_by_role("button", name="Pause").click()
            await page.wait_for_selector("#flash.ok")
            assert f"paused site {site.url} by {CONSOLE_ACTOR}" in await page.inner_text("#flash")
            assert "they asked us to wait" in await page.inner_text("#sites-table")

            # The worker parks the site's tasks; the page shows it live (event stream).
            await worker_process("w1")
            parked = page.locator("#sites-table .parked")
            while (await parked.inner_text()).strip() in ("", "0"):
                await anyio.sleep(0.05)
            assert await redis_client.zcard(JobKeys(job).parked) >= 1
            assert site.fetch_counts().get("/", 0) == 0
            await screenshot(page, "sites-paused")

            # The job's panel, opened while the site is paused: its numbers must then move
            # without a reload. Opened after the resume, a quick crawl could be over before
            # its first reading, which would then never move.
            panel = await browser.new_page()
            await panel.goto(f"{running.base}/jobs/{job}")
            done = panel.locator("#f-done")
            first = int((await done.inner_text()).replace(",", ""))

            row = page.locator("#sites-table tbody tr", has_text=site.url)
            await row.get_by_placeholder("reason to resume").fill("they said go")
            await row.get_by_role("button", name="Resume").click()
            await page.wait_for_selector("#flash.ok")
            while site.fetch_counts().get("/", 0) == 0:
                await anyio.sleep(0.05)

            # The panel's numbers move as the crawl goes on, without a reload.
            while int((await done.inner_text()).replace(",", "")) <= first:
                await anyio.sleep(0.05)
            await screenshot(panel, "job-panel")
    said = [
        (type(e.event), e.event.actor, e.event.reason)
        for e in await log.read_range()
        if isinstance(e.event, SitePaused | SiteResumed)
    ]
    assert said == [
        (SitePaused, CONSOLE_ACTOR, "they asked us to wait"),
        (SiteResumed, CONSOLE_ACTOR, "they said go"),
    ]
