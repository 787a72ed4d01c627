"""Rebuilding damaged archive segments from the events Redis still holds.

A segment is a copy of a contiguous run of the stream, named by its first and last stream
IDs, and the manifest records how many events it holds. When a segment cannot be read
(truncated, overwritten, a bad disk), and the stream has not been trimmed past it yet
(the projector keeps ``--keep-tail`` seconds, and never trims what it has not archived),
the same run read again from Redis *is* the segment: decoded entries in the same order,
poison entries skipped as the projector skipped them. It is written under the same name
(temp, fsync, rename), so the manifest and the snapshots stay valid as they are.

``crawlog replay --job J --from-redis`` runs this before replaying. A segment whose events
are gone from Redis too cannot be rebuilt from here: the error says which, and what is
missing.
"""

from __future__ import annotations

import redis.asyncio as aioredis

from eventlog import EventLog, LogEntry, PoisonEntry, fsync_dir
from projector._archive import ArchiveCorrupt, SegmentInfo, read_entries, write_segment
from projector._store import Store

READ_BATCH = 10_000


def damaged_segments(store: Store) -> list[SegmentInfo]:
    """The committed segments that cannot be read back whole (each one read in full)."""
    manifest = store.read_manifest()
    damaged = []
    for segment, path in zip(manifest.segments, store.segment_paths(manifest), strict=True):
        try:
            count = sum(1 for _ in read_entries(path))
        except ArchiveCorrupt:
            damaged.append(segment)
            continue
        if count != segment.events:
            damaged.append(segment)
    return damaged


async def _stream_run(log: EventLog, segment: SegmentInfo) -> list[LogEntry]:
    """The decodable entries of the stream from the segment's first to its last ID."""
    entries: list[LogEntry] = []
    start = segment.first_id
    while True:
        try:
            batch = await log.read_range(start, segment.last_id, READ_BATCH)
        except PoisonEntry as poison:
            start = f"({poison.entry_id}"  # the projector dead-lettered it: not archived
            continue
        if not batch:
            return entries
        entries += batch
        start = f"({batch[-1].stream_id}"


async def rebuild_from_redis(redis: aioredis.Redis, store: Store) -> list[str]:
    """Rewrite every damaged segment from the stream; returns the names rewritten.

    Holds the projector lock (no projector may commit meanwhile): `ProjectorBusy` if one
    runs. `ArchiveCorrupt` for a damaged segment whose events Redis no longer holds.
    """
    log = EventLog(redis, store.job)
    rebuilt: list[str] = []
    with store.lock():
        for segment in damaged_segments(store):
            entries = await _stream_run(log, segment)
            found = (
                len(entries),
                entries[0].stream_id if entries else None,
                entries[-1].stream_id if entries else None,
            )
            if found != (segment.events, segment.first_id, segment.last_id):
                raise ArchiveCorrupt(
                    f"archive segment {store.archive / segment.name} is damaged and Redis no "
                    f"longer holds its events ({found[0]} of {segment.events} found between "
                    f"{segment.first_id} and {segment.last_id}): restore the file from a backup"
                )
            written = write_segment(store.archive, entries)
            assert written.name == segment.name  # named by the same first and last IDs
            rebuilt.append(segment.name)
        if rebuilt:
            fsync_dir(store.archive)
    return rebuilt
