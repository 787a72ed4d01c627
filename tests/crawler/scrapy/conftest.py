"""Fixtures for the Scrapy plug-in's tests: a small test site and real Scrapy processes
crawling it through crawler.scrapy, on the session's valkey-server."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import Process

from crawler.testsite import RunningSite, serve_testsite

pytest.importorskip("scrapy")

ROOT = Path(__file__).resolve().parents[3]
SPIDER = Path(__file__).with_name("site_spider.py")
SCRAPY_PAGES = 40
"""Detail pages of the site the Scrapy tests crawl: Scrapy's link extraction of the test
site's link-dense pages is the slow part, and this is enough for a kill at 30 %."""
CONCURRENCY = 8


@pytest.fixture
async def scrapy_site() -> AsyncIterator[RunningSite]:
    """A small generated site on 127.0.0.1, no faults."""
    async with serve_testsite(pages=SCRAPY_PAGES, seed=3) as running:
        yield running


@pytest.fixture
def scrapy_env(valkey_url: str, job: str, data_dir: Path) -> dict[str, str]:
    """The environment a Scrapy process of the job runs with."""
    return {
        **os.environ,
        "REDIS_URL": valkey_url,
        "CRAWLOG_JOB": job,
        "CRAWLOG_HOME": str(data_dir),
        "PYTHONPATH": str(ROOT),
        # The tests project the job themselves (after a kill, when they choose); the
        # plug-in's own projector has its test, which turns it back on.
        "CRAWLOG_PROJECT": "0",
    }


@pytest.fixture
async def scrapy_process(
    scrapy_site: RunningSite, scrapy_env: dict[str, str]
) -> AsyncIterator[Callable[..., Any]]:
    """``await scrapy_process(env={...})``: ``site_spider.py`` (or ``spider=``) crawling
    the site (or ``site=``, ``concurrency=`` requests at once) through the plug-in, as its
    own process. Whatever a test leaves running is killed at teardown."""
    started: list[Process] = []

    async def start(
        *,
        env: dict[str, str] | None = None,
        mode: str = "plugin",
        site: RunningSite | None = None,
        spider: Path = SPIDER,
        concurrency: int = CONCURRENCY,
    ) -> Process:
        url = (site or scrapy_site).url + "/"
        command = [sys.executable, str(spider), url, mode, str(concurrency)]
        process = await anyio.open_process(
            command, env={**scrapy_env, **(env or {})}, cwd=ROOT, stdout=None, stderr=None
        )
        started.append(process)
        return process

    yield start
    for process in started:
        if process.returncode is None:
            process.kill()
        await process.aclose()
