"""A spider for the recrawl tests (loaded by workers as ``tests.crawler.recrawl_spiders:NAME``)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

from crawler._spider import Item, Output, Response, Spider

EFFECTS_ENV = "CRAWLOG_TEST_EFFECTS"
"""The file each page's ``response.once`` side effect appends its URL to."""


class NotifyingSpider(Spider):
    """Follows every link and runs one side effect per page through ``response.once``."""

    name = "notifying"

    async def parse(self, response: Response) -> AsyncIterator[Output]:
        async def notify() -> None:
            with Path(os.environ[EFFECTS_ENV]).open("a") as out:
                out.write(f"{response.url}\n")

        await response.once("notify", notify)
        yield Item(response.url, {"size": len(response.body)})
        for follow in response.follow_all(css="a"):
            yield follow


BROKEN_ENV = "CRAWLOG_TEST_BROKEN"
"""A file: while it exists, the spider raises on the paths it lists (one a line)."""


class BuggySpider(Spider):
    """Follows every link, an item per page; raises on the pages `BROKEN_ENV` names (a bug
    fixed once the file is gone)."""

    name = "buggy"

    async def parse(self, response: Response) -> AsyncIterator[Output]:
        broken = Path(os.environ[BROKEN_ENV])
        if broken.exists() and urlsplit(response.url).path in broken.read_text().split():
            raise ValueError(f"a bug on {response.url}")
        yield Item(response.url, {"size": len(response.body)})
        for follow in response.follow_all(css="a"):
            yield follow
