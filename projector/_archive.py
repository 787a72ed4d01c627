"""Archive segments: the log, written to immutable Parquet files in columnar batches.

A segment holds a contiguous run of the log, named by its first and last stream IDs. Each
event is one row: the stored bytes (``payload``, decoded again by ``replay``, so a segment
replays exactly) and the fields reports query, flattened into typed columns (null where an
event type has no such field). A segment is written to a temporary file, fsynced and
renamed, so a reader sees a whole segment or none.
"""

from __future__ import annotations

import functools
import io
import itertools
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

import msgspec

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.json as pa_json
    import pyarrow.parquet as pq
else:
    from projector._arrow import pa, pa_json, pq

from eventlog import CrawlogError, ItemScraped, LogEntry, decode, stream_id_key
from projector._segment_index import (
    ARCHIVE_ROW_GROUP,
    merged_index,
    read_index,
    row_group_rows,
    write_index,
    write_index_keys,
)

SEGMENT_SUFFIX = ".parquet"
COMPRESSION = "zstd"
DICTIONARY_COLUMNS: Final = (
    "type",
    "actor",
    "site",
    "status",
    "page",
    "attempt",
    "deliveries",
    "reason",
    "error",
    "action_id",
)
"""Columns of few distinct values. Dictionary-encoding the others (ids, URLs, payloads)
only costs: without it a segment is written faster and comes out smaller."""


@functools.cache
def schema() -> pa.Schema:
    """The columns of every segment (``SCHEMA``; a function, so that Arrow is imported at
    its first use, see ``_arrow``)."""
    return pa.schema(
        [
            ("stream_id", pa.string()),
            ("type", pa.string()),
            ("event_id", pa.string()),
            ("actor", pa.string()),
            ("at", pa.float64()),
            ("task_id", pa.string()),
            ("site", pa.string()),
            ("url", pa.string()),
            ("status", pa.int32()),
            ("bytes", pa.int64()),
            ("elapsed_ms", pa.float64()),
            ("page", pa.int32()),
            ("attempt", pa.int32()),
            ("deliveries", pa.int32()),
            ("reason", pa.string()),
            ("error", pa.string()),
            ("key", pa.string()),
            ("action_id", pa.string()),
            ("data", pa.string()),
            ("payload", pa.binary()),
        ]
    )


if TYPE_CHECKING:
    SCHEMA: pa.Schema
    """Columns of every segment. ``page`` is also a checkpoint's cursor page, ``key`` also a
    checkpoint's last item key, ``error`` also an aborted task's last error; ``data`` is an
    item's data as JSON."""


def __getattr__(name: str) -> object:
    """``SCHEMA``, made at its first use."""
    if name == "SCHEMA":
        return schema()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def _json_options() -> tuple[pa_json.ReadOptions, pa_json.ParseOptions]:
    """How segments' lines are read as JSON. The event fields as Arrow reads them: those
    of ``SCHEMA``, plus the nested and differently named fields that fill its shared
    columns."""
    from_json = pa.schema(
        [f for f in schema() if f.name not in ("stream_id", "data", "payload")]
        + [
            ("last_error", pa.string()),
            ("cursor", pa.struct([("page", pa.int32()), ("last_item_key", pa.string())])),
        ]
    )
    parse = pa_json.ParseOptions(explicit_schema=from_json, unexpected_field_behavior="ignore")
    return pa_json.ReadOptions(block_size=1 << 20), parse


_json = msgspec.json.Encoder()


class ArchiveCorrupt(CrawlogError):
    """An archive segment that cannot be read back."""


class SegmentInfo(msgspec.Struct, frozen=True, kw_only=True):
    """One committed segment: its file name, the stream IDs it spans, its event count."""

    name: str
    first_id: str
    last_id: str
    events: int
    size: int | None = None
    """The file's size in bytes, so that a reader can see a file cut short without reading
    it (None: a segment written before sizes were recorded)."""


def segment_name(first_id: str, last_id: str) -> str:
    """A file name that sorts like the stream IDs it spans."""
    (a_ms, a_seq), (b_ms, b_seq) = stream_id_key(first_id), stream_id_key(last_id)
    return f"{a_ms:015d}-{a_seq:08d}_{b_ms:015d}-{b_seq:08d}{SEGMENT_SUFFIX}"


def span_of(name: str) -> tuple[str, str] | None:
    """The first and last stream IDs a segment's file name says it spans (``segment_name``
    read back); None for a name that is not a segment's."""
    stem = name.removesuffix(SEGMENT_SUFFIX)
    if stem == name or name.startswith("."):
        return None
    try:
        first, last = stem.split("_")
        ids = [tuple(int(part) for part in side.split("-")) for side in (first, last)]
    except ValueError:
        return None
    if any(len(i) != 2 for i in ids):
        return None
    (a_ms, a_seq), (b_ms, b_seq) = ids
    return f"{a_ms}-{a_seq}", f"{b_ms}-{b_seq}"


def segment_on_disk(path: Path) -> SegmentInfo:
    """What a segment file holds, as a manifest records it, from its name and its Parquet
    footer (the rows are not read); ``ArchiveCorrupt`` if the footer cannot be read."""
    span = span_of(path.name)
    if span is None:
        raise ArchiveCorrupt(f"{path} is not an archive segment's name")
    try:
        rows = pq.read_metadata(path).num_rows
    except (OSError, pa.ArrowException) as exc:
        raise ArchiveCorrupt(f"archive segment {path} cannot be read ({exc})") from None
    return SegmentInfo(
        name=path.name, first_id=span[0], last_id=span[1], events=rows, size=path.stat().st_size
    )


def _read_lines(lines: bytes) -> pa.Table:
    try:
        read, parse = _json_options()
        return pa_json.read_json(io.BytesIO(lines), read_options=read, parse_options=parse)
    except pa.ArrowInvalid as exc:
        # Arrow's reader cannot split a line across blocks: an event bigger than a block
        # (a big item) is read with one block that holds every line, on one thread.
        if "straddl" not in str(exc):
            raise
    whole = pa_json.ReadOptions(block_size=len(lines) + 1)
    return pa_json.read_json(
        io.BytesIO(lines), read_options=whole, parse_options=_json_options()[1]
    )


def _shared_values(
    events: Sequence[object],
) -> tuple[list[int | None], list[str | None], list[str | None]]:
    """The values of the columns two fields fill, event by event: a checkpoint's cursor
    holds its page and item key, an abort's last error is its error.

    Taken from the events in Python rather than coalesced by Arrow's compute functions:
    a small commit (a short crawl's only one) then never imports ``pyarrow.compute``,
    which costs a process more CPU than building these lists for thousands of events.
    """
    pages: list[int | None] = []
    keys: list[str | None] = []
    errors: list[str | None] = []
    for event in events:
        page = getattr(event, "page", None)
        key = getattr(event, "key", None)
        cursor = getattr(event, "cursor", None)
        if cursor is not None:
            page = cursor.page if page is None else page
            key = cursor.last_item_key if key is None else key
        error = getattr(event, "error", None)
        pages.append(page)
        keys.append(key)
        errors.append(getattr(event, "last_error", None) if error is None else error)
    return pages, keys, errors


def to_table(entries: Sequence[LogEntry]) -> pa.Table:
    """Log entries as one Arrow table of ``SCHEMA``.

    Built by Arrow's JSON reader from msgspec's JSON lines: both run in C (the reader on
    several threads), several times faster than filling twenty columns from Python.
    """
    events = [e.event for e in entries]
    parsed = _read_lines(_json.encode_lines(events))
    pages, keys, errors = _shared_values(events)
    shared = {
        "page": pa.array(pages, pa.int32()),
        "key": pa.array(keys, pa.string()),
        "error": pa.array(errors, pa.string()),
    }
    items = [_json.encode(e.data).decode() if type(e) is ItemScraped else None for e in events]
    columns = {
        "stream_id": pa.array([e.stream_id for e in entries], pa.string()),
        "data": pa.array(items, pa.string()),
        # pa.array straight from the bytes: cheaper than one joined buffer and offsets
        # built in Python, which holds the GIL longer.
        "payload": pa.array([e.payload for e in entries], pa.binary()),
    }
    return pa.table(
        [columns.get(f.name) or shared.get(f.name) or parsed.column(f.name) for f in schema()],
        schema=schema(),
    )


def write_segment(directory: Path, entries: Sequence[LogEntry]) -> SegmentInfo:
    """Write ``entries`` (a contiguous run of the log) as a new segment file."""
    return write_table(directory, to_table(entries))


def write_table(directory: Path, table: pa.Table) -> SegmentInfo:
    """Write a table of ``SCHEMA`` rows, in log order, as a segment: temp, fsync, rename."""
    segment = _write_rows(directory, table, [table])
    write_index(segment, table)  # after the segment: its size is in the index
    return _segment_info(segment, table)


def merge_segments(directory: Path, segments: Sequence[SegmentInfo]) -> SegmentInfo:
    """Write consecutive segments as one new segment (the old files stay until uncommitted).

    Each old row group stays a row group of the new segment, so the new index is the old
    ones with their row groups renumbered (``merged_index``). If one of them is missing or
    does not match its segment (a job from before indexes, whose segments were one row
    group each), the rows are written and indexed as a new segment's.
    """
    paths = [directory / s.name for s in segments]
    merged = pa.concat_tables([read_table(path) for path in paths])
    groups = [row_group_rows(path) for path in paths]
    indexes = [read_index(path, s.events) for path, s in zip(paths, segments, strict=True)]
    known = [
        i for i, g in zip(indexes, groups, strict=True) if i is not None and i.row_groups == len(g)
    ]
    if len(known) < len(segments):
        return write_table(directory, merged)
    rows = list(itertools.chain.from_iterable(groups))
    starts = itertools.accumulate(rows, initial=0)
    parts = [merged.slice(at, count) for at, count in zip(starts, rows, strict=False)]
    segment = _write_rows(directory, merged, parts)
    keys, untasked = merged_index(known)
    write_index_keys(segment, merged.num_rows, len(parts), keys, untasked)
    return _segment_info(segment, merged)


def _write_rows(directory: Path, table: pa.Table, parts: Sequence[pa.Table]) -> Path:
    """Write ``table`` as a segment file (temp, fsync, rename), each of ``parts`` (its
    rows, in order) in row groups of at most ``ARCHIVE_ROW_GROUP`` rows; returns its path."""
    ids = table.column("stream_id")
    name = segment_name(ids[0].as_py(), ids[-1].as_py())
    # The pid: a segment writer process still finishing a dead projector's segment never
    # shares a temporary file with the next projector's (``_writer``).
    tmp = directory / f".{name}.{os.getpid()}.tmp"
    with open(tmp, "wb") as sink:
        # Page checksums: a bit flipped on disk is an error naming the file when read,
        # not a wrong event (without them 1 flip in 9 read back silently as other data).
        with pq.ParquetWriter(
            sink,
            table.schema,
            compression=COMPRESSION,
            use_dictionary=DICTIONARY_COLUMNS,
            write_page_checksum=True,
        ) as writer:
            for part in parts:
                writer.write_table(part, row_group_size=ARCHIVE_ROW_GROUP)
        sink.flush()
        os.fsync(sink.fileno())
    os.replace(tmp, directory / name)
    return directory / name


def _segment_info(segment: Path, table: pa.Table) -> SegmentInfo:
    ids = table.column("stream_id")
    return SegmentInfo(
        name=segment.name,
        first_id=ids[0].as_py(),
        last_id=ids[-1].as_py(),
        events=table.num_rows,
        size=segment.stat().st_size,
    )


def read_table(path: Path, columns: Sequence[str] | None = None) -> pa.Table:
    """A segment's rows; ``ArchiveCorrupt`` naming the file if it cannot be read.

    A segment of today's columns is read as the one file it is: ``pq.read_table`` reads
    through Arrow's datasets, whose import (Arrow's compute functions with it) cost a
    process's first read more than the read, a recrawl's seeding among them. One of other
    columns is read through them, which fill in the columns it lacks."""
    try:
        with pq.ParquetFile(path, page_checksum_verification=True) as segment:
            if segment.schema_arrow.equals(schema()):
                return segment.read(columns=list(columns) if columns else None)
        return pq.read_table(
            path,
            columns=list(columns) if columns else None,
            schema=schema(),
            page_checksum_verification=True,
        )
    except (OSError, pa.ArrowException) as exc:
        job = path.parent.parent.name  # <data dir>/jobs/<job>/archive/<segment>
        raise ArchiveCorrupt(
            f"archive segment {path} cannot be read ({exc}): if the stream in Redis still "
            f"holds its events, `crawlog replay --job {job} --from-redis` rewrites it"
        ) from None


def read_entries(path: Path, after: str | None = None) -> Iterator[LogEntry]:
    """The log entries of a segment, in order; only those after stream ID ``after`` if set."""
    table = read_table(path, ["stream_id", "payload"])
    ids = table.column("stream_id").to_pylist()
    payloads = table.column("payload").to_pylist()
    floor = stream_id_key(after) if after is not None else None
    for stream_id, payload in zip(ids, payloads, strict=True):
        if floor is not None and stream_id_key(stream_id) <= floor:
            continue
        try:
            event = decode(payload)
        except CrawlogError as exc:
            raise ArchiveCorrupt(f"archive segment {path}: entry {stream_id}: {exc}") from None
        yield LogEntry(stream_id, event, payload)
