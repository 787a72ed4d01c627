"""A task that kills every worker is aborted after the recovery limit; SIGTERM hands
in-flight tasks over at once."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from crawler.testsite import Faults, serve_testsite
from eventlog import (
    EventLog,
    RetryScheduled,
    TaskAborted,
    TaskQueue,
    TaskReclaimed,
    TaskReleased,
)

pytestmark = pytest.mark.anyio


async def test_a_task_that_kills_every_worker_is_aborted_after_the_recovery_limit(
    start_job: Callable[..., Any], worker_process: Callable[..., Any], log: EventLog
) -> None:
    async with serve_testsite(pages=10, seed=2) as site:
        await start_job(
            [site.url + "/item/1"],
            spider="tests.crawler.spiders:DeadlySpider",
            lease_ms=800,
            recovery_limit=2,
        )
        with anyio.fail_after(60):
            for n in range(1, 10):
                code = await (await worker_process(f"w{n}", "--exit-when-done")).wait()
                if code == 0:
                    break
                assert code == -signal.SIGKILL
    events = [e.event for e in await log.read_range()]
    [aborted] = [e for e in events if isinstance(e, TaskAborted)]
    assert aborted.reason == "recovered 3 times (limit 2)"
    assert len(aborted.owners) == 3 and len(set(aborted.owners)) == 3
    assert sum(isinstance(e, TaskReclaimed) for e in events) == 2


async def test_sigterm_hands_in_flight_tasks_over_at_once(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    redis_client: Any,
    job: str,
    log: EventLog,
) -> None:
    async with serve_testsite(pages=30, seed=3, faults=Faults(slow_rate=1.0, slow_s=0.3)) as site:
        await start_job([site.url + "/"], lease_ms=120_000)  # expiry would take minutes
        queue = TaskQueue(redis_client, job, "observer")
        with anyio.fail_after(60):
            first = await worker_process("w1")
            while len(await queue.leases_of("w1")) < 2:
                await anyio.sleep(0.01)
            stopped_at = time.monotonic()
            first.send_signal(signal.SIGTERM)
            assert await first.wait() == 0
            # Well short of the default grace (10 s) it would wait out, with room for a
            # loaded machine's slow exit.
            assert time.monotonic() - stopped_at < 8, "within the grace period"
            assert await queue.leases_of("w1") == [], "every lease handed back"
            second = await worker_process("w2", "--exit-when-done")
            assert await second.wait() == 0
        reachable = {u.removeprefix(site.url) for u in site.reachable}
        assert reachable <= {r.path for r in site.requests}
    # Each task w1 held was either finished (its page was in flight) or handed back: released,
    # not retried.
    for event in (e.event for e in await log.read_range()):
        if isinstance(event, TaskReleased) and event.actor == "w1":
            assert event.reason == "worker stopped"
        assert not isinstance(event, RetryScheduled) or event.reason != "worker stopped"
