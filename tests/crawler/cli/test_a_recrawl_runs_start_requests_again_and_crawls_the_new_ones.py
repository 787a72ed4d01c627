"""A recrawl runs the spider's ``start_requests()`` again: a request no earlier run had is
a task of the run (crawled, its items scraped, listed new by ``crawlog changes``), one an
earlier run had is left to the revisits. Before, a recrawl never ran it: what a spider's
code makes rather than a page links was never found again."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import serve_testsite
from tests.crawler.conftest import ROOT
from tests.crawler.start_spiders import START_COUNT_ENV, start_path

pytestmark = pytest.mark.anyio
BEFORE, AFTER = 3, 5


async def test_the_start_requests_new_to_a_run_are_crawled_in_it(
    valkey_url: str, data_dir: Path, job: str
) -> None:
    async with serve_testsite(pages=10, seed=2) as site:

        async def crawlog(*args: str, count: int) -> str:
            env = {**os.environ, "REDIS_URL": valkey_url, "CRAWLOG_TEST_SITE": site.url,
                   START_COUNT_ENV: str(count)}  # fmt: skip
            command = crawlog_command(*args, "--job", job, "--data-dir", str(data_dir))
            with anyio.fail_after(60):
                done = await anyio.run_process(command, env=env, cwd=ROOT, check=False)
            assert done.returncode == 0, done.stdout.decode() + done.stderr.decode()
            return done.stdout.decode()

        spider = ("--spider", "tests.crawler.start_spiders:Started", "--depth", "0")
        await crawlog("crawl", site.url + "/echo/start/", *spider, "--workers", "1", count=BEFORE)
        before = len(site.requests)
        said = await crawlog("recrawl", "--workers", "1", count=AFTER)
        asked = sorted(r.path for r in site.requests[before:] if r.path.startswith("/echo/start/"))
        listed = await crawlog("changes", "--format", "jsonl", count=AFTER)

    assert f"start_requests(): {AFTER} request(s), {AFTER - BEFORE} new to run 2" in said, said
    assert asked == sorted(["/echo/start/", *(start_path(n) for n in range(AFTER))]), asked
    new = {row["url"].removeprefix(site.url) for row in map(json.loads, listed.splitlines())}
    assert new == {start_path(n) for n in range(BEFORE, AFTER)}, listed
