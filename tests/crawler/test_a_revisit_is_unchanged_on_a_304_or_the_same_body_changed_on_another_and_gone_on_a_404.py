"""What a run past the first makes of a page (`crawler._recrawl`): its conditional headers
come from the page's last fetch; a 304 or a body of the same hash is unchanged, another
body changed, a 404 or 410 gone, a page no earlier run had new; the first run says nothing.
A run's tasks are the requests earlier runs reached, once each, as their latest run left
them, under task ids of their own that never meet another run's."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler._recrawl import (
    body_hash,
    change_of,
    conditional_headers,
    fetched_validators,
    revisit_tasks,
    run_fingerprint,
)
from crawler._urls import fingerprint
from eventlog import (
    ActionDone,
    ActionIntended,
    ActionResolved,
    AnyEvent,
    PageFetched,
    Task,
    TaskDone,
    TaskEnqueued,
    TaskFailed,
    Validators,
)

URL = "http://a.test/item/1"
BEFORE = Validators(etag='"v1"', last_modified="Sun, 06 Dec 2026 10:00:00 GMT", body_hash="h1")


def _revisit(revisit: Validators | None = BEFORE, run: int = 2) -> Task:
    return Task(task_id="t", url=URL, site="http://a.test", run=run, revisit=revisit)


def test_a_revisit_asks_with_both_validators_and_a_first_visit_with_none() -> None:
    assert conditional_headers(BEFORE) == {
        "If-None-Match": '"v1"',
        "If-Modified-Since": "Sun, 06 Dec 2026 10:00:00 GMT",
    }
    assert conditional_headers(Validators(body_hash="h1")) == {}
    assert conditional_headers(None) == {}


@pytest.mark.parametrize(
    ("status", "new_hash", "expected"),
    [
        (304, None, "unchanged"),
        (200, "h1", "unchanged"),
        (200, "h2", "changed"),
        (404, None, "gone"),
        (410, None, "gone"),
        (503, None, None),  # says nothing of the page: the task is retried
        (0, None, None),
    ],
)
def test_a_revisit_s_answer_is_its_page_s_verdict(
    status: int, new_hash: str | None, expected: str | None
) -> None:
    assert change_of(_revisit(), status, new_hash) == expected


@pytest.mark.parametrize(
    ("before", "expected"),
    [
        (200, "gone"),  # a page of its own last time: its content left this URL
        (304, "gone"),  # ... found as it was the time before
        (301, None),  # a redirect already: no verdict again
        (0, None),  # not recorded (a log of before the status was): as before
    ],
)
def test_a_revisit_redirected_to_another_task_s_page_or_out_of_scope_is_gone_if_it_was_a_page(
    before: int, expected: str | None
) -> None:
    revisit = msgspec.structs.replace(BEFORE, status=before)
    assert change_of(_revisit(revisit), 301, None, moved=True) == expected
    # A redirect new to the job is no page either.
    assert change_of(_revisit(None), 301, None, moved=True) is None


def test_a_page_no_earlier_run_had_is_new_and_the_first_run_says_nothing() -> None:
    assert change_of(_revisit(None), 200, "h") == "new"
    assert change_of(_revisit(None), 404, None) is None
    assert change_of(_revisit(None, run=1), 200, "h") is None


def test_a_304_keeps_the_earlier_body_s_hash_and_a_200_hashes_its_own() -> None:
    kept = fetched_validators(_revisit(), 304, {"etag": '"v1"'}, b"")
    assert kept == BEFORE
    fresh = fetched_validators(_revisit(), 200, {"etag": '"v2"'}, b"<p>new</p>")
    assert fresh == Validators(etag='"v2"', body_hash=body_hash(b"<p>new</p>"))


@given(st.text(alphabet="0123456789abcdef", min_size=16, max_size=16), st.integers(2, 10_000))
def test_a_run_s_task_id_is_the_first_run_s_only_in_the_first_run(fp: str, run: int) -> None:
    assert run_fingerprint(fp, 1) == fp
    other = run_fingerprint(fp, run)
    assert other != fp and len(other) == len(fp)
    assert other != run_fingerprint(fp, run + 1)


def _enqueued(task_id: str, url: str, run: int) -> TaskEnqueued:
    return TaskEnqueued(actor="w", task_id=task_id, url=url, site="http://a.test", run=run)


def _page(task_id: str, url: str, status: int, run: int, h: str | None = None) -> PageFetched:
    return PageFetched(
        actor="w", task_id=task_id, attempt=1, url=url, status=status, page=1, run=run,
        etag=f'"{h}"' if h else None, body_hash=h,
    )  # fmt: skip


def _visit(task_id: str, url: str, status: int, run: int, h: str | None = None) -> list[AnyEvent]:
    """A page fetched and its task done: the page taken in."""
    return [
        _page(task_id, url, status, run, h),
        TaskDone(actor="w", task_id=task_id, attempt=1, run=run),
    ]


def test_a_run_s_tasks_are_the_pages_earlier_runs_reached_as_their_latest_run_left_them() -> None:
    a, b, c, d = (f"http://a.test/{n}" for n in "abcd")
    fa, fb, fc, fd = map(fingerprint, (a, b, c, d))
    events: list[AnyEvent] = [
        _enqueued(fa, a, 1), *_visit(fa, a, 200, 1, "a1"),
        _enqueued(fb, b, 1), *_visit(fb, b, 200, 1, "b1"),
        _enqueued(fc, c, 1), _page(fc, c, 0, 1),  # never answered: nothing to revisit
        _enqueued(fd, d, 1), *_visit(fd, d, 200, 1, "d1"),
        # Run 2: a changed, d is gone.
        _enqueued(run_fingerprint(fa, 2), a, 2), *_visit(run_fingerprint(fa, 2), a, 200, 2, "a2"),
        _enqueued(run_fingerprint(fb, 2), b, 2), *_visit(run_fingerprint(fb, 2), b, 304, 2, "b1"),
        _enqueued(run_fingerprint(fd, 2), d, 2), _page(run_fingerprint(fd, 2), d, 404, 2),
    ]  # fmt: skip
    tasks = revisit_tasks(events, 3)
    assert [(t.url, t.task_id, t.run) for t in tasks] == [
        (a, run_fingerprint(fa, 3), 3),
        (b, run_fingerprint(fb, 3), 3),
    ]
    assert [t.revisit for t in tasks] == [
        Validators(etag='"a2"', body_hash="a2", status=200, pages=1),
        Validators(etag='"b1"', body_hash="b1", status=304, pages=1),
    ]
    # Run 2 again (a killed recrawl's rerun): the same tasks, from run 1 alone.
    again = revisit_tasks(events, 2)
    assert [t.task_id for t in again] == [run_fingerprint(f, 2) for f in (fa, fb, fd)]


def test_a_revisit_knows_the_furthest_page_any_earlier_run_fetched_of_its_request() -> None:
    # A listing of 4 pages in run 1; run 2 found its first page unchanged and went no
    # further: run 3 still knows the 4 pages counted once against --max-pages.
    listing = "http://a.test/list?page=1"
    first, second = fingerprint(listing), run_fingerprint(fingerprint(listing), 2)
    events: list[AnyEvent] = [_enqueued(first, listing, 1)]
    for page in range(1, 5):
        fetched = _page(first, listing, 200, 1, f"p{page}")
        events.append(msgspec.structs.replace(fetched, page=page))
    events += [_enqueued(second, listing, 2), *_visit(second, listing, 304, 2, "p1")]
    [task] = revisit_tasks(events, 3)
    assert task.revisit is not None and task.revisit.pages == 4
    [only_first] = revisit_tasks(events[:2], 2)
    assert only_first.revisit is not None and only_first.revisit.pages == 1


def test_a_revisit_knows_where_its_latest_fetch_landed_when_a_redirect_took_it_elsewhere() -> None:
    # /a redirects to /a/ (its landing was claimed, and counted, as it was followed); /b
    # answered itself.
    a, b = "http://a.test/a", "http://a.test/b"
    fa, fb = fingerprint(a), fingerprint(b)
    events: list[AnyEvent] = [
        _enqueued(fa, a, 1), *_visit(fa, a + "/", 200, 1, "a1"),
        _enqueued(fb, b, 1), *_visit(fb, b, 200, 1, "b1"),
    ]  # fmt: skip
    assert [t.revisit and t.revisit.landed for t in revisit_tasks(events, 2)] == [a + "/", None]


def test_a_page_a_run_got_no_answer_or_an_error_for_is_revisited_with_its_last_content() -> None:
    # Run 2: a got no answer (the site down), b a 500. Run 3 asks for both with what run
    # 1 left; before, a was never revisited again and b was fetched in full.
    a, b = "http://a.test/a", "http://a.test/b"
    fa, fb = fingerprint(a), fingerprint(b)
    events: list[AnyEvent] = [
        _enqueued(fa, a, 1), *_visit(fa, a, 200, 1, "a1"),
        _enqueued(fb, b, 1), *_visit(fb, b, 200, 1, "b1"),
        _enqueued(run_fingerprint(fa, 2), a, 2), _page(run_fingerprint(fa, 2), a, 0, 2),
        _enqueued(run_fingerprint(fb, 2), b, 2), _page(run_fingerprint(fb, 2), b, 500, 2, "e"),
    ]  # fmt: skip
    tasks = revisit_tasks(events, 3)
    assert [(t.url, t.revisit) for t in tasks] == [
        (a, Validators(etag='"a1"', body_hash="a1", status=200, pages=1)),
        (b, Validators(etag='"b1"', body_hash="b1", status=200, pages=1)),
    ]


def test_a_revisit_knows_the_once_actions_earlier_runs_did_on_its_page() -> None:
    # Run 1 did "ship" on a; run 2 left "confirm" uncertain, then a person said it was done;
    # "mail" was only intended (its task aborted): not done, so not skipped.
    a = "http://a.test/a"
    fa, fa2 = fingerprint(a), run_fingerprint(fingerprint(a), 2)
    events: list[AnyEvent] = [
        _enqueued(fa, a, 1), *_visit(fa, a, 200, 1, "a1"),
        ActionDone(actor="w", task_id=fa, action_id="ship"),
        _enqueued(fa2, a, 2), *_visit(fa2, a, 200, 2, "a2"),
        ActionIntended(actor="w", task_id=fa2, action_id="confirm", run=2),
        ActionResolved(
            actor="op", task_id=fa2, action_id="confirm", decision="done", reason="seen", run=2
        ),
        ActionIntended(actor="w", task_id=fa2, action_id="mail", run=2),
    ]  # fmt: skip
    [task] = revisit_tasks(events, 3)
    assert task.revisit is not None and task.revisit.actions_done == ("confirm", "ship")
    [again] = revisit_tasks(events, 2)
    assert again.revisit is not None and again.revisit.actions_done == ("ship",)


def test_a_page_whose_task_failed_after_its_fetch_is_revisited_without_validators() -> None:
    # Run 1: a's spider raised (its task failed after the fetch): a was never taken in.
    # Run 2, by a crawlog of before this: a found "unchanged" (a 304 against run 1's
    # validators) and done, which takes in nothing more. Run 3 still asks for a in full;
    # b, taken in by run 1 and found unchanged by run 2, keeps its validators.
    a, b = "http://a.test/a", "http://a.test/b"
    fa, fb = fingerprint(a), fingerprint(b)
    failed = TaskFailed(actor="w", task_id=fa, attempt=1, reason="spider error")
    events: list[AnyEvent] = [
        _enqueued(fa, a, 1), _page(fa, a, 200, 1, "a1"), failed,
        _enqueued(fb, b, 1), *_visit(fb, b, 200, 1, "b1"),
    ]  # fmt: skip
    [first, _] = revisit_tasks(events, 2)
    assert first.revisit == Validators(pages=1)
    fa2, fb2 = run_fingerprint(fa, 2), run_fingerprint(fb, 2)
    events += [
        _enqueued(fa2, a, 2), *_visit(fa2, a, 304, 2, "a1"),
        _enqueued(fb2, b, 2), *_visit(fb2, b, 304, 2, "b1"),
    ]  # fmt: skip
    again, kept = revisit_tasks(events, 3)
    assert again.revisit == Validators(pages=1)
    assert kept.revisit == Validators(etag='"b1"', body_hash="b1", status=304, pages=1)
    # Parsed in full once the spider is fixed: taken in from then on.
    fa3 = run_fingerprint(fa, 3)
    events += [_enqueued(fa3, a, 3), *_visit(fa3, a, 200, 3, "a1")]
    [after, _] = revisit_tasks(events, 4)
    assert after.revisit == Validators(etag='"a1"', body_hash="a1", status=200, pages=1)
