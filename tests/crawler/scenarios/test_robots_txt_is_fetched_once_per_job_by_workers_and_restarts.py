"""robots.txt is fetched once per site and job: by one of several workers starting at once,
and not again by a worker SIGKILLed and restarted, nor by one started later.

Counted from the test site's own request log, not from crawlog's events."""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from crawler.testsite import Faults, serve_testsite

pytestmark = pytest.mark.anyio
ROBOTS = "/robots.txt"
LONG_LEASE_MS = 120_000
"""Longer than the test: the restart resumes its own tasks rather than wait for expiry."""


async def test_several_workers_a_kill_and_a_restart_fetch_robots_txt_once(
    start_job: Callable[..., Any], worker_process: Callable[..., Any]
) -> None:
    faults = Faults(robots_disallow="/private/")
    async with serve_testsite(pages=150, seed=3, faults=faults) as site:
        await start_job([site.url + "/"], lease_ms=LONG_LEASE_MS)
        with anyio.fail_after(90):
            workers = [await worker_process(f"w{n}") for n in range(3)]
            while site.request_count < len(site.reachable) // 3:
                await anyio.sleep(0.01)
            workers[0].send_signal(signal.SIGKILL)
            await workers[0].wait()
            again = await worker_process("w0", "--exit-when-done")
            later = await worker_process("w3", "--exit-when-done")
            assert await again.wait() == 0
            assert await later.wait() == 0
            for worker in workers[1:]:
                worker.send_signal(signal.SIGTERM)
                await worker.wait()
        counts = site.fetch_counts()
        pages = {path for path in counts if path != ROBOTS}
        reachable = {url.removeprefix(site.url) for url in site.reachable}
        assert reachable <= pages, f"never fetched: {sorted(reachable - pages)[:5]}"
        assert counts[ROBOTS] == 1, counts[ROBOTS]
        # The rules were obeyed by every worker, the restarted one too.
        assert not any(path.startswith("/private/") for path in pages)
