"""A worker told to exit when the job is done, holding no task while another worker runs
the job's last one, exits soon after that task ends the job, not when its blocking claim
gives up: no task's end wakes that claim, and every crawl (and recrawl) waited it out
before its summary."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler import _worker
from crawler._spider import SiteSpider
from crawler._worker import Worker, WorkerOptions
from crawler.testsite import Faults, serve_testsite
from eventlog import connect

pytestmark = pytest.mark.anyio

LONG_SOCKET_TIMEOUT_S = 240.0
"""Lets a claim block for half of this (``max_block_ms``): far longer than the test waits."""
CLAIM_BLOCKS_MS = int(LONG_SOCKET_TIMEOUT_S * 1000)
PAGE_ANSWERED_AFTER_S = 1.0
"""The one page's answer comes this late: the second worker is idle, blocked, meanwhile."""
RUN_DEADLINE_S = 60.0
EXITS_WITHIN_S = 10.0
"""After the first worker's exit: far under the claim's block, well over a few looks."""


async def test_an_idle_worker_exits_soon_after_another_worker_s_last_task_ends_the_job(
    valkey_url: str,
    job: str,
    tmp_path: Path,
    start_job: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_worker, "IDLE_BLOCK_MS", CLAIM_BLOCKS_MS)
    faults = Faults(slow_rate=1.0, slow_s=PAGE_ANSWERED_AFTER_S)
    exited: dict[str, float] = {}
    async with (
        serve_testsite(pages=5, seed=1, faults=faults) as site,
        connect(valkey_url, socket_timeout_s=LONG_SOCKET_TIMEOUT_S) as first,
        connect(valkey_url, socket_timeout_s=LONG_SOCKET_TIMEOUT_S) as second,
    ):
        config = await start_job([site.url + "/"], max_depth=0, obey_robots=False)

        async def run(client: Any, name: str) -> None:
            worker = Worker(
                client,
                job,
                name,
                config,
                SiteSpider(),
                data_dir=tmp_path,
                options=WorkerOptions(exit_when_done=True),
            )
            await worker.run()
            exited[name] = time.monotonic()

        with anyio.fail_after(RUN_DEADLINE_S):
            async with anyio.create_task_group() as tg:
                tg.start_soon(run, first, "w1")
                # w1 holds the job's only task (its request is at the site): w2 finds
                # nothing to claim and blocks.
                while not site.answering("/"):
                    await anyio.sleep(0.01)
                tg.start_soon(run, second, "w2")
        assert await second.ping()  # the claim cut short left no half-read reply
    assert exited["w2"] - exited["w1"] < EXITS_WITHIN_S
    assert [r.path for r in site.requests] == ["/"]
