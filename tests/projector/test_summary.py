"""The report's summary: kept up to date batch by batch, equal to one computed from scratch."""

from __future__ import annotations

from pathlib import Path

import anyio
import msgspec
import pytest
import redis.asyncio as aioredis
from hypothesis import given
from hypothesis import strategies as st

from eventlog import EventLog, LogEntry, TaskEnqueued, TaskFailed
from projector._committed import read_committed
from projector._fold import fold
from projector._projector import Projector
from projector._state import State
from projector._summary import LISTED, Summary, SummaryTracker, summarize, touched_tasks
from tests.projector.strategies import logs


def of_state(summary: Summary | None) -> Summary | None:
    """The summary but its figures over the log's fetches, which no state holds."""
    return None if summary is None else msgspec.structs.replace(summary, fetches=None)


@given(logs, st.data())
def test_a_summary_kept_batch_by_batch_equals_one_computed_from_the_whole_state(
    log: list[LogEntry], data: st.DataObject
) -> None:
    cuts = sorted(data.draw(st.lists(st.integers(0, len(log)), max_size=4)))
    state, tracker = State(), SummaryTracker()
    for start, end in zip([0, *cuts], [*cuts, len(log)], strict=True):
        batch = log[start:end]
        fold(batch, state)
        tracker.update(state, touched_tasks(batch))
        assert tracker.summary(state) == summarize(state)


@given(logs)
def test_a_summary_counts_every_task_once_in_its_retry_distribution(log: list[LogEntry]) -> None:
    state = fold(log)
    summary = summarize(state)
    assert sum(summary.retries.values()) == len(state.tasks)
    failed = sum(1 for t in state.tasks.values() if t.status in ("failed", "aborted"))
    assert sum(summary.failure_reasons.values()) == failed
    assert len(summary.recovered) == min(summary.recovered_tasks, LISTED)


def test_a_summary_is_a_copy_the_fold_does_not_change_afterwards() -> None:
    state = fold([])
    summary = summarize(state)
    state.job.events += 1
    assert summary.job.events == 0


@pytest.mark.anyio
async def test_every_commit_carries_the_summary_of_the_state_it_commits(
    redis_client: aioredis.Redis, job: str, tmp_path: Path
) -> None:
    log = EventLog(redis_client, job)
    for n in range(30):
        task = f"t{n}"
        await log.append(
            TaskEnqueued(actor="seed", task_id=task, url=f"http://a.test/{n}", site="http://a.test")
        )
        if n % 3 == 0:
            await log.append(TaskFailed(actor="w1", task_id=task, reason="http 404", attempt=1))
    with anyio.fail_after(20):
        async with Projector(redis_client, job, tmp_path) as projector:
            await projector.catch_up()
        manifest, state = read_committed(projector.store)
    assert manifest.summary is not None
    assert of_state(manifest.summary) == summarize(state)
    assert manifest.summary.failure_reasons == {"http 404": 10}
