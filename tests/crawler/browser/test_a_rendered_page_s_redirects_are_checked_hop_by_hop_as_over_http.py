"""A rendered page's redirects are those of its navigation, each hop checked as the HTTP
fetcher checks it: followed when the scope and the claim allow (the result at the target,
the hop listed), left to the task that owns the target (``handed_over``, its Location and
status), refused out of scope, stopped in a loop — the refused hop never requested."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from crawler._browser import BrowserFetcher
from crawler._fetch import Fetcher
from crawler._fetch_spec import ERROR_REDIRECT_LOOP, ERROR_REDIRECT_OUT_OF_SCOPE, FetchConfig
from crawler.testsite import Faults, RunningSite, serve_testsite

pytestmark = pytest.mark.anyio


@pytest.fixture
async def site() -> AsyncIterator[RunningSite]:
    async with serve_testsite(pages=20, faults=Faults(redirects=True, redirect_loop=True)) as s:
        yield s


@pytest.fixture
async def fetcher(chromium: str, tmp_path: Path) -> AsyncIterator[BrowserFetcher]:
    config = FetchConfig()
    async with BrowserFetcher(Fetcher(config), config, root=tmp_path, executable=chromium) as f:
        yield f


async def test_a_redirect_in_scope_and_unclaimed_is_followed(
    site: RunningSite, fetcher: BrowserFetcher
) -> None:
    async def mine(url: str) -> bool:
        return True

    with anyio.fail_after(60):
        result = await fetcher.fetch(
            site.url + "/moved/5", redirect_allowed=lambda url: True, claim_target=mine
        )
        await fetcher.release(result)
    assert (result.status, result.error) == (200, None)
    assert result.final_url == site.url + "/item/5"
    assert result.redirects == (site.url + "/item/5",)


async def test_a_redirect_to_another_task_s_page_is_handed_over_unrequested(
    site: RunningSite, fetcher: BrowserFetcher
) -> None:
    async def theirs(url: str) -> bool:
        return False

    with anyio.fail_after(60):
        result = await fetcher.fetch(site.url + "/moved/6", claim_target=theirs)
    assert result.handed_over
    assert (result.status, result.location) == (301, site.url + "/item/6")
    assert fetcher.page_for(result) is None
    assert "/item/6" not in site.fetch_counts()


async def test_a_redirect_out_of_scope_fails_unrequested(
    site: RunningSite, fetcher: BrowserFetcher
) -> None:
    with anyio.fail_after(60):
        result = await fetcher.fetch(site.url + "/moved/7", redirect_allowed=lambda url: False)
    assert result.error == ERROR_REDIRECT_OUT_OF_SCOPE
    assert "/item/7" not in site.fetch_counts()


async def test_a_redirect_loop_is_stopped(site: RunningSite, fetcher: BrowserFetcher) -> None:
    with anyio.fail_after(60):
        result = await fetcher.fetch(site.url + "/loop/a")
    assert result.error == ERROR_REDIRECT_LOOP
    assert site.fetch_counts() == {"/loop/a": 1, "/loop/b": 1}
