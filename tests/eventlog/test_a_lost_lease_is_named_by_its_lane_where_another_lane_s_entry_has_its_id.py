"""An entry id is unique within its lane only: two tasks enqueued by one call into two
lanes get the same id in each. `TaskQueue.renew_held` says which of them was lost by its
lane and id (`Lease.held_as`), where `TaskQueue.renew`'s entry id names both."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import redis.asyncio as aioredis

from eventlog import LANE_HIGH, LANE_NORMAL, WORKERS_GROUP, TaskQueue
from tests.eventlog.helpers import task

pytestmark = pytest.mark.anyio
MakeQueue = Callable[..., TaskQueue]


async def test_only_the_lease_another_worker_took_is_lost_though_its_id_names_two(
    make_queue: MakeQueue, redis_client: aioredis.Redis
) -> None:
    w1 = make_queue("w1")
    await w1.enqueue([task(1, priority=1), task(2)], actor="seed")
    leases = await w1.claim(2)
    assert sorted(lease.lane for lease in leases) == [LANE_HIGH, LANE_NORMAL]
    [entry_id] = {lease.entry_id for lease in leases}  # one call, one millisecond: one id
    # Another worker takes the normal lane's entry (as a recovery after a stall would).
    await redis_client.execute_command(
        "XCLAIM", w1.keys.tasks(LANE_NORMAL), WORKERS_GROUP, "w2", 0, entry_id, "JUSTID"
    )
    assert await w1.renew(leases) == {entry_id}
    assert await w1.renew_held(leases) == {(LANE_NORMAL, entry_id)}
    assert await w1.renew_held([lease for lease in leases if lease.lane == LANE_HIGH]) == set()
