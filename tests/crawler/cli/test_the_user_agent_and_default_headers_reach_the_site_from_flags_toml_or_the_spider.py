"""``--user-agent`` and ``--header`` (or ``[http]`` in crawlog.toml) beat the spider's
``user_agent`` and ``headers``, header by header; every request of the crawl carries them.

The witness is the test site's ``/echo`` page (it answers with the headers it received),
kept by the spider as items and read back with ``crawlog export``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler._fetch_spec import DEFAULT_USER_AGENT
from crawler.cli._argv import crawlog_command
from crawler.testsite import serve_testsite
from tests.crawler.cli_run import clean_env
from tests.crawler.identity_spiders import ECHO_CHAIN

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]  # two CLI runs on a loaded machine
SPIDER = "tests.crawler.identity_spiders:EchoSpider"
PLAIN_SPIDER = "tests.crawler.identity_spiders:PlainEchoSpider"


async def crawl_and_export(
    seed: str, job: str, cwd: Path, valkey_url: str, *options: str
) -> list[dict[str, Any]]:
    """The items of a crawl run by ``crawlog crawl SEED OPTIONS``: one per echoed request."""
    env = clean_env(REDIS_URL=valkey_url)
    data = ("--data-dir", str(cwd / "data"))
    crawl = crawlog_command("crawl", seed, "--job", job, "--workers", "1", *data, *options)
    ran = await anyio.run_process(crawl, cwd=cwd, env=env, check=False)
    assert ran.returncode == 0, ran.stderr.decode()
    export = crawlog_command("export", "--job", job, *data, "--what", "items", "--format", "jsonl")
    out = await anyio.run_process([*export, "-"], cwd=cwd, env=env, check=False)
    assert out.returncode == 0, out.stderr.decode()
    # Each line is an item as the spider wrote it.
    items = [json.loads(line) for line in out.stdout.decode().splitlines()]
    assert len(items) == ECHO_CHAIN, items
    return items


async def test_flags_beat_the_spider_header_by_header_and_reach_every_request(
    valkey_url: str, job: str, tmp_path: Path
) -> None:
    async with serve_testsite(pages=5, seed=1) as site:
        with anyio.fail_after(90):
            items = await crawl_and_export(
                site.url + "/echo/1", job, tmp_path, valkey_url,
                "--spider", SPIDER,
                "--header", "Accept-Language: en",
                "--header", "X-Extra:  two words ",
            )  # fmt: skip

    for item in items:
        headers = item["headers"]
        assert headers["user-agent"] == "spider-agent/1.0", item  # the spider's: no flag
        assert headers["accept-language"] == "en", item  # the flag's, over the spider's
        assert headers["x-from-spider"] == "spider", item
        assert headers["x-extra"] == "two words", item


async def test_crawlog_toml_beats_the_spider_header_by_header(
    valkey_url: str, job: str, tmp_path: Path
) -> None:
    (tmp_path / "crawlog.toml").write_text(
        '[http]\nuser_agent = "toml-agent/2.0 (+http://example.test/bot)"\n\n'
        '[http.headers]\nX-From-Toml = "toml"\nX-From-Spider = "overridden"\n'
    )
    async with serve_testsite(pages=5, seed=1) as site:
        with anyio.fail_after(90):
            items = await crawl_and_export(
                site.url + "/echo/1", job, tmp_path, valkey_url, "--spider", SPIDER
            )

    for item in items:
        headers = item["headers"]
        assert headers["user-agent"] == "toml-agent/2.0 (+http://example.test/bot)", item
        assert headers["x-from-toml"] == "toml", item
        assert headers["x-from-spider"] == "overridden", item
        assert headers["accept-language"] == "fr", item  # the spider's, not overridden


async def test_with_no_setting_anywhere_crawlog_s_own_user_agent_is_sent(
    valkey_url: str, job: str, tmp_path: Path
) -> None:
    async with serve_testsite(pages=5, seed=1) as site:
        with anyio.fail_after(90):
            items = await crawl_and_export(
                site.url + "/echo/1", job, tmp_path, valkey_url, "--spider", PLAIN_SPIDER
            )

    for item in items:
        assert item["headers"]["user-agent"] == DEFAULT_USER_AGENT, item
        assert "x-from-spider" not in item["headers"], item
