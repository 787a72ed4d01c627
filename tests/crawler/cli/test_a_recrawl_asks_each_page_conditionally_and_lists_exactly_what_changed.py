"""``crawlog recrawl`` after a full crawl of the test site, with 5 item pages edited and 2
deleted between the runs, 2 of the edits linking a page that did not exist: every page the
first run reached is asked for again with its validators (the site's request log shows the
conditional requests and its 304s), only the edited pages come back in full, the new pages
are crawled as in a first run, and ``crawlog changes`` lists exactly the 5 changed, the 2
gone and the 2 new, once each, in run 2; a third run finds nothing changed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import serve_testsite
from tests.crawler.conftest import ROOT, replay_verify

pytestmark = pytest.mark.anyio
PAGES, CHANGED, DELETED, ADDED = 40, 5, 2, 2


async def _run(valkey_url: str, *args: str) -> str:
    env = {**os.environ, "REDIS_URL": valkey_url}
    with anyio.fail_after(90):
        result = await anyio.run_process(crawlog_command(*args), env=env, cwd=ROOT, check=False)
    out = result.stdout.decode() + result.stderr.decode()
    assert result.returncode == 0, out
    return result.stdout.decode()


async def test_a_recrawl_fetches_in_full_only_the_edited_pages_and_lists_each_change_once(
    valkey_url: str, data_dir: Path, job: str
) -> None:
    where = ("--job", job, "--data-dir", str(data_dir))
    fast = ("--workers", "1", "--concurrency", "8", "--per-host", "8", "--delay", "0")
    async with serve_testsite(pages=PAGES, seed=3) as site:
        await _run(valkey_url, "crawl", site.url + "/", *where, *fast)
        first = len(site.requests)
        reached = {r.path for r in site.requests if r.status == 200}
        mutation = site.mutate(CHANGED, DELETED, seed=1, added=ADDED)
        out = await _run(valkey_url, "recrawl", *where, "--workers", "1")
        second = site.requests[first:]
        listed = await _run(valkey_url, "changes", *where, "--format", "jsonl")
        third_from = len(site.requests)
        await _run(valkey_url, "recrawl", *where, "--workers", "1")
        third = site.requests[third_from:]
        unchanged = await _run(valkey_url, "changes", *where, "--run", "3", "--format", "jsonl")
    assert "finished run 2" in out, out
    pages = [r for r in second if r.path != "/robots.txt"]
    # Each page of the first run asked for once more, and the pages the edits linked.
    assert len(mutation.added) == ADDED
    assert sorted(r.path for r in pages) == sorted(reached - {"/robots.txt"} | set(mutation.added))
    by_status: dict[int, set[str]] = {}
    for r in pages:
        by_status.setdefault(r.status, set()).add(r.path)
    assert by_status[200] == set(mutation.changed) | set(mutation.added)
    assert by_status[404] == set(mutation.deleted)
    assert by_status[304] == reached - {"/robots.txt"} - set(mutation.changed) - set(
        mutation.deleted
    )
    assert all(r.size == 0 for r in pages if r.status == 304)
    rows = [json.loads(line) for line in listed.splitlines()]
    assert sorted((row["url"], row["change"]) for row in rows) == sorted(
        [(site.url + p, "changed") for p in mutation.changed]
        + [(site.url + p, "gone") for p in mutation.deleted]
        + [(site.url + p, "new") for p in mutation.added]
    )
    assert all(row["run"] == 2 for row in rows)
    changed = [row for row in rows if row["change"] == "changed"]
    assert all(row["previous_hash"] and row["new_hash"] != row["previous_hash"] for row in changed)
    # Run 3: nothing changed since (the new pages are revisited too); the deleted pages are
    # not asked for again.
    assert {r.status for r in third if r.path != "/robots.txt"} == {304}
    assert not {r.path for r in third} & set(mutation.deleted)
    assert set(mutation.added) <= {r.path for r in third}
    assert unchanged == ""
    assert b"identical" in await replay_verify(valkey_url, job, data_dir)
