"""A page whose task failed after its fetch (the spider raised) was not taken in: the next
recrawl asks for it without validators and parses it, so once the spider is fixed the
page's items come. Before, the revisit asked with that failed fetch's validators, the page
was ``unchanged`` and not parsed, and its items never came."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from tests.crawler.cli_run import CLI_TIMEOUT_S, clean_env, crawlog_done
from tests.crawler.hostile_site import Route, html_page, serve_hostile
from tests.crawler.recrawl_spiders import BROKEN_ENV

pytestmark = pytest.mark.anyio
SPIDER = ("--spider", "tests.crawler.recrawl_spiders:BuggySpider")
ETAG = (("ETag", '"v1"'),)


def page(text: str, *links: str) -> Route:
    return html_page(text, *links, headers=ETAG)


async def test_a_page_the_spider_failed_on_is_parsed_once_the_spider_is_fixed(
    valkey_url: str, data_dir: Path, job: str, tmp_path: Path
) -> None:
    broken = tmp_path / "broken.txt"
    broken.write_text("/b\n")
    env = clean_env(REDIS_URL=valkey_url, CRAWLOG_HOME=str(data_dir), **{BROKEN_ENV: str(broken)})
    where = ("--job", job, "--workers", "1")
    routes = {"/": page("home", "/a", "/b"), "/a": page("a"), "/b": page("b")}
    async with serve_hostile(routes) as site:
        command = crawlog_command("crawl", site.url + "/", *where, *SPIDER, "--delay", "0")
        with anyio.fail_after(CLI_TIMEOUT_S):
            crawl = await anyio.run_process(command, env=env, check=False)
        assert "failed through spider errors" in crawl.stderr.decode(), crawl.stderr
        broken.unlink()  # the spider fixed
        await crawlog_done("recrawl", *where, env=env)
        pages = await crawlog_done("changes", "--job", job, "--format", "jsonl", env=env)
        items = await crawlog_done("changes", "--job", job, "--items", "--format", "jsonl", env=env)

    assert [(r["url"], r["change"]) for r in map(json.loads, pages.splitlines())] == [
        (site.url + "/b", "changed")
    ], pages
    assert [(r["key"], r["change"]) for r in map(json.loads, items.splitlines())] == [
        (site.url + "/b", "added")
    ], items
