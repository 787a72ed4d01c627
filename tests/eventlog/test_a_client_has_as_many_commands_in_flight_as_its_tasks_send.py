"""A client runs as many commands at once as its tasks send: redis-py 7 caps a pool at 100
connections and raises "Too many connections" past them, which failed a restarted worker
whose backlog's tasks all asked for their host slot and lease at once."""

from __future__ import annotations

import anyio
import pytest
import redis.asyncio as aioredis

pytestmark = pytest.mark.anyio

AT_ONCE = 150
"""More than redis-py's own cap (100)."""


async def test_a_client_runs_more_blocking_commands_at_once_than_redis_py_s_cap(
    redis_client: aioredis.Redis, job: str
) -> None:
    answered: list[object] = []

    async def wait_on_an_empty_list(n: int) -> None:
        answered.append(await redis_client.blpop([f"{job}:nothing:{n}"], timeout=0.2))

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            for n in range(AT_ONCE):
                tg.start_soon(wait_on_an_empty_list, n)
    assert answered == [None] * AT_ONCE
