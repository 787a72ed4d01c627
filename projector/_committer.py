"""The committer: writes a commit's files, then the manifest that makes it count.

Runs in a worker thread beside the projector's read-and-fold loop (Arrow and Parquet do
most of their work without the GIL). A child process was tried as well: it measured no
faster on two cores, where the reader, the committer and Redis already share the CPU, and
it needed the lock handed down to it so that a killed projector's committer could not
commit after a new projector started.
"""

from __future__ import annotations

import msgspec

from eventlog import LogEntry
from projector._archive import merge_segments, write_segment
from projector._compaction import plan as plan_compaction
from projector._store import Manifest, Store
from projector._summary import Summary


class CommitRequest(msgspec.Struct, frozen=True, kw_only=True):
    """One commit: what to archive and snapshot, and the position it commits."""

    position: str
    entries: list[LogEntry]
    snapshot: bytes | None = None
    snapshot_position: str = ""
    summary: Summary | None = None
    behind: bool = False
    """The projector had more to read: compaction may wait (``_compaction.plan``)."""


class Committer:
    """Writes commits into a job's store, in order (runs in the writer process)."""

    def __init__(self, store: Store, manifest: Manifest) -> None:
        self.store = store
        self.manifest = manifest

    def commit(self, request: CommitRequest) -> Manifest:
        """Write the segment and snapshot, then the manifest (the commit), then compact."""
        old = self.manifest
        segments = old.segments
        if request.entries:
            segments = (*segments, write_segment(self.store.archive, request.entries))
        name, snapshot_position = old.snapshot, old.snapshot_position
        if request.snapshot is not None:
            name = self.store.write_snapshot(request.snapshot, request.snapshot_position)
            snapshot_position = request.snapshot_position
        manifest = Manifest(
            job=old.job,
            position=request.position,
            segments=segments,
            snapshot=name,
            snapshot_position=snapshot_position,
            events=old.events + len(request.entries),
            summary=request.summary,
        )
        self.store.commit(manifest)
        if name != old.snapshot:
            self.store.remove_unreferenced(manifest)
        self.manifest = self._compact(manifest, behind=request.behind)
        return self.manifest

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
