"""Whether the log shows a run over (`run_ended`): every page it revisits enqueued in it,
and every task of it ended and not retried since. What ``crawlog recrawl`` judges a run by
when the store lost its record: a run that had ended is followed by the next, not
"finished" again with nothing to do."""

from __future__ import annotations

from crawler._recrawl import latest_run, run_ended, run_fingerprint
from crawler._urls import fingerprint
from eventlog import AnyEvent, PageFetched, TaskDone, TaskEnqueued, TaskRetried


def _enqueued(task_id: str, url: str, run: int) -> TaskEnqueued:
    return TaskEnqueued(actor="w", task_id=task_id, url=url, site="http://a.test", run=run)


def _page(task_id: str, url: str, run: int) -> PageFetched:
    return PageFetched(actor="w", task_id=task_id, attempt=1, url=url, status=200, page=1, run=run)


def test_a_run_is_over_once_every_page_it_revisits_is_enqueued_and_every_task_of_it_ended() -> None:
    a, b = "http://a.test/a", "http://a.test/b"
    fa, fb = fingerprint(a), fingerprint(b)
    ra, rb = run_fingerprint(fa, 2), run_fingerprint(fb, 2)
    first: list[AnyEvent] = [
        _enqueued(fa, a, 1), _page(fa, a, 1), TaskDone(actor="w", task_id=fa, attempt=1),
        _enqueued(fb, b, 1), _page(fb, b, 1), TaskDone(actor="w", task_id=fb, attempt=1),
    ]  # fmt: skip
    assert run_ended(first, 1)
    assert latest_run(first) == 1
    # Run 2: a enqueued and not ended; a done, b not enqueued yet; both done; b retried.
    a_enqueued = [*first, _enqueued(ra, a, 2)]
    a_done = [*a_enqueued, TaskDone(actor="w", task_id=ra, attempt=1, run=2)]
    both = [*a_done, _enqueued(rb, b, 2), TaskDone(actor="w", task_id=rb, attempt=1, run=2)]
    retried = [*both, TaskRetried(actor="op", task_id=rb, run=2, reason="retry --failed")]
    assert [run_ended(events, 2) for events in (a_enqueued, a_done, both, retried)] == [
        False, False, True, False,
    ]  # fmt: skip
    assert latest_run(both) == 2
