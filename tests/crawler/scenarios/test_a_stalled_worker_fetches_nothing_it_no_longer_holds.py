"""A worker stalled past its lease does not fetch, once awake, the pages of tasks it held
but had not started: others took them over meanwhile (and fetched them).

Fencing refuses such a worker's writes; this is about its fetches, a side effect no script
can refuse. Before each fetch a lease that the server may have seen idle for long enough
is renewed, or found lost.
"""

from __future__ import annotations

import signal
from collections import Counter
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from crawler.testsite import Faults, serve_testsite
from eventlog import TaskQueue

pytestmark = pytest.mark.anyio
LEASE_MS = 1_000
HELD = 30


async def test_a_stalled_worker_fetches_nothing_it_no_longer_holds(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    redis_client: Any,
    job: str,
) -> None:
    faults = Faults(slow_rate=1.0, slow_s=0.2)
    async with serve_testsite(pages=HELD, seed=9, faults=faults) as site:
        seeds = [f"{site.url}/item/{n}" for n in range(1, HELD + 1)]
        await start_job(seeds, lease_ms=LEASE_MS, obey_robots=False)
        # As a killed w1 leaves them: every task leased to w1, which restarts and takes
        # them back, to run one at a time.
        assert len(await TaskQueue(redis_client, job, "w1").claim(HELD)) == HELD
        with anyio.fail_after(60):
            stalled = await worker_process("w1", "--concurrency", "1")
            while site.request_count < 2:
                await anyio.sleep(0.01)
            stalled.send_signal(signal.SIGSTOP)
            rescuer = await worker_process("w2", "--exit-when-done")
            assert await rescuer.wait() == 0
            stalled.send_signal(signal.SIGCONT)
            # Time for the woken worker to go on with the tasks it held (0.2 s a page).
            await anyio.sleep(2.0)
            stalled.send_signal(signal.SIGTERM)
            await stalled.wait()
        fetches = Counter(r.path for r in site.requests if r.status == 200)
    assert set(fetches) >= {s.removeprefix(site.url) for s in seeds}
    refetched = sorted(path for path, count in fetches.items() if count > 1)
    # Only the page in flight when it stopped may be fetched twice.
    assert len(refetched) <= 1, refetched
