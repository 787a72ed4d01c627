"""A server at its ``maxmemory`` (policy ``noeviction``) refuses writes with ``OOM``: a
long-running client waits it out like a lost server, says so once with what to do, and
carries on when memory is raised; past its ride-out the refusal is ``ServerOutOfMemory``.
A server whose policy evicts keys is refused by such a client at once (``ServerEvicts``),
and ``ServerMemory`` tells a full server and an evicting one from what ``INFO`` says."""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
import pytest
import redis.asyncio as aioredis
from hypothesis import given
from hypothesis import strategies as st

from eventlog import (
    EventLog,
    ServerEvicts,
    ServerMemory,
    ServerOutOfMemory,
    TaskEnqueued,
    connect,
    read_memory,
)
from tests.valkey_process import running_valkey

pytestmark = pytest.mark.anyio
SAID = "is out of memory (maxmemory reached) and refuses writes: raise its maxmemory"


def _event(n: int) -> TaskEnqueued:
    return TaskEnqueued(actor="t", task_id=f"t{n}", url=f"http://s.test/{n}", site="http://s.test")


async def test_a_write_refused_for_memory_waits_until_memory_is_raised(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with running_valkey(tmp_path / "v", "--save", "") as server:
        async with (
            connect(server.url, ride_out_s=30) as client,
            aioredis.Redis.from_url(server.url) as admin,
        ):
            log = EventLog(client, "full")
            await log.append(_event(0))
            await admin.config_set("maxmemory", "1")
            written: list[str | None] = []

            async def append() -> None:
                written.extend(await log.append_many([_event(n) for n in range(1, 4)]))

            with caplog.at_level(logging.WARNING), anyio.fail_after(20):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(append)
                    while SAID not in caplog.text:
                        await anyio.sleep(0.02)
                    await anyio.sleep(1.0)  # refused again and again meanwhile
                    assert not written
                    memory = await read_memory(client)
                    assert memory is not None and memory.full and not memory.evicts
                    await admin.config_set("maxmemory", "0")
            assert len(written) == 3 and all(written)
            assert await log.length() == 4
            assert caplog.text.count(SAID) == 1


async def test_a_refusal_for_memory_past_the_ride_out_is_one_crawlog_error(
    tmp_path: Path,
) -> None:
    with running_valkey(tmp_path / "v", "--save", "") as server:
        async with (
            connect(server.url, ride_out_s=0.5) as client,
            aioredis.Redis.from_url(server.url) as admin,
        ):
            await admin.config_set("maxmemory", "1")
            with pytest.raises(ServerOutOfMemory, match="Raise its maxmemory"):
                await EventLog(client, "full").append(_event(0))


async def test_a_server_whose_policy_evicts_is_refused_by_a_writer(tmp_path: Path) -> None:
    with running_valkey(tmp_path / "v", "--maxmemory-policy", "volatile-lru") as server:
        with pytest.raises(ServerEvicts, match="maxmemory-policy volatile-lru") as refused:
            async with connect(server.url, ride_out_s=5):
                pass
        assert refused.value.policy == "volatile-lru"
        assert "Set `maxmemory-policy noeviction`" in str(refused.value)
        async with connect(server.url) as reader:  # a one-off reader is not refused
            memory = await read_memory(reader)
            assert memory is not None and memory.evicts


@given(used=st.integers(0, 10**9), not_counted=st.integers(0, 10**6))
def test_a_server_without_a_limit_is_never_full(used: int, not_counted: int) -> None:
    memory = ServerMemory(used=used, maxmemory=0, policy="noeviction", not_counted=not_counted)
    assert not memory.full


@given(limit=st.integers(1, 10**9), over=st.integers(1, 10**6), buffers=st.integers(0, 10**6))
def test_a_server_is_full_past_its_limit_less_its_buffers(
    limit: int, over: int, buffers: int
) -> None:
    past = ServerMemory(
        used=limit + over + buffers, maxmemory=limit, policy="noeviction", not_counted=buffers
    )
    within = ServerMemory(
        used=limit + buffers, maxmemory=limit, policy="noeviction", not_counted=buffers
    )
    assert past.full and not within.full
    assert not past.evicts
    assert ServerMemory(used=0, maxmemory=limit, policy="allkeys-lru").evicts
