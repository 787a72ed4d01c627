"""``crawlog crawl --sitemap URL`` (an index of gzipped sitemaps) and
``--sitemaps-from-robots`` (or ``seeds.*`` in crawlog.toml): every page the sitemaps list
is enqueued once, with its ``lastmod`` and ``changefreq`` on the task, and fetched once; a
sitemap that cannot be read is said, and the crawl goes on."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import (
    SITEMAP_PATH,
    RunningSite,
    serve_testsite,
    sitemap_changefreq,
    sitemap_children,
    sitemap_lastmod,
)
from eventlog import EventLog, TaskDone, TaskEnqueued
from tests.crawler.cli_run import clean_env, crawlog
from tests.crawler.conftest import ROOT

pytestmark = pytest.mark.anyio
PAGES = 150


async def _crawl(
    site: RunningSite, valkey_url: str, *args: str, cwd: Path = ROOT
) -> tuple[int, str]:
    env = {**os.environ, "REDIS_URL": valkey_url}
    fast = ("--workers", "1", "--concurrency", "8", "--per-host", "8", "--delay", "0")
    command = crawlog_command("crawl", *args, *fast)
    with anyio.fail_after(90):
        result = await anyio.run_process(command, env=env, cwd=cwd, check=False)
    return result.returncode, result.stdout.decode() + result.stderr.decode()


def _sitemap_paths(site: RunningSite) -> dict[str, int]:
    return dict.fromkeys([SITEMAP_PATH, *sitemap_children(site.sitemap)], 1)


async def test_a_sitemap_index_seeds_the_crawl_with_every_page_it_lists(
    valkey_url: str, data_dir: Path, job: str, log: EventLog
) -> None:
    async with serve_testsite(pages=PAGES, seed=5) as site:
        code, out = await _crawl(
            site, valkey_url, "--sitemap", site.url + SITEMAP_PATH, "--depth", "0",
            "--job", job, "--data-dir", str(data_dir),
        )  # fmt: skip
        counts = site.fetch_counts()
        pages = site.sitemap.pages_ok
    assert code == 0, out
    assert f"{len(pages)} URL(s) in scope ({len(pages)} new)" in out
    # No seed but the sitemaps: depth 0 is the pages they list, each once.
    assert counts == {"/robots.txt": 1, **_sitemap_paths(site), **dict.fromkeys(pages, 1)}
    events = [entry.event for entry in await log.read_range()]
    enqueued = [e for e in events if isinstance(e, TaskEnqueued)]
    assert sorted(e.url for e in enqueued) == sorted(site.url + p for p in pages)
    assert all(e.lastmod == sitemap_lastmod(e.url.removeprefix(site.url)) for e in enqueued)
    assert all(e.changefreq == sitemap_changefreq(e.url.removeprefix(site.url)) for e in enqueued)
    assert len({e.task_id for e in events if isinstance(e, TaskDone)}) == len(pages)


async def test_robots_txt_names_the_sitemaps_when_crawlog_toml_says_so(
    valkey_url: str, data_dir: Path, job: str, tmp_path: Path
) -> None:
    (tmp_path / "crawlog.toml").write_text("[seeds]\nsitemaps_from_robots = true\n")
    async with serve_testsite(pages=PAGES, seed=5) as site:
        code, out = await _crawl(
            site, valkey_url, site.url + "/", "--depth", "0",
            "--job", job, "--data-dir", str(data_dir), cwd=tmp_path,
        )  # fmt: skip
        counts = site.fetch_counts()
        pages = site.sitemap.pages_ok
    assert code == 0, out
    # The seed "/" is listed too: it is fetched once, as every other page.
    assert counts == {"/robots.txt": 2, **_sitemap_paths(site), **dict.fromkeys(pages, 1)}


async def test_a_sitemap_that_cannot_be_read_is_said_and_the_crawl_goes_on(
    valkey_url: str, data_dir: Path, job: str
) -> None:
    async with serve_testsite(pages=40, seed=5) as site:
        code, out = await _crawl(
            site, valkey_url, site.url + "/", "--sitemap", site.url + "/nope.xml",
            "--sitemap", site.url + "/robots.txt", "--depth", "0",
            "--job", job, "--data-dir", str(data_dir),
        )  # fmt: skip
    assert code == 0, out
    assert f"sitemap {site.url}/nope.xml not read: HTTP 404" in out
    assert f"sitemap {site.url}/robots.txt not read: not XML" in out
    assert "sitemaps: 0 read, 0 URL(s) in scope (0 new)" in out


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--sitemaps-from-robots",), "no seeds to crawl"),
        (
            ("--sitemaps-from-robots", "--sitemap", "http://shop.test/s.xml"),
            "--sitemaps-from-robots reads the robots.txt of the seeds' sites",
        ),
        (("--sitemap", "ftp://shop.test/sitemap.xml"), "ftp://shop.test/sitemap.xml"),
    ],
)
def test_sitemaps_without_a_seed_site_or_not_http_are_one_line_and_exit_2(
    tmp_path: Path, args: tuple[str, ...], said: str
) -> None:
    env = clean_env(REDIS_URL="redis://127.0.0.1:9")  # never reached: refused before
    result = crawlog("crawl", *args, cwd=tmp_path, env=env)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.count("\n") == 1 and said in result.stderr, result.stderr
