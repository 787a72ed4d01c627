"""Retrying ended tasks: each one's retry at its next attempt, written in batches.

``crawlog retry`` and the console's Retry buttons both retry through :func:`retry_tasks`:
one ``TaskQueue.retry`` script call per ``RETRY_BATCH`` tasks, each task retried once per
ended attempt (a second retry of the same attempt, by another operator or a second
submit, is refused by the script and reported back, not written).
"""

from __future__ import annotations

from collections.abc import Sequence

from crawler.ops._job import OpenJob
from eventlog import Retry, Task, TaskQueue, TaskRetried
from projector import DONE, TaskState

RETRY_BATCH = 500
"""Tasks per retry script call: one round trip each, short enough not to stall the server."""


def retry_of(task: TaskState, reason: str, by: str) -> Retry:
    """The retry of an ended task at its next attempt, same request, with who and why
    (as ``crawlog retry`` and the console's Retry buttons make it)."""
    again = Task(
        task_id=task.task_id,
        url=task.url,
        site=task.site,
        depth=task.depth,
        parent_task_id=task.parent_task_id,
        attempt=task.attempt + 1,
        spec=task.spec,  # the same request and callback, as a redo after a kill has
        request=task.request,  # a Scrapy request, callback and meta: the same one again
        # A recrawl's task stays in its run (its page, verdict and links are the run's) and
        # asks the site conditionally again, with what the earlier run's fetch left.
        run=task.run,
        revisit=task.revisit,
    )
    return Retry(
        task=again,
        event=TaskRetried(actor=by, task_id=task.task_id, reason=reason, run=task.run),
        ended_attempt=task.attempt,
        # A done task is retried to fetch it again: from the start. A failed or aborted
        # one resumes where its last checkpoint left it, as after a crash.
        resume_after=None if task.status == DONE else task.checkpoint_id,
    )


async def retry_tasks(
    job: OpenJob, tasks: Sequence[TaskState], reason: str, by: str
) -> tuple[list[TaskState], list[TaskState]]:
    """Retry ``tasks`` (ended ones) at their next attempt, ``RETRY_BATCH`` a script call:
    (retried, refused), a task refused when its ended attempt was retried already."""
    queue = TaskQueue(job.client, job.keys, by)
    retried: list[TaskState] = []
    refused: list[TaskState] = []
    for start in range(0, len(tasks), RETRY_BATCH):
        batch = tasks[start : start + RETRY_BATCH]
        done = await queue.retry([retry_of(t, reason, by) for t in batch])
        for task, ok in zip(batch, done, strict=True):
            (retried if ok else refused).append(task)
    return retried, refused
