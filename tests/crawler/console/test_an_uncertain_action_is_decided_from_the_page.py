"""In a real browser: a task whose worker was SIGKILLed during its ``once`` action waits on
"Needs a person"; "Mark done" with a reason records the decision (ActionResolved from the
console's user), the task resumes and completes, and the action never runs a second time
(the spider's side-effect file is the witness)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler.testsite import serve_testsite
from eventlog import ActionResolved, EventLog, TaskDone
from tests.crawler.console.conftest import CONSOLE_ACTOR, RunningConsole
from tests.crawler.scenarios.test_an_uncertain_action_is_decided_by_a_person_with_resolve import (
    paused_for_a_person,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(120)]


async def test_mark_done_on_the_page_resumes_the_task_without_running_its_action_again(
    tmp_path: Path,
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    console: Callable[..., Awaitable[RunningConsole]],
    browser: Any,
    screenshot: Callable[[Any, str], Awaitable[Any]],
    log: EventLog,
    job: str,
) -> None:
    async with serve_testsite(pages=10, seed=2) as site:
        with anyio.fail_after(60):
            effects, env, task_id = await paused_for_a_person(
                tmp_path, site.url, start_job, worker_process, log
            )
            running = await console()
            page = await browser.new_page()
            await page.goto(running.url)
            await page.goto(f"{running.base}/jobs/{job}/attention")
            row = page.locator("#uncertain tbody tr", has_text=task_id)
            assert "notify" in await row.inner_text()
            await screenshot(page, "uncertain-action")
            await row.get_by_placeholder("what you found").fill("the mail went out")
            await row.get_by_role("button", name="Mark done").click()
            await page.wait_for_selector("#flash.ok")
            assert f"resolved action notify of task {task_id} as done" in await page.inner_text(
                "#flash"
            )
            finisher = await worker_process("w1", "--exit-when-done", env=env)
            assert await finisher.wait() == 0
    assert len(effects.read_text().splitlines()) == 1, "the action ran once"
    events = [e.event for e in await log.read_range()]
    [resolved] = [e for e in events if isinstance(e, ActionResolved)]
    assert (resolved.actor, resolved.decision, resolved.reason) == (
        CONSOLE_ACTOR,
        "done",
        "the mail went out",
    )
    assert any(isinstance(e, TaskDone) and e.task_id == task_id for e in events)
