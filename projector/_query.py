"""``crawlog sql``'s query over the views of a job's committed data.

Confined by default: the query may only read, and only the job's views. A connection of
DuckDB's can do anything its user can (``COPY ... TO`` over the job's manifest,
``read_csv('/etc/passwd')``, ``ATTACH``, ``INSTALL``), so

- only reading statements run (`READING_STATEMENTS`: SELECT and what DuckDB parses as one,
  such as ``FROM pages``, ``DESCRIBE``, ``SUMMARIZE``; EXPLAIN); COPY, ATTACH, SET, CREATE,
  PRAGMA, INSTALL, EXPORT... are refused before anything runs;
- once the views exist, the connection's file access is cut (``enable_external_access``
  off: no file, directory, network or extension beyond the job's own segment files, which
  ``allowed_paths`` keeps readable for the views DuckDB binds again at each query) and its
  configuration locked (``lock_configuration``), so no query can turn either back on.

``unsafe`` (``crawlog sql --unsafe``) runs the query on the views' connection as it is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import duckdb
import msgspec

from eventlog import ConfigError, CrawlogError
from projector._changes import RUN_VIEWS, register_run_views
from projector._item_changes import register_live_items
from projector._item_fields import ITEMS, create_items_view
from projector._state_tables import register_state, state_views_used, tables_named
from projector._store import Store
from projector._views import VIEWS, Committed, duckdb_message, run_on_committed, sql_string


class QueryResult(msgspec.Struct, frozen=True, kw_only=True):
    """A query's column names and rows."""

    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]]


READING_STATEMENTS: Final = frozenset({duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN})
"""The statements a confined query may be made of."""
_ALL_VIEWS: Final = ", ".join((*VIEWS, *sorted(RUN_VIEWS)))
_UNSAFE_HINT: Final = "crawlog sql reads the job's views only; --unsafe runs the full DuckDB"


def query(store: Store, sql: str, *, unsafe: bool = False) -> QueryResult:
    """Run ``sql`` over the views of the committed data; ``CrawlogError`` if it fails, or
    (unless ``unsafe``) if it does more than read them (see the module's docstring)."""
    if not unsafe:
        check_reading(sql)
    needed = state_views_used(sql)
    named = tables_named(sql)
    runs = RUN_VIEWS if named is None else RUN_VIEWS & named
    # Made only for a query that reads it: its columns are found by reading every item.
    fields = named is None or ITEMS in named

    def run(committed: Committed) -> QueryResult:
        con = committed.con
        if needed:
            assert committed.state is not None
            register_state(con, committed.manifest, committed.state, needed)
        register_run_views(con, store, committed.manifest, runs)
        if fields:
            create_items_view(con, register_live_items(con, store, committed.manifest))
        if not unsafe:
            _confine(con, store.segment_paths(committed.manifest))
        try:
            cursor = con.execute(sql)
            rows = cursor.fetchall() if cursor.description is not None else []
        except duckdb.IOException:
            raise
        except duckdb.PermissionException as exc:
            raise ConfigError(f"refused: {duckdb_message(exc)} ({_UNSAFE_HINT})") from None
        except duckdb.Error as exc:
            raise CrawlogError(
                f"query failed: {duckdb_message(exc)} (views: {_ALL_VIEWS}; see docs/reports.md)"
            ) from None
        columns = tuple(d[0] for d in cursor.description or ())
        return QueryResult(columns=columns, rows=rows)

    return run_on_committed(store, run, read_state=bool(needed), doing="the query")


def check_reading(sql: str) -> None:
    """``ConfigError`` unless every statement of ``sql`` only reads (`READING_STATEMENTS`);
    a query DuckDB cannot parse is left to fail when it runs, with DuckDB's message."""
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error:
        return
    for statement in statements:
        if statement.type not in READING_STATEMENTS:
            kind = statement.type.name.replace("_", " ")
            raise ConfigError(f"refused: a {kind} statement writes or reaches out ({_UNSAFE_HINT})")


def _confine(con: duckdb.DuckDBPyConnection, readable: list[Path]) -> None:
    """Cut ``con``'s access to anything but the ``readable`` files, for good."""
    paths = ", ".join(sql_string(str(path)) for path in readable)
    con.execute(f"SET allowed_paths = [{paths}]")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
