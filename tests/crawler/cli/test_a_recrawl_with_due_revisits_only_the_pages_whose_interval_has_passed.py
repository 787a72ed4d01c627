"""``crawlog recrawl --due`` after a crawl seeded by the test site's sitemaps, which say a
quarter of the pages change ``always`` and the others ``weekly``: with a least interval of a
second and a most of an hour, ``crawlog status`` soon counts exactly the ``always`` pages
due, and the run revisits exactly those (and the pages the edits among them linked):
a changed due page's link to a page not due does not fetch it; ``changes`` lists only the
revisited pages' verdicts, and ``report`` says what is due."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import SITEMAP_PATH, serve_testsite, sitemap_changefreq, sitemap_children
from tests.crawler.conftest import ROOT, replay_verify

pytestmark = pytest.mark.anyio
PAGES, CHANGED = 40, 12


async def _run(valkey_url: str, *args: str) -> str:
    env = {**os.environ, "REDIS_URL": valkey_url}
    with anyio.fail_after(90):
        result = await anyio.run_process(crawlog_command(*args), env=env, cwd=ROOT, check=False)
    out = result.stdout.decode() + result.stderr.decode()
    assert result.returncode == 0, out
    return result.stdout.decode()


async def _due_count(valkey_url: str, where: tuple[str, ...]) -> int:
    out = await _run(valkey_url, "status", *where)
    found = re.search(r"revisits: (\d+) of (\d+) page\(s\) due now", out)
    assert found, out
    return int(found.group(1))


async def test_only_the_pages_whose_interval_passed_are_revisited(
    valkey_url: str, data_dir: Path, job: str
) -> None:
    where = ("--job", job, "--data-dir", str(data_dir))
    fast = ("--workers", "1", "--concurrency", "8", "--per-host", "8", "--delay", "0")
    intervals = ("--interval", "3600", "--min-interval", "1", "--max-interval", "3600")
    async with serve_testsite(pages=PAGES, seed=3) as site:
        sitemap = site.url + SITEMAP_PATH
        await _run(valkey_url, "crawl", site.url + "/", "--sitemap", sitemap, *where, *fast)
        crawled = time.time()
        listed = set(site.sitemap.pages_ok)
        # The home page is the crawl's seed before it is the sitemaps': no changefreq.
        always = {p for p in listed - {"/"} if sitemap_changefreq(p) == "always"}
        # The job's intervals are its recrawl's: status knows them once a recrawl gave them.
        assert await _due_count(valkey_url, where) == 0  # the defaults: a day at least
        mutation = site.mutate(CHANGED, 0, seed=2, added=2)
        # An 'always' page is due a least interval (1 s) after its fetch, which was before
        # the crawl ended: a set time, not a condition to poll for.
        await anyio.sleep(max(0.0, crawled + 1.0 - time.time()))
        first = len(site.requests)
        out = await _run(valkey_url, "recrawl", *where, "--due", *intervals)
        # The recrawl reads the job's sitemaps again (for pages new to them): not pages.
        read = [r for r in site.requests[first:] if r.path.startswith("/sitemap")]
        revisited = [r for r in site.requests[first:] if r.path != "/robots.txt" and r not in read]
        report = await _run(valkey_url, "report", *where)
        status = await _run(valkey_url, "status", *where)
        changes = await _run(valkey_url, "changes", *where, "--all", "--format", "jsonl")
    assert len(always) >= 5, always
    assert {r.path for r in read} == {SITEMAP_PATH, *sitemap_children(site.sitemap)}
    assert f"{len(listed) - len(always)} not due" in out, out
    linked = {p for p in mutation.added if p in {r.path for r in revisited}}
    assert {r.path for r in revisited} == always | linked
    assert len(revisited) == len(always | linked)
    rows = [json.loads(line) for line in changes.splitlines()]
    assert sorted(row["url"] for row in rows) == sorted(site.url + p for p in always | linked)
    assert {row["url"] for row in rows if row["change"] == "changed"} == {
        site.url + p for p in always & set(mutation.changed)
    }
    # Every page the job has is on the schedule, the weekly ones not due.
    on = re.search(r"revisits: (\d+) of (\d+) page\(s\) due now", status)
    assert on, status
    assert int(on.group(1)) <= len(always | linked)
    assert int(on.group(2)) == len(listed | linked), status
    assert "revisits: " in report and "page(s) due now" in report, report
    assert b"identical" in await replay_verify(valkey_url, job, data_dir)
