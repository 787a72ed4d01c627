"""Replay: the whole state rebuilt from the archive and the stream tail, and compared.

The live state (the projector's snapshots and task segments) was built incrementally,
across restarts; the replayed one is folded from scratch. Invariant 2 says they are equal
bit for bit, and ``verify`` checks exactly that, at the snapshot's position.

Memory is bounded as in the projector: once the replayed state holds ``EVICT_TASKS``
tasks, the ended ones leave it for runs in a temporary directory (task id and the task's
bytes as the task store encodes them, ``_taskstore``), and a task an event names again (a
retry, a late event to refuse) is read back first, exactly as the projector brings one
back. So
``verify`` compares streams, not two whole states: the live parts whole, and the stored
tasks as relations of (task id, MD5 of the task's bytes) joined in DuckDB.
"""

from __future__ import annotations

import contextlib
import functools
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Self

import msgspec
import redis.asyncio as aioredis

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq
else:
    from projector._arrow import pa, pq

from eventlog import (
    SCHEMA_VERSION,
    AnyEvent,
    CrawlogError,
    EventLog,
    JobKeys,
    LogEntry,
    PoisonEntry,
    decode,
    rebuild_checkpoints,
    stream_id_key,
)
from projector._archive import ArchiveCorrupt, read_entries, read_table
from projector._columnar import COLUMNS as PLAIN_COLUMNS
from projector._columnar import PlainTasks, fold_plain, plain_tasks, taken, taken_in_order
from projector._fold import apply_events, apply_marked, mark_new
from projector._integrity import archive_problems, archived_up_to
from projector._keystore import read_keys
from projector._state import TERMINAL, State, TaskState, canonical
from projector._store import Manifest, Store
from projector._taskstore import (
    TASK_SEGMENT_SUFFIX,
    StoredTasks,
    TaskSegmentInfo,
    named_task_ids,
)

READ_BATCH = 10_000
MAX_DIFFERENCES = 20
FOLD_BATCH: Final = 2_000
"""Entries decoded and folded at a time: a segment's events are not all decoded at once.
Small enough that a batch's decoded events stay in the CPU's cache between the passes made
over them (decode, ids looked up among the stored tasks, fold); a batch of tens of
thousands leaves it, and every pass reads memory again."""
EVICT_EVENTS: Final = 500_000
"""Events folded between two looks at how many tasks the replayed state holds."""
EVICT_TASKS: Final = 1_000_000
"""Tasks in memory from which the ended ones leave for a run. Eviction costs time on every
later batch (its task ids looked up among the stored ones, each task encoded and written
once) and, below a million tasks, saves little memory next to what replay holds whatever
the job's size; past it, memory stays bounded by this many tasks."""
EVICT_SLICE: Final = 50_000
"""Ended tasks encoded and written at a time when they leave (a row group of the run)."""
POINTER_BATCH: Final = 10_000
"""Checkpoint pointers a call of the rebuild script (``rebuild_checkpoints``)."""
SPILL_PREFIX: Final = "crawlog-replay-"
COLUMNAR_REPLAY: Final = True
"""Whether ``fold_archive`` takes the columnar fast path (``_columnar``) by default: the
1M-task job's fold in about a fifth less CPU than the Python fold before it, the regime of
a 10M-task replay (eviction) about a tenth less (docs/projector.md, "Replay at scale");
False folds every event in Python."""
_task_encoder: Final = msgspec.msgpack.Encoder(order="deterministic")


@functools.cache
def _run_schema() -> pa.Schema:
    """The columns of a spilled run of task states (Arrow imported at first use)."""
    return pa.schema([("task_id", pa.string()), ("state", pa.binary())])


class _Envelope(msgspec.Struct, array_like=True, frozen=True, gc=False):
    """``eventlog``'s envelope, ``[schema_version, event]``, decoded here with one call per
    payload: the fast path of ``eventlog.decode`` without its function call around it."""

    version: int
    event: AnyEvent


_envelope_decoder: Final = msgspec.msgpack.Decoder(_Envelope)


class TaskSpill(AbstractContextManager["TaskSpill"]):
    """The ended tasks a replay took out of its state: task segments in a temporary
    directory (deleted on exit), and the hashes of their ids (``StoredTasks``)."""

    def __init__(
        self,
        parent: Path | None = None,
        *,
        evict_tasks: int = EVICT_TASKS,
        evict_slice: int = EVICT_SLICE,
    ) -> None:
        self.evict_tasks = evict_tasks
        self.evict_slice = evict_slice
        self.limit = evict_tasks
        """Tasks in memory from which the next eviction happens: at least twice those left
        after the last one, so a state of many live tasks is not scanned at every look."""
        self.directory = Path(tempfile.mkdtemp(prefix=SPILL_PREFIX, dir=parent))
        self.stored = StoredTasks()
        self.segments: list[TaskSegmentInfo] = []
        self._written = 0

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> Self:
        return self

    def paths(self) -> list[Path]:
        """The runs, oldest first (the latest row of a task wins)."""
        return [self.directory / s.name for s in self.segments]

    def evict(self, state: State) -> int:
        """Move the ended tasks of ``state`` to a new run; returns how many left."""
        tasks = state.tasks
        leaving = [t for t, task in tasks.items() if task.status in TERMINAL]
        if not leaving:
            return 0
        encode = _task_encoder.encode  # the task store's bytes: ``verify`` compares them
        pop = tasks.pop
        self._written += 1
        name = f"run-{self._written:06d}{TASK_SEGMENT_SUFFIX}"
        # Two columns, unsorted, lightly compressed: a run is read once (by DuckDB, or
        # for the few tasks that come back), so it is written as cheaply as it can be. A
        # slice at a time: the memory of one slice's bytes is reused by the next, where a
        # run's bytes all at once are fresh pages for the kernel to hand over.
        with pq.ParquetWriter(
            self.directory / name, _run_schema(), compression="zstd", compression_level=1
        ) as writer:
            for at in range(0, len(leaving), self.evict_slice):
                ids = leaving[at : at + self.evict_slice]
                states = [encode(pop(t)) for t in ids]
                writer.write_table(
                    pa.table(
                        [pa.array(ids, pa.string()), pa.array(states, pa.binary())],
                        schema=_run_schema(),
                    )
                )
        self.stored.hashes.update(map(hash, leaving))
        self.segments.append(
            TaskSegmentInfo(name=name, tasks=len(leaving), position=state.position)
        )
        return len(leaving)

    def bring_back(self, state: State, events: Sequence[AnyEvent]) -> None:
        """Read the ended tasks ``events`` name back into ``state``, before the fold."""
        if not self.segments:
            return
        missing = self.stored.missing(state.tasks, named_task_ids(events))
        if missing:
            state.tasks.update(self.stored.load(missing, self.paths()))


class Replayed:
    """A replayed state: its live part in memory, its ended tasks in ``spill``."""

    def __init__(self, state: State, spill: TaskSpill) -> None:
        self.state = state
        self.spill = spill

    def stored_ids(self) -> Iterator[str]:
        """Every task id only in the runs (not in memory), once."""
        if not self.spill.segments:
            return
        import duckdb  # here: history imports this module, and DuckDB costs its start

        memory = pa.table({"task_id": pa.array(list(self.state.tasks), pa.string())})
        con = duckdb.connect(":memory:")
        try:
            con.register("memory", memory)
            reader: pa.RecordBatchReader = con.sql(
                "SELECT DISTINCT task_id FROM read_parquet($paths) "
                "WHERE task_id NOT IN (SELECT task_id FROM memory)",
                params={"paths": [str(p) for p in self.spill.paths()]},
            ).to_arrow_reader()
            for batch in reader:
                yield from batch.column(0).to_pylist()
        finally:
            con.close()

    def task_count(self) -> int:
        """Tasks of the whole replayed state."""
        return len(self.state.tasks) + sum(1 for _ in self.stored_ids())

    def whole_state(self) -> State:
        """The whole state, every stored task read back (for a small job, or a test)."""
        state = msgspec.structs.replace(self.state, tasks=dict(self.state.tasks))
        if self.spill.segments:
            from projector._taskstore import read_tasks

            for task_id, task in read_tasks(self.spill.paths()).items():
                state.tasks.setdefault(task_id, task)
        return state

    def checkpoint_pointers(self) -> Iterator[tuple[str, str | None]]:
        """What the ``ckpt`` index should say: an unfinished task's last checkpoint, and
        None (no pointer) for an ended task."""
        for task in self.state.tasks.values():
            if task.status in TERMINAL:
                yield task.task_id, None
            elif task.checkpoint_id is not None:
                yield task.task_id, task.checkpoint_id
        for task_id in self.stored_ids():
            yield task_id, None


def decoded_events(
    path: Path, stream_ids: Sequence[str], payloads: Sequence[bytes]
) -> list[AnyEvent]:
    """The events of a segment's rows; ``ArchiveCorrupt`` naming an entry that does not
    decode.

    Each payload is decoded as ``eventlog.decode`` does (its fast path inline: one
    ``msgspec`` call into the current Structs); one of another schema version, or that
    does not decode so, goes through ``decode`` itself (the upcasters, or the error)."""
    events: list[AnyEvent] = []
    append = events.append
    fast = _envelope_decoder.decode
    for payload in payloads:
        try:
            envelope = fast(payload)
            if envelope.version == SCHEMA_VERSION:
                append(envelope.event)
                continue
        except (msgspec.DecodeError, msgspec.ValidationError):
            pass
        stream_id = stream_ids[len(events)]
        try:
            append(decode(payload))
        except CrawlogError as exc:
            raise ArchiveCorrupt(f"archive segment {path}: entry {stream_id}: {exc}") from None
    return events


def decoded(path: Path, stream_ids: Sequence[str], payloads: Sequence[bytes]) -> list[LogEntry]:
    """Log entries of a segment's rows; ``ArchiveCorrupt`` naming an entry that does not
    decode."""
    events = decoded_events(path, stream_ids, payloads)
    return list(map(LogEntry, stream_ids, events, payloads))


Batch = tuple[list[str], list[AnyEvent]]
"""A batch of the log as replay folds it: the stream IDs, and the events."""


def archived_batches(
    store: Store, manifest: Manifest, until: str | None = None, after: str | None = None
) -> Iterator[list[LogEntry]]:
    """The archived entries after ``after`` up to ``until`` (stream IDs), in log order, in
    batches of at most ``FOLD_BATCH``."""
    for path, stream_ids, payloads in _archived_rows(store, manifest, until, after):
        yield decoded(path, stream_ids, payloads)


def archived_events(store: Store, manifest: Manifest, until: str | None = None) -> Iterator[Batch]:
    """``archived_batches`` as replay folds them: stream IDs and events, no entries."""
    for path, stream_ids, payloads in _archived_rows(store, manifest, until, None):
        yield stream_ids, decoded_events(path, stream_ids, payloads)


def _archived_rows(
    store: Store, manifest: Manifest, until: str | None, after: str | None
) -> Iterator[tuple[Path, list[str], list[bytes]]]:
    """The archived rows after ``after`` up to ``until``: (segment, stream IDs, payloads)
    in batches of at most ``FOLD_BATCH``."""
    for path, table in _archived_slices(store, manifest, until, after, _COLUMNS):
        yield from _row_batches(path, table)


def _row_batches(path: Path, table: pa.Table) -> Iterator[tuple[Path, list[str], list[bytes]]]:
    """A slice's stream IDs and payloads in batches of at most ``FOLD_BATCH``."""
    stream_ids, payloads = table.column("stream_id"), table.column("payload")
    for at in range(0, table.num_rows, FOLD_BATCH):
        size = min(FOLD_BATCH, table.num_rows - at)
        yield path, stream_ids.slice(at, size).to_pylist(), payloads.slice(at, size).to_pylist()


def _archived_slices(
    store: Store,
    manifest: Manifest,
    until: str | None,
    after: str | None,
    columns: Sequence[str],
) -> Iterator[tuple[Path, pa.Table]]:
    """Each segment's rows after ``after`` up to ``until``, with ``columns``, in log order.

    Each segment is read as Arrow columns (the next one in a thread while this one is
    folded: Parquet leaves the GIL), and only a segment across ``after`` or ``until`` has
    its stream IDs compared.
    """
    low = stream_id_key(after) if after is not None else None
    high = stream_id_key(until) if until is not None else None
    chosen: list[tuple[Path, bool]] = []
    for segment, path in zip(manifest.segments, store.segment_paths(manifest), strict=True):
        first, last = stream_id_key(segment.first_id), stream_id_key(segment.last_id)
        if (low is not None and last <= low) or (high is not None and first > high):
            continue
        edge = (low is not None and first <= low) or (high is not None and last > high)
        chosen.append((path, edge))
    with ThreadPoolExecutor(max_workers=1) as pool:
        ahead: Future[pa.Table] | None = None
        for n, (path, edge) in enumerate(chosen):
            table = ahead.result() if ahead is not None else read_table(path, columns)
            ahead = (
                pool.submit(read_table, chosen[n + 1][0], columns) if n + 1 < len(chosen) else None
            )
            start, stop = 0, table.num_rows
            if edge:
                keys = [stream_id_key(i) for i in table.column("stream_id").to_pylist()]
                while low is not None and start < stop and keys[start] <= low:
                    start += 1
                while high is not None and stop > start and keys[stop - 1] > high:
                    stop -= 1
            yield path, table.slice(start, stop - start)


_COLUMNS: Final = ("stream_id", "payload")


def archived_entries(
    store: Store, manifest: Manifest, until: str | None = None
) -> Iterator[LogEntry]:
    """Every archived entry in log order, up to and including stream ID ``until``."""
    for batch in archived_batches(store, manifest, until):
        yield from batch


def fold_archive(
    store: Store,
    manifest: Manifest,
    spill: TaskSpill,
    until: str | None = None,
    *,
    evict_events: int = EVICT_EVENTS,
    columnar: bool = COLUMNAR_REPLAY,
) -> State:
    """The archive up to ``until`` folded from scratch; every ``evict_events`` events, the
    ended tasks move to ``spill`` if the state holds its limit of tasks. ``columnar``: the
    plain tasks of each segment folded from its columns (``_columnar``), the rest by the
    Python fold; else every event by the Python fold."""
    state = State()
    since = 0
    columns = _PLAIN_COLUMNS if columnar else _COLUMNS
    with _malloc_pool():
        for path, table in _archived_slices(store, manifest, until, None, columns):
            plain = _plain(state, spill, table) if columnar else None
            if plain is None:
                for _, stream_ids, payloads in _row_batches(path, table):
                    batch = stream_ids, decoded_events(path, stream_ids, payloads)
                    since = _fold(state, spill, batch, since, evict_events)
                continue
            since = _fold_plain(state, spill, path, table, plain, since, evict_events)
    return state


@contextlib.contextmanager
def _malloc_pool() -> Iterator[None]:
    """Arrow's allocations made by the C library's ``malloc`` while the archive is folded
    (Arrow's default pool, mimalloc, again after). Each segment read and taken apart is
    hundreds of megabytes made and dropped; mimalloc gave that memory back to the kernel
    and faulted it in again for the next segment, which cost about as much system time as
    the fold's own CPU saved (docs/projector.md, "Replay at scale")."""
    before = pa.default_memory_pool()
    pa.set_memory_pool(pa.system_memory_pool())
    try:
        yield
    finally:
        pa.set_memory_pool(before)


_PLAIN_COLUMNS: Final = (*PLAIN_COLUMNS, "payload")


def _plain(state: State, spill: TaskSpill, table: pa.Table) -> PlainTasks | None:
    """The plain tasks of a segment's slice, with every event id of the slice added to the
    dedup windows; None (and the windows unchanged) if it has none, or has a repeat."""
    tasks = state.tasks

    def known(task_ids: list[str]) -> list[str]:
        return [t for t in task_ids if t in tasks] + list(spill.stored.missing(tasks, task_ids))

    plain = plain_tasks(table, state.item_keys, known)
    if plain is None or not mark_new(state, table.column("event_id").to_pylist()):
        return None
    return plain


def _fold_plain(
    state: State,
    spill: TaskSpill,
    path: Path,
    table: pa.Table,
    plain: PlainTasks,
    since: int,
    evict_events: int,
) -> int:
    """Fold a slice whose event ids are in the windows already: its plain tasks from the
    columns, then every other event by the Python fold, in log order."""
    stream_ids, payloads = table.column("stream_id"), table.column("payload")
    # The plain tasks' enqueues, pages and dones in one take, their stream IDs only for an
    # error's message; taken chunk by chunk (``taken``): no copy of the columns.
    tasks = len(plain.task_ids)
    rows = pa.array(plain.enqueued + plain.pages + plain.done, pa.int64())
    events = decoded_events(path, _TakenIds(stream_ids, rows), taken_in_order(payloads, rows))
    fold_plain(
        state, plain, events[:tasks], events[tasks : 2 * tasks], events[2 * tasks :], str(path)
    )
    del events
    folded = table.num_rows - len(plain.rest)
    state.job.events += folded
    since = _evict_if_due(state, spill, since + folded, evict_events)
    rest = plain.rest.to_pylist()
    for at in range(0, len(rest), FOLD_BATCH):
        part = rest[at : at + FOLD_BATCH]
        ids = taken(stream_ids, part)
        batch = ids, decoded_events(path, ids, taken(payloads, part))
        since = _fold(state, spill, batch, since, evict_events, apply_marked)
    if table.num_rows:
        state.position = stream_ids[table.num_rows - 1].as_py()
    return since


class _TakenIds(Sequence[str]):
    """The stream IDs of some rows of a column, each read only if asked for (to name an
    entry that does not decode)."""

    def __init__(self, column: pa.ChunkedArray, rows: pa.Array) -> None:
        self.column, self.rows = column, rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, at: Any) -> Any:
        if isinstance(at, slice):
            return [self[n] for n in range(*at.indices(len(self)))]
        return self.column[self.rows[at].as_py()].as_py()


def _fold(
    state: State,
    spill: TaskSpill,
    batch: Batch,
    since: int,
    evict_events: int,
    apply: Callable[[State, Sequence[str], Sequence[AnyEvent]], State] = apply_events,
) -> int:
    """Fold ``batch`` (its ended tasks brought back first) with ``apply``; evict when due.
    Returns the events folded since the last eviction."""
    stream_ids, events = batch
    for at in range(0, len(events), evict_events):
        if len(events) > evict_events:
            ids, part = stream_ids[at : at + evict_events], events[at : at + evict_events]
        else:
            ids, part = stream_ids, events
        spill.bring_back(state, part)
        apply(state, ids, part)
        since = _evict_if_due(state, spill, since + len(part), evict_events)
    return since


def _evict_if_due(state: State, spill: TaskSpill, since: int, evict_events: int) -> int:
    """Evict if ``since`` events were folded since the last look and the state holds its
    limit of tasks; returns the events since the last look."""
    if since < evict_events:
        return since
    if len(state.tasks) >= spill.limit:
        spill.evict(state)
        spill.limit = max(spill.evict_tasks, 2 * len(state.tasks))
    return 0


def replay_archive(store: Store, manifest: Manifest, until: str | None = None) -> State:
    """The whole state folded from scratch out of the archive alone (in memory: for a
    small job, or a test; ``replay_job`` keeps only what is live)."""
    state = State()
    for stream_ids, events in archived_events(store, manifest, until):
        apply_events(state, stream_ids, events)
    return state


async def replay_job(
    redis: aioredis.Redis, store: Store, spill: TaskSpill, *, evict_events: int = EVICT_EVENTS
) -> Replayed:
    """The state of the whole log, the archive then the stream after the committed
    position, with its ended tasks in ``spill``."""
    manifest = store.read_manifest()
    state = fold_archive(store, manifest, spill, evict_events=evict_events)
    log = EventLog(redis, store.job)
    position = manifest.position
    since = 0
    while True:
        try:
            entries = await log.read_after(position, READ_BATCH)
        except PoisonEntry as poison:
            position = poison.entry_id  # the projector dead-letters it; replay skips it too
            continue
        if not entries:
            return Replayed(state, spill)
        batch = [e.stream_id for e in entries], [e.event for e in entries]
        since = _fold(state, spill, batch, since, evict_events)
        position = entries[-1].stream_id


async def replay(redis: aioredis.Redis, store: Store) -> State:
    """The whole state of the log (in memory), the archive then the stream tail."""
    with TaskSpill() as spill:
        replayed = await replay_job(redis, store, spill)
        return replayed.whole_state()


def differences(live: State, replayed: State, limit: int = MAX_DIFFERENCES) -> list[str]:
    """Readable differences between two states, at most ``limit`` of them."""
    if canonical(live) == canonical(replayed):
        return []
    found: list[str] = []
    _diff(msgspec.to_builtins(live), msgspec.to_builtins(replayed), "state", found, limit)
    return found or ["the states differ in encoding only"]


def _diff(a: Any, b: Any, path: str, found: list[str], limit: int) -> None:
    if len(found) >= limit or a == b:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            if key not in a:
                found.append(f"{path}.{key}: only in replay")
            elif key not in b:
                found.append(f"{path}.{key}: only in live")
            else:
                _diff(a[key], b[key], f"{path}.{key}", found, limit)
            if len(found) >= limit:
                return
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for n, (x, y) in enumerate(zip(a, b, strict=True)):
            _diff(x, y, f"{path}[{n}]", found, limit)
    else:
        found.append(f"{path}: live={a!r} replay={b!r}")


def verify(
    store: Store, *, evict_events: int = EVICT_EVENTS, evict_tasks: int = EVICT_TASKS
) -> tuple[str, list[str]]:
    """Replay the archive up to the live snapshot and compare; (position, differences).

    The states are compared in two parts: everything but the tasks (and the tasks each
    holds in memory) as ``canonical`` bytes, and every task as a row (task id, its bytes'
    MD5) of two relations, the live one (snapshot tasks, then the latest row of each task
    in the task segments) and the replayed one (likewise from the replay's runs), joined
    by DuckDB; only differing tasks are decoded, to say how they differ.
    """
    manifest = store.read_manifest()
    # An archive with a hole replays to the same hole: the files are checked first.
    found = archive_problems(store, manifest)
    live = store.read_snapshot(manifest, stored=False)
    # The tasks are compared as streams below; the item keys (a set of strings each) whole.
    live.item_keys |= read_keys(store.key_segment_paths(manifest))
    with TaskSpill(evict_tasks=evict_tasks) as spill:
        replayed = fold_archive(store, manifest, spill, live.position, evict_events=evict_events)
        spill.evict(replayed)
        archived = archived_up_to(store, manifest, live.position)
        if replayed.job.events != archived:
            found.append(
                f"the replay folded {replayed.job.events} events, the archive counts "
                f"{archived} up to {live.position}"
            )
        found += differences(_without_tasks(live), _without_tasks(replayed))
        found += _task_differences(
            store.task_segment_paths(manifest), live.tasks, spill.paths(), replayed.tasks,
            MAX_DIFFERENCES - len(found),
        )  # fmt: skip
    return live.position, found[:MAX_DIFFERENCES]


def _without_tasks(state: State) -> State:
    return msgspec.structs.replace(state, tasks={})


def _relation(tasks: dict[str, TaskState]) -> pa.Table:
    ids = list(tasks)
    return pa.table(
        {
            "task_id": pa.array(ids, pa.string()),
            "state": pa.array([_task_encoder.encode(tasks[t]) for t in ids], pa.binary()),
        }
    )


def _task_differences(
    live_paths: Sequence[Path],
    live_tasks: dict[str, TaskState],
    replay_paths: Sequence[Path],
    replay_tasks: dict[str, TaskState],
    limit: int,
) -> list[str]:
    if limit <= 0:
        return []
    import duckdb  # here: history imports this module, and DuckDB costs its start

    con = duckdb.connect(":memory:")
    try:
        con.register("live_memory", _relation(live_tasks))
        con.register("replay_memory", _relation(replay_tasks))
        sides = [_side_sql("live", live_paths), _side_sql("replay", replay_paths)]
        params: list[object] = []
        for paths in (live_paths, replay_paths):
            if paths:
                params += [str(p) for p in paths] * 2
        rows = con.execute(
            f"WITH {', '.join(sides)} "
            "SELECT coalesce(live.task_id, replay.task_id) AS task_id, "
            "live.task_id IS NOT NULL, replay.task_id IS NOT NULL, count(*) OVER () "
            "FROM live FULL OUTER JOIN replay ON live.task_id = replay.task_id "
            "WHERE live.digest IS DISTINCT FROM replay.digest ORDER BY 1 LIMIT ?",
            [*params, limit],
        ).fetchall()
    except duckdb.Error as exc:
        raise CrawlogError(f"comparing the tasks failed: {exc}") from None
    finally:
        con.close()
    if not rows:
        return []
    from projector._taskstore import read_tasks

    wanted = [row[0] for row in rows]
    live = {**read_tasks(live_paths, wanted), **live_tasks}
    replayed = {**read_tasks(replay_paths, wanted), **replay_tasks}
    return _described(rows, live, replayed, limit)


def _side_sql(side: str, paths: Sequence[Path]) -> str:
    """The CTEs of one side's relation (task id, digest): its tasks in memory, and the
    latest row of every other task in its files (two parameters a file: the list, the
    names)."""
    if not paths:
        return (f"{side} AS (SELECT task_id, md5_number(state) AS digest "
                f"FROM {side}_memory)")  # fmt: skip
    files = ", ".join(f"({n}, ?)" for n in range(len(paths)))
    return (
        f"{side}_files(file_index, name) AS (VALUES {files}), "
        f"{side}_rows AS (SELECT r.task_id, r.state, f.file_index "
        f"FROM read_parquet([{', '.join('?' for _ in paths)}], filename = true) r "
        f"JOIN {side}_files f ON r.filename = f.name), "
        f"{side} AS (SELECT task_id, arg_max(md5_number(state), file_index) AS digest "
        f"FROM {side}_rows WHERE task_id NOT IN (SELECT task_id FROM {side}_memory) "
        f"GROUP BY task_id UNION ALL "
        f"SELECT task_id, md5_number(state) FROM {side}_memory)"
    )


def _described(
    rows: list[Any], live: dict[str, TaskState], replayed: dict[str, TaskState], limit: int
) -> list[str]:
    """How each differing task (rows of task id, in live, in replay, total) differs."""
    found: list[str] = []
    for task_id, in_live, in_replay, _ in rows:
        path = f"state.tasks.{task_id}"
        if not in_live:
            found.append(f"{path}: only in replay")
        elif not in_replay:
            found.append(f"{path}: only in live")
        else:
            a, b = msgspec.to_builtins(live[task_id]), msgspec.to_builtins(replayed[task_id])
            before = len(found)
            _diff(a, b, path, found, limit)
            if len(found) == before:
                found.append(f"{path}: differs in encoding only")
        if len(found) >= limit:
            break
    total = rows[0][3]
    if total > len(rows):
        found.append(f"... {total} tasks differ in all")
    return found[:limit] if total <= len(rows) else found


async def rebuild_checkpoint_index(redis: aioredis.Redis, job: str, state: State | Replayed) -> int:
    """Point ``ckpt`` at every unfinished task's last checkpoint; returns entries changed."""
    if isinstance(state, Replayed):
        pointers: Iterator[tuple[str, str | None]] = state.checkpoint_pointers()
    else:
        pointers = Replayed(state, _NO_SPILL).checkpoint_pointers()
    keys, changed, batch = JobKeys(job), 0, []
    for pointer in pointers:
        batch.append(pointer)
        if len(batch) >= POINTER_BATCH:
            changed += await rebuild_checkpoints(redis, keys, batch)
            batch = []
    return changed + await rebuild_checkpoints(redis, keys, batch)


class _NoSpill(TaskSpill):
    """A spill with no runs and no directory (a state that holds every task)."""

    def __init__(self) -> None:  # no directory made
        self.stored = StoredTasks()
        self.segments = []
        self._written = 0


_NO_SPILL: Final = _NoSpill()


def find_archived(store: Store, stream_id: str) -> AnyEvent | None:
    """The archived event at ``stream_id`` (a checkpoint trimmed from Redis), if any."""
    manifest = store.read_manifest()
    key = stream_id_key(stream_id)
    for segment, path in zip(manifest.segments, store.segment_paths(manifest), strict=True):
        if stream_id_key(segment.first_id) <= key <= stream_id_key(segment.last_id):
            for entry in read_entries(path):
                if entry.stream_id == stream_id:
                    return entry.event
    return None
