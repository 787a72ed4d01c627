"""A script call on a connection `ScriptCaller` kept goes to the primary the Sentinels name
once its pool has learned of a failover, even while the old primary is still up and still
takes writes (a failover that did not kill it: the Sentinels turn it into a replica only
when they next look at it). Left on the old primary, the write would be lost with it."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
import redis.asyncio as aioredis

from eventlog import DEFAULT_RIDE_OUT_S, ReplicaSetInfo, connect, replica_set_status
from eventlog._connection import ScriptCaller, command
from eventlog._replica_set import HOST, SERVICE
from eventlog._scripts import LOCK_ACQUIRE

pytestmark = pytest.mark.anyio

TTL_MS = 60_000
FAILOVER_DEADLINE_S = 30


async def test_a_kept_connection_writes_to_the_new_primary_not_the_old_one_still_up(
    replica_set: ReplicaSetInfo,
) -> None:
    members = replica_set_status(replica_set.data_dir) or []
    (primary,) = [m for m in members if m.role == "primary"]
    (replica,) = [m for m in members if m.role == "replica"]
    sentinel = next(m for m in replica_set.members if m.sentinel)
    password = (replica_set.data_dir / "replicas" / "password").read_text().strip()
    old = aioredis.Redis(host=HOST, port=primary.port, password=password)
    new = aioredis.Redis(host=HOST, port=replica.port, password=password)
    asked = aioredis.Redis(host=HOST, port=sentinel.port, password=password)
    try:
        async with connect(replica_set.url, ride_out_s=DEFAULT_RIDE_OUT_S) as client:
            caller = ScriptCaller(client)
            script = client.register_script(LOCK_ACQUIRE)
            assert await caller(script, ["before"], ["me", TTL_MS]) == 1  # a kept connection
            await command(asked, "SENTINEL", "FAILOVER", SERVICE)
            pool: Any = client.connection_pool
            with anyio.fail_after(FAILOVER_DEADLINE_S):
                # What a new connection of the pool does: ask the Sentinels.
                while await pool.get_master_address() != (HOST, replica.port):
                    await anyio.sleep(0.05)
            info: dict[str, Any] = await old.info("replication")
            assert info["role"] == "master"  # the old primary still takes writes
            assert await caller(script, ["after"], ["me", TTL_MS]) == 1
            assert await old.get("after") is None
            assert await new.get("after") == b"me"
    finally:
        for each in (old, new, asked):
            await each.aclose()
