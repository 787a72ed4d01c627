"""The projector: reads the log in order, folds it, and commits archive + state + position.

One projector per job. It reads the events stream from its own committed position (a plain
ordered read, not a consumer group: the fold needs every event, in order, exactly once),
folds each batch into the in-memory state and buffers it, and commits when the buffer is
big enough or old enough: a new archive segment, sometimes a snapshot, then the manifest
(``_store``). Only after the commit does it publish its position and trim the stream below
it, so no event leaves Redis before it is archived.
"""

from __future__ import annotations

import gc
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path
from types import TracebackType
from typing import Self

import anyio
import anyio.lowlevel
import anyio.to_thread
import msgspec
import redis.asyncio as aioredis
from anyio.abc import TaskGroup

from eventlog import (
    DEFAULT_PROJECTOR_LEASE_MS,
    EventLog,
    InFlight,
    JobIdentity,
    LogEntry,
    PoisonEntry,
    ProjectorLease,
    StoreLost,
    check_identity,
    hold_projector_lease,
    last_committer,
    stream_id_key,
)
from projector._committed import bring_back, live_state, restored_fetches
from projector._committer import CommitRequest, Committer
from projector._continuity import archive_behind, behind_the_trim
from projector._defaults import (
    DEFAULT_COMMIT_INTERVAL_S,
    DEFAULT_KEEP_TAIL_S,
    DEFAULT_SNAPSHOT_INTERVAL_S,
)
from projector._fold import apply_all
from projector._identity import check_store
from projector._keystore import StoredKeys
from projector._repair import recover
from projector._state import TERMINAL, State, canonical
from projector._store import Manifest, Store
from projector._summary import SummaryTracker, touched_tasks
from projector._taskstore import (
    StoredTasks,
    TaskRow,
    summary_rows,
    task_row,
)
from projector._writer import WRITER_MIN_EVENTS, SegmentWriter

DEFAULT_COMMIT_EVENTS = 50_000
READ_BATCH = 5_000
TRICKLE_EVENTS = 500
TRICKLE_PAUSE_S = 0.1
"""A read of fewer than ``TRICKLE_EVENTS`` events is followed by a pause of this long (or
until the next commit is due, if sooner), so that reads take events by the hundred."""
SWITCH_INTERVAL_S = 0.0002
"""How long a thread waiting for the GIL waits before the holder must hand it over (5 ms by
default). The commit thread leaves the GIL for each Arrow and Parquet call and then waits to
get it back from the main thread, which folds in pure Python: with the default a commit
spent most of its time waiting for the GIL, not working (measured by
``tools/bench_projector.py``)."""
MAX_BUFFERED_COMMITS = 4
"""While a commit is in flight, events read go on into the buffer, up to this many
``commit_events``; only then does the projector wait for the commit."""
DEAD_LETTER_POLL_S = 1.0
"""How often the dead stream's length is read for the summary: workers dead-letter task
entries too, which the projector sees nowhere else."""
GC_GEN0_THRESHOLD = 100_000
"""Allocations between two young-generation collections in a projector process (700 by
default): reading and folding allocates millions of short-lived objects and makes almost
no cycles, and collecting every 700 of them cost a sixth of the projector's time."""


class Projector:
    """The projector of one job, as an async context manager.

    A commit runs in a worker thread (``_committer``) while the projector reads and folds
    the next batch. One commit is in flight at most, so commits land in order; what a
    commit writes (the buffered entries, the snapshot bytes) is taken from the projector
    when it starts.
    """

    def __init__(
        self,
        redis: aioredis.Redis,
        job: str,
        data_dir: Path,
        *,
        commit_events: int = DEFAULT_COMMIT_EVENTS,
        commit_interval_s: float = DEFAULT_COMMIT_INTERVAL_S,
        snapshot_interval_s: float = DEFAULT_SNAPSHOT_INTERVAL_S,
        keep_tail_s: float | None = DEFAULT_KEEP_TAIL_S,
        writer_min_events: int = WRITER_MIN_EVENTS,
        lease_ms: int = DEFAULT_PROJECTOR_LEASE_MS,
    ) -> None:
        self.log = EventLog(redis, job)
        self.store = Store(data_dir, job)
        self.data_dir = data_dir
        self.lease_ms = lease_ms
        self.lease: ProjectorLease | None = None
        """The job's projector lease (``eventlog._projector_lease``), held while entered:
        one projector per job wherever it runs, and what fences its publish and trim."""
        self._keeping = anyio.CancelScope()
        """Around the lease's renewals: cancelled on exit, after the last commit."""
        self.commit_events = commit_events
        self.commit_interval_s = commit_interval_s
        self.snapshot_interval_s = snapshot_interval_s
        self.keep_tail_s = keep_tail_s
        """None: never trim the stream."""
        self.writer_min_events = writer_min_events
        """A stream this long when the projector starts, or the first commit of this many
        events, starts the writer process (``_writer``)."""
        self.state = State()
        """The live part of the state: every task not in the task store (``_taskstore``),
        the sites, the job, the anomalies, the item keys scraped since the last snapshot
        (and those of the key store a batch scraped again) and the event-id windows."""
        self.stored = StoredTasks()
        """The tasks that left ``state`` for the task store."""
        self.stored_keys = StoredKeys()
        """The item keys that left ``state`` for the key store."""
        self.manifest = Manifest(job=job)
        """The last committed manifest."""
        self.identity: JobIdentity | None = None
        """The job's identity in the store, checked after each read and each commit
        (`StoreLost`)."""
        self._lost = False
        """The store lost the job: the last commit is of what was read before."""
        self.position = self.manifest.position
        """Stream ID up to which the log has been read (and folded)."""
        self._buffer: list[LogEntry] = []
        """Events read and not committed yet, while no writer process takes them."""
        self._pending = 0
        """Events read and not committed yet (in the buffer, or sent to the writer)."""
        self._buffer_since = 0.0
        self._snapshot_at = 0.0
        self._committing: anyio.Event | None = None
        self._commit_error: Exception | None = None
        """Why the last commit failed: raised to whoever waits for a commit next."""
        self._stack = AsyncExitStack()
        self._tasks: TaskGroup | None = None
        self._committer: Committer | None = None
        self._writer: SegmentWriter | None = None
        self._summary = SummaryTracker()
        self._touched: set[str] = set()
        """The tasks the buffered events may have changed the summary figures of."""
        self._behind = False
        """The last read was a full batch: the log has more (compaction can wait)."""
        self._ahead: tuple[str, InFlight[list[LogEntry]]] | None = None
        """The read of the batch after a stream ID, sent while the batch before it is folded."""
        self._dead_letters = 0
        """The dead stream's length when last read (the summary reports it)."""
        self._dead_read_at = -DEAD_LETTER_POLL_S
        self._untracked_snapshot = False
        """The committed snapshot has no readable fetch tracker beside it (an older
        projector's, or a damaged file): the next snapshot is due even at its position."""

    async def __aenter__(self) -> Self:
        async with AsyncExitStack() as stack:
            # The file lock still keeps a second projector of this data directory out at
            # once (even one on another server); the lease, any other projector of the job.
            lock_fd = stack.enter_context(self.store.lock())
            lease = hold_projector_lease(
                self.log.redis, self.log.keys, str(self.data_dir.resolve()), ttl_ms=self.lease_ms
            )
            self.lease = await stack.enter_async_context(lease)
            # A missing manifest over segment files, or a damaged one, is rebuilt from them.
            self.manifest = await anyio.to_thread.run_sync(recover, self.store)
            # Before anything is read or trimmed: a store that lost the job is not read on.
            self.identity = await check_store(
                self.log.redis, self.store.root.parent.parent, self.log.keys.job, create=True
            )
            self.lease.epoch = self.identity.epoch if self.identity is not None else 0
            await self._require_whole_archive()
            self._committer = Committer(self.store, self.manifest)
            # Left after the task group, which waits for the commit in flight.
            writer = SegmentWriter(self.store.archive, lock_fd)
            self._writer = await stack.enter_async_context(writer)
            if await self._ahead_of_the_archive() >= self.writer_min_events:
                # A log this far ahead of the manifest: the writer is started now, not in
                # the middle of catching up (a projector that keeps up with a short stream
                # never needs one, nor one started on a stream that still holds the tail
                # it committed: a crawl's, for the recrawl run right after it).
                await writer.start()
                await writer.wait_ready()
            fetches = await anyio.to_thread.run_sync(restored_fetches, self.store, self.manifest)
            self.state, self.stored, self.stored_keys = await anyio.to_thread.run_sync(
                live_state,
                self.store,
                self.manifest,
                None if fetches is None else fetches.observe,
            )
            rows = await anyio.to_thread.run_sync(
                summary_rows, self.store.tasks, self.manifest.task_segments
            )
            self._summary.load_rows(rows)
            self._summary.fetches = fetches
            self._summary.update(self.state, self.state.tasks)
            self._untracked_snapshot = fetches is None
            if fetches is None:
                await anyio.to_thread.run_sync(
                    self._summary.start_fetches,
                    self.store.segment_paths(self.manifest),
                    self.manifest.summary,
                )
            self._tasks = await stack.enter_async_context(anyio.create_task_group())
            self._tasks.start_soon(self._keep_lease)
            self._stack = stack.pop_all()
        self.position = self.manifest.position
        self._snapshot_at = time.monotonic()
        if self.position != "0-0":
            # A projector killed between its manifest's rename and the publish left the
            # published position behind the committed one: at the end of a job nothing
            # would be committed again, and whoever waits for that position would wait on.
            await self._publish_and_trim()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        try:
            # A stop (SIGTERM, Ctrl-C, cancellation) commits what was read: every buffered
            # event is folded already, so the state and the buffer agree.
            with anyio.CancelScope(shield=True):
                if exc_type is None or issubclass(exc_type, anyio.get_cancelled_exc_class()):
                    await self.commit(snapshot=True, wait=True)
        finally:
            self._keeping.cancel()
            result = await self._stack.__aexit__(exc_type, exc, tb)
        return result

    async def _keep_lease(self) -> None:
        assert self.lease is not None
        with self._keeping:
            await self.lease.keep()

    async def step(self, *, block_ms: int = 0) -> int:
        """Read and fold one batch; start a commit if one is due. Returns the events read.

        ``ProjectorLeaseLost`` once the lease is found lost: what was read is not committed.
        """
        assert self.lease is not None, "enter the projector first"
        # A lease gone with the store's data is no takeover: the lease says so (`StoreLost`).
        self.lease.check()
        if time.monotonic() - self._dead_read_at >= DEAD_LETTER_POLL_S:
            await self._count_dead_letters()
        ahead, self._ahead = self._ahead, None
        try:
            if ahead is not None and ahead[0] == self.position:
                entries = await ahead[1].result()
            else:
                entries = await self.log.read_after(self.position, READ_BATCH, block_ms=block_ms)
        except PoisonEntry as poison:
            # Copied aside, never edited out of the log; reading goes on after it.
            await self.log.dead_letter(poison)
            self.position = poison.entry_id
            await self._count_dead_letters()
            return 0
        if entries and self.identity is not None:
            await self._check_store()
        self._behind = len(entries) >= READ_BATCH
        if self._behind and self._tasks is not None:
            # Behind the log: the next batch is asked for now, and the server reads it while
            # this one is folded (a checkpoint lets the read send its command first).
            after = entries[-1].stream_id
            self._ahead = (after, InFlight(self._tasks, self.log.read_after(after, READ_BATCH)))
            await anyio.lowlevel.checkpoint()
        if entries:
            if not self._pending:
                self._buffer_since = time.monotonic()
            self._bring_back(entries)
            self._summary.observe(self.state, entries)  # before the fold: it reads the old state
            apply_all(self.state, entries)
            # Now, while the batch is in the CPU's caches: over a whole commit's buffer at
            # commit time it cost much more.
            self._touched |= touched_tasks(entries)
            self._pending += len(entries)
            self.position = entries[-1].stream_id
            await self._keep(entries)
        if self._commit_due():
            await self.commit()
        return len(entries)

    async def run(self, *, until: str | None = None, snapshot: bool = False) -> None:
        """Project until cancelled, or until everything up to ``until`` is committed (with
        a snapshot of the state, if ``snapshot``)."""
        goal = stream_id_key(until) if until is not None else None
        while goal is None or stream_id_key(self.position) < goal:
            read = await self.step(block_ms=self._block_ms())
            reached = goal is not None and stream_id_key(self.position) >= goal
            if 0 < read < TRICKLE_EVENTS and not reached:
                # Caught up with a log that trickles in: let events gather before the next
                # read. Each read costs about as much as folding a hundred events, and a
                # projector reading every few events as a crawl appended them spent more
                # than twice the CPU of folding them (the crawl's own CPU). Nobody sees the
                # difference: what was read is published only at the next commit.
                await anyio.sleep(min(TRICKLE_PAUSE_S, self._block_ms() / 1000))
        await self.commit(snapshot=snapshot, wait=True)

    async def catch_up(self, *, snapshot: bool = False) -> None:
        """Project everything in the stream now, and commit it (with a snapshot of the
        state, if ``snapshot``: a stop's last commit, which leaves nothing to commit
        on exit)."""
        last = await self.log.last_id()
        if last is not None:
            await self.run(until=last, snapshot=snapshot)

    async def commit(self, *, snapshot: bool = False, wait: bool = False) -> None:
        """Start committing what was read: a segment, maybe a snapshot, the manifest.

        Waits for the previous commit first; with ``wait``, for this one as well.
        """
        await self._wait_committed()
        snapshot_bytes, fetches_bytes, leaving, keys = self._snapshot_if_due(snapshot)
        if snapshot_bytes is None and self._nothing_to_commit():
            return
        self._summary.update(self.state, self._touched)
        self._touched = set()
        streamed = not self._buffer and self._pending > 0
        if streamed:
            assert self._writer is not None and self._writer.running
            self._writer.end_segment()
        work = CommitRequest(
            position=self.position,
            entries=self._buffer,
            snapshot=snapshot_bytes,
            snapshot_position=self.state.position,
            snapshot_fetches=fetches_bytes,
            task_rows=leaving,
            task_rows_replacing=self.stored.replacing,
            item_keys=keys,
            summary=self._summary.summary(self.state, dead_letters=self._dead_letters),
            behind=self._behind,
            identity=self.identity.job_id if self.identity is not None else None,
            epoch=self.identity.epoch if self.identity is not None else 0,
        )
        self._buffer, self._pending = [], 0
        done = self._committing = anyio.Event()
        assert self._tasks is not None, "enter the projector first"
        self._tasks.start_soon(self._commit, work, done, streamed)
        if wait:
            await self._wait_committed()

    async def _notice_a_lost_store(self) -> None:
        """Set ``_lost`` if the store no longer holds the job this projector started on."""
        if self.identity is None or self._lost:
            return
        try:
            # An epoch a Sentinel promotion raised is followed (`eventlog.check_identity`).
            self.identity = await check_identity(self.log.redis, self.log.keys, self.identity)
        except StoreLost:
            self._lost = True

    async def _check_store(self) -> None:
        """`StoreLost` if the store lost the job; what was read before it did (the
        identity was still there after that read) is committed first: it is the job's,
        and the restore goes on from it."""
        assert self.identity is not None
        try:
            # An epoch a Sentinel promotion raised is followed (`eventlog.check_identity`).
            self.identity = await check_identity(self.log.redis, self.log.keys, self.identity)
        except StoreLost:
            self._lost = True
            self._ahead = None
            await self.commit(snapshot=True, wait=True)
            raise

    def _snapshot_if_due(
        self, snapshot: bool
    ) -> tuple[bytes | None, bytes | None, list[TaskRow], list[str]]:
        """The snapshot's bytes, its fetch tracker's, and the tasks and keys leaving memory
        with it, if one is due (``snapshot``, or the interval passed); Nones and nothing
        otherwise."""
        due = snapshot or time.monotonic() - self._snapshot_at >= self.snapshot_interval_s
        # A snapshot without a tracker beside it is written again with one, even at the same
        # position: a restart from it would read the whole archive again.
        if not due or (
            self.manifest.snapshot_position == self.state.position and not self._untracked_snapshot
        ):
            return None, None, [], []
        self._untracked_snapshot = False
        # The summary first: it reads the tasks about to leave memory.
        self._summary.update(self.state, self._touched)
        self._touched = set()
        leaving = self._evict()
        keys = self.stored_keys.evict(self.state.item_keys)
        # Encoded now: the fold goes on changing the state while the commit runs.
        snapshot_bytes = canonical(self.state)
        fetches = self._summary.fetches
        self._snapshot_at = time.monotonic()
        return snapshot_bytes, fetches.dump() if fetches is not None else None, leaving, keys

    def _nothing_to_commit(self) -> bool:
        """Nothing read since the last commit, and its summary says all it should."""
        committed = self.manifest.summary
        dead_known = (committed.dead_letters if committed else 0) == self._dead_letters
        # A manifest without the fetch figures (written before them) gets them now.
        figures_known = committed is None or committed.fetches is not None
        return (
            not self._pending
            and self.position == self.manifest.position
            and dead_known
            and figures_known
        )

    def _evict(self) -> list[TaskRow]:
        """Take the terminal tasks out of memory, as the rows of the next task segment."""
        return evict_terminal(self.state, self.stored)

    def _bring_back(self, entries: list[LogEntry]) -> None:
        """Load the stored tasks a batch names, and the stored item keys it scrapes, back
        into memory, before it is folded."""
        bring_back(self.store, self.manifest, self.stored, self.state, entries, self.stored_keys)

    async def _count_dead_letters(self) -> None:
        self._dead_letters = await self.log.dead_letter_count()
        self._dead_read_at = time.monotonic()

    async def _wait_committed(self) -> None:
        if self._committing is not None:
            await self._committing.wait()
        if self._commit_error is not None:
            # Every later wait raises it too: nothing after a failed commit is committed.
            raise self._commit_error

    async def _keep(self, entries: list[LogEntry]) -> None:
        """Keep a batch for the next commit: in the buffer, or in the writer process."""
        writer = self._writer
        if writer is not None and writer.running:
            # Not kept here: freed now, the memory of the batch is what the next one reuses.
            writer.feed(entries)
            return
        self._buffer += entries
        if writer is not None and self._pending >= self.writer_min_events:
            # Behind, or keeping up with a fast crawl: what is not committed yet goes to
            # the writer, and every batch read from now on.
            await writer.start()
            writer.feed(self._buffer)
            self._buffer = []

    async def _commit(self, work: CommitRequest, done: anyio.Event, streamed: bool) -> None:
        assert self._committer is not None
        try:
            if streamed:
                assert self._writer is not None
                work = msgspec.structs.replace(work, segment=await self._writer.segment())
            assert self.lease is not None
            # What was folded is the job's (each read was checked, `_check_store`), and is
            # committed even once the store lost the job: without the lease, which went with
            # the store, and without a position published or a trim in the lost store.
            if self.identity is None:
                await self._notice_a_lost_store()
            if not self._lost:
                # Still the job's projector? One that lost its lease commits nothing (its
                # state is stale: another projector may have committed and trimmed since).
                # One whose lease went with the store's data (the lease's script tells it
                # from a takeover by the job's epoch) commits without it.
                try:
                    await self.lease.renew()
                except StoreLost:
                    self._lost = True
            self.manifest = await anyio.to_thread.run_sync(self._committer.commit, work)
            if work.task_rows:
                self.stored.landed()
            if work.item_keys:
                self.stored_keys.landed()
            if self._lost:
                raise StoreLost(self.log.keys.job, "its identity key is gone: it lost its data")
            await self._publish_and_trim()
        except Exception as exc:
            # Raised where the projector waits for its commits, not in the task group: a
            # failure there cancelled the group while the projector's own exit, shielded,
            # started the next commit in it, which then waited forever for its cancellation.
            self._commit_error = exc
        finally:
            done.set()

    async def _publish_and_trim(self) -> None:
        """Publish the committed position and trim the log below it, in one script call
        fenced by the lease (``ProjectorLeaseLost``, and neither done, if it is lost)."""
        position = self.manifest.position
        minid = None
        if self.keep_tail_s is not None and position != "0-0":
            # MINID keeps everything at or after it, so it never reaches past the
            # committed position. Exact, not "~": approximate trimming stops after
            # 10,000 entries a call and would fall behind a fast crawl.
            committed = stream_id_key(position)
            tail_ms = int(self.keep_tail_s * 1000)
            floor = min(committed, (committed[0] - tail_ms, 0)) if tail_ms else committed
            minid = f"{max(floor[0], 0)}-{floor[1]}"
        assert self.lease is not None
        await self.lease.publish_and_trim(position, minid)

    async def _ahead_of_the_archive(self) -> int:
        """About how many entries the log has after the committed position: those ever
        appended but the archived (dead letters, never archived, are counted as ahead)."""
        info = await self.log.stream_info()
        return 0 if info is None else info.entries_added - self.manifest.events

    async def _require_whole_archive(self) -> None:
        """``ArchiveBehind`` if the log was trimmed past the committed position: reading on
        would skip what this archive lacks (``_continuity``)."""
        info = await self.log.stream_info()
        if info is None:
            return
        # Dead letters of task entries are counted too: a refusal may be missed, never
        # made in error.
        dead = await self.log.dead_letter_count()
        if behind_the_trim(self.manifest.events, dead, info.entries_added, info.length):
            committer = await last_committer(self.log.redis, self.log.keys)
            raise archive_behind(
                self.store.job,
                self.store.root,
                self.manifest.position,
                info.entries_added - info.length,
                await self.log.first_id(),
                committer,
            )

    def _commit_due(self) -> bool:
        if not self._pending:
            return False
        if self._committing is not None and not self._committing.is_set():
            # A commit is in flight: read and fold on, and let the next commit take more,
            # rather than wait with one core idle; only a buffer this far behind waits.
            return self._pending >= self.commit_events * MAX_BUFFERED_COMMITS
        return (
            self._pending >= self.commit_events
            or time.monotonic() - self._buffer_since >= self.commit_interval_s
        )

    def _block_ms(self) -> int:
        if not self._pending:
            return int(self.commit_interval_s * 1000)
        left = self.commit_interval_s - (time.monotonic() - self._buffer_since)
        return max(1, int(left * 1000))


def tune_gc() -> None:
    """Set this process's garbage collector, and its thread switching, for projecting
    (``crawlog project`` calls it).

    What exists now (imports, the restored state) is frozen out of every collection, and
    young objects are collected every ``GC_GEN0_THRESHOLD`` allocations instead of 700.
    The GIL is handed over every ``SWITCH_INTERVAL_S`` (see there).
    """
    gc.freeze()
    gc.set_threshold(GC_GEN0_THRESHOLD, 50, 100)
    sys.setswitchinterval(SWITCH_INTERVAL_S)


def evict_terminal(state: State, stored: StoredTasks) -> list[TaskRow]:
    """Take the terminal tasks out of ``state``, as the rows of the next task segment
    (noted in ``stored`` as in flight until the commit that writes them lands)."""
    tasks = state.tasks
    leaving = [task_row(t) for t in tasks.values() if t.status in TERMINAL]
    for row in leaving:
        del tasks[row.task_id]
    stored.add(leaving)
    return leaving
