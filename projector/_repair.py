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

The other files are rebuilt from the segments on disk, which need no Redis at all:

- **A missing or damaged manifest** (``rebuild_manifest``): the segment files are named by
  the stream IDs they span, and their Parquet footers say how many events each holds, so
  the chain of segments is the archive as it was committed, plus perhaps the segment of a
  commit that never completed (a contiguous run of the stream after the others, which the
  projector would read again anyway). Segments a merge replaced (left behind by a crash
  between the merged manifest and their deletion) lie inside the merged one and are left
  out. The rebuilt manifest names no snapshot and no task or key segments: the state is
  then the fold of the whole archive (invariant 2), and ``rewrite_snapshot`` writes it.
  A projector starting over a missing manifest with segments on disk, or a damaged one,
  rebuilds it instead of starting an empty job; ``crawlog repair --job J`` does it by hand.
- **A damaged snapshot** (``rewrite_snapshot``): the archive up to the committed position,
  folded from scratch in memory, becomes the snapshot, holding every task and item key
  (the task and key segments it replaces are deleted: the snapshot's tasks are newer).
  ``crawlog repair``, ``crawlog replay`` and a starting projector do it.
"""

from __future__ import annotations

import logging
import time

import redis.asyncio as aioredis

from eventlog import START, EventLog, LogEntry, PoisonEntry, fsync_dir, stream_id_key
from projector._archive import (
    SEGMENT_SUFFIX,
    ArchiveCorrupt,
    SegmentInfo,
    read_entries,
    segment_on_disk,
    write_segment,
)
from projector._integrity import unnamed_segments
from projector._replay import replay_archive
from projector._state import canonical
from projector._store import MANIFEST, Manifest, Store

log = logging.getLogger(__name__)

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
    events = EventLog(redis, store.job)
    rebuilt: list[SegmentInfo] = []
    with store.lock():
        for segment in damaged_segments(store):
            entries = await _stream_run(events, segment)
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
            rebuilt.append(written)
        if rebuilt:
            fsync_dir(store.archive)
            store.replace_segments(rebuilt)  # their sizes, as written again
    return [segment.name for segment in rebuilt]


def chain(segments: list[SegmentInfo]) -> list[SegmentInfo]:
    """The segments that make up the archive, in log order: each later one starts after the
    one before ends; one that lies inside another (a merge's part) is left out. Two that
    overlap otherwise were never one archive: ``ArchiveCorrupt``."""
    ordered = sorted(
        segments, key=lambda s: (stream_id_key(s.first_id), [-n for n in stream_id_key(s.last_id)])
    )
    kept: list[SegmentInfo] = []
    for segment in ordered:
        if kept and stream_id_key(segment.first_id) <= stream_id_key(kept[-1].last_id):
            if stream_id_key(segment.last_id) <= stream_id_key(kept[-1].last_id):
                continue  # inside the one kept: a part a merge replaced
            raise ArchiveCorrupt(
                f"archive segments {kept[-1].name} and {segment.name} overlap: move the one "
                "that does not belong to this job out of the archive directory"
            )
        kept.append(segment)
    return kept


def rebuild_manifest(store: Store) -> Manifest:
    """A manifest rebuilt from the segment files on disk, committed (the damaged one, if
    any, kept beside it as ``manifest.json.damaged-<time>``). The caller holds the lock."""
    paths = sorted(
        p for p in store.archive.glob(f"*{SEGMENT_SUFFIX}") if not p.name.startswith(".")
    )
    segments = chain([segment_on_disk(path) for path in paths])
    manifest = Manifest(
        job=store.job,
        position=segments[-1].last_id if segments else START,
        segments=tuple(segments),
        events=sum(s.events for s in segments),
    )
    old = store.root / MANIFEST
    if old.exists():
        old.rename(store.root / f"{MANIFEST}.damaged-{int(time.time())}")
    store.commit(manifest)
    log.warning(
        "rebuilt %s from %d archive segment(s) on disk: %d events up to %s",
        old, len(segments), manifest.events, manifest.position,
    )  # fmt: skip
    return manifest


def rewrite_snapshot(store: Store) -> Manifest:
    """The manifest committed again with a new snapshot: the archive up to its position
    folded from scratch (every task and item key in it). The caller holds the lock."""
    manifest = store.read_manifest()
    state = replay_archive(store, manifest, manifest.position)
    name = store.write_snapshot(canonical(state), state.position)
    rewritten = Manifest(
        job=manifest.job,
        position=manifest.position,
        segments=manifest.segments,
        snapshot=name,
        snapshot_position=state.position,
        events=manifest.events,
        summary=manifest.summary,
    )
    store.commit(rewritten)
    store.remove_unreferenced(rewritten)
    return rewritten


def repair(store: Store) -> list[str]:
    """Rebuild what of the job's files can be rebuilt without Redis: a missing (with
    segments on disk), damaged or incomplete manifest, then an unreadable snapshot or lost
    task and key segments. Holds the lock (``ProjectorBusy`` if a projector runs). Returns
    what was done, one line each."""
    done: list[str] = []
    with store.lock():
        problem = _manifest_problem(store)
        if problem is not None:
            manifest = rebuild_manifest(store)
            done.append(
                f"{problem} manifest rebuilt from {len(manifest.segments)} archive segment(s): "
                f"{manifest.events} events up to {manifest.position}"
            )
        if problem is not None or _snapshot_lost(store, store.read_manifest()):
            manifest = rewrite_snapshot(store)
            done.append(f"snapshot written again from the archive at {manifest.snapshot_position}")
    return done


def recover(store: Store) -> Manifest:
    """What a starting projector commits from: ``Store.recover``, after rebuilding a
    missing (with segments on disk), damaged or incomplete manifest from the segments, so
    that committed segments are never deleted as files no manifest names, or else a lost
    snapshot from the archive. The caller holds the lock."""
    if _manifest_problem(store) is not None:
        rebuild_manifest(store)  # names no snapshot: the projector folds the archive
    elif _snapshot_lost(store, store.read_manifest()):
        log.warning("the snapshot of %s cannot be read: writing it again", store.root)
        rewrite_snapshot(store)
    return store.recover()


def _manifest_problem(store: Store) -> str | None:
    """Why the manifest must be rebuilt from the segments: missing (with segments on disk),
    damaged, or incomplete (segment files inside its committed range it does not name)."""
    problem = store.manifest_problem()
    if problem is None and unnamed_segments(store, store.read_manifest()):
        return "incomplete"
    return problem


def _snapshot_lost(store: Store, manifest: Manifest) -> bool:
    """Whether the snapshot cannot be read, or a task or key segment it goes with is gone."""
    paths = store.task_segment_paths(manifest) + store.key_segment_paths(manifest)
    return any(not path.exists() for path in paths) or not store.snapshot_readable(manifest)
