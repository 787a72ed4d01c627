"""A command the socket does not take whole at once (its rest waits in the transport's
buffer, where the socket timeout bounds the wait) arrives whole, and the calls after it
are sent as usual."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis

from eventlog import ScriptBatcher

pytestmark = pytest.mark.anyio

LARGE = 8 * 1024 * 1024
"""Far more than a socket's send buffer."""


async def test_a_large_argument_arrives_whole(redis_client: aioredis.Redis, job: str) -> None:
    length = redis_client.register_script("return string.len(ARGV[1])")
    batcher = ScriptBatcher(redis_client)
    assert await batcher.call(length, [], [b"x" * LARGE]) == LARGE
    assert await batcher.call(length, [], [b"small"]) == len(b"small")
    await redis_client.set(f"{job}:large", b"y" * LARGE)
    assert await redis_client.strlen(f"{job}:large") == LARGE
