"""``crawlog crawl -a key=value`` (Scrapy's spider arguments): every worker's spider gets
them, as attributes or as keywords of its own ``__init__``; they are stored with the job,
so a resume with other arguments is refused naming them; a malformed one is one line."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import RunningSite, serve_testsite
from eventlog import EventLog, ItemScraped
from tests.crawler.cli_run import clean_env, crawlog
from tests.crawler.conftest import ROOT

pytestmark = pytest.mark.anyio


async def _crawl(site: RunningSite, valkey_url: str, *args: str) -> tuple[int, str]:
    env = {**os.environ, "REDIS_URL": valkey_url}
    fast = ("--workers", "2", "--concurrency", "4", "--per-host", "4", "--delay", "0")
    command = crawlog_command("crawl", site.url + "/", "--depth", "1", *args, *fast)
    with anyio.fail_after(90):
        result = await anyio.run_process(command, env=env, cwd=ROOT, check=False)
    return result.returncode, result.stdout.decode() + result.stderr.decode()


@pytest.mark.timeout(120)
async def test_every_item_carries_the_arguments_and_a_resume_with_others_is_refused(
    valkey_url: str, data_dir: Path, job: str, log: EventLog
) -> None:
    common = ("--job", job, "--data-dir", str(data_dir))
    spider = ("--spider", "tests.crawler.argument_spiders:Tagged")
    async with serve_testsite(pages=30, seed=2) as site:
        code, out = await _crawl(
            site, valkey_url, *spider, "-a", "label=first", "-a", "limit=5", *common
        )
        assert code == 0, out
        code_again, again = await _crawl(
            site, valkey_url, *spider, "-a", "label=second", "-a", "limit=5", *common
        )
    items = [e.event for e in await log.read_range() if isinstance(e.event, ItemScraped)]
    assert len(items) > 1
    assert {(e.data["label"], e.data["limit"]) for e in items} == {("first", "5")}
    assert code_again == 2, again
    assert "-a: label=first limit=5 in the job, label=second limit=5 asked" in again


@pytest.mark.timeout(120)
async def test_a_spider_taking_an_argument_in_its_init_gets_it_by_name(
    valkey_url: str, data_dir: Path, job: str, log: EventLog
) -> None:
    async with serve_testsite(pages=10, seed=2) as site:
        code, out = await _crawl(
            site, valkey_url, "--spider", "tests.crawler.argument_spiders:Named",
            "-a", "category=books", "--job", job, "--data-dir", str(data_dir),
        )  # fmt: skip
    assert code == 0, out
    items = [e.event for e in await log.read_range() if isinstance(e.event, ItemScraped)]
    assert items and {e.data["category"] for e in items} == {"BOOKS"}


@pytest.mark.parametrize(
    ("argument", "said"),
    [
        ("label", "expected KEY=VALUE"),
        ("2x=1", "expected KEY=VALUE"),
        ("parse=1", "parse is a method of the spider"),
    ],
)
def test_a_malformed_argument_is_one_line(tmp_path: Path, argument: str, said: str) -> None:
    result = crawlog(
        "crawl", "http://127.0.0.1:9/", "--spider", "tests.crawler.argument_spiders:Tagged",
        "-a", argument, "--data-dir", str(tmp_path), env=clean_env(),
    )  # fmt: skip
    assert result.returncode == 2, result
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and said in lines[0], result.stderr
