"""Small builders shared by the eventlog tests."""

from __future__ import annotations

from eventlog import CheckpointSaved, Counts, Cursor, PageFetched, Task, TaskDone


def task(n: int, *, priority: int = 0, site: str = "http://site.test") -> Task:
    return Task(task_id=f"task-{n}", url=f"{site}/page/{n}", site=site, priority=priority)


def checkpoint(task_id: str, page: int, actor: str = "w1") -> CheckpointSaved:
    return CheckpointSaved(
        actor=actor, task_id=task_id, attempt=1, cursor=Cursor(page=page), counts=Counts(pages=page)
    )


def fetched(task_id: str, page: int, actor: str = "w1") -> PageFetched:
    return PageFetched(
        actor=actor,
        task_id=task_id,
        attempt=1,
        url=f"http://site.test/{task_id}/{page}",
        status=200,
        page=page,
    )


def done(task_id: str, actor: str = "w1") -> TaskDone:
    return TaskDone(actor=actor, task_id=task_id, attempt=1)
