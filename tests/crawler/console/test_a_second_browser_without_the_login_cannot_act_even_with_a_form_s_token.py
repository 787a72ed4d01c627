"""In real browsers: a form's token copied out of one logged-in browser acts nowhere else.
A second browser without the login sees no page and cannot post the copied form (401);
logged in itself, it still cannot post the first browser's form (403): a form token is its
session's. Nothing is written to the log by either; the first browser's form still acts."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

from crawler.testsite import serve_testsite
from eventlog import EventLog, SitePaused
from tests.crawler.console.conftest import CONSOLE_ACTOR, RunningConsole

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(120)]
FORM_FIELDS = "f => Object.fromEntries(new FormData(f).entries())"


async def paused(log: EventLog) -> list[tuple[str, str]]:
    return [
        (e.event.actor, e.event.reason)
        for e in await log.read_range()
        if isinstance(e.event, SitePaused)
    ]


async def test_a_form_copied_into_another_browser_is_refused_there(
    start_job: Callable[..., Any],
    console: Callable[..., Awaitable[RunningConsole]],
    browsers: Callable[[str], Awaitable[Any]],
    log: EventLog,
    job: str,
) -> None:
    async with serve_testsite(pages=5, seed=1) as site:
        await start_job([site.url + "/"])
        running = await console()
        mine = await (await browsers("mine")).new_page()
        other = await (await browsers("other")).new_page()
        sites = f"{running.base}/jobs/{job}/sites"
        action = f"{running.base}/jobs/{job}/sites/pause"
        with anyio.fail_after(60):
            await mine.goto(running.url)
            await mine.goto(sites)
            form = await mine.eval_on_selector("#sites-table form", FORM_FIELDS)
            assert form["csrf"] and form["site"] == site.url
            copied = {**form, "reason": "copied"}

            # Without the login: no page, no action.
            shown = await other.goto(sites)
            assert shown is not None and shown.status == 401
            assert "/login?token=" in await other.inner_text("body")
            refused = await other.request.post(action, form=copied)
            assert refused.status == 401

            # Logged in, but the form is another session's: refused all the same.
            await other.goto(running.login_url("mallory"))
            assert (await other.request.get(sites)).status == 200
            refused = await other.request.post(action, form=copied)
            assert refused.status == 403 and "not of your session" in await refused.text()
            assert await paused(log) == []

            # The browser whose form it is acts with it.
            acted = await mine.request.post(action, form={**form, "reason": "mine"})
            assert acted.status == 200 and f"by {CONSOLE_ACTOR}" in await acted.text()
    assert await paused(log) == [(CONSOLE_ACTOR, "mine")]
