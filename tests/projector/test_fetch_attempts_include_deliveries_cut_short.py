"""``fetch_attempts``: every fetch of a task the log recorded, and every delivery of it that
ended with none recorded (a kill, a lost lease), at the page after its last checkpoint."""

from __future__ import annotations

from eventlog import CheckpointSaved, Cursor, RetryScheduled, TaskClaimed, TaskReclaimed
from projector._history import fetch_attempts
from tests.projector.strategies import as_entries
from tests.projector.test_fold import enqueued, page


def _outcomes(events: list[object]) -> list[tuple[str, str, int, int]]:
    attempts = fetch_attempts("t1", as_entries(events))  # type: ignore[arg-type]
    return [(a.outcome, a.actor, a.attempt, a.page) for a in attempts]


def test_a_lease_taken_over_after_a_checkpoint_cut_short_the_next_page() -> None:
    events = [
        enqueued(),
        TaskClaimed(actor="w1", task_id="t1", attempt=1),
        page(1),
        CheckpointSaved(actor="w1", task_id="t1", attempt=1, cursor=Cursor(page=1)),
        TaskReclaimed(actor="w2", task_id="t1", attempt=1, previous_owner="w1", deliveries=2),
        TaskClaimed(actor="w2", task_id="t1", attempt=1),
        page(2, "w2"),
    ]
    assert _outcomes(events) == [
        ("fetched", "w1", 1, 1),
        ("interrupted", "w1", 1, 2),
        ("fetched", "w2", 1, 2),
    ]


def test_a_restart_taking_back_twice_shows_both_cut_short_deliveries() -> None:
    events = [enqueued(), TaskClaimed(actor="w1", task_id="t1", attempt=1, deliveries=3), page(1)]
    assert _outcomes(events) == [
        ("interrupted", "w1", 1, 1),
        ("interrupted", "w1", 1, 1),
        ("fetched", "w1", 1, 1),
    ]


def test_a_retry_starts_a_new_entry_and_cuts_nothing_short() -> None:
    events = [
        enqueued(),
        TaskClaimed(actor="w1", task_id="t1", attempt=1),
        page(1),
        RetryScheduled(actor="w1", task_id="t1", attempt=1, delay_s=1.0, reason="HTTP 500"),
        TaskClaimed(actor="w2", task_id="t1", attempt=2),
        page(1, "w2"),
    ]
    assert [o for o, *_ in _outcomes(events)] == ["fetched", "fetched"]
