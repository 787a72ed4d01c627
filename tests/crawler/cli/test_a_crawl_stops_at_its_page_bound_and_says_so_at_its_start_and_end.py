"""A crawl is bounded by default (``--max-pages``, `DEFAULT_MAX_PAGES`): it says so as it
starts, with how to raise it; a site larger than the bound gets no more requests than the
bound allows, a spider whose next page never ends stops there too, and the summary and
``crawlog report`` say that the bound stopped the crawl; a sitemap listing more pages than
the bound says how many it left out as it seeds."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from crawler._defaults import DEFAULT_MAX_PAGES
from crawler.cli._argv import crawlog_command
from crawler.testsite import SITEMAP_PATH, serve_testsite, sitemap_children
from tests.crawler.cli_run import clean_env, crawlog

pytestmark = pytest.mark.anyio
BOUND = 10
ROBOTS = "/robots.txt"


async def _crawl(tmp_path: Path, valkey_url: str, *args: str) -> tuple[int, str]:
    command = crawlog_command("crawl", *args, "--data-dir", str(tmp_path / "data"))
    with anyio.fail_after(100):
        ran = await anyio.run_process(
            command, cwd=tmp_path, env=clean_env(REDIS_URL=valkey_url), check=False
        )
    return ran.returncode, ran.stdout.decode() + ran.stderr.decode()


@pytest.mark.timeout(120)  # a crawl's processes on a loaded machine
async def test_a_site_larger_than_the_bound_gets_the_bound_s_pages_and_the_report_says_so(
    valkey_url: str, tmp_path: Path, job: str
) -> None:
    async with serve_testsite(pages=60, seed=2) as site:
        status, out = await _crawl(
            tmp_path, valkey_url, site.url + "/", "--job", job, "--max-pages", str(BOUND)
        )
        counts = site.fetch_counts()
        reachable = len(site.reachable)
    assert status == 0, out
    assert reachable > BOUND
    assert "bound: 10 pages (raise it with --max-pages N, --max-pages 0 for none)" in out, out
    fetched = {path: n for path, n in counts.items() if path != ROBOTS}
    assert sum(fetched.values()) == BOUND, fetched
    assert "bound reached: " in out and "not followed past --max-pages" in out, out
    report = crawlog("report", "--job", job, "--data-dir", str(tmp_path / "data"))
    assert report.returncode == 0, report.stderr
    assert "Bound reached: " in report.stdout, report.stdout


@pytest.mark.timeout(120)
async def test_a_spider_whose_next_page_never_ends_stops_at_the_bound(
    valkey_url: str, tmp_path: Path, job: str
) -> None:
    async with serve_testsite(pages=5, seed=4) as site:
        status, out = await _crawl(
            tmp_path, valkey_url, site.url + "/", "--job", job, "--max-pages", str(BOUND),
            "--spider", "tests.crawler.spiders:SamePageAgainSpider", "--workers", "1",
        )  # fmt: skip
        counts = site.fetch_counts()
    assert status == 0, out
    assert 1 <= counts.get("/", 0) <= BOUND, counts
    assert "bound reached: 1 link(s) not followed past --max-pages" in out, out


@pytest.mark.timeout(120)
async def test_the_default_bound_is_said_at_the_start_and_0_says_there_is_none(
    valkey_url: str, tmp_path: Path, job: str
) -> None:
    async with serve_testsite(pages=5, seed=4) as site:
        _, default = await _crawl(
            tmp_path, valkey_url, site.url + "/", "--job", job, "--depth", "0"
        )
        _, unbounded = await _crawl(
            tmp_path, valkey_url, site.url + "/", "--job", job + "-unbounded", "--depth", "0",
            "--max-pages", "0",
        )  # fmt: skip
    assert f"bound: {DEFAULT_MAX_PAGES:,} pages (raise it with --max-pages N" in default, default
    assert "bound: none (--max-pages 0)" in unbounded, unbounded
    assert "bound reached" not in default + unbounded


@pytest.mark.timeout(120)
async def test_a_sitemap_longer_than_the_bound_seeds_the_bound_and_says_how_many_it_left(
    valkey_url: str, tmp_path: Path, job: str
) -> None:
    async with serve_testsite(pages=60, seed=5) as site:
        status, out = await _crawl(
            tmp_path, valkey_url, "--sitemap", site.url + SITEMAP_PATH, "--depth", "0",
            "--job", job, "--max-pages", str(BOUND),
        )  # fmt: skip
        counts = site.fetch_counts()
        listed = len(site.sitemap.pages_ok)
        sitemaps = {SITEMAP_PATH, *sitemap_children(site.sitemap)}
    assert status == 0, out
    pages = {path: n for path, n in counts.items() if path != ROBOTS and path not in sitemaps}
    assert sum(pages.values()) == BOUND, pages
    assert f"{listed} URL(s) in scope ({BOUND} new)" in out, out
    assert f"; {listed - BOUND} past --max-pages, not enqueued" in out, out
