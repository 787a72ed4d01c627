"""Spiders used by the crawler tests (loaded by workers as ``tests.crawler.spiders:NAME``)."""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser

from crawler._spider import Item, NextPage, Output, Response, Spider

KILL_AT_PAGE_ENV = "CRAWLOG_TEST_KILL_AT_PAGE"
"""``PAGE:MARKER_FILE``: SIGKILL this worker while it parses that page, once."""


class ListingSpider(Spider):
    """Walks one paginated listing: an item per row, the next page as the same task."""

    name = "listing"

    async def parse(self, response: Response) -> AsyncIterator[Output]:
        _maybe_die(response.page)
        tree = LexborHTMLParser(response.body)
        for link in tree.css("li a"):
            yield Item(str(link.attributes.get("href")), {"title": link.text()})
        nxt = tree.css_first('a[rel="next"]')
        if nxt is not None:
            href = str(nxt.attributes.get("href"))
            yield NextPage(response.url.split("?")[0] + href, cursor=f"after page {response.page}")


def _maybe_die(page: int) -> None:
    # The worst moment for a listing: page k fetched and parsed, its checkpoint not written.
    target, _, marker = os.environ.get(KILL_AT_PAGE_ENV, "").partition(":")
    if target and int(target) == page and not Path(marker).exists():
        Path(marker).touch()
        os.kill(os.getpid(), signal.SIGKILL)


ONCE_ENV = "CRAWLOG_TEST_ONCE"
"""``SIDE_EFFECT_FILE:MOMENT``: run one action per task; SIGKILL ``during`` or ``after`` it
(once: the marker is the side-effect file itself)."""


class OnceSpider(Spider):
    """Runs one side effect per page through ``response.once``, and may die around it."""

    name = "once"

    async def parse(self, response: Response) -> AsyncIterator[Output]:
        path, _, moment = os.environ[ONCE_ENV].partition(":")
        effects = Path(path)
        first_run = not effects.exists()

        async def notify() -> str:
            with effects.open("a") as out:
                out.write(f"{response.task_id}\n")
            if first_run and moment == "during":
                os.kill(os.getpid(), signal.SIGKILL)  # the action ran; its done was not logged
            return "sent"

        await response.once("notify", notify)
        if first_run and moment == "after":
            os.kill(os.getpid(), signal.SIGKILL)  # done logged; the page's step not
        yield Item(response.url)


class DeadlySpider(Spider):
    """Kills its worker (SIGKILL) on every page: a task no worker survives."""

    name = "deadly"

    async def parse(self, response: Response) -> AsyncIterator[Output]:
        os.kill(os.getpid(), signal.SIGKILL)
        yield Item(response.url)


class FlakySpider(Spider):
    """Raises on detail pages (``/item/``), yields an item for every other page."""

    name = "flaky"

    async def parse(self, response: Response) -> AsyncIterator[Output]:
        if "/item/" in response.url:
            raise ValueError(f"cannot parse {response.url}")
        yield Item(response.url)


START_URL_ENV = "CRAWLOG_TEST_START_URL"
"""The one URL :class:`StartUrlsSpider` lists in its ``start_urls``."""


class StartUrlsSpider(Spider):
    """Names its own seed in ``start_urls`` (from the environment, as the site's port varies)
    and records the page: a crawl of it needs no SEEDS."""

    name = "start-urls"
    start_urls = (os.environ.get(START_URL_ENV, ""),)

    async def parse(self, response: Response) -> AsyncIterator[Output]:
        yield Item(response.url)
