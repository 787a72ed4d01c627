"""Replay rebuilds the state from archive + stream tail, checks it, and rebuilds the index."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest
import redis.asyncio as aioredis

from eventlog import EventLog, TaskQueue
from projector._fold import fold
from projector._projector import Projector
from projector._replay import differences, rebuild_checkpoint_index, replay, verify
from projector._state import canonical
from projector._store import Store
from tests.eventlog.helpers import checkpoint, done, fetched, task
from tests.projector.test_projector import task_events

pytestmark = pytest.mark.anyio


async def test_replay_folds_the_archive_then_the_stream_tail(
    log: EventLog, make_projector: Callable[..., Projector], data_dir: Path, job: str
) -> None:
    await log.append_many([e for n in range(20) for e in task_events(n)])
    async with make_projector() as projector:
        await projector.catch_up()
    await log.append_many(task_events(100))  # not projected yet: only in the stream
    replayed = await replay(log.redis, Store(data_dir, job))
    assert canonical(replayed) == canonical(fold(await log.read_range()))
    assert replayed.tasks["t100"].status == "done"


async def test_verify_finds_a_live_state_that_differs_from_the_replay(
    log: EventLog, make_projector: Callable[..., Projector], data_dir: Path, job: str
) -> None:
    await log.append_many([e for n in range(5) for e in task_events(n)])
    async with make_projector() as projector:
        await projector.catch_up()
    store = Store(data_dir, job)
    assert verify(store) == (projector.state.position, [])

    manifest = store.read_manifest()
    path = store.snapshots / str(manifest.snapshot)
    # The whole state at the snapshot, its stored tasks included: a task the snapshot
    # holds is newer than its row in the task store.
    tampered = store.read_snapshot(manifest)
    tampered.tasks["t3"].status = "failed"
    path.write_bytes(canonical(tampered))
    _, found = verify(store)
    assert "state.tasks.t3.status: live='failed' replay='done'" in found


def test_differences_are_listed_up_to_a_limit() -> None:
    a, b = fold([]), fold([])
    a.job.pages, a.job.items, a.job.bytes = 1, 2, 3
    assert differences(a, b, limit=2) == [
        "state.job.bytes: live=3 replay=0",
        "state.job.items: live=2 replay=0",
    ]
    assert msgspec.json.encode(differences(a, a)) == b"[]"


async def test_the_checkpoint_index_is_rebuilt_from_the_log(
    make_queue: Callable[..., TaskQueue],
    make_projector: Callable[..., Projector],
    redis_client: aioredis.Redis,
    job: str,
) -> None:
    queue = make_queue("w1")
    await queue.enqueue([task(n) for n in range(3)], actor="seed")
    leases = await queue.claim(3)
    for lease in leases:
        await queue.checkpoint(
            lease, checkpoint(lease.task.task_id, 1), before=[fetched(lease.task.task_id, 1)]
        )
    await queue.finish(leases[0], done(leases[0].task.task_id))
    pointers = await queue.checkpoint_ids([lease.task.task_id for lease in leases])
    assert len(pointers) == 2

    async with make_projector() as projector:
        await projector.catch_up()
    await redis_client.delete(queue.keys.ckpt)
    assert await rebuild_checkpoint_index(redis_client, job, projector.state) == 2
    assert await queue.checkpoint_ids([lease.task.task_id for lease in leases]) == pointers

    # A checkpoint written after the replay is newer: the rebuild never moves it back.
    newer = await queue.checkpoint(leases[1], checkpoint(leases[1].task.task_id, 2))
    assert await rebuild_checkpoint_index(redis_client, job, projector.state) == 0
    assert (await queue.checkpoint_ids([leases[1].task.task_id]))[leases[1].task.task_id] == newer
