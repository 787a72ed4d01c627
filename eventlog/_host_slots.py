"""The per-host politeness keys of a job: slots on a host, its next start time, its delays.

``crawler``'s politeness gate decides when to ask and how long to wait; what it asks
the server, and the layout of what the server keeps, live here (the keys in ``_keys``,
the script in ``_scripts``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import NamedTuple

import redis.asyncio as aioredis

from eventlog._batching import ScriptBatcher
from eventlog._connection import redis_errors
from eventlog._keys import JobKeys
from eventlog._scripts import FETCH_STARTED, POLITENESS_ACQUIRE, POLITENESS_OBSERVE

_NONE: Mapping[str, str] = MappingProxyType({})


class SlotAnswer(NamedTuple):
    """The server's answer to a request for a slot on a host, in server milliseconds."""

    wait_ms: int
    """0 when the slot is held; else how long to wait before asking again."""
    at_ms: int
    """The slot's start when held, else the server's time now."""
    full: bool = False
    """Not held because every slot of the host is (the wait is a poll for a release); else
    the wait is the host's delay, and the slot is free once it is over."""
    delay_ms: int = -1
    """When held: the delay (ms) between two starts that applied to the host as it was
    taken (the longest of the caller's, the host's own and the adapted one); -1 when not
    known (a retry found the slot held)."""


class HostSlots:
    """The politeness slots of one job's hosts, taken and freed under one holder's name.

    ``batcher``: sends the taking of a slot with the holder's other script calls (its
    queue's, `TaskQueue.batcher`); None: each alone."""

    def __init__(
        self,
        redis: aioredis.Redis,
        keys: JobKeys,
        holder: str,
        *,
        batcher: ScriptBatcher | None = None,
    ) -> None:
        self.redis = redis
        self.keys = keys
        self.holder = holder
        self.batcher = batcher or ScriptBatcher(redis)
        self._acquire = redis.register_script(POLITENESS_ACQUIRE)
        self._observe = redis.register_script(POLITENESS_OBSERVE)
        self._started = redis.register_script(FETCH_STARTED)

    async def acquire(
        self,
        host: str,
        token: str,
        *,
        per_host: int,
        delay_ms: int,
        ttl_ms: int,
        max_wait_ms: int,
        freeing: Mapping[str, str] = _NONE,
        task_id: str = "",
    ) -> SlotAnswer:
        """Take slot ``token`` on ``host`` if one is free and its next start time has come
        (asking again with the same token finds the slot taken); first free the slots
        ``freeing`` (token -> host) of the same holder, in the same step. A slot taken for
        a task (``task_id``) records, in the same step, that the task's request may go
        (`JobKeys.fetches_started`)."""
        keys = self.keys.host_slot_keys(host, self.holder)
        args: list[str | int] = [token, per_host, delay_ms, ttl_ms, max_wait_ms, host, task_id]
        for freed, freed_host in freeing.items():
            keys.append(self.keys.host_slots(freed_host))
            args.append(freed)
        with redis_errors("taking a host slot"):
            reply = await self.batcher.call(self._acquire, keys, args)
        delay = int(reply[3]) if len(reply) > 3 else -1
        return SlotAnswer(int(reply[0]), int(reply[1]), len(reply) > 2 and reply[2] == 1, delay)

    async def record_started(self, task_id: str) -> None:
        """Record that ``task_id``'s request may go on a slot the holder holds already
        (`JobKeys.fetches_started`), as `acquire` does with the slot it takes."""
        key = self.keys.fetches_started(self.holder)
        with redis_errors("recording a request's start"):
            if self.batcher.is_running:
                await self.batcher.call(self._started, [key], [task_id])
            else:  # alone, a plain HSET costs the client less than a script call
                await self.redis.hset(key, task_id, "")

    async def release(self, host: str, token: str) -> None:
        """Free slot ``token`` on ``host`` and its entry in the holder's index, atomically."""
        await self.release_all({token: host})

    async def release_all(self, slots: Mapping[str, str]) -> None:
        """Free the slots ``slots`` (token -> host) and their entries in the holder's
        index, atomically."""
        if not slots:
            return
        with redis_errors("freeing a host slot"):
            async with self.redis.pipeline(transaction=True) as pipe:
                for token, host in slots.items():
                    pipe.zrem(self.keys.host_slots(host), token)
                pipe.hdel(self.keys.slots_held(self.holder), *slots)
                await pipe.execute()

    async def set_delay(self, host: str, delay_ms: int, *, ttl_ms: int) -> None:
        """Space request starts to ``host`` by at least ``delay_ms``, for ``ttl_ms``."""
        with redis_errors("setting a host's delay"):
            await self.redis.set(self.keys.host_delay(host), delay_ms, px=ttl_ms)

    async def observe(
        self,
        host: str,
        latency_ms: float,
        kind: str,
        *,
        target: float,
        floor_ms: int,
        max_ms: int,
        ttl_ms: int,
        throttled_factor: float,
        throttled_min_ms: int,
    ) -> int:
        """Fold one fetch's ``latency_ms`` (a sample of ``kind``: see `POLITENESS_OBSERVE`)
        into ``host``'s adapted delay, kept ``ttl_ms``; the new delay (ms)."""
        args: list[str | int | float] = [
            repr(float(latency_ms)),
            kind,
            repr(float(target)),
            floor_ms,
            max_ms,
            ttl_ms,
            repr(float(throttled_factor)),
            throttled_min_ms,
        ]
        with redis_errors("adapting a host's delay"):
            delay = await self._observe(keys=[self.keys.host_adapted_delay(host)], args=args)
        return int(delay)


class HostDelays(NamedTuple):
    """The delays (ms) the server keeps for one host; None where it keeps none."""

    host: str
    crawl_delay_ms: int | None
    """Set by a worker (robots.txt Crawl-delay)."""
    adapted_ms: int | None
    """Adapted to the host's latency (``--autothrottle``)."""


async def read_host_delays(
    redis: aioredis.Redis, keys: JobKeys, hosts: Sequence[str]
) -> list[HostDelays]:
    """The delays the server keeps for each of ``hosts``, in their order (one round trip)."""
    if not hosts:
        return []
    names = [k for h in hosts for k in (keys.host_delay(h), keys.host_adapted_delay(h))]
    with redis_errors("reading the hosts' delays"):
        values = await redis.mget(names)
    found = [None if v is None else int(v) for v in values]
    return [HostDelays(h, found[2 * i], found[2 * i + 1]) for i, h in enumerate(hosts)]
