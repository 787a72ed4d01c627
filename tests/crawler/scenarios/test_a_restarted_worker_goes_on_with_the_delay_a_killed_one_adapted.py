"""With ``--autothrottle``, the delay a worker adapted to a slow host lives in Redis: a
worker SIGKILLed and restarted goes on with it, not from the floor.

A real worker process against the test site, every page answered late; the default
politeness (2 a host, no delay), under which a worker that knew no delay would send its
first two requests together. The site's request log says when each was asked for.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
import redis.asyncio as aioredis

from crawler._politeness import Politeness
from crawler.testsite import Faults, RunningSite, serve_testsite
from eventlog import JobKeys

pytestmark = pytest.mark.anyio

ROBOTS_PATH = "/robots.txt"
SLOW_S = 0.4
"""Every page is answered this late: what the request log times is the answer."""
LONG_LEASE_MS = 120_000
"""Longer than the test: the restart takes its own tasks back at once."""
SPACED = 0.8
"""Share of the delay the restart's first gap must keep (the log's times are the answers',
written a little late on a loaded machine)."""
DEADLINE_S = 60


async def adapted_ms(redis: aioredis.Redis, keys: JobKeys, host: str) -> int:
    value = await redis.get(keys.host_adapted_delay(host))
    return 0 if value is None else int(value)


async def pages_asked_after(site: RunningSite, moment: float, count: int) -> list[float]:
    """When the first ``count`` pages answered after ``moment`` were asked for."""
    while True:
        answered = sorted(
            r.time for r in site.requests if r.time > moment and r.path != ROBOTS_PATH
        )
        if len(answered) >= count:
            return [t - SLOW_S for t in answered[:count]]
        await anyio.sleep(0.01)


async def test_a_restarted_worker_spaces_its_first_requests_by_the_delay_the_killed_one_adapted(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    redis_client: aioredis.Redis,
    keys: JobKeys,
    data_dir: Path,
) -> None:
    politeness = Politeness(autothrottle=True)
    async with serve_testsite(
        pages=120, seed=1, faults=Faults(slow_rate=1.0, slow_s=SLOW_S)
    ) as site:
        host = site.url.removeprefix("http://")
        await start_job([site.url + "/"], lease_ms=LONG_LEASE_MS, politeness=politeness)
        with anyio.fail_after(DEADLINE_S):
            w1 = await worker_process("w1")
            while await adapted_ms(redis_client, keys, host) < SLOW_S * 1000:
                await anyio.sleep(0.01)
            w1.send_signal(signal.SIGKILL)
            await w1.wait()
            delay_ms = await adapted_ms(redis_client, keys, host)
            # What the kill left in flight is answered (and logged) before the restart, so
            # that none of it is taken for the restart's requests.
            await site.no_connections()
            restarted = time.time()
            await worker_process("w1")
            first, second = await pages_asked_after(site, restarted, 2)
            after_ms = await adapted_ms(redis_client, keys, host)
    assert second - first >= delay_ms / 1000 * SPACED, (
        f"the restart's first two requests {second - first:.3f} s apart; the delay the "
        f"killed worker left was {delay_ms} ms"
    )
    # And the restarted worker's own samples went on from it.
    assert after_ms >= SLOW_S * 1000
