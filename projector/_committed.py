"""The projector's read side: the state a manifest commits, read from the files without the
projector's lock, and the position the projector published.

The projector process (``_projector``) folds from here too, when it starts and when it
brings stored tasks back; the operator's readers (``_views``, ``_history``, ``_report_sql``)
use only this module, never the process. Readers and the running projector meet only
in the files: a reader that finds a file the committer has just replaced reads the newer
manifest again.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from typing import TypeVar

import msgspec
import redis.asyncio as aioredis

from eventlog import (
    CrawlogError,
    JobKeys,
    LogEntry,
    read_projector_position,
    stream_id_key,
    wait_for_projector_position,
)
from projector._archive import read_entries
from projector._fetches import FetchTracker
from projector._fold import apply_all, fold
from projector._keystore import StoredKeys, named_keys
from projector._state import State, TaskState
from projector._store import Manifest, Store
from projector._taskstore import StoredTasks, iter_task_ids, named_task_ids

LOAD_ATTEMPTS = 3
FOLD_BATCH = 5_000


def bring_back(
    store: Store,
    manifest: Manifest,
    stored: StoredTasks,
    state: State,
    entries: Collection[LogEntry],
    keys: StoredKeys | None = None,
) -> None:
    """Load the stored tasks ``entries`` name back into ``state``, and (with ``keys``) the
    stored item keys they scrape, before they are folded."""
    missing = stored.missing(state.tasks, named_tasks(entries))
    if missing:
        state.tasks.update(load_stored(store, manifest, stored, missing))
    if keys is not None:
        scraped = keys.missing(state.item_keys, named_keys(entries))
        if scraped:
            state.item_keys |= _retrying_manifest(
                store, manifest, lambda m: keys.load(scraped, store.key_segment_paths(m))
            )


def named_tasks(entries: Iterable[LogEntry]) -> set[str]:
    """The task ids ``entries`` name, each once (``named_task_ids``)."""
    return named_task_ids([entry.event for entry in entries])


def load_stored(
    store: Store, manifest: Manifest, stored: StoredTasks, task_ids: set[str]
) -> dict[str, TaskState]:
    """The stored tasks among ``task_ids``, read from the committed task segments.

    The committer's thread may compact them meanwhile (and delete what ``manifest`` names):
    then the newer manifest on disk names the merged segment, which holds the same rows.
    """
    return _retrying_manifest(
        store, manifest, lambda m: stored.load(task_ids, store.task_segment_paths(m))
    )


_T = TypeVar("_T")


def _retrying_manifest(store: Store, manifest: Manifest, read: Callable[[Manifest], _T]) -> _T:
    """``read(manifest)``, or, if the committer's merge deleted a file it names meanwhile,
    ``read`` of the newer manifest on disk (which names the merged file, same rows)."""
    for attempt in range(LOAD_ATTEMPTS):
        try:
            return read(manifest)
        except CrawlogError:
            if attempt == LOAD_ATTEMPTS - 1:
                raise
            manifest = store.read_manifest()
    raise AssertionError("unreachable")


def restored_fetches(store: Store, manifest: Manifest) -> FetchTracker | None:
    """The fetch tracker at the manifest's snapshot, to go on from as ``live_state`` folds
    the archive after it; None if that snapshot has none (written before them, or
    unreadable): the tracker must then be rebuilt from the whole archive."""
    if manifest.snapshot is None:
        return FetchTracker()  # ``live_state`` folds, and so observes, the whole archive
    data = store.read_snapshot_fetches(manifest)
    if data is None:
        return None
    try:
        return FetchTracker.restore(data)
    except msgspec.DecodeError:
        return None  # damaged: the archive gives the same tracker back


def live_state(
    store: Store,
    manifest: Manifest,
    observe: Callable[[State, list[LogEntry]], None] | None = None,
) -> tuple[State, StoredTasks, StoredKeys]:
    """The live part of the state a manifest commits, and what is in its task and key
    stores: the snapshot's live part, then every archived event after it, folded with the
    stored tasks they name and the stored item keys they scrape brought back (as the
    projector folds). ``observe`` sees each batch after its tasks are back, before it is
    folded (as the projector's fetch tracker does)."""
    state = store.read_snapshot(manifest, stored=False)
    stored = StoredTasks()
    stored.hashes.update(map(hash, iter_task_ids(store.task_segment_paths(manifest))))
    keys = StoredKeys()
    keys.rebuild(store.key_segment_paths(manifest))
    after = stream_id_key(state.position)
    paths = store.segment_paths(manifest)
    batch: list[LogEntry] = []
    for segment, path in zip(manifest.segments, paths, strict=True):
        if stream_id_key(segment.last_id) <= after:
            continue
        for entry in read_entries(path, after=state.position):
            batch.append(entry)
            if len(batch) >= FOLD_BATCH:
                _fold_bringing_back(store, manifest, stored, keys, state, batch, observe)
                batch = []
    _fold_bringing_back(store, manifest, stored, keys, state, batch, observe)
    return state, stored, keys


def _fold_bringing_back(
    store: Store,
    manifest: Manifest,
    stored: StoredTasks,
    keys: StoredKeys,
    state: State,
    batch: list[LogEntry],
    observe: Callable[[State, list[LogEntry]], None] | None,
) -> None:
    bring_back(store, manifest, stored, state, batch, keys)
    if observe is not None:
        observe(state, batch)
    apply_all(state, batch)


def committed_state(store: Store, manifest: Manifest) -> State:
    """The state a manifest commits: its snapshot, then every archived event after it."""
    state = store.read_snapshot(manifest)
    after = stream_id_key(state.position)
    paths = store.segment_paths(manifest)
    for segment, path in zip(manifest.segments, paths, strict=True):
        if stream_id_key(segment.last_id) > after:
            fold(read_entries(path, after=state.position), state)
    return state


def _live_part(store: Store, manifest: Manifest) -> State:
    """``live_state``'s state, without reading the task and key stores when no archived
    event follows the snapshot (a crawl's summary, after its projector's last commit): they
    are read only to bring back what later events name, and Arrow, which reads them, cost a
    small crawl's own process more than the rest of its summary."""
    state = store.read_snapshot(manifest, stored=False)
    after = stream_id_key(state.position)
    if all(stream_id_key(segment.last_id) <= after for segment in manifest.segments):
        return state
    return live_state(store, manifest)[0]


READ_ATTEMPTS = 3


def read_committed(store: Store, *, tasks: bool = True) -> tuple[Manifest, State]:
    """The committed manifest and its state, read without the projector's lock.

    Without ``tasks``, the state's live part only (as the projector holds it): the job,
    sites and anomalies are the whole state's, ``tasks`` lacks those in the task store,
    which are then not read at all.

    A projector running meanwhile may commit and delete the files an older manifest names
    (a replaced snapshot, compacted segments): then read the newer manifest again.
    """
    for attempt in range(READ_ATTEMPTS):
        manifest = store.read_manifest()
        try:
            if not tasks:
                return manifest, _live_part(store, manifest)
            return manifest, committed_state(store, manifest)
        except CrawlogError:
            if attempt == READ_ATTEMPTS - 1 or store.read_manifest() == manifest:
                raise
    raise AssertionError("unreachable")


async def wait_for_position(
    redis: aioredis.Redis, job: str, goal: str, timeout_s: float
) -> str | None:
    """Wait until the job's projector has committed stream ID ``goal``.

    Returns the committed position then, or None if ``timeout_s`` passed first.
    """
    return await wait_for_projector_position(redis, JobKeys(job), goal, timeout_s)


async def committed_position(redis: aioredis.Redis, job: str) -> str | None:
    """The position the job's projector last published, if any."""
    return await read_projector_position(redis, JobKeys(job))
