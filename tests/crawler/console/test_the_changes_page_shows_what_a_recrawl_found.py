"""The console's Changes page, in a real Chromium, after a crawl and a recrawl of the test
site with pages edited, deleted and added: reached from the panel's navigation, it lists
both runs with their counts, run 2's pages changed, gone and new as ``crawlog changes``
does, and its items changed, removed and added with their data; run 1 is a click away."""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import serve_testsite
from tests.crawler.conftest import ROOT
from tests.crawler.console.conftest import RunningConsole

pytestmark = pytest.mark.anyio
PAGES, CHANGED, DELETED, ADDED = 20, 3, 1, 1


async def _run(valkey_url: str, *args: str) -> str:
    env = {**os.environ, "REDIS_URL": valkey_url}
    result = await anyio.run_process(crawlog_command(*args), env=env, cwd=ROOT, check=False)
    assert result.returncode == 0, result.stdout.decode() + result.stderr.decode()
    return result.stdout.decode()


async def test_the_changes_page_lists_each_run_and_what_the_latest_changed(
    valkey_url: str,
    data_dir: Path,
    job: str,
    console: Callable[..., Awaitable[RunningConsole]],
    browser: Any,
) -> None:
    where = ("--job", job, "--data-dir", str(data_dir))
    fast = ("--workers", "1", "--concurrency", "8", "--per-host", "8", "--delay", "0")
    with anyio.fail_after(120):
        async with serve_testsite(pages=PAGES, seed=3) as site:
            await _run(valkey_url, "crawl", site.url + "/", *where, *fast)
            mutation = site.mutate(CHANGED, DELETED, seed=1, added=ADDED)
            await _run(valkey_url, "recrawl", *where, "--workers", "1")
        listed = await _run(valkey_url, "changes", *where, "--format", "jsonl")
        running = await console()
        page = await browser.new_page()
        await page.goto(running.url)
        await page.get_by_role("link", name="Changes").click()
        await page.wait_for_url(f"**/jobs/{job}/changes")
        runs = await page.locator("#runs tbody tr").all_inner_texts()
        pages = await page.locator("#page-changes tbody tr").all_inner_texts()
        items = await page.locator("#item-changes tbody tr").all_inner_texts()
        counts = await page.locator("#run-counts").inner_text()
        await page.get_by_role("link", name="1", exact=True).click()
        await page.wait_for_url("**/changes?run=1")
        first = await page.locator("#page-changes tbody tr").count()
    assert [row.split("\t")[0].strip(" ◀") for row in runs] == ["1", "2"]
    rows = [json.loads(line) for line in listed.splitlines()]
    assert sorted(p.split("\t")[0] + " " + p.split("\t")[2] for p in pages) == sorted(
        f"{r['change']} {r['url']}" for r in rows
    )
    expected = (
        [("changed", p) for p in mutation.changed]
        + [("removed", p) for p in mutation.deleted]
        + [("added", p) for p in mutation.added]
    )
    shown = sorted((i.split("\t")[0], i.split("\t")[1].removeprefix(site.url)) for i in items)
    assert shown == sorted(expected)
    assert all('"content_hash"' in i.split("\t")[3] for i in items)
    assert f"{CHANGED} changed" in counts and f"{ADDED} added" in counts, counts
    assert first >= PAGES  # every page of run 1 is new
