"""Spiders of the browser tests (loaded by workers as ``tests.crawler.browser_spiders:NAME``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from crawler._spider import Item, Output, Response, Spider
from crawler.testsite import APP_LOGIN_PATH, APP_PASSWORD, APP_USER

MORE_BUTTON = "#more"
USER_HEADING = "h1#user"
"""What the app writes for a logged-in user (its login form has an ``input#user``)."""


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


class AppSpider(Spider):
    """The test site's app behind its login (``/app/``): tells it is logged in by the user's
    heading the app's script writes, logs in through the app's form (the token kept in
    ``localStorage`` and ``sessionStorage``), and yields an item per app page."""

    name = "app"
    browser = True

    async def wait_for_page(self, page: Any) -> None:
        if "/app/" in page.url:
            await page.wait_for_selector("#user, #anon")

    async def is_logged_in(self, page: Any) -> bool:
        return bool(await page.locator(USER_HEADING).count())

    async def log_in(self, page: Any) -> None:
        origin = page.url.split("/app/")[0]
        await page.goto(origin + APP_LOGIN_PATH)
        await page.fill("#user", APP_USER)
        await page.fill("#password", APP_PASSWORD)
        await page.click("#log-in")
        # The form's own input is ``#user`` too: waiting for it would return before the
        # token is kept, and the next navigation could cut the form's script short.
        await page.wait_for_selector(USER_HEADING)

    async def parse(self, response: Response) -> AsyncIterator[Output]:
        yield Item(response.url.removeprefix(response.urljoin("/")[:-1]), {})
        for href in response.css("#links a::attr(href)").getall():
            yield response.follow(href)


class AppPageSpider(AppSpider):
    """`AppSpider` on the pages it is given only: an item per page, no link followed."""

    name = "app-page"

    async def parse(self, response: Response) -> AsyncIterator[Output]:
        yield Item(response.url.removeprefix(response.urljoin("/")[:-1]), {})
