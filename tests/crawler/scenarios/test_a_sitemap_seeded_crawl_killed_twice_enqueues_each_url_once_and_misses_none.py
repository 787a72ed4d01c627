"""A crawl seeded by a sitemap index, its whole process tree SIGKILLed while it reads the
sitemaps and again while its workers fetch, then run again with the same command: each URL
the sitemaps list is enqueued exactly once, every one ends done, and only the pages in
flight at a kill are fetched again."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import SITEMAP_PATH, RunningSite, serve_testsite, sitemap_children
from eventlog import EventLog, TaskDone, TaskEnqueued
from tests.crawler.conftest import ROOT, replay_verify

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(180)]
WORKERS, CONCURRENCY = 2, 4


async def _killed_when(command: list[str], env: dict[str, str], done: Callable[[], bool]) -> None:
    process = await anyio.open_process(command, env=env, cwd=ROOT, start_new_session=True)
    while not done() and process.returncode is None:
        await anyio.sleep(0.001)
    os.killpg(process.pid, signal.SIGKILL)  # the crawl, its workers, its projector
    await process.wait()
    await process.aclose()


async def test_each_listed_url_is_enqueued_once_across_kills(
    valkey_url: str, data_dir: Path, job: str, log: EventLog
) -> None:
    env = {**os.environ, "REDIS_URL": valkey_url}
    async with serve_testsite(pages=250, seed=8) as site:
        children = sitemap_children(site.sitemap)
        command = crawlog_command(
            "crawl", "--sitemap", site.url + SITEMAP_PATH, "--depth", "0", "--job", job,
            "--workers", str(WORKERS), "--concurrency", str(CONCURRENCY),
            "--per-host", "8", "--delay", "0", "--data-dir", str(data_dir),
        )  # fmt: skip
        pages = site.sitemap.pages_ok

        def served(path: str) -> Callable[[], bool]:
            return lambda: any(r.path == path for r in site.requests)

        def fetched(share: float, site: RunningSite = site) -> Callable[[], bool]:
            return lambda: len({r.path for r in site.requests} & pages) >= share * len(pages)

        with anyio.fail_after(150):
            await _killed_when(command, env, served(children[1]))  # while reading them
            await _killed_when(command, env, fetched(0.5))  # while fetching the pages
            again = await anyio.run_process(command, env=env, cwd=ROOT, check=False)
        assert again.returncode == 0, again.stderr.decode()
        counts = site.fetch_counts()
    events = [entry.event for entry in await log.read_range()]
    enqueued = [e.url for e in events if isinstance(e, TaskEnqueued)]
    assert sorted(enqueued) == sorted(site.url + p for p in pages)  # once each, none missed
    assert len({e.task_id for e in events if isinstance(e, TaskDone)}) == len(pages)
    twice = [p for p in pages if counts.get(p, 0) > 1]
    assert len(twice) <= WORKERS * CONCURRENCY, "only pages in flight at the kill again"
    assert b"identical" in await replay_verify(valkey_url, job, data_dir)
