"""The projector renews its lease while it publishes: after a promotion both calls are
refused in the old epoch. The first refusal to come back follows the promotion; the other,
back later, is sent again in the epoch followed, not taken for a store that lost the job
(a crawl through a failover stopped with `StoreLost` that way, the renewal having waited
out the outage longer than the publish)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
import redis.asyncio as aioredis

from eventlog import JobKeys
from tests.eventlog.helpers import lease_in_the_job_s_epoch, raise_epoch

pytestmark = pytest.mark.anyio


class HeldBack:
    """A lease script whose reply is held back until let go (the real server answers)."""

    def __init__(self, script: Any) -> None:
        self.script = script
        self.answered = anyio.Event()
        self.let_go = anyio.Event()

    async def __call__(self, **kwargs: Any) -> Any:
        reply = await self.script(**kwargs)
        self.answered.set()
        await self.let_go.wait()
        return reply


async def test_a_renewal_refused_in_the_old_epoch_goes_on_once_a_publish_followed(
    redis_client: aioredis.Redis, keys: JobKeys
) -> None:
    async with lease_in_the_job_s_epoch(redis_client, keys) as (identity, lease):
        raised = identity.epoch + 1
        await raise_epoch(redis_client, keys, identity, raised, failover=True)
        renewal = HeldBack(lease._renew)
        lease._renew = renewal  # type: ignore[assignment]
        with anyio.fail_after(10):
            async with anyio.create_task_group() as calls:
                calls.start_soon(lease.renew)  # refused in the old epoch, held back
                await renewal.answered.wait()
                await lease.publish_and_trim("5-0", None)  # refused too: follows
                assert lease.epoch == raised
                renewal.let_go.set()
        assert lease.store_lost is None
        await lease.renew()
    assert await redis_client.get(keys.projector) == b"5-0"
