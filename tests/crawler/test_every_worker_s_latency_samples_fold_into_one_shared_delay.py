"""With ``--autothrottle``, each fetch's latency is folded into the host's delay on the
server, by one script: the script computes what ``next_delay_ms`` says, two workers'
samples combine (neither overwrites the other's), and every worker's next request waits
the adapted delay."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator

import anyio
import pytest
import redis.asyncio as aioredis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crawler._autothrottle import THROTTLED_MIN_MS, next_delay_ms, sample_kind
from crawler._politeness import Politeness, PolitenessGate
from eventlog import JobKeys, connect, read_host_delays

pytestmark = pytest.mark.anyio

HOST = "example.org"
DEADLINE_S = 10.0
THROTTLED = Politeness(autothrottle=True, max_poll_s=0.01)
STATUSES = (200, 200, 200, 0, 301, 404, 429, 500, 503)


@pytest.fixture
async def other_client(valkey_url: str) -> AsyncIterator[aioredis.Redis]:
    """A second connection, as a second worker process would have."""
    async with connect(valkey_url) as client:
        yield client


samples = st.lists(
    st.tuples(st.floats(0, 200_000, allow_nan=False), st.sampled_from(STATUSES)),
    min_size=1,
    max_size=12,
)
politeness = st.builds(
    lambda floor, top, target: Politeness(
        autothrottle=True,
        delay_s=floor / 1000,
        autothrottle_max_delay_s=(floor + top) / 1000,
        autothrottle_target=target,
    ),
    st.integers(0, 5_000),
    st.integers(0, 100_000),
    st.floats(0.1, 16, allow_nan=False),
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(samples=samples, polite=politeness)
async def test_the_script_folds_samples_as_next_delay_ms_does(
    redis_client: aioredis.Redis,
    keys: JobKeys,
    samples: list[tuple[float, int]],
    polite: Politeness,
) -> None:
    await redis_client.delete(keys.host_adapted_delay(HOST))
    gate = PolitenessGate(redis_client, keys, polite)
    expected: int | None = None
    for latency, status in samples:
        expected = next_delay_ms(
            expected,
            latency,
            sample_kind(status),
            target=polite.autothrottle_target,
            floor_ms=round(polite.delay_s * 1000),
            max_ms=round(polite.autothrottle_max_delay_s * 1000),
        )
        assert await gate.observe(HOST, latency, status) == expected


async def test_a_second_worker_s_sample_starts_from_the_first_one_s_delay(
    redis_client: aioredis.Redis, other_client: aioredis.Redis, keys: JobKeys
) -> None:
    first, second = (PolitenessGate(c, keys, THROTTLED) for c in (redis_client, other_client))
    assert await first.observe(HOST, 1000.0, 200) == 1000
    # Averaged with the first worker's 1000 ms, not its own 200 from nothing.
    assert await second.observe(HOST, 200.0, 200) == 600
    (shown,) = await read_host_delays(redis_client, keys, [HOST])
    assert shown.adapted_ms == 600


async def test_samples_sent_at_once_by_two_workers_are_all_counted(
    redis_client: aioredis.Redis, other_client: aioredis.Redis, keys: JobKeys
) -> None:
    # Each throttled answer doubles the delay: a lost update would show as a shorter one.
    polite = Politeness(autothrottle=True, autothrottle_max_delay_s=3600.0)
    gates = [PolitenessGate(c, keys, polite) for c in (redis_client, other_client)]
    with anyio.fail_after(DEADLINE_S):
        async with anyio.create_task_group() as tg:
            for gate in itertools.islice(itertools.cycle(gates), 12):
                tg.start_soon(gate.observe, HOST, 1.0, 429)
    assert (
        int(await redis_client.get(keys.host_adapted_delay(HOST)) or 0) == THROTTLED_MIN_MS * 2**11
    )


async def test_the_adapted_delay_spaces_every_worker_s_requests(
    redis_client: aioredis.Redis, other_client: aioredis.Redis, keys: JobKeys
) -> None:
    sampler = PolitenessGate(redis_client, keys, THROTTLED)
    worker = PolitenessGate(other_client, keys, Politeness(per_host=10, max_poll_s=0.01))
    await sampler.observe(HOST, 120.0, 200)
    starts: list[int] = []
    with anyio.fail_after(DEADLINE_S):
        for _ in range(3):
            async with worker.slot(HOST) as slot:
                starts.append(slot.started_ms)
    assert min(b - a for a, b in itertools.pairwise(starts)) >= 120


async def test_without_autothrottle_nothing_is_adapted(
    redis_client: aioredis.Redis, keys: JobKeys
) -> None:
    gate = PolitenessGate(redis_client, keys, Politeness())
    assert await gate.observe(HOST, 5000.0, 200) is None
    assert await redis_client.exists(keys.host_adapted_delay(HOST)) == 0


async def test_the_adapted_delay_expires_when_the_host_is_idle(
    redis_client: aioredis.Redis, keys: JobKeys
) -> None:
    polite = Politeness(autothrottle=True, delay_ttl_s=10.0)
    await PolitenessGate(redis_client, keys, polite).observe(HOST, 300.0, 200)
    assert 0 < await redis_client.pttl(keys.host_adapted_delay(HOST)) <= 10_000
