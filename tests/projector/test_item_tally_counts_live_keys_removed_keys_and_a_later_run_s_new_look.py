"""`item_tally`: a recrawled job's items as its latest run left them. ``live`` is what the
``items`` view lists (`live_items`), ``keys`` every key any run scraped (the fold's
``job.items``), ``scraped_again`` the scrapes of a key an earlier run had, once per run and
key (which the fold counts with the duplicates it ignored, `crawlog report` takes apart)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from eventlog import AnyEvent
from projector import ItemTally, fold, item_tally, live_items
from tests.projector.recrawl_logs import entries as _entries
from tests.projector.recrawl_logs import visit as _visit


def test_a_gone_page_s_keys_leave_the_live_count_and_a_changed_page_s_are_scraped_again() -> None:
    log = [
        *_visit(1, "/a", {"a1": 1, "a2": 2}),
        *_visit(1, "/b", {"b1": 1}),
        *_visit(1, "/c", {"c1": 1}),
        *_visit(2, "/a", {"a1": 1}, "changed"),  # a2 dropped; a1 looked at again, the same
        *_visit(2, "/b", {}, "gone", status=404),
        *_visit(2, "/c", {}, "unchanged", status=304),
        *_visit(2, "/d", {"d1": 1}, "new"),
    ]
    tally = item_tally(_entries(log))
    assert tally == ItemTally(runs=2, keys=5, live=3, scraped_again=1)
    assert tally.live == len(live_items(_entries(log)))
    state = fold(_entries(log))
    assert (state.job.items, state.job.duplicate_items) == (5, 1)


def test_a_key_scraped_twice_in_one_run_is_a_duplicate_not_a_new_look() -> None:
    log = [
        *_visit(1, "/a", {"k": 1}),
        *_visit(2, "/a", {"k": 2}, "changed"),
        *_visit(2, "/b", {"k": 2}, "new"),  # the same key from another page of run 2
    ]
    tally = item_tally(_entries(log))
    assert (tally.keys, tally.live, tally.scraped_again) == (1, 1, 1)
    assert fold(_entries(log)).job.duplicate_items == 2  # one new look, one duplicate


def test_a_key_removed_by_one_run_and_back_in_the_next_is_live_again() -> None:
    log = [
        *_visit(1, "/a", {"a1": 1}),
        *_visit(2, "/a", {}, "gone", status=404),
        *_visit(3, "/a", {"a1": 1}, "new"),
    ]
    assert item_tally(_entries(log)) == ItemTally(runs=3, keys=1, live=1, scraped_again=1)


_RUN = st.lists(
    st.tuples(
        st.sampled_from(["/a", "/b", "/c", "/d", "/e"]),
        st.sampled_from(["changed", "unchanged", "gone", "new"]),
        st.lists(st.integers(0, 3), max_size=3, unique=True),
        st.integers(0, 2),
    ),
    max_size=5,
    unique_by=lambda visit: visit[0],
)


@settings(max_examples=150, deadline=None)
@given(first=_RUN, later=st.lists(_RUN, max_size=4))
def test_live_keys_and_new_looks_agree_with_the_items_view_and_the_fold(
    first: list[tuple[str, str, list[int], int]],
    later: list[list[tuple[str, str, list[int], int]]],
) -> None:
    # Keys are their page's: no two pages scrape one key, so each duplicate the fold
    # ignores is a later run's new look.
    log: list[AnyEvent] = []
    for run, visits in enumerate([first, *later], start=1):
        for page, change, keys, value in visits:
            items = {f"{page}#{k}": value for k in keys}
            if run == 1:
                log += _visit(run, page, items)
            elif change == "gone":
                log += _visit(run, page, {}, "gone", status=404)
            elif change == "unchanged":
                log += _visit(run, page, {}, "unchanged", status=304)
            else:
                log += _visit(run, page, items, change)  # type: ignore[arg-type]
    entries = _entries(log)
    tally, state = item_tally(entries), fold(entries)
    assert tally.live == len(live_items(entries))
    assert tally.keys == state.job.items
    assert tally.scraped_again == state.job.duplicate_items
    runs = [run for run, visits in enumerate([first, *later], start=1) if visits]
    assert tally.runs == max(runs, default=0)
