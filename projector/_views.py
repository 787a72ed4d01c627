"""The views of a job's committed data: one manifest read, its archive as DuckDB views.

Reports never open a DuckDB *file*: DuckDB lets one process hold a database file and no
other process open it, not even read-only, so a file would block reports while a projector
runs. Instead every call opens an in-memory DuckDB connection over what one manifest commits:

* the archive segments it names, read by ``read_parquet`` from their exact list (never a
  glob: a glob could see a compaction's old and new files at once and count twice), as the
  views ``events``, ``pages`` and ``item_events`` (and ``items``, made from it by those
  who read it: `projector._item_fields`);
* the state it commits (``read_committed``), as Arrow tables ``tasks``, ``sites``,
  ``anomalies`` and ``job`` (``projector._state_tables``).

Both halves come from the same manifest, which the projector replaces atomically, so what a
query sees is consistent even while the projector commits. A segment a newer manifest drops
may vanish while a query reads it: the whole read is then tried again on the newer one
(:func:`run_on_committed`). ``docs/reports.md`` documents every view and column.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, TypeVar

import duckdb

from eventlog import CrawlogError
from projector._archive import SCHEMA
from projector._committed import read_committed
from projector._state import State
from projector._state_tables import MICROS
from projector._store import Manifest, Store

T = TypeVar("T")

VIEWS: Final = ("events", "pages", "items", "tasks", "sites", "anomalies", "job", "item_events")
"""Every view a query may use, as ``docs/reports.md`` documents them."""
ITEM_EVENTS: Final = "item_events"
"""The view of each item key's first ``task.item``, its envelope around the item's ``data``
(``items``, the item's fields as columns, is made from it: `projector._item_fields`)."""

READ_ATTEMPTS: Final = 3
"""A read that finds a segment gone is tried again on the newer manifest (as many times as
``read_committed`` tries for the state: a projector compacting right then may do it twice)."""

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
_ITEM_EVENTS_SQL = f"""
CREATE VIEW {ITEM_EVENTS} AS
SELECT key, task_id, data, actor AS worker, epoch_s, time, stream_id, stream_ms, stream_seq
FROM events
WHERE type = 'task.item'
QUALIFY row_number() OVER (PARTITION BY key ORDER BY stream_ms, stream_seq) = 1
"""


class NoProjectedData(CrawlogError):
    """The job has nothing committed yet."""


@dataclass
class Committed:
    """One manifest, its state (if read), and a connection whose views show exactly them."""

    store: Store
    manifest: Manifest
    state: State | None
    con: duckdb.DuckDBPyConnection


def sql_string(text: str) -> str:
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
            source = f"read_parquet([{', '.join(sql_string(str(p)) for p in paths)}])"
        else:
            con.register("_no_segments", SCHEMA.empty_table())
            source = "_no_segments"
        con.execute(f"CREATE VIEW events AS SELECT {_EVENT_COLUMNS_SQL} FROM {source}")
        con.execute(_PAGES_SQL)
        con.execute(_ITEM_EVENTS_SQL)
    except BaseException:
        con.close()
        raise
    return con


def run_on_committed(
    store: Store,
    work: Callable[[Committed], T],
    *,
    read_state: bool,
    doing: str,
) -> T:
    """``work`` on the committed data, tried again if a segment vanished meanwhile.

    The connection is closed afterwards.
    """
    for attempt in range(READ_ATTEMPTS):
        manifest, state = _read(store, read_state=read_state)
        con = None
        try:
            con = _connect(store, manifest)
            return work(Committed(store, manifest, state, con))
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
