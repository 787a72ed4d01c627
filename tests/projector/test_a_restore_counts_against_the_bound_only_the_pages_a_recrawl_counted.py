"""What a restore counts against ``--max-pages`` from the archive, as the live crawl
counted it: a recrawl's revisits (enqueued by `RECRAWL_ACTOR`) are pages an earlier run
counted; a revisit's next pages count only past the pages a visit before it fetched of the
same URL; a redirect followed again by a later run to where an earlier one landed is no
new page. Before, a restore counted each run's revisits and their next pages again."""

from __future__ import annotations

from pathlib import Path

from eventlog import RECRAWL_ACTOR, AnyEvent, PageFetched, TaskEnqueued
from projector._archive import write_segment
from projector._restore import archived_next_pages, archived_revisits, landed_again
from tests.projector.strategies import as_entries

LISTING = "http://s.test/list"


def enqueued(task_id: str, url: str, *, actor: str = "w1", run: int = 1) -> TaskEnqueued:
    return TaskEnqueued(actor=actor, task_id=task_id, url=url, site="http://s.test", run=run)


def pages(task_id: str, url: str, last: int, run: int = 1) -> list[PageFetched]:
    return [
        PageFetched(actor="w1", task_id=task_id, attempt=1, url=url, status=200, page=n, run=run)
        for n in range(1, last + 1)
    ]


def test_revisits_and_the_next_pages_they_fetched_again_are_not_counted(tmp_path: Path) -> None:
    # A listing of 4 pages; run 2 walked it to 6 pages (2 new), run 3 to 6 again.
    events: list[AnyEvent] = [
        enqueued("l1", LISTING), *pages("l1", LISTING, 4),
        enqueued("other", "http://s.test/other"), *pages("other", "http://s.test/other", 2),
        enqueued("l2", LISTING, actor=RECRAWL_ACTOR, run=2), *pages("l2", LISTING, 6, run=2),
        enqueued("l3", LISTING, actor=RECRAWL_ACTOR, run=3), *pages("l3", LISTING, 6, run=3),
        enqueued("new", "http://s.test/new", run=3), *pages("new", "http://s.test/new", 1, run=3),
    ]  # fmt: skip
    info = write_segment(tmp_path, as_entries(events))
    segments = [tmp_path / info.name]
    assert archived_revisits(segments) == 2
    # The first visits' 3 + 1 later pages, and the listing's pages 5 and 6 once.
    assert archived_next_pages(segments) == 6


def test_a_landing_an_earlier_run_reached_is_not_a_new_page() -> None:
    def landed(task_id: str, url: str, run: int) -> PageFetched:
        return PageFetched(
            actor="w1", task_id=task_id, attempt=1, url=url, status=200, page=1, run=run
        )

    fetches = [
        landed("a", "http://s.test/a/", 1),
        landed("a2", "http://s.test/a/", 2),  # the same redirect followed again
        landed("a3", "http://s.test/a/", 3),
        landed("b2", "http://s.test/b/", 2),  # a redirect new in run 2
    ]
    assert landed_again(fetches) == 2
