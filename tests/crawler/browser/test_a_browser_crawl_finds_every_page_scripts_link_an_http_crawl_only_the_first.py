"""A crawl with ``--browser`` follows the links scripts write; one without finds only the
first page. Counted from the test site's own request log, not from crawlog's events."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler.testsite import RunningSite

pytestmark = pytest.mark.anyio


def fetched_pages(site: RunningSite) -> dict[str, int]:
    return {p: n for p, n in site.fetch_counts().items() if p != "/robots.txt"}


async def test_a_browser_crawl_finds_every_page_of_the_scripted_shop_once(
    chromium: str,
    scripted_site: RunningSite,
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    data_dir: Path,
) -> None:
    await start_job([scripted_site.url + "/"], browser=True)
    with anyio.fail_after(90):
        worker = await worker_process("w1", "--exit-when-done")
        assert await worker.wait() == 0
    pages = fetched_pages(scripted_site)
    reachable = {url.removeprefix(scripted_site.url) for url in scripted_site.reachable}
    assert set(pages) == reachable
    assert all(n == 1 for n in pages.values()), pages
    # The browser's profile went with it.
    assert not any((data_dir / "browsers").iterdir())


async def test_an_http_crawl_of_the_scripted_shop_finds_only_its_first_page(
    scripted_site: RunningSite,
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
) -> None:
    await start_job([scripted_site.url + "/"])
    with anyio.fail_after(90):
        worker = await worker_process("w1", "--exit-when-done")
        assert await worker.wait() == 0
    assert set(fetched_pages(scripted_site)) == {"/"}
