"""The crash-safety invariants of a finished crawl of the test site, checked independently.

Shared by ``crawlog demo`` (one SIGKILLed worker) and ``tools/chaos.py`` (many faults of
many kinds). Two witnesses are compared: the test site's own request log, which knows
nothing of crawlog, and the event log, read through the projector's archive with DuckDB.

* every reachable page was requested, and every task the crawl created ended terminal;
* a page of a task fetched successfully twice (in the log), or a path served 2xx more
  than once (in the site's log: a page reached through a redirect is fetched by one task
  only), only among the tasks in flight at a fault — a kill, a stop, a cut connection —
  (or reached through a redirect from one of them) and never more than were in flight;
* no item key twice in the items output, and no event the state machine had to reject
  (journalled events orphaned by a lease taken over are counted apart: they are refused
  by design);
* ``replay --verify``: the archive folded from scratch gives the live snapshot exactly.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from crawler.testsite._site import RunningSite
from eventlog import TaskQueue, tasks_at
from projector import TERMINAL, Store, query, read_committed, verify


class CrawlCheck(msgspec.Struct, kw_only=True):
    """What the two witnesses say about one finished crawl."""

    reachable: int
    requested: int
    lost: list[str]
    """Reachable paths the site never served."""
    unfinished: list[str]
    """Tasks (their URLs) not terminal in the committed state: pending, running or paused."""
    refetched_in_log: list[tuple[str, int, str]]
    """(task id, page, url) of task pages the log records fetched successfully twice."""
    refetched_by_site: list[str]
    """Paths the site served 2xx more often than the crawl's links and redirects explain."""
    refetched_outside: list[str]
    """Refetched task ids (log) or paths (site) that no fault had in flight: a broken rule."""
    items: int
    distinct_items: int
    duplicate_item_events: int
    """Item events whose key was already scraped: refetches re-scrape, the output keeps one."""
    anomalies: int
    """Events the state machine rejected (e.g. a fenced write that got through), orphaned
    journal events aside."""
    orphaned: int = 0
    """Journalled events of a task whose lease was taken over meanwhile (after a store loss,
    a stall): recorded once as orphaned and never applied, the journal's fencing at work."""
    replay_position: str
    replay_differences: list[str]

    @property
    def duplicate_items(self) -> int:
        """Items that appear more than once in the output (must be 0)."""
        return self.items - self.distinct_items

    @property
    def refetched_pages(self) -> int:
        """Pages fetched twice, by the larger of the two witnesses' counts."""
        return max(len(self.refetched_in_log), len(self.refetched_by_site))

    def checks(self, in_flight: int) -> dict[str, bool]:
        """Each invariant by name, given how many tasks were in flight at the faults."""
        return {
            "every reachable page fetched (the site's own request log)": not self.lost,
            "every task terminal (none pending, running or paused)": not self.unfinished,
            "pages fetched again only among those in flight at a fault": not self.refetched_outside
            and self.refetched_pages <= in_flight,
            "no item twice in the output": self.duplicate_items == 0,
            "no event rejected by the state machine": self.anomalies == 0,
            "replay --verify identical": not self.replay_differences,
        }


def check_crawl(site: RunningSite, store: Store, in_flight: Mapping[str, str]) -> CrawlCheck:
    """Check a finished, fully projected crawl of ``site``; ``in_flight``: task id -> URL of
    every task that was in flight at a fault (they alone may have been fetched twice)."""
    origin = site.url
    fetched = {r.path for r in site.requests}
    reachable = {u.removeprefix(origin) for u in site.reachable}
    _, state = read_committed(store)
    unfinished = sorted(t.url for t in state.tasks.values() if t.status not in TERMINAL)
    # A failed fetch is retried and redirects may lead two tasks to one page: only a
    # successful fetch of the same page of the same task twice is a refetch.
    again = query(
        store,
        "SELECT task_id, page, min(url) FROM pages WHERE status BETWEEN 200 AND 299 "
        "GROUP BY task_id, page HAVING count(*) > 1 ORDER BY 3",
    ).rows
    items, distinct = query(store, "SELECT count(*), count(DISTINCT key) FROM item_events").rows[0]
    by_site = site_refetches(site)
    flying_paths = _flying(site, in_flight)
    outside = [row[0] for row in again if row[0] not in in_flight]
    outside += [path for path in by_site if path not in flying_paths]
    position, differences = verify(store)
    return CrawlCheck(
        reachable=len(reachable),
        requested=len(fetched),
        lost=sorted(reachable - fetched),
        unfinished=unfinished,
        refetched_in_log=[(r[0], r[1], r[2]) for r in again],
        refetched_by_site=sorted(by_site),
        refetched_outside=sorted(set(outside)),
        items=items,
        distinct_items=distinct,
        duplicate_item_events=state.job.duplicate_items,
        anomalies=state.job.refused,
        orphaned=state.job.orphaned,
        replay_position=position,
        replay_differences=differences,
    )


def site_refetches(site: RunningSite) -> dict[str, int]:
    """Path -> successful responses beyond the first, by the site's own log."""
    reachable = site.sitemap.reachable
    served: dict[str, int] = {}
    for request in site.requests:
        # robots.txt is not a page: each worker reads it.
        if request.path in reachable and 200 <= request.status < 300:
            served[request.path] = served.get(request.path, 0) + 1
    return {path: n - 1 for path, n in served.items() if n > 1}


def _flying(site: RunningSite, in_flight: Mapping[str, str]) -> set[str]:
    """Paths in-flight tasks may have fetched: their own, and where their redirects lead."""
    origin = site.url
    flying = {url.removeprefix(origin) for url in in_flight.values()}
    for source, target in site.sitemap.redirects.items():
        if source in flying:
            flying.add(target.removeprefix(origin))
    return flying


async def tasks_held(queue: TaskQueue, held: list[tuple[int, str]]) -> dict[str, str]:
    """Task id -> URL of the tasks behind these lane entries (``TaskQueue.leases_of``)."""
    return {task.task_id: task.url for task in await tasks_at(queue.redis, queue.keys, held)}
