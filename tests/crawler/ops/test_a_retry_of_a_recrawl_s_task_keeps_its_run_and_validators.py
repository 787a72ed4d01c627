"""The retry of an ended task is built from the folded state alone (`retry_of`): a task of
a recrawl's run keeps that run (its retry's event and its pages are the run's) and the
validators its revisit was sent with; a first run's task has neither."""

from __future__ import annotations

from crawler.ops._retry import retry_of
from eventlog import FIRST_RUN, AnyEvent, TaskClaimed, TaskEnqueued, TaskFailed, Validators
from projector import fold
from tests.projector.strategies import as_entries

URL = "http://127.0.0.1:9/item/1"
SITE = "http://127.0.0.1:9"
# All an earlier run left: the landing and the pages keep the bound true for the retry too.
EARLIER = Validators(
    etag='"abc"', last_modified="Mon, 07 Dec 2026 09:00:00 GMT", body_hash="h", status=200,
    landed="http://a.test/item/", pages=3,
)  # fmt: skip


def failed_task(run: int, revisit: Validators | None) -> list[AnyEvent]:
    """A task of ``run`` enqueued (with ``revisit``), claimed and failed."""
    return [
        TaskEnqueued(actor="recrawl", task_id="t", url=URL, site=SITE, revisit=revisit, run=run),
        TaskClaimed(actor="w1", task_id="t", attempt=1, run=run),
        TaskFailed(actor="w1", task_id="t", attempt=1, reason="500", run=run),
    ]


def test_a_recrawl_s_failed_task_is_retried_in_its_run_with_its_validators() -> None:
    task = fold(as_entries(failed_task(3, EARLIER))).tasks["t"]
    retry = retry_of(task, "site back", "ops")
    assert (task.run, task.revisit) == (3, EARLIER)
    assert (retry.task.run, retry.task.revisit, retry.task.attempt) == (3, EARLIER, 2)
    assert retry.event.run == 3


def test_a_first_run_s_task_is_retried_as_a_first_visit() -> None:
    task = fold(as_entries(failed_task(FIRST_RUN, None))).tasks["t"]
    retry = retry_of(task, "site back", "ops")
    assert (retry.task.run, retry.task.revisit, retry.event.run) == (FIRST_RUN, None, FIRST_RUN)
