"""In a real browser: the page of a flow's task handed to a person (a step refused K
times) shows the step it reached and its cursor, its data, each once-only action with its
outcome, the report (the reason and the screenshot of the page it stopped on) and its last
events; "Approve" with a reason decides from that page, and the flow resumes past the
refused order — every other order confirmed once."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

from crawler.testsite import RunningSite
from eventlog import ActionResolved, EventLog, TaskQueue
from tests.crawler.browser.flow_kills import start_flow
from tests.crawler.console.conftest import CONSOLE_ACTOR, RunningConsole

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(120)]
REFUSED = "O0004"


async def test_the_task_page_shows_the_flow_and_approve_skips_the_refused_order(
    chromium: str,
    site: RunningSite,
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    console: Callable[..., Awaitable[RunningConsole]],
    browser: Any,
    screenshot: Callable[[Any, str], Awaitable[Any]],
    log: EventLog,
    redis_client: Any,
    job: str,
) -> None:
    with anyio.fail_after(90):
        await start_flow(site, start_job)
        site.orders.refused.add(REFUSED)
        assert await (await worker_process("w1", "--exit-when-done")).wait() == 0
        (task_id,) = (await TaskQueue(redis_client, job, "observer").left())[1]

        running = await console()
        page = await browser.new_page()
        await page.goto(running.url)
        await page.goto(f"{running.base}/jobs/{job}/tasks/{task_id}")
        assert await page.inner_text("#flow-step") == "ship"
        assert "page 1 after O0003" in await page.inner_text("#flow-state")
        assert await page.inner_text("#flow-data") == 'status = "open"'
        outcomes = await page.inner_text("#flow-actions")
        assert "confirm:O0003\tdone" in outcomes
        assert f"step:ship:{REFUSED}\tintended, outcome unknown" in outcomes
        assert "step ship failed 3 times" in await page.inner_text("#flow-reason")
        width = await page.eval_on_selector("#flow-screenshot", "img => img.naturalWidth")
        assert width > 0, "the report's screenshot is served and shown"
        assert "to a person" in await page.inner_text("#flow-tail")
        await screenshot(page, "flow-task")

        await page.get_by_placeholder("what you found").fill("refused by the shop: skip it")
        await page.get_by_role("button", name="Approve").click()
        await page.wait_for_selector("#flash.ok")
        assert f"of task {task_id} as done" in await page.inner_text("#flash")
        assert await page.locator("#flow-person").count() == 0, "nothing waits any more"

        assert await (await worker_process("w1", "--exit-when-done")).wait() == 0
    others = [oid for oid in site.orders.ids("open") if oid != REFUSED]
    assert site.orders.confirmations == dict.fromkeys(others, 1)
    (resolved,) = [e.event for e in await log.read_range() if isinstance(e.event, ActionResolved)]
    assert (resolved.actor, resolved.decision) == (CONSOLE_ACTOR, "done")
