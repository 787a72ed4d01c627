"""A spider with ``start_requests()`` (loaded by the crawl as
``tests.crawler.start_spiders:NAME``), crawling the test site's ``/echo/...``."""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path

from crawler import Follow, Item, Output, Response, Spider

START_COUNT_ENV = "CRAWLOG_TEST_START_COUNT"
"""How many start requests the spider makes."""
KILL_AT_ENV = "CRAWLOG_TEST_KILL_START_AT"
"""``N:MARKER_FILE``: SIGKILL the crawl as start request N is asked for, once."""


def start_path(n: int) -> str:
    return f"/echo/start/{n}"


class Started(Spider):
    name = "started"

    async def start_requests(self) -> AsyncIterator[Follow]:
        base = os.environ["CRAWLOG_TEST_SITE"]
        count = int(os.environ[START_COUNT_ENV])
        kill_at, _, marker = os.environ.get(KILL_AT_ENV, "").partition(":")
        for n in range(count):
            if kill_at and n == int(kill_at) and not Path(marker).exists():
                Path(marker).touch()
                os.kill(os.getpid(), signal.SIGKILL)
            yield Follow(base + start_path(n), callback="parse_start", cb_kwargs={"n": n})

    async def parse_start(self, response: Response, n: int) -> AsyncIterator[Output]:
        yield Item(f"start-{n}", {"path": response.json()["path"], "n": n})
