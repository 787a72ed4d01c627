"""In a real browser: a failed task's page tells its story and offers Retry, which needs a
reason (the browser asks for one, and the server refuses a form without it); the retry is
one TaskRetried from the console's user; the same form submitted again applies nothing
more, and a form for the attempt that was already retried is refused with a message."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

from crawler._urls import fingerprint
from crawler.testsite import serve_testsite
from eventlog import EventLog, TaskRetried
from tests.crawler.console.conftest import CONSOLE_ACTOR, RunningConsole

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(150)]


async def retries(log: EventLog) -> list[TaskRetried]:
    return [e.event for e in await log.read_range() if isinstance(e.event, TaskRetried)]


async def test_a_retry_needs_a_reason_and_a_second_submit_applies_nothing(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    console: Callable[..., Awaitable[RunningConsole]],
    browser: Any,
    screenshot: Callable[[Any, str], Awaitable[Any]],
    log: EventLog,
    job: str,
) -> None:
    async with serve_testsite(pages=10, seed=1) as site:
        missing = f"{site.url}/no/such/page"
        await start_job([missing], max_depth=0)
        with anyio.fail_after(60):
            assert await (await worker_process("w1", "--exit-when-done")).wait() == 0
            running = await console()
            page = await browser.new_page()
            await page.goto(running.url)
            task_url = f"{running.base}/jobs/{job}/tasks/{fingerprint(missing)}"
            await page.goto(task_url)
            assert await page.inner_text("#task-status") == "failed"
            assert "task.failed" in await page.inner_text("#story")
            await screenshot(page, "failed-task")

            # The browser asks for the reason: nothing is sent.
            reason = page.locator("#retry-form input[name=reason]")
            await page.locator("#retry-form button").click()
            assert await reason.evaluate("e => e.validity.valueMissing")
            assert page.url == task_url
            # Sent without one anyway, the server refuses it.
            await reason.evaluate("e => e.removeAttribute('required')")
            await page.locator("#retry-form button").click()
            await page.wait_for_selector("#error")
            assert "a reason is required" in await page.inner_text("#error")
            assert await retries(log) == []

            await page.goto(task_url)
            form = await page.eval_on_selector(
                "#retry-form",
                "f => Object.fromEntries(new FormData(f).entries())",
            )
            await page.fill("#retry-form input[name=reason]", "the page is back")
            await page.locator("#retry-form button").click()
            await page.wait_for_selector("#flash.ok")
            assert "retried task" in await page.inner_text("#flash")
            assert await page.inner_text("#task-attempt") == "2"

            # Posted by the same browser (its session's cookie; a form acts only there).
            action = f"{running.base}/jobs/{job}/tasks/{fingerprint(missing)}/retry"
            # The same form again (a double click): the first outcome, nothing applied.
            again = await page.request.post(action, form={**form, "reason": "the page is back"})
            assert again.status == 200 and "retried task" in await again.text()
            # Another form for attempt 1, which was retried meanwhile: refused.
            stale = await page.request.post(
                action, form={**form, "form_id": "another-form", "reason": "me too"}
            )
            assert "retried meanwhile" in await stale.text()
    said = await retries(log)
    assert [(e.actor, e.reason) for e in said] == [(CONSOLE_ACTOR, "the page is back")]
