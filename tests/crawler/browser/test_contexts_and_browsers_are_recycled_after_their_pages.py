"""A browser context is replaced after its share of pages, and the browser after its own;
a retired browser is gone (processes and profile) once its last page is given back."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from crawler._browser import BrowserFetcher, marked_processes
from crawler._fetch import Fetcher
from crawler._fetch_spec import FetchConfig
from crawler.testsite import RunningSite

pytestmark = pytest.mark.anyio


async def test_twelve_pages_at_five_a_browser_take_three_browsers_one_left_running(
    chromium: str, scripted_site: RunningSite, tmp_path: Path
) -> None:
    config = FetchConfig()
    fetcher = BrowserFetcher(
        Fetcher(config),
        config,
        root=tmp_path,
        executable=chromium,
        pages_per_context=2,
        pages_per_browser=5,
    )
    with anyio.fail_after(90):
        async with fetcher:
            for item in range(1, 13):
                result = await fetcher.fetch(f"{scripted_site.url}/item/{item}")
                assert (result.status, result.error) == (200, None)
                await fetcher.release(result)
            profiles = sorted(p.name.rsplit("-", 1)[1] for p in tmp_path.iterdir())
            assert profiles == ["2"], "the third browser runs; the first two are gone"
            assert set(marked_processes(tmp_path).values()) == {p.name for p in tmp_path.iterdir()}
        assert not marked_processes(tmp_path)
        assert not any(tmp_path.iterdir())


async def test_a_fetch_cancelled_midway_still_leaves_no_browser_behind(
    chromium: str, scripted_site: RunningSite, tmp_path: Path
) -> None:
    config = FetchConfig()
    fetcher = BrowserFetcher(Fetcher(config), config, root=tmp_path, executable=chromium)
    with anyio.fail_after(90):
        with anyio.CancelScope() as scope:
            async with fetcher, anyio.create_task_group() as tasks:
                tasks.start_soon(fetcher.fetch, f"{scripted_site.url}/item/1")
                while not scripted_site.fetch_counts():  # the navigation is under way
                    await anyio.sleep(0.005)
                scope.cancel()
        assert scope.cancelled_caught
        assert not marked_processes(tmp_path)
        assert not any(tmp_path.iterdir())
