"""A worker SIGKILLed mid-crawl and restarted fetches with the job's user agent, headers
and proxy: they come from the job's stored configuration, not from the worker's command
line (``crawlog worker`` takes none of them).

Witnesses: the ``/echo`` pages (the headers each request arrived with, kept as items), the
forward proxy's log and the test site's request log.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler.testsite import serve_testsite
from eventlog import EventLog, ItemScraped
from tests.crawler.forward_proxy import serve_forward_proxy
from tests.crawler.identity_spiders import ECHO_CHAIN, KILL_AT_ECHO_ENV

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]
LONG_LEASE_MS = 120_000
"""Longer than the test: the restart resumes its own task at once, not after expiry."""
KILLED_AT = 5


async def test_the_restarted_worker_refetches_with_the_job_s_identity_through_its_proxy(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    log: EventLog,
    tmp_path: Path,
) -> None:
    marker = tmp_path / "killed"
    async with serve_testsite(pages=5, seed=1) as site, serve_forward_proxy() as proxy:
        await start_job(
            [site.url + "/echo/1"],
            spider="tests.crawler.identity_spiders:PlainEchoSpider",
            user_agent="kept-agent/3.0",
            headers=(("X-Kept", "yes"),),
            proxies=(proxy.url,),
            lease_ms=LONG_LEASE_MS,
        )
        with anyio.fail_after(90):
            first = await worker_process("w1", env={KILL_AT_ECHO_ENV: f"{KILLED_AT}:{marker}"})
            await first.wait()  # it SIGKILLs itself while parsing /echo/5
            assert marker.exists() and first.returncode != 0
            again = await worker_process("w1", "--exit-when-done")
            assert await again.wait() == 0
        served = [request.path for request in site.requests]

    killed = f"/echo/{KILLED_AT}"
    assert served.count(killed) == 2, served  # before the kill, and by the restarted worker
    assert sorted(proxy.requests) == sorted(site.url + path for path in served)
    items = [e.event for e in await log.read_range() if isinstance(e.event, ItemScraped)]
    assert sorted(item.data["path"] for item in items) == sorted(
        f"/echo/{n}" for n in range(1, ECHO_CHAIN + 1)
    )
    for item in items:
        assert item.data["headers"]["user-agent"] == "kept-agent/3.0", item
        assert item.data["headers"]["x-kept"] == "yes", item
