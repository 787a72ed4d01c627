"""``crawlog recrawl --due`` when no page is due (a first crawl's pages get a day at least):
it says so and when the next page is due, exits 0, and starts no run — no run number is
taken (the record keeps the first crawl's, the log has no task of a run 2), no worker
fetches anything; the intervals it was given are kept for the next runs; the next recrawl
is run 2."""

from __future__ import annotations

import os
import re
import time
from datetime import datetime
from pathlib import Path

import anyio
import pytest
import redis.asyncio as aioredis

from crawler.cli._argv import crawlog_command
from crawler.testsite import serve_testsite
from eventlog import FINISHED, JobKeys, RunRecord, TaskEnqueued, read_run
from projector import Store, log_entries
from tests.crawler.conftest import ROOT

pytestmark = pytest.mark.anyio
PAGES = 8
FAST = ("--workers", "1", "--concurrency", "4")


async def _run(valkey_url: str, *args: str) -> str:
    env = {**os.environ, "REDIS_URL": valkey_url}
    with anyio.fail_after(90):
        result = await anyio.run_process(crawlog_command(*args), env=env, cwd=ROOT, check=False)
    out = result.stdout.decode() + result.stderr.decode()
    assert result.returncode == 0, out
    return result.stdout.decode()


async def _runs_logged(redis_client: aioredis.Redis, data_dir: Path, job: str) -> set[int]:
    entries = await log_entries(redis_client, Store(data_dir, job))
    return {e.event.run for e in entries if isinstance(e.event, TaskEnqueued)}


async def test_nothing_due_starts_no_run_and_says_when_the_next_page_is(
    valkey_url: str, redis_client: aioredis.Redis, data_dir: Path, job: str
) -> None:
    where = ("--job", job, "--data-dir", str(data_dir))
    async with serve_testsite(pages=PAGES, seed=3) as site:
        await _run(valkey_url, "crawl", site.url + "/", *where, *FAST, "--delay", "0")
        crawled = time.time()
        first = len(site.requests)
        out = await _run(valkey_url, "recrawl", *where, "--due", *FAST, "--min-interval", "7200")
        asked = len(site.requests) - first
        record = await read_run(redis_client, JobKeys(job))
        logged = await _runs_logged(redis_client, data_dir, job)
        again = await _run(valkey_url, "recrawl", *where, *FAST)
    said = re.search(r"nothing is due in job \S+; next page due at (\S+) \(in [^)]+\)", out)
    assert said, out
    assert "no run started" in out and "run 2" not in out, out
    # The first interval is the default day: the earliest page is due a day after its fetch.
    next_due = datetime.fromisoformat(said.group(1)).timestamp()
    assert crawled + 86_400 - 120 <= next_due <= crawled + 86_400 + 1, (next_due, crawled)
    assert asked == 0
    assert record == RunRecord(run=1, state=FINISHED, intervals=(86_400.0, 7200.0, 2_592_000.0))
    assert logged == {1}
    assert "finished run 2 of" in again, again
