"""A worker stalled (SIGSTOP) past its lease loses its tasks, and writes nothing after.

Its leases are reclaimed by another worker, which finishes the job; when the stalled one
wakes up (SIGCONT), every checkpoint or finish it attempts is refused by the fenced scripts.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from crawler.testsite import Faults, serve_testsite
from eventlog import EventLog, TaskDone, TaskQueue

pytestmark = pytest.mark.anyio
LEASE_MS = 1_000


async def test_a_stalled_worker_writes_nothing_after_its_tasks_were_reclaimed(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    redis_client: Any,
    job: str,
    log: EventLog,
) -> None:
    faults = Faults(slow_rate=1.0, slow_s=0.2)
    async with serve_testsite(pages=40, seed=8, faults=faults) as site:
        await start_job([site.url + "/"], lease_ms=LEASE_MS)
        queue = TaskQueue(redis_client, job, "observer")
        with anyio.fail_after(60):
            stalled = await worker_process("w1")
            while not await queue.leases_of("w1"):
                await anyio.sleep(0.01)
            stalled.send_signal(signal.SIGSTOP)
            held = await queue.leases_of("w1")
            rescuer = await worker_process("w2", "--exit-when-done")
            assert await rescuer.wait() == 0
            woke_at = await log.last_id()
            stalled.send_signal(signal.SIGCONT)
            # Time for the woken worker to try its late writes (its fetches are 0.2 s).
            await anyio.sleep(2.0)
            stalled.send_signal(signal.SIGTERM)
            await stalled.wait()
    assert held, "w1 held tasks when it stalled"
    late = [e for e in await log.read_range(f"({woke_at}") if e.event.actor == "w1"]
    assert late == [], f"the stalled worker wrote {[type(e.event).__name__ for e in late]}"
    done = [e for e in await log.read_range() if isinstance(e.event, TaskDone)]
    assert len({e.event.task_id for e in done}) == len(done), "each task finished once"
