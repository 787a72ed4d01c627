"""In a real browser during a real crawl: once Pause on the Sites page has answered, the
test site sees no new request of that site after a second (its request log is the
witness), the page shows the site's tasks parked, and Resume starts the fetches again."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

from crawler.testsite import Faults, serve_testsite
from tests.crawler.console.conftest import RunningConsole

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(150)]
EFFECT_S = 1.0
"""The target: a pause stops the site's fetches within this long."""
SLOW_S = 0.2
"""Every page answers this late: the crawl lasts while the test clicks."""
QUIET_S = 2.0
"""How long the site is watched for a request after the pause took effect."""
LOAD_SLACK_S = 1.0
"""What a loaded 2-core machine may add to the target (the worker reads the flags every
half second, when it gets a core): a pause never seen still shows as requests all along."""


async def test_no_request_reaches_a_paused_site_a_second_after_the_click(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    console: Callable[..., Awaitable[RunningConsole]],
    browser: Any,
    screenshot: Callable[[Any, str], Awaitable[Any]],
    job: str,
) -> None:
    faults = Faults(slow_rate=1.0, slow_s=SLOW_S)
    async with serve_testsite(pages=400, seed=2, faults=faults) as site:
        await start_job([site.url + "/"])
        running = await console()
        page = await browser.new_page()
        with anyio.fail_after(60):
            await page.goto(running.url)
            await page.goto(f"{running.base}/jobs/{job}/sites")
            await worker_process("w1")
            while len(site.requests) < 10:
                await anyio.sleep(0.05)
            row = page.locator("#sites-table tbody tr", has_text=site.url)
            await row.get_by_placeholder("reason to pause").fill("too many errors")
            await row.get_by_role("button", name="Pause").click()
            await page.wait_for_selector("#flash.ok")
            answered = time.time()
            parked = page.locator("#sites-table .parked")
            while (await parked.inner_text()).strip() in ("", "0"):
                await anyio.sleep(0.05)
            # Watching for what must not happen: there is no condition to poll for.
            await anyio.sleep(EFFECT_S + LOAD_SLACK_S + SLOW_S + QUIET_S)
            # A request's time is when its answer was written: SLOW_S after it arrived.
            took_effect = answered + EFFECT_S + LOAD_SLACK_S + SLOW_S
            late = [r for r in site.requests if r.time > took_effect]
            assert late == [], f"{len(late)} request(s) after the pause took effect"
            await screenshot(page, "site-paused-mid-crawl")

            row = page.locator("#sites-table tbody tr", has_text=site.url)
            await row.get_by_placeholder("reason to resume").fill("errors gone")
            await row.get_by_role("button", name="Resume").click()
            await page.wait_for_selector("#flash.ok")
            resumed = time.time()
            while not [r for r in site.requests if r.time > resumed]:
                await anyio.sleep(0.05)
