"""A ``--browser`` worker SIGKILLed mid-crawl leaves no Chromium process behind, and the
worker restarted under its name finishes the crawl: every page fetched, none twice but
those in flight at the kill. Processes are found in /proc by the crawl's own mark (their
``--user-data-dir`` under its data directory), pages in the test site's request log."""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler._browser import BROWSERS_DIR, marked_processes
from crawler.testsite import RunningSite
from eventlog import TaskQueue

pytestmark = pytest.mark.anyio
LONG_LEASE_MS = 120_000
"""Longer than the test: the restart must resume its own tasks, not wait for expiry."""


async def test_a_killed_browser_worker_leaves_no_chromium_and_its_restart_finishes(
    chromium: str,
    scripted_site: RunningSite,
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    redis_client: Any,
    job: str,
    data_dir: Path,
) -> None:
    marked = data_dir / BROWSERS_DIR
    await start_job([scripted_site.url + "/"], browser=True, lease_ms=LONG_LEASE_MS)
    queue = TaskQueue(redis_client, job, "observer")
    with anyio.fail_after(90):
        first = await worker_process("w1")
        while len(scripted_site.fetch_counts()) < 12:  # some items, the crawl under way
            await anyio.sleep(0.01)
        assert marked_processes(marked), "the worker's Chromium runs, marked as the crawl's"
        first.send_signal(signal.SIGKILL)
        await first.wait()
        in_flight = await queue.leases_of("w1")
        while left := marked_processes(marked):
            await anyio.sleep(0.05)
        assert not left
        # Read once the worker's Chromium is gone too: until then its pages could still ask
        # the site for something (more of it on a loaded machine, where it dies later).
        fetched_before = scripted_site.fetch_counts()

        again = await worker_process("w1", "--exit-when-done")
        assert await again.wait() == 0
    assert not marked_processes(marked)
    pages = {p: n for p, n in scripted_site.fetch_counts().items() if p != "/robots.txt"}
    reachable = {url.removeprefix(scripted_site.url) for url in scripted_site.reachable}
    assert set(pages) == reachable
    twice = sorted(p for p, n in pages.items() if n > 1)
    assert len(twice) <= len(in_flight), (twice, in_flight)
    assert all(fetched_before.get(p, 0) == 1 for p in twice)
