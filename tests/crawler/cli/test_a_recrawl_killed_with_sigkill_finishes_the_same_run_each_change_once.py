"""A ``crawlog recrawl`` killed with SIGKILL (the command, its workers and its projector)
part way through its run, then run again: the second command finishes the same run (run 2,
never a third), ``crawlog changes`` lists each edited and deleted page once, and
``replay --verify`` holds across both runs; every event of a run-2 task says run 2."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import anyio
import pytest
import redis.asyncio as aioredis

from crawler.cli._argv import crawlog_command
from crawler.testsite import serve_testsite
from eventlog import PageFetched, TaskClaimed, TaskDone, TaskEnqueued, TaskEvent
from projector import Store, log_entries
from tests.crawler.conftest import ROOT, replay_verify

pytestmark = pytest.mark.anyio
PAGES, CHANGED, DELETED = 60, 5, 2


async def _run(valkey_url: str, *args: str) -> str:
    env = {**os.environ, "REDIS_URL": valkey_url}
    with anyio.fail_after(120):
        result = await anyio.run_process(crawlog_command(*args), env=env, cwd=ROOT, check=False)
    out = result.stdout.decode() + result.stderr.decode()
    assert result.returncode == 0, out
    return result.stdout.decode()


async def test_a_recrawl_killed_part_way_is_finished_as_the_same_run_by_the_next(
    valkey_url: str, data_dir: Path, job: str, redis_client: aioredis.Redis
) -> None:
    env = {**os.environ, "REDIS_URL": valkey_url}
    where = ("--job", job, "--data-dir", str(data_dir))
    # One request at a time, spaced: the kill lands with the run part done.
    polite = ("--workers", "1", "--concurrency", "4", "--per-host", "1", "--delay", "0.05")
    async with serve_testsite(pages=PAGES, seed=4) as site:
        await _run(valkey_url, "crawl", site.url + "/", *where, *polite, "--lease", "2")
        first = len(site.requests)
        pages = first - 1  # all but robots.txt
        mutation = site.mutate(CHANGED, DELETED, seed=2)
        recrawl = crawlog_command("recrawl", *where, "--workers", "1")
        with anyio.fail_after(60):
            killed = await anyio.open_process(recrawl, env=env, cwd=ROOT, start_new_session=True)
            while len(site.requests) < first + pages // 3:
                await anyio.sleep(0.01)
            os.killpg(killed.pid, signal.SIGKILL)  # the recrawl, its worker, its projector
            await killed.wait()
            await killed.aclose()
        before_rerun = len(site.requests)
        out = await _run(valkey_url, "recrawl", *where, "--workers", "1")
        listed = await _run(valkey_url, "changes", *where, "--format", "jsonl")
        every = await _run(valkey_url, "changes", *where, "--all", "--format", "jsonl")
    assert before_rerun < first + pages, "the kill came before the run's end"
    assert "finished run 2" in out, out
    rows = [json.loads(line) for line in listed.splitlines()]
    assert sorted((row["url"], row["change"]) for row in rows) == sorted(
        [(site.url + p, "changed") for p in mutation.changed]
        + [(site.url + p, "gone") for p in mutation.deleted]
    )
    verdicts = [json.loads(line) for line in every.splitlines()]
    # Every page the first run reached has one verdict in run 2, whichever command made it.
    assert len(verdicts) == len({row["url"] for row in verdicts}) == pages
    assert {row["run"] for row in verdicts} == {2}
    # In the log itself, not only as listed: one verdict of each page in run 2.
    entries = await log_entries(redis_client, Store(data_dir, job))
    found = [
        e.event.url
        for e in entries
        if isinstance(e.event, PageFetched) and e.event.run == 2 and e.event.change is not None
    ]
    assert sorted(found) == sorted(set(found))
    assert len(found) == pages
    # The run is part of every event of its tasks: claims, pages, items, ends.
    second = {
        e.event.task_id for e in entries if isinstance(e.event, TaskEnqueued) and e.event.run == 2
    }
    of_second = [
        e.event for e in entries if isinstance(e.event, TaskEvent) and e.event.task_id in second
    ]
    assert len(second) >= pages and {type(e) for e in of_second} >= {
        TaskClaimed,
        PageFetched,
        TaskDone,
    }
    assert {e.run for e in of_second} == {2}
    assert b"identical" in await replay_verify(valkey_url, job, data_dir)
