"""A worker process SIGKILLed while its requests run on slots handed over from one request
to the next (`crawler._handover`) leaves them held no longer than a slot taken for the
request that first had it: the server never renewed them, so they expire within the
slot's ttl of that take, and another worker then has the host's every slot."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import anyio
import pytest
import redis.asyncio as aioredis

from crawler._politeness import Politeness, PolitenessGate
from eventlog import JobKeys

pytestmark = pytest.mark.anyio

HOST = "example.org"
PER_HOST = 2
TTL_S = 1.0
DEADLINE_S = 30.0
LATE_MS = 300
"""How late past the dead slots' expiry the other worker may take them on a loaded machine."""

WORKER = textwrap.dedent(
    """
    import sys, anyio
    from crawler._politeness import Politeness, PolitenessGate
    from eventlog import connect

    async def main(url, job, host, ttl_s):
        politeness = Politeness(per_host=2, slot_ttl_s=float(ttl_s))
        async with connect(url) as client, anyio.create_task_group() as tg:
            gate = PolitenessGate(client, job, politeness, holder="dying")
            tg.start_soon(gate.free_loop)

            async def request(n):
                async with gate.slot(host, f"t{n}") as slot:
                    if slot.handed_over and gate.handovers >= 3:
                        print(slot.started_ms, flush=True)
                        await anyio.sleep_forever()
                    await anyio.sleep(0.002)

            for n in range(10_000):
                tg.start_soon(request, n)
                await anyio.sleep(0.001)

    anyio.run(main, *sys.argv[1:])
    """
)


async def test_a_killed_worker_s_handed_over_slots_expire_within_their_ttl(
    redis_client: aioredis.Redis, keys: JobKeys, valkey_url: str
) -> None:
    dying = subprocess.Popen(
        [sys.executable, "-c", WORKER, valkey_url, keys.job, HOST, str(TTL_S)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert dying.stdout is not None
    with anyio.fail_after(DEADLINE_S):
        handed_at = int(await anyio.to_thread.run_sync(dying.stdout.readline))
    os.kill(dying.pid, signal.SIGKILL)
    dying.wait()
    dying.stdout.close()
    left = await redis_client.zrange(keys.host_slots(HOST), 0, -1, withscores=True)
    seconds, micros = await redis_client.time()
    killed_ms = seconds * 1000 + micros // 1000
    assert 1 <= len(left) <= PER_HOST
    expiries = [int(expiry) for _, expiry in left]
    # Not renewed by the handovers: each expires a ttl after its first take, which came
    # before the request it was handed to.
    assert min(expiries) - TTL_S * 1000 <= handed_at
    assert max(expiries) <= killed_ms + TTL_S * 1000

    other = PolitenessGate(
        redis_client, keys, Politeness(per_host=PER_HOST, slot_ttl_s=5.0, max_poll_s=0.02)
    )
    with anyio.fail_after(DEADLINE_S):
        async with other.slot(HOST, "a") as first, other.slot(HOST, "b") as second:
            pass
    assert max(first.started_ms, second.started_ms) <= max(expiries) + LATE_MS
