"""What ``crawlog history`` must show, computed from the whole log with no archive at all."""

from __future__ import annotations

from collections.abc import Sequence

from eventlog import (
    JobPaused,
    JobResumed,
    LogEntry,
    PageFetched,
    SiteEvent,
    SitePaused,
    SiteResumed,
    TaskClaimed,
    TaskDone,
    TaskEnqueued,
    TaskEvent,
)

SITE = "http://site.test"
OTHER_SITE = "http://other.test"


def url_of(n: int) -> str:
    return f"{SITE}/page/{n}"


def crawl(tasks: int) -> list[TaskEvent | SitePaused | SiteResumed | JobPaused | JobResumed]:
    """A log whose tasks' events are spread over it: every task is enqueued first, then
    claimed, fetched and done in rounds; every 7th task's fetch is redirected to the URL
    of the task before it; a site (of no task) and the job are paused and resumed midway."""
    events: list[TaskEvent | SitePaused | SiteResumed | JobPaused | JobResumed] = [
        TaskEnqueued(actor="seed", task_id=f"t{n}", url=url_of(n), site=SITE) for n in range(tasks)
    ]
    for n in range(tasks):
        t = f"t{n}"
        fetched = url_of(n - 1) if n % 7 == 6 else url_of(n)
        events += [
            TaskClaimed(actor="w1", task_id=t, attempt=1),
            PageFetched(actor="w1", task_id=t, attempt=1, url=fetched, status=200, page=1),
            TaskDone(actor="w1", task_id=t, attempt=1),
        ]
        if n == tasks // 2:
            events += [
                SitePaused(actor="op", site=OTHER_SITE, reason="x"),
                SiteResumed(actor="op", site=OTHER_SITE, reason="x"),
                JobPaused(actor="op", reason="y"),
                JobResumed(actor="op", reason="y"),
            ]
    return events


def archived_about(logged: Sequence[LogEntry], task_id: str, url: str | None) -> list[LogEntry]:
    """The entries history reads from the archive: the task's, the fetches of ``url``,
    and every entry of no task (the sites' are kept afterwards for the task's site only)."""
    return [
        e
        for e in logged
        if not isinstance(e.event, TaskEvent)
        or e.event.task_id == task_id
        or (isinstance(e.event, PageFetched) and e.event.url == url)
    ]


def expected_history(logged: Sequence[LogEntry], task_id: str, url: str | None) -> list[str]:
    """The stream IDs ``task_history(..., [task_id], page_url=url)`` must return."""
    about = archived_about(logged, task_id, url)
    sites = {e.event.site for e in about if isinstance(e.event, TaskEnqueued)}
    return [
        e.stream_id for e in about if not isinstance(e.event, SiteEvent) or e.event.site in sites
    ]
