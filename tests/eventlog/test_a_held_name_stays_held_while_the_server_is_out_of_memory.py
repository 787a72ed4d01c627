"""A server out of memory (``maxmemory`` below what it holds, policy ``noeviction``)
refuses a ``SET``, and runs a ``PEXPIRE``: a worker's name (or a crawl's lock, or a
projector's lease) is renewed through it, so a live holder never seems gone while the
server is full, and a free name is not taken meanwhile."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
import redis.asyncio as aioredis

from eventlog import JobKeys, ServerOutOfMemory, connect, hold_worker_name
from tests.valkey_process import running_valkey

pytestmark = pytest.mark.anyio
TTL_MS = 600
FULL_FOR_TTLS = 4


async def test_a_held_name_is_renewed_while_the_server_is_out_of_memory(tmp_path: Path) -> None:
    keys = JobKeys("full")
    with running_valkey(tmp_path / "v", "--save", "") as server:
        async with (
            connect(server.url, ride_out_s=30, quiet=True) as client,
            connect(server.url, ride_out_s=0.2, quiet=True) as other,
            aioredis.Redis.from_url(server.url) as admin,
            hold_worker_name(client, keys, "w1", ttl_ms=TTL_MS),
        ):
            await admin.config_set("maxmemory", "1")  # writes refused from now
            try:
                with pytest.raises(ServerOutOfMemory):
                    async with hold_worker_name(other, keys, "w2", ttl_ms=TTL_MS):
                        pass
                until = anyio.current_time() + FULL_FOR_TTLS * TTL_MS / 1000
                while anyio.current_time() < until:
                    assert await admin.pttl(keys.worker_lock("w1")) > 0
                    await anyio.sleep(0.05)
            finally:
                await admin.config_set("maxmemory", "0")
