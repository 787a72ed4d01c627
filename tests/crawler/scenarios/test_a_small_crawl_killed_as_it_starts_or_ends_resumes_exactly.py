"""A small crawl SIGKILLed as it starts (its workers and its projector starting side by
side) or as it ends (its last task ended: the workers exiting, the projector's final
commit), then run again with the same command: every seed fetched and done once, the
archive and the live state agreeing (``replay --verify``)."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Literal

import anyio
import pytest
from anyio.abc import Process

from crawler.cli._argv import crawlog_command
from crawler.testsite import serve_testsite
from eventlog import TaskQueue, connect
from projector import Store, read_committed
from tests.crawler.conftest import ROOT, replay_verify

pytestmark = pytest.mark.anyio
SEEDS = ("/", "/item/1", "/item/2")
WORKERS = 2
"""Fewer than the seeds: both are started, and the projector beside them."""
RUN_DEADLINE_S = 150.0
Moment = Literal["started", "ended"]


def children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


async def kill_when(moment: Moment, crawl: Process, queue: TaskQueue) -> list[int]:
    """SIGKILL the crawl (only it: its children die with it) at ``moment``; its children
    then."""
    while True:
        if moment == "started" and len(children(crawl.pid)) >= WORKERS + 1:
            break
        if moment == "ended" and await queue.left() == (0, []):
            break
        await anyio.sleep(0.001)
    orphans = children(crawl.pid)
    crawl.send_signal(signal.SIGKILL)
    await crawl.wait()
    return orphans


@pytest.mark.timeout(180)  # two crawls, each starting three processes, on a loaded machine
@pytest.mark.parametrize("moment", ["started", "ended"])
async def test_a_small_crawl_killed_as_it_starts_or_ends_resumes_exactly(
    moment: Moment, valkey_url: str, data_dir: Path, job: str
) -> None:
    env = {**os.environ, "REDIS_URL": valkey_url}
    async with serve_testsite(pages=5, seed=2) as site, connect(valkey_url) as redis:
        command = crawlog_command(
            "crawl", *(site.url + path for path in SEEDS), "--depth", "0", "--job", job,
            "--workers", str(WORKERS), "--data-dir", str(data_dir),
        )  # fmt: skip
        with anyio.fail_after(RUN_DEADLINE_S):
            first = await anyio.open_process(command, env=env, cwd=ROOT)
            async with first:
                orphans = await kill_when(moment, first, TaskQueue(redis, job, "observer"))
            while any(alive(pid) for pid in orphans):
                await anyio.sleep(0.01)
            again = await anyio.run_process(command, env=env, cwd=ROOT, check=False)
        assert again.returncode == 0, again.stderr.decode()
        assert f"finished {job}" in again.stdout.decode()
        counts = site.fetch_counts()
    pages = {path: n for path, n in counts.items() if path != "/robots.txt"}
    assert set(pages) == set(SEEDS)
    if moment == "ended":
        # Every task had ended at the kill: nothing is fetched again.
        assert set(pages.values()) == {1}, pages
    # Fetched twice only if it was in flight at the kill.
    assert all(n <= 2 for n in pages.values()), pages
    _, state = read_committed(Store(data_dir, job))
    assert state.job.tasks["done"] == len(SEEDS)
    assert b"identical" in await replay_verify(valkey_url, job, data_dir)
