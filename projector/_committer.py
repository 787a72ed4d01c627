"""The committer: writes a commit's files, then the manifest that makes it count.

Runs in a worker thread beside the projector's read-and-fold loop. A big commit's segment
is built and written by the writer process (``_writer``), a small one's here; either way
the manifest, the commit point, is written here, in the projector's process.
"""

from __future__ import annotations

import msgspec

from eventlog import LogEntry
from projector._archive import SegmentInfo, merge_segments, write_segment
from projector._compaction import plan as plan_compaction
from projector._keystore import merge_key_segments, write_key_segment
from projector._store import Manifest, Store
from projector._summary import Summary
from projector._taskstore import (
    TaskRow,
    merge_task_segments,
    plan_merge,
    plan_merge_sizes,
    write_task_segment,
)


class CommitRequest(msgspec.Struct, frozen=True, kw_only=True):
    """One commit: what to archive and snapshot, and the position it commits."""

    position: str
    entries: list[LogEntry]
    segment: SegmentInfo | None = None
    """The segment of the entries, if the writer process wrote it (``entries`` is then
    empty)."""
    snapshot: bytes | None = None
    snapshot_position: str = ""
    snapshot_fetches: bytes | None = None
    """The fetch tracker at ``snapshot_position`` (``FetchTracker.dump``), written beside
    the snapshot."""
    task_rows: list[TaskRow] = msgspec.field(default_factory=list)
    """Terminal tasks that left the in-memory state with this commit's snapshot: written as
    a task segment before the manifest that names it with the snapshot."""
    task_rows_replacing: int | None = None
    """How many of ``task_rows`` may replace a stored row, if known
    (``TaskSegmentInfo.replacing``)."""
    item_keys: list[str] = msgspec.field(default_factory=list)
    """Item keys scraped since the last snapshot, which left memory with this one: written
    as a key segment before the manifest, as the task rows are."""
    summary: Summary | None = None
    behind: bool = False
    """The projector had more to read: compaction may wait (``_compaction.plan``)."""
    identity: str | None = None
    """The job's identity in the store, recorded in the manifest (None: keep the old one)."""
    epoch: int = 0


class Committer:
    """Writes commits into a job's store, in order."""

    def __init__(self, store: Store, manifest: Manifest) -> None:
        self.store = store
        self.manifest = manifest

    def commit(self, request: CommitRequest) -> Manifest:
        """Write the segment and snapshot, then the manifest (the commit), then compact."""
        old = self.manifest
        segments, segment = old.segments, request.segment
        if request.entries:
            segment = write_segment(self.store.archive, request.entries)
        if segment is not None:
            segments = (*segments, segment)
        name, snapshot_position = old.snapshot, old.snapshot_position
        fetches_name = old.snapshot_fetches
        task_segments = old.task_segments
        if request.task_rows:
            assert request.snapshot is not None, "tasks leave memory only with a snapshot"
            written = write_task_segment(
                self.store.tasks,
                request.task_rows,
                request.snapshot_position,
                replacing=request.task_rows_replacing,
            )
            task_segments = (*task_segments, written)
        key_segments = old.key_segments
        if request.item_keys:
            assert request.snapshot is not None, "keys leave memory only with a snapshot"
            keys = write_key_segment(self.store.keys, request.item_keys, request.snapshot_position)
            key_segments = (*key_segments, keys)
        if request.snapshot is not None:
            name = self.store.write_snapshot(request.snapshot, request.snapshot_position)
            snapshot_position = request.snapshot_position
            fetches_name = None
            if request.snapshot_fetches is not None:
                fetches_name = self.store.write_snapshot_fetches(
                    request.snapshot_fetches, request.snapshot_position
                )
        manifest = Manifest(
            job=old.job,
            position=request.position,
            segments=segments,
            snapshot=name,
            snapshot_position=snapshot_position,
            snapshot_fetches=fetches_name,
            events=old.events + (segment.events if segment is not None else 0),
            summary=request.summary,
            task_segments=task_segments,
            key_segments=key_segments,
            identity=request.identity or old.identity,
            epoch=max(request.epoch, old.epoch),
        )
        self.store.commit(manifest)
        if name != old.snapshot:
            self.store.remove_unreferenced(manifest)
        manifest = self._compact(manifest, behind=request.behind)
        manifest = self._compact_tasks(manifest)
        self.manifest = self._compact_keys(manifest)
        return self.manifest

    def _compact_keys(self, manifest: Manifest) -> Manifest:
        """Merge the newest key segments, if due (as task segments); a commit of its own."""
        run = plan_merge_sizes([s.keys for s in manifest.key_segments])
        if run is None:
            return manifest
        start, end = run
        merged = merge_key_segments(self.store.keys, manifest.key_segments[start:end])
        segments = (*manifest.key_segments[:start], merged, *manifest.key_segments[end:])
        compacted = msgspec.structs.replace(manifest, key_segments=segments)
        self.store.commit(compacted)
        self.store.remove_unreferenced(compacted)
        return compacted

    def _compact_tasks(self, manifest: Manifest) -> Manifest:
        """Merge the newest task segments (latest row per task), if due; a commit of its own."""
        run = plan_merge(manifest.task_segments)
        if run is None:
            return manifest
        start, end = run
        merged = merge_task_segments(self.store.tasks, manifest.task_segments[start:end])
        segments = (*manifest.task_segments[:start], merged, *manifest.task_segments[end:])
        compacted = msgspec.structs.replace(manifest, task_segments=segments)
        self.store.commit(compacted)
        self.store.remove_unreferenced(compacted)
        return compacted

    def _compact(self, manifest: Manifest, *, behind: bool) -> Manifest:
        """Merge a run of small segments, if there is one; a commit of its own."""
        run = plan_compaction(manifest.segments, behind=behind)
        if run is None:
            return manifest
        start, end = run
        merged = merge_segments(self.store.archive, manifest.segments[start:end])
        segments = (*manifest.segments[:start], merged, *manifest.segments[end:])
        compacted = msgspec.structs.replace(manifest, segments=segments)
        self.store.commit(compacted)
        self.store.remove_unreferenced(compacted)
        return compacted
