"""What ``status`` and ``report`` say of a job's revisits: how many pages are due for
``crawlog recrawl --due`` now, and when the next ones are (`projector._revisits`)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

import redis.asyncio as aioredis

from eventlog import (
    REDIS_URL_ENV,
    AnyEvent,
    CrawlogError,
    JobKeys,
    RunRecord,
    connect,
    read_run,
    server_status,
)
from projector import DueSummary, RevisitPolicy, due_summary, schedules


def revisit_policy(record: RunRecord) -> RevisitPolicy:
    """The revisit policy ``record`` holds (the defaults if none)."""
    if record.intervals is None:
        return RevisitPolicy()
    first, least, most = record.intervals
    return RevisitPolicy(interval_s=first, min_s=least, max_s=most)


def due_of(events: Iterable[AnyEvent], policy: RevisitPolicy, now: float) -> DueSummary:
    """How many of the pages in the log ``events`` are due at ``now``, and the next after."""
    return due_summary(schedules(events, policy).values(), now)


async def job_due(client: aioredis.Redis, data_dir: Path, job: str, now: float) -> DueSummary:
    """``job``'s revisits as its whole log has them (archive, then the stream)."""
    from projector import Store, log_entries

    policy = revisit_policy(await read_run(client, JobKeys(job)))
    entries = await log_entries(client, Store(data_dir, job))
    return due_of((entry.event for entry in entries), policy, now)


async def stored_policy(job: str, data_dir: Path) -> RevisitPolicy:
    """The job's revisit policy from its server; the defaults if it cannot be asked (a
    report starts no server)."""
    url = os.environ.get(REDIS_URL_ENV)
    try:
        if not url:
            running = server_status(data_dir)
            if running is None:
                return RevisitPolicy()
            url = running.url
        async with connect(url) as client:
            return revisit_policy(await read_run(client, JobKeys(job)))
    except CrawlogError:
        return RevisitPolicy()


def due_line(summary: DueSummary, now: float) -> str:
    """One line: the pages due now of those on the schedule, and when the next are."""
    line = f"revisits: {summary.due} of {summary.pages} page(s) due now"
    if summary.next_due:
        nearest = summary.next_due[0]
        at = datetime.fromtimestamp(nearest, UTC).isoformat(timespec="seconds")
        line += f"; next at {at} (in {_span(nearest - now)})"
    return line + " (crawlog recrawl --due)"


def _span(seconds: float) -> str:
    for unit, size in (("d", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{max(seconds, 0.0):.0f} s"
