"""How the PostgreSQL feed (`projector._pg_feed`) lays items out in a table: the meta
columns, a column per item field and its type, and what a value becomes in a column.
Plain functions over plain values, without a database.

* **Meta columns**: ``key`` (the item's key, the table's unique key), ``data`` (the item as
  the spider wrote it, ``jsonb``), then ``task_id``, ``worker``, ``scraped_at`` and
  ``stream_id``.
* **A column per field**, named as the field (an identifier as PostgreSQL keeps it:
  exactly, case included), at most 63 bytes; a field named like a meta column or like a
  column another field has gets the first free ``NAME_2``, ``NAME_3``...; a field named ""
  the column ``_``. A column is added the first time a batch holds a value of the field
  other than null, typed by the batch's values: ``text`` (strings), ``boolean``,
  ``bigint`` (integers), ``numeric`` (integers past 64 bits), ``double precision``
  (numbers with a fraction among them) or ``jsonb`` (lists, objects, or values of mixed
  kinds). A field's column is kept, with its name, in the feed's position.
* **A value in a column** of whatever type the column has now (a table made beforehand
  or changed since keeps its types): text takes a string as it is and any other value as
  its JSON text; a number, boolean or JSON column takes the values that fit it; a value
  that does not fit, or a column of another type, gets NULL. ``data`` always holds the
  whole item.

PostgreSQL text cannot hold the character NUL (``\\u0000``), in ``text`` or in ``jsonb``:
it is written as U+FFFD (`scrub`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, Literal

import msgspec

META_COLUMNS: Final = ("key", "data", "task_id", "worker", "scraped_at", "stream_id")
"""The table's own columns, before the item's fields."""
CREATED_META: Final = {
    "key": "text PRIMARY KEY",
    "data": "jsonb NOT NULL",
    "task_id": "text",
    "worker": "text",
    "scraped_at": "timestamptz",
    "stream_id": "text",
}
"""Each meta column as the feed creates it."""
MAX_IDENTIFIER_BYTES: Final = 63
"""PostgreSQL cuts longer names (``NAMEDATALEN`` - 1)."""
EMPTY_NAME: Final = "_"
"""The column of a field whose name is the empty string."""
REPLACEMENT: Final = "\ufffd"
"""What a NUL character becomes: PostgreSQL's text cannot hold it."""

Kind = Literal["text", "boolean", "integer", "numeric", "float", "json", "timestamp", "other"]
"""What a column takes, from its type's name (``format_type``)."""
_KINDS: Final[dict[str, Kind]] = {
    "text": "text",
    "character varying": "text",
    "character": "text",
    "boolean": "boolean",
    "smallint": "integer",
    "integer": "integer",
    "bigint": "integer",
    "numeric": "numeric",
    "real": "float",
    "double precision": "float",
    "json": "json",
    "jsonb": "json",
    "timestamp with time zone": "timestamp",
    "timestamp without time zone": "timestamp",
}
_NEW_TYPES: Final = {
    "str": "text",
    "bool": "boolean",
    "int": "bigint",
    "big": "numeric",
    "float": "double precision",
    "json": "jsonb",
}
"""A new column's type for values of one kind (`_value_kind`)."""
_INTEGER_BITS: Final = {"smallint": 16, "integer": 32, "bigint": 64}
_json: Final = msgspec.json.Encoder()


def kind(type_name: str) -> Kind:
    """What a column of the type ``type_name`` (as ``format_type`` writes it) takes."""
    # Without a modifier: "numeric(6,2)", "timestamp(3) with time zone".
    return _KINDS.get(" ".join(re.sub(r"\(.*?\)", "", type_name).split()), "other")


def column_type(values: Iterable[Any]) -> str | None:
    """The type of a new column for a field with ``values`` (its values in one batch);
    None if all are null (the column waits for a batch that has a value)."""
    kinds = {_value_kind(v) for v in values if v is not None}
    if not kinds:
        return None
    if len(kinds) == 1:
        return _NEW_TYPES[kinds.pop()]
    if kinds <= {"int", "float"}:
        return "double precision"
    if kinds <= {"int", "big"}:
        return "numeric"
    return "jsonb"


def _value_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int" if -(2**63) <= value < 2**63 else "big"
    if isinstance(value, float):
        return "float"
    return "str" if isinstance(value, str) else "json"


def cell(value: Any, type_name: str) -> Any:
    """``value`` (an item field's, decoded from JSON) as a column of ``type_name`` takes
    it, or None where it does not fit; JSON is given as its text."""
    if value is None:
        return None
    match kind(type_name):
        case "text":
            return value if isinstance(value, str) else _json.encode(value).decode()
        case "json":
            return _json.encode(value).decode()
        case "boolean":
            return value if isinstance(value, bool) else None
        case "integer":
            bits = _INTEGER_BITS.get(type_name.strip(), 64)
            fits = isinstance(value, int) and not isinstance(value, bool)
            return value if fits and -(2 ** (bits - 1)) <= value < 2 ** (bits - 1) else None
        case "numeric" | "float":
            number = isinstance(value, int | float) and not isinstance(value, bool)
            return value if number else None
        case _:
            return None


def column_name(field: str, taken: set[str]) -> str:
    """The column of ``field``: its name (``_`` if empty, cut to 63 bytes, NUL as ``_``),
    or the first ``NAME_n`` not in ``taken``."""
    base = field.replace("\x00", "_") or EMPTY_NAME
    n = 1
    while True:
        suffix = f"_{n}" if n > 1 else ""
        room = MAX_IDENTIFIER_BYTES - len(suffix.encode())
        column = base.encode()[:room].decode(errors="ignore") + suffix
        if column not in taken:
            return column
        n += 1


def plan_columns(
    values: Mapping[str, Sequence[Any]],
    mapping: Sequence[tuple[str, str]],
    existing: Mapping[str, str],
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """For a batch whose items have ``values`` (field → its values, fields in the order
    first seen), a feed whose fields go into ``mapping``'s columns, and a table with the
    ``existing`` columns (name → type): the mapping with the batch's new fields (those with
    a value), and the columns to add (name, type), a mapped column missing from the table
    included."""
    mapped = dict(mapping)
    taken = set(META_COLUMNS) | set(mapped.values())
    plan = list(mapping)
    add: list[tuple[str, str]] = []
    for field, seen in values.items():
        column = mapped.get(field)
        if column is None:
            if column_type(seen) is None:
                continue
            column = column_name(field, taken)
            taken.add(column)
            plan.append((field, column))
        if column not in existing and (wanted := column_type(seen)) is not None:
            add.append((column, wanted))
    return plan, add


def scrub(value: Any) -> Any:
    """``value`` with every NUL character in its strings (and object keys) as U+FFFD."""
    if isinstance(value, str):
        return value.replace("\x00", REPLACEMENT)
    if isinstance(value, dict):
        return {scrub(k): scrub(v) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    return value


def shape_problem(columns: Mapping[str, str], *, key_unique: bool) -> str | None:
    """Why a table with ``columns`` (name → type) cannot take a feed of items, or None:
    it needs a text ``key`` with a unique index of its own and a JSON ``data``; the other
    meta columns, where it has them, of the types the feed writes."""
    wanted: dict[str, tuple[Kind, str]] = {
        "key": ("text", "text"),
        "data": ("json", "jsonb"),
        "task_id": ("text", "text"),
        "worker": ("text", "text"),
        "scraped_at": ("timestamp", "timestamptz"),
        "stream_id": ("text", "text"),
    }
    for name in ("key", "data"):
        if name not in columns:
            return f'it has no column "{name}" ({wanted[name][1]})'
    for name, (needed, shown) in wanted.items():
        if name in columns and kind(columns[name]) != needed:
            return f'its column "{name}" is {columns[name]}, not {shown}'
    if not key_unique:
        return 'its column "key" has no unique index of its own (a primary key)'
    return None
