"""A job's progress report, its model: the msgspec structs ``report --json`` prints, and the
sections built from a manifest's summary and from figures over the log however they were
computed. ``_report`` computes those figures from the summary the manifest carries,
``_report_sql`` by SQL over the archive; both build the report here, so neither needs the
other's module (``_report`` loads ``_report_sql`` only for an old manifest, as it imports
DuckDB). ``crawler.cli._report_text`` draws it for a terminal."""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable
from operator import attrgetter
from typing import Final

import msgspec

from projector._fetches import ClockSkew, RefetchedPage, clock_skew
from projector._item_changes import ItemTally
from projector._state import STATUSES, JobState, SiteState
from projector._store import Manifest
from projector._summary import (
    ANOMALIES_LISTED,
    LISTED,
    RecoveredTask,
    RunningTask,
    Summary,
)

TOP_REASONS: Final = 10
ANOMALIES_SHOWN: Final = ANOMALIES_LISTED
SECONDS_PER_MINUTE: Final = 60


class Totals(msgspec.Struct, frozen=True, kw_only=True):
    """The job's totals: tasks by status (every status listed), pages, bytes, items."""

    events: int
    """Events folded into the state (repeats and refused ones included)."""
    tasks: int
    by_status: dict[str, int]
    pages: int
    refetches: int
    """Fetches the fold counted as a page fetched again after a good fetch of it."""
    bytes: int
    items: int
    duplicate_items: int
    requests_maybe_twice: int = 0
    """Requests that may have reached the site twice: fetches of a page after a good fetch
    of it as the log has them, and first fetches written by a task taken again after a lost
    lease (the lost lease's request may have been sent and never written)."""
    dropped: dict[str, int] = {}
    """URLs spiders yielded that are not crawled, by reason."""
    items_dropped: dict[str, int] = {}
    """Items spiders yielded that their pipelines dropped, by reason."""


class SiteProgress(msgspec.Struct, frozen=True, kw_only=True):
    """One site: tasks done of all, by status, pages, failures, pause and circuit."""

    site: str
    done: int
    total: int
    by_status: dict[str, int]
    pages: int
    failures: int
    paused: bool
    paused_reason: str
    circuit: str
    circuit_reason: str
    circuit_openings: int = 0
    """Times the site's circuit opened, each holding its pages for a cooldown."""


class MinuteCount(msgspec.Struct, frozen=True, kw_only=True):
    """Pages fetched in the minute starting at ``minute`` (epoch seconds, UTC)."""

    minute: float
    pages: int


class Throughput(msgspec.Struct, frozen=True, kw_only=True):
    """Pages per minute from the first page's minute to the last one's (zeros included)."""

    minutes: int
    per_minute_avg: float
    peak: int
    peak_minute: float | None
    series: list[MinuteCount]


class ReasonCount(msgspec.Struct, frozen=True, kw_only=True):
    """How often one reason (or error) occurred."""

    reason: str
    count: int


class StatusCount(msgspec.Struct, frozen=True, kw_only=True):
    """Pages fetched with one HTTP status (0: no response)."""

    status: int
    pages: int


class Failures(msgspec.Struct, frozen=True, kw_only=True):
    """The most frequent reasons tasks failed or aborted, and page errors."""

    tasks: int
    task_reasons: list[ReasonCount]
    pages: int
    page_errors: list[ReasonCount]
    http_statuses: list[StatusCount]


class RetryCount(msgspec.Struct, frozen=True, kw_only=True):
    """How many tasks had this many retries."""

    retries: int
    tasks: int


class Retries(msgspec.Struct, frozen=True, kw_only=True):
    """Retries scheduled: in all, the most for one task, and tasks by their retries; and
    the fetches they made: pages fetched again after every fetch of them had failed."""

    total: int
    peak: int
    distribution: list[RetryCount]
    pages_retried: int = 0
    retry_fetches: int = 0
    released: int = 0
    """Hand-backs by stopping workers (``TaskReleased``): not retries, so counted apart."""


class ResponseTimes(msgspec.Struct, frozen=True, kw_only=True):
    """``elapsed_ms`` of every fetch (refetches included); None without pages."""

    pages: int
    avg_ms: float | None
    p50_ms: float | None
    p95_ms: float | None
    quantiles_error: float = 0.0
    """How far p50 and p95 may be from the exact (interpolated) quantiles, relative to them:
    0 when they are exact, ``projector._fetches.RELATIVE_ERROR`` from the projector's
    histogram."""


class Recoveries(msgspec.Struct, frozen=True, kw_only=True):
    """Tasks resumed after a lost lease, and pages fetched again after a good fetch of them
    (the first few named): what a recovery redid. A page fetched again after its fetch
    failed is a retry's (``Retries``), not counted here."""

    tasks_resumed: int
    resumed: list[RecoveredTask]
    pages_refetched: int
    extra_fetches: int
    refetched: list[RefetchedPage]
    unrecorded_refetches: int = 0
    """First fetches of a page written by a task taken again after a lost lease
    (``projector._fetches.FetchFigures.unrecorded_refetches``)."""


class StuckTask(RunningTask, frozen=True, kw_only=True):
    """A running task whose last event is older than the lease."""

    idle_s: float


class Stuck(msgspec.Struct, frozen=True, kw_only=True):
    """Tasks running past their lease, oldest first (the first few named)."""

    lease_s: float
    count: int
    tasks: list[StuckTask]


class AnomalyRow(msgspec.Struct, frozen=True, kw_only=True):
    """One event the state machine refused."""

    stream_id: str
    event_type: str
    task_id: str | None
    from_status: str | None
    reason: str


class Anomalies(msgspec.Struct, frozen=True, kw_only=True):
    """Refused events: counted by reason, the first few listed; and the dead letters."""

    total: int
    by_reason: list[ReasonCount]
    first: list[AnomalyRow]
    dead_letters: int = 0
    """Entries the projector (or a worker) could not decode, moved to the dead stream: no
    fold ever saw them, so they are not among the refused events (``crawlog dead list``)."""
    orphaned: int = 0
    """Of ``total``, journalled writes refused as their task's lease was taken over
    (``JobState.orphaned``): the journal's fencing at work, not a fault."""


class RobotsNote(msgspec.Struct, frozen=True, kw_only=True):
    """A site whose robots.txt was not taken whole, and why (its latest ``site.robots``)."""

    site: str
    reason: str


class Report(msgspec.Struct, frozen=True, kw_only=True):
    """A job's progress report, as of one committed manifest."""

    job: str
    position: str
    """Stream ID of the last event the report covers."""
    generated_at: float
    events: int
    """Events in the archive (every one the report covers)."""
    totals: Totals
    sites: list[SiteProgress]
    throughput: Throughput
    failures: Failures
    retries: Retries
    response_times: ResponseTimes
    recoveries: Recoveries
    stuck: Stuck
    anomalies: Anomalies
    clock_skew: list[ClockSkew] = []
    """Workers whose clock is off the server's by more than ``CLOCK_SKEW_WARNING_S``."""
    robots: list[RobotsNote] = []
    """Sites whose robots.txt could not be read, or was cut at 500 KiB, by site."""
    items_over_runs: ItemTally | None = None
    """A job run more than once: its items as its latest run left them (`item_tally`),
    where ``totals`` counts every key any run scraped, and a later run's new look at an
    item with the duplicates. None for a job run once, or whose log was not read for it
    (``crawlog report`` reads it up to a length)."""


def assemble(
    manifest: Manifest,
    summary: Summary,
    *,
    events: int,
    throughput: Throughput,
    failures: Failures,
    retries: Retries,
    response_times: ResponseTimes,
    recoveries: Recoveries,
    lease_s: float,
    now: float,
    clock_offsets: dict[str, float] | None = None,
    robots: dict[str, str] | None = None,
) -> Report:
    """The report of ``manifest``: the sections from the log as given, the others from
    ``summary``."""
    totals = msgspec.structs.replace(
        _totals(summary.job),
        requests_maybe_twice=recoveries.extra_fetches + recoveries.unrecorded_refetches,
    )
    return Report(
        job=manifest.job,
        position=manifest.position,
        generated_at=now,
        events=events,
        totals=totals,
        sites=_sites(summary.sites),
        throughput=throughput,
        failures=failures,
        retries=retries,
        response_times=response_times,
        recoveries=recoveries,
        stuck=_stuck(summary.running, lease_s=lease_s, now=now),
        anomalies=_anomalies(summary),
        clock_skew=clock_skew(clock_offsets or {}),
        robots=[RobotsNote(site=site, reason=why) for site, why in sorted((robots or {}).items())],
    )


def _by_status(counts: dict[str, int]) -> dict[str, int]:
    return {status: counts.get(status, 0) for status in STATUSES}


def top_reasons(counter: Counter[str], n: int = TOP_REASONS) -> list[ReasonCount]:
    # Ties broken by the reason, so the same data always gives the same report.
    top = heapq.nsmallest(n, counter.items(), key=lambda kv: (-kv[1], kv[0]))
    return [ReasonCount(reason=reason, count=count) for reason, count in top]


def _totals(job: JobState) -> Totals:
    return Totals(
        events=job.events,
        tasks=sum(job.tasks.values()),
        by_status=_by_status(job.tasks),
        pages=job.pages,
        refetches=job.refetches,
        bytes=job.bytes,
        items=job.items,
        duplicate_items=job.duplicate_items,
        dropped=dict(sorted(job.dropped.items())),
        items_dropped=dict(sorted(job.items_dropped.items())),
    )


def _sites(sites: Iterable[SiteState]) -> list[SiteProgress]:
    return [
        SiteProgress(
            site=site.site,
            done=site.tasks.get("done", 0),
            total=sum(site.tasks.values()),
            by_status=_by_status(site.tasks),
            pages=site.pages,
            failures=site.failures,
            paused=site.paused,
            paused_reason=site.paused_reason,
            circuit=site.circuit,
            circuit_reason=site.circuit_reason,
            circuit_openings=site.circuit_openings,
        )
        for site in sorted(sites, key=attrgetter("site"))
    ]


def throughput(per_minute: dict[int, int]) -> Throughput:
    """The throughput section from the fetches of each minute of the server's clock (the
    minute of their stream IDs)."""
    counts = {m: n for m, n in per_minute.items() if n}
    if not counts:
        return Throughput(minutes=0, per_minute_avg=0.0, peak=0, peak_minute=None, series=[])
    first, last = min(counts), max(counts)
    series = [
        MinuteCount(minute=float(m * SECONDS_PER_MINUTE), pages=counts.get(m, 0))
        for m in range(first, last + 1)
    ]
    peak = max(series, key=attrgetter("pages"))
    return Throughput(
        minutes=len(series),
        per_minute_avg=sum(counts.values()) / len(series),
        peak=peak.pages,
        peak_minute=peak.minute,
        series=series,
    )


def failures(
    summary: Summary, errors: list[tuple[str, int]], error_pages: int, statuses: dict[int, int]
) -> Failures:
    """The failures section: ``errors`` are the most frequent page errors, in order."""
    failed = Counter(summary.failure_reasons)
    return Failures(
        tasks=sum(failed.values()),
        task_reasons=top_reasons(failed),
        pages=error_pages,
        page_errors=[ReasonCount(reason=e, count=n) for e, n in errors],
        http_statuses=[StatusCount(status=s, pages=n) for s, n in sorted(statuses.items())],
    )


def retries(summary: Summary, *, pages_retried: int, retry_fetches: int, released: int) -> Retries:
    """The retries section."""
    counts = summary.retries
    return Retries(
        total=sum(r * n for r, n in counts.items()),
        peak=max(counts, default=0),
        distribution=[RetryCount(retries=r, tasks=counts[r]) for r in sorted(counts)],
        pages_retried=pages_retried,
        retry_fetches=retry_fetches,
        released=released,
    )


def recoveries(
    summary: Summary,
    *,
    pages_refetched: int,
    extra_fetches: int,
    refetched: list[RefetchedPage],
    unrecorded_refetches: int = 0,
) -> Recoveries:
    """The recoveries section."""
    return Recoveries(
        tasks_resumed=summary.recovered_tasks,
        resumed=list(summary.recovered[:LISTED]),
        pages_refetched=pages_refetched,
        extra_fetches=extra_fetches,
        refetched=refetched,
        unrecorded_refetches=unrecorded_refetches,
    )


def _stuck(running: Iterable[RunningTask], *, lease_s: float, now: float) -> Stuck:
    cutoff = now - lease_s
    # Already longest idle first.
    stuck = [t for t in running if t.updated_at < cutoff]
    return Stuck(
        lease_s=lease_s,
        count=len(stuck),
        tasks=[
            StuckTask(
                task_id=t.task_id,
                url=t.url,
                site=t.site,
                owner=t.owner,
                attempt=t.attempt,
                updated_at=t.updated_at,
                idle_s=now - t.updated_at,
            )
            for t in stuck[:LISTED]
        ],
    )


def _anomalies(summary: Summary) -> Anomalies:
    counts = Counter(summary.job.anomalies)
    return Anomalies(
        dead_letters=summary.dead_letters,
        total=sum(counts.values()),
        orphaned=summary.job.orphaned,
        by_reason=top_reasons(counts, len(counts)),
        first=[
            AnomalyRow(
                stream_id=a.stream_id,
                event_type=a.event_type,
                task_id=a.task_id,
                from_status=a.from_status,
                reason=a.reason,
            )
            for a in summary.anomalies[:ANOMALIES_SHOWN]
        ],
    )
