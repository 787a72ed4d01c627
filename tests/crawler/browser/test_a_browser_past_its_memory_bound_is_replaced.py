"""A browser whose process group outgrows ``browser_max_mb`` is replaced at its next
memory reading (every ``memory_check_pages`` pages), and the old one is gone."""

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


def test_a_process_group_s_memory_counts_this_process() -> None:
    assert group_pss_mb(os.getpgid(0)) > 1


@pytest.mark.parametrize(("max_mb", "launches"), [(1.0, ["1"]), (1e9, ["0"])])
async def test_a_browser_past_its_bound_is_replaced_and_one_within_it_is_kept(
    max_mb: float,
    launches: list[str],
    chromium: str,
    scripted_site: RunningSite,
    tmp_path: Path,
) -> None:
    config = FetchConfig()
    fetcher = BrowserFetcher(
        Fetcher(config),
        config,
        root=tmp_path,
        executable=chromium,
        browser_max_mb=max_mb,
        memory_check_pages=3,
    )
    with anyio.fail_after(90):
        async with fetcher:
            for item in range(1, 5):
                result = await fetcher.fetch(f"{scripted_site.url}/item/{item}")
                assert result.status == 200
                await fetcher.release(result)
            assert sorted(p.name.rsplit("-", 1)[1] for p in tmp_path.iterdir()) == launches
            assert len(set(marked_processes(tmp_path).values())) == 1
