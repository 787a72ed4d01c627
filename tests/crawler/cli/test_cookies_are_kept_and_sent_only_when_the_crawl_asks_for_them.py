"""``crawlog crawl --cookies`` keeps the cookies a site sets and sends them on the next
requests (of any task, any worker); without it nothing is kept or sent. The spider's
``cookies`` attribute and crawlog.toml's ``cookies`` ask for them too; an option (flag or
file) beats the spider's attribute."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlencode

import anyio
import pytest
import redis.asyncio as aioredis

from crawler.cli._argv import crawlog_command
from crawler.testsite import ECHO_PREFIX, SET_COOKIE_PARAM, serve_testsite
from eventlog import CookieStore, EventLog, ItemScraped, JobKeys
from tests.crawler.cli_run import CLI_TIMEOUT_S, clean_env

pytestmark = pytest.mark.anyio
SPIDERS = "tests.crawler.cookie_spiders"
COOKIE = "flavour=oat; Path=/"
SENT = "flavour=oat"


async def crawled_cookie(
    redis_client: aioredis.Redis, valkey_url: str, cwd: Path, job: str, *args: str
) -> str | None:
    """The Cookie header the spider's second task was sent, in a crawl with ``args``."""
    async with serve_testsite(pages=5) as site:
        seed = f"{site.url}{ECHO_PREFIX}?" + urlencode({SET_COOKIE_PARAM: COOKIE})
        command = crawlog_command(
            "crawl", seed, "--job", job, "--workers", "1", "--data-dir", str(cwd / "data"), *args
        )
        with anyio.fail_after(CLI_TIMEOUT_S):
            ran = await anyio.run_process(
                command, cwd=cwd, env=clean_env(REDIS_URL=valkey_url), check=False
            )
        assert ran.returncode == 0, (ran.stdout + ran.stderr).decode()
    events = await EventLog(redis_client, job).read_range()
    items = [e.event for e in events if isinstance(e.event, ItemScraped)]
    assert len(items) == 1, items
    cookie: str | None = items[0].data["cookie"]
    return cookie


async def test_the_cookies_flag_keeps_a_cookie_for_the_next_task_and_its_absence_sends_none(
    redis_client: aioredis.Redis, valkey_url: str, tmp_path: Path
) -> None:
    spider = f"{SPIDERS}:CookieEchoSpider"
    on, off = "cookies-on", "cookies-off"
    assert (
        await crawled_cookie(
            redis_client, valkey_url, tmp_path, on, "--spider", spider, "--cookies"
        )
        == SENT
    )
    assert await crawled_cookie(redis_client, valkey_url, tmp_path, off, "--spider", spider) is None
    assert await CookieStore(redis_client, JobKeys(off)).sites() == []
    (site,) = await CookieStore(redis_client, JobKeys(on)).sites()
    assert [c.name for c in await CookieStore(redis_client, JobKeys(on)).cookies(site)] == [
        "flavour"
    ]


async def test_the_spider_asks_for_cookies_and_the_flag_overrules_it(
    redis_client: aioredis.Redis, valkey_url: str, tmp_path: Path, job: str
) -> None:
    wants = f"{SPIDERS}:CookieEchoSpiderWithCookies"
    assert await crawled_cookie(redis_client, valkey_url, tmp_path, job, "--spider", wants) == SENT
    refused = await crawled_cookie(
        redis_client, valkey_url, tmp_path, job + "-no", "--spider", wants, "--no-cookies"
    )
    assert refused is None


async def test_crawlog_toml_asks_for_cookies_whatever_the_spider_says(
    redis_client: aioredis.Redis, valkey_url: str, tmp_path: Path, job: str
) -> None:
    (tmp_path / "crawlog.toml").write_text("cookies = true\n")
    plain = f"{SPIDERS}:CookieEchoSpider"
    refuses = f"{SPIDERS}:CookieEchoSpiderWithoutCookies"
    assert await crawled_cookie(redis_client, valkey_url, tmp_path, job, "--spider", plain) == SENT
    spider_says_no = await crawled_cookie(
        redis_client, valkey_url, tmp_path, job + "-no", "--spider", refuses
    )
    assert spider_says_no == SENT
