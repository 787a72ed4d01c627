"""Replay: the whole state rebuilt from the archive and the stream tail, and compared.

The live state (the projector's snapshots) was built incrementally, across restarts; the
replayed one is folded from scratch. Invariant 2 says they are equal bit for bit, and
``verify`` checks exactly that, at the snapshot's position.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec
import redis.asyncio as aioredis

from eventlog import (
    AnyEvent,
    EventLog,
    JobKeys,
    LogEntry,
    PoisonEntry,
    rebuild_checkpoints,
    stream_id_key,
)
from projector._archive import read_entries
from projector._fold import apply
from projector._state import TERMINAL, State, canonical
from projector._store import Manifest, Store

READ_BATCH = 10_000
MAX_DIFFERENCES = 20


def archived_entries(
    store: Store, manifest: Manifest, until: str | None = None
) -> Iterator[LogEntry]:
    """Every archived entry in log order, up to and including stream ID ``until``."""
    limit = stream_id_key(until) if until is not None else None
    for path in store.segment_paths(manifest):
        for entry in read_entries(path):
            if limit is not None and stream_id_key(entry.stream_id) > limit:
                return
            yield entry


def replay_archive(store: Store, manifest: Manifest, until: str | None = None) -> State:
    """The state folded from scratch out of the archive alone."""
    state = State()
    for entry in archived_entries(store, manifest, until):
        apply(state, entry)
    return state


async def replay(redis: aioredis.Redis, store: Store) -> State:
    """The state of the whole log: the archive, then the stream after the committed position."""
    manifest = store.read_manifest()
    state = replay_archive(store, manifest)
    log = EventLog(redis, store.job)
    position = manifest.position
    while True:
        try:
            entries = await log.read_after(position, READ_BATCH)
        except PoisonEntry as poison:
            position = poison.entry_id  # the projector dead-letters it; replay skips it too
            continue
        if not entries:
            return state
        for entry in entries:
            apply(state, entry)
        position = entries[-1].stream_id


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


def verify(store: Store) -> tuple[str, list[str]]:
    """Replay the archive up to the live snapshot and compare; (position, differences)."""
    manifest = store.read_manifest()
    live = store.read_snapshot(manifest)
    return live.position, differences(live, replay_archive(store, manifest, live.position))


async def rebuild_checkpoint_index(redis: aioredis.Redis, job: str, state: State) -> int:
    """Point ``ckpt`` at every unfinished task's last checkpoint; returns entries changed."""
    pointers: list[tuple[str, str | None]] = []
    for task in state.tasks.values():
        if task.status in TERMINAL:
            pointers.append((task.task_id, None))
        elif task.checkpoint_id is not None:
            pointers.append((task.task_id, task.checkpoint_id))
    return await rebuild_checkpoints(redis, JobKeys(job), pointers)


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
