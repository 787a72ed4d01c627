"""What ``status`` and ``report`` say of a job's revisits: how many pages are due for
``crawlog recrawl --due`` now, and when the next ones are (`projector._revisits`)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

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

if TYPE_CHECKING:
    from projector import Store

REVISIT_SCAN_MAX_EVENTS = 2_000_000
"""A log longer than this is not read whole for the revisit line of `status` and `report`
(its fold is Python, event by event): the line says so instead, and a ``recrawl --due``
still decides each page's due time from the whole log."""


def revisit_policy(record: RunRecord) -> RevisitPolicy:
    """The revisit policy ``record`` holds (the defaults if none)."""
    if record.intervals is None:
        return RevisitPolicy()
    first, least, most = record.intervals
    return RevisitPolicy(interval_s=first, min_s=least, max_s=most)


def due_of(events: Iterable[AnyEvent], policy: RevisitPolicy, now: float) -> DueSummary:
    """How many of the pages in the log ``events`` are due at ``now``, and the next after."""
    return due_summary(schedules(events, policy).values(), now)


async def job_due_line(client: aioredis.Redis, data_dir: Path, job: str, now: float) -> str:
    """The line on ``job``'s revisits as its whole log has them (archive, then the
    stream); empty where a committed file cannot be read (a warning says so already)."""
    from projector import Store, log_entries

    store = Store(data_dir, job)
    skipped = too_long_to_scan(store)
    if skipped is not None:
        return skipped
    policy = revisit_policy(await read_run(client, JobKeys(job)))
    try:
        entries = await log_entries(client, store)
        return due_line(due_of((entry.event for entry in entries), policy, now), now)
    except CrawlogError:
        return ""


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


def too_long_to_scan(store: Store) -> str | None:
    """The revisit line for a log too long to read for it, or None to read it."""
    events = store.read_manifest().events
    if events <= REVISIT_SCAN_MAX_EVENTS:
        return None
    return (
        f"revisits: not counted here for a log of {events:,} events "
        "(`crawlog recrawl --job J --due` decides each page's due time itself)"
    )


def due_line(summary: DueSummary, now: float) -> str:
    """One line: the pages due now of those on the schedule, and when the next are."""
    line = f"revisits: {summary.due} of {summary.pages} page(s) due now"
    if summary.next_due:
        nearest = summary.next_due[0]
        at = datetime.fromtimestamp(nearest, UTC).isoformat(timespec="seconds")
        line += f"; next at {at} (in {_span(nearest - now)})"
    return line + " (crawlog recrawl --due)"


def nothing_due_line(job: str, next_due: float | None, now: float) -> str:
    """What ``crawlog recrawl --due`` says when no page is due: when the next is, and that
    no run was started."""
    line = f"nothing is due in job {job}"
    if next_due is not None:
        at = datetime.fromtimestamp(next_due, UTC).isoformat(timespec="seconds")
        line += f"; next page due at {at} (in {_span(next_due - now)})"
    return line + "; no run started"


def _span(seconds: float) -> str:
    for unit, size in (("d", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{max(seconds, 0.0):.0f} s"
