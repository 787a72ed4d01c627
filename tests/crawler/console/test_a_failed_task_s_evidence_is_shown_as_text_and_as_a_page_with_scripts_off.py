"""In a real browser: "Needs a person" shows each failed group's evidence, the last
response as the worker got it (status, headers, the body as escaped text, its last error and
who held the task), and "view as page" in an iframe with ``sandbox=""``, served with a
policy that runs no script, so a script in the failed page runs neither in the console
nor in its frame."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

from crawler._urls import fingerprint
from tests.crawler.console.conftest import RunningConsole
from tests.crawler.hostile_site import Route, serve_hostile

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(120)]

HOSTILE = (
    b"<!doctype html><html><head><title>Broken shop</title></head><body>"
    b"<h1 id='shown'>The shop is down</h1>"
    b"<script>document.getElementById('shown').textContent='SCRIPT RAN';"
    b"try{window.top.document.body.dataset.pwned='yes'}catch(e){}"
    b"fetch('/ran-in-frame')</script></body></html>"
)


async def test_the_evidence_of_a_failed_page_is_shown_and_its_script_never_runs(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    console: Callable[..., Awaitable[RunningConsole]],
    browser: Any,
    screenshot: Callable[[Any, str], Awaitable[Any]],
    job: str,
) -> None:
    routes = {
        "/shop": Route(
            HOSTILE,
            status=503,
            headers=(("Set-Cookie", "a=1"), ("Set-Cookie", "b=2"), ("X-Shop", "down")),
        )
    }
    async with serve_hostile(routes) as site:
        url = site.url + "/shop"
        task_id = fingerprint(url)
        await start_job([url], max_depth=0, max_attempts=1, obey_robots=False)
        with anyio.fail_after(60):
            assert await (await worker_process("w1", "--exit-when-done")).wait() == 0
            running = await console()
            page = await browser.new_page()
            await page.goto(running.url)
            await page.goto(f"{running.base}/jobs/{job}/attention")
            await page.wait_for_selector("section.evidence")
            section = page.locator("section.evidence")
            text = await section.inner_text()
            assert "HTTP 503, text/html; charset=utf-8" in text
            assert "last error: HTTP 503" in text
            assert "held by: w1 (attempt 1)" in text
            headers = await page.inner_text("pre.evidence-headers")
            assert "Set-Cookie: a=1\nSet-Cookie: b=2" in headers and "X-Shop: down" in headers
            # The body as text: the script is shown, escaped, not run.
            await page.click("details.evidence-text summary")
            shown = await page.inner_text("pre.evidence-body")
            assert "<script>document.getElementById('shown')" in shown

            frame_element = page.locator("details.evidence-view iframe")
            assert await frame_element.get_attribute("sandbox") == ""
            handle = await frame_element.element_handle()
            frame = await handle.content_frame()
            await frame.wait_for_selector("#shown")
            assert await frame.inner_text("#shown") == "The shop is down"
            # Nor did it reach the console's page around the frame.
            assert await page.evaluate("document.body.dataset.pwned") is None
            await screenshot(page, "evidence")
            src = await frame_element.get_attribute("src")

            # The task's own page shows the same evidence.
            await page.goto(f"{running.base}/jobs/{job}/tasks/{task_id}")
            await page.wait_for_selector("#evidence section.evidence")
            assert "HTTP 503" in await page.inner_text("#evidence")
            own_frame = page.locator("#evidence iframe")
            assert await own_frame.get_attribute("sandbox") == ""
            assert await own_frame.get_attribute("src") == src

            async with running.session() as http:
                served = await http.get(src)
    assert served.status_code == 200 and served.content == HOSTILE
    policy = served.headers["content-security-policy"]
    assert policy.startswith("sandbox;") and "default-src 'none'" in policy
    assert "script-src" not in policy  # none allowed: default-src 'none' covers scripts
    assert served.headers["x-content-type-options"] == "nosniff"
    assert task_id in await page.content()
