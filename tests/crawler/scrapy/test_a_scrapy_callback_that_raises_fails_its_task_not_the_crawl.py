"""A Scrapy callback that raises on one page fails that request's crawlog task, with the
error as its reason; the crawl goes on to every other page and ends normally."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler.testsite import RunningSite
from projector import Store, read_committed
from tests.crawler.conftest import run_projector

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(180)]
BROKEN = "/item/7"


async def test_the_page_whose_callback_raises_is_failed_with_the_error_and_the_rest_done(
    scrapy_site: RunningSite,
    scrapy_process: Callable[..., Any],
    job: str,
    valkey_url: str,
    data_dir: Path,
) -> None:
    site = scrapy_site
    reachable = {url.removeprefix(site.url) for url in site.reachable}
    with anyio.fail_after(150):
        process = await scrapy_process(env={"RAISE_ON": BROKEN})
        assert await process.wait() == 0
        await run_projector(valkey_url, job, data_dir)

    _, state = read_committed(Store(data_dir, job))
    by_path = {t.url.removeprefix(site.url): t for t in state.tasks.values()}
    broken = by_path[BROKEN]
    assert broken.status == "failed"
    assert "callback raised RuntimeError: a bug on" in broken.last_reason
    done = {path for path, task in by_path.items() if task.status == "done"}
    assert done == reachable - {BROKEN}
