"""A spider names what a recrawl compares: with ``change_ignore`` leaving out the test
site's revision comments, an edit that adds only that comment is ``unchanged`` (not parsed)
and one that also adds a link is ``changed``; with ``change_region = "title"``, no edit of
the test site is a change (its titles stay), so the pages the edits link are not found;
a deleted page is gone either way."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import serve_testsite
from tests.crawler.conftest import ROOT

pytestmark = pytest.mark.anyio
PAGES, CHANGED, DELETED, ADDED = 30, 5, 1, 2


async def _run(valkey_url: str, *args: str) -> str:
    env = {**os.environ, "REDIS_URL": valkey_url}
    with anyio.fail_after(90):
        result = await anyio.run_process(crawlog_command(*args), env=env, cwd=ROOT, check=False)
    assert result.returncode == 0, result.stdout.decode() + result.stderr.decode()
    return result.stdout.decode()


@pytest.mark.parametrize("spider", ["TimestampBlindSpider", "TitleOnlySpider"])
async def test_only_what_the_spider_compares_makes_a_change(
    valkey_url: str, data_dir: Path, job: str, spider: str
) -> None:
    where = ("--job", job, "--data-dir", str(data_dir))
    fast = ("--workers", "1", "--concurrency", "8", "--per-host", "8", "--delay", "0")
    named = ("--spider", f"tests.crawler.spiders:{spider}")
    async with serve_testsite(pages=PAGES, seed=3) as site:
        await _run(valkey_url, "crawl", site.url + "/", *where, *fast, *named)
        mutation = site.mutate(CHANGED, DELETED, seed=1, added=ADDED)
        await _run(valkey_url, "recrawl", *where, "--workers", "1")
        listed = await _run(valkey_url, "changes", *where, "--all", "--format", "jsonl")
    verdicts = {row["url"]: row["change"] for row in map(json.loads, listed.splitlines())}
    linking = set(mutation.changed[:ADDED])  # the edits that link a new page
    assert len(mutation.added) == ADDED
    assert {verdicts[site.url + p] for p in mutation.deleted} == {"gone"}
    if spider == "TimestampBlindSpider":
        assert {u for u, c in verdicts.items() if c == "changed"} == {site.url + p for p in linking}
        assert {u for u, c in verdicts.items() if c == "new"} == {
            site.url + p for p in mutation.added
        }
    else:
        assert set(verdicts.values()) == {"unchanged", "gone"}
    for path in set(mutation.changed) - linking:
        assert verdicts[site.url + path] == "unchanged"
