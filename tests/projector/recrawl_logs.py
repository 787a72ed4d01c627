"""Logs of a job's runs written by hand for the item and page change folds: each page's
visit in a run is its task's enqueue, its first page's fetch with the run's verdict, its
items and its end."""

from __future__ import annotations

from typing import Any

from eventlog import AnyEvent, Change, ItemScraped, LogEntry, PageFetched, TaskDone, TaskEnqueued

SITE = "http://a.test"


def visit(
    run: int, page: str, items: dict[str, Any], change: Change | None = None, status: int = 200
) -> list[AnyEvent]:
    """The events of ``page``'s task in ``run``: items ``key -> value`` as ``{"v": value}``."""
    task = f"{page}@{run}"
    url = SITE + page
    return [
        TaskEnqueued(actor="t", task_id=task, url=url, site=SITE, run=run),
        PageFetched(
            actor="w", task_id=task, attempt=1, url=url, status=status, page=1, run=run,
            change=change,
        ),
        *(
            ItemScraped(actor="w", task_id=task, key=key, data={"v": value}, run=run)
            for key, value in items.items()
        ),
        TaskDone(actor="w", task_id=task, attempt=1, run=run),
    ]  # fmt: skip


def entries(events: list[AnyEvent]) -> list[LogEntry]:
    """``events`` as log entries, stream IDs rising with a few sharing a millisecond."""
    return [LogEntry(f"{1000 + n}-{n % 3}", event, b"") for n, event in enumerate(events)]
