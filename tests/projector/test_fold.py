"""The task state machine, one scenario at a time."""

from __future__ import annotations

from eventlog import (
    AnyEvent,
    Counts,
    ItemScraped,
    PageFetched,
    TaskClaimed,
    TaskDone,
    TaskEnqueued,
    TaskPaused,
    TaskResumed,
    TaskRetried,
)
from projector._fold import fold
from projector._state import State
from tests.projector.strategies import as_entries

SITE = "http://site.test"


def enqueued(task_id: str = "t1") -> TaskEnqueued:
    return TaskEnqueued(actor="seed", task_id=task_id, url=f"{SITE}/{task_id}", site=SITE)


def claimed(worker: str = "w1", task_id: str = "t1") -> TaskClaimed:
    return TaskClaimed(actor=worker, task_id=task_id, attempt=1)


def done(worker: str = "w1", task_id: str = "t1") -> TaskDone:
    return TaskDone(actor=worker, task_id=task_id, attempt=1, counts=Counts(pages=1))


def page(n: int, worker: str = "w1") -> PageFetched:
    return PageFetched(
        actor=worker, task_id="t1", attempt=1, url=f"{SITE}/t1?p={n}", status=200, page=n, bytes=100
    )


def state_of(*events: AnyEvent) -> State:
    return fold(as_entries(list(events)))


def test_a_claimed_task_runs_then_finishes_and_counts_follow() -> None:
    state = state_of(enqueued(), claimed())
    assert state.tasks["t1"].status == "running" and state.tasks["t1"].owner == "w1"
    assert state.sites[SITE].tasks == {"pending": 0, "running": 1}
    state = state_of(enqueued(), claimed(), page(1), done())
    task = state.tasks["t1"]
    assert (task.status, task.owner, task.pages_fetched, task.bytes) == ("done", None, 1, 100)
    assert state.job.tasks == {"pending": 0, "running": 0, "done": 1}
    assert state.job.anomalies == {}


def test_a_zombies_late_finish_is_an_anomaly_not_a_change() -> None:
    state = state_of(enqueued(), claimed(), done(), done("w-zombie"))
    assert state.tasks["t1"].status == "done" and state.tasks["t1"].last_actor == "w1"
    [anomaly] = state.anomalies
    assert (anomaly.task_id, anomaly.from_status, anomaly.reason) == (
        "t1",
        "done",
        "done while done",
    )
    assert state.job.anomalies == {"done while done": 1}


def test_an_operator_retry_is_the_way_out_of_a_terminal_state() -> None:
    retry = TaskRetried(actor="alice", task_id="t1", reason="site fixed")
    state = state_of(enqueued(), claimed(), done(), retry)
    task = state.tasks["t1"]
    assert (task.status, task.attempt, task.last_actor, task.last_reason) == (
        "pending",
        2,
        "alice",
        "site fixed",
    )


def test_a_paused_task_is_left_only_by_resumed() -> None:
    pause = TaskPaused(actor="alice", task_id="t1", reason="look at it")
    state = state_of(enqueued(), pause, claimed())
    assert state.tasks["t1"].status == "paused"
    assert state.job.anomalies == {"claimed while paused": 1}
    resume = TaskResumed(actor="alice", task_id="t1", reason="ok")
    assert state_of(enqueued(), pause, resume, claimed()).tasks["t1"].status == "running"


def test_a_page_fetched_again_is_counted_as_a_refetch() -> None:
    state = state_of(enqueued(), claimed(), page(1), page(2), page(2, "w2"))
    assert (state.tasks["t1"].pages_fetched, state.tasks["t1"].refetches) == (3, 1)
    assert (state.job.pages, state.job.refetches) == (3, 1)


def test_an_item_key_counts_once_however_often_it_is_scraped() -> None:
    item = ItemScraped(actor="w1", task_id="t1", key="sku-1")
    again = ItemScraped(actor="w2", task_id="t1", key="sku-1")
    state = state_of(enqueued(), claimed(), item, again)
    assert (state.job.items, state.job.duplicate_items, state.tasks["t1"].items) == (1, 1, 1)


def test_an_event_about_a_task_never_enqueued_is_an_anomaly() -> None:
    state = state_of(claimed(task_id="ghost"))
    assert "ghost" not in state.tasks
    assert state.job.anomalies == {"unknown task": 1}
