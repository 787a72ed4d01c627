"""Item changes (`projector._item_changes`): the first run's items are added; a later run
changes an item whose data differs, adds one no run had, removes those a gone page held and
those a changed page no longer scrapes; an unchanged page's items stay; a redelivered task's
items count once; each change has its own place in the feed, after its entry's."""

from __future__ import annotations

from typing import Any

from eventlog import PageFetched
from projector import SUB_SEQ, ItemChange, item_changes, live_items
from tests.projector.recrawl_logs import SITE
from tests.projector.recrawl_logs import entries as _entries
from tests.projector.recrawl_logs import visit as _visit


def _seen(changes: list[ItemChange]) -> list[tuple[int, str, str, Any, Any]]:
    return [(c.run, c.change, c.key, c.data, c.previous) for c in changes]


def test_a_run_adds_changes_and_removes_items_and_leaves_unchanged_pages_alone() -> None:
    log = [
        *_visit(1, "/a", {"a1": 1, "a2": 2}),
        *_visit(1, "/b", {"b1": 1}),
        *_visit(1, "/c", {"c1": 1}),
        *_visit(1, "/d", {"d1": 1}),
        *_visit(2, "/a", {"a1": 1, "a3": 3}, "changed"),  # a2 dropped, a3 new
        *_visit(2, "/b", {}, "gone", status=404),
        *_visit(2, "/c", {"c1": 9}, "changed"),
        *_visit(2, "/d", {}, "unchanged", status=304),
        *_visit(2, "/e", {"e1": 1}, "new"),
    ]
    found = item_changes(_entries(log))
    assert _seen(found) == [
        (1, "added", "a1", {"v": 1}, None),
        (1, "added", "a2", {"v": 2}, None),
        (1, "added", "b1", {"v": 1}, None),
        (1, "added", "c1", {"v": 1}, None),
        (1, "added", "d1", {"v": 1}, None),
        (2, "added", "a3", {"v": 3}, None),
        (2, "removed", "a2", None, {"v": 2}),
        (2, "removed", "b1", None, {"v": 1}),
        (2, "changed", "c1", {"v": 9}, {"v": 1}),
        (2, "added", "e1", {"v": 1}, None),
    ]
    assert [c.url for c in found if c.run == 2] == [
        SITE + p for p in ("/a", "/a", "/b", "/c", "/e")
    ]
    assert item_changes(_entries(log), run=2) == [c for c in found if c.run == 2]
    # A third run: the gone page's item does not come back removed again; c1 back as it was.
    third = [*log, *_visit(3, "/c", {"c1": 1}, "changed")]
    assert _seen(item_changes(_entries(third), run=3)) == [(3, "changed", "c1", {"v": 1}, {"v": 9})]


def test_a_redelivered_task_s_items_and_verdicts_count_once() -> None:
    once = [*_visit(1, "/a", {"a1": 1}), *_visit(2, "/a", {"a1": 2}, "changed")]
    twice = [*once[:-1], *once[-4:]]  # run 2's fetch and item written again, then done
    assert _seen(item_changes(_entries(twice))) == _seen(item_changes(_entries(once)))


def test_each_change_has_its_own_place_after_its_entry_s() -> None:
    log = [*_visit(1, "/a", {"a1": 1, "a2": 2}), *_visit(2, "/a", {}, "gone", status=410)]
    entries = _entries(log)
    removed = [c for c in item_changes(entries) if c.change == "removed"]
    gone = next(e for e in entries if isinstance(e.event, PageFetched) and e.event.run == 2)
    ms, _, seq = gone.stream_id.partition("-")
    assert [c.stream_id for c in removed] == [
        f"{ms}-{int(seq) * SUB_SEQ}",
        f"{ms}-{int(seq) * SUB_SEQ + 1}",
    ]


def test_the_live_items_are_each_key_as_the_latest_run_left_it() -> None:
    # `live_items`: what a recrawled job's `items` view and export read.
    log = [
        *_visit(1, "/a", {"a1": 1, "a2": 2}),
        *_visit(1, "/b", {"b1": 1}),
        *_visit(1, "/d", {"d1": 1}),
        *_visit(2, "/a", {"a1": 5}, "changed"),  # a1 now 5, a2 dropped
        *_visit(2, "/b", {}, "gone", status=404),
        *_visit(2, "/d", {}, "unchanged", status=304),
    ]
    live = [(event.key, event.data, event.run) for event, _ in live_items(_entries(log))]
    assert live == [("d1", {"v": 1}, 1), ("a1", {"v": 5}, 2)]
