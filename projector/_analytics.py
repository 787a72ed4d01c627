"""Analytics over a job's committed data: DuckDB views, queries, exports and the report.

Reports never open a DuckDB *file*: DuckDB lets one process hold a database file and no
other process open it, not even read-only, so a file would block reports while a projector
runs. Instead every call opens an in-memory DuckDB connection over what one manifest commits:

* the archive segments it names, read by ``read_parquet`` from their exact list (never a
  glob: a glob could see a compaction's old and new files at once and count twice), as the
  views ``events``, ``pages`` and ``items``;
* the state it commits (``read_committed``), as Arrow tables ``tasks``, ``sites``,
  ``anomalies`` and ``job``.

Both halves come from the same manifest, which the projector replaces atomically, so what a
query sees is consistent even while the projector commits. A segment a newer manifest drops
may vanish while a query reads it: the whole read is then tried again on the newer one.
``docs/reports.md`` documents every view and column.
"""

from __future__ import annotations

import datetime as dt
import heapq
import json
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from typing import Any, Final, TypeVar

import duckdb
import msgspec
import pyarrow as pa

from eventlog import CrawlogError
from projector._archive import SCHEMA
from projector._defaults import EXPORT_FORMATS, EXPORT_WHAT, ExportFormat, ExportWhat
from projector._fold import HTTP_ERROR
from projector._projector import committed_state, read_committed
from projector._state import STATUSES, JobState, SiteState, State, TaskState
from projector._store import Manifest, Store
from projector._summary import (
    ANOMALIES_LISTED,
    LISTED,
    RecoveredTask,
    RunningTask,
    Summary,
    summarize,
)

T = TypeVar("T")

VIEWS: Final = ("events", "pages", "items", "tasks", "sites", "anomalies", "job")
"""Every view a query may use, as ``docs/reports.md`` documents them."""

_COPY_OPTIONS: Final[dict[str, str]] = {
    "jsonl": "FORMAT json",
    "csv": "FORMAT csv, HEADER true",
    "parquet": "FORMAT parquet, COMPRESSION zstd",
}

READ_ATTEMPTS: Final = 3
"""A read that finds a segment gone is tried again on the newer manifest (as many times as
``read_committed`` tries for the state: a projector compacting right then may do it twice)."""
TOP_REASONS: Final = 10
ANOMALIES_SHOWN: Final = ANOMALIES_LISTED
SECONDS_PER_MINUTE: Final = 60
MICROS: Final = 1_000_000

# The events view: the archive's columns but ``payload`` (the msgpack bytes ``replay``
# decodes; no use in SQL and the largest column), the stream ID split into numbers (the
# string does not sort in log order: "9-0" > "10-0"), and ``at`` renamed: AT is a reserved
# word in DuckDB's SQL, which every query would have to quote.
_EVENT_SELECT = {
    "stream_id": "stream_id, CAST(split_part(stream_id, '-', 1) AS BIGINT) AS stream_ms, "
    "CAST(split_part(stream_id, '-', 2) AS BIGINT) AS stream_seq",
    "at": f'"at" AS epoch_s, make_timestamp(CAST(round("at" * {MICROS}) AS BIGINT)) AS time',
    "data": "CAST(data AS JSON) AS data",
    "payload": None,
}
_EVENT_COLUMNS_SQL = ", ".join(
    column for f in SCHEMA if (column := _EVENT_SELECT.get(f.name, f'"{f.name}"')) is not None
)
# A task's site is that of its first ``task.enqueued`` (a second one is refused by the fold).
_PAGES_SQL = """
CREATE VIEW pages AS
WITH enqueued AS (
    SELECT task_id, arg_min(site, [stream_ms, stream_seq]) AS site
    FROM events WHERE type = 'task.enqueued' GROUP BY task_id
)
SELECT p.stream_id, p.stream_ms, p.stream_seq, p.task_id, e.site, p.url, p.status, p.bytes,
       p.elapsed_ms, p.actor AS worker, p.attempt, p.page, p.error, p.epoch_s, p.time
FROM events AS p LEFT JOIN enqueued AS e ON p.task_id = e.task_id
WHERE p.type = 'task.page'
"""
_ITEMS_SQL = """
CREATE VIEW items AS
SELECT key, task_id, data, actor AS worker, epoch_s, time, stream_id, stream_ms, stream_seq
FROM events
WHERE type = 'task.item'
QUALIFY row_number() OVER (PARTITION BY key ORDER BY stream_ms, stream_seq) = 1
"""
_PAGE_EVENTS = "FROM events WHERE type = 'task.page'"


class NoProjectedData(CrawlogError):
    """The job has nothing committed yet."""


# --- reading what one manifest commits ---------------------------------------------------


@dataclass
class _Committed:
    """One manifest, its state (if read), and a connection whose views show exactly them."""

    store: Store
    manifest: Manifest
    state: State | None
    con: duckdb.DuckDBPyConnection


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _read(store: Store, *, read_state: bool) -> tuple[Manifest, State | None]:
    """The committed manifest, and the state it commits if asked for."""
    state: State | None = None
    if read_state:
        manifest, state = read_committed(store)
    else:
        manifest = store.read_manifest()
    if not manifest.segments and manifest.snapshot is None:
        data_dir = store.root.parent.parent
        raise NoProjectedData(
            f"no projected data for job {store.job!r} under {data_dir}: is the projector "
            f"running? `crawlog project --job {store.job}`"
        )
    return manifest, state


def _connect(store: Store, manifest: Manifest) -> duckdb.DuckDBPyConnection:
    """An in-memory connection with the archive views of ``manifest``'s segments.

    Creating the views already opens the files (DuckDB binds a view to their schema).
    """
    con = duckdb.connect(":memory:")
    try:
        # DuckDB draws a progress bar on stderr for a long query: the output is crawlog's.
        con.execute("SET enable_progress_bar = false")
        paths = store.segment_paths(manifest)
        if paths:
            source = f"read_parquet([{', '.join(_sql_string(str(p)) for p in paths)}])"
        else:
            con.register("_no_segments", SCHEMA.empty_table())
            source = "_no_segments"
        con.execute(f"CREATE VIEW events AS SELECT {_EVENT_COLUMNS_SQL} FROM {source}")
        con.execute(_PAGES_SQL)
        con.execute(_ITEMS_SQL)
    except BaseException:
        con.close()
        raise
    return con


def _run(
    store: Store,
    work: Callable[[_Committed], T],
    *,
    read_state: bool,
    doing: str,
    keep_open: bool = False,
) -> T:
    """``work`` on the committed data, tried again if a segment vanished meanwhile.

    The connection is closed afterwards, unless ``keep_open`` and ``work`` succeeded.
    """
    for attempt in range(READ_ATTEMPTS):
        manifest, state = _read(store, read_state=read_state)
        con = None
        try:
            con = _connect(store, manifest)
            result = work(_Committed(store, manifest, state, con))
            if keep_open:
                con = None
            return result
        except duckdb.IOException as exc:
            if attempt + 1 < READ_ATTEMPTS and store.read_manifest() != manifest:
                continue
            raise CrawlogError(f"{doing} failed: {duckdb_message(exc)}") from None
        except duckdb.Error as exc:
            raise CrawlogError(f"{doing} failed: {duckdb_message(exc)}") from None
        finally:
            if con is not None:
                con.close()
    raise AssertionError("unreachable")


def duckdb_message(exc: duckdb.Error) -> str:
    """DuckDB's message on one line, without the caret drawing under the query text."""
    lines = []
    for line in str(exc).splitlines():
        if line.startswith("LINE "):
            break
        if line.strip():
            lines.append(line.strip())
    return " ".join(lines)


# --- the state as Arrow tables -----------------------------------------------------------

_ARROW_SCALARS: Final[dict[type, pa.DataType]] = {
    msgspec.inspect.StrType: pa.string(),
    msgspec.inspect.IntType: pa.int64(),
    msgspec.inspect.FloatType: pa.float64(),
    msgspec.inspect.BoolType: pa.bool_(),
}
_EPOCH_SUFFIX = "_at"
_TIME_SUFFIX = "_time"


@dataclass(frozen=True)
class _Column:
    name: str
    path: tuple[str, ...]
    """Attribute names from the task to the value; None anywhere along it gives None."""
    arrow_type: pa.DataType


def _scalar_type(info: msgspec.inspect.Type) -> pa.DataType | None:
    if isinstance(info, msgspec.inspect.UnionType):
        types = [t for t in info.types if not isinstance(t, msgspec.inspect.NoneType)]
        return _scalar_type(types[0]) if len(types) == 1 else None
    return _ARROW_SCALARS.get(type(info))


def _struct_of(info: msgspec.inspect.Type) -> msgspec.inspect.StructType | None:
    if isinstance(info, msgspec.inspect.UnionType):
        structs = [t for t in info.types if isinstance(t, msgspec.inspect.StructType)]
        return structs[0] if len(structs) == 1 else None
    return info if isinstance(info, msgspec.inspect.StructType) else None


def _flat_columns(
    info: msgspec.inspect.StructType, prefix: str = "", path: tuple[str, ...] = ()
) -> list[_Column]:
    """Every scalar field of a struct, nested structs flattened as ``<field>_<sub field>``."""
    columns = []
    for field in info.fields:
        scalar = _scalar_type(field.type)
        nested = _struct_of(field.type)
        if scalar is not None:
            columns.append(_Column(prefix + field.name, (*path, field.name), scalar))
        elif nested is not None:
            columns += _flat_columns(nested, f"{prefix}{field.name}_", (*path, field.name))
    return columns


_TASK_INFO = msgspec.inspect.type_info(TaskState)
assert isinstance(_TASK_INFO, msgspec.inspect.StructType)
TASK_COLUMNS: Final = tuple(_flat_columns(_TASK_INFO))
"""The ``tasks`` table: every scalar field of ``TaskState``, nested structs (the checkpoint's
cursor, the counts) flattened; collections (``actions``) are left out."""


def _values(rows: Sequence[Any], path: tuple[str, ...]) -> list[Any]:
    values: list[Any] = list(map(attrgetter(path[0]), rows))
    for name in path[1:]:
        get = attrgetter(name)
        values = [None if v is None else get(v) for v in values]
    return values


def tasks_table(state: State) -> pa.Table:
    """The tasks of ``state``, one row each, with the columns ``TASK_COLUMNS``."""
    tasks = list(state.tasks.values())
    arrays = [pa.array(_values(tasks, c.path), c.arrow_type) for c in TASK_COLUMNS]
    return pa.table(arrays, names=[c.name for c in TASK_COLUMNS])


def sites_table(state: State) -> pa.Table:
    """One row per site: its tasks by status, pause and circuit, pages and failures."""
    sites = sorted(state.sites.values(), key=attrgetter("site"))
    columns: dict[str, pa.Array] = {"site": pa.array([s.site for s in sites], pa.string())}
    columns["tasks_total"] = pa.array([sum(s.tasks.values()) for s in sites], pa.int64())
    for status in STATUSES:
        counts = [s.tasks.get(status, 0) for s in sites]
        columns[f"tasks_{status}"] = pa.array(counts, pa.int64())
    for name, arrow_type in (
        ("paused", pa.bool_()),
        ("paused_reason", pa.string()),
        ("circuit", pa.string()),
        ("circuit_reason", pa.string()),
        ("pages", pa.int64()),
        ("failures", pa.int64()),
    ):
        columns[name] = pa.array(_values(sites, (name,)), arrow_type)
    return pa.table(columns)


def anomalies_table(state: State) -> pa.Table:
    """The refused events the state kept (the first ``MAX_ANOMALIES_KEPT``)."""
    names = ("event_id", "stream_id", "event_type", "task_id", "from_status", "reason")
    return pa.table({n: pa.array(_values(state.anomalies, (n,)), pa.string()) for n in names})


def job_table(manifest: Manifest, state: State) -> pa.Table:
    """The job's totals as one row."""
    job = state.job
    row: dict[str, tuple[object, pa.DataType]] = {
        "job": (manifest.job, pa.string()),
        "position": (manifest.position, pa.string()),
        "archived_events": (manifest.events, pa.int64()),
        "events": (job.events, pa.int64()),
        "repeats_ignored": (job.repeats_ignored, pa.int64()),
        "tasks": (sum(job.tasks.values()), pa.int64()),
        "pages": (job.pages, pa.int64()),
        "refetches": (job.refetches, pa.int64()),
        "bytes": (job.bytes, pa.int64()),
        "items": (job.items, pa.int64()),
        "duplicate_items": (job.duplicate_items, pa.int64()),
        "anomalies": (sum(job.anomalies.values()), pa.int64()),
        "paused": (job.paused, pa.bool_()),
        "paused_reason": (job.paused_reason, pa.string()),
    }
    return pa.table({name: pa.array([v], t) for name, (v, t) in row.items()})


_TABLES: Final[dict[str, Callable[[Manifest, State], pa.Table]]] = {
    "tasks": lambda manifest, state: tasks_table(state),
    "sites": lambda manifest, state: sites_table(state),
    "anomalies": lambda manifest, state: anomalies_table(state),
    "job": job_table,
}
STATE_VIEWS: Final = frozenset(_TABLES)


def _register_state(
    con: duckdb.DuckDBPyConnection,
    manifest: Manifest,
    state: State,
    views: Iterable[str] = STATE_VIEWS,
) -> None:
    """Add the state's ``views`` (by default all) to ``con``."""
    for name in views:
        con.register(f"_{name}", _TABLES[name](manifest, state))
        columns = "*"
        if name == "tasks":
            columns += "".join(
                f", make_timestamp(CAST(round({c.name} * {MICROS}) AS BIGINT)) AS "
                f"{c.name.removesuffix(_EPOCH_SUFFIX)}{_TIME_SUFFIX}"
                for c in TASK_COLUMNS
                if c.name.endswith(_EPOCH_SUFFIX) and c.arrow_type == pa.float64()
            )
        con.execute(f"CREATE VIEW {name} AS SELECT {columns} FROM _{name}")


def state_views_used(sql: str) -> frozenset[str]:
    """The state views ``sql`` reads (all of them when DuckDB cannot parse it alone).

    A query of the archive views alone then needs no state: for a million tasks, reading
    the state and building the ``tasks`` table takes seconds. DuckDB's parser (not its
    binder, which would need the tables) gives the names.
    """
    with duckdb.connect(":memory:") as parser:
        row = parser.execute("SELECT json_serialize_sql($1)", [sql]).fetchone()
    tree = json.loads(row[0]) if row else {"error": True}
    if tree.get("error"):
        # Not one or more plain SELECTs (or not valid SQL): provide everything.
        return STATE_VIEWS
    names: set[str] = set()
    nodes: list[Any] = [tree]
    while nodes:
        node = nodes.pop()
        if isinstance(node, dict):
            if node.get("type") == "BASE_TABLE":
                names.add(str(node.get("table_name", "")).lower())
            nodes += node.values()
        elif isinstance(node, list):
            nodes += node
    return STATE_VIEWS & names


# --- views, queries, exports -------------------------------------------------------------


def open_views(store: Store) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with every view (``VIEWS``) of the committed data.

    The caller closes it. A query on it may fail with ``duckdb.IOException`` if a projector
    compacts the archive meanwhile; ``query`` and ``export`` retry that themselves.
    """
    return _run(store, _with_state, read_state=True, doing="opening the views", keep_open=True)


def _with_state(committed: _Committed) -> duckdb.DuckDBPyConnection:
    assert committed.state is not None
    _register_state(committed.con, committed.manifest, committed.state)
    return committed.con


class QueryResult(msgspec.Struct, frozen=True, kw_only=True):
    """A query's column names and rows."""

    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]]


def query(store: Store, sql: str) -> QueryResult:
    """Run ``sql`` over the views of the committed data; ``CrawlogError`` if it fails."""

    needed = state_views_used(sql)

    def run(committed: _Committed) -> QueryResult:
        con = committed.con
        if needed:
            assert committed.state is not None
            _register_state(con, committed.manifest, committed.state, needed)
        try:
            cursor = con.execute(sql)
            rows = cursor.fetchall() if cursor.description is not None else []
        except duckdb.IOException:
            raise
        except duckdb.Error as exc:
            raise CrawlogError(
                f"query failed: {duckdb_message(exc)} (views: {', '.join(VIEWS)}; "
                "see docs/reports.md)"
            ) from None
        columns = tuple(d[0] for d in cursor.description or ())
        return QueryResult(columns=columns, rows=rows)

    return _run(store, run, read_state=bool(needed), doing="the query")


def export(store: Store, *, what: ExportWhat, fmt: ExportFormat, out: Path) -> int:
    """Write the ``pages`` or ``items`` view, in log order, to ``out``; the rows written.

    Only the archive is read (no state), so an export of a large job starts at once.
    """
    if what not in EXPORT_WHAT or fmt not in EXPORT_FORMATS:
        raise CrawlogError(f"cannot export {what!r} as {fmt!r}")
    copy = (
        f"COPY (SELECT * EXCLUDE (stream_ms, stream_seq) FROM {what} "
        f"ORDER BY stream_ms, stream_seq) TO {_sql_string(str(out))} ({_COPY_OPTIONS[fmt]})"
    )

    def run(committed: _Committed) -> int:
        written = committed.con.execute(copy).fetchone()
        return int(written[0]) if written else 0

    return _run(store, run, read_state=False, doing=f"exporting {what} to {out}")


# --- the report --------------------------------------------------------------------------


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
    return _run(
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


def _report(committed: _Committed, *, lease_s: float, now: float) -> Report:
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


# --- the report as text ------------------------------------------------------------------

SERIES_SHOWN: Final = 10
"""Minutes of the throughput series a terminal shows (the last ones)."""
_KIB: Final = 1024.0
_BYTE_UNITS: Final = ("B", "KiB", "MiB", "GiB", "TiB")


def _n(value: int) -> str:
    return f"{value:,}"


def _count(value: int, noun: str, plural: str | None = None) -> str:
    """``1 task``, ``2 tasks``."""
    return f"{value:,} {noun if value == 1 else plural or noun + 's'}"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f} ms"


def _size(value: int) -> str:
    size = float(value)
    for unit in _BYTE_UNITS[:-1]:
        if size < _KIB:
            return f"{size:,.0f} {unit}" if unit == "B" else f"{size:,.1f} {unit}"
        size /= _KIB
    return f"{size:,.1f} {_BYTE_UNITS[-1]}"


def _time(epoch: float, fmt: str = "%Y-%m-%d %H:%M:%S") -> str:
    return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime(fmt)


def _table(rows: Sequence[Sequence[str]], right: Sequence[bool], indent: str = "  ") -> list[str]:
    """Rows as aligned columns; ``right`` says which columns are right-aligned."""
    if not rows:
        return []
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        indent
        + "  ".join(
            cell.rjust(w) if r else cell.ljust(w)
            for cell, w, r in zip(row, widths, right, strict=True)
        ).rstrip()
        for row in rows
    ]


def _more(shown: int, total: int, what: str) -> list[str]:
    return [f"  … and {_n(total - shown)} more {what}"] if total > shown else []


def format_report(report: Report) -> str:
    """The report as plain text for a terminal."""
    lines = [
        f"crawlog report: job {report.job}",
        f"  as of {report.position} ({_n(report.events)} events archived), "
        f"generated {_time(report.generated_at)} UTC",
        "",
    ]
    for section in (
        _text_totals,
        _text_sites,
        _text_throughput,
        _text_response_times,
        _text_failures,
        _text_retries,
        _text_recoveries,
        _text_stuck,
        _text_anomalies,
    ):
        lines += [*section(report), ""]
    return "\n".join(lines).rstrip() + "\n"


def _text_totals(report: Report) -> list[str]:
    t = report.totals
    rows = [[status, _n(n)] for status, n in t.by_status.items()]
    return [
        f"Tasks: {_n(t.tasks)}",
        *_table(rows, [False, True]),
        f"Pages: {_n(t.pages)} fetched ({_count(t.refetches, 'refetch', 'refetches')}), "
        f"{_size(t.bytes)}",
        f"Items: {_n(t.items)} ({_count(t.duplicate_items, 'duplicate')} ignored)",
        f"URLs dropped: {_n(sum(t.dropped.values()))}"
        + "".join(f", {reason} {_n(n)}" for reason, n in t.dropped.items()),
    ]


def _text_sites(report: Report) -> list[str]:
    header = ["site", "done/total", "pending", "running", "pages", "failures", "state"]
    rows = [header]
    for s in report.sites[:LISTED]:
        flags = []
        if s.paused:
            flags.append(f"paused ({s.paused_reason})" if s.paused_reason else "paused")
        if s.circuit != "closed":
            flags.append(f"circuit {s.circuit} ({s.circuit_reason})")
        rows.append(
            [
                s.site,
                f"{_n(s.done)}/{_n(s.total)}",
                _n(s.by_status.get("pending", 0)),
                _n(s.by_status.get("running", 0)),
                _n(s.pages),
                _n(s.failures),
                ", ".join(flags) or "ok",
            ]
        )
    return [
        f"Sites: {_n(len(report.sites))}",
        *_table(rows, [False, True, True, True, True, True, False]),
        *_more(LISTED, len(report.sites), "sites"),
    ]


def _text_throughput(report: Report) -> list[str]:
    t = report.throughput
    if t.peak_minute is None:
        return ["Throughput: no pages yet"]
    shown = t.series[-SERIES_SHOWN:]
    return [
        f"Throughput: {t.per_minute_avg:,.1f} pages/min on average over {_n(t.minutes)} min, "
        f"peak {_n(t.peak)} at {_time(t.peak_minute, '%Y-%m-%d %H:%M')} UTC",
        f"  last {len(shown)} min: " + " ".join(_n(m.pages) for m in shown),
    ]


def _text_response_times(report: Report) -> list[str]:
    r = report.response_times
    return [
        f"Response time: avg {_ms(r.avg_ms)}, p50 {_ms(r.p50_ms)}, p95 {_ms(r.p95_ms)} "
        f"({_n(r.pages)} fetches)"
    ]


def _text_failures(report: Report) -> list[str]:
    f = report.failures
    lines = [
        f"Failures: {_count(f.tasks, 'task')} failed or aborted, {_count(f.pages, 'page error')}"
    ]
    if f.task_reasons:
        lines.append("  tasks, by last reason:")
        lines += _table([[_n(r.count), r.reason] for r in f.task_reasons], [True, False], "    ")
    if f.page_errors:
        lines.append("  page errors:")
        lines += _table([[_n(r.count), r.reason] for r in f.page_errors], [True, False], "    ")
    if f.http_statuses:
        statuses = ", ".join(f"{s.status}: {_n(s.pages)}" for s in f.http_statuses)
        lines.append(f"  pages by HTTP status: {statuses}")
    return lines


def _text_retries(report: Report) -> list[str]:
    r = report.retries
    distribution = ", ".join(f"{d.retries}: {_count(d.tasks, 'task')}" for d in r.distribution)
    return [
        f"Retries: {_n(r.total)} scheduled, at most {_n(r.peak)} for one task; "
        f"{_count(r.pages_retried, 'page')} fetched again after a failed fetch "
        f"({_count(r.retry_fetches, 'fetch', 'fetches')})",
        f"  tasks by retries: {distribution or '-'}",
    ] + (
        [f"  released (handed back by a stopping worker, not a retry): {_n(r.released)}"]
        if r.released
        else []
    )


def _text_recoveries(report: Report) -> list[str]:
    r = report.recoveries
    lines = [
        f"Recoveries: {_count(r.tasks_resumed, 'task')} resumed after a lost lease; "
        f"{_count(r.pages_refetched, 'page')} fetched again after a good fetch "
        f"({_count(r.extra_fetches, 'extra fetch', 'extra fetches')})"
    ]
    if r.resumed:
        lines.append("  resumed:")
        rows = [[t.task_id, f"x{t.recoveries}", t.status, t.url] for t in r.resumed]
        lines += _table(rows, [False, True, False, False], "    ")
        lines += _more(len(r.resumed), r.tasks_resumed, "tasks")
    if r.refetched:
        lines.append("  refetched:")
        rows = [[p.task_id, f"page {p.page}", f"x{p.times}", p.url] for p in r.refetched]
        lines += _table(rows, [False, True, True, False], "    ")
        lines += _more(len(r.refetched), r.pages_refetched, "pages")
    return lines


def _text_stuck(report: Report) -> list[str]:
    s = report.stuck
    lines = [f"Stuck: {_count(s.count, 'task')} running past the {s.lease_s:g} s lease"]
    rows = [
        [t.task_id, t.owner or "-", f"{t.idle_s:,.0f} s idle", f"attempt {t.attempt}", t.url]
        for t in s.tasks
    ]
    lines += _table(rows, [False, False, True, False, False], "    ")
    return lines + _more(len(s.tasks), s.count, "tasks")


def _text_anomalies(report: Report) -> list[str]:
    a = report.anomalies
    lines = [f"Anomalies: {_count(a.total, 'refused event')}"]
    if a.dead_letters:
        lines[0] += (
            f"; {_count(a.dead_letters, 'dead letter')} (entries that could not be decoded, "
            f"never folded: crawlog dead list --job {report.job})"
        )
    if a.by_reason:
        lines.append("  by reason:")
        lines += _table([[_n(r.count), r.reason] for r in a.by_reason], [True, False], "    ")
    if a.first:
        lines.append("  first:")
        rows = [[x.stream_id, x.event_type, x.task_id or "-", f"({x.reason})"] for x in a.first]
        lines += _table(rows, [False, False, False, False], "    ")
    return lines
