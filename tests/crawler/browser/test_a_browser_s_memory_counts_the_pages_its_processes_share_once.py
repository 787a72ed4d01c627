"""A browser's memory, read for its bound (`group_pss_mb`), counts the pages its processes
share once: Chromium's processes are forked from one zygote, and their RSS summed counts
those pages in each, several times the group's footprint, which had a browser with four
tabs replaced at every reading under the default bound."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from crawler._browser import BrowserFetcher, group_pss_mb, marked_processes
from crawler._fetch import Fetcher
from crawler._fetch_spec import FetchConfig
from crawler.testsite import RunningSite

pytestmark = pytest.mark.anyio


def _summed_rss_mb(pgid: int) -> float:
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[2]) != pgid:
                continue
            total += int((entry / "statm").read_text().split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return total * os.sysconf("SC_PAGE_SIZE") / 2**20


async def test_a_rendering_browser_s_memory_is_below_its_summed_rss_and_it_is_kept(
    chromium: str, scripted_site: RunningSite, tmp_path: Path
) -> None:
    config = FetchConfig()
    fetcher = BrowserFetcher(
        Fetcher(config), config, root=tmp_path, executable=chromium, pages=4, memory_check_pages=4
    )
    with anyio.fail_after(60):
        async with fetcher:

            async def render(item: int) -> None:
                result = await fetcher.fetch(f"{scripted_site.url}/item/{item}")
                assert result.status == 200
                await fetcher.release(result)

            for first in range(1, 13, 4):
                async with anyio.create_task_group() as tasks:
                    for item in range(first, first + 4):
                        tasks.start_soon(render, item)
            (pid,) = {p for p in marked_processes(tmp_path) if os.getpgid(p) == p}
            shared_once, summed = group_pss_mb(pid), _summed_rss_mb(pid)
            assert 0 < shared_once < 0.8 * summed, (shared_once, summed)
            # Read at its 4th, 8th and 12th page under the default bound: never replaced.
            assert [p.name.rsplit("-", 1)[1] for p in tmp_path.iterdir()] == ["0"]
