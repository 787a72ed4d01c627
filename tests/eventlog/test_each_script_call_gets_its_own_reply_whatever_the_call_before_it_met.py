"""A script call sent alone (`ScriptBatcher.call` while not running: `ScriptCaller`) runs
on a connection kept from the call before: whatever that call met (cut short before its
reply came, an error reply, a script the server forgot), the next call reads its own
reply, never one left behind."""

from __future__ import annotations

import anyio
import pytest
import redis.asyncio as aioredis
import redis.exceptions

from eventlog import ScriptBatcher

pytestmark = pytest.mark.anyio

ECHO = "return ARGV[1]"
FAIL = "return redis.error_reply('ERR refused by the test')"
PAUSE_MS = 300
CALLS_AFTER = 5


async def test_a_call_cut_short_before_its_reply_leaves_nothing_for_the_next(
    redis_client: aioredis.Redis,
) -> None:
    echo = redis_client.register_script(ECHO)
    batcher = ScriptBatcher(redis_client)
    assert await batcher.call(echo, [], ["warm"]) == b"warm"
    # The server takes the call but answers it only once the pause is over.
    await redis_client.client_pause(PAUSE_MS, all=True)
    with anyio.move_on_after(PAUSE_MS / 3000) as waited:
        await batcher.call(echo, [], ["cut short"])
    assert waited.cancelled_caught
    with anyio.fail_after(10):
        for i in range(CALLS_AFTER):
            assert await batcher.call(echo, [], [f"after {i}"]) == f"after {i}".encode()


async def test_an_error_reply_reaches_its_caller_and_the_next_call_gets_its_own(
    redis_client: aioredis.Redis,
) -> None:
    echo, fail = redis_client.register_script(ECHO), redis_client.register_script(FAIL)
    batcher = ScriptBatcher(redis_client)
    for i in range(CALLS_AFTER):
        with pytest.raises(redis.exceptions.ResponseError, match="refused by the test"):
            await batcher.call(fail, [], [])
        assert await batcher.call(echo, [], [f"after {i}"]) == f"after {i}".encode()


async def test_a_script_the_server_forgot_is_loaded_again(redis_client: aioredis.Redis) -> None:
    echo = redis_client.register_script(ECHO)
    batcher = ScriptBatcher(redis_client)
    assert await batcher.call(echo, [], ["before"]) == b"before"
    await redis_client.script_flush()
    assert await batcher.call(echo, [], ["after"]) == b"after"
    assert await redis_client.script_exists(echo.sha) == [True]
