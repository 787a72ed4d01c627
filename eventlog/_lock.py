"""The worker-name lock: one live process per worker name; the job's crawl lock: one live
``crawlog crawl`` per job.

A worker's leases are its name's PEL, so two processes restarting under one name would
both resume the same pending entries. The name is held with a key that expires unless the
holder keeps renewing it: a process killed with SIGKILL lets the name go after ``ttl_ms``
of server time, or at once to a process of the same machine that can see it is gone.

The key's value is the holder's token and where it runs: the machine (its boot id and pid
namespace, so that a container with its own pids is another machine), its pid and that
process's start time. A process of the same machine finding the name held checks
``/proc``: no such process, a zombie, or another process since under that pid (another
start time) means the holder is dead, and the name is taken over (compare and set, so two
restarts cannot both take it). A holder elsewhere, or where ``/proc`` cannot tell, is
waited out for the TTL.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
import redis.asyncio as aioredis

from eventlog._connection import redis_errors
from eventlog._exceptions import CrawlogError, JobAlreadyCrawled, ServerError, WorkerNameTaken
from eventlog._keys import JobKeys
from eventlog._scripts import LOCK_ACQUIRE, LOCK_RELEASE, LOCK_TAKE_OVER

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
    lock = _Lock(
        keys.worker_lock(worker),
        "the worker name",
        lambda _holder, remaining_ms: WorkerNameTaken(worker, remaining_ms),
        ttl_ms=ttl_ms,
    )
    async with _held(redis, lock, wait_s=wait_s, release_timeout_s=release_timeout_s) as token:
        yield token


@asynccontextmanager
async def hold_job_crawl(
    redis: aioredis.Redis, keys: JobKeys, *, ttl_ms: int = DEFAULT_NAME_TTL_MS
) -> AsyncIterator[str]:
    """Hold the job's crawl lock while the block runs: one ``crawlog crawl`` of a job at a
    time. ``JobAlreadyCrawled``, naming the holder's pid and since when it crawls, if a live
    crawl has it; a crawl killed on this machine lets it go at once (as a worker's name),
    one killed elsewhere after ``ttl_ms``."""
    job = keys.job

    def refused(holder: bytes | None, _remaining_ms: int) -> JobAlreadyCrawled:
        pid, since = _holder_pid_and_since(holder)
        return JobAlreadyCrawled(job, pid, since)

    # A guard, not a fence (the workers' leases are that): a server that cannot write
    # (a full disk) must not end the crawl through it, which says so once, in its summary.
    lock = _Lock(keys.crawl_lock, "the job's crawl lock", refused, ttl_ms=ttl_ms, lenient=True)
    async with _held(redis, lock, wait_s=0.0) as token:
        yield token


@dataclass(frozen=True, slots=True)
class _Lock:
    """A key held by one live process, and what to raise when another has it: given the
    holder's value (None once it is gone) and the ms left of its TTL."""

    key: str
    what: str
    refused: Callable[[bytes | None, int], CrawlogError]
    ttl_ms: int
    lenient: bool = False
    """A renewal or release the server refuses (``ServerError``) is let go: the lock may
    lapse (and expires), the holder goes on."""


@asynccontextmanager
async def _held(
    redis: aioredis.Redis,
    lock: _Lock,
    *,
    wait_s: float,
    release_timeout_s: float = DEFAULT_RELEASE_TIMEOUT_S,
) -> AsyncIterator[str]:
    """Hold ``lock`` while the block runs (see `hold_worker_name`); its token."""
    key, ttl_ms = lock.key, lock.ttl_ms
    # The token's first part says since when and by which pid, for whoever finds it held.
    token = f"{secrets.token_hex(16)}@{int(time.time())}@{os.getpid()}|{this_process()}"
    acquire = redis.register_script(LOCK_ACQUIRE)
    deadline = anyio.current_time() + wait_s
    with redis_errors(f"taking {lock.what}"):
        while not await acquire(keys=[key], args=[token, ttl_ms]):
            holder = await redis.get(key)
            if isinstance(holder, bytes) and is_gone(holder):
                take_over = redis.register_script(LOCK_TAKE_OVER)
                if await take_over(keys=[key], args=[holder, token, ttl_ms]):
                    break
                continue  # held by someone else since: look again
            remaining = max(int(await redis.pttl(key)), 0)
            if anyio.current_time() + remaining / 1000 > deadline:
                raise lock.refused(holder if isinstance(holder, bytes) else None, remaining)
            await anyio.sleep(remaining / 1000 + NAME_RETRY_MARGIN_S)

    async def keep() -> None:
        while True:
            await anyio.sleep(ttl_ms / 1000 / RENEWALS_PER_TTL)
            with _unless(lock.lenient), redis_errors(f"renewing {lock.what}"):
                if not await acquire(keys=[key], args=[token, ttl_ms]):
                    raise lock.refused(None, 0)

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(keep)
            yield token
            tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True) as releasing:
            releasing.deadline = anyio.current_time() + release_timeout_s
            with _unless(lock.lenient), redis_errors(f"releasing {lock.what}"):
                await redis.register_script(LOCK_RELEASE)(keys=[key], args=[token])


def _unless(lenient: bool) -> AbstractContextManager[object]:
    """Let a server's refusal go where ``lenient``."""
    return contextlib.suppress(ServerError) if lenient else contextlib.nullcontext()


def _holder_pid_and_since(holder: bytes | None) -> tuple[int | None, str | None]:
    """The pid and start (UTC) a lock's value names; None for what it does not say (a
    value written by an older crawlog has neither)."""
    if holder is None:
        return None, None
    first = holder.decode(errors="replace").partition("|")[0]
    _, _, rest = first.partition("@")
    since, _, pid = rest.partition("@")
    when = (
        time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(int(since))) if since.isdigit() else None
    )
    return (int(pid) if pid.isdigit() else None), when


_BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
_STATE, _START_TIME = 0, 19
"""Fields of ``/proc/PID/stat`` after the command name: state (3rd) and start time (22nd)."""


def _start_time(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot); None if none runs under it (a
    zombie is dead, only not reaped yet)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (2nd field) is in parentheses and may hold spaces: split after it.
    fields = stat.rpartition(")")[2].split()
    if len(fields) <= _START_TIME or fields[_STATE] in ("Z", "X"):
        return None
    return fields[_START_TIME]


def _machine() -> str:
    """This machine as its processes see it ('' where /proc cannot tell)."""
    try:
        return f"{_BOOT_ID.read_text().strip()}/{os.readlink('/proc/self/ns/pid')}"
    except OSError:
        return ""


def this_process() -> str:
    """``machine|pid|start time`` of this process, or '' where /proc cannot tell."""
    machine, pid = _machine(), os.getpid()
    start = _start_time(pid)
    return f"{machine}|{pid}|{start}" if machine and start else ""


def is_gone(holder: bytes) -> bool:
    """Whether a lock's value names a process of this machine that no longer runs."""
    _, _, where = holder.decode(errors="replace").partition("|")
    machine, _, process = where.partition("|")
    pid, _, start = process.partition("|")
    if not machine or machine != _machine() or not pid.isdigit() or not start:
        return False
    return _start_time(int(pid)) != start
