"""``crawlog export``: a job's page fetches, or its items, written to a file.

Items are written as the spider wrote them, one per key: in JSON lines each item's own
object, as it was logged; in CSV and Parquet a column per item field (the union of every
item's fields, in the order they are first seen in the log, `projector._item_fields`).
In CSV a string is written as it is, any other value as JSON (a nested one too), a
missing field or a null as an empty cell; Parquet has the ``items`` view's typed columns.

``with_meta`` writes each item in its envelope instead, the ``item_events`` view: its
``key``, ``task_id``, ``worker``, times and stream ID around it. In JSON lines and Parquet
the item is then one nested value, ``data``; in CSV its fields are columns between the
item's ``key`` and ``task_id`` and the view's other columns, a field named like one of
those columns getting the column ``data.NAME``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Final

import duckdb

from eventlog import CrawlogError
from projector._defaults import EXPORT_FORMATS, EXPORT_WHAT, ExportFormat, ExportWhat
from projector._item_changes import register_live_items
from projector._item_fields import (
    EMPTY_COLUMN,
    column_names,
    field_columns,
    field_names,
    identifier,
    pointer,
)
from projector._store import Store
from projector._views import Committed, run_on_committed, sql_string

_COPY_OPTIONS: Final[dict[str, str]] = {
    "jsonl": "FORMAT json",
    "csv": "FORMAT csv, HEADER true",
    "parquet": "FORMAT parquet, COMPRESSION zstd",
}
ITEM_LEADING: Final = ("key", "task_id")
"""The ``item_events`` view's columns before an item's fields in a flat CSV with meta."""
ITEM_TRAILING: Final = ("worker", "epoch_s", "time", "stream_id")
"""... and after them."""
COLLISION_PREFIX: Final = "data."
"""Put before a field's name when the view has a column of that name."""
_LOG_ORDER: Final = "ORDER BY stream_ms, stream_seq"
ITEM_LINES_BATCH: Final = 10_000
"""Items read from DuckDB and written as JSON lines at once."""


def export(
    store: Store, *, what: ExportWhat, fmt: ExportFormat, out: Path, with_meta: bool = False
) -> int:
    """Write the job's pages (the ``pages`` view) or items (as the spider wrote them, or
    in their envelope ``with_meta``), in log order, to ``out``; the rows written.

    Only the archive is read (no state), so an export of a large job starts at once.
    """
    if what not in EXPORT_WHAT or fmt not in EXPORT_FORMATS:
        raise CrawlogError(f"cannot export {what!r} as {fmt!r}")

    def run(committed: Committed) -> int:
        con = committed.con
        # A recrawled job's items as its latest run left them, not each key's first scrape.
        items = "" if what == "pages" else register_live_items(con, store, committed.manifest)
        if what == "pages" or (with_meta and fmt != "csv"):
            view = "pages" if what == "pages" else items
            select = f"SELECT * EXCLUDE (stream_ms, stream_seq) FROM {view}"
        elif with_meta:
            select = f"SELECT {flat_item_columns(field_names(con, items))} FROM {items}"
        elif fmt == "jsonl":
            return _write_item_lines(con, out, items)
        elif fmt == "csv":
            select = f"SELECT {plain_item_columns(field_names(con, items))} FROM {items}"
        else:
            select = f"SELECT {', '.join(field_columns(con, items))} FROM {items}"
        select += f" {_LOG_ORDER}"
        copy = f"COPY ({select}) TO {sql_string(str(out))} ({_COPY_OPTIONS[fmt]})"
        written = con.execute(copy).fetchone()
        return int(written[0]) if written else 0

    return run_on_committed(store, run, read_state=False, doing=f"exporting {what} to {out}")


def _write_item_lines(con: duckdb.DuckDBPyConnection, out: Path, source: str) -> int:
    """Each item's object as the log holds it (the JSON it was archived as), a line each."""
    cursor = con.execute(f"SELECT CAST(data AS VARCHAR) FROM {source} {_LOG_ORDER}")
    written = 0
    with out.open("w", encoding="utf-8") as sink:
        while rows := cursor.fetchmany(ITEM_LINES_BATCH):
            sink.write("".join(f"{row[0]}\n" for row in rows))
            written += len(rows)
    return written


def plain_item_columns(names: Sequence[str]) -> str:
    """The SELECT list of the items alone as flat CSV columns: a field per column (the
    item's ``data`` as JSON when no item has a field)."""
    if not names:
        return f"CAST(data AS VARCHAR) AS {EMPTY_COLUMN}"
    return ", ".join(
        f"json_extract_string(data, {sql_string(pointer(name))}) AS {identifier(column)}"
        for name, column in zip(names, column_names(list(names)), strict=True)
    )


def flat_header(names: Sequence[str]) -> list[str]:
    """The columns of a flat item export whose items have the fields ``names``."""
    own = {*ITEM_LEADING, *ITEM_TRAILING}
    fields = [f"{COLLISION_PREFIX}{n}" if n in own or not n else n for n in names]
    return [*ITEM_LEADING, *fields, *ITEM_TRAILING]


def flat_item_columns(names: Sequence[str]) -> str:
    """The SELECT list of the ``item_events`` view as flat columns: a field per column."""
    header = flat_header(names)
    fields = header[len(ITEM_LEADING) : len(header) - len(ITEM_TRAILING)]
    columns = [*ITEM_LEADING]
    for name, column in zip(names, fields, strict=True):
        columns.append(
            f"json_extract_string(data, {sql_string(pointer(name))}) AS {identifier(column)}"
        )
    return ", ".join([*columns, *ITEM_TRAILING])
