"""``crawlog crawl --spider M:C`` with no SEEDS crawls the spider's ``start_urls`` (the
Scrapy habit the spider API documents); with neither, one line and exit 2."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from crawler.testsite import serve_testsite
from tests.crawler.cli.test_errors_are_one_line_and_exit_2 import one_line_error
from tests.crawler.cli_run import CLI_TIMEOUT_S, clean_env, crawlog
from tests.crawler.conftest import ROOT
from tests.crawler.spiders import START_URL_ENV

pytestmark = pytest.mark.anyio
START_PATH = "/"


async def test_start_urls_are_crawled_when_no_seed_is_given(
    valkey_url: str, data_dir: Path, job: str
) -> None:
    async with serve_testsite(pages=20, seed=3) as site:
        env = clean_env(REDIS_URL=valkey_url, **{START_URL_ENV: site.url + START_PATH})
        command = [
            "crawl",
            "--spider",
            "tests.crawler.spiders:StartUrlsSpider",
            "--job",
            job,
            "--workers",
            "1",
            "--data-dir",
            str(data_dir),
        ]
        with anyio.fail_after(CLI_TIMEOUT_S):
            result = await anyio.to_thread.run_sync(lambda: crawlog(*command, cwd=ROOT, env=env))
        counts = site.fetch_counts()
    assert result.returncode == 0, result.stderr
    assert f"finished {job}" in result.stdout
    assert "1 items" in result.stdout, result.stdout
    assert counts.get(START_PATH) == 1, counts


def test_neither_seeds_nor_start_urls_is_one_line(tmp_path: Path, valkey_url: str) -> None:
    result = crawlog("crawl", "--job", "j", cwd=tmp_path, env=clean_env(REDIS_URL=valkey_url))
    one_line_error(result, "no seeds to crawl", "start_urls")
