"""The server's memory: a full one is waited out, one that evicts is refused.

A server at its ``maxmemory`` with the policy ``noeviction`` refuses writes with ``OOM``
and applies none of them: like an unreachable server, it is waited out (``ride_out_retry``)
until someone raises ``maxmemory`` or frees memory. Any other policy deletes keys when
memory runs out, the job's among them (a lane, the log, a lease, ``seen``): work lost
without a word. So a process that writes refuses such a server at start, and a crawl reads
the policy again while it runs (``crawler.cli._processes``).

Both are read from ``INFO memory``. A user whose ACL denies ``INFO`` (it is in
``@dangerous``) cannot be told: the check is skipped, not failed.
"""

from __future__ import annotations

import logging

import msgspec
import redis.asyncio as aioredis
import redis.exceptions

from eventlog._exceptions import ServerError, ServerEvicts

log = logging.getLogger(__name__)

NOEVICTION = "noeviction"
"""The one ``maxmemory-policy`` that never deletes a key: a full server refuses writes."""
MEMORY_CHECK_S = 2.0
"""How often a running crawl reads its server's memory (its policy, whether it is full)."""


class ServerMemory(msgspec.Struct, frozen=True):
    """What ``INFO memory`` says of the server's memory, in bytes."""

    used: int
    maxmemory: int
    """0: no limit."""
    policy: str
    not_counted: int = 0
    """What the server leaves out when it compares with ``maxmemory`` (replication and
    AOF buffers)."""

    @property
    def full(self) -> bool:
        """Whether the server refuses writes for memory now (as it decides it)."""
        return self.maxmemory > 0 and self.used - self.not_counted > self.maxmemory

    @property
    def evicts(self) -> bool:
        return self.policy != NOEVICTION


async def read_memory(client: aioredis.Redis) -> ServerMemory | None:
    """The server's memory; None if this user may not ask (``INFO`` denied by its ACL)."""
    # Imported here: ``_connection`` checks the policy with this module as it connects.
    from eventlog._connection import redis_errors

    try:
        with redis_errors("reading the server's memory"):
            info = await client.info("memory")
    except ServerError as exc:
        if not isinstance(exc.__cause__, redis.exceptions.NoPermissionError):
            raise
        log.debug("INFO is denied to this user: the server's memory policy is not checked")
        return None
    return ServerMemory(
        used=int(info.get("used_memory", 0)),
        maxmemory=int(info.get("maxmemory", 0)),
        policy=str(info.get("maxmemory_policy", NOEVICTION)),
        not_counted=int(info.get("mem_not_counted_for_evict", 0)),
    )


def evicting_server(policy: str, where: str) -> ServerEvicts:
    """The error for a server at ``where`` (a redacted URL) whose policy evicts keys."""
    return ServerEvicts(
        f"the Redis server at {where} has maxmemory-policy {policy}: when it runs out of "
        "memory it deletes keys, the job's tasks and log among them. Set `maxmemory-policy "
        "noeviction` (CONFIG SET maxmemory-policy noeviction, and in its config file), then "
        "run the same command again",
        policy,
    )


def out_of_memory_advice(where: str) -> str:
    """What to do about a server at ``where`` that refuses writes for memory."""
    return (
        f"the Redis server at {where} is out of memory (maxmemory reached) and refuses writes: "
        "raise its maxmemory (CONFIG SET maxmemory) or free memory on it"
    )


async def require_noeviction(client: aioredis.Redis, where: str) -> ServerMemory | None:
    """``ServerEvicts`` if the server's ``maxmemory-policy`` evicts keys; its memory (None
    if this user may not read it)."""
    memory = await read_memory(client)
    if memory is not None and memory.evicts:
        raise evicting_server(memory.policy, where)
    return memory
