"""Whether a job's files are what its manifest says: each file it names on disk, with the
size it was written with; the segments one unbroken chain holding the events it counts;
and, where the stream can tell, every event trimmed from the stream in the archive.

``crawlog report``, ``status`` and ``jobs`` say in one line when a file is missing
(``files_warning``); ``crawlog replay --verify`` checks all of it (``archive_problems``,
``stream_gap``), so that an archive with a hole, or an empty one rebuilt after the stream
was trimmed, is never called identical to a live state folded from the same hole.
"""

from __future__ import annotations

from pathlib import Path

import redis.asyncio as aioredis

from eventlog import CrawlogError, EventLog, stream_id_key
from projector._archive import SEGMENT_SUFFIX, read_table, span_of
from projector._store import Manifest, Store

SHOWN = 3
"""Problems named in one line; the rest are counted."""


def missing_files(store: Store, manifest: Manifest) -> list[str]:
    """The files ``manifest`` names that are not on disk, or not of the size recorded."""
    problems: list[str] = []
    for segment in manifest.segments:
        path = store.archive / segment.name
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            problems.append(f"{path} is missing")
            continue
        if segment.size is not None and size != segment.size:
            problems.append(f"{path} has {size} bytes, {segment.size} were written")
    named = [store.snapshots / manifest.snapshot] if manifest.snapshot else []
    named += store.task_segment_paths(manifest) + store.key_segment_paths(manifest)
    problems += [f"{path} is missing" for path in named if not path.exists()]
    return problems


def files_warning(store: Store) -> str | None:
    """One line saying what of the job's committed files is missing or damaged, and what to
    run; None if nothing is."""
    job = store.job
    problem = store.manifest_problem()
    if problem is not None:
        return (
            f"job {job}: its manifest is {problem} though the archive holds segments: "
            f"`crawlog repair --job {job}` rebuilds it from them"
        )
    problems = missing_files(store, store.read_manifest())
    if not problems:
        return None
    more = f" and {len(problems) - SHOWN} more" if len(problems) > SHOWN else ""
    return (
        f"job {job}: {len(problems)} committed file(s) missing or cut short "
        f"({'; '.join(problems[:SHOWN])}{more}): `crawlog replay --job {job} --from-redis` "
        f"rewrites archive segments while the stream holds their events; `crawlog repair "
        f"--job {job}` rewrites the snapshot and the task and key files"
    )


def archive_problems(store: Store, manifest: Manifest) -> list[str]:
    """What makes the archive ``manifest`` commits other than one unbroken run of the log:
    files missing or cut short, segments out of order or overlapping, an event count that
    is not the segments' sum, segment files on disk inside the committed range that it
    does not name (a manifest that lost them)."""
    problems = missing_files(store, manifest)
    previous = None
    for segment in manifest.segments:
        if previous is not None and stream_id_key(segment.first_id) <= stream_id_key(
            previous.last_id
        ):
            problems.append(f"segments {previous.name} and {segment.name} overlap")
        previous = segment
    counted = sum(s.events for s in manifest.segments)
    if counted != manifest.events:
        problems.append(f"the manifest counts {manifest.events} events, its segments {counted}")
    problems += [
        f"{path} holds committed events the manifest does not name: "
        f"`crawlog repair --job {store.job}` rebuilds the manifest from the segment files"
        for path in unnamed_segments(store, manifest)
    ]
    return problems


def unnamed_segments(store: Store, manifest: Manifest) -> list[Path]:
    """Segment files on disk that ``manifest`` does not name though they start at or
    before its position: not a merge's replaced part (inside a named segment), not a
    merge whose manifest was never written (from a named segment's start to a named
    segment's end), not a commit in flight (after the position), so a manifest that
    lost them."""
    named = {s.name for s in manifest.segments}
    spans = [(stream_id_key(s.first_id), stream_id_key(s.last_id)) for s in manifest.segments]
    starts, ends = {a for a, _ in spans}, {b for _, b in spans}
    end = stream_id_key(manifest.position)
    unnamed = []
    for path in sorted(store.archive.glob(f"*{SEGMENT_SUFFIX}")):
        span = span_of(path.name)
        if span is None or path.name in named:
            continue
        first, last = stream_id_key(span[0]), stream_id_key(span[1])
        merge_in_flight = first in starts and last in ends
        inside = any(a <= first and last <= b for a, b in spans)
        if first <= end and not merge_in_flight and not inside:
            unnamed.append(path)
    return unnamed


async def stream_gap(redis: aioredis.Redis, store: Store) -> str | None:
    """Whether the archive lacks events that were trimmed from the stream, where the
    stream can tell: every entry ever added (``entries_added``) that it no longer holds was
    trimmed, and a trim only ever removes what the projector had archived (or
    dead-lettered as undecodable). None if none is lacking, or nothing was trimmed."""
    log = EventLog(redis, store.job)
    info = await log.stream_info()
    trimmed = 0 if info is None else info.entries_added - info.length
    if info is None or trimmed <= 0:
        return None
    manifest = store.read_manifest()  # after the stream info: it archived all trimmed then
    # Every trimmed entry is older than the oldest one the stream holds.
    below = _before(stream_id_key(info.first_id)) if info.first_id else None
    archived = _archived(store, manifest, below)
    dead = await log.dead_letter_count()
    if archived + dead >= trimmed:
        return None
    return (
        f"the archive lacks {trimmed - archived - dead} of the {trimmed} events trimmed from "
        f"the stream (older than {info.first_id or 'its end'}): they are nowhere else; "
        "restore this job's directory from a backup, or use the data directory where it "
        "was projected"
    )


def archived_up_to(store: Store, manifest: Manifest, last: str) -> int:
    """Events the archive holds with stream IDs up to ``last``."""
    return _archived(store, manifest, stream_id_key(last))


def _before(key: tuple[int, int]) -> tuple[int, int]:
    ms, seq = key
    return (ms, seq - 1) if seq else (ms - 1, 2**64 - 1)


def _archived(store: Store, manifest: Manifest, bound: tuple[int, int] | None) -> int:
    """Events the archive holds with stream IDs up to ``bound`` (None: all of them)."""
    count = 0
    for segment, path in zip(manifest.segments, store.segment_paths(manifest), strict=True):
        if bound is None or stream_id_key(segment.last_id) <= bound:
            count += segment.events
        elif stream_id_key(segment.first_id) <= bound:
            try:
                ids = read_table(path, ["stream_id"]).column("stream_id").to_pylist()
            except CrawlogError:
                continue  # said by archive_problems
            count += sum(1 for i in ids if stream_id_key(i) <= bound)
    return count
