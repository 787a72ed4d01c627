"""``response.once``: an action never runs twice, whatever the worker dies in the middle of."""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler.testsite import serve_testsite
from eventlog import ActionDone, ActionIntended, EventLog, TaskDone, TaskPaused
from tests.crawler.spiders import ONCE_ENV

pytestmark = pytest.mark.anyio


async def crawl_one_page(
    moment: str,
    tmp_path: Path,
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    log: EventLog,
) -> Path:
    effects = tmp_path / "effects.txt"
    env = {ONCE_ENV: f"{effects}:{moment}"}
    async with serve_testsite(pages=10, seed=2) as site:
        await start_job([site.url + "/item/1"], spider="tests.crawler.spiders:OnceSpider")
        with anyio.fail_after(60):
            first = await worker_process("w1", "--exit-when-done", env=env)
            assert await first.wait() == -signal.SIGKILL
            again = await worker_process("w1", "--exit-when-done", env=env)
            # With --exit-when-done a worker also exits once every task left waits for a
            # person to decide about an uncertain action (it says which): it was racing a
            # SIGTERM sent once the pause showed in the log.
            assert await again.wait() == 0
            if moment != "after":
                assert any(isinstance(e.event, TaskPaused) for e in await log.read_range())
    return effects


async def test_an_action_done_before_a_crash_is_skipped_on_resume(
    tmp_path: Path, start_job: Callable[..., Any], worker_process: Callable[..., Any], log: EventLog
) -> None:
    effects = await crawl_one_page("after", tmp_path, start_job, worker_process, log)
    assert len(effects.read_text().splitlines()) == 1
    events = [e.event for e in await log.read_range()]
    assert sum(isinstance(e, ActionIntended) for e in events) == 1
    assert sum(isinstance(e, ActionDone) for e in events) == 1
    assert any(isinstance(e, TaskDone) for e in events)


async def test_an_action_that_may_have_run_pauses_its_task_for_a_person(
    tmp_path: Path, start_job: Callable[..., Any], worker_process: Callable[..., Any], log: EventLog
) -> None:
    effects = await crawl_one_page("during", tmp_path, start_job, worker_process, log)
    assert len(effects.read_text().splitlines()) == 1, "never run a second time"
    events = [e.event for e in await log.read_range()]
    assert not any(isinstance(e, ActionDone | TaskDone) for e in events)
    [paused] = [e for e in events if isinstance(e, TaskPaused)]
    assert paused.reason.startswith("uncertain action notify")
