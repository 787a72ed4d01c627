"""The job panel's per-minute charts count the pages and failures the projector committed
before the console started, not only the events it saw itself: opened right after a crawl
with 5 dead links, the failures chart shows those 5 (not "no tasks in 30 min" beside a
"failed 5"), and the pages chart every page fetched."""

from __future__ import annotations

import os
import re
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import serve_testsite
from tests.crawler.conftest import ROOT
from tests.crawler.console.conftest import RunningConsole

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(180)]
DEAD = 5


async def test_a_console_opened_after_the_crawl_charts_its_pages_and_failures(
    console: Callable[..., Awaitable[RunningConsole]], job: str, valkey_url: str, data_dir: Path
) -> None:
    async with serve_testsite(pages=20, seed=1) as site:
        seeds = [site.url + "/", *(f"{site.url}/gone/{n}" for n in range(1, DEAD + 1))]
        crawl = crawlog_command(
            "crawl", *seeds, "--job", job, "--depth", "1", "--data-dir", str(data_dir),
            "--fail-on", "never",
        )  # fmt: skip
        with anyio.fail_after(90):
            done = await anyio.run_process(
                crawl, env={**os.environ, "REDIS_URL": valkey_url}, cwd=ROOT, check=False
            )
        assert done.returncode == 0, done.stderr.decode()
        fetched = len(site.requests) - 1  # robots.txt is no page of the job
    running = await console()
    panels = []
    async with running.session(timeout=20) as http:
        with anyio.fail_after(60):
            # The first may be drawn from the last commit's summary while the state is read.
            while not panels or 'id="committed-only"' in panels[-1]:
                if panels:
                    await anyio.sleep(0.05)
                panels.append((await http.get(f"/jobs/{job}")).text)
    for panel in panels:
        failed = re.search(r'id="f-failed"[^>]*>([\d,]+)<', panel)
        assert failed is not None and int(failed.group(1)) == DEAD, panel
        assert "no tasks in 30 min" not in panel and "no pages in 30 min" not in panel
    legend = re.findall(r"</span>HTTP 404[^(<]*\((\d+)\)", panel)
    assert sum(int(n) for n in legend) == DEAD, panel
    pages = [int(n) for n in re.findall(r"<title>(\d+) </title></rect>", panel)]
    assert sum(pages) == fetched, panel
