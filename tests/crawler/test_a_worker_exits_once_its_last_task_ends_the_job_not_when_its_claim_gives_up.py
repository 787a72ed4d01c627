"""A worker told to exit when the job is done exits once its last task in flight ends the
job, not when the blocking claim it sent meanwhile gives up: every crawl waits for its
workers to exit before its summary, so that wait was part of every crawl's time."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler import _worker
from crawler._spider import SiteSpider
from crawler._worker import Worker, WorkerOptions
from crawler.testsite import serve_testsite
from eventlog import connect

pytestmark = pytest.mark.anyio

LONG_SOCKET_TIMEOUT_S = 240.0
"""Lets a claim block for half of this (``max_block_ms``): far longer than the test waits."""
CLAIM_BLOCKS_MS = int(LONG_SOCKET_TIMEOUT_S * 1000)
RUN_DEADLINE_S = 60.0


async def test_a_worker_whose_last_task_ends_the_job_exits_without_waiting_out_its_claim(
    valkey_url: str,
    job: str,
    tmp_path: Path,
    start_job: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The claim sent while the page is fetched blocks for two minutes: the worker must not
    # wait for it to return once the job is done.
    monkeypatch.setattr(_worker, "IDLE_BLOCK_MS", CLAIM_BLOCKS_MS)
    async with (
        serve_testsite(pages=5, seed=1) as site,
        connect(valkey_url, socket_timeout_s=LONG_SOCKET_TIMEOUT_S) as client,
    ):
        config = await start_job([site.url + "/"], max_depth=0, obey_robots=False)
        worker = Worker(
            client,
            job,
            "w1",
            config,
            SiteSpider(),
            data_dir=tmp_path,
            options=WorkerOptions(exit_when_done=True),
        )
        with anyio.fail_after(RUN_DEADLINE_S):
            stats = await worker.run()
        # Still usable: the claim cut short left no half-read reply on a connection.
        assert await client.ping()
    assert stats.tasks_done == 1
    assert [r.path for r in site.requests] == ["/"]
