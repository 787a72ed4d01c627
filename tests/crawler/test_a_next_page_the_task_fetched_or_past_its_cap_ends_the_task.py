"""A task does not go on to a next page whose URL it fetched already (a pagination loop),
unless the spider says ``dont_filter``, nor past its page cap; the pages it remembers for
its checkpoint are its latest few, each once."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from crawler._spider import NextPage
from crawler._task_steps import (
    NEXT_PAGE_FETCHED,
    PAGES_REMEMBERED,
    TASK_PAGE_CAP,
    FetchedPages,
    next_page_stop,
)
from crawler._urls import fingerprint

PAGE = "http://shop.test/list?page=1"


def fetched(*urls: str) -> FetchedPages:
    pages = FetchedPages()
    for url in urls:
        pages.add(url)
    return pages


def test_a_next_page_the_task_fetched_stops_it() -> None:
    assert next_page_stop(NextPage(PAGE), fetched(PAGE), 1, 10) == NEXT_PAGE_FETCHED
    # In another spelling of the same URL too (the fingerprint is the canonical URL's).
    assert next_page_stop(NextPage(PAGE + "#top"), fetched(PAGE), 1, 10) == NEXT_PAGE_FETCHED


def test_a_new_next_page_goes_on() -> None:
    assert next_page_stop(NextPage(PAGE.replace("1", "2")), fetched(PAGE), 1, 10) is None


def test_dont_filter_goes_on_to_a_page_fetched_until_the_cap() -> None:
    again = NextPage(PAGE, dont_filter=True)
    assert next_page_stop(again, fetched(PAGE), 9, 10) is None
    assert next_page_stop(again, fetched(PAGE), 10, 10) == TASK_PAGE_CAP


def test_the_cap_stops_a_task_at_its_last_page_and_0_is_none() -> None:
    new = NextPage(PAGE.replace("1", "2"))
    assert next_page_stop(new, fetched(PAGE), 10_000, 10_000) == TASK_PAGE_CAP
    assert next_page_stop(new, fetched(PAGE), 10_000, 0) is None


@given(st.lists(st.integers(min_value=0, max_value=40), max_size=200))
def test_the_remembered_pages_are_the_latest_distinct_ones_and_a_resume_sees_them(
    pages: list[int],
) -> None:
    urls = [f"http://shop.test/list?page={n}" for n in pages]
    run = fetched(*urls)
    latest: list[str] = []
    for url in reversed(urls):
        if fingerprint(url) not in latest:
            latest.append(fingerprint(url))
    assert run.recent() == tuple(reversed(latest[:PAGES_REMEMBERED]))
    assert all(fingerprint(url) in run for url in urls)
    resumed = FetchedPages(run.recent())
    assert all(fp in resumed for fp in run.recent())
