"""Spiders taking spider arguments (``crawlog crawl -a key=value``), loaded by workers as
``tests.crawler.argument_spiders:NAME``."""

from __future__ import annotations

from collections.abc import AsyncIterator

from crawler import Item, Output, Response, Spider


class Tagged(Spider):
    """Takes its arguments as attributes (the base class's way): each page's item carries
    ``self.label`` and ``self.limit``."""

    name = "tagged"
    label = "unset"

    async def parse(self, response: Response) -> AsyncIterator[Output]:
        yield Item(response.url, {"label": self.label, "limit": getattr(self, "limit", None)})
        for follow in response.follow_all(css="a"):
            yield follow


class Named(Spider):
    """Takes ``category`` by name in its own ``__init__``, as Scrapy spiders do."""

    name = "named"

    def __init__(self, category: str = "all", **arguments: str) -> None:
        super().__init__(**arguments)
        self.category = category.upper()

    async def parse(self, response: Response) -> AsyncIterator[Output]:
        yield Item(response.url, {"category": self.category})
