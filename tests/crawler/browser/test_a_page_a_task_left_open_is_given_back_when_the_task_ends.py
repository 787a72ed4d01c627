"""A page fetched and never given back by its step (the task ended between its fetch and its
parse: a lost lease, a server error) is given back when its task ends
(`BrowserFetcher.release_task`, from the worker), not holding its slot for good."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from crawler._browser import BrowserFetcher
from crawler._fetch import Fetcher
from crawler._fetch_spec import FetchConfig
from crawler.testsite import RunningSite

pytestmark = pytest.mark.anyio


async def test_pages_a_task_left_open_free_their_slots_when_it_ends(
    chromium: str, scripted_site: RunningSite, tmp_path: Path
) -> None:
    config = FetchConfig()
    fetcher = BrowserFetcher(Fetcher(config), config, root=tmp_path, executable=chromium, pages=1)
    with anyio.fail_after(90):
        async with fetcher:

            async def task_cut_short(item: int) -> None:
                try:
                    result = await fetcher.fetch(f"{scripted_site.url}/item/{item}")
                    assert fetcher.page_for(result) is not None
                    raise LookupError("the lease was lost")  # before its parse
                finally:
                    await fetcher.release_task()

            for item in (1, 2):  # with one slot, the second waits forever if it leaked
                with pytest.raises(LookupError):
                    await task_cut_short(item)
