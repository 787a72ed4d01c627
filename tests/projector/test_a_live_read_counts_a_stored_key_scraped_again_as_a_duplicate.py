"""The readers of the live part (``retry``, ``status``, the progress) see item keys as the
projector does: a key that left memory for the key store and is scraped again in the
stream's tail is a duplicate, not a new item, and the live part's job figures are those of
a fold of the whole log."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from eventlog import EventLog, ItemScraped, TaskClaimed, TaskDone, TaskEnqueued
from projector import Projector, Store, TaskFilter, current_tasks, fold

pytestmark = pytest.mark.anyio
SITE = "http://site.test"
TASKS = 300


def task(n: int, *keys: str) -> list[TaskEnqueued | TaskClaimed | ItemScraped | TaskDone]:
    t = f"t{n}"
    return [
        TaskEnqueued(actor="seed", task_id=t, url=f"{SITE}/{t}", site=SITE),
        TaskClaimed(actor="w1", task_id=t, attempt=1),
        *(ItemScraped(actor="w1", task_id=t, key=key) for key in keys),
        TaskDone(actor="w1", task_id=t, attempt=1),
    ]


async def test_a_stored_key_scraped_again_in_the_tail_is_a_duplicate_for_a_live_read(
    redis_client: aioredis.Redis,
    log: EventLog,
    make_projector: Callable[..., Projector],
    job: str,
    data_dir: Path,
) -> None:
    first = [e for n in range(TASKS) for e in task(n, f"{SITE}/item/{n}")]
    await log.append_many(first)
    async with make_projector(commit_events=100, snapshot_interval_s=0) as projector:
        await projector.catch_up()
    store = Store(data_dir, job)
    assert store.read_manifest().key_segments, "the keys never left memory"

    # Not projected: the stream's tail, scraping again keys the store holds, and a new one.
    again = task(TASKS, f"{SITE}/item/0", f"{SITE}/item/1", f"{SITE}/item/new")
    await log.append_many(again)

    state, tasks = await current_tasks(
        redis_client, store, TaskFilter(task_ids=frozenset({f"t{TASKS}"}))
    )
    whole = fold(await log.read_range())
    assert (whole.job.items, whole.job.duplicate_items) == (TASKS + 1, 2)
    assert (state.job.items, state.job.duplicate_items) == (TASKS + 1, 2)
    assert tasks[f"t{TASKS}"] == whole.tasks[f"t{TASKS}"]
