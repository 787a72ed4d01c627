"""The projector's committed position, published in Redis: SET for those who ask, PUBLISH
for those who wait (no polling)."""

from __future__ import annotations

import anyio
import redis.asyncio as aioredis

from eventlog._connection import redis_errors
from eventlog._keys import JobKeys
from eventlog._log import stream_id_key


async def publish_projector_position(redis: aioredis.Redis, keys: JobKeys, position: str) -> None:
    """Say that the job's projector has committed up to stream ID ``position``."""
    with redis_errors("publishing the projector position"):
        await redis.set(keys.projector, position)
        await redis.publish(keys.projector, position)


async def read_projector_position(redis: aioredis.Redis, keys: JobKeys) -> str | None:
    """The position the job's projector last published, if any."""
    with redis_errors("reading the projector position"):
        value = await redis.get(keys.projector)
    return value.decode() if isinstance(value, bytes) else None


async def wait_for_projector_position(
    redis: aioredis.Redis, keys: JobKeys, goal: str, timeout_s: float
) -> str | None:
    """Wait until the job's projector has committed stream ID ``goal``.

    Returns the committed position then, or None if ``timeout_s`` passed first.
    """
    target = stream_id_key(goal)
    channel = keys.projector
    with redis_errors("waiting for the projector"), anyio.move_on_after(timeout_s):
        async with redis.pubsub() as pubsub:
            # Subscribe before reading the key: a commit in between is then never missed.
            await pubsub.subscribe(channel)
            position = await read_projector_position(redis, keys)
            while position is None or stream_id_key(position) < target:
                message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=None)
                if message is not None:
                    position = message["data"].decode()
            return position
    return None
