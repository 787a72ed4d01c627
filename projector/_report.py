"""A job's progress report: its model (msgspec structs, what ``--json`` prints) and how it is
built from one committed manifest: the sections from the state come from the summary the
manifest carries, those from the log are SQL over the archive views (``projector._views``).
``crawler.cli._report_text`` draws it for a terminal."""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable
from operator import attrgetter
from typing import Any, Final

import duckdb
import msgspec

from projector._fold import HTTP_ERROR
from projector._projector import committed_state
from projector._state import STATUSES, JobState, SiteState
from projector._store import Manifest, Store
from projector._summary import (
    ANOMALIES_LISTED,
    LISTED,
    RecoveredTask,
    RunningTask,
    Summary,
    summarize,
)
from projector._views import Committed, run_on_committed

TOP_REASONS: Final = 10
ANOMALIES_SHOWN: Final = ANOMALIES_LISTED
SECONDS_PER_MINUTE: Final = 60

_PAGE_EVENTS = "FROM events WHERE type = 'task.page'"


class Totals(msgspec.Struct, frozen=True, kw_only=True):
    """The job's totals: tasks by status (every status listed), pages, bytes, items."""

    events: int
    """Events folded into the state (repeats and refused ones included)."""
    tasks: int
    by_status: dict[str, int]
    pages: int
    refetches: int
    bytes: int
    items: int
    duplicate_items: int
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


class RefetchedPage(msgspec.Struct, frozen=True, kw_only=True):
    """A page of a task fetched more than once, and how many times in all."""

    task_id: str
    page: int
    url: str
    times: int


class Recoveries(msgspec.Struct, frozen=True, kw_only=True):
    """Tasks resumed after a lost lease, and pages fetched again after a good fetch of them
    (the first few named): what a recovery redid. A page fetched again after its fetch
    failed is a retry's (``Retries``), not counted here."""

    tasks_resumed: int
    resumed: list[RecoveredTask]
    pages_refetched: int
    extra_fetches: int
    refetched: list[RefetchedPage]


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


def build_report(store: Store, *, lease_s: float, now: float) -> Report:
    """The report of the committed data; stuck = running, last event before ``now - lease_s``.

    Sections from the state come from the summary the manifest carries (decoding the state
    of a million tasks would cost seconds); sections from the log are SQL over the archive.
    A manifest written before summaries existed has its state read and summarized instead.
    """
    return run_on_committed(
        store,
        lambda committed: _report(committed, lease_s=lease_s, now=now),
        read_state=False,
        doing="building the report",
    )


def _summary(store: Store, manifest: Manifest) -> Summary:
    if manifest.summary is not None:
        return manifest.summary
    # An older manifest, with no summary: the same figures, the slow way.
    return summarize(committed_state(store, manifest))


def _report(committed: Committed, *, lease_s: float, now: float) -> Report:
    manifest, con = committed.manifest, committed.con
    summary = _summary(committed.store, manifest)
    (events,) = _one(con, "SELECT count(*) FROM events")
    return Report(
        job=manifest.job,
        position=manifest.position,
        generated_at=now,
        events=events,
        totals=_totals(summary.job),
        sites=_sites(summary.sites),
        throughput=_throughput(con),
        failures=_failures(con, summary),
        retries=_retries(con, summary),
        response_times=_response_times(con),
        recoveries=_recoveries(con, summary),
        stuck=_stuck(summary.running, lease_s=lease_s, now=now),
        anomalies=_anomalies(summary),
    )


def _one(con: duckdb.DuckDBPyConnection, sql: str) -> tuple[Any, ...]:
    row = con.execute(sql).fetchone()
    assert row is not None
    return row


def _by_status(counts: dict[str, int]) -> dict[str, int]:
    return {status: counts.get(status, 0) for status in STATUSES}


def _top(counter: Counter[str], n: int = TOP_REASONS) -> list[ReasonCount]:
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
        )
        for site in sorted(sites, key=attrgetter("site"))
    ]


def _throughput(con: duckdb.DuckDBPyConnection) -> Throughput:
    rows = con.execute(
        f"SELECT CAST(floor(epoch_s / {SECONDS_PER_MINUTE}) AS BIGINT) AS minute, count(*) "
        f"{_PAGE_EVENTS} GROUP BY minute ORDER BY minute"
    ).fetchall()
    if not rows:
        return Throughput(minutes=0, per_minute_avg=0.0, peak=0, peak_minute=None, series=[])
    counts = dict(rows)
    first, last = rows[0][0], rows[-1][0]
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


def _failures(con: duckdb.DuckDBPyConnection, summary: Summary) -> Failures:
    failed = Counter(summary.failure_reasons)
    errors = con.execute(
        f"SELECT error, count(*) AS n {_PAGE_EVENTS} AND error IS NOT NULL "
        f"GROUP BY error ORDER BY n DESC, error LIMIT {TOP_REASONS}"
    ).fetchall()
    (error_pages,) = _one(con, f"SELECT count(*) {_PAGE_EVENTS} AND error IS NOT NULL")
    statuses = con.execute(
        f"SELECT status, count(*) {_PAGE_EVENTS} GROUP BY status ORDER BY status"
    ).fetchall()
    return Failures(
        tasks=sum(failed.values()),
        task_reasons=_top(failed),
        pages=error_pages,
        page_errors=[ReasonCount(reason=e, count=n) for e, n in errors],
        http_statuses=[StatusCount(status=s, pages=n) for s, n in statuses],
    )


# Every fetch with whether an earlier fetch of the same page of the task got it (NULL for
# the first fetch): true makes it a refetch (a recovery redid it), false a retry's fetch.
_FETCH_HISTORY_SQL = f"""
CREATE TEMP TABLE fetch_history AS
SELECT task_id, page, stream_ms, stream_seq,
       bool_or(error IS NULL AND status > 0 AND status < {HTTP_ERROR}) OVER (
           PARTITION BY task_id, page ORDER BY stream_ms, stream_seq
           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
       ) AS had_it
{_PAGE_EVENTS}
"""


def _fetch_history(con: duckdb.DuckDBPyConnection) -> None:
    if not con.execute(
        "SELECT 1 FROM duckdb_tables() WHERE table_name = 'fetch_history'"
    ).fetchone():
        con.execute(_FETCH_HISTORY_SQL)


def _retries(con: duckdb.DuckDBPyConnection, summary: Summary) -> Retries:
    counts = summary.retries
    _fetch_history(con)
    pages, fetches = _one(
        con,
        "SELECT count(DISTINCT (task_id, page)), count(*) FROM fetch_history WHERE NOT had_it",
    )
    return Retries(
        total=sum(r * n for r, n in counts.items()),
        peak=max(counts, default=0),
        distribution=[RetryCount(retries=r, tasks=counts[r]) for r in sorted(counts)],
        pages_retried=pages,
        retry_fetches=fetches,
        released=_one(con, "SELECT count(*) FROM events WHERE type = 'task.released'")[0],
    )


def _response_times(con: duckdb.DuckDBPyConnection) -> ResponseTimes:
    pages, avg, quantiles = _one(
        con,
        f"SELECT count(*), avg(elapsed_ms), quantile_cont(elapsed_ms, [0.5, 0.95]) {_PAGE_EVENTS}",
    )
    p50, p95 = quantiles if quantiles is not None else (None, None)
    return ResponseTimes(pages=pages, avg_ms=avg, p50_ms=p50, p95_ms=p95)


def _recoveries(con: duckdb.DuckDBPyConnection, summary: Summary) -> Recoveries:
    # Every fetch of a page after the first, as the log has them (a zombie's late fetch, which
    # the fold refuses, counts too: it was fetched again all the same). The URLs are looked up
    # for the listed pages only: carrying them through the grouping of every page would make
    # it much slower.
    # ``times``: the good fetch and every fetch after it (the retries of a page that failed
    # before are the Retries section's).
    _fetch_history(con)
    con.execute("""
        CREATE TEMP TABLE refetched AS
        SELECT task_id, page, count(*) + 1 AS times
        FROM fetch_history WHERE had_it GROUP BY task_id, page
    """)
    pairs, extra = _one(con, "SELECT count(*), coalesce(sum(times - 1), 0) FROM refetched")
    listed = con.execute(f"""
        SELECT r.task_id, r.page, arg_min(p.url, [p.stream_ms, p.stream_seq]), r.times
        FROM (SELECT * FROM refetched ORDER BY times DESC, task_id, page LIMIT {LISTED}) AS r
        JOIN events AS p ON p.type = 'task.page' AND p.task_id = r.task_id AND p.page = r.page
        GROUP BY r.task_id, r.page, r.times
        ORDER BY r.times DESC, r.task_id, r.page
    """).fetchall()
    return Recoveries(
        tasks_resumed=summary.recovered_tasks,
        resumed=list(summary.recovered[:LISTED]),
        pages_refetched=pairs,
        extra_fetches=int(extra),
        refetched=[
            RefetchedPage(task_id=task, page=page, url=url, times=times)
            for task, page, url, times in listed
        ],
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
        by_reason=_top(counts, len(counts)),
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
