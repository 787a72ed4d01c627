"""A spider's ``start_requests()`` that makes more requests than ``--max-pages`` allows:
the crawl's line about them says how many the bound refused, beside those new and those
enqueued before; before, the refused ones were in neither count, with nothing said."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import serve_testsite
from tests.crawler.conftest import ROOT
from tests.crawler.start_spiders import START_COUNT_ENV

pytestmark = pytest.mark.anyio
COUNT = 5
BOUND = 3
"""The seed takes one page of it, two start requests the rest."""


async def test_start_requests_past_the_bound_are_counted_in_their_line(
    valkey_url: str, data_dir: Path, job: str
) -> None:
    async with serve_testsite(pages=10, seed=2) as site:
        env = {**os.environ, "REDIS_URL": valkey_url, "CRAWLOG_TEST_SITE": site.url,
               START_COUNT_ENV: str(COUNT)}  # fmt: skip
        command = crawlog_command(
            "crawl", site.url + "/echo/start/", "--spider", "tests.crawler.start_spiders:Started",
            "--depth", "0", "--workers", "1", "--max-pages", str(BOUND), "--job", job,
            "--data-dir", str(data_dir),
        )  # fmt: skip
        with anyio.fail_after(60):
            done = await anyio.run_process(command, env=env, cwd=ROOT, check=False)
        fetched = [r.path for r in site.requests if r.path.startswith("/echo/start/")]

    said = done.stdout.decode()
    assert done.returncode == 0, said + done.stderr.decode()
    line = "start_requests(): 5 request(s), 0 enqueued before, 2 new, 3 past --max-pages"
    assert f"{line}, not enqueued" in said.splitlines(), said
    assert len(fetched) == BOUND
