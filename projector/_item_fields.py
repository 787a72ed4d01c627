"""Items as the spider wrote them: one column per item field, for the ``items`` view, the
export and the feed.

The ``item_events`` view (`projector._views`) keeps each item's envelope (key, task,
worker, times) with the item as one JSON value, ``data``. A spider's user thinks of the
item's own fields: the ``items`` view has a column per field, the union of every item's
fields in the order the log first shows them, each typed by what DuckDB reads in all the
items (``json_group_structure``):

* a string, a boolean or a float field has that type; an integer one is a BIGINT;
* a list of one scalar type is a list of it (``VARCHAR[]``);
* anything else (an object, a list of mixed or nested values, a field whose items
  disagree on its type, a field always null) is JSON, read with ``->>``.

A field named like an earlier one but for its case (``Title`` after ``title``: DuckDB's
names ignore case) gets the column ``Title_2``, a field named "" the column ``_``. Items
without any field give one column, ``data``, their (empty) objects.
"""

from __future__ import annotations

import json
from typing import Any, Final

import duckdb

from projector._views import ITEM_EVENTS, sql_string

ITEMS: Final = "items"
"""The view of the items as columns."""
EMPTY_COLUMN: Final = "data"
"""The ``items`` view's one column when no item has a field."""
EMPTY_NAME: Final = "_"
"""The column of a field whose name is the empty string."""
_SCALARS: Final = {
    "VARCHAR": "VARCHAR",
    "BOOLEAN": "BOOLEAN",
    "DOUBLE": "DOUBLE",
    "BIGINT": "BIGINT",
    # DuckDB reads positive integers as UBIGINT and a mix of signs as HUGEINT: a BIGINT is
    # what a user subtracts from without an overflow error.
    "UBIGINT": "BIGINT",
    "HUGEINT": "BIGINT",
}
_JSON: Final = '"JSON"'


def field_names(con: duckdb.DuckDBPyConnection, source: str = ITEM_EVENTS) -> list[str]:
    """Every item field of ``source`` (a relation with ``data``, ``stream_ms`` and
    ``stream_seq``), in the order the log first shows them (entry, then place in the item)."""
    rows = con.execute(
        f"""
        WITH named AS (
            SELECT stream_ms, stream_seq, unnest(json_keys(data)) AS name,
                   generate_subscripts(json_keys(data), 1) AS place
            FROM {source} WHERE json_type(data) = 'OBJECT'
        )
        SELECT name FROM named GROUP BY name ORDER BY min([stream_ms, stream_seq, place])
        """
    ).fetchall()
    return [str(row[0]) for row in rows]


def field_columns(con: duckdb.DuckDBPyConnection, source: str = ITEM_EVENTS) -> list[str]:
    """The SELECT list of ``source``'s items as typed columns, one per field (see the
    module's docstring); ``[data]`` when no item has a field."""
    names = field_names(con, source)
    if not names:
        return [f"data AS {EMPTY_COLUMN}"]
    row = con.execute(
        f"SELECT json_group_structure(data) FROM {source} WHERE json_type(data) = 'OBJECT'"
    ).fetchone()
    structure: dict[str, Any] = json.loads(row[0]) if row and row[0] else {}
    if not isinstance(structure, dict):
        structure = {}
    columns: list[str] = []
    for name, alias in zip(names, column_names(names), strict=True):
        typed = sql_string(column_structure(structure.get(name)))
        columns.append(
            f"json_transform(json_extract(data, {sql_string(pointer(name))}), {typed}) "
            f"AS {identifier(alias)}"
        )
    return columns


def create_items_view(con: duckdb.DuckDBPyConnection, source: str = ITEM_EVENTS) -> None:
    """The ``items`` view on ``con``: the items of ``source`` (an ``item_events``-like view)
    as columns."""
    columns = ", ".join(field_columns(con, source))
    con.execute(f"CREATE OR REPLACE VIEW {ITEMS} AS SELECT {columns} FROM {source}")


def column_structure(found: object) -> str:
    """The JSON structure (as ``json_transform`` takes it) of a field whose values DuckDB
    read as ``found`` (``json_group_structure``'s part for it)."""
    if isinstance(found, str) and found in _SCALARS:
        return json.dumps(_SCALARS[found])
    if isinstance(found, list) and len(found) == 1 and found[0] in _SCALARS:
        return json.dumps([_SCALARS[found[0]]])
    return _JSON


def column_names(names: list[str]) -> list[str]:
    """A distinct column name per field, DuckDB's case-insensitive names considered; a
    field named "" (which no SQL name can be) gets the column ``_``. Named fields are
    given theirs first, so that a field called ``_`` keeps its own name."""
    taken: set[str] = set()
    columns: dict[int, str] = {}
    named = [i for i, name in enumerate(names) if name]
    for i in [*named, *(i for i, name in enumerate(names) if not name)]:
        base = names[i] or EMPTY_NAME
        column, n = base, 1
        while column.lower() in taken:
            n += 1
            column = f"{base}_{n}"
        taken.add(column.lower())
        columns[i] = column
    return [columns[i] for i in range(len(names))]


def pointer(name: str) -> str:
    """A JSON Pointer to the top-level field ``name`` (any characters in it)."""
    return "/" + name.replace("~", "~0").replace("/", "~1")


def identifier(name: str) -> str:
    """``name`` quoted as an SQL identifier."""
    return '"' + name.replace('"', '""') + '"'
