"""Spiders with item pipelines (loaded by workers as ``tests.crawler.pipeline_spiders:NAME``)."""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from selectolax.lexbor import LexborHTMLParser
from yarl import URL

from crawler import DropItem, Item, NextPage, Output, Response, Spider

CALLS_ENV = "CRAWLOG_TEST_PIPELINE_CALLS"
"""A file the first pipeline step appends each item's key to: how often the steps ran."""
KILL_IN_PIPELINE_ENV = "CRAWLOG_TEST_KILL_IN_PIPELINE"
"""``PAGE:MARKER_FILE``: SIGKILL this worker inside a pipeline step on that page, once
(after the page's first item went through the steps, before its checkpoint)."""
DIVISIBLE_BY_THREE = "divisible by three"


def number(item: Any) -> int:
    """The test site's item number of an item this spider yields (an Item or a dict)."""
    data = item.data if isinstance(item, Item) else item
    return int(data["n"])


def _with(item: Any, **fields: Any) -> Any:
    """``item`` with more fields, of the same kind (Item or dict)."""
    if isinstance(item, Item):
        return Item(item.key, {**item.data, **fields})
    return {**item, **fields}


async def count_calls(item: Any, response: Response) -> Any:
    """Notes the item's key (and may kill the worker on the page it is told)."""
    key = item.key if isinstance(item, Item) else item["url"]
    with Path(os.environ[CALLS_ENV]).open("a") as calls:
        calls.write(f"{key}\n")
    target, _, marker = os.environ.get(KILL_IN_PIPELINE_ENV, "").partition(":")
    if target and int(target) == response.page and not Path(marker).exists():
        Path(marker).touch()
        os.kill(os.getpid(), signal.SIGKILL)
    return item


class Tag:
    """A Scrapy-style pipeline class: made once, called by ``process_item``."""

    def __init__(self) -> None:
        self.label = "tagged"

    async def process_item(self, item: Any, response: Response) -> Any:
        return _with(item, label=self.label, page=response.page)


def drop_threes(item: Any, response: Response) -> Any:
    """A plain (not async) step raising DropItem."""
    if number(item) % 3 == 0:
        raise DropItem(DIVISIBLE_BY_THREE)
    return item


async def drop_fives(item: Any, response: Response) -> Any:
    """A step returning None to drop an item."""
    return None if number(item) % 5 == 0 else item


class PipelineListingSpider(Spider):
    """Walks a listing: its rows as items (an Item for even numbers, a dict for odd ones),
    through four pipeline steps that tag some and drop others."""

    name = "pipeline-listing"
    pipelines = (count_calls, Tag, drop_threes, drop_fives)

    async def parse(self, response: Response) -> AsyncIterator[Any]:  # Items and dicts
        tree = LexborHTMLParser(response.body)
        for link in tree.css("li a"):
            href = str(link.attributes.get("href"))
            url = str(URL(response.url).join(URL(href)))
            n = int(href.rsplit("/", 1)[1])
            if n % 2 == 0:
                yield Item(url, {"n": n, "title": link.text()})
            else:
                yield {"url": url, "n": n, "title": link.text()}
        nxt = tree.css_first('a[rel="next"]')
        if nxt is not None:
            yield NextPage(response.url.split("?")[0] + str(nxt.attributes.get("href")))


async def explode(item: Any, response: Response) -> Any:
    raise ValueError(f"no price on {response.url}")


class ExplodingPipelineSpider(Spider):
    """One item per page, whose pipeline raises: the task fails as a spider error would."""

    name = "exploding-pipeline"
    pipelines = (explode,)

    async def parse(self, response: Response) -> AsyncIterator[Output]:
        yield Item(response.url, {"status": response.status})


async def unloggable(item: Any, response: Response) -> Any:
    return Item(item.key, {"when": object()})


class UnloggablePipelineSpider(Spider):
    """A pipeline returning what the log cannot carry: checked like a spider's output."""

    name = "unloggable-pipeline"
    pipelines = (unloggable,)

    async def parse(self, response: Response) -> AsyncIterator[Output]:
        yield Item(response.url)


class NotAPipelineSpider(Spider):
    """``pipelines`` names something that is no step: refused when the spider loads."""

    name = "not-a-pipeline"
    pipelines = (42,)
