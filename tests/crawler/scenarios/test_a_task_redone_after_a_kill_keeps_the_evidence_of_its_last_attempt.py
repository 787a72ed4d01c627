"""A failed task's evidence is the response of the attempt that failed it: a worker SIGKILLed
while the site answered left nothing, the worker that redid the task wrote one evidence,
with its terminal event, and none with the retry before it."""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from crawler.testsite import Faults, serve_testsite
from eventlog import EventLog, RetryScheduled, TaskFailed

pytestmark = pytest.mark.anyio
SHORT_LEASE_MS = 2_000
"""Another worker takes the killed one's task soon after the kill."""


async def test_the_evidence_is_the_last_attempt_s_one_per_terminal_event(
    start_job: Callable[..., Any], worker_process: Callable[..., Any], log: EventLog
) -> None:
    # Three 500s, each answered late: the killed worker's, then two attempts of the next.
    faults = Faults(error_500_rate=1.0, error_500_times=3, slow_rate=1.0, slow_s=0.5)
    async with serve_testsite(pages=5, seed=1, faults=faults) as site:
        seed = site.url + "/"
        await start_job([seed], max_depth=0, max_attempts=2, lease_ms=SHORT_LEASE_MS)
        with anyio.fail_after(90):
            first = await worker_process("w1")
            while not site.answering("/"):
                await anyio.sleep(0.01)
            first.send_signal(signal.SIGKILL)
            await first.wait()
            assert await (await worker_process("w2", "--exit-when-done")).wait() == 0
        served = site.fetch_counts()["/"]
    assert served == 3
    events = [e.event for e in await log.read_range()]
    retries = [e for e in events if isinstance(e, RetryScheduled)]
    failed = [e for e in events if isinstance(e, TaskFailed)]
    assert [(r.actor, r.attempt) for r in retries] == [("w2", 1)]
    assert [(f.actor, f.attempt, f.reason) for f in failed] == [("w2", 2, "HTTP 500")]
    evidence = failed[0].evidence
    assert evidence is not None
    assert (evidence.status, evidence.url) == (500, seed)
    assert evidence.body == b"injected failure: try again\n"
    assert ("Content-Type", "text/plain; charset=utf-8") in evidence.headers
