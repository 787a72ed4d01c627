"""robots.txt shared by a job's workers: fetched once per site, kept for its lifetime.

One worker takes the site's fetch lock (SET NX PX, renewed while it fetches) and fetches;
the others block on the site's ready list until it is stored (or the lock expires, its
holder killed or stalled: then one of them takes the lock and fetches). The stored
response lives for the lifetime the crawler gives it (RFC 9309: at most 24 hours), so a
restarted worker, or one started later, reads it rather than asking the site again. What
the response means is the crawler's (``crawler._robots``); this module keeps the bytes
and the order of who fetches.
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable
from typing import Final

import anyio
import msgspec
import redis.asyncio as aioredis

from eventlog._connection import command, max_block_ms, redis_errors
from eventlog._ids import new_event_id
from eventlog._keys import JobKeys
from eventlog._scripts import LOCK_ACQUIRE, ROBOTS_STORE

ROBOTS_LOCK_MS: Final = 3_000
"""The fetch lock's lifetime, renewed by its holder every third of it while it fetches: a
holder killed or stalled (SIGSTOP) mid-fetch holds the others back this long at most."""


class RobotsFile(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A robots.txt response as the job keeps it (the value of `JobKeys.robots`)."""

    status: int
    """Its HTTP status; 0 when no response came."""
    body: bytes = b""
    error: str | None = None
    """Why the fetch failed, if it did."""
    expires_at: float
    """Wall-clock time (Unix seconds) after which it is fetched again."""
    fetched_by: str = ""
    """The worker that fetched it."""


_encoder: Final = msgspec.msgpack.Encoder()
_decoder: Final = msgspec.msgpack.Decoder(RobotsFile)


class SharedRobots:
    """The robots.txt responses of one job's sites, fetched under one holder's name."""

    def __init__(self, redis: aioredis.Redis, keys: JobKeys, holder: str) -> None:
        self.redis = redis
        self.keys = keys
        self.holder = holder
        self._store = redis.register_script(ROBOTS_STORE)
        self._renew = redis.register_script(LOCK_ACQUIRE)
        self._block_s = max_block_ms() / 1000

    async def get(self, site: str) -> RobotsFile | None:
        """The stored response of ``site``, if it has one that has not expired."""
        with redis_errors("reading a stored robots.txt"):
            raw = await command(self.redis, "GET", self.keys.robots(site))
        if raw is None:
            return None
        try:
            found = _decoder.decode(raw)
        except msgspec.DecodeError:
            return None  # unreadable: fetched again and overwritten
        return found if found.expires_at > time.time() else None

    async def fetch_once(self, site: str, fetch: Callable[[], Awaitable[RobotsFile]]) -> RobotsFile:
        """The response of ``site``: the stored one, else the one ``fetch`` gets if this
        holder is the one to fetch it, else the one another holder stores meanwhile (or,
        if that holder stops renewing its lock, the one this holder then fetches)."""
        token = f"{self.holder}|{new_event_id()}"
        lock = self.keys.robots_fetch(site)
        while True:
            if (stored := await self.get(site)) is not None:
                return stored
            with redis_errors("taking robots.txt's fetch lock"):
                mine = await self.redis.set(lock, token, nx=True, px=ROBOTS_LOCK_MS)
                left_ms = ROBOTS_LOCK_MS if mine else await self.redis.pttl(lock)
            if mine:
                return await self._fetch(site, fetch, token)
            # Woken as soon as the holder stores it; at the latest when its lock expires,
            # to look again (and take the lock if it did).
            wait_s = min(max(left_ms, 1), ROBOTS_LOCK_MS) / 1000
            wait_s = min(wait_s, self._block_s)
            ready = self.keys.robots_ready(site)
            with redis_errors("waiting for robots.txt"):
                await command(self.redis, "BLMOVE", ready, ready, "RIGHT", "LEFT", f"{wait_s:.3f}")

    async def _keep_lock(self, lock: str, token: str) -> None:
        while True:
            await anyio.sleep(ROBOTS_LOCK_MS / 3 / 1000)
            with redis_errors("renewing robots.txt's fetch lock"):
                await self._renew(keys=[lock], args=[token, ROBOTS_LOCK_MS])

    async def _fetch(
        self,
        site: str,
        fetch: Callable[[], Awaitable[RobotsFile]],
        token: str,
    ) -> RobotsFile:
        # A ready element left by an earlier fetch of the site would wake the waiters of
        # this one before anything is stored.
        with redis_errors("fetching robots.txt"):
            await self.redis.delete(self.keys.robots_ready(site))
        lock = self.keys.robots_fetch(site)
        async with anyio.create_task_group() as renewing:
            renewing.start_soon(self._keep_lock, lock, token)
            got = await fetch()
            renewing.cancel_scope.cancel()
        got = msgspec.structs.replace(got, fetched_by=self.holder)
        lifetime_ms = max(1, math.ceil((got.expires_at - time.time()) * 1000))
        keys = [self.keys.robots(site), self.keys.robots_fetch(site), self.keys.robots_ready(site)]
        with redis_errors("storing robots.txt"):
            await self._store(
                keys=keys, args=[_encoder.encode(got), lifetime_ms, token, ROBOTS_LOCK_MS]
            )
        return got
