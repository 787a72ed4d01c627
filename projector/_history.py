"""The log as operator commands need it: now, not as of the projector's last commit.

Both readers here take what one manifest commits (the archive, or the state it names) and
add the stream's tail after its position, read straight from Redis:

* ``current_state``: the committed state plus the tail, folded — the state of the whole
  log at this moment (every task decoded: for a small job, or a caller that needs them all);
* ``current_tasks``: the same state's live part (the snapshot's tasks, sites and job, and the
  stored tasks the events after it name) plus only the stored tasks asked for, by id or by
  status and site, read from the task segments with the filter pushed down: what
  ``crawlog retry`` and ``pause --task`` check a task against, without decoding the
  millions of ended tasks of a big job;
* ``log_entries``: every entry of the whole log, decoded (``crawlog changes``, a recrawl's
  seeding): for what folds the log in Python itself; it loads no DuckDB;
* ``task_history``: every event of some tasks (and of their sites and the job), from the
  archive's rows (a DuckDB filter over the segments' ``task_id``/``site`` columns: the
  other rows are never decoded) and from the tail.

The projector trims the stream only below its committed position, so the tail after the
position read is normally whole. It is checked anyway: trimming removes a prefix of the
stream, so if an entry at or before the position is still there after the tail was read,
nothing after it was trimmed; if the manifest moved on meanwhile, the read starts over on
the new one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeVar

import anyio.to_thread
import msgspec
import redis.asyncio as aioredis

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq
else:
    from projector._arrow import pa, pq

from eventlog import (
    START,
    AnyEvent,
    CheckpointSaved,
    CrawlogError,
    EventLog,
    LogEntry,
    PageFetched,
    PoisonEntry,
    RetryScheduled,
    SiteEvent,
    TaskAborted,
    TaskClaimed,
    TaskDone,
    TaskEnqueued,
    TaskEvent,
    TaskFailed,
    TaskParked,
    TaskReclaimed,
    TaskReleased,
    TaskResumed,
    TaskRetried,
    decode,
    stream_id_key,
)
from projector._committed import committed_state, named_tasks
from projector._fold import apply_all, fold
from projector._keystore import named_keys, read_keys
from projector._replay import archived_batches, archived_entries
from projector._segment_index import indexed_history
from projector._state import State, TaskState
from projector._store import Manifest, Store
from projector._taskstore import read_tasks

TAIL_BATCH = 10_000
READ_ATTEMPTS = 3

FetchOutcome = Literal["fetched", "interrupted"]


class FetchAttempt(msgspec.Struct, frozen=True, kw_only=True):
    """One time a worker held a task to fetch a page: a fetch the log recorded, or a
    delivery that ended with no fetch recorded (a kill, a lost lease), whose request may or
    may not have reached the site."""

    outcome: FetchOutcome
    actor: str
    attempt: int
    page: int
    stream_id: str
    """The fetch's event, or the event that shows the delivery was cut short."""
    result: str = ""
    """The fetch's error or ``HTTP <status>``; for an interrupted one, what showed it."""
    task_id: str = ""
    """The task that fetched (another one's, for a fetch of the URL after a redirect)."""


T = TypeVar("T")


async def current_state(redis: aioredis.Redis, store: Store) -> State:
    """The state of the whole log now: the committed state, then the stream's tail."""

    async def read(manifest: Manifest) -> State:
        return await anyio.to_thread.run_sync(committed_state, store, manifest)

    def add_tail(state: State, entries: list[LogEntry]) -> State:
        return fold(entries, state)

    return await _with_tail(redis, store, read, add_tail)


class TaskFilter(msgspec.Struct, frozen=True, kw_only=True):
    """Which tasks ``current_tasks`` reads: those of ``task_ids`` (if given) whose status is
    one of ``statuses`` (if given) and whose site is ``site`` (if given)."""

    task_ids: frozenset[str] | None = None
    statuses: frozenset[str] | None = None
    site: str | None = None

    def matches(self, task: TaskState) -> bool:
        return (
            (self.task_ids is None or task.task_id in self.task_ids)
            and (self.statuses is None or task.status in self.statuses)
            and (self.site is None or task.site == self.site)
        )


async def current_tasks(
    redis: aioredis.Redis, store: Store, wanted: TaskFilter
) -> tuple[State, dict[str, TaskState]]:
    """The live part of the state now (the committed one's, then the stream's tail, with
    the stored tasks they name brought back, as the projector folds), and every task of
    the whole state now that ``wanted`` matches: from the live part, or from the task
    segments (latest row per task) if it is not in it."""

    async def read(manifest: Manifest) -> tuple[Manifest, State]:
        return manifest, await anyio.to_thread.run_sync(committed_live, store, manifest)

    def add_tail(
        committed: tuple[Manifest, State], entries: list[LogEntry]
    ) -> tuple[Manifest, State]:
        manifest, state = committed
        _bring_back_named(store, manifest, state, entries)
        apply_all(state, entries)
        return manifest, state

    manifest, state = await _with_tail(redis, store, read, add_tail)
    stored = await anyio.to_thread.run_sync(stored_tasks, store, manifest, state, wanted)
    tasks = {t.task_id: t for t in state.tasks.values() if wanted.matches(t)}
    return state, {**stored, **tasks}


def committed_live(store: Store, manifest: Manifest) -> State:
    """The live part of the state a manifest commits: its snapshot's, then the archived
    events after it folded, each stored task they name read back first (all at once, not
    batch by batch as the projector does: the fold never touches an ended task but through
    an event naming it, so it is the same state)."""
    state = store.read_snapshot(manifest, stored=False)
    entries = [
        entry
        for batch in archived_batches(store, manifest, after=state.position)
        for entry in batch
    ]
    _bring_back_named(store, manifest, state, entries)
    apply_all(state, entries)
    return state


READ_ATTEMPTS_LIVE = 3


def read_live(store: Store) -> tuple[Manifest, State, dict[str, tuple[int, int]]]:
    """What a live view of the job starts from, read without the projector's lock: the
    committed manifest, the live part of its state (``committed_live``), and, per site,
    the retries and recoveries of the stored tasks not in it (the state counts tasks by
    status per site, but these only per task). Only the stored rows with a retry or a
    recovery are read: both figures only grow, so a task's latest row is among them if
    any of its rows is."""
    for attempt in range(READ_ATTEMPTS_LIVE):
        manifest = store.read_manifest()
        try:
            state = committed_live(store, manifest)
            return manifest, state, _stored_retry_sums(store, manifest, state)
        except CrawlogError:
            if attempt == READ_ATTEMPTS_LIVE - 1 or store.read_manifest() == manifest:
                raise
    raise AssertionError("unreachable")


def _stored_retry_sums(
    store: Store, manifest: Manifest, state: State
) -> dict[str, tuple[int, int]]:
    latest: dict[str, tuple[str, int, int]] = {}
    columns = ["task_id", "site", "retries", "recoveries"]
    for path in store.task_segment_paths(manifest):  # commit order: the latest row wins
        try:
            table: pa.Table = pq.read_table(
                path,
                columns=columns,
                filters=[[("retries", ">", 0)], [("recoveries", ">", 0)]],
            )
        except (OSError, pa.ArrowException) as exc:
            raise CrawlogError(f"task segment {path} cannot be read ({exc})") from None
        rows = zip(*(table.column(c).to_pylist() for c in columns), strict=True)
        latest.update((task_id, (site, r, c)) for task_id, site, r, c in rows)
    sums: dict[str, tuple[int, int]] = {}
    for task_id, (site, retries, recoveries) in latest.items():
        if task_id not in state.tasks:
            r, c = sums.get(site, (0, 0))
            sums[site] = (r + retries, c + recoveries)
    return sums


def bring_back_named(
    store: Store, manifest: Manifest, state: State, entries: Sequence[LogEntry]
) -> None:
    """Read the stored tasks of ``manifest`` that ``entries`` name and ``state`` lacks into
    it, before ``entries`` are folded into it."""
    _bring_back_named(store, manifest, state, entries)


def _bring_back_named(
    store: Store, manifest: Manifest, state: State, entries: Sequence[LogEntry]
) -> None:
    missing = {t for t in named_tasks(entries) if t not in state.tasks}
    if missing and manifest.task_segments:
        state.tasks.update(read_tasks(store.task_segment_paths(manifest), missing))
    # A key scraped again after it left memory is a duplicate: without it the fold would
    # count it as a new item, and this state would differ from the projector's.
    scraped = named_keys(entries) - state.item_keys
    if scraped and manifest.key_segments:
        state.item_keys |= read_keys(store.key_segment_paths(manifest), scraped)


def stored_tasks(
    store: Store, manifest: Manifest, state: State, wanted: TaskFilter
) -> dict[str, TaskState]:
    """The stored tasks ``wanted`` matches that are not in ``state`` (memory), latest row
    each: the rows matching it are found with the filter pushed down into the Parquet
    reads (columns ``task_id``, ``status``, ``site``), then only those tasks are decoded,
    their latest rows read again (a newer row may no longer match)."""
    paths = store.task_segment_paths(manifest)
    if not paths or wanted.task_ids == frozenset():
        return {}
    candidates: set[str] = set()
    for path in paths:
        candidates.update(_matching_ids(path, wanted))
    candidates -= state.tasks.keys()
    if not candidates:
        return {}
    found = read_tasks(paths, candidates)
    return {t: task for t, task in found.items() if wanted.matches(task)}


def _matching_ids(path: Path, wanted: TaskFilter) -> list[str]:
    filters: list[tuple[str, str, object]] = []
    if wanted.task_ids is not None:
        filters.append(("task_id", "in", sorted(wanted.task_ids)))
    if wanted.statuses is not None:
        filters.append(("status", "in", sorted(wanted.statuses)))
    if wanted.site is not None:
        filters.append(("site", "==", wanted.site))
    try:
        table: pa.Table = pq.read_table(path, columns=["task_id"], filters=filters or None)
    except (OSError, pa.ArrowException) as exc:
        raise CrawlogError(f"task segment {path} cannot be read ({exc})") from None
    ids: list[str] = table.column("task_id").to_pylist()
    return ids


async def task_history(
    redis: aioredis.Redis,
    store: Store,
    task_ids: Collection[str],
    *,
    page_url: str | None = None,
) -> list[LogEntry]:
    """Every event of ``task_ids``, of their sites and of the job, in log order.

    With ``page_url``, also every page fetch of that URL by another task (a redirect
    from another task's URL lands on it too).
    """
    wanted = set(task_ids)

    async def read(manifest: Manifest) -> list[LogEntry]:
        return await anyio.to_thread.run_sync(_archived_history, store, manifest, wanted, page_url)

    def add_tail(found: list[LogEntry], entries: list[LogEntry]) -> list[LogEntry]:
        return found + [e for e in entries if _about(e.event, wanted, None, page_url)]

    entries = await _with_tail(redis, store, read, add_tail)
    # Site events are kept for the tasks' own sites only; a task's site is in its enqueue.
    sites = {e.event.site for e in entries if isinstance(e.event, TaskEnqueued)}
    return [e for e in entries if not isinstance(e.event, SiteEvent) or e.event.site in sites]


_ENTRY_ENDS = (
    RetryScheduled,
    TaskReleased,
    TaskDone,
    TaskFailed,
    TaskParked,
    TaskResumed,
    TaskRetried,
)
"""Events after which the task's queue entry is gone (acked) or a new one is made: the next
claim's delivery count starts again at 1."""


def fetch_attempts(task_id: str, entries: Iterable[LogEntry]) -> list[FetchAttempt]:
    """Every fetch attempt of the task the log knows of, in log order.

    A fetch is written with the step that follows it, so a worker killed (or stalled past
    its lease) while fetching leaves no event of that fetch; the request may have reached
    the site all the same. Such a delivery shows afterwards: the lease is taken over
    (``TaskReclaimed``, or an abort, counting the deliveries of the old entry), or a
    restarted worker takes its own pending entry back (a claim whose delivery count is
    above the last one the log recorded). Each such delivery is an ``interrupted`` attempt,
    at the page after the last checkpoint. Fetches of the task's URL by other tasks (after
    a redirect) are listed too.
    """
    attempts: list[FetchAttempt] = []
    next_page, attempt, holder = 1, 1, ""
    seen = reported = 0  # of the current queue entry: deliveries claimed / shown cut short

    def cut_short(count: int, actor: str, stream_id: str, why: str) -> None:
        for _ in range(max(count, 0)):
            attempts.append(
                FetchAttempt(
                    outcome="interrupted",
                    actor=actor,
                    attempt=attempt,
                    page=next_page,
                    stream_id=stream_id,
                    result=why,
                    task_id=task_id,
                )
            )

    for entry in entries:
        event = entry.event
        if not isinstance(event, TaskEvent):
            continue
        if event.task_id != task_id:
            if isinstance(event, PageFetched):
                attempts.append(_fetched(event, entry.stream_id))
            continue
        match event:
            case TaskClaimed():
                if event.deliveries <= seen:
                    seen = reported = 0  # a new entry: its deliveries count from 1 again
                attempt = event.attempt
                why = f"taken back by {event.actor} (delivery {event.deliveries})"
                cut_short(
                    event.deliveries - 1 - reported, holder or event.actor, entry.stream_id, why
                )
                seen, reported = event.deliveries, event.deliveries - 1
                holder = event.actor
            case TaskReclaimed() | TaskAborted():
                owner = (
                    event.previous_owner
                    if isinstance(event, TaskReclaimed)
                    else (event.owners[-1] if event.owners else holder)
                )
                why = f"lease taken over by {event.actor}"
                cut_short(
                    event.deliveries - 1 - reported, owner or holder or "?", entry.stream_id, why
                )
                seen = reported = 0
                holder = ""
            case PageFetched():
                attempts.append(_fetched(event, entry.stream_id))
            case CheckpointSaved():
                next_page = event.cursor.page + 1
            case _ if isinstance(event, _ENTRY_ENDS):
                seen = reported = 0
                holder = ""
                if isinstance(event, RetryScheduled):
                    attempt = event.attempt + 1
                elif isinstance(event, TaskReleased):
                    attempt = event.attempt
    return attempts


def _fetched(event: PageFetched, stream_id: str) -> FetchAttempt:
    return FetchAttempt(
        outcome="fetched",
        actor=event.actor,
        attempt=event.attempt,
        page=event.page,
        stream_id=stream_id,
        result=event.error or f"HTTP {event.status}",
        task_id=event.task_id,
    )


def _about(
    event: AnyEvent, task_ids: Collection[str], sites: Collection[str] | None, page_url: str | None
) -> bool:
    if isinstance(event, TaskEvent):
        if event.task_id in task_ids:
            return True
        return isinstance(event, PageFetched) and event.url == page_url
    if isinstance(event, SiteEvent):
        return sites is None or event.site in sites
    return True  # a job event


def _archived_history(
    store: Store, manifest: Manifest, task_ids: Collection[str], page_url: str | None
) -> list[LogEntry]:
    """The archived rows about the tasks, or their sites, or the job: the row groups
    their segments' indexes name, and every segment without an index (DuckDB, filtered)."""
    if not task_ids:
        return []
    rows: list[tuple[str, bytes]] = []
    paths: list[str] = []
    for segment in manifest.segments:
        path = store.archive / segment.name
        indexed = indexed_history(path, segment.events, task_ids, page_url)
        if indexed is None:
            paths.append(str(path))
        else:
            rows += indexed
    if paths:
        rows += _scanned_rows(store, paths, task_ids, page_url)
    entries = [LogEntry(stream_id, decode(payload), payload) for stream_id, payload in rows]
    entries.sort(key=lambda e: stream_id_key(e.stream_id))
    return entries


def _scanned_rows(
    store: Store, paths: list[str], task_ids: Collection[str], page_url: str | None
) -> list[tuple[str, bytes]]:
    tasks = ", ".join("?" for _ in task_ids)
    sql = (
        "SELECT stream_id, payload FROM read_parquet(?) "
        f"WHERE task_id IN ({tasks}) OR task_id IS NULL"
    )
    params: list[object] = [paths, *task_ids]
    if page_url is not None:
        sql += " OR (type = 'task.page' AND url = ?)"
        params.append(page_url)
    import duckdb  # here: a job whose segments are all indexed never needs DuckDB

    con = duckdb.connect(":memory:")
    try:
        rows = con.execute(sql, params).fetchall()
    except duckdb.Error as exc:
        raise CrawlogError(f"reading the archive of job {store.job!r} failed: {exc}") from None
    finally:
        con.close()
    return rows


async def _with_tail(
    redis: aioredis.Redis,
    store: Store,
    read: Callable[[Manifest], Awaitable[T]],
    add_tail: Callable[[T, list[LogEntry]], T],
) -> T:
    """``read`` what a manifest commits, then ``add_tail`` the stream after its position."""
    log = EventLog(redis, store.job)
    for _ in range(READ_ATTEMPTS):
        manifest = store.read_manifest()
        try:
            committed = await read(manifest)
        except CrawlogError:
            # A file the manifest names was replaced by a newer commit (a compaction).
            if store.read_manifest() == manifest:
                raise
            continue
        tail = await _tail(log, manifest.position)
        if await _tail_was_whole(log, store, manifest):
            return add_tail(committed, tail)
    raise CrawlogError(
        f"the projector of job {store.job!r} trimmed the log while it was read "
        f"{READ_ATTEMPTS} times over; run the command again"
    )


async def log_entries(redis: aioredis.Redis, store: Store) -> list[LogEntry]:
    """The job's whole log now: what the archive commits, then the stream after it (every
    entry decoded: ``crawlog changes``, a recrawl's seeding, the revisit line)."""
    log = EventLog(redis, store.job)
    for _ in range(READ_ATTEMPTS):
        manifest = store.read_manifest()
        archived = await anyio.to_thread.run_sync(_archived, store, manifest)
        tail = await _tail(log, manifest.position)
        if await _tail_was_whole(log, store, manifest):
            return archived + tail
    raise CrawlogError(
        f"the projector of job {store.job!r} trimmed the log while it was read "
        f"{READ_ATTEMPTS} times over; run the command again"
    )


def _archived(store: Store, manifest: Manifest) -> list[LogEntry]:
    return list(archived_entries(store, manifest))


async def _tail(log: EventLog, after: str) -> list[LogEntry]:
    entries: list[LogEntry] = []
    position = after
    while True:
        try:
            batch = await log.read_after(position, TAIL_BATCH)
        except PoisonEntry as poison:
            position = poison.entry_id  # dead-lettered by the projector; folded by nobody
            continue
        if not batch:
            return entries
        entries += batch
        position = batch[-1].stream_id


async def _tail_was_whole(log: EventLog, store: Store, manifest: Manifest) -> bool:
    """Whether nothing after the manifest's position had been trimmed when the tail was read."""
    if manifest.position == START or store.read_manifest() == manifest:
        # Trimming never passes the committed position, which has not moved.
        return True
    first = await log.first_id()
    # Trimming removes a prefix: an entry at or before the position still there means
    # nothing after it was removed.
    return first is not None and stream_id_key(first) <= stream_id_key(manifest.position)
