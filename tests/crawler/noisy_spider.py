"""A spider for the terminal tests: follows every link like the default one, but raises on
detail pages, so its worker logs a traceback for each of them while the crawl runs."""

from __future__ import annotations

from collections.abc import AsyncIterator

from crawler import Output, Response, SiteSpider


class NoisySpider(SiteSpider):
    """The default spider, failing (and so logging) on every ``/item/`` page."""

    name = "noisy"

    async def parse(self, response: Response) -> AsyncIterator[Output]:
        if "/item/" in response.url:
            raise ValueError(f"cannot parse {response.url}")
        async for output in super().parse(response):
            yield output
