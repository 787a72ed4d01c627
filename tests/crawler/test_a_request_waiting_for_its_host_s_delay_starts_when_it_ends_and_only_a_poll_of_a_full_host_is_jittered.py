"""A request waiting for a host's delay is told by the server when the delay ends, and asks
again then: its start is not put off by the jitter that spreads the polls of workers after
a host whose slots are all held (half of it on average, 5 % of a 0.1 s delay on each
request to a delay-limited host). A poll of a full host is still jittered."""

from __future__ import annotations

import random

import anyio
import pytest
import redis.asyncio as aioredis

from crawler._politeness import JITTER, Politeness, PolitenessGate
from eventlog import JobKeys

pytestmark = pytest.mark.anyio

HOST = "example.org"
DELAY_S = 0.2
MAX_POLL_S = 10.0
"""The longest poll: the jitter, a share of it (`JITTER`), is up to 1 s here, so half of it
stands well above a loaded machine's round trips."""


class _Longest(random.Random):
    """Every jitter drawn is the longest one (a wait jittered is then plain to see)."""

    def uniform(self, a: float, b: float) -> float:
        return b


async def test_a_request_after_the_delay_starts_when_the_delay_ends(
    redis_client: aioredis.Redis, keys: JobKeys
) -> None:
    politeness = Politeness(per_host=2, delay_s=DELAY_S, max_poll_s=MAX_POLL_S)
    gate = PolitenessGate(redis_client, keys, politeness, rng=_Longest())
    with anyio.fail_after(10):
        async with gate.slot(HOST) as first:
            asked = anyio.current_time()
            async with gate.slot(HOST) as second:
                waited = anyio.current_time() - asked
    assert second.started_ms - first.started_ms >= DELAY_S * 1000
    # Jittered, the wait would be the delay and the whole jitter (1 s more).
    assert waited < DELAY_S + JITTER * MAX_POLL_S / 2, waited


async def test_a_poll_of_a_full_host_is_jittered(
    redis_client: aioredis.Redis, keys: JobKeys
) -> None:
    politeness = Politeness(per_host=1, max_poll_s=1.0)
    gate = PolitenessGate(redis_client, keys, politeness, rng=_Longest())
    other = PolitenessGate(redis_client, keys, politeness)  # another worker's
    jitter = JITTER * politeness.max_poll_s
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tasks:
            held = anyio.Event()

            async def hold_a_moment() -> None:
                async with other.slot(HOST):
                    held.set()
                    await anyio.sleep(0.05)

            tasks.start_soon(hold_a_moment)
            await held.wait()
            asked = anyio.current_time()
            async with gate.slot(HOST):
                waited = anyio.current_time() - asked
    # Another worker's release is seen at the next poll: the longest one, and its jitter.
    assert waited >= politeness.max_poll_s + jitter * 0.9, waited
