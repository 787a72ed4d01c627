"""The projector's memory holds the live tasks, not the job: terminal ones are in the task
store, and every reader still sees them, a retried one brought back into memory."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest

from eventlog import EventLog, TaskClaimed, TaskDone, TaskEnqueued, TaskFailed, TaskRetried
from projector._committed import read_committed
from projector._fold import fold
from projector._projector import Projector
from projector._state import TERMINAL, canonical
from projector._store import Store
from projector._summary import Summary, summarize
from tests.projector.test_projector import task_events

pytestmark = pytest.mark.anyio
SITE = "http://site.test"
TASKS = 20_000
LIVE = 100


def of_state(summary: Summary | None) -> Summary | None:
    """The summary but its figures over the log's fetches, which no state holds."""
    return None if summary is None else msgspec.structs.replace(summary, fetches=None)


async def test_terminal_tasks_leave_memory_and_readers_still_see_them(
    log: EventLog, make_projector: Callable[..., Projector], data_dir: Path, job: str
) -> None:
    events = [e for n in range(TASKS) for e in task_events(n)]
    events += [
        TaskEnqueued(actor="seed", task_id=f"live{n}", url=f"{SITE}/l{n}", site=SITE)
        for n in range(LIVE)
    ]
    events += [
        TaskEnqueued(actor="seed", task_id="bad", url=f"{SITE}/bad", site=SITE),
        TaskClaimed(actor="w1", task_id="bad", attempt=1),
        TaskFailed(actor="w1", task_id="bad", attempt=1, reason="http 500"),
    ]
    for start in range(0, len(events), 5_000):
        await log.append_many(events[start : start + 5_000])
    store = Store(data_dir, job)
    async with make_projector(commit_events=5_000, snapshot_interval_s=0) as projector:
        await projector.catch_up()
        assert sorted(projector.state.tasks) == sorted(f"live{n}" for n in range(LIVE))
        assert projector.state.job.tasks == {
            "pending": LIVE,
            "running": 0,
            "done": TASKS,
            "failed": 1,
        }

        # An operator retries a task that left memory long ago: it comes back, pending.
        await log.append_many([TaskRetried(actor="operator", task_id="t7", reason="again")])
        await projector.catch_up()
        assert projector.state.tasks["t7"].status == "pending"
        assert projector.state.tasks["t7"].attempt == 2
        assert all(t.status not in TERMINAL for t in projector.state.tasks.values())

    manifest, state = read_committed(store)
    logged = await log.read_range()
    assert canonical(state) == canonical(fold(logged))
    assert len(state.tasks) == TASKS + LIVE + 1
    # The summary the projector kept, with the tasks out of memory, is a whole state's.
    assert of_state(manifest.summary) == summarize(state)
    assert manifest.summary is not None and manifest.summary.failure_reasons == {"http 500": 1}
    # What a caller needing only the totals reads: the live part, no stored task decoded.
    _, live = read_committed(store, tasks=False)
    assert canonical(live.job) == canonical(state.job)
    assert sorted(live.tasks) == sorted([*(f"live{n}" for n in range(LIVE)), "t7"])


async def test_a_restarted_projector_summarizes_the_stored_tasks_as_before(
    log: EventLog, make_projector: Callable[..., Projector], data_dir: Path, job: str
) -> None:
    await log.append_many(
        [
            TaskEnqueued(actor="seed", task_id="bad", url=f"{SITE}/bad", site=SITE),
            TaskClaimed(actor="w1", task_id="bad", attempt=1),
            TaskFailed(actor="w1", task_id="bad", attempt=1, reason="http 500"),
        ]
    )
    async with make_projector(snapshot_interval_s=0) as projector:
        await projector.catch_up()
        assert "bad" not in projector.state.tasks
    await log.append_many([e for n in range(3) for e in task_events(n)])
    async with make_projector(snapshot_interval_s=0) as projector:
        await projector.catch_up()
    manifest, state = read_committed(Store(data_dir, job))
    assert of_state(manifest.summary) == summarize(state)
    assert manifest.summary is not None and manifest.summary.failure_reasons == {"http 500": 1}


async def test_a_restarted_projector_summarizes_a_task_stored_twice_by_its_latest_row(
    log: EventLog, make_projector: Callable[..., Projector], data_dir: Path, job: str
) -> None:
    failed = [
        TaskEnqueued(actor="seed", task_id="bad", url=f"{SITE}/bad", site=SITE),
        TaskClaimed(actor="w1", task_id="bad", attempt=1),
        TaskFailed(actor="w1", task_id="bad", attempt=1, reason="http 500"),
    ]
    # Failed and stored; retried, done and stored again (its row replaces the first).
    for batch in (
        failed,
        [
            TaskRetried(actor="operator", task_id="bad", reason="again"),
            TaskClaimed(actor="w1", task_id="bad", attempt=2),
            TaskDone(actor="w1", task_id="bad", attempt=2),
        ],
    ):
        await log.append_many(batch)
        async with make_projector(snapshot_interval_s=0) as projector:
            await projector.catch_up()
            assert "bad" not in projector.state.tasks
    store = Store(data_dir, job)
    assert [s.replacing for s in store.read_manifest().task_segments] == [0, 1]
    await log.append_many([e for n in range(3) for e in task_events(n)])
    async with make_projector(snapshot_interval_s=0) as projector:
        await projector.catch_up()
    manifest, state = read_committed(store)
    assert of_state(manifest.summary) == summarize(state)
    assert manifest.summary is not None and manifest.summary.failure_reasons == {}
    assert manifest.summary.retries == {0: 4}  # an operator's retry is not a retry scheduled
