"""The worker-name lock: one live process per worker name.

A worker's leases are its name's PEL, so two processes restarting under one name would
both resume the same pending entries. The name is held with a key that expires unless the
holder keeps renewing it: a process killed with SIGKILL lets the name go after ``ttl_ms``
of server time, never earlier.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import redis.asyncio as aioredis

from eventlog._connection import redis_errors
from eventlog._exceptions import WorkerNameTaken
from eventlog._keys import JobKeys
from eventlog._scripts import LOCK_ACQUIRE, LOCK_RELEASE

DEFAULT_NAME_TTL_MS = 5_000
RENEWALS_PER_TTL = 3
NAME_RETRY_MARGIN_S = 0.05
"""Renew this many times per TTL, so a few slow round trips never let the name lapse."""
DEFAULT_RELEASE_TIMEOUT_S = 1.0
"""How long the release of a name may take on exit; a name not released expires (TTL)."""


@asynccontextmanager
async def hold_worker_name(
    redis: aioredis.Redis,
    keys: JobKeys,
    worker: str,
    *,
    ttl_ms: int = DEFAULT_NAME_TTL_MS,
    wait_s: float = 0.0,
    release_timeout_s: float = DEFAULT_RELEASE_TIMEOUT_S,
) -> AsyncIterator[str]:
    """Hold ``worker``'s name while the block runs; ``WorkerNameTaken`` if a live process has it.

    With ``wait_s``, wait that long for the name first: a worker restarted right after a
    SIGKILL finds its name held by the dead process until the name's TTL runs out.
    Yields the holder's token. The name is renewed in the background and released on exit,
    within ``release_timeout_s``: a server that does not answer must not hold up a stop
    (the name then expires after its TTL, as a killed holder's does).
    """
    key, token = keys.worker_lock(worker), secrets.token_hex(16)
    acquire = redis.register_script(LOCK_ACQUIRE)
    deadline = anyio.current_time() + wait_s
    with redis_errors("taking the worker name"):
        while not await acquire(keys=[key], args=[token, ttl_ms]):
            remaining = max(int(await redis.pttl(key)), 0)
            if anyio.current_time() + remaining / 1000 > deadline:
                raise WorkerNameTaken(worker, remaining)
            await anyio.sleep(remaining / 1000 + NAME_RETRY_MARGIN_S)

    async def keep() -> None:
        while True:
            await anyio.sleep(ttl_ms / 1000 / RENEWALS_PER_TTL)
            with redis_errors("renewing the worker name"):
                if not await acquire(keys=[key], args=[token, ttl_ms]):
                    raise WorkerNameTaken(worker, 0)

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(keep)
            yield token
            tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True) as releasing:
            releasing.deadline = anyio.current_time() + release_timeout_s
            with redis_errors("releasing the worker name"):
                await redis.register_script(LOCK_RELEASE)(keys=[key], args=[token])
