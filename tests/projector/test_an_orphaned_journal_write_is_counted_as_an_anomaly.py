"""A journalled write that came back after its task was taken over (`TaskOrphaned`)
changes no task and is counted where refused events are: status and report show it."""

from __future__ import annotations

from eventlog import ORPHANED_REASON, LogEntry, TaskEnqueued, TaskOrphaned, encode
from projector import fold


def test_an_orphaned_write_is_an_anomaly_and_changes_no_task() -> None:
    enqueued = TaskEnqueued(actor="seed", task_id="t1", url="http://a.test/", site="http://a.test")
    orphan = TaskOrphaned(
        actor="w1", task_id="t1", entry_id="1-0", step="ckpt", events=2, owner="w2"
    )
    entries = [
        LogEntry(f"{i + 1}-0", event, encode(event)) for i, event in enumerate([enqueued, orphan])
    ]
    state = fold(entries)
    assert state.job.anomalies == {ORPHANED_REASON: 1}
    assert state.tasks["t1"].status == "pending"
    [anomaly] = state.anomalies
    assert (anomaly.event_type, anomaly.task_id) == ("task.orphaned", "t1")
