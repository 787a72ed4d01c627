"""The replica set's supervisor restarts its dead primary, once the Sentinels have promoted
the replica, as the new primary's replica from its first moment: not a primary on its own
stale data until the Sentinels next look (seconds in which a second failover would promote
it, stale, and have the replica that took over copy it), so a failover back onto it keeps
what the first new primary took. A dead replica comes back as the primary's replica too;
a primary whose replica is dead too comes back as it was."""

from __future__ import annotations

import os
import signal
from typing import Any

import anyio
import pytest
import redis.asyncio as aioredis
import redis.exceptions
from redis.asyncio.sentinel import Sentinel

from eventlog import (
    DEFAULT_RIDE_OUT_S,
    ReplicaSetInfo,
    connect,
    replica_set_password_path,
    replica_set_status,
    supervise_replica_set,
)
from eventlog._connection import command
from eventlog._replica_set import HOST, SERVICE, Member, restart_plan

pytestmark = pytest.mark.anyio

SUPERVISE_EVERY_S = 0.1
DEADLINE_S = 60
WAIT_MS = 20_000
"""How long the write waits for the restarted old primary's acknowledgement, at most."""


def test_a_dead_data_server_comes_back_as_the_replica_of_the_primary_the_sentinels_name() -> None:
    node = Member("node-a", 7001, sentinel=False)
    assert restart_plan(node, (HOST, 7002), data_running=True) == "replica"
    assert restart_plan(node, (HOST, 7002), data_running=False) == "replica"


def test_a_dead_primary_waits_for_its_replica_s_promotion_unless_that_replica_is_dead() -> None:
    node = Member("node-a", 7001, sentinel=False)
    assert restart_plan(node, (HOST, 7001), data_running=True) == "wait"
    assert restart_plan(node, (HOST, 7001), data_running=False) == "as configured"


def test_with_no_primary_named_and_for_a_sentinel_the_config_file_decides() -> None:
    assert restart_plan(Member("node-a", 7001, False), None, data_running=True) == "as configured"
    sentinel = Member("sentinel-1", 7003, sentinel=True)
    assert restart_plan(sentinel, (HOST, 7001), data_running=True) == "as configured"


async def replication(port: int, password: str) -> dict[str, Any] | None:
    """The server's ``INFO replication``, None while it does not answer."""
    client = aioredis.Redis(host=HOST, port=port, password=password, socket_timeout=1.0)
    try:
        info: dict[str, Any] = await client.info("replication")
    except (redis.exceptions.RedisError, OSError):
        return None
    finally:
        await client.aclose()
    return info


async def fail_over_to(sentinel: Member, port: int, password: str) -> None:
    """Have the Sentinels promote the replica on ``port``, as they do on their own when they
    call a new primary down (on a loaded machine, right after a failover)."""
    asked = aioredis.Redis(host=HOST, port=sentinel.port, password=password, decode_responses=True)
    try:
        while True:
            try:
                await command(asked, "SENTINEL", "FAILOVER", SERVICE)
            except redis.exceptions.ResponseError:  # no replica it trusts yet, or in progress
                await anyio.sleep(0.1)
                continue
            break
        while await asked.sentinel_get_master_addr_by_name(SERVICE) != (HOST, port):
            await anyio.sleep(0.05)
    finally:
        await asked.aclose()


async def until_the_sentinels_report(sentinels: list[Member], port: int, password: str) -> None:
    """Wait until a Sentinel's table of primaries (what a client's discovery reads) names the
    one on ``port``. The supervisor restarts a dead primary as soon as a Sentinel *names* the
    promoted replica, which it does mid-failover, before its table switches: a client that
    connects in between finds no primary, as it would mid-failover anywhere."""
    asked = Sentinel([(HOST, s.port) for s in sentinels], sentinel_kwargs={"password": password})
    try:
        while True:
            try:
                if await asked.discover_master(SERVICE) == (HOST, port):
                    return
            except redis.exceptions.ConnectionError:  # MasterNotFoundError: mid-failover
                pass
            await anyio.sleep(0.05)
    finally:
        await asked.aclose()


async def test_the_killed_primary_comes_back_a_replica_and_a_failover_onto_it_loses_nothing(
    replica_set: ReplicaSetInfo,
) -> None:
    data_dir = replica_set.data_dir
    members = replica_set_status(data_dir) or []
    (primary,) = [m for m in members if m.role == "primary"]
    (replica,) = [m for m in members if m.role == "replica"]
    sentinel = next(m for m in replica_set.members if m.sentinel)
    assert primary.pid is not None
    password = replica_set_password_path(data_dir).read_text().strip()
    said: list[str] = []
    with anyio.fail_after(DEADLINE_S):
        async with anyio.create_task_group() as supervision:
            supervision.start_soon(
                lambda: supervise_replica_set(data_dir, said.append, every_s=SUPERVISE_EVERY_S)
            )
            os.kill(primary.pid, signal.SIGKILL)
            while not any("died; restarted it" in line for line in said):
                await anyio.sleep(0.05)
            first = None
            while first is None:
                first = await replication(primary.port, password)
            sentinels = [m for m in replica_set.members if m.sentinel]
            await until_the_sentinels_report(sentinels, replica.port, password)
            # On the new primary, and on a replica in sync (WAIT counts what its own
            # connection wrote: one pipeline, one connection).
            async with (
                connect(replica_set.url, ride_out_s=DEFAULT_RIDE_OUT_S) as client,
                client.pipeline(transaction=False) as pipe,
            ):
                pipe.set("between", "1")
                pipe.wait(1, WAIT_MS)
                _, confirmed = await pipe.execute()
            # Its config file says so too: a later start of the set starts it a replica.
            config = (data_dir / "replicas" / primary.name / "valkey.conf").read_text()
            await fail_over_to(sentinel, primary.port, password)
            supervision.cancel_scope.cancel()
    # Its first answer: a replica of the promoted one, not a primary on its own file.
    assert first is not None
    assert first["role"] == "slave", first
    assert first["master_port"] == replica.port, first
    assert [line for line in said if " died; " in line] == [
        f"{primary.name} of the replica set (port {primary.port}) died; restarted it as a "
        f"replica of {HOST}:{replica.port}"
    ], said
    assert f"replicaof {HOST} {replica.port}" in config.splitlines()
    assert confirmed == 1
    promoted = aioredis.Redis(host=HOST, port=primary.port, password=password)
    try:
        assert await promoted.get("between") == b"1"  # what the first new primary took
    finally:
        await promoted.aclose()
