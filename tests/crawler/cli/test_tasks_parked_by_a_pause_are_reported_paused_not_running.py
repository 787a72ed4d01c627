"""Tasks a worker sets aside because their site (or the job) is paused are reported as
paused, held by nobody: not as "running" with no lease behind them. Lifting the pause makes
them pending again, and the crawl ends with every task done and nothing refused."""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
import redis.asyncio as aioredis

from crawler.testsite import Faults, serve_testsite
from eventlog import CheckpointSaved, EventLog, JobKeys, TaskQueue
from tests.crawler.conftest import run_projector
from tests.crawler.operator_cli import crawlog

pytestmark = pytest.mark.anyio


async def _wait_until(check: Callable[[], Any]) -> None:
    while not await check():
        await anyio.sleep(0.05)


async def test_a_site_pause_parks_its_tasks_as_paused_and_its_resume_makes_them_pending(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    redis_client: aioredis.Redis,
    job: str,
    valkey_url: str,
    data_dir: Path,
) -> None:
    keys = JobKeys(job)
    async with serve_testsite(pages=30, seed=1) as site:
        await start_job([site.url + "/"], max_depth=1)
        run = lambda *args: crawlog(valkey_url, data_dir, *args, "--job", job)  # noqa: E731
        with anyio.fail_after(90):
            paused = await run("pause", "--site", site.url, "--reason", "they asked", "--by", "bob")
            assert paused.returncode == 0, paused.stderr
            worker = await worker_process("w1")
            await _wait_until(lambda: redis_client.zcard(keys.parked))
            worker.send_signal(signal.SIGTERM)
            assert await worker.wait() == 0
            fetched_while_paused = site.fetch_counts()
            await run_projector(valkey_url, job, data_dir)
            during = (await run("report", "--json")).json()
            status = (await run("status", "--json")).json()
            resumed = await run("resume", "--site", site.url, "--reason", "ok", "--by", "bob")
            assert resumed.returncode == 0, resumed.stderr
            await run_projector(valkey_url, job, data_dir)
            lifted = (await run("report", "--json")).json()
            assert await (await worker_process("w2", "--exit-when-done")).wait() == 0
            await run_projector(valkey_url, job, data_dir)
            after = (await run("report", "--json")).json()
    assert fetched_while_paused.get("/", 0) == 0, "the paused site was fetched"
    held = during["totals"]["by_status"]
    assert (held["running"], held["paused"], held["pending"]) == (0, 1, 0), held
    assert during["stuck"]["count"] == 0
    [site_row] = during["sites"]
    assert site_row["paused"] and site_row["by_status"]["paused"] == 1
    assert (status["total"]["running"], status["total"]["paused"]) == (0, 1)
    assert status["sites"][0]["site_paused"] and status["sites"][0]["paused"]
    assert lifted["totals"]["by_status"]["pending"] == 1
    assert lifted["totals"]["by_status"]["paused"] == 0
    totals = after["totals"]["by_status"]
    assert totals["done"] == after["totals"]["tasks"] > 1
    assert after["anomalies"]["total"] == 0, after["anomalies"]


async def test_a_listing_handed_back_by_a_job_pause_is_paused_not_running(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    make_queue: Callable[..., TaskQueue],
    log: EventLog,
    job: str,
    valkey_url: str,
    data_dir: Path,
) -> None:
    # Every page answers late, so the pause comes between two pages of the listing's task.
    async with serve_testsite(pages=400, seed=3, faults=Faults(slow_rate=1.0, slow_s=1.0)) as site:
        sitemap = site.sitemap
        longest = max(range(len(sitemap.categories)), key=sitemap.listing_pages)
        assert sitemap.listing_pages(longest) >= 5
        listing = f"/list/{sitemap.categories[longest]}?page=1"
        await start_job(
            [site.url + listing], spider="tests.crawler.spiders:ListingSpider", max_depth=0
        )
        queue = make_queue("observer")
        run = lambda *args: crawlog(valkey_url, data_dir, *args, "--job", job)  # noqa: E731
        with anyio.fail_after(90):
            worker = await worker_process("w1")
            await _wait_until(lambda: _checkpointed(log))
            paused = await run("pause", "--reason", "deploy", "--by", "carol")
            assert paused.returncode == 0, paused.stderr
            # Handed back at its next page boundary: back in its lane, held by nobody.
            await _wait_until(lambda: _holds_nothing(queue, "w1"))
            worker.send_signal(signal.SIGTERM)
            assert await worker.wait() == 0
            await run_projector(valkey_url, job, data_dir)
            during = (await run("report", "--json")).json()
            resumed = await run("resume", "--reason", "deployed", "--by", "carol")
            assert resumed.returncode == 0, resumed.stderr
            assert await (await worker_process("w2", "--exit-when-done")).wait() == 0
            await run_projector(valkey_url, job, data_dir)
            after = (await run("report", "--json")).json()
    held = during["totals"]["by_status"]
    assert (held["running"], held["paused"]) == (0, 1), held
    assert after["totals"]["by_status"]["done"] == 1
    assert after["anomalies"]["total"] == 0, after["anomalies"]


async def _checkpointed(log: EventLog) -> bool:
    return any(isinstance(e.event, CheckpointSaved) for e in await log.read_range())


async def _holds_nothing(queue: TaskQueue, worker: str) -> bool:
    return not await queue.leases_of(worker)
