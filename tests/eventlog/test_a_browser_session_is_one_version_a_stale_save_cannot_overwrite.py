"""A browser session in Redis: each save is the next version of the whole state, written
only if the writer's copy was the current version (a stale writer is told the current one
and writes nothing), one session per identity, a state bound to its identity."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis

from eventlog import (
    NO_SESSION_VERSION,
    BrowserCookie,
    BrowserSessionStore,
    JobKeys,
    OriginStorage,
    SessionIdentity,
    SessionState,
)

pytestmark = pytest.mark.anyio
ORIGIN = "http://127.0.0.1:8000"
ME = SessionIdentity(user_agent="crawlog-test/1")
OTHER = SessionIdentity(user_agent="crawlog-test/1", proxy="http://127.0.0.1:3128")


def state(token: str, identity: SessionIdentity = ME) -> SessionState:
    cookie = BrowserCookie(name="sid", value=token, domain="127.0.0.1", http_only=True)
    storage = OriginStorage(local={"token": token}, session={"token": token})
    return SessionState(identity=identity, cookies=(cookie,), origins={ORIGIN: storage})


async def test_saves_are_versions_and_a_stale_copy_writes_nothing(
    redis_client: aioredis.Redis, keys: JobKeys
) -> None:
    store = BrowserSessionStore(redis_client, keys)
    assert await store.read(ME) == (NO_SESSION_VERSION, None)

    assert await store.save(state("a"), NO_SESSION_VERSION) == (1, True)
    assert await store.save(state("b"), 1) == (2, True)
    # A writer whose copy is of version 1 (another worker saved meanwhile): refused.
    assert await store.save(state("stale"), 1) == (2, False)
    assert await store.read(ME) == (2, state("b"))


async def test_each_identity_has_its_own_session(
    redis_client: aioredis.Redis, keys: JobKeys
) -> None:
    store = BrowserSessionStore(redis_client, keys)
    await store.save(state("mine"), NO_SESSION_VERSION)
    assert await store.read(OTHER) == (NO_SESSION_VERSION, None)
    await store.save(state("theirs", OTHER), NO_SESSION_VERSION)
    assert (await store.read(ME)).state == state("mine")
    assert (await store.read(OTHER)).state == state("theirs", OTHER)
    assert await store.identities() == sorted([ME.key, OTHER.key])
    assert ME.key != OTHER.key
