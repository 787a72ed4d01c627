"""A rendered page given back (`BrowserFetcher.release`) waits for its next page with its
scripts off: a page that polled its site while the spider held it sends nothing after."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from crawler._browser import BrowserFetcher
from crawler._fetch import Fetcher
from crawler._fetch_spec import FetchConfig
from crawler.testsite import RunningSite

pytestmark = pytest.mark.anyio
POLLED = "/api/items?page=1"
POLLS_IN_FLIGHT = 5


async def test_a_page_polling_its_site_stops_once_given_back(
    chromium: str, scripted_site: RunningSite, tmp_path: Path
) -> None:
    config = FetchConfig()
    fetcher = BrowserFetcher(Fetcher(config), config, root=tmp_path, executable=chromium)
    with anyio.fail_after(90):
        async with fetcher:
            result = await fetcher.fetch(scripted_site.url + "/item/1")
            page = fetcher.page_for(result)
            assert page is not None
            await page.evaluate(f"setInterval(() => fetch({POLLED!r}), 10)")
            while scripted_site.fetch_counts().get(POLLED, 0) < 5:  # it polls
                await anyio.sleep(0.01)
            await fetcher.release(result)
            assert fetcher.page_for(result) is None
            given_back = scripted_site.fetch_counts()[POLLED]
            await anyio.sleep(0.5)  # fifty polls' worth, had it gone on
            # A few in flight while Chromium closes the page (2 once, on a loaded machine).
            assert scripted_site.fetch_counts()[POLLED] <= given_back + POLLS_IN_FLIGHT
            # The same page serves the next fetch, its scripts on again.
            again = await fetcher.fetch(scripted_site.url + "/")
            assert again.status == 200
            assert b'href="/list?page=1"' in again.body
            await fetcher.release(again)
