"""Spiders of the browser tests (loaded by workers as ``tests.crawler.browser_spiders:NAME``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from crawler._spider import Item, Output, Response, Spider

MORE_BUTTON = "#more"


class LoadMoreSpider(Spider):
    """On the scripted site's ``/more``: clicks "Load more" until the button goes, then
    yields an item per item link the live page lists (none of them is in the HTML)."""

    name = "load-more"
    browser = True

    async def parse(self, response: Response) -> AsyncIterator[Output]:
        page: Any = response.browser_page
        assert page is not None, "a browser spider's page is live while it parses"
        while await page.locator(MORE_BUTTON).count():
            before = await page.locator("#items a").count()
            await page.click(MORE_BUTTON)
            await page.wait_for_function(
                "n => document.querySelectorAll('#items a').length > n", arg=before
            )
        for href in await page.eval_on_selector_all(
            "#items a", "links => links.map(a => a.getAttribute('href'))"
        ):
            yield Item(href, {"from": response.url})
