"""In a real browser, a task's page is a log of its events as they come: the page stays
open (no reload) while the task is retried and run again by a worker, and each of those
events appears in its story in log order; another task's events redraw nothing there."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
import redis.asyncio as aioredis

from crawler import JobConfig
from crawler._urls import fingerprint
from crawler.ops import OpenJob, retry_tasks
from crawler.testsite import serve_testsite
from eventlog import EventLog, JobKeys, TaskFailed
from projector import Store
from tests.crawler.console.conftest import RunningConsole

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]
STORY = "#story tbody tr td:nth-child(4)"
"""The "what" column of the story: each event's tag."""
REDRAW_MS = 250
"""The page script's throttle (``REDRAW_MS`` in ``static/console.js``)."""


async def _failures(log: EventLog, task_id: str) -> int:
    entries = await log.read_range()
    return sum(isinstance(e.event, TaskFailed) and e.event.task_id == task_id for e in entries)


async def test_a_task_s_story_grows_live_with_its_own_events_only(
    start_job: Callable[..., Awaitable[JobConfig]],
    worker_process: Callable[..., Any],
    console: Callable[..., Awaitable[RunningConsole]],
    browser: Any,
    screenshot: Callable[[Any, str], Awaitable[Any]],
    redis_client: aioredis.Redis,
    log: EventLog,
    job: str,
    data_dir: Path,
) -> None:
    async with serve_testsite(pages=5, seed=1) as site:
        watched, other = f"{site.url}/gone/watched", f"{site.url}/gone/other"
        config = await start_job([watched, other], max_depth=0)
        with anyio.fail_after(55):
            assert await (await worker_process("w1", "--exit-when-done")).wait() == 0
        opened = OpenJob(redis_client, JobKeys(job), config, Store(data_dir, job))
        running = await console()
        page = await browser.new_page()
        task_path = f"/jobs/{job}/tasks/{fingerprint(watched)}"
        redraws: list[str] = []
        page.on("request", lambda r: redraws.append(r.url) if r.url.endswith(task_path) else None)
        with anyio.fail_after(55):
            await page.goto(running.url)
            await page.goto(running.base + task_path)
            await page.wait_for_function("document.getElementById('stream-state').textContent")
            before = await page.locator(STORY).all_inner_texts()
            assert before[-1] == "task.failed", before
            await page.evaluate("window.stillThisPage = true")
            loaded = len(redraws)

            # Another task retried and run again: its events redraw nothing here.
            logged = len(await log.read_range())
            await retry_tasks(opened, [await opened.task(fingerprint(other))], "again", "tester")
            assert await (await worker_process("w2", "--exit-when-done")).wait() == 0
            assert await _failures(log, fingerprint(other)) == 2
            appended = len(await log.read_range()) - logged
            await page.wait_for_function(
                f"document.getElementById('stream-state').textContent == 'live · {appended} events'"
            )
            # A redraw would start within REDRAW_MS of the event that asked for it: the
            # absence of one is only seen by giving it that time (four times over).
            await page.wait_for_timeout(4 * REDRAW_MS)
            assert len(redraws) == loaded, redraws

            # This task: the retry shows at once, then the worker's events as they come.
            await retry_tasks(opened, [await opened.task(fingerprint(watched))], "again", "tester")
            await page.wait_for_function(
                f"[...document.querySelectorAll('{STORY}')].at(-1).textContent == 'task.retried'"
            )
            assert await page.inner_text("#task-status") == "pending"
            assert await (await worker_process("w3", "--exit-when-done")).wait() == 0
            await page.wait_for_function(
                f"[...document.querySelectorAll('{STORY}')].at(-1).textContent == 'task.failed'"
            )
            after = await page.locator(STORY).all_inner_texts()
            assert after[: len(before)] == before
            assert after[len(before)] == "task.retried"
            assert {"task.claimed", "task.page"} <= set(after[len(before) + 1 :]), after
            assert await page.inner_text("#task-attempt") == "2"
            assert await page.evaluate("window.stillThisPage") is True  # never reloaded
            await screenshot(page, "task-log-live")
