"""Revisit intervals that learn (`projector._revisits`): an unchanged revisit doubles a
page's interval and a change halves it, never past the policy's bounds; a sitemap's
``changefreq`` or ``lastmod`` gives a page its first interval; the schedule folded from a log
is the verdicts applied in turn, each run's verdict once (a redelivered task's verdict again
changes nothing), and a gone page leaves it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from eventlog import AnyEvent, Change, PageFetched, TaskEnqueued
from projector import (
    DueSummary,
    RevisitPolicy,
    due_summary,
    first_interval,
    is_due,
    next_interval,
    request_key,
    schedules,
)

POLICY = RevisitPolicy(interval_s=100.0, min_s=10.0, max_s=1000.0)
URL = "http://a.test/p"
seconds = st.floats(min_value=0.001, max_value=1e7, allow_nan=False)
policies = st.builds(
    lambda a, b, c: RevisitPolicy(interval_s=a, min_s=min(b, c), max_s=max(b, c)),
    seconds,
    seconds,
    seconds,
)
verdicts = st.sampled_from(["unchanged", "changed"])


@given(policies, seconds, verdicts)
def test_an_interval_moves_by_a_factor_of_two_and_stays_within_the_bounds(
    policy: RevisitPolicy, interval: float, change: Change
) -> None:
    after = next_interval(policy, interval, change)
    assert policy.min_s <= after <= policy.max_s
    factor = 2 if change == "unchanged" else 0.5
    assert after == policy.clamp(interval * factor)
    within = policy.clamp(interval)
    if change == "unchanged":
        assert after >= within
    else:
        assert after <= within


def test_a_sitemap_s_changefreq_or_lastmod_gives_the_first_interval() -> None:
    at = 1_700_000_000.0  # 2023-11-14
    assert first_interval(POLICY, at, changefreq="always", lastmod=None) == POLICY.min_s
    assert first_interval(POLICY, at, changefreq="never", lastmod=None) == POLICY.max_s
    assert first_interval(POLICY, at, changefreq=" Hourly ", lastmod=None) == 1000.0
    wide = RevisitPolicy(min_s=1.0, max_s=1e9)
    assert first_interval(wide, at, changefreq="daily", lastmod=None) == 86400.0
    # A tenth of the age lastmod gives it; a bad or future lastmod is the policy's own.
    assert (
        first_interval(wide, at, changefreq=None, lastmod="2023-11-04T00:00:00Z")
        == (at - 1_699_056_000.0) * 0.1
    )
    assert (
        first_interval(wide, at, changefreq=None, lastmod="2023-11-04")
        == (at - 1_699_056_000.0) * 0.1
    )
    assert first_interval(POLICY, at, changefreq=None, lastmod="yesterday") == 100.0
    assert first_interval(POLICY, at, changefreq=None, lastmod="2099-01-01") == 100.0
    assert first_interval(POLICY, at, changefreq="sometimes", lastmod=None) == 100.0


def _log(changes: list[Change], *, changefreq: str | None = None) -> list[AnyEvent]:
    """A page fetched in run 1 at t=1000, then revisited once a run with ``changes``, each
    at 1000 * run; every revisit's verdict written twice (a redelivered task)."""
    events: list[AnyEvent] = []
    for run in range(1, len(changes) + 2):
        task = f"t{run}"
        events.append(
            TaskEnqueued(
                actor="t",
                task_id=task,
                url=URL,
                site="http://a.test",
                run=run,
                changefreq=changefreq if run == 1 else None,
            )
        )
        change = None if run == 1 else changes[run - 2]
        status = 404 if change == "gone" else 200
        fetched = PageFetched(
            actor="t",
            task_id=task,
            attempt=1,
            url=URL,
            status=status,
            page=1,
            at=1000.0 * run,
            run=run,
            change=change,
        )
        events += [fetched] if run == 1 else [fetched, fetched]
    return events


@given(st.lists(verdicts, max_size=12))
def test_the_schedule_folded_from_a_log_is_each_run_s_verdict_applied_once(
    changes: list[Change],
) -> None:
    expected = POLICY.interval_s
    for change in changes:
        expected = next_interval(POLICY, expected, change)
    schedule = schedules(_log(changes), POLICY)[request_key(URL, None)]
    assert schedule.interval_s == expected
    assert schedule.fetched_at == 1000.0 * (len(changes) + 1)
    assert schedule.due_at == schedule.fetched_at + expected


def test_a_gone_page_leaves_the_schedule_and_a_run_is_read_only_before_a_given_one() -> None:
    assert schedules(_log(["unchanged", "gone"]), POLICY) == {}
    before_third = schedules(_log(["unchanged", "gone"]), POLICY, before_run=3)
    assert before_third[request_key(URL, None)].interval_s == 200.0
    assert (
        schedules(_log([], changefreq="always"), POLICY)[request_key(URL, None)].interval_s == 10.0
    )


def test_a_retried_answer_of_a_revisit_gives_no_verdict_and_moves_nothing() -> None:
    events = _log(["changed"])
    events.append(
        PageFetched(
            actor="t",
            task_id="t2",
            attempt=2,
            url=URL,
            status=503,
            page=1,
            at=5000.0,
            run=2,
            change=None,
        )
    )
    schedule = schedules(events, POLICY)[request_key(URL, None)]
    assert (schedule.interval_s, schedule.fetched_at) == (50.0, 2000.0)


def test_due_pages_are_counted_and_the_next_due_times_given_earliest_first() -> None:
    runs: list[list[Change]] = [[], ["unchanged"], ["changed", "changed"]]
    pages = [schedules(_log(changes), POLICY)[request_key(URL, None)] for changes in runs]
    # due at 1100, 2200, 3025 (intervals 100, 200, 25)
    assert due_summary(pages, 2000.0) == DueSummary(pages=3, due=1, next_due=(2200.0, 3025.0))
    assert due_summary(pages, 5000.0) == DueSummary(pages=3, due=3)
    assert is_due(None, 0.0)
    assert not is_due(pages[1], 2199.0)
