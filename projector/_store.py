"""The projector's files for one job, and the one atomic step that commits them.

Layout, under ``<data dir>/jobs/<job>/``::

    manifest.json           what is committed: position, segments, latest snapshot
    archive/*.parquet       immutable segments of the log (``_archive``)
    archive/*.parquet.idx   each segment's index: its row groups by task (``_segment_index``)
    snapshots/state-*       the folded state's live part at some position
    snapshots/fetches-*     the fetch figures' tracker at the same position (``_fetches``)
    tasks/*.parquet         terminal tasks that left the in-memory state (``_taskstore``)
    keys/*.parquet          item keys scraped before the snapshot (``_keystore``)
    projector.lock          held by the one projector of the job

Commit order is what makes the projector exactly-once: the new segment and snapshot files
are written (temp, fsync, rename) first, and only then the manifest that names them is
replaced. A crash before the manifest's rename leaves files no manifest names; ``open``
deletes them, and the events they held are read again from Redis after the committed
position. A crash after it loses nothing.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Literal

import msgspec

from eventlog import (
    START,
    ConfigError,
    CrawlogError,
    check_job_name,
    flock_within,
    fsync_dir,
    stream_id_key,
    write_atomic,
)
from projector._archive import SEGMENT_SUFFIX, SegmentInfo
from projector._identity import MANIFEST as MANIFEST  # defined there, light; named here too
from projector._keystore import KEYS_DIR, KeySegmentInfo, read_keys
from projector._segment_index import INDEX_SUFFIX, index_name
from projector._state import State, state_from_bytes
from projector._summary import Summary
from projector._taskstore import TASKS_DIR, TaskSegmentInfo, read_tasks

ARCHIVE_DIR = "archive"
SNAPSHOT_DIR = "snapshots"
LOCK_FILE = "projector.lock"
MANIFEST_VERSION = 1
LOCK_WAIT_S = 5.0


class ProjectorBusy(CrawlogError):
    """Another projector process holds this job."""


class Manifest(msgspec.Struct, frozen=True, kw_only=True):
    """What is committed: everything up to ``position`` is archived, nothing after."""

    version: int = MANIFEST_VERSION
    job: str
    position: str = START
    """Stream ID up to which the log has been read and committed."""
    segments: tuple[SegmentInfo, ...] = ()
    snapshot: str | None = None
    snapshot_position: str = START
    """Stream ID of the last event folded into the snapshot."""
    snapshot_fetches: str | None = None
    """The fetch figures' tracker at ``snapshot_position`` (``FetchTracker.dump``); None with
    no snapshot, or one written before these files."""
    events: int = 0
    """Events archived in all segments."""
    summary: Summary | None = None
    """The state's figures at ``position``, for reports (None: written before summaries)."""
    task_segments: tuple[TaskSegmentInfo, ...] = ()
    """Task segments in commit order: with the snapshot, the state at ``snapshot_position``
    (a task the snapshot holds is newer than any row; among rows, the latest wins)."""
    key_segments: tuple[KeySegmentInfo, ...] = ()
    """Key segments in commit order: with the snapshot's, the item keys at
    ``snapshot_position`` (no key is in two)."""
    identity: str | None = None
    """The job's identity, as the store records it too (``eventlog.JobIdentity``): a store
    with another, or none while this archive holds events, lost the job (None: committed
    before identities)."""
    epoch: int = 0
    """The store's fencing epoch when this was committed (raised by ``crawlog restore``)."""


def job_dir(data_dir: Path, job: str) -> Path:
    """Where the projector of ``job`` keeps its files."""
    return data_dir / "jobs" / check_job_name(job)


def projected_jobs(data_dir: Path) -> list[str]:
    """The jobs with a directory of projected data under ``data_dir``, sorted."""
    try:
        entries = list((data_dir / "jobs").iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(entry.name for entry in entries if entry.is_dir() and _is_job_name(entry.name))


def _is_job_name(name: str) -> bool:
    try:
        check_job_name(name)
    except ConfigError:
        return False  # not a job's directory
    return True


class Store:
    """The committed files of one job's projector."""

    def __init__(self, data_dir: Path, job: str) -> None:
        self.job = job
        self.root = job_dir(data_dir, job)
        self.archive = self.root / ARCHIVE_DIR
        self.snapshots = self.root / SNAPSHOT_DIR
        self.tasks = self.root / TASKS_DIR
        self.keys = self.root / KEYS_DIR

    def read_manifest(self) -> Manifest:
        """The committed manifest (an empty one if nothing was committed yet); read-only."""
        try:
            data = (self.root / MANIFEST).read_bytes()
        except FileNotFoundError:
            return Manifest(job=self.job)
        try:
            return msgspec.json.decode(data, type=Manifest)
        except msgspec.MsgspecError as exc:
            # The segment files say what was archived: the manifest is rebuilt from them
            # (``_repair``), never replaced by an empty one.
            raise CrawlogError(
                f"{self.root / MANIFEST} is damaged ({exc}): `crawlog repair --job {self.job}` "
                "rebuilds it from the archive's segment files (a projector starting does too)"
            ) from None

    @contextlib.contextmanager
    def lock(self) -> Iterator[int]:
        """Hold the job's projector lock; ``ProjectorBusy`` if another projector holds it.

        A projector just killed may take a moment to be reaped (and its lock released), so
        a new one waits a little before it gives up. Yields the lock's file descriptor.
        """
        self.prepare()
        fd = os.open(self.root / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            if not flock_within(fd, LOCK_WAIT_S):
                raise ProjectorBusy(
                    f"another projector is running for job {self.job!r} "
                    f"(it holds {self.root / LOCK_FILE}); one per job is enough"
                )
            yield fd
        finally:
            os.close(fd)

    def prepare(self) -> None:
        """Create the job's directories."""
        try:
            for directory in (self.root, self.archive, self.snapshots, self.tasks, self.keys):
                directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"cannot create {self.root} ({exc.strerror or exc})") from None

    def manifest_problem(self) -> Literal["missing", "damaged"] | None:
        """Whether the manifest is missing while segment files are on disk (a projector
        would otherwise start an empty job over them), or cannot be decoded; None if
        neither."""
        try:
            self.read_manifest()
        except CrawlogError:
            return "damaged"
        if (self.root / MANIFEST).exists():
            return None
        try:
            on_disk = any(self.archive.glob(f"*{SEGMENT_SUFFIX}"))
        except OSError:
            on_disk = False
        return "missing" if on_disk else None

    def snapshot_readable(self, manifest: Manifest) -> bool:
        """Whether the manifest's snapshot (if it names one) can be read."""
        if manifest.snapshot is None:
            return True
        try:
            state_from_bytes((self.snapshots / manifest.snapshot).read_bytes())
        except (OSError, msgspec.MsgspecError):
            return False
        return True

    def recover(self) -> Manifest:
        """The committed manifest, after deleting files of commits that never completed.

        Only for the lock holder: a reader must never delete what a commit in flight wrote.
        """
        manifest = self.read_manifest()
        keep = {s.name for s in manifest.segments}
        keep |= {index_name(name) for name in keep}  # an index goes with its segment
        for path in self.archive.iterdir():
            if path.name not in keep:
                path.unlink()
        snapshots = _snapshot_files(manifest)
        for path in self.snapshots.iterdir():
            if path.name not in snapshots:
                path.unlink()
        tasks = {s.name for s in manifest.task_segments}
        for path in self.tasks.iterdir():
            if path.name not in tasks:
                path.unlink()
        keys = {s.name for s in manifest.key_segments}
        for path in self.keys.iterdir():
            if path.name not in keys:
                path.unlink()
        return manifest

    def commit(self, manifest: Manifest) -> None:
        """Make ``manifest`` the committed one: the single atomic step of a commit."""
        fsync_dir(self.archive)
        fsync_dir(self.snapshots)
        for directory in (self.tasks, self.keys):
            if directory.is_dir():
                fsync_dir(directory)
        write_atomic(self.root / MANIFEST, msgspec.json.format(msgspec.json.encode(manifest)))

    def replace_segments(self, rewritten: Sequence[SegmentInfo]) -> Manifest:
        """Commit the manifest again with ``rewritten`` segments (written anew under the
        same names, so perhaps with other sizes) in place of the ones it names. Only for
        the lock holder."""
        by_name = {s.name: s for s in rewritten}
        manifest = self.read_manifest()
        segments = tuple(by_name.get(s.name, s) for s in manifest.segments)
        manifest = msgspec.structs.replace(manifest, segments=segments)
        self.commit(manifest)
        return manifest

    def write_snapshot(self, data: bytes, position: str) -> str:
        """Write a state's ``canonical`` bytes as a new snapshot file (not yet committed)."""
        name = _snapshot_name("state", position)
        write_atomic(self.snapshots / name, data)
        return name

    def write_snapshot_fetches(self, data: bytes, position: str) -> str:
        """Write a fetch tracker's ``dump`` beside the snapshot at ``position`` (not yet
        committed)."""
        name = _snapshot_name("fetches", position)
        write_atomic(self.snapshots / name, data)
        return name

    def read_snapshot_fetches(self, manifest: Manifest) -> bytes | None:
        """The fetch tracker committed beside the manifest's snapshot; None if there is
        none or it cannot be read (the archive gives it back, at the cost of reading it)."""
        if manifest.snapshot_fetches is None:
            return None
        try:
            return (self.snapshots / manifest.snapshot_fetches).read_bytes()
        except OSError:
            return None

    def read_snapshot(
        self, manifest: Manifest, *, stored: bool = True, item_keys: bool = True
    ) -> State:
        """The state at the manifest's snapshot (an empty state if it has none): the
        snapshot's live part and, unless not ``stored``, every task of the task segments
        and (unless not ``item_keys`` either) every item key of the key segments."""
        if manifest.snapshot is None:
            state = State()
        else:
            path = self.snapshots / manifest.snapshot
            try:
                state = state_from_bytes(path.read_bytes())
            except (OSError, msgspec.MsgspecError) as exc:
                raise CrawlogError(
                    f"snapshot {path} cannot be read ({exc}): `crawlog repair --job {self.job}` "
                    "(or `crawlog replay`) writes it again from the archive"
                ) from None
        if stored and manifest.task_segments:
            tasks = state.tasks
            for task_id, task in read_tasks(self.task_segment_paths(manifest)).items():
                if task_id not in tasks:  # the snapshot's task is newer than any row
                    tasks[task_id] = task
        if stored and item_keys and manifest.key_segments:
            state.item_keys |= read_keys(self.key_segment_paths(manifest))
        return state

    def segment_paths(self, manifest: Manifest) -> list[Path]:
        """The committed segment files, in log order."""
        return [self.archive / s.name for s in manifest.segments]

    def task_segment_paths(self, manifest: Manifest) -> list[Path]:
        """The committed task segment files, in commit order."""
        return [self.tasks / s.name for s in manifest.task_segments]

    def key_segment_paths(self, manifest: Manifest) -> list[Path]:
        """The committed key segment files, in commit order."""
        return [self.keys / s.name for s in manifest.key_segments]

    def remove_unreferenced(self, manifest: Manifest) -> None:
        """Delete segments and snapshots a newly committed manifest no longer names."""
        keep = {s.name for s in manifest.segments}
        for path in self.archive.glob(f"*{SEGMENT_SUFFIX}"):
            if path.name not in keep:
                path.unlink(missing_ok=True)
        for path in self.archive.glob(f"*{INDEX_SUFFIX}"):
            if path.name.removesuffix(INDEX_SUFFIX) not in keep:
                path.unlink(missing_ok=True)
        snapshots = _snapshot_files(manifest)
        for path in self.snapshots.glob("*.msgpack"):
            if path.name not in snapshots:
                path.unlink(missing_ok=True)
        tasks = {s.name for s in manifest.task_segments}
        for path in self.tasks.glob("*.parquet"):
            if path.name not in tasks:
                path.unlink(missing_ok=True)
        keys = {s.name for s in manifest.key_segments}
        for path in self.keys.glob("*.parquet"):
            if path.name not in keys:
                path.unlink(missing_ok=True)


def _snapshot_files(manifest: Manifest) -> set[str | None]:
    """The files of the snapshot directory that ``manifest`` names."""
    return {manifest.snapshot, manifest.snapshot_fetches}


def _snapshot_name(kind: str, position: str) -> str:
    """A snapshot directory file's name: what it holds and the position it holds it at."""
    ms, seq = stream_id_key(position)
    return f"{kind}-{ms:015d}-{seq:08d}.msgpack"
