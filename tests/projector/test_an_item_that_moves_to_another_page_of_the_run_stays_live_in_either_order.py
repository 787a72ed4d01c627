"""An item is held by the page that scraped it last. A page gone in a run (now redirecting
to another task's page, which scrapes the same key) does not take the item with it,
whichever task wrote first: before, when the gone page came first, the other page's
scrape of the key was not looked at, and the item stayed removed in every later run (an
unchanged page is not parsed again)."""

from __future__ import annotations

from eventlog import LogEntry
from projector import item_changes, item_tally, live_items
from tests.projector.recrawl_logs import SITE
from tests.projector.recrawl_logs import entries as _entries
from tests.projector.recrawl_logs import visit as _visit

FIRST = [*_visit(1, "/p/old-name", {"sku-1": 10}), *_visit(1, "/list", {})]
GONE = _visit(2, "/p/old-name", {}, "gone", status=301)
FOUND = _visit(2, "/p/new-name", {"sku-1": 10}, "new")


def test_the_item_stays_live_when_the_gone_page_is_written_first() -> None:
    log = _entries([*FIRST, *GONE, *FOUND])
    assert _live(log) == [("sku-1", "/p/new-name")]
    changes = [(c.change, c.key, c.url) for c in item_changes(log, run=2)]
    assert changes == [
        ("removed", "sku-1", SITE + "/p/old-name"),
        ("added", "sku-1", SITE + "/p/new-name"),
    ]
    assert item_tally(log).live == 1


def test_the_item_stays_live_when_the_new_page_is_written_first() -> None:
    log = _entries([*FIRST, *FOUND, *GONE])
    assert _live(log) == [("sku-1", "/p/new-name")]
    assert item_changes(log, run=2) == []  # the same data, now on another page
    assert item_tally(log).live == 1


def test_the_next_run_leaves_it_live_when_the_new_page_is_unchanged() -> None:
    third = _visit(3, "/p/new-name", {}, "unchanged", status=304)
    log = _entries([*FIRST, *GONE, *FOUND, *third])
    assert _live(log) == [("sku-1", "/p/new-name")]


def _live(log: list[LogEntry]) -> list[tuple[str, str]]:
    """Each live item's key and the page whose task scraped it."""
    return [(event.key, event.task_id.partition("@")[0]) for event, _ in live_items(log)]
