"""Which jobs a server holds (for ``crawlog jobs`` and the did-you-mean of a mistyped
--job), and each job's stored configuration."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

import redis.asyncio as aioredis

from eventlog._connection import redis_errors
from eventlog._keys import JOB_KEY_PATTERNS, JobKeys, job_of_key

SCAN_COUNT = 1000
CLOSE_MATCHES = 3
CLOSE_CUTOFF = 0.6
"""difflib's default: 'bokos' finds 'books', 'b' finds nothing."""


async def job_names(redis: aioredis.Redis) -> list[str]:
    """Every job with settings or a log on this server, sorted (SCAN: never blocks it)."""
    jobs: set[str] = set()
    with redis_errors("listing the jobs"):
        for pattern in JOB_KEY_PATTERNS:
            async for key in redis.scan_iter(match=pattern, count=SCAN_COUNT):
                job = job_of_key(key.decode() if isinstance(key, bytes) else key)
                if job is not None:
                    jobs.add(job)
    return sorted(jobs)


def did_you_mean(job: str, known: Iterable[str]) -> str:
    """ " (did you mean 'books'?)" for the known names close to ``job``, else "". ``job``
    itself is no hint: a job with a log but no settings (appended to by a tool, not started
    by ``crawl``) is known by its own name."""
    others = sorted(set(known) - {job})
    close = difflib.get_close_matches(job, others, n=CLOSE_MATCHES, cutoff=CLOSE_CUTOFF)
    if not close:
        return ""
    return f" (did you mean {' or '.join(repr(name) for name in close)}?)"


async def store_job_config(redis: aioredis.Redis, keys: JobKeys, data: bytes) -> bool:
    """Store a job's encoded configuration unless it has one; whether this stored it."""
    with redis_errors("saving the job's configuration"):
        return bool(await redis.set(keys.config, data, nx=True))


async def job_config(redis: aioredis.Redis, keys: JobKeys) -> bytes | None:
    """A job's encoded configuration, None for a job nobody started with ``crawl``."""
    with redis_errors("reading the job's configuration"):
        data = await redis.get(keys.config)
    return data if isinstance(data, bytes) else None


async def start_requests_done(redis: aioredis.Redis, keys: JobKeys) -> int:
    """How many of the spider's ``start_requests()`` the job has enqueued (0 before any)."""
    with redis_errors("reading the job's start requests position"):
        data = await redis.get(keys.start_requests)
    return int(data) if data is not None else 0


async def save_start_requests_done(redis: aioredis.Redis, keys: JobKeys, done: int) -> None:
    """Record that the first ``done`` start requests are enqueued (written after they are:
    a kill in between enqueues them again, which ``seen`` makes no-ops)."""
    with redis_errors("saving the job's start requests position"):
        await redis.set(keys.start_requests, done)


async def job_exists(redis: aioredis.Redis, keys: JobKeys) -> bool:
    """Whether the server holds the job's settings or its log."""
    with redis_errors("looking up the job"):
        return bool(await redis.exists(keys.config, keys.events))
