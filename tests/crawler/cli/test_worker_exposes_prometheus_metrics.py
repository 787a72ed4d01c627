"""--metrics-port: a real worker's and a real projector's Prometheus metrics, over HTTP."""

from __future__ import annotations

import os
import signal
from collections import Counter
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import redis.asyncio as aioredis
from prometheus_client.parser import text_string_to_metric_families

from crawler.cli._argv import crawlog_command
from crawler.testsite import Faults, RunningSite, serve_testsite
from eventlog import (
    EventLog,
    ItemScraped,
    PageFetched,
    RetryScheduled,
    TaskDone,
    TaskFailed,
    TaskQueue,
)
from tests.crawler.cli_run import free_port
from tests.crawler.conftest import ROOT
from tests.projector.test_projector import task_events

pytestmark = pytest.mark.anyio


async def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample at http://127.0.0.1:port/metrics, by name and labels."""
    # trust_env=False: a proxy in the environment must not stand between us and loopback.
    async with httpx.AsyncClient(trust_env=False) as client:
        response = await client.get(f"http://127.0.0.1:{port}/metrics")
    response.raise_for_status()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }


async def scrape_when_up(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    while True:
        try:
            return await scrape(port)
        except httpx.ConnectError:
            await anyio.sleep(0.05)  # not listening yet: poll


def total(samples: dict[Any, float], name: str) -> float:
    return sum(v for (n, _), v in samples.items() if n == name)


# Failures of several kinds (by reason), retries, and slow pages that hold their lease
# across a renewal (every lease / 3 s).
FAULTS = Faults(
    error_500_rate=0.1,
    slow_rate=0.1,
    slow_s=1.5,
    redirect_loop=True,
    robots_disallow="/private",
)


@pytest.fixture
async def site() -> AsyncIterator[RunningSite]:
    async with serve_testsite(pages=60, seed=5, faults=FAULTS) as running:
        yield running


async def test_worker_counts_what_it_wrote_to_the_log(
    site: RunningSite,
    job: str,
    redis_client: aioredis.Redis,
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
) -> None:
    # The breaker set for a site that throws scattered 500s: with the default (5 in a row,
    # 30 s) the test spent most of its time waiting out an open circuit.
    await start_job([site.url + "/"], lease_ms=3000, circuit_failures=50)
    port = free_port()
    await worker_process("w1", "--metrics-port", str(port))
    queue = TaskQueue(redis_client, job, "test")
    log = EventLog(redis_client, job)
    with anyio.fail_after(60):
        samples = await scrape_when_up(port)
        while await queue.remaining() > 0:
            await anyio.sleep(0.05)  # polling the real condition: every task ended
        events = [entry.event for entry in await log.read_range()]
        pages = sum(isinstance(e, PageFetched) for e in events)
        # A task's last step is counted right after its script returns: poll to that.
        while total(samples := await scrape(port), "crawlog_pages_fetched_total") < pages:
            await anyio.sleep(0.05)

    assert pages >= len(site.reachable)
    assert total(samples, "crawlog_pages_fetched_total") == pages
    items = sum(isinstance(e, ItemScraped) for e in events)
    assert total(samples, "crawlog_items_scraped_total") == items > 0
    done = sum(isinstance(e, TaskDone) for e in events)
    assert total(samples, "crawlog_tasks_done_total") == done
    failures = Counter(e.reason for e in events if isinstance(e, TaskFailed))
    for reason, n in failures.items():
        assert samples[("crawlog_task_failures_total", (("reason", reason),))] == n
    assert total(samples, "crawlog_task_failures_total") == sum(failures.values())
    assert len(failures) >= 2, failures
    retries = Counter(e.reason for e in events if isinstance(e, RetryScheduled))
    assert retries["HTTP 500"] > 0
    for reason, n in retries.items():
        assert samples[("crawlog_retries_total", (("reason", reason),))] == n
    assert total(samples, "crawlog_lease_renewals_total") > 0
    assert total(samples, "crawlog_leases_lost_total") == 0
    assert total(samples, "crawlog_reclaims_total") == 0
    assert total(samples, "crawlog_events_appended_total") >= len(events) - 1  # all but the seed
    assert total(samples, "crawlog_event_append_seconds_count") > 0
    finish = samples[("crawlog_event_append_seconds_count", (("step", "finish"),))]
    assert finish == sum(isinstance(e, TaskDone | TaskFailed) for e in events)
    info = [labels for (name, labels) in samples if name == "crawlog_worker_info"]
    assert dict(info[0]) == {"crawl_job": job, "worker": "w1"}


async def test_projector_reports_its_lag_in_events_and_seconds(
    valkey_url: str, job: str, log: EventLog, data_dir: Path
) -> None:
    events = [e for n in range(100) for e in task_events(n)]
    await log.append_many(events)
    port = free_port()
    command = crawlog_command(
        "project", "--job", job, "--data-dir", str(data_dir),
        "--metrics-port", str(port),
    )  # fmt: skip
    env = {**os.environ, "REDIS_URL": valkey_url}
    # A commit interval longer than the test: everything is read, nothing committed.
    held = await anyio.open_process([*command, "--commit-interval", "3600"], env=env, cwd=ROOT)
    try:
        with anyio.fail_after(60):
            samples = await scrape_when_up(port)
            while total(samples, "crawlog_projector_lag_seconds") == 0:
                samples = await scrape(port)
                await anyio.sleep(0.05)
        assert total(samples, "crawlog_projector_lag_events") == len(events)
        assert total(samples, "crawlog_projector_committed_events") == 0
    finally:
        held.send_signal(signal.SIGTERM)  # commits what it read
        await held.wait()
        await held.aclose()

    port = free_port()
    command[-1] = str(port)
    running = await anyio.open_process(command, env=env, cwd=ROOT)
    try:
        with anyio.fail_after(60):
            samples = await scrape_when_up(port)
            await log.append_many(task_events(100))
            events += task_events(100)
            while total(samples, "crawlog_projector_committed_events") < len(events):
                samples = await scrape(port)
                await anyio.sleep(0.05)
        assert total(samples, "crawlog_projector_lag_events") == 0
        assert total(samples, "crawlog_projector_lag_seconds") == 0
    finally:
        running.send_signal(signal.SIGTERM)
        await running.wait()
        await running.aclose()
