"""``crawlog export``: the ``pages`` or ``items`` view of a job's archive, written to a file.

Items in CSV are flat: one column per item field (the union of every item's fields, in the
order they are first seen in the log), between the item's ``key`` and ``task_id`` and the
view's other columns. A string is written as it is, any other value as JSON (a nested one
too), a missing field or a null as an empty cell. A field named like one of the view's own
columns gets the column ``data.NAME``. In JSON lines and Parquet an item's ``data`` stays
one nested value.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Final

from eventlog import CrawlogError
from projector._defaults import EXPORT_FORMATS, EXPORT_WHAT, ExportFormat, ExportWhat
from projector._store import Store
from projector._views import Committed, run_on_committed, sql_string

_COPY_OPTIONS: Final[dict[str, str]] = {
    "jsonl": "FORMAT json",
    "csv": "FORMAT csv, HEADER true",
    "parquet": "FORMAT parquet, COMPRESSION zstd",
}
ITEM_LEADING: Final = ("key", "task_id")
"""The ``items`` view's columns before an item's fields in a flat (CSV) export."""
ITEM_TRAILING: Final = ("worker", "epoch_s", "time", "stream_id")
"""... and after them."""
COLLISION_PREFIX: Final = "data."
"""Put before a field's name when the view has a column of that name."""
_LOG_ORDER: Final = "ORDER BY stream_ms, stream_seq"
# Every item's field names with their first place in the log (entry, then place in the item).
_FIELDS_SQL: Final = """
WITH named AS (
    SELECT stream_ms, stream_seq, unnest(json_keys(data)) AS name,
           generate_subscripts(json_keys(data), 1) AS place
    FROM items WHERE json_type(data) = 'OBJECT'
)
SELECT name FROM named GROUP BY name ORDER BY min([stream_ms, stream_seq, place])
"""


def export(store: Store, *, what: ExportWhat, fmt: ExportFormat, out: Path) -> int:
    """Write the ``pages`` or ``items`` view, in log order, to ``out``; the rows written.

    Only the archive is read (no state), so an export of a large job starts at once.
    """
    if what not in EXPORT_WHAT or fmt not in EXPORT_FORMATS:
        raise CrawlogError(f"cannot export {what!r} as {fmt!r}")
    flat = what == "items" and fmt == "csv"

    def run(committed: Committed) -> int:
        con = committed.con
        if flat:
            names = [row[0] for row in con.execute(_FIELDS_SQL).fetchall()]
            select = f"SELECT {flat_item_columns(names)} FROM items {_LOG_ORDER}"
        else:
            select = f"SELECT * EXCLUDE (stream_ms, stream_seq) FROM {what} {_LOG_ORDER}"
        copy = f"COPY ({select}) TO {sql_string(str(out))} ({_COPY_OPTIONS[fmt]})"
        written = con.execute(copy).fetchone()
        return int(written[0]) if written else 0

    return run_on_committed(store, run, read_state=False, doing=f"exporting {what} to {out}")


def flat_header(names: Sequence[str]) -> list[str]:
    """The columns of a flat item export whose items have the fields ``names``."""
    own = {*ITEM_LEADING, *ITEM_TRAILING}
    fields = [f"{COLLISION_PREFIX}{n}" if n in own else n for n in names]
    return [*ITEM_LEADING, *fields, *ITEM_TRAILING]


def flat_item_columns(names: Sequence[str]) -> str:
    """The SELECT list of the ``items`` view as flat columns: a field per column."""
    header = flat_header(names)
    fields = header[len(ITEM_LEADING) : len(header) - len(ITEM_TRAILING)]
    columns = [*ITEM_LEADING]
    for name, column in zip(names, fields, strict=True):
        columns.append(
            f"json_extract_string(data, {sql_string(_pointer(name))}) AS {_ident(column)}"
        )
    return ", ".join([*columns, *ITEM_TRAILING])


def _pointer(name: str) -> str:
    """A JSON Pointer to the top-level field ``name`` (any characters in it)."""
    return "/" + name.replace("~", "~0").replace("/", "~1")


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
