"""The projector's lease: a second holder is refused with the first one named; a holder
that lost it neither publishes nor trims; one that lapsed while nobody committed is taken
back; a dead holder of this machine is taken over at once."""

from __future__ import annotations

import socket
import subprocess
import sys

import anyio
import pytest
import redis.asyncio as aioredis

from eventlog import (
    EventLog,
    JobKeys,
    ProjectorHeld,
    ProjectorLeaseLost,
    TaskEnqueued,
    hold_projector_lease,
    last_committer,
    projector_holder,
    read_projector_position,
)

pytestmark = pytest.mark.anyio


async def _events(log: EventLog, n: int) -> list[str]:
    ids = await log.append_many(
        [TaskEnqueued(actor="t", task_id=f"t{i}", url=f"http://s.test/{i}", site="http://s.test")
         for i in range(n)]
    )  # fmt: skip
    return [i for i in ids if i is not None]


async def test_a_second_holder_is_refused_naming_the_first(
    redis_client: aioredis.Redis, keys: JobKeys
) -> None:
    async with hold_projector_lease(redis_client, keys, "/data/one") as lease:
        holder = await projector_holder(redis_client, keys)
        assert holder == lease.holder
        with pytest.raises(ProjectorHeld) as refused:
            async with hold_projector_lease(redis_client, keys, "/data/two"):
                pass
        said = str(refused.value)
        assert f"host {socket.gethostname()}, pid {lease.holder.pid}" in said
        assert "data directory /data/one, since " in said
    assert await projector_holder(redis_client, keys) is None, "released on exit"


async def test_a_lost_lease_neither_publishes_nor_trims(
    redis_client: aioredis.Redis, keys: JobKeys, log: EventLog
) -> None:
    ids = await _events(log, 5)
    async with hold_projector_lease(redis_client, keys, "/data/one", ttl_ms=300) as lease:
        assert await lease.publish_and_trim(ids[1], ids[1]) == 1
        assert (await last_committer(redis_client, keys)) == lease.holder
        with anyio.fail_after(10):
            while await redis_client.exists(keys.projector_lease):
                await anyio.sleep(0.02)
        async with hold_projector_lease(redis_client, keys, "/data/two") as other:
            with pytest.raises(ProjectorLeaseLost, match="lost its lease"):
                await lease.publish_and_trim(ids[4], ids[4])
            with pytest.raises(ProjectorLeaseLost):
                await lease.renew()
            assert await read_projector_position(redis_client, keys) == ids[1]
            assert await log.length() == 4
            assert await other.publish_and_trim(ids[3], None) == 0
        # Lapsed, and another committed since: not taken back.
        with pytest.raises(ProjectorLeaseLost):
            await lease.renew()


async def test_a_lapsed_lease_nobody_took_is_taken_back(
    redis_client: aioredis.Redis, keys: JobKeys, log: EventLog
) -> None:
    ids = await _events(log, 3)
    async with hold_projector_lease(redis_client, keys, "/data/one", ttl_ms=300) as lease:
        await lease.publish_and_trim(ids[0], None)
        with anyio.fail_after(10):
            while await redis_client.exists(keys.projector_lease):
                await anyio.sleep(0.02)
        await lease.renew()
        assert await projector_holder(redis_client, keys) == lease.holder
        await lease.publish_and_trim(ids[2], None)
        assert await read_projector_position(redis_client, keys) == ids[2]


HOLD_AND_DIE = """
import os, signal, sys
import anyio
from eventlog import JobKeys, connect, hold_projector_lease

async def main():
    async with connect(sys.argv[1]) as client:
        async with hold_projector_lease(client, JobKeys(sys.argv[2]), "/data/dead", ttl_ms=60_000):
            os.kill(os.getpid(), signal.SIGKILL)

anyio.run(main)
"""


async def test_a_dead_holder_of_this_machine_is_taken_over_at_once(
    redis_client: aioredis.Redis, keys: JobKeys, valkey_url: str, job: str
) -> None:
    killed = subprocess.run(
        [sys.executable, "-c", HOLD_AND_DIE, valkey_url, job], capture_output=True, timeout=60
    )
    assert killed.returncode == -9, killed.stderr
    dead = await projector_holder(redis_client, keys)
    assert dead is not None and dead.data_dir == "/data/dead"
    with anyio.fail_after(5):
        async with hold_projector_lease(redis_client, keys, "/data/alive") as lease:
            assert await projector_holder(redis_client, keys) == lease.holder
