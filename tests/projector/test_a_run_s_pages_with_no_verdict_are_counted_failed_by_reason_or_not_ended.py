"""`projector.unjudged`: a run's tasks whose page got no verdict, which ``crawlog changes``
names under its list (a run whose every revisit failed is not "no changes"): failed or
aborted by their last reason, not ended yet, a retried one open again; a task with a
verdict, or done without one (a redirect another task's page answers), is not counted."""

from __future__ import annotations

from eventlog import (
    AnyEvent,
    Change,
    LogEntry,
    PageFetched,
    TaskAborted,
    TaskDone,
    TaskEnqueued,
    TaskFailed,
    TaskRetried,
    encode,
)
from projector import unjudged


def _entries(*events: AnyEvent) -> list[LogEntry]:
    return [LogEntry(f"{n + 1}-0", e, encode(e)) for n, e in enumerate(events)]


def _enqueued(task: str, run: int = 2) -> TaskEnqueued:
    url = f"http://a.test/{task}"
    return TaskEnqueued(actor="r", task_id=task, url=url, site="http://a.test", run=run)


def _page(task: str, status: int, run: int = 2, change: Change | None = None) -> PageFetched:
    return PageFetched(
        actor="w", task_id=task, attempt=1, url=f"http://a.test/{task}", status=status, page=1,
        run=run, change=change,
    )  # fmt: skip


def _done(task: str, run: int = 2) -> TaskDone:
    return TaskDone(actor="w", attempt=1, task_id=task, run=run)


def _failed(task: str, reason: str, run: int = 2) -> TaskFailed:
    return TaskFailed(actor="w", attempt=1, task_id=task, reason=reason, run=run)


def test_a_run_s_pages_with_no_verdict_are_counted_failed_by_reason_or_not_ended() -> None:
    aborted = TaskAborted(
        actor="w", attempt=1, task_id="down", reason="too many lost leases", deliveries=3, run=2
    )
    log = _entries(
        _enqueued("ok"), _page("ok", 304, change="unchanged"), _done("ok"),
        _enqueued("loop"), _page("loop", 301), _failed("loop", "redirect loop"),
        _enqueued("loop2"), _page("loop2", 301), _failed("loop2", "redirect loop"),
        _enqueued("down"), aborted,
        _enqueued("again"), _failed("again", "HTTP 503"),
        TaskRetried(actor="op", task_id="again", reason="site back", run=2),
        _enqueued("waiting"),
        _enqueued("stub"), _page("stub", 301), _done("stub"),
        _enqueued("gone"), _page("gone", 404, change="gone"), _failed("gone", "HTTP 404"),
        _enqueued("first", run=1), _failed("first", "HTTP 500", run=1),
    )  # fmt: skip
    left = unjudged(log, 2)
    assert left.failed == {"redirect loop": 2, "too many lost leases": 1}
    assert left.open == 2  # the retried one and the one never claimed
    assert left.total == 5
    first = unjudged(log, 1)
    assert first.failed == {"HTTP 500": 1} and first.open == 0


def test_a_first_run_s_pages_are_judged_new_when_they_are_pages() -> None:
    log = _entries(_enqueued("a", run=1), _page("a", 200, run=1), _done("a", run=1))
    assert unjudged(log, 1).total == 0
