"""Per-host concurrency and delay hold across workers, on the server's clock."""

from __future__ import annotations

import itertools
import math
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
import redis.asyncio as aioredis

from crawler._politeness import HostSlot, Politeness, PolitenessGate
from eventlog import ConfigError, JobKeys, ServerUnreachable, client_for, connect
from eventlog._scripts import POLITENESS_ACQUIRE

pytestmark = pytest.mark.anyio

HOST = "example.org"
OTHER_HOST = "example.net:8080"
FAST_POLL = 0.01
"""Tests poll a full host often, so a release in the other worker is seen at once."""
DEADLINE_S = 15.0

HOLDER = textwrap.dedent(
    """
    import sys, anyio
    from crawler._politeness import Politeness, PolitenessGate
    from eventlog import connect

    async def main(url, job, host, ttl_s):
        async with connect(url) as client:
            gate = PolitenessGate(client, job, Politeness(per_host=1, slot_ttl_s=float(ttl_s)))
            async with gate.slot(host) as slot:
                print(slot.started_ms, flush=True)
                await anyio.sleep_forever()

    anyio.run(main, *sys.argv[1:])
    """
)


@pytest.fixture
async def other_client(valkey_url: str) -> AsyncIterator[aioredis.Redis]:
    """A second connection, as a second worker process would have."""
    async with connect(valkey_url) as client:
        yield client


def gaps(starts: list[int]) -> list[int]:
    ordered = sorted(starts)
    return [b - a for a, b in itertools.pairwise(ordered)]


async def test_per_host_concurrency_is_never_exceeded_across_two_workers(
    redis_client: aioredis.Redis, other_client: aioredis.Redis, keys: JobKeys
) -> None:
    politeness = Politeness(per_host=3, max_poll_s=FAST_POLL)
    gates = [PolitenessGate(c, keys, politeness) for c in (redis_client, other_client)]
    held, most, done = 0, 0, 0

    async def request(gate: PolitenessGate) -> None:
        nonlocal held, most, done
        async with gate.slot(HOST):
            held += 1
            most = max(most, held)
            await anyio.sleep(0.002)  # the request itself
            held -= 1
        done += 1

    with anyio.fail_after(DEADLINE_S):
        async with anyio.create_task_group() as tg:
            for _ in range(30):
                for gate in gates:
                    tg.start_soon(request, gate)

    assert (most, done) == (3, 60)
    assert await redis_client.exists(keys.host_slots(HOST)) == 0


async def test_the_delay_spaces_request_starts_across_workers(
    redis_client: aioredis.Redis, other_client: aioredis.Redis, keys: JobKeys
) -> None:
    politeness = Politeness(per_host=10, delay_s=0.05, max_poll_s=FAST_POLL)
    gates = [PolitenessGate(c, keys, politeness) for c in (redis_client, other_client)]
    starts: list[int] = []

    async def request(gate: PolitenessGate) -> None:
        async with gate.slot(HOST) as slot:
            starts.append(slot.started_ms)

    with anyio.fail_after(DEADLINE_S):
        async with anyio.create_task_group() as tg:
            for _ in range(3):
                for gate in gates:
                    tg.start_soon(request, gate)

    assert len(starts) == 6
    assert min(gaps(starts)) >= 50  # server milliseconds: the delay is exact there


async def test_hosts_do_not_block_each_other(redis_client: aioredis.Redis, keys: JobKeys) -> None:
    gate = PolitenessGate(redis_client, keys, Politeness(per_host=1, delay_s=60.0))
    async with gate.slot(HOST):
        with anyio.move_on_after(0.1) as blocked:
            async with gate.slot(HOST):
                pass
        assert blocked.cancelled_caught  # full, and a minute of delay to go
        with anyio.fail_after(DEADLINE_S):
            async with gate.slot(OTHER_HOST):
                pass


async def script_calls(client: aioredis.Redis) -> int:
    stats = await client.info("commandstats")
    return int(stats.get("cmdstat_evalsha", {}).get("calls", 0))


async def test_one_task_per_process_polls_a_full_host_for_the_others(
    redis_client: aioredis.Redis, keys: JobKeys
) -> None:
    poll_s, hold_s, waiting = 0.02, 0.3, 20
    gate = PolitenessGate(redis_client, keys, Politeness(per_host=1, max_poll_s=poll_s))
    done = 0

    async def request() -> None:
        nonlocal done
        async with gate.slot(HOST):
            done += 1

    before = await script_calls(redis_client)
    with anyio.fail_after(DEADLINE_S):
        async with anyio.create_task_group() as tg, gate.slot(HOST):
            for _ in range(waiting):
                tg.start_soon(request)
            await anyio.sleep(hold_s)  # a long request, while the others wait
    calls = await script_calls(redis_client) - before
    polls = hold_s / poll_s
    # Each waiter asks once on arrival and once when its turn comes; only one polls. If
    # every waiter polled, that alone would be waiting * polls calls.
    assert done == waiting
    assert calls <= 1 + 2 * waiting + polls + 5 < waiting * polls


async def test_a_cancelled_wait_leaves_no_slot_behind(
    redis_client: aioredis.Redis, keys: JobKeys
) -> None:
    gate = PolitenessGate(redis_client, keys, Politeness(per_host=1, max_poll_s=FAST_POLL))
    async with gate.slot(HOST):
        with anyio.move_on_after(0.05):
            async with gate.slot(HOST):
                pytest.fail("a full host let a second request in")
    assert await redis_client.exists(keys.host_slots(HOST)) == 0
    with anyio.fail_after(DEADLINE_S):
        async with gate.slot(HOST):
            pass


async def test_a_retried_acquire_finds_its_slot(
    redis_client: aioredis.Redis, keys: JobKeys
) -> None:
    # The same token twice, as a redis-py retry after a lost reply sends it: the second
    # call must not be told to wait for the delay the first one started.
    acquire = redis_client.register_script(POLITENESS_ACQUIRE)
    host_keys = [keys.host_slots(HOST), keys.host_next(HOST), keys.host_delay(HOST)]
    args = ["token", 1, 60_000, 30_000, 100]
    first: list[Any] = await acquire(keys=host_keys, args=args)
    again: list[Any] = await acquire(keys=host_keys, args=args)
    assert first[0] == again[0] == 0
    assert first[1] == again[1]
    assert await redis_client.zcard(keys.host_slots(HOST)) == 1


async def test_a_killed_workers_slot_is_freed_after_its_ttl_and_not_before(
    redis_client: aioredis.Redis, keys: JobKeys, valkey_url: str
) -> None:
    ttl_ms = 1000
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, valkey_url, keys.job, HOST, str(ttl_ms / 1000)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    with anyio.fail_after(DEADLINE_S):
        held_since = int(await anyio.to_thread.run_sync(holder.stdout.readline))
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    holder.stdout.close()
    assert await redis_client.zcard(keys.host_slots(HOST)) == 1

    gate = PolitenessGate(
        redis_client, keys, Politeness(per_host=1, slot_ttl_s=ttl_ms / 1000, max_poll_s=0.05)
    )
    seconds, micros = await redis_client.time()
    asked_ms = seconds * 1000 + micros // 1000
    with anyio.fail_after(DEADLINE_S):
        async with gate.slot(HOST) as slot:
            pass
    assert slot.started_ms - held_since >= ttl_ms
    # The wait is the first slot's expiry once it is nearer than a poll: a few ms late at most,
    # counted from when it could start (a loaded machine may ask only after the expiry).
    assert slot.started_ms - max(held_since + ttl_ms, asked_ms) <= 200


async def test_set_delay_in_one_worker_slows_the_other(
    redis_client: aioredis.Redis, other_client: aioredis.Redis, keys: JobKeys
) -> None:
    setter = PolitenessGate(redis_client, keys)
    worker = PolitenessGate(other_client, keys, Politeness(max_poll_s=FAST_POLL))
    await setter.set_delay(HOST, 0.08)
    starts: list[int] = []
    with anyio.fail_after(DEADLINE_S):
        for _ in range(3):
            async with worker.slot(HOST) as slot:
                starts.append(slot.started_ms)
        async with worker.slot(OTHER_HOST), worker.slot(OTHER_HOST):
            pass  # another host keeps no delay
    assert min(gaps(starts)) >= 80


async def test_every_host_key_expires_when_idle(
    redis_client: aioredis.Redis, keys: JobKeys
) -> None:
    # Delays of seconds, not milliseconds: the next-slot key must outlive the checks below
    # on a loaded machine, or it expires before the scan counts it.
    politeness = Politeness(delay_s=2.0, slot_ttl_s=5.0, delay_ttl_s=10.0)
    gate = PolitenessGate(redis_client, keys, politeness)
    await gate.set_delay(HOST, 3.0)
    async with gate.slot(HOST):
        assert 0 < await redis_client.pttl(keys.host_slots(HOST)) <= 5000
    assert await redis_client.exists(keys.host_slots(HOST)) == 0  # the last slot took it
    assert 0 < await redis_client.pttl(keys.host_next(HOST)) <= 3000  # the longer delay
    assert 0 < await redis_client.pttl(keys.host_delay(HOST)) <= 10_000
    found = [k async for k in redis_client.scan_iter(match=f"crawlog:{keys.tag}:host:*")]
    assert len(found) == 2
    for key in found:
        assert await redis_client.pttl(key) > 0


async def test_a_slot_says_when_it_started(redis_client: aioredis.Redis, keys: JobKeys) -> None:
    seconds, micros = await redis_client.time()
    async with PolitenessGate(redis_client, keys).slot(HOST) as slot:
        assert isinstance(slot, HostSlot)
        assert slot.host == HOST
        assert 0 <= slot.started_ms - (seconds * 1000 + micros // 1000) < 1000


@pytest.mark.parametrize(
    "options",
    [
        {"per_host": 0},
        {"per_host": 1.5},
        {"per_host": True},
        {"delay_s": -1.0},
        {"delay_s": math.nan},
        {"delay_s": 1e9},
        {"slot_ttl_s": 0.0},
        {"delay_ttl_s": math.inf},
        {"max_poll_s": 0.0},
    ],
)
def test_bad_politeness_is_a_config_error(options: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        Politeness(**options)


@pytest.mark.parametrize("host", ["", "a b", "{x}", "a\x00", "h" * 301])
async def test_a_bad_host_is_a_config_error(
    redis_client: aioredis.Redis, keys: JobKeys, host: str
) -> None:
    gate = PolitenessGate(redis_client, keys)
    with pytest.raises(ConfigError, match="invalid host"):
        async with gate.slot(host):
            pass
    with pytest.raises(ConfigError, match="invalid host"):
        await gate.set_delay(host, 1.0)


@pytest.mark.parametrize("seconds", [-0.1, math.nan, 1e6])
async def test_a_bad_delay_is_a_config_error(
    redis_client: aioredis.Redis, keys: JobKeys, seconds: float
) -> None:
    with pytest.raises(ConfigError, match="per-host delay"):
        await PolitenessGate(redis_client, keys).set_delay(HOST, seconds)


async def test_a_lost_server_is_server_unreachable(keys: JobKeys) -> None:
    # Port 1 on loopback: nothing listens there, so every connection is refused.
    client = client_for("redis://127.0.0.1:1/0")
    try:
        with pytest.raises(ServerUnreachable, match="taking a host slot"):
            async with PolitenessGate(client, keys).slot(HOST):
                pass
    finally:
        await client.aclose()
