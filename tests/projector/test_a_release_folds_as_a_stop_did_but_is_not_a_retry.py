"""A graceful hand-back (``TaskReleased``) leaves the task as the old log's
``RetryScheduled(attempt - 1, "worker stopped")`` did (pending, the attempt it had, its
checkpoint kept, nobody holding it) without counting a retry; old logs fold as before."""

from __future__ import annotations

import msgspec
from hypothesis import given

from eventlog import (
    WORKER_STOPPED,
    AnyEvent,
    CheckpointSaved,
    Counts,
    Cursor,
    LogEntry,
    RetryScheduled,
    TaskClaimed,
    TaskDone,
    TaskEnqueued,
    TaskReleased,
    encode,
)
from projector._fold import fold
from projector._state import State
from tests.projector.strategies import as_entries, logs

SITE = "http://site.test"


def state_of(*events: AnyEvent) -> State:
    return fold(as_entries(list(events)))


def started(attempt: int = 2) -> list[AnyEvent]:
    return [
        TaskEnqueued(actor="seed", task_id="t1", url=f"{SITE}/t1", site=SITE),
        TaskClaimed(actor="w1", task_id="t1", attempt=attempt),
        CheckpointSaved(
            actor="w1", task_id="t1", attempt=attempt, cursor=Cursor(page=3), counts=Counts(pages=3)
        ),
    ]


def old_stop(attempt: int = 2) -> RetryScheduled:
    return RetryScheduled(
        actor="w1", task_id="t1", attempt=attempt - 1, delay_s=0.0, reason=WORKER_STOPPED
    )


def test_a_released_task_is_pending_with_its_attempt_and_checkpoint_and_no_retry() -> None:
    state = state_of(*started(), TaskReleased(actor="w1", task_id="t1", attempt=2))
    task = state.tasks["t1"]
    assert (task.status, task.attempt, task.owner, task.retries) == ("pending", 2, None, 0)
    assert (task.last_actor, task.last_reason) == ("w1", "worker stopped")
    assert task.checkpoint == Cursor(page=3) and task.checkpoint_id == "1700000000000-2"
    assert state.job.tasks == {"pending": 1, "running": 0} and state.job.anomalies == {}


def test_a_release_is_what_the_old_stop_was_but_for_the_retry() -> None:
    before = started()
    new = state_of(*before, TaskReleased(actor="w1", task_id="t1", attempt=2, at=1.7e9))
    old = state_of(*before, msgspec.structs.replace(old_stop(), at=1.7e9))
    assert old.tasks["t1"].retries == 1, "an old log folds as it always did"
    old.tasks["t1"].retries = 0
    new.recent_event_ids = old.recent_event_ids = set()
    assert msgspec.to_builtins(new) == msgspec.to_builtins(old)


def test_a_task_released_from_the_backlog_unclaimed_keeps_its_attempt() -> None:
    state = state_of(
        TaskEnqueued(actor="seed", task_id="t1", url=f"{SITE}/t1", site=SITE),
        TaskReleased(actor="w1", task_id="t1", attempt=1),
        TaskClaimed(actor="w2", task_id="t1", attempt=1),
        TaskDone(actor="w2", task_id="t1", attempt=1),
    )
    task = state.tasks["t1"]
    assert (task.status, task.attempt, task.retries) == ("done", 1, 0)


def test_a_release_of_an_ended_task_is_an_anomaly() -> None:
    state = state_of(
        *started(),
        TaskDone(actor="w1", task_id="t1", attempt=2),
        TaskReleased(actor="w-zombie", task_id="t1", attempt=2),
    )
    assert state.tasks["t1"].status == "done"
    assert state.job.anomalies == {"released while done": 1}


def as_old_log(log: list[LogEntry]) -> list[LogEntry]:
    """The log as a worker wrote it before ``TaskReleased``: each release a stop retry."""
    entries = []
    for entry in log:
        event = entry.event
        if isinstance(event, TaskReleased):
            event = RetryScheduled(
                actor=event.actor,
                at=event.at,
                event_id=event.event_id,
                task_id=event.task_id,
                attempt=event.attempt - 1,
                delay_s=0.0,
                reason=event.reason,
            )
        entries.append(LogEntry(entry.stream_id, event, encode(event)))
    return entries


@given(logs)
def test_any_log_folds_as_its_old_form_did_except_releases_are_not_retries(
    log: list[LogEntry],
) -> None:
    new, old = fold(log), fold(as_old_log(log))
    refused = {a.stream_id for a in new.anomalies}
    for task_id, task in new.tasks.items():
        releases = sum(
            isinstance(e.event, TaskReleased)
            and e.event.task_id == task_id
            and e.stream_id not in refused
            for e in log
        )
        assert old.tasks[task_id].retries - task.retries == releases
        old.tasks[task_id].retries = task.retries
    # The refusals are the same, each named after its own event type.
    renamed = {"task.released": "task.retry_scheduled", "released": "retry scheduled"}
    old_anomalies = msgspec.to_builtins(old.anomalies)
    new_anomalies = [
        {k: renamed.get(v, v) if k == "event_type" else v for k, v in a.items()}
        for a in msgspec.to_builtins(new.anomalies)
    ]
    for anomaly in new_anomalies:
        anomaly["reason"] = anomaly["reason"].replace("released while", "retry scheduled while")
    assert new_anomalies == old_anomalies
    new.anomalies, old.anomalies = [], []
    new.job.anomalies = old.job.anomalies = {}
    assert msgspec.to_builtins(new) == msgspec.to_builtins(old)
