"""A job projected before the key store (its snapshot holds every item key, its manifest
names no key segment) is projected on exactly: the snapshot's keys leave memory at the
next snapshot, and a key scraped again after is still a duplicate."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest

from eventlog import EventLog, ItemScraped, TaskClaimed, TaskDone, TaskEnqueued
from projector._committed import read_committed
from projector._fold import fold
from projector._projector import Projector
from projector._replay import verify
from projector._state import canonical
from projector._store import MANIFEST, Store

pytestmark = pytest.mark.anyio
SITE = "http://site.test"


def scraping(n: int, *keys: int) -> list[TaskEnqueued | TaskClaimed | ItemScraped | TaskDone]:
    t = f"t{n}"
    return [
        TaskEnqueued(actor="seed", task_id=t, url=f"{SITE}/{t}", site=SITE),
        TaskClaimed(actor="w1", task_id=t, attempt=1),
        *(ItemScraped(actor="w1", task_id=t, key=f"{SITE}/item/{k}") for k in keys),
        TaskDone(actor="w1", task_id=t, attempt=1),
    ]


async def test_a_job_whose_snapshot_holds_its_item_keys_counts_each_key_once(
    log: EventLog, make_projector: Callable[..., Projector], data_dir: Path, job: str
) -> None:
    await log.append_many([e for n in range(100) for e in scraping(n, n)])
    async with make_projector() as projector:
        await projector.catch_up(snapshot=True)
    store = Store(data_dir, job)
    manifest = store.read_manifest()
    assert manifest.key_segments
    # As the projector wrote it before the key store: every key in the snapshot.
    whole = store.read_snapshot(manifest, stored=False)
    whole.item_keys |= store.read_snapshot(manifest).item_keys
    (store.snapshots / str(manifest.snapshot)).write_bytes(canonical(whole))
    for path in store.key_segment_paths(manifest):
        os.unlink(path)
    old = msgspec.structs.replace(manifest, key_segments=())
    (store.root / MANIFEST).write_bytes(msgspec.json.encode(old))

    await log.append_many([e for n in range(100, 150) for e in scraping(n, n, n - 100)])
    async with make_projector(snapshot_interval_s=0) as projector:
        await projector.catch_up(snapshot=True)
        assert not projector.state.item_keys
    manifest = store.read_manifest()
    assert sum(s.keys for s in manifest.key_segments) == 150
    _, state = read_committed(store)
    assert canonical(state) == canonical(fold(await log.read_range()))
    assert (state.job.items, state.job.duplicate_items) == (150, 50)
    assert verify(store) == (state.position, [])
