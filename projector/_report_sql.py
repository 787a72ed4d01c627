"""The report's sections over the log computed by SQL over the archive views: for a
manifest written before the projector kept its figures over the page fetches
(``projector._fetches``), and for tests and tools that check those figures against the log.
It reads every page fetch of the job, so it takes time in proportion to it."""

from __future__ import annotations

from typing import Any

import duckdb

from projector._committed import committed_state
from projector._fetches import (
    MS_PER_MINUTE,
    RefetchedPage,
    robots_sql,
    unrecorded_refetches_sql,
)
from projector._fold import HTTP_ERROR
from projector._report_model import (
    TOP_REASONS,
    Failures,
    Recoveries,
    Report,
    ResponseTimes,
    assemble,
    failures,
    recoveries,
    retries,
    throughput,
)
from projector._store import Manifest, Store
from projector._summary import LISTED, Summary, summarize
from projector._views import Committed, run_on_committed

_PAGE_EVENTS = "FROM events WHERE type = 'task.page'"


def report_from_archive(store: Store, *, lease_s: float, now: float) -> Report:
    """The report with every section over the log computed from the archive."""
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
    per_minute = con.execute(
        f"SELECT stream_ms // {MS_PER_MINUTE} AS minute, count(*) {_PAGE_EVENTS} GROUP BY minute"
    ).fetchall()
    _fetch_history(con)
    pages_retried, retry_fetches = _one(
        con,
        "SELECT count(DISTINCT (task_id, page)), count(*) FROM fetch_history WHERE NOT had_it",
    )
    (released,) = _one(con, "SELECT count(*) FROM events WHERE type = 'task.released'")
    offsets = con.execute(
        f"SELECT actor, max(epoch_s - stream_ms / 1000) {_PAGE_EVENTS} GROUP BY actor"
    ).fetchall()
    robots = con.execute(robots_sql("events", "stream_ms", "stream_seq")).fetchall()
    return assemble(
        manifest,
        summary,
        events=events,
        throughput=throughput(dict(per_minute)),
        failures=_failures(con, summary),
        retries=retries(
            summary, pages_retried=pages_retried, retry_fetches=retry_fetches, released=released
        ),
        response_times=_response_times(con),
        recoveries=_recoveries(con, summary),
        lease_s=lease_s,
        now=now,
        clock_offsets=dict(offsets),
        robots=dict(robots),
    )


def _one(con: duckdb.DuckDBPyConnection, sql: str) -> tuple[Any, ...]:
    row = con.execute(sql).fetchone()
    assert row is not None
    return row


def _failures(con: duckdb.DuckDBPyConnection, summary: Summary) -> Failures:
    errors = con.execute(
        f"SELECT error, count(*) AS n {_PAGE_EVENTS} AND error IS NOT NULL "
        f"GROUP BY error ORDER BY n DESC, error LIMIT {TOP_REASONS}"
    ).fetchall()
    (error_pages,) = _one(con, f"SELECT count(*) {_PAGE_EVENTS} AND error IS NOT NULL")
    statuses = con.execute(f"SELECT status, count(*) {_PAGE_EVENTS} GROUP BY status").fetchall()
    return failures(summary, errors, error_pages, dict(statuses))


# Every fetch with whether an earlier fetch of the same page of the task got it (NULL for
# the first fetch): true makes it a refetch (a recovery redid it), false a retry's fetch.
_FETCH_HISTORY_SQL = f"""
CREATE TEMP TABLE fetch_history AS
SELECT task_id, page, url, stream_ms, stream_seq,
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


def _response_times(con: duckdb.DuckDBPyConnection) -> ResponseTimes:
    pages, avg, quantiles = _one(
        con,
        f"SELECT count(*), avg(elapsed_ms), quantile_cont(elapsed_ms, [0.5, 0.95]) {_PAGE_EVENTS}",
    )
    p50, p95 = quantiles if quantiles is not None else (None, None)
    return ResponseTimes(pages=pages, avg_ms=avg, p50_ms=p50, p95_ms=p95)


def _recoveries(con: duckdb.DuckDBPyConnection, summary: Summary) -> Recoveries:
    # Every fetch of a page after a good fetch of it, as the log has them (a zombie's late
    # fetch, which the fold refuses, counts too: it was fetched again all the same).
    # ``times``: the good fetch and every fetch after it (the retries of a page that failed
    # before are the Retries section's); ``url``: the first fetch after the good one.
    _fetch_history(con)
    con.execute("""
        CREATE TEMP TABLE refetched AS
        SELECT task_id, page, count(*) + 1 AS times, arg_min(url, [stream_ms, stream_seq]) AS url
        FROM fetch_history WHERE had_it GROUP BY task_id, page
    """)
    pairs, extra = _one(con, "SELECT count(*), coalesce(sum(times - 1), 0) FROM refetched")
    (unrecorded,) = _one(con, unrecorded_refetches_sql("events", "stream_ms", "stream_seq"))
    listed = con.execute(
        "SELECT task_id, page, url, times FROM refetched "
        f"ORDER BY times DESC, task_id, page LIMIT {LISTED}"
    ).fetchall()
    return recoveries(
        summary,
        pages_refetched=pairs,
        extra_fetches=int(extra),
        refetched=[
            RefetchedPage(task_id=task, page=page, url=url, times=times)
            for task, page, url, times in listed
        ],
        unrecorded_refetches=unrecorded,
    )
