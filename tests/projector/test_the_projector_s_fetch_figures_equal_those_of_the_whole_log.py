"""The figures the projector keeps over every page fetch, batch by batch and with most tasks'
pages forgotten, equal those computed from the whole log at once: what ``crawlog report``
computed by SQL over the archive (a window over every fetch of each page of each task)."""

from __future__ import annotations

import math
import tempfile
from collections import Counter
from pathlib import Path
from typing import Final

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eventlog import (
    LogEntry,
    PageFetched,
    RobotsNotWhole,
    TaskClaimed,
    TaskOrphaned,
    TaskReclaimed,
    TaskReleased,
)
from projector._archive import write_segment
from projector._fetches import (
    LISTED,
    RELATIVE_ERROR,
    FetchTracker,
    RefetchedPage,
    bucket,
    needs_archive,
    quantiles,
    rebuild,
)
from projector._fold import HTTP_ERROR, fold
from projector._state import State
from tests.projector.strategies import (
    RESTORE_RECLAIM,
    TASKS,
    as_entries,
    enqueue_all,
    other_event,
    task_event,
)


@st.composite
def fetch(draw: st.DrawFn) -> PageFetched:
    """A fetch of a few pages of a few tasks (and of one never enqueued): good, an HTTP error,
    or no response."""
    outcome = draw(st.sampled_from(["good", "good", "500", "timeout"]))
    return PageFetched(
        actor=draw(st.sampled_from(["w0", "w1"])),
        task_id=draw(st.sampled_from([*TASKS[:2], "stray"])),
        attempt=1,
        url=draw(st.sampled_from(["u1", "u2"])),
        status={"good": 200, "500": 500, "timeout": 0}[outcome],
        error={"good": None, "500": "http 500", "timeout": "timeout"}[outcome],
        page=draw(st.integers(0, 2)),
        elapsed_ms=draw(st.sampled_from([0.0, 0.5, 12.5, 100.0, 3000.0])),
        at=draw(st.floats(1.7e9, 1.7e9 + 600)),
    )


@st.composite
def orphan(draw: st.DrawFn) -> TaskOrphaned:
    """A journalled write of a task that came back after its lease was taken over (or its
    store lost): work on the task that never reached the log."""
    return TaskOrphaned(
        actor="w0",
        task_id=draw(st.sampled_from(TASKS[:2])),
        entry_id="1-0",
        step="page",
        events=draw(st.integers(1, 3)),
        owner=draw(st.sampled_from([None, "w1"])),
    )


@st.composite
def retake(draw: st.DrawFn) -> TaskClaimed | TaskReclaimed:
    """A task taken again after a lost lease whose worker had, or had not, taken a slot for
    it since its last write (``unrecorded_fetch``)."""
    task_id = draw(st.sampled_from(TASKS[:2]))
    unrecorded = draw(st.booleans())
    if draw(st.booleans()):
        return TaskClaimed(
            actor="w1", task_id=task_id, attempt=1, deliveries=2, unrecorded_fetch=unrecorded
        )
    return TaskReclaimed(
        actor="w1",
        task_id=task_id,
        attempt=1,
        previous_owner="w0",
        deliveries=2,
        unrecorded_fetch=unrecorded,
    )


logs = st.lists(
    st.one_of(fetch(), fetch(), fetch(), task_event(), other_event(), orphan()), max_size=80
).map(lambda events: as_entries(enqueue_all() + events))
"""Logs as written before retakes said whether a request may have gone unrecorded (every
retake says it may): what the SQL over the archive, which has no column for it, counts."""
logs_now = st.lists(
    st.one_of(fetch(), fetch(), fetch(), task_event(), other_event(), orphan(), retake()),
    max_size=80,
).map(lambda events: as_entries(enqueue_all() + events))
"""Logs whose retakes say either."""


def whole_log(log: list[LogEntry]) -> dict[str, object]:
    """The figures straight from their definitions, over the whole log."""
    had: dict[tuple[str, int], bool] = {}
    refetched: dict[tuple[str, int], list[object]] = {}
    retried: set[tuple[str, int]] = set()
    figures: dict[str, object] = {}
    retry_fetches = extra = released = 0
    minutes: Counter[int] = Counter()
    statuses: Counter[int] = Counter()
    errors: Counter[str] = Counter()
    offsets: dict[str, float] = {}
    taken_again: set[str] = set()  # taken again after a lost lease, not fetched since
    restored: set[str] = set()  # reclaimed by a restore, taken again at their next claim
    unrecorded = 0
    for entry in log:
        event = entry.event
        if isinstance(event, TaskReleased):
            released += 1
        if isinstance(event, TaskReclaimed) and event.reason == RESTORE_RECLAIM:
            restored.add(event.task_id)
        elif isinstance(event, TaskClaimed) and event.task_id in restored:
            restored.discard(event.task_id)
            taken_again.add(event.task_id)
        elif isinstance(event, TaskReclaimed | TaskOrphaned) or (
            isinstance(event, TaskClaimed) and event.deliveries > 1
        ):
            restored.discard(event.task_id)
            if isinstance(event, TaskOrphaned) or event.unrecorded_fetch:
                taken_again.add(event.task_id)
        if not isinstance(event, PageFetched):
            continue
        server_ms = int(entry.stream_id.split("-")[0])
        minutes[server_ms // 60_000] += 1
        offsets[event.actor] = max(offsets.get(event.actor, -math.inf), event.at - server_ms / 1000)
        if event.task_id in taken_again and (event.task_id, event.page) not in had:
            unrecorded += 1
        taken_again.discard(event.task_id)
        statuses[event.status] += 1
        if event.error is not None:
            errors[event.error] += 1
        key = (event.task_id, event.page)
        good = event.error is None and 0 < event.status < HTTP_ERROR
        if had.get(key):
            extra += 1
            refetched.setdefault(key, [1, event.url])[0] += 1  # type: ignore[operator]
        elif key in had:
            retry_fetches += 1
            retried.add(key)
        had[key] = had.get(key, False) or good
    most = sorted(refetched.items(), key=lambda kv: (-kv[1][0], kv[0]))[:LISTED]  # type: ignore[operator]
    figures.update(
        fetches=sum(statuses.values()),
        released=released,
        per_minute=dict(sorted(minutes.items())),
        statuses=dict(sorted(statuses.items())),
        errors=dict(sorted(errors.items())),
        retry_fetches=retry_fetches,
        pages_retried=len(retried),
        extra_fetches=extra,
        pages_refetched=len(refetched),
        refetched=tuple(
            RefetchedPage(task_id=t, page=p, url=url, times=times)  # type: ignore[arg-type]
            for (t, p), (times, url) in most
        ),
        unrecorded_refetches=unrecorded,
        retaken=tuple(sorted(taken_again)),
        clock_offsets=dict(sorted(offsets.items())),
        restored=tuple(sorted(restored)),
    )
    return figures


@settings(max_examples=400, deadline=None)
@given(logs_now, st.data())
def test_figures_kept_batch_by_batch_equal_those_of_the_whole_log(
    log: list[LogEntry], data: st.DataObject
) -> None:
    cuts = sorted(data.draw(st.lists(st.integers(0, len(log)), max_size=12)))
    state, tracker = State(), FetchTracker()
    for start, end in zip([0, *cuts], [*cuts, len(log)], strict=True):
        batch = log[start:end]
        tracker.observe(state, batch)  # before the fold, as the projector does
        fold(batch, state)
        if data.draw(st.booleans()):  # a commit: tasks the fold describes are forgotten
            tracker.prune(state)
            figures = tracker.figures()
            restart = data.draw(st.sampled_from(["none", "from its figures", "from a snapshot"]))
            if restart == "from its figures" and not needs_archive(figures):
                tracker = FetchTracker()
                tracker.load(figures)
            elif restart == "from a snapshot":  # the tracker committed beside it
                tracker = FetchTracker.restore(tracker.dump())
    tracker.prune(state)
    figures = tracker.figures()
    expected = whole_log(log)
    assert {name: getattr(figures, name) for name in expected} == expected
    assert figures.elapsed_buckets == dict(
        sorted(
            Counter(
                bucket(e.event.elapsed_ms) for e in log if isinstance(e.event, PageFetched)
            ).items()
        )
    )


REBUILT: Final = (
    "fetches",
    "released",
    "per_minute",
    "statuses",
    "errors",
    "retry_fetches",
    "pages_retried",
    "extra_fetches",
    "pages_refetched",
    "unrecorded_refetches",
    "retaken",
    "clock_offsets",
)
"""The figures the SQL rebuild gives exactly as the definitions do (``refetched`` too, but
for the order of equal ones; the average, for the order of its sum)."""


@settings(max_examples=40, deadline=None)
@given(logs)
def test_figures_rebuilt_by_sql_from_the_archive_equal_those_of_the_whole_log(
    log: list[LogEntry],
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        segment = write_segment(Path(directory), log)
        figures = rebuild([Path(directory) / segment.name]).figures()
    expected = whole_log(log)
    assert {name: getattr(figures, name) for name in REBUILT} == {
        name: expected[name] for name in REBUILT
    }


@settings(max_examples=40, deadline=None)
@given(logs_now)
def test_the_sql_rebuild_never_counts_fewer_requests_maybe_twice_than_the_projector(
    log: list[LogEntry],
) -> None:
    # The archive has no column for a retake's ``unrecorded_fetch``: the SQL takes every
    # retake for one that may have sent a request, as older logs' retakes all say.
    with tempfile.TemporaryDirectory() as directory:
        segment = write_segment(Path(directory), log)
        rebuilt = rebuild([Path(directory) / segment.name]).figures()
    expected = whole_log(log)
    assert rebuilt.unrecorded_refetches >= expected["unrecorded_refetches"]  # type: ignore[operator]
    assert rebuilt.extra_fetches == expected["extra_fetches"]


def test_a_task_fetched_page_by_page_is_forgotten_once_folded() -> None:
    log = as_entries(
        [
            *enqueue_all(),
            *(
                PageFetched(actor="w0", task_id="t0", attempt=1, url=f"u{n}", status=200, page=n)
                for n in (1, 2, 3)
            ),
            PageFetched(actor="w0", task_id="t1", attempt=1, url="u", status=503, page=0),
        ]
    )
    state, tracker = State(), FetchTracker()
    tracker.observe(state, log)
    fold(log, state)
    tracker.prune(state)
    # t0's pages are the fold's furthest page and those before it; t1's failed page is not.
    assert tracker.figures().dirty_tasks == 1
    refetch = as_entries(
        [PageFetched(actor="w1", task_id="t0", attempt=1, url="again", status=200, page=2)],
        start=len(log),
    )
    tracker.observe(state, refetch)
    assert tracker.figures().refetched == (
        RefetchedPage(task_id="t0", page=2, url="again", times=2),
    )


@given(
    st.lists(
        st.one_of(st.just(0.0), st.floats(0.01, 600_000, allow_nan=False)), min_size=1, max_size=300
    ),
    st.sampled_from([0.0, 0.05, 0.5, 0.95, 1.0]),
)
def test_a_quantile_from_the_histogram_is_within_its_bound(times: list[float], q: float) -> None:
    ordered = sorted(times)
    h = q * (len(ordered) - 1)
    below = math.floor(h)
    exact = ordered[below] + (h - below) * (
        ordered[min(below + 1, len(ordered) - 1)] - ordered[below]
    )
    (estimate,) = quantiles(dict(Counter(bucket(t) for t in times)), [q]) or [None]
    assert estimate == pytest.approx(exact, rel=RELATIVE_ERROR, abs=1e-9)


@pytest.mark.parametrize(
    ("first", "then"),
    [
        ([0, 2], [1, 0]),  # a gap: page 1 was never fetched, page 0 was
        ([1, 1], [0, 1]),  # a refetch: two fetches, one page
    ],
)
def test_pages_the_fold_cannot_give_back_are_kept_through_a_commit(
    first: list[int], then: list[int]
) -> None:
    def fetches(pages: list[int], start: int) -> list[LogEntry]:
        return as_entries(
            [
                PageFetched(actor="w0", task_id="t0", attempt=1, url="u", status=200, page=n)
                for n in pages
            ],
            start=start,
        )

    log = as_entries(enqueue_all()) + fetches(first, 4)
    state, tracker = State(), FetchTracker()
    tracker.observe(state, log)
    fold(log, state)
    tracker.prune(state)
    assert tracker.figures().dirty_tasks == 1
    more = fetches(then, len(log))
    tracker.observe(state, more)
    fold(more, state)
    tracker.prune(state)
    expected = whole_log(log + more)
    assert {name: getattr(tracker.figures(), name) for name in expected} == expected


def test_each_site_s_latest_robots_txt_not_taken_whole_is_kept_and_rebuilt_alike() -> None:
    log = as_entries(
        [
            *enqueue_all(),
            RobotsNotWhole(actor="w0", site="http://a", reason="could not be read (HTTP 503)"),
            RobotsNotWhole(actor="w1", site="http://b", reason="longer than 500 KiB"),
            RobotsNotWhole(actor="w1", site="http://a", reason="could not be read (no response)"),
        ]
    )
    tracker = FetchTracker()
    tracker.observe(State(), log)
    expected = {"http://a": "could not be read (no response)", "http://b": "longer than 500 KiB"}
    assert tracker.figures().robots == expected
    assert FetchTracker.restore(tracker.dump()).figures().robots == expected
    with tempfile.TemporaryDirectory() as directory:
        segment = write_segment(Path(directory), log)
        assert rebuild([Path(directory) / segment.name]).figures().robots == expected
