"""Spiders whose follows are requests: callbacks by name, data, POST forms, headers
(loaded by workers as ``tests.crawler.request_spiders:NAME``)."""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser

from crawler._spider import Follow, Item, NextPage, Output, Response, Spider

KILL_IN_ENV = "CRAWLOG_TEST_KILL_IN"
"""``CALLBACK:MARKER_FILE``: SIGKILL this worker the first time that callback runs (once:
the marker file says it happened)."""
FAIL_IN_ENV = "CRAWLOG_TEST_FAIL_IN"
"""``CALLBACK:MARKER_FILE``: raise in that callback the first time it runs (a spider bug
fixed since, as far as a retry can tell)."""
SEARCH_PATH = "/echo/search"
HEADER = "X-Crawl-Test"


def _maybe_die(callback: str) -> None:
    target, _, marker = os.environ.get(KILL_IN_ENV, "").partition(":")
    if target == callback and not Path(marker).exists():
        Path(marker).touch()
        os.kill(os.getpid(), signal.SIGKILL)
    target, _, marker = os.environ.get(FAIL_IN_ENV, "").partition(":")
    if target == callback and not Path(marker).exists():
        Path(marker).touch()
        raise ValueError(f"{callback} failed once")


class CategorySpider(Spider):
    """Walks a category's listing (``parse``, its pages as NextPage): every row's item page
    followed with ``callback=self.parse_item`` and the category as data, and on the first page
    one search POSTed as a form to the site's echo page (``parse_search``), with a header.
    Items carry what the callbacks got, so the log shows it."""

    name = "category"

    async def parse(self, response: Response) -> AsyncIterator[Output]:
        tree = LexborHTMLParser(response.body)
        category = response.url.rpartition("/")[2].partition("?")[0]
        for link in tree.css("li a"):
            yield Follow(
                str(link.attributes.get("href")),
                callback=self.parse_item,  # the Scrapy way: kept as its name
                data={"category": category, "listing_page": response.page},
            )
        if response.page == 1:
            yield Follow(
                SEARCH_PATH,
                callback="parse_search",
                data={"category": category},
                form={"q": category, "page": "1"},
                headers={HEADER: category},
            )
        nxt = tree.css_first('a[rel="next"]')
        if nxt is not None:
            yield NextPage(str(nxt.attributes.get("href")))

    async def parse_item(self, response: Response) -> AsyncIterator[Output]:
        _maybe_die("parse_item")
        title = LexborHTMLParser(response.body).css_first("h1")
        yield Item(
            response.url,
            {
                "callback": "parse_item",
                "title": title.text() if title else None,
                **response.data,
            },
        )

    def parse_search(self, response: Response) -> Iterator[Output]:
        # A plain generator, as a Scrapy habit: a callback may be one.
        _maybe_die("parse_search")
        echoed = response.json()
        yield Item(
            f"search {response.data['category']}",
            {
                "callback": "parse_search",
                "data": response.data,
                "method": echoed["method"],
                "body": echoed["body"],
                "form": echoed["form"],
                "header": echoed["headers"].get(HEADER.lower()),
                "content_type": echoed["headers"].get("content-type"),
            },
        )


class WrongRequestSpider(Spider):
    """On its seed, follows what cannot be a task, chosen by the seed's query ``?wrong=``:
    a callback it has not, a callback that is no method, data msgpack cannot carry, a
    method outside the set, a body that is neither bytes nor text."""

    name = "wrong-request"

    async def parse(self, response: Response) -> AsyncIterator[Output]:
        wrong = response.url.partition("wrong=")[2]
        target = "/echo/wrong"
        match wrong:
            case "callback":
                yield Follow(target, callback="parse_missing")
            case "attribute":
                yield Follow(target, callback="name")
            case "data":
                yield Follow(target, data={"when": object()})
            case "method":
                yield Follow(target, method="FETCH")  # type: ignore[arg-type]
            case "body":
                yield Follow(target, method="POST", body=12)  # type: ignore[arg-type]
            case _:
                yield Item(response.url)

    async def parse_other(self, response: Response) -> AsyncIterator[Output]:
        yield Item(response.url)


class PagedSpider(Spider):
    """Walks one paginated listing, each NextPage carrying data for the next page: an item
    per page holding the ``response.data`` it got. Dies (``KILL_IN_ENV``) in ``parse page
    N`` if told to."""

    name = "paged"

    async def parse(self, response: Response) -> AsyncIterator[Output]:
        _maybe_die(f"parse page {response.page}")
        yield Item(f"page {response.page}", {"data": response.data})
        nxt = LexborHTMLParser(response.body).css_first('a[rel="next"]')
        if nxt is not None:
            yield NextPage(str(nxt.attributes.get("href")), data={"from_page": response.page})
