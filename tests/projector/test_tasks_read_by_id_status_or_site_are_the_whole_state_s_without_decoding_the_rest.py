"""``current_tasks`` reads only the tasks asked for (by id, status, site) from the task
store, and they are exactly those of the whole state now (``current_state``)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest

from eventlog import (
    AnyEvent,
    EventLog,
    RetryScheduled,
    TaskClaimed,
    TaskEnqueued,
    TaskFailed,
    TaskRetried,
)
from projector._history import (
    TaskFilter,
    bring_back_named,
    current_state,
    current_tasks,
    read_live,
)
from projector._projector import Projector
from projector._state import canonical
from projector._store import Store
from tests.projector.strategies import as_entries
from tests.projector.test_projector import SITE, task_events

pytestmark = pytest.mark.anyio
OTHER = "http://other.test"


def failed(task_id: str, site: str, attempt: int = 1) -> list[AnyEvent]:
    return [
        TaskEnqueued(actor="seed", task_id=task_id, url=f"{site}/{task_id}", site=site),
        TaskClaimed(actor="w1", task_id=task_id, attempt=attempt),
        TaskFailed(actor="w1", task_id=task_id, attempt=attempt, reason="http 500"),
    ]


async def test_tasks_read_by_filter_are_those_of_the_whole_state_now(
    log: EventLog,
    make_projector: Callable[..., Projector],
    data_dir: Path,
    job: str,
    tmp_path: Path,
) -> None:
    # Ended tasks of two sites, stored by the snapshot.
    await log.append_many([e for n in range(40) for e in task_events(n)])
    await log.append_many([e for n in range(5) for e in failed(f"f{n}", OTHER)])
    async with make_projector() as projector:
        await projector.catch_up(snapshot=True)
    # Archived after the snapshot: a stored task retried (back in the live part), and one
    # failed again.
    await log.append_many(
        [
            TaskRetried(actor="operator", task_id="t3", reason="again"),
            TaskRetried(actor="operator", task_id="f1", reason="again"),
            TaskClaimed(actor="w1", task_id="f1", attempt=2),
        ]
    )
    async with make_projector(snapshot_interval_s=3600) as projector:
        await projector.catch_up()
        # As committed now, before the projector's stop snapshots everything again.
        copy = tmp_path / "copy"
        shutil.copytree(data_dir, copy)
    store = Store(copy, job)
    manifest = store.read_manifest()
    assert manifest.task_segments and manifest.position != manifest.snapshot_position
    # Only in the stream: f1 fails again, f2 is retried, a new task fails.
    await log.append_many(
        [
            TaskFailed(actor="w1", task_id="f1", attempt=2, reason="http 500"),
            TaskRetried(actor="operator", task_id="f2", reason="again"),
            *failed("g0", OTHER),
        ]
    )

    whole = await current_state(log.redis, store)
    filters = [
        TaskFilter(task_ids=frozenset({"t3"})),
        TaskFilter(task_ids=frozenset({"t5", "f1", "nope"})),
        TaskFilter(statuses=frozenset({"failed"})),
        TaskFilter(statuses=frozenset({"failed", "aborted"}), site=OTHER),
        TaskFilter(statuses=frozenset({"done"})),
        TaskFilter(site=OTHER),
        TaskFilter(task_ids=frozenset()),
    ]
    for wanted in filters:
        live, tasks = await current_tasks(log.redis, store, wanted)
        expected = {t: task for t, task in whole.tasks.items() if wanted.matches(task)}
        assert sorted(tasks) == sorted(expected), wanted
        assert all(canonical_task(tasks[t]) == canonical_task(expected[t]) for t in tasks)
        assert canonical(live.job) == canonical(whole.job)
        assert live.sites == whole.sites
    _, tasks = await current_tasks(log.redis, store, TaskFilter(statuses=frozenset({"failed"})))
    assert sorted(tasks) == ["f0", "f1", "f3", "f4", "g0"]
    live, _ = await current_tasks(log.redis, store, TaskFilter(task_ids=frozenset()))
    # The live part holds the unfinished tasks and those the later events named, not the
    # tens of ended ones left in the task store.
    assert sorted(live.tasks) == ["f1", "f2", "g0", "t3"]


def canonical_task(task: object) -> bytes:
    return msgspec.msgpack.Encoder(order="deterministic").encode(task)


async def test_a_live_view_starts_from_the_live_part_and_the_stored_retry_sums(
    log: EventLog, make_projector: Callable[..., Projector], data_dir: Path, job: str
) -> None:
    events: list[AnyEvent] = []
    for n in range(12):
        events += task_events(n)[:2]
        if n % 3 == 0:  # a retry before it ends, counted per task
            events += [
                RetryScheduled(actor="w1", task_id=f"t{n}", attempt=1, delay_s=0, reason="503"),
                TaskClaimed(actor="w1", task_id=f"t{n}", attempt=2),
            ]
        events += task_events(n)[2:]
    events += [TaskEnqueued(actor="seed", task_id="live", url="http://site.test/l", site=SITE)]
    await log.append_many(events)
    async with make_projector() as projector:
        await projector.catch_up(snapshot=True)
    store = Store(data_dir, job)
    manifest, live, stored = read_live(store)
    whole = store.read_snapshot(manifest)
    assert sorted(live.tasks) == ["live"]
    assert stored == {SITE: (4, 0)}
    assert stored[SITE][0] == sum(t.retries for t in whole.tasks.values())

    # A stored task the tail names is read back before the tail is folded.
    tail = as_entries([TaskRetried(actor="operator", task_id="t3", reason="again")], 10**6)
    bring_back_named(store, manifest, live, tail)
    assert live.tasks["t3"] == whole.tasks["t3"]
