"""Which jobs a server holds: for ``crawlog jobs`` and the did-you-mean of a mistyped --job."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

import redis.asyncio as aioredis

from eventlog._connection import redis_errors
from eventlog._keys import JOB_KEY_PATTERNS, job_of_key

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
    """ " (did you mean 'books'?)" for the known names close to ``job``, else ""."""
    close = difflib.get_close_matches(job, sorted(set(known)), n=CLOSE_MATCHES, cutoff=CLOSE_CUTOFF)
    if not close:
        return ""
    return f" (did you mean {' or '.join(repr(name) for name in close)}?)"
