"""What a crawl does with listings, robots.txt, throttling, failures and pauses."""

from __future__ import annotations

import signal
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import Faults, serve_testsite
from eventlog import (
    CircuitClosed,
    CircuitOpened,
    EventLog,
    JobKeys,
    PageFetched,
    RetryScheduled,
    SitePaused,
    SiteResumed,
    TaskFailed,
    apply_control,
)
from tests.crawler.spiders import KILL_AT_PAGE_ENV

pytestmark = pytest.mark.anyio


async def events_of(log: EventLog) -> list[Any]:
    return [e.event for e in await log.read_range()]


async def test_a_listing_killed_at_page_k_resumes_at_page_k(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    log: EventLog,
    tmp_path: Path,
) -> None:
    async with serve_testsite(pages=400, seed=3) as site:
        listing = next(p for p in site.sitemap.reachable if p.endswith("?page=1"))
        pages = site.sitemap.listing_pages(
            site.sitemap.categories.index(listing.split("/")[2].split("?")[0])
        )
        assert pages >= 4
        await start_job(
            [site.url + listing], spider="tests.crawler.spiders:ListingSpider", max_depth=0
        )
        env = {KILL_AT_PAGE_ENV: f"3:{tmp_path / 'killed'}"}
        with anyio.fail_after(60):
            first = await worker_process("w1", "--exit-when-done", env=env)
            assert await first.wait() == -signal.SIGKILL  # it killed itself parsing page 3
            again = await worker_process("w1", "--exit-when-done", env=env)
            assert await again.wait() == 0
    fetched = [e.page for e in await events_of(log) if isinstance(e, PageFetched)]
    # Pages 1 and 2 were checkpointed before the kill; page 3 was fetched but its step
    # never reached the log, so the log shows every page once and the resume at page 3.
    assert fetched == list(range(1, pages + 1))
    counts = Counter(r.path.split("page=")[-1] for r in site.requests if "page=" in r.path)
    assert counts["3"] == 2 and all(n == 1 for p, n in counts.items() if p != "3")


async def test_robots_txt_is_obeyed_and_disallowed_pages_fail_with_the_reason(
    start_job: Callable[..., Any], worker_process: Callable[..., Any], log: EventLog
) -> None:
    async with serve_testsite(pages=80, seed=4, faults=Faults(robots_disallow="/private/")) as site:
        await start_job([site.url + "/"])
        with anyio.fail_after(60):
            assert await (await worker_process("w1", "--exit-when-done")).wait() == 0
        requested = {r.path for r in site.requests}
    assert site.disallowed and not {u.removeprefix(site.url) for u in site.disallowed} & requested
    failed = [e for e in await events_of(log) if isinstance(e, TaskFailed)]
    assert {e.reason for e in failed} == {"disallowed by robots.txt"}


async def test_throttled_and_failing_pages_are_retried_after_their_backoff(
    start_job: Callable[..., Any], worker_process: Callable[..., Any], log: EventLog
) -> None:
    faults = Faults(throttle_429_rate=0.3, error_500_rate=0.2, error_500_times=1)
    async with serve_testsite(pages=60, seed=5, faults=faults) as site:
        await start_job([site.url + "/"], circuit_cooldown_s=0.5)
        with anyio.fail_after(90):
            assert await (await worker_process("w1", "--exit-when-done")).wait() == 0
        reachable = {u.removeprefix(site.url) for u in site.reachable}
        fetched = {r.path for r in site.requests if r.status == 200}
    assert reachable <= fetched
    retries = [e for e in await events_of(log) if isinstance(e, RetryScheduled)]
    throttled = [e for e in retries if e.reason == "HTTP 429"]
    assert throttled and all(e.delay_s >= 1.0 for e in throttled), "Retry-After: 1 honoured"
    assert any(e.reason == "HTTP 500" for e in retries)


async def test_dead_links_fail_their_tasks_without_opening_the_sites_circuit(
    start_job: Callable[..., Any], worker_process: Callable[..., Any], log: EventLog
) -> None:
    async with serve_testsite(pages=12, seed=8) as site:
        dead = [f"{site.url}/item/{n}?gone" for n in range(12)]
        # 404s opening the circuit would show as a CircuitOpened event (checked below), not
        # by the deadline: a loaded machine may need more than the cooldown's 30 s.
        await start_job([*dead, site.url + "/"], circuit_failures=3)
        with anyio.fail_after(60):
            assert await (await worker_process("w1", "--exit-when-done")).wait() == 0
        reachable = {u.removeprefix(site.url) for u in site.reachable}
        assert reachable <= {r.path for r in site.requests if r.status == 200}
    events = await events_of(log)
    assert not [e for e in events if isinstance(e, CircuitOpened)]
    failed = [e for e in events if isinstance(e, TaskFailed)]
    assert len(failed) == len(dead) and {e.reason for e in failed} == {"HTTP 404"}


async def test_a_paused_site_stops_being_fetched_within_a_second_and_resumes(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    redis_client: Any,
    job: str,
) -> None:
    faults = Faults(slow_rate=1.0, slow_s=0.05)
    async with serve_testsite(pages=150, seed=6, faults=faults) as site:
        await start_job([site.url + "/"])
        keys = JobKeys(job)
        with anyio.fail_after(90):
            worker = await worker_process("w1", "--exit-when-done")
            while site.request_count < 20:
                await anyio.sleep(0.01)
            paused_at = time.time()
            site_name = site.url
            await apply_control(
                redis_client, keys, SitePaused(actor="alice", site=site_name, reason="test")
            )
            await anyio.sleep(3.0)  # time itself is what is tested: nothing may start now
            # A response is logged when written: allow for the slow page itself, a margin,
            # and a second a loaded machine may add to the worker's look at the flags (every
            # half second); a pause never seen still shows requests all along.
            late = [r for r in site.requests if r.time > paused_at + 1.0 + 0.05 + 0.25 + 1.0]
            assert not late, f"{len(late)} requests started more than 1 s after the pause"
            assert await redis_client.zcard(keys.parked) > 0, "the site's tasks are parked"
            await apply_control(
                redis_client, keys, SiteResumed(actor="alice", site=site_name, reason="ok")
            )
            assert await worker.wait() == 0
        reachable = {u.removeprefix(site.url) for u in site.reachable}
        assert reachable <= {r.path for r in site.requests}


def test_a_bad_seed_is_one_clear_line_and_exit_2(tmp_path: Path) -> None:
    import subprocess

    command = crawlog_command("crawl", "ftp://example.org/")
    result = subprocess.run(
        [*command, "--data-dir", str(tmp_path)], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "ftp://example.org/" in lines[0], result.stderr


async def test_a_failing_site_opens_its_circuit_and_is_probed_back(
    start_job: Callable[..., Any], worker_process: Callable[..., Any], log: EventLog
) -> None:
    faults = Faults(error_500_rate=1.0, error_500_times=1)
    async with serve_testsite(pages=12, seed=7, faults=faults) as site:
        await start_job([site.url + "/"], circuit_failures=3, circuit_cooldown_s=0.5)
        with anyio.fail_after(60):
            assert await (await worker_process("w1", "--exit-when-done")).wait() == 0
        reachable = {u.removeprefix(site.url) for u in site.reachable}
        assert reachable <= {r.path for r in site.requests if r.status == 200}
    events = await events_of(log)
    opened = [e for e in events if isinstance(e, CircuitOpened)]
    assert opened and opened[0].site == site.url and opened[0].failures == 3
    # The probe that succeeds closes it, in the log too (the state must not stay "open").
    last_change = [e for e in events if isinstance(e, CircuitOpened | CircuitClosed)][-1]
    assert isinstance(last_change, CircuitClosed) and last_change.site == site.url
