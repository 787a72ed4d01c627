"""One live process per worker name, so two restarts cannot both resume one PEL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import anyio
import pytest
import redis.asyncio as aioredis

from eventlog import JobKeys, WorkerNameTaken, hold_worker_name

pytestmark = pytest.mark.anyio

HOLDER = textwrap.dedent(
    """
    import sys, anyio
    from eventlog import JobKeys, connect, hold_worker_name

    async def main(url, job):
        async with connect(url) as client:
            async with hold_worker_name(client, JobKeys(job), "w1", ttl_ms=400):
                print("HELD", flush=True)
                await anyio.sleep_forever()

    anyio.run(main, *sys.argv[1:])
    """
)


async def test_a_held_name_is_refused_to_a_second_process(
    redis_client: aioredis.Redis, keys: JobKeys
) -> None:
    async with hold_worker_name(redis_client, keys, "w1"):
        with pytest.raises(WorkerNameTaken, match="pick another --name"):
            async with hold_worker_name(redis_client, keys, "w1"):
                pass
        async with hold_worker_name(redis_client, keys, "w2"):
            pass


async def test_a_released_name_can_be_taken_again(
    redis_client: aioredis.Redis, keys: JobKeys
) -> None:
    async with hold_worker_name(redis_client, keys, "w1"):
        pass
    async with hold_worker_name(redis_client, keys, "w1"):
        pass


async def test_the_holder_keeps_its_name_past_the_ttl_by_renewing(
    redis_client: aioredis.Redis, keys: JobKeys
) -> None:
    async with hold_worker_name(redis_client, keys, "w1", ttl_ms=150):
        await anyio.sleep(0.5)  # several TTLs: only renewal keeps the name
        with pytest.raises(WorkerNameTaken):
            async with hold_worker_name(redis_client, keys, "w1"):
                pass


async def test_a_killed_holders_name_is_free_once_its_ttl_passes(
    redis_client: aioredis.Redis, keys: JobKeys, valkey_url: str
) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, valkey_url, keys.job], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "HELD"
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    holder.stdout.close()

    with pytest.raises(WorkerNameTaken) as taken:
        async with hold_worker_name(redis_client, keys, "w1"):
            pass
    await anyio.sleep(taken.value.expires_in_ms / 1000 + 0.05)  # server time must pass
    async with hold_worker_name(redis_client, keys, "w1"):
        pass
