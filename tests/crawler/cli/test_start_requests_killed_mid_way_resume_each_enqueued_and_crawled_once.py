"""A spider's ``start_requests()`` runs once per job, its position checkpointed with the
job: a crawl SIGKILLed while it runs, run again with the same command, enqueues the start
requests after the saved position only; each start request is enqueued once (one
``TaskEnqueued``) and crawled once (per the site's own request log), with its callback."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import anyio
import pytest
import redis.asyncio as aioredis

from crawler.cli._argv import crawlog_command
from crawler.testsite import serve_testsite
from eventlog import EventLog, ItemScraped, JobKeys, TaskEnqueued, start_requests_done
from tests.crawler.conftest import ROOT
from tests.crawler.start_spiders import KILL_AT_ENV, START_COUNT_ENV, start_path

pytestmark = pytest.mark.anyio
COUNT = 250
"""Three batches of `crawler._start_requests.START_BATCH` (100)."""
KILL_AT = 150
"""Mid-way through the second batch: the first is enqueued and counted, the rest not."""


@pytest.mark.timeout(150)
async def test_a_killed_crawl_resumes_start_requests_after_the_saved_position(
    valkey_url: str,
    data_dir: Path,
    job: str,
    log: EventLog,
    redis_client: aioredis.Redis,
    tmp_path: Path,
) -> None:
    async with serve_testsite(pages=10, seed=2) as site:
        env = {
            **os.environ,
            "REDIS_URL": valkey_url,
            "CRAWLOG_TEST_SITE": site.url,
            START_COUNT_ENV: str(COUNT),
            KILL_AT_ENV: f"{KILL_AT}:{tmp_path / 'killed'}",
        }
        command = crawlog_command(
            "crawl", site.url + "/echo/start/", "--spider", "tests.crawler.start_spiders:Started",
            "--depth", "0", "--workers", "1", "--concurrency", "8", "--per-host", "8",
            "--delay", "0", "--job", job, "--data-dir", str(data_dir),
        )  # fmt: skip
        with anyio.fail_after(140):
            killed = await anyio.run_process(command, env=env, cwd=ROOT, check=False)
            assert killed.returncode == -9, killed.stderr.decode()
            position = await start_requests_done(redis_client, JobKeys(job))
            again = await anyio.run_process(command, env=env, cwd=ROOT, check=False)
        fetched = site.fetch_counts()

    assert position == 100, "the first batch enqueued and counted before the kill"
    assert again.returncode == 0, again.stderr.decode()
    said = again.stdout.decode()
    assert f"start_requests(): {COUNT} request(s), 100 enqueued before, 150 new" in said
    events = [entry.event for entry in await log.read_range()]
    enqueued = Counter(e.url.removeprefix(site.url) for e in events if isinstance(e, TaskEnqueued))
    starts = [start_path(n) for n in range(COUNT)]
    assert {path: enqueued[path] for path in starts} == dict.fromkeys(starts, 1)
    assert {path: fetched.get(path, 0) for path in starts} == dict.fromkeys(starts, 1)
    items = {e.key: e.data for e in events if isinstance(e, ItemScraped)}
    assert {key for key in items if key.startswith("start-")} == {
        f"start-{n}" for n in range(COUNT)
    }
    assert all(items[f"start-{n}"] == {"path": start_path(n), "n": n} for n in range(COUNT))
