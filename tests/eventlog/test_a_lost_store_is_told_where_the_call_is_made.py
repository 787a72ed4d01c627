"""A store that lost the job is said where the call is made, not left for the command line
to find: a settle raced against the store going down meets the server's NOGROUP and raises
`StoreLost` naming the job (not a task group's error); the projector's lease, its data
gone with the store, says `StoreLost`, while a lease another projector took is a
`ProjectorLeaseLost`. A real server's keys are really deleted."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
import redis.asyncio as aioredis

from eventlog import (
    JobKeys,
    Journal,
    ProjectorLeaseLost,
    StoreLost,
    TaskQueue,
    clear_job_keys,
    create_identity,
    hold_projector_lease,
)
from tests.eventlog.helpers import checkpoint, task

pytestmark = pytest.mark.anyio


async def test_a_settle_on_lanes_gone_is_store_lost_naming_the_job(
    redis_client: aioredis.Redis, job: str, tmp_path: Path
) -> None:
    # Journalled and epoch 0 (a job begun before identities): the write goes through the
    # race against the store going down, and meets the lane's NOGROUP itself.
    queue = TaskQueue(redis_client, job, "w1", journal=Journal(tmp_path / "journal"))
    await queue.enqueue([task(1)], actor="seed")
    [lease] = await queue.claim(1)
    await clear_job_keys(redis_client, queue.keys, keep=[])
    with pytest.raises(StoreLost) as lost:
        await queue.checkpoint(lease, checkpoint("task-1", 1))
    assert lost.value.job == job
    assert "consumer group is gone" in str(lost.value)


async def test_a_lease_gone_with_the_store_is_told_from_a_takeover(
    redis_client: aioredis.Redis, keys: JobKeys
) -> None:
    identity = await create_identity(redis_client, keys)
    async with hold_projector_lease(redis_client, keys, "/data/one", ttl_ms=300) as lease:
        lease.epoch = identity.epoch
        await lease.renew()
        await clear_job_keys(redis_client, keys, keep=[])  # the lease and identity with it
        with pytest.raises(StoreLost, match="lease went with its data"):
            await lease.renew()
        with pytest.raises(StoreLost):
            lease.check()
    await create_identity(redis_client, keys, identity)
    async with hold_projector_lease(redis_client, keys, "/data/one", ttl_ms=300) as lease:
        lease.epoch = identity.epoch
        await lease.publish_and_trim("1-0", None)
        with anyio.fail_after(10):
            while await redis_client.exists(keys.projector_lease):
                await anyio.sleep(0.02)
        async with hold_projector_lease(redis_client, keys, "/data/two") as other:
            await other.publish_and_trim("2-0", None)
            with pytest.raises(ProjectorLeaseLost):
                await lease.renew()
