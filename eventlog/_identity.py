"""A job's identity in the store: what tells the job's own store from one that lost it.

``crawlog crawl`` mints the identity when it creates a job (`create_identity`); the
projector records it in every manifest it commits. A store without it while the archive
holds events, with another one, or whose log ends before the committed position has lost
the job (flushed, evicted, restarted on a missing or cut append-only file): `store_verdict`
says so as a `StoreLost`, before anyone takes the job for a new one. The epoch is raised by
each ``crawlog restore``: a process that saw another epoch holds leases of a store that no
longer exists (`check_identity`). A Sentinel promotion raises it too (`eventlog._failover`),
but its leases live on in the promoted replica: a process follows that raise.
"""

from __future__ import annotations

import uuid
from typing import Literal

import msgspec
import redis.asyncio as aioredis

from eventlog._connection import command, redis_errors
from eventlog._exceptions import StoreLost
from eventlog._failover import may_follow, primary_facts
from eventlog._keys import IDENTITY_EPOCH, IDENTITY_ID, JobKeys
from eventlog._log import START, stream_id_key

FIRST_EPOCH = 1


class JobIdentity(msgspec.Struct, frozen=True, kw_only=True):
    """Who a job is (``job_id``, minted once) and which store generation (``epoch``)."""

    job_id: str
    epoch: int = FIRST_EPOCH


class StoreFacts(msgspec.Struct, frozen=True, kw_only=True):
    """What the store holds of a job, as `store_verdict` weighs it."""

    identity: JobIdentity | None
    has_keys: bool
    """Its settings, log or a task lane exist."""
    last_id: str | None
    """The last ID its log ever generated (None: no log)."""


class ArchiveFacts(msgspec.Struct, frozen=True, kw_only=True):
    """What the job's archive (the projector's manifest) says of it."""

    job_id: str | None = None
    epoch: int = 0
    position: str = START
    events: int = 0


Verdict = Literal["ok", "create"]
"""`store_verdict`: the store is the job's, or the job is new to it (mint its identity)."""


def new_job_id() -> str:
    """A fresh job identity."""
    return uuid.uuid4().hex


def store_verdict(job: str, store: StoreFacts, archive: ArchiveFacts) -> Verdict:
    """Whether the store is the job's own (``ok``), knows nothing the archive would miss
    (``create``: a new job, or one begun before identities), or lost it (`StoreLost`)."""
    archived = archive.events > 0 or archive.position != START
    if store.identity is not None:
        if archive.job_id is not None and store.identity.job_id != archive.job_id:
            raise StoreLost(
                job,
                f"the store holds another job of that name (identity {store.identity.job_id}, "
                f"the archive's {archive.job_id})",
            )
        if store.identity.epoch < archive.epoch:
            raise StoreLost(
                job,
                f"the store is at epoch {store.identity.epoch}, older than the archive's "
                f"{archive.epoch}: it was restarted from an older copy",
            )
    elif archived and (archive.job_id is not None or not store.has_keys):
        missing = "its keys are gone" if not store.has_keys else "its identity key is gone"
        raise StoreLost(job, f"{missing} while the archive holds {archive.events} event(s)")
    if archived and (
        store.last_id is None or stream_id_key(store.last_id) < stream_id_key(archive.position)
    ):
        ends = "has no log" if store.last_id is None else f"has a log that ends at {store.last_id}"
        raise StoreLost(
            job, f"the store {ends}, before the archive's committed position {archive.position}"
        )
    return "ok" if store.identity is not None else "create"


async def read_identity(redis: aioredis.Redis, keys: JobKeys) -> JobIdentity | None:
    """The job's identity in the store, None if it has none."""
    with redis_errors("reading the job's identity"):
        raw = await redis.hmget(keys.identity, [IDENTITY_ID, IDENTITY_EPOCH])
    job_id, epoch = raw
    if job_id is None:
        return None
    text = job_id.decode() if isinstance(job_id, bytes) else str(job_id)
    return JobIdentity(job_id=text, epoch=int(epoch or FIRST_EPOCH))


async def store_facts(redis: aioredis.Redis, keys: JobKeys) -> StoreFacts:
    """What the store holds of the job (three round trips, at a process's start)."""
    identity = await read_identity(redis, keys)
    with redis_errors("looking for the job's keys"):
        present = int(await redis.exists(keys.config, keys.events, *keys.lanes))
        try:
            info = await command(redis, "XINFO", "STREAM", keys.events)
        except Exception as exc:
            if "no such key" not in str(exc).lower():
                raise
            info = None
    last_id = None
    if info is not None:
        fields = dict(zip(info[::2], info[1::2], strict=True))
        raw = fields.get(b"last-generated-id", fields.get("last-generated-id"))
        last_id = raw.decode() if isinstance(raw, bytes) else raw
    return StoreFacts(identity=identity, has_keys=present > 0, last_id=last_id)


async def create_identity(
    redis: aioredis.Redis, keys: JobKeys, identity: JobIdentity | None = None
) -> JobIdentity:
    """Mint the job's identity unless the store has one (then that one is returned)."""
    mint = identity or JobIdentity(job_id=new_job_id())
    with redis_errors("recording the job's identity"):
        async with redis.pipeline(transaction=True) as pipe:
            pipe.hsetnx(keys.identity, IDENTITY_ID, mint.job_id)
            pipe.hsetnx(keys.identity, IDENTITY_EPOCH, mint.epoch)
            await pipe.execute()
    found = await read_identity(redis, keys)
    assert found is not None, "written just now"
    return found


async def set_identity(redis: aioredis.Redis, keys: JobKeys, identity: JobIdentity) -> None:
    """Record ``identity`` (a restore's, with its new epoch) over whatever is there."""
    with redis_errors("recording the job's identity"):
        await redis.hset(
            keys.identity, mapping={IDENTITY_ID: identity.job_id, IDENTITY_EPOCH: identity.epoch}
        )


async def check_identity(
    redis: aioredis.Redis, keys: JobKeys, expected: JobIdentity
) -> JobIdentity:
    """`StoreLost` unless the store still holds ``expected`` (same job, same epoch, or an
    epoch only Sentinel promotions raised since: `eventlog._failover`); the identity the
    store holds."""
    now = await read_identity(redis, keys)
    if now == expected:
        return now
    if now is not None and now.job_id == expected.job_id and now.epoch > expected.epoch:
        facts = await primary_facts(redis, keys)
        if may_follow(expected.epoch, now.epoch, facts.failovers):
            return now
    if now is None:
        raise StoreLost(keys.job, "its identity key is gone: the store lost its data")
    if now.job_id != expected.job_id:
        raise StoreLost(keys.job, "the store now holds another job of that name")
    raise StoreLost(
        keys.job,
        f"it was restored meanwhile (epoch {expected.epoch} -> {now.epoch}): what this "
        "process holds is void",
    )
