"""A task paused by an operator is paused in the log already: the worker that comes upon
it parks it without writing the claim the fold would refuse ("claimed while paused": an
anomaly in every report, for no fault of anyone's)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
import redis.asyncio as aioredis

from crawler._urls import fingerprint
from crawler.testsite import serve_testsite
from eventlog import EventLog, JobKeys
from projector._fold import fold
from tests.crawler.operator_cli import crawlog

pytestmark = pytest.mark.anyio


async def test_parking_an_operator_paused_task_refuses_nothing(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    redis_client: aioredis.Redis,
    log: EventLog,
    job: str,
    valkey_url: str,
    data_dir: Path,
) -> None:
    async with serve_testsite(pages=20, seed=1) as site:
        seed = site.url + "/"
        await start_job([seed], max_depth=0)
        run = lambda *args: crawlog(valkey_url, data_dir, *args, "--job", job)  # noqa: E731
        with anyio.fail_after(60):
            paused = await run("pause", "--task", seed, "--reason", "look first", "--by", "dan")
            assert paused.returncode == 0, paused.stderr
            worker = await worker_process("w1", "--exit-when-done")
            while not await redis_client.zcard(JobKeys(job).parked):
                await anyio.sleep(0.05)
            resumed = await run("resume", "--task", fingerprint(seed), "--reason", "looked")
            assert resumed.returncode == 0, resumed.stderr
            assert await worker.wait() == 0
    state = fold(await log.read_range())
    assert state.tasks[fingerprint(seed)].status == "done"
    assert state.job.anomalies == {}, state.anomalies
