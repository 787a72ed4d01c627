"""Segment indexes: which row groups of an archive segment hold a task's events.

``crawlog history`` wants the few events of one task out of a job's whole archive. Each
segment is written in row groups of ``ARCHIVE_ROW_GROUP`` rows, and beside it an index
file (``<segment>.idx``, temp + fsync + rename, after the segment and before the manifest
that names both) lists, sorted, one 64-bit key per (task, row group) that holds one of the
task's events: the CRC-32 of the task id in the high half, the row group in the low half;
the same for each fetched page's URL (``task.page`` rows: history lists fetches of the
task's URL by other tasks too); and, in its header, the row groups that hold events of no
task (site and job events, which every history shows). A reader binary-searches the keys
through a memory map (a few pages of a file it never reads whole), then reads only those
row groups and filters them exactly: a CRC collision reads a row group for nothing, never
drops a row.

An index is only ever a shortcut. It is used only if its header matches the segment the
manifest names (event count, row groups, the file's size in bytes); a missing, partial
or mismatched index makes the reader scan that segment's ``task_id`` column as before.
So a crash at any point (the index written and the manifest not, a merge half done), a
job written before indexes, or a segment rewritten by ``replay --from-redis`` (same rows,
same name, rewritten index) can cost time, never an event.

Why not the alternatives: Parquet bloom filters (pyarrow 26 writes none); a task's first
and last stream IDs in its task store row (only for tasks that left memory, and the fold's
state must stay as it is); sorting a segment by task (its rows would leave log order,
which replay and compaction rely on). Row groups of ``ARCHIVE_ROW_GROUP`` rather than
pyarrow's default of 1Mi: a segment's row group was all of it, so an index could only
name segments, each a whole ``payload`` column to read (0.38 s for 0.5M events against
5 ms for one row group of 16,384).
"""

from __future__ import annotations

import mmap
import os
import struct
import sys
import zlib
from bisect import bisect_left
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
else:
    from projector._arrow import pa, pc, pq

from eventlog import CrawlogError
from projector._arrow import SMALL_TABLE_ROWS

INDEX_SUFFIX = ".idx"
INDEX_VERSION = 1
_MAGIC = b"CLXI"
_HEADER = struct.Struct("<4sIQQIIQII")
"""magic, version, events, segment bytes, row groups, untasked row groups, keys, the CRC
of the segment's name, zero."""
_TASK_SEED = 0
_URL_SEED = 0x5A5A5A5A
"""CRC start values: a task id and a URL of the same text get different keys."""
PAGE_TYPE = "task.page"
_ROW_GROUP_MASK = 0xFFFFFFFF
_KEY_MASK = 0xFFFFFFFF_00000000
ARCHIVE_ROW_GROUP = 16_384
"""Rows per row group of an archive segment: what history reads for one key."""


def index_name(segment: str) -> str:
    """The index file of the segment file ``segment``."""
    return segment + INDEX_SUFFIX


def is_index(name: str) -> bool:
    return name.endswith(INDEX_SUFFIX)


def task_key(task_id: str) -> int:
    return zlib.crc32(task_id.encode(), _TASK_SEED)


def url_key(url: str) -> int:
    return zlib.crc32(url.encode(), _URL_SEED)


def index_keys(table: pa.Table, row_groups: Sequence[int]) -> tuple[pa.Array, list[int]]:
    """The sorted keys (a ``uint64`` array) of a segment's rows split in row groups of
    ``row_groups`` rows each, and the row groups holding events of no task. Pure: no I/O.

    Only each distinct task id and URL is hashed in Python; the keys of the rows are
    built, deduplicated and sorted by Arrow (a Python int per row cost about as much
    CPU as writing the segment), except in a table of up to ``SMALL_TABLE_ROWS`` rows,
    keyed row by row in Python (``_small_index_keys``: no ``pyarrow.compute`` import)."""
    if table.num_rows <= SMALL_TABLE_ROWS:
        return _small_index_keys(table, row_groups)
    group = pa.concat_arrays(
        [pa.repeat(pa.scalar(g, pa.uint64()), rows) for g, rows in enumerate(row_groups)]
    )
    tasks = pc.dictionary_encode(table.column("task_id").combine_chunks())
    task_keys = _keys(tasks, task_key, group)
    untasked = pc.unique(pc.filter(group, pc.is_null(tasks.indices))).to_pylist()
    pages = pc.equal(table.column("type").combine_chunks(), PAGE_TYPE).fill_null(False)
    urls = pc.dictionary_encode(pc.filter(table.column("url").combine_chunks(), pages))
    url_keys = _keys(urls, url_key, pc.filter(group, pages))
    keys = pc.unique(pa.concat_arrays([task_keys, url_keys]))
    return pc.take(keys, pc.sort_indices(keys)), sorted(untasked)


def _small_index_keys(table: pa.Table, row_groups: Sequence[int]) -> tuple[pa.Array, list[int]]:
    """``index_keys`` of a small table, row by row in Python: the same keys."""
    task_ids = table.column("task_id").to_pylist()
    types = table.column("type").to_pylist()
    urls = table.column("url").to_pylist()
    groups = [g for g, rows in enumerate(row_groups) for _ in range(rows)]
    hashed: dict[str, int] = {}
    keys: set[int] = set()
    untasked: set[int] = set()
    for task_id, kind, url, group in zip(task_ids, types, urls, groups, strict=True):
        if task_id is None:
            untasked.add(group)
        else:
            if (high := hashed.get(task_id)) is None:
                high = hashed[task_id] = task_key(task_id) << 32
            keys.add(high | group)
        if kind == PAGE_TYPE and url is not None:
            keys.add(url_key(url) << 32 | group)
    return pa.array(sorted(keys), pa.uint64()), sorted(untasked)


def _keys(values: pa.DictionaryArray, key: Callable[[str], int], group: pa.Array) -> pa.Array:
    """``key(value) << 32 | row group`` of each non-null row of ``values``."""
    hashes = pa.array([key(v) << 32 for v in values.dictionary.to_pylist()], pa.uint64())
    present = pc.is_valid(values.indices)
    per_row = pc.take(hashes, pc.filter(values.indices, present))
    return pc.bit_wise_or(per_row, pc.filter(group, present))


def write_index(segment: Path, table: pa.Table) -> None:
    """Write the index of the segment file ``segment`` (just written from ``table``):
    temp, fsync, rename, so a reader sees a whole index or none."""
    if sys.byteorder != "little":  # the keys are written and read as native integers
        return
    row_groups = row_group_rows(segment)
    if sum(row_groups) != table.num_rows:  # not the file of this table: no index, a scan
        return
    keys, untasked = index_keys(table, row_groups)
    write_index_keys(segment, table.num_rows, len(row_groups), keys, untasked)


def write_index_keys(
    segment: Path, events: int, row_groups: int, keys: pa.Array, untasked: Sequence[int]
) -> None:
    """Write the index of the segment file ``segment`` (``events`` rows in ``row_groups``
    row groups) from its sorted ``keys`` and ``untasked`` row groups: temp, fsync, rename."""
    if sys.byteorder != "little":
        return
    header = _HEADER.pack(
        _MAGIC,
        INDEX_VERSION,
        events,
        segment.stat().st_size,
        row_groups,
        len(untasked),
        len(keys),
        zlib.crc32(segment.name.encode()),
        0,
    )
    groups = struct.pack(f"<{_padded(len(untasked))}I", *untasked, *[0] * (len(untasked) % 2))
    # Arrow's buffer as it is: native byte order, little-endian where an index is written.
    body = keys.buffers()[1].to_pybytes()[keys.offset * 8 : (keys.offset + len(keys)) * 8]
    final = segment.with_name(index_name(segment.name))
    tmp = segment.with_name(f".{final.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as sink:
        sink.write(header + groups + body)
        sink.flush()
        os.fsync(sink.fileno())
    os.replace(tmp, final)


class SegmentIndex(NamedTuple):
    """What a segment's index holds: its sorted keys, the row groups of events of no task,
    and how many row groups the segment has."""

    keys: pa.Array
    untasked: list[int]
    row_groups: int


def read_index(segment: Path, events: int) -> SegmentIndex | None:
    """The index of ``segment`` (committed with ``events`` events), whole; None if it has
    no index that matches the segment file as it is now (as ``matching_row_groups``)."""
    if sys.byteorder != "little":
        return None
    try:
        segment_bytes = segment.stat().st_size
        body = segment.with_name(index_name(segment.name)).read_bytes()
        header = _valid_header(body, len(body), segment, events, segment_bytes)
        if header is None:
            return None
        groups, untasked, count, keys_at = header
        found = list(struct.unpack_from(f"<{untasked}I", body, _HEADER.size))
    except (OSError, ValueError, struct.error):
        return None
    keys = pa.Array.from_buffers(pa.uint64(), count, [None, pa.py_buffer(body[keys_at:])])
    return SegmentIndex(keys, found, groups)


def merged_index(parts: Sequence[SegmentIndex]) -> tuple[pa.Array, list[int]]:
    """The keys and untasked row groups of a segment whose row groups are those of the
    segments indexed by ``parts``, in order: each part's row groups shifted past those
    before it. Pure: no I/O, and no task id or URL hashed again (a merge's own index
    cost about as much CPU as writing the merged segment)."""
    shifted, untasked, offset = [], [], 0
    for part in parts:
        keys = part.keys
        if offset:
            high = pc.bit_wise_and(keys, pa.scalar(_KEY_MASK, pa.uint64()))
            groups = pc.bit_wise_and(keys, pa.scalar(_ROW_GROUP_MASK, pa.uint64()))
            keys = pc.bit_wise_or(high, pc.add(groups, pa.scalar(offset, pa.uint64())))
        shifted.append(keys)
        untasked += [group + offset for group in part.untasked]
        offset += part.row_groups
    keys = pa.concat_arrays(shifted) if shifted else pa.array([], pa.uint64())
    return pc.take(keys, pc.sort_indices(keys)), untasked


def _padded(count: int) -> int:
    """Row group numbers (4 bytes each) padded so the keys start 8-byte aligned."""
    return count + count % 2


def row_group_rows(segment: Path) -> list[int]:
    """The rows of each row group of the Parquet file ``segment``."""
    metadata = pq.read_metadata(segment)
    return [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]


def indexed_history(
    segment: Path, events: int, task_ids: Collection[str], page_url: str | None
) -> list[tuple[str, bytes]] | None:
    """(stream ID, payload) of the rows of ``segment`` (committed with ``events`` events)
    that are events of ``task_ids``, fetches of ``page_url`` or events of no task, read
    through its index; None if it has no index that matches it (scan it whole then).

    The index is checked against the segment file opened here, and the rows read from
    that same file: a segment rewritten meanwhile (``index_archive``) cannot pair one
    file's row groups with another's index."""
    try:
        source = pa.OSFile(str(segment))
    except (OSError, pa.ArrowException) as exc:
        raise CrawlogError(f"archive segment {segment} cannot be read ({exc})") from None
    with source:
        groups = matching_row_groups(segment, events, task_ids, page_url, source.size())
        if groups is None:
            return None
        return indexed_rows(source, groups, task_ids, page_url, name=segment)


def matching_row_groups(
    segment: Path,
    events: int,
    task_ids: Collection[str],
    page_url: str | None,
    segment_bytes: int | None = None,
) -> list[int] | None:
    """The row groups of ``segment`` (committed with ``events`` events, ``segment_bytes``
    long: its size now if not given) that may hold an event of ``task_ids``, a fetch of
    ``page_url``, or an event of no task; None if the segment has no index that matches
    it (read the whole segment then)."""
    if sys.byteorder != "little":  # the keys are read as native integers
        return None
    try:
        if segment_bytes is None:
            segment_bytes = segment.stat().st_size
        with open(segment.with_name(index_name(segment.name)), "rb") as source:
            size = os.fstat(source.fileno()).st_size
            if size < _HEADER.size:
                return None
            with mmap.mmap(source.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
                return _lookup(mapped, size, segment, events, segment_bytes, task_ids, page_url)
    except (OSError, ValueError, struct.error):
        return None


def _lookup(
    mapped: mmap.mmap,
    size: int,
    segment: Path,
    events: int,
    segment_bytes: int,
    task_ids: Collection[str],
    page_url: str | None,
) -> list[int] | None:
    header = _valid_header(mapped, size, segment, events, segment_bytes)
    if header is None:
        return None
    groups, untasked, count, keys_at = header
    found = set(struct.unpack_from(f"<{untasked}I", mapped, _HEADER.size))
    wanted = [task_key(t) for t in task_ids]
    if page_url is not None:
        wanted.append(url_key(page_url))
    view = memoryview(mapped)
    try:
        keys = view[keys_at:].cast("Q")
        try:
            for key in wanted:
                at = bisect_left(keys, key << 32)
                while at < count and keys[at] >> 32 == key:
                    found.add(keys[at] & _ROW_GROUP_MASK)
                    at += 1
        finally:
            keys.release()
    finally:
        view.release()
    if any(g >= groups for g in found):
        return None
    return sorted(found)


def _valid_header(
    index: mmap.mmap | bytes, size: int, segment: Path, events: int, segment_bytes: int
) -> tuple[int, int, int, int] | None:
    """(row groups, untasked row groups, keys, where the keys start) of an index ``size``
    bytes long, if its header matches ``segment`` (committed with ``events`` events, now
    ``segment_bytes`` long); None otherwise."""
    magic, version, indexed, indexed_bytes, groups, untasked, count, name, _ = _HEADER.unpack_from(
        index
    )
    keys_at = _HEADER.size + 4 * _padded(untasked)
    if (
        magic != _MAGIC
        or version != INDEX_VERSION
        or indexed != events
        or name != zlib.crc32(segment.name.encode())
        or size != keys_at + 8 * count
        or indexed_bytes != segment_bytes
    ):
        return None
    return groups, untasked, count, keys_at


def indexed_rows(
    segment: Path | pa.NativeFile,
    row_groups: Sequence[int],
    task_ids: Collection[str],
    page_url: str | None,
    *,
    name: Path | None = None,
) -> list[tuple[str, bytes]]:
    """(stream ID, payload) of the rows of ``row_groups`` that are events of ``task_ids``,
    fetches of ``page_url`` or events of no task: the filter ``crawlog history`` puts on
    the whole archive otherwise, here exact whatever keys collided."""
    if not row_groups:
        return []
    columns = ["stream_id", "task_id", "type", "url", "payload"]
    try:
        table = pq.ParquetFile(segment, page_checksum_verification=True).read_row_groups(
            list(row_groups), columns=columns
        )
    except (OSError, pa.ArrowException) as exc:
        raise CrawlogError(f"archive segment {name or segment} cannot be read ({exc})") from None
    task = table.column("task_id")
    about = pc.or_(
        pc.is_in(task, pa.array(list(task_ids), pa.string())).fill_null(False),
        pc.is_null(task),
    )
    if page_url is not None:
        fetch = pc.and_(
            pc.equal(table.column("type"), PAGE_TYPE), pc.equal(table.column("url"), page_url)
        )
        about = pc.or_(about, fetch.fill_null(False))
    rows = table.filter(about)
    return list(
        zip(rows.column("stream_id").to_pylist(), rows.column("payload").to_pylist(), strict=True)
    )
