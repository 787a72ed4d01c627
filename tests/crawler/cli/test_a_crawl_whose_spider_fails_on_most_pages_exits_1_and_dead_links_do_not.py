"""By default (``--fail-on spider-errors``) a finished crawl whose spider failed more than
10 % of its tasks (a ``KeyError`` on every item page) exits 1 with one line saying so; a
crawl whose failures are the site's (HTTP 404s, however many) exits 0."""

from __future__ import annotations

import subprocess
from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import serve_testsite
from tests.crawler.cli_run import clean_env
from tests.crawler.conftest import ROOT

pytestmark = pytest.mark.anyio
FAILED_LINE = "crawlog: crawl failed: "


async def crawl(*args: str, valkey_url: str) -> subprocess.CompletedProcess[str]:
    with anyio.fail_after(100):
        done = await anyio.run_process(
            crawlog_command("crawl", *args),
            cwd=ROOT, env=clean_env(REDIS_URL=valkey_url), check=False,
        )  # fmt: skip
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode(), done.stderr.decode()
    )


@pytest.mark.timeout(120)  # a crawl's processes on a loaded machine
async def test_a_spider_raising_key_error_on_most_pages_fails_the_crawl_in_one_line(
    valkey_url: str, tmp_path: Path, job: str
) -> None:
    async with serve_testsite(pages=30, seed=1) as site:
        result = await crawl(
            site.url + "/", "--job", job, "--spider", "tests.crawler.spiders:MissingFieldSpider",
            "--data-dir", str(tmp_path / "data"), valkey_url=valkey_url,
        )  # fmt: skip
    assert result.returncode == 1, result
    assert f"finished {job}" in result.stdout, result.stdout
    [line] = [line for line in result.stderr.splitlines() if line.startswith(FAILED_LINE)]
    assert "failed through spider errors, more than 10% (--spider-error-share 0.1)" in line
    assert f"`crawlog report --job {job}` says where" in line
    assert line.endswith("(--fail-on spider-errors)"), line


@pytest.mark.timeout(120)
async def test_dead_links_fail_tasks_but_not_the_crawl(
    valkey_url: str, tmp_path: Path, job: str
) -> None:
    async with serve_testsite(pages=10, seed=1) as site:
        result = await crawl(
            site.url + "/", site.url + "/item/1", site.url + "/gone/1", site.url + "/gone/2",
            "--job", job, "--depth", "0", "--data-dir", str(tmp_path / "data"),
            valkey_url=valkey_url,
        )  # fmt: skip
    assert result.returncode == 0, result
    assert "2 done, 2 failed" in result.stdout, result.stdout
    assert FAILED_LINE not in result.stderr, result.stderr
