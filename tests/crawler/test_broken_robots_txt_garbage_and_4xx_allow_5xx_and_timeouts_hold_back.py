"""What a broken robots.txt means (RFC 9309, as Google reads it): garbage or a 4xx allows
everything; a 5xx or no answer allows nothing *for now* — the task is retried, robots.txt
asked again, and only a robots.txt that stays down fails the task, saying so."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
import redis.asyncio as aioredis

from crawler._fetch import FetchConfig
from crawler._job import JobConfig
from crawler._robots import RobotsCache
from crawler._spider import SiteSpider
from crawler._worker import Worker, WorkerOptions
from eventlog import EventLog, TaskDone, TaskFailed
from tests.crawler.hostile_site import HostileSite, Route, serve_hostile

pytestmark = pytest.mark.anyio

HOME = Route(b'<a href="/a">a</a>')
PAGE = Route(b"<title>a</title>")
SITES = {
    # Not a robots.txt at all: no line parses, so nothing is disallowed.
    "garbage": Route(
        b"\x00\xff\x89PNG <html>Disallow: nothing here</html>", content_type="image/png"
    ),
    "missing": None,  # 404
    "down": Route(b"User-agent: *\nAllow: /\n", status=500),
    "blip": Route(b"User-agent: *\nAllow: /\n", unavailable_first=1),
    "silent": Route(hang=True),
}


async def test_each_kind_of_broken_robots_txt_does_what_the_rfc_says(
    redis_client: aioredis.Redis,
    job: str,
    log: EventLog,
    start_job: Callable[..., Any],
    data_dir: Path,
) -> None:
    async with contextlib.AsyncExitStack() as stack:
        sites: dict[str, HostileSite] = {}
        for name, robots in SITES.items():
            routes = {"/": HOME, "/a": PAGE} | ({"/robots.txt": robots} if robots else {})
            sites[name] = await stack.enter_async_context(serve_hostile(routes))
        config: JobConfig = await start_job(
            [site.url + "/" for site in sites.values()], max_attempts=3
        )
        worker = Worker(
            redis_client,
            job,
            "w1",
            config,
            SiteSpider(),
            data_dir=data_dir,
            options=WorkerOptions(
                fetch_config=FetchConfig(read_timeout_s=0.5), exit_when_done=True
            ),
        )
        # Unreachable rules are kept half a second here (10 s by default), to be quick.
        worker.downloader.robots = RobotsCache(unreachable_ttl=0.5)
        with anyio.fail_after(60):
            await worker.run()

    for name in ("garbage", "missing", "blip"):
        assert {"/", "/a"} <= set(sites[name].requests), name
    for name in ("down", "silent"):
        # Nothing but robots.txt was ever asked for, and it was asked again on each retry.
        requests = sites[name].requests
        assert set(requests) == {"/robots.txt"} and len(requests) >= 3, (name, requests)
    assert sites["blip"].requests.count("/robots.txt") == 2

    events = [e.event for e in await log.read_range()]
    failed = sorted(e.reason for e in events if isinstance(e, TaskFailed))
    assert failed == ["robots.txt unreachable: HTTP 500", "robots.txt unreachable: read timeout"]
    assert sum(isinstance(e, TaskDone) for e in events) == 6  # / and /a of three sites
