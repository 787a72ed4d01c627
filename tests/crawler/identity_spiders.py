"""Spiders of the identity tests: they crawl the test site's ``/echo`` pages and keep, as an
item, the headers each request arrived with (loaded by workers as
``tests.crawler.identity_spiders:NAME``)."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import ClassVar

from crawler._spider import Follow, Item, Output, Response, Spider

KILL_AT_ECHO_ENV = "CRAWLOG_TEST_KILL_AT_ECHO"
"""``N:MARKER_FILE``: SIGKILL this worker while it parses ``/echo/N``, once."""
ECHO_CHAIN = 12
"""``/echo/1`` links ``/echo/2`` … up to this one."""


class EchoSpider(Spider):
    """An item per echoed request: its headers. ``/echo/N`` follows ``/echo/N+1``."""

    name = "echo"
    content_types = None
    user_agent: ClassVar[str | None] = "spider-agent/1.0"
    headers: ClassVar[dict[str, str]] = {"X-From-Spider": "spider", "Accept-Language": "fr"}

    async def parse(self, response: Response) -> AsyncIterator[Output]:
        echoed = json.loads(response.body)
        path = echoed["path"]
        _maybe_die(path)
        yield Item(response.url, {"path": path, "headers": echoed["headers"]})
        number = path.rpartition("/")[2]
        if number.isdigit() and int(number) < ECHO_CHAIN:
            yield Follow(response.url.rpartition("/")[0] + f"/{int(number) + 1}")


class PlainEchoSpider(EchoSpider):
    """The same, with no identity of its own."""

    user_agent = None
    headers: ClassVar[dict[str, str]] = {}


def _maybe_die(path: str) -> None:
    target, _, marker = os.environ.get(KILL_AT_ECHO_ENV, "").partition(":")
    if target and path == f"/echo/{target}" and not Path(marker).exists():
        Path(marker).touch()
        os.kill(os.getpid(), signal.SIGKILL)


class UserAgentAsHeaderSpider(PlainEchoSpider):
    """A Scrapy habit crawlog refuses: the user agent among the default headers."""

    headers: ClassVar[dict[str, str]] = {"User-Agent": "habit/1.0"}


class NumberUserAgentSpider(PlainEchoSpider):
    """A user agent that is not a string."""

    user_agent = 7  # type: ignore[assignment]
