"""Spiders of the Scrapy habits a spider API answers (``tests.crawler.spider_api_spiders:NAME``):
text decoded by its declared charset, ``meta``/``cb_kwargs``/``request``/``urljoin``, and a
yielded ``scrapy.Request``."""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from crawler import Follow, NextPage, Response, Spider

KILL_AT_PAGE_ENV = "CRAWLOG_TEST_KILL_AT_PAGE"
"""``PAGE:MARKER_FILE``: SIGKILL this worker while it parses that page of a listing, once."""


class CharsetSpider(Spider):
    """An item of what each page's text accessors read, following every link."""

    name = "charset"

    async def parse(self, response: Response) -> AsyncIterator[Any]:
        yield {
            "url": response.url,
            "h1": response.css("h1::text").get(),
            "title": response.xpath("//title/text()").get(),
            "encoding": response.encoding,
            "in_text": "Café" in response.text,
        }
        for follow in response.follow_all(css="a"):
            yield follow


class MetaSpider(Spider):
    """From the first listing page, each item with ``meta`` and ``cb_kwargs``, and the
    listing's next pages (NextPage with their own); every page's item says what it got."""

    name = "meta"

    async def parse(self, response: Response) -> AsyncIterator[Any]:
        for href in response.css("li a::attr(href)").getall()[:2]:
            yield response.follow(
                href,
                callback=self.parse_item,
                meta={"from": response.url, "depth_seen": response.depth},
                cb_kwargs={"listing": response.urljoin("?page=1")},
            )
        yield Follow(
            response.urljoin("?page=2"),
            callback="parse_listing",
            meta={"pages": "listing"},
            cb_kwargs={"seen": 1},
        )

    async def parse_item(self, response: Response, listing: str) -> AsyncIterator[Any]:
        yield {
            "url": response.url,
            "listing": listing,
            "meta": response.meta,
            "request": [response.request.url, response.request.callback, response.request.meta],
            "repr": repr(response),
        }

    async def parse_listing(self, response: Response, seen: int) -> AsyncIterator[Any]:
        _maybe_die(seen)
        yield {
            "url": response.url,
            "seen": seen,
            "meta": response.meta,
            "request_url": response.request.url,
        }
        if seen < 3:
            nxt = response.urljoin(f"?page={seen + 2}")
            yield NextPage(nxt, meta={"pages": f"next {seen + 1}"}, cb_kwargs={"seen": seen + 1})


class ScrapyRequestSpider(Spider):
    """Yields a ``scrapy.Request``, as a Scrapy spider would."""

    name = "scrapy-request"

    async def parse(self, response: Response) -> AsyncIterator[Any]:
        import scrapy

        yield scrapy.Request(response.urljoin("/item/1"))


def _maybe_die(seen: int) -> None:
    target, _, marker = os.environ.get(KILL_AT_PAGE_ENV, "").partition(":")
    if target and int(target) == seen and not Path(marker).exists():
        Path(marker).touch()
        os.kill(os.getpid(), signal.SIGKILL)
