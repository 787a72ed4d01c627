"""The projector's lease is held in the job's epoch. A Sentinel promotion raises that epoch
(recorded as a failover's) and the new primary holds the lease the old one had: the lease
goes on in the new epoch. A restore raises it too, and the lease went with the store's
data: `StoreLost`, as before."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis

from eventlog import JobKeys, StoreLost
from tests.eventlog.helpers import lease_in_the_job_s_epoch, raise_epoch

pytestmark = pytest.mark.anyio


async def test_the_lease_takes_the_epoch_a_promotion_raised(
    redis_client: aioredis.Redis, keys: JobKeys
) -> None:
    async with lease_in_the_job_s_epoch(redis_client, keys) as (identity, lease):
        raised = identity.epoch + 1
        await raise_epoch(redis_client, keys, identity, raised, failover=True)
        await lease.renew()
        assert lease.epoch == raised
        await lease.publish_and_trim("5-0", None)
        assert await redis_client.get(keys.projector) == b"5-0"


async def test_a_restore_after_it_voids_the_lease(
    redis_client: aioredis.Redis, keys: JobKeys
) -> None:
    async with lease_in_the_job_s_epoch(redis_client, keys) as (identity, lease):
        await raise_epoch(redis_client, keys, identity, 2, failover=True)
        await raise_epoch(redis_client, keys, identity, 3, failover=False)
        with pytest.raises(StoreLost, match="lease went with its data"):
            await lease.publish_and_trim("5-0", None)
        assert await redis_client.get(keys.projector) is None
