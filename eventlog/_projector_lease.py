"""The projector's lease: one projector per job, wherever it runs.

A projector's file lock (``projector._store``) keeps a second projector of the same data
directory out; two data directories (two machines, one ``REDIS_URL``) each had their own,
and the log was trimmed after whichever committed, so each archive missed what the other
had trimmed. The lease is held in the store instead: a key whose value names the holder
(`ProjectorHolder`: host, pid, data directory, since when) and expires unless renewed.

It fences what reaches the store: the projector publishes its position and trims the log
only through ``PROJECTOR_PUBLISH``, which does neither unless the caller still holds the
lease; and it commits (its own files) only after renewing it. A holder that stalled past
its TTL (SIGSTOP, a long pause) takes it back only if nobody committed meanwhile (the
published position is still its own, ``PROJECTOR_LEASE_RENEW``); else it has lost it
(`ProjectorLeaseLost`) and stops without committing.

A holder of this machine that is gone (killed: its lease is left to expire) is taken over
at once, as a worker's name is (``_lock.is_gone``); one elsewhere is refused
(`ProjectorHeld`), naming it.
"""

from __future__ import annotations

import os
import secrets
import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime

import anyio
import msgspec
import redis.asyncio as aioredis

from eventlog._connection import redis_errors, script_pipeline
from eventlog._exceptions import ProjectorHeld, ProjectorLeaseLost, StoreLost
from eventlog._failover import may_follow, primary_facts
from eventlog._keys import JobKeys
from eventlog._lock import RENEWALS_PER_TTL, is_gone, this_process
from eventlog._scripts import (
    LOCK_ACQUIRE,
    LOCK_RELEASE,
    LOCK_TAKE_OVER,
    PROJECTOR_LEASE_RENEW,
    PROJECTOR_PUBLISH,
)

DEFAULT_PROJECTOR_LEASE_MS = 15_000
"""How long a projector that stopped renewing (killed, stalled) holds the job."""
RELEASE_TIMEOUT_S = 1.0


class ProjectorHolder(msgspec.Struct, frozen=True, kw_only=True):
    """Who holds a job's projector lease: the lease key's value (JSON)."""

    token: str
    process: str
    """``machine|pid|start time`` (``_lock.this_process``): whether it is gone."""
    host: str
    pid: int
    data_dir: str
    since_ms: int
    """When it took the lease (its own clock, for people)."""

    def describe(self) -> str:
        since = datetime.fromtimestamp(self.since_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")
        where = f"host {self.host}, pid {self.pid}, data directory {self.data_dir}"
        return f"{where}, since {since} UTC"


def holder_of(value: object) -> ProjectorHolder | None:
    """The holder a lease value names; None for none (or a value that is not one)."""
    if not isinstance(value, bytes | str):
        return None
    try:
        return msgspec.json.decode(value, type=ProjectorHolder)
    except msgspec.DecodeError:
        return None


class ProjectorLease:
    """A held projector lease: renewed, checked before a commit, and the one way to
    publish a position and trim the log."""

    def __init__(
        self, redis: aioredis.Redis, keys: JobKeys, holder: ProjectorHolder, ttl_ms: int
    ) -> None:
        self.redis = redis
        self.keys = keys
        self.holder = holder
        self.value = msgspec.json.encode(holder)
        self.ttl_ms = ttl_ms
        self.published = ""
        """The published position when the lease was taken, then the last this holder
        published: the lease lapsed and nobody moved it, it may be taken back."""
        self.lost = False
        self.epoch = 0
        """The job's epoch the holder started in (`JobIdentity.epoch`; 0: not checked):
        the lease's scripts tell a store that lost the job (`StoreLost`) from a takeover."""
        self.store_lost: StoreLost | None = None
        self._renew = redis.register_script(PROJECTOR_LEASE_RENEW)
        self._publish = redis.register_script(PROJECTOR_PUBLISH)

    def check(self) -> None:
        """``ProjectorLeaseLost`` if the lease was found lost, `StoreLost` if it went with
        the store's data."""
        if self.store_lost is not None:
            raise self.store_lost
        if self.lost:
            raise self._lost()

    async def renew(self) -> None:
        """Renew the lease (or take it back, see the module); ``ProjectorLeaseLost`` if it
        is another's now."""
        self.check()
        keys = [self.keys.projector_lease, self.keys.projector, self.keys.identity]
        sent = self.epoch
        args: list[str | bytes | int] = [self.value, self.ttl_ms, self.published, sent]
        with redis_errors("renewing the projector's lease"):
            held = int(await self._renew(keys=keys, args=args))
            if held < 0 and await self._follows_promotion(sent):
                args[3] = self.epoch
                held = int(await self._renew(keys=keys, args=args))
        if held < 0:
            raise self._gone()
        if not held:
            self.lost = True
            raise self._lost()

    async def keep(self) -> None:
        """Renew the lease until cancelled; on losing it, stop renewing (``check`` says it)."""
        while True:
            await anyio.sleep(self.ttl_ms / 1000 / RENEWALS_PER_TTL)
            try:
                await self.renew()
            except (ProjectorLeaseLost, StoreLost):
                return

    async def publish_and_trim(self, position: str, minid: str | None) -> int:
        """Publish ``position`` as committed and trim the log below ``minid`` (None: no
        trim), fenced by the lease; the entries trimmed. ``ProjectorLeaseLost`` (and
        nothing done) if the lease is not this holder's."""
        self.check()
        keys = [
            self.keys.projector_lease,
            self.keys.projector,
            self.keys.events,
            self.keys.projector_committer,
            self.keys.identity,
        ]
        sent = self.epoch
        args: list[str | bytes | int] = [
            self.value, self.ttl_ms, position, minid or "", sent,
        ]  # fmt: skip
        with redis_errors("publishing the projector position"):
            (reply,) = await script_pipeline(self.redis, [(self._publish, keys, args)])
            if int(reply[0]) < 0 and await self._follows_promotion(sent):
                args[4] = self.epoch
                (reply,) = await script_pipeline(self.redis, [(self._publish, keys, args)])
        held, trimmed = int(reply[0]), int(reply[1])
        if held < 0:
            raise self._gone()
        if not held:
            self.lost = True
            raise self._lost()
        self.published = position
        return trimmed

    async def _follows_promotion(self, sent: int) -> bool:
        """Whether the job's epoch moved on from ``sent`` (the epoch of the call it refused)
        by Sentinel promotions only (`eventlog._failover`): then the lease, which the
        promoted replica holds, goes on in the new epoch.

        A renewal and a publish run side by side, and both are refused after a promotion:
        the first to come back follows it, and the other finds the holder's epoch already
        moved on from the one it sent. It is sent again in the holder's epoch, not taken
        for a store that lost the job (the store's epoch is no newer than the holder's: a
        crawl through a failover stopped on that)."""
        if not self.epoch:
            return False
        if self.epoch != sent:
            return True
        facts = await primary_facts(self.redis, self.keys)
        if facts.epoch > self.epoch and may_follow(self.epoch, facts.epoch, facts.failovers):
            self.epoch = facts.epoch
            return True
        return False

    def _gone(self) -> StoreLost:
        self.store_lost = StoreLost(
            self.keys.job,
            f"the projector's lease went with its data (identity gone, or not of epoch "
            f"{self.epoch} any more)",
        )
        return self.store_lost

    def _lost(self) -> ProjectorLeaseLost:
        return ProjectorLeaseLost(self.keys.job, self.holder.data_dir)


@asynccontextmanager
async def hold_projector_lease(
    redis: aioredis.Redis,
    keys: JobKeys,
    data_dir: str,
    *,
    ttl_ms: int = DEFAULT_PROJECTOR_LEASE_MS,
) -> AsyncIterator[ProjectorLease]:
    """Hold the job's projector lease while the block runs; ``ProjectorHeld`` (naming the
    holder) if a live projector has it. Released on exit (within ``RELEASE_TIMEOUT_S``;
    a lease not released expires). Renewing it is the caller's (``ProjectorLease.keep``)."""
    process = this_process()
    holder = ProjectorHolder(
        token=secrets.token_hex(16),
        process=process,
        host=socket.gethostname(),
        pid=os.getpid(),
        data_dir=data_dir,
        since_ms=int(time.time() * 1000),
    )
    lease = ProjectorLease(redis, keys, holder, ttl_ms)
    key = keys.projector_lease
    with redis_errors("taking the projector's lease"):
        while not await redis.register_script(LOCK_ACQUIRE)(keys=[key], args=[lease.value, ttl_ms]):
            value = await redis.get(key)
            if not isinstance(value, bytes):
                continue  # released meanwhile: try again
            other = holder_of(value)
            if other is not None and other.process and is_gone(f"x|{other.process}".encode()):
                take_over = redis.register_script(LOCK_TAKE_OVER)
                if await take_over(keys=[key], args=[value, lease.value, ttl_ms]):
                    break
                continue
            remaining = max(int(await redis.pttl(key)), 0)
            raise ProjectorHeld(keys.job, other.describe() if other else repr(value), remaining)
        published = await redis.get(keys.projector)
    lease.published = published.decode() if isinstance(published, bytes) else ""
    try:
        yield lease
    finally:
        with anyio.CancelScope(shield=True) as releasing:
            releasing.deadline = anyio.current_time() + RELEASE_TIMEOUT_S
            with redis_errors("releasing the projector's lease"):
                await redis.register_script(LOCK_RELEASE)(keys=[key], args=[lease.value])


async def projector_holder(redis: aioredis.Redis, keys: JobKeys) -> ProjectorHolder | None:
    """Who holds the job's projector lease now, if anyone."""
    with redis_errors("reading the projector's lease"):
        return holder_of(await redis.get(keys.projector_lease))


async def last_committer(redis: aioredis.Redis, keys: JobKeys) -> ProjectorHolder | None:
    """The holder whose commit last published the job's position (and trimmed its log)."""
    with redis_errors("reading the projector's last committer"):
        return holder_of(await redis.get(keys.projector_committer))
