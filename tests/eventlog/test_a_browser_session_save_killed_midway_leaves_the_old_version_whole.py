"""A worker SIGKILLed while it sends a session save — the server holding part of the
command, as its CLIENT LIST shows — leaves the session at its old version, whole: the
state read back is the one saved with that version (each state carries its number), and
the next save builds on it."""

from __future__ import annotations

import os
import signal
import sys
import textwrap
from pathlib import Path

import anyio
import pytest
import redis.asyncio as aioredis

from eventlog import BrowserSessionStore, JobKeys, OriginStorage, SessionIdentity, SessionState

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[2]
SAVER = "session-saver"
IDENTITY = SessionIdentity(user_agent="crawlog-test/1")
ORIGIN = "http://127.0.0.1:8000"
BIG = 8 * 1024 * 1024
"""Bytes of storage per state: a save long enough in transit to be caught in it."""

CHILD = textwrap.dedent(
    f"""
    import asyncio, sys
    from eventlog import (
        BrowserSessionStore, JobKeys, OriginStorage, SessionIdentity, SessionState, connect,
    )

    async def main(url, job):
        async with connect(url) as client:
            await client.client_setname({SAVER!r})
            store = BrowserSessionStore(client, JobKeys(job))
            identity = SessionIdentity(user_agent={IDENTITY.user_agent!r})
            version = 0
            while True:
                number = str(version + 1)
                blob = number.ljust({BIG}, "x")
                storage = OriginStorage(local={{"n": number, "blob": blob}})
                state = SessionState(identity=identity, origins={{{ORIGIN!r}: storage}})
                version, saved = await store.save(state, version)
                assert saved
                print(version, flush=True)

    asyncio.run(main(*sys.argv[1:]))
    """
)


async def _mid_save(client: aioredis.Redis) -> bool:
    """Whether the saver's connection holds part of a command the server has not run."""
    for info in await client.client_list():
        if info.get("name") == SAVER:
            return int(info.get("qbuf", 0)) > 0 or int(info.get("argv-mem", 0)) > 0
    return False


async def test_a_save_killed_midway_leaves_the_old_version_whole(
    redis_client: aioredis.Redis, valkey_url: str, job: str
) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-c", CHILD, valkey_url, job]
    async with await anyio.open_process(command, env=env, cwd=ROOT) as saver:
        assert saver.stdout is not None
        with anyio.fail_after(40):
            await saver.stdout.receive()  # a first version saved, whole
            while not await _mid_save(redis_client):
                pass
            saver.send_signal(signal.SIGKILL)
            await saver.wait()
    store = BrowserSessionStore(redis_client, JobKeys(job))
    version, state = await store.read(IDENTITY)
    assert version >= 1
    assert state is not None
    storage = state.origins[ORIGIN]
    assert storage.local["n"] == str(version), "the state is the one saved as this version"
    assert len(storage.local["blob"]) == BIG
    after = SessionState(identity=IDENTITY, origins={ORIGIN: OriginStorage(local={"n": "x"})})
    assert await store.save(after, version) == (version + 1, True)
