"""The address check applies to a rendered page's navigation: a host on a refused address
is never asked (the site's own log), the result says why, as an HTTP fetch's would."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from crawler._addresses import ERROR_REFUSED_ADDRESS_PREFIX, AddressPolicy
from crawler._browser import BrowserFetcher
from crawler._fetch import Fetcher
from crawler._fetch_spec import FetchConfig
from crawler.testsite import RunningSite

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("own", [("shop.invalid",), ("127.0.0.1",)])
async def test_a_page_on_a_loopback_address_is_refused_unless_it_is_the_crawl_s_own(
    own: tuple[str, ...], chromium: str, scripted_site: RunningSite, tmp_path: Path
) -> None:
    config = FetchConfig(addresses=AddressPolicy(own_hosts=own))
    fetcher = BrowserFetcher(Fetcher(config), config, root=tmp_path, executable=chromium)
    with anyio.fail_after(90):
        async with fetcher:
            result = await fetcher.fetch(scripted_site.url + "/item/3")
            await fetcher.release(result)
    if own == ("127.0.0.1",):
        assert (result.status, result.error) == (200, None)
        assert scripted_site.fetch_counts() == {"/item/3": 1}
    else:
        assert result.error == f"{ERROR_REFUSED_ADDRESS_PREFIX}127.0.0.1 (loopback)"
        assert scripted_site.fetch_counts() == {}
