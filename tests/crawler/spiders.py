"""Spiders used by the crawler tests (loaded by workers as ``tests.crawler.spiders:NAME``)."""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import ClassVar

from selectolax.lexbor import LexborHTMLParser

from crawler._spider import Follow, Item, NextPage, Output, Response, Spider

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


ELSEWHERE = "http://elsewhere.test/page"
"""A link no test job's scope takes in."""


class ScrapyHabitSpider(Spider):
    """Yields as a Scrapy user would: raw (relative) hrefs, plain dicts, mailto links.

    A listing page: ``Follow`` of every row's href as written (``/item/3``,
    ``../item/3``, or absolute), a dict per row (no "url": keyed by the page and its
    position), ``mailto:`` and ``javascript:`` links, and the rel=next href (``?page=2``)
    as ``NextPage``. Any other page: a dict with its "url", a follow of ``/`` (one level
    deeper than a depth-1 job takes) and of a link off the site.
    """

    name = "scrapy-habit"

    async def parse(self, response: Response) -> AsyncIterator[Output]:
        tree = LexborHTMLParser(response.body)
        if "/list/" not in response.url:
            title = tree.css_first("h1")
            yield {"url": response.url, "title": title.text() if title else None}  # type: ignore[misc]
            yield Follow("/")
            yield Follow(ELSEWHERE)
            return
        for link in tree.css("li a"):
            href = str(link.attributes.get("href"))
            yield Follow(href)
            yield {"href": href, "title": link.text()}  # type: ignore[misc]
        yield Follow("mailto:shop@example.com")
        yield Follow("javascript:void(0)")
        nxt = tree.css_first('a[rel="next"]')
        if nxt is not None:
            yield NextPage(str(nxt.attributes.get("href")))


class BadOutputSpider(Spider):
    """On an item page, yields what the log cannot carry (chosen by the item's number);
    an item for every other page."""

    name = "bad-output"

    async def parse(self, response: Response) -> AsyncIterator[Output]:
        if "/item/" not in response.url:
            yield Item(response.url)
            return
        match int(response.url.rsplit("/", 1)[1]) % 3:
            case 0:
                yield Item({"url": response.url})  # type: ignore[arg-type]
            case 1:
                yield Item(response.url, {"parsed_by": object()})
            case _:
                yield "a string, not an output"  # type: ignore[misc]


class OtherTypesSpider(Spider):
    """Asks for JSON and plain text only: an item per JSON entry (its relative href
    followed) or text line, carrying the X-Items header."""

    name = "other-types"
    content_types = ("application/json", "text/plain")

    async def parse(self, response: Response) -> AsyncIterator[Output]:
        total = response.headers["x-items"]
        if response.content_type == "application/json":
            for row in response.json()["items"]:
                yield Item(f"json {row['id']}", {"total": total, "type": response.content_type})
                yield Follow(row["href"])
        else:
            for line in response.text.splitlines():
                yield Item(f"text {line}", {"total": total, "type": response.content_type})


START_URL_ENV = "CRAWLOG_TEST_START_URL"
"""The one URL :class:`StartUrlsSpider` lists in its ``start_urls``."""


class StartUrlsSpider(Spider):
    """Names its own seed in ``start_urls`` (from the environment, as the site's port varies)
    and records the page: a crawl of it needs no SEEDS."""

    name = "start-urls"
    start_urls = (os.environ.get(START_URL_ENV, ""),)

    async def parse(self, response: Response) -> AsyncIterator[Output]:
        yield Item(response.url)


class SelectorSpider(Spider):
    """Written the Scrapy way: ``response.css`` for what it records, ``follow_all(css=...)``
    of a listing's rows with a callback (keywords passed through to ``Follow``),
    ``response.follow`` of the rel=next ``<a>`` selector (a new task, resolved from
    ``?page=2``), and a ``deny`` attribute: items whose number ends in 5 are never
    followed."""

    name = "selectors"
    deny = (r"/item/\d*5$",)

    async def parse(self, response: Response) -> AsyncIterator[Output]:
        for follow in response.follow_all(css="li a", callback="parse_item", priority=1):
            yield follow
        nxt = response.css('a[rel="next"]')
        if nxt:
            yield response.follow(nxt[0])

    async def parse_item(self, response: Response) -> AsyncIterator[Output]:
        yield {"url": response.url, "title": response.css("h1::text").get()}  # type: ignore[misc]


class SelfLoopSpider(Spider):
    """A pagination mistake: the next page of every page is the page itself."""

    name = "self-loop"

    async def parse(self, response: Response) -> AsyncIterator[Output]:
        yield Item(response.url, {"page": response.page})
        yield NextPage(response.url)


class PingPongSpider(Spider):
    """A loop of two pages: ``/a``'s next page is ``/b``, ``/b``'s is ``/a``; may die while
    parsing a page (`KILL_AT_PAGE_ENV`)."""

    name = "ping-pong"

    async def parse(self, response: Response) -> AsyncIterator[Output]:
        _maybe_die(response.page)
        yield Item(response.url, {"page": response.page})
        yield NextPage("/b" if response.url.endswith("/a") else "/a")


class SamePageAgainSpider(Spider):
    """A next page that never ends: every page's next page is the page itself, for ever,
    with ``dont_filter`` (a site whose same URL gives the next page, from a session), so
    only a page bound stops it."""

    name = "same-page-again"

    async def parse(self, response: Response) -> AsyncIterator[Output]:
        yield Item(f"{response.url}#{response.page}", {"page": response.page})
        yield NextPage(response.url, dont_filter=True)


class PriceSpider(Spider):
    """Reads a price every page lacks: a ``KeyError`` in the spider's own ``parse``."""

    name = "price"

    async def parse(self, response: Response) -> AsyncIterator[Output]:
        row: dict[str, str] = {"title": "a page"}
        yield Item(response.url, {"price": row["price"]})  # the line the failure names


class MissingFieldSpider(Spider):
    """An ordinary mistake: reads a field most pages lack (``KeyError: 'price'`` on every
    item page); the home page and listings give an item and their links."""

    name = "missing-field"

    async def parse(self, response: Response) -> AsyncIterator[Output]:
        fields: dict[str, str] = {}
        if "/item/" in response.url:
            yield Item(response.url, {"price": fields["price"]})
        yield Item(response.url)
        for link in LexborHTMLParser(response.body).css("a"):
            yield Follow(str(link.attributes.get("href")))


class TimestampBlindSpider(Spider):
    """The default spider's items, with a recrawl that does not see the test site's
    revision comments (an edit that adds only that is no change)."""

    name = "timestamp-blind"
    change_ignore: ClassVar[Sequence[str]] = (r"\n<!-- revision \d+ -->\n",)

    async def parse(self, response: Response) -> AsyncIterator[Output]:
        tree = LexborHTMLParser(response.body)
        title = tree.css_first("title")
        yield Item(response.url, {"title": title.text() if title is not None else ""})
        for link in tree.css("a[href]"):
            yield Follow(str(link.attributes.get("href")))


class TitleOnlySpider(TimestampBlindSpider):
    """A recrawl that compares each page's title only."""

    name = "title-only"
    change_ignore: ClassVar[Sequence[str]] = ()
    change_region = "title"
