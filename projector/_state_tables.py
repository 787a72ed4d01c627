"""A job's committed state as Arrow tables: the ``tasks``, ``sites``, ``anomalies`` and
``job`` views of ``projector._views``, built only for the queries that read them."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, Final

import duckdb
import msgspec
import pyarrow as pa

from projector._state import STATUSES, State, TaskState
from projector._store import Manifest

MICROS: Final = 1_000_000
"""Microseconds a second: epoch seconds become DuckDB timestamps."""

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
    if isinstance(info, msgspec.inspect.LiteralType):
        # A closed set of strings (a task's status) is a string column.
        return pa.string() if all(isinstance(v, str) for v in info.values) else None
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
        "items_dropped": (sum(job.items_dropped.values()), pa.int64()),
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


def register_state(
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
    names = tables_named(sql)
    # Not one or more plain SELECTs (or not valid SQL): provide everything.
    return STATE_VIEWS if names is None else STATE_VIEWS & names


def tables_named(sql: str) -> frozenset[str] | None:
    """The tables and views ``sql`` names, lowercase; None when DuckDB's parser cannot
    tell (not one or more plain SELECTs, or not valid SQL)."""
    with duckdb.connect(":memory:") as parser:
        row = parser.execute("SELECT json_serialize_sql($1)", [sql]).fetchone()
    tree = json.loads(row[0]) if row else {"error": True}
    if tree.get("error"):
        return None
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
    return frozenset(names)
