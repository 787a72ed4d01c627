"""``crawlog sql``'s query over the views of a job's committed data."""

from __future__ import annotations

from typing import Any

import duckdb
import msgspec

from eventlog import CrawlogError
from projector._state_tables import register_state, state_views_used
from projector._store import Store
from projector._views import VIEWS, Committed, duckdb_message, run_on_committed


class QueryResult(msgspec.Struct, frozen=True, kw_only=True):
    """A query's column names and rows."""

    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]]


def query(store: Store, sql: str) -> QueryResult:
    """Run ``sql`` over the views of the committed data; ``CrawlogError`` if it fails."""

    needed = state_views_used(sql)

    def run(committed: Committed) -> QueryResult:
        con = committed.con
        if needed:
            assert committed.state is not None
            register_state(con, committed.manifest, committed.state, needed)
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

    return run_on_committed(store, run, read_state=bool(needed), doing="the query")
