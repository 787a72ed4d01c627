"""A paused site's tasks parked by the workers are counted in the Sites page's "parked"
column, as many as the resume then puts back in the queue."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
import redis.asyncio as aioredis

from crawler.testsite import serve_testsite
from eventlog import JobKeys
from tests.crawler.console.conftest import RunningConsole
from tests.crawler.operator_cli import crawlog

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]
SEEDS = 40


async def test_the_parked_column_counts_what_the_resume_puts_back(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    console: Callable[..., Awaitable[RunningConsole]],
    redis_client: aioredis.Redis,
    job: str,
    valkey_url: str,
    data_dir: Path,
) -> None:
    async with serve_testsite(pages=60, seed=1) as site:
        await start_job([f"{site.url}/item/{n}" for n in range(1, SEEDS + 1)])
        host = site.url.removeprefix("http://")
        with anyio.fail_after(60):
            pause = ("pause", "--job", job, "--site", host, "--reason", "wait")
            paused = await crawlog(valkey_url, data_dir, *pause)
            assert paused.returncode == 0, paused.stderr
            await worker_process("w1")
            while await redis_client.zcard(JobKeys(job).parked) < SEEDS:
                await anyio.sleep(0.05)
            running = await console()
            async with running.session(timeout=20) as http:
                page = (await http.get(f"/jobs/{job}/sites")).text
            status = await crawlog(valkey_url, data_dir, "status", "--job", job, "--json")
            resumed = await crawlog(
                valkey_url, data_dir, "resume", "--job", job, "--site", host, "--reason", "go"
            )
    shown = re.search(r'<span class="parked">([\d,]+)</span>', page)
    assert shown is not None, page
    assert int(shown.group(1).replace(",", "")) == SEEDS, page
    # What `status --json` says of the site, and what the resume put back: the same count.
    [row] = status.json()["sites"]
    assert row["parked"] == SEEDS and row["site_paused"] is True, row
    assert f"; {SEEDS} parked task(s) back in the queue" in resumed.stdout, resumed.stdout
