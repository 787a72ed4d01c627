""" "Needs a person" also groups failed tasks by site: "Retry all N" of a site, confirmed
with the job name, retries exactly that site's N tasks, and the same form sent twice
retries them once."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

from crawler.testsite import serve_testsite
from eventlog import EventLog, TaskRetried
from tests.crawler.console.conftest import CONSOLE_ACTOR, RunningConsole

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
FIELD = re.compile(r'<input type="hidden" name="(\w+)" value="([^"]*)">')


async def test_retry_all_of_a_site_retries_its_tasks_once(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    console: Callable[..., Awaitable[RunningConsole]],
    log: EventLog,
    job: str,
) -> None:
    async with serve_testsite(pages=10, seed=1) as site:
        missing = [f"{site.url}/no/such/page/{n}" for n in range(2)]
        await start_job([site.url + "/", *missing], max_depth=0)
        with anyio.fail_after(60):
            assert await (await worker_process("w1", "--exit-when-done")).wait() == 0
            running = await console()
            async with running.session(timeout=20) as http:
                page = (await http.get(f"/jobs/{job}/attention")).text
                by_site = page[page.index('<section class="by-site">') :]
                fields = dict(FIELD.findall(by_site))
                assert (fields["site"], fields["status"], fields["count"]) == (
                    site.url,
                    "failed",
                    "2",
                )
                form = {**fields, "reason": "site fixed", "confirm": job}
                action = f"/jobs/{job}/attention/retry"
                first = await http.post(action, data=form, follow_redirects=True)
                assert "retried 2 task(s)" in first.text
                again = await http.post(action, data=form, follow_redirects=True)
                assert "retried 2 task(s)" in again.text  # the first outcome, not a second
    said = [e.event for e in await log.read_range() if isinstance(e.event, TaskRetried)]
    assert len(said) == 2 and {(e.actor, e.reason) for e in said} == {(CONSOLE_ACTOR, "site fixed")}
