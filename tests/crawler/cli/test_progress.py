"""The pure part of live progress: per-site counts from the fold, rates, ETAs, the window."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from crawler.cli._progress_view import as_dict, progress_lines
from crawler.ops._progress import (
    TOTAL,
    RateWindow,
    SiteCounts,
    Snapshot,
    Tracker,
    WorkerInfo,
    progress,
    row,
    sum_counts,
)
from eventlog import (
    AnyEvent,
    LogEntry,
    PageFetched,
    RetryScheduled,
    TaskClaimed,
    TaskDone,
    TaskEnqueued,
    TaskFailed,
    TaskReclaimed,
)
from projector import clock_offset
from projector._fold import fold
from tests.projector.strategies import as_entries, logs


def _enqueued(task: str, site: str) -> TaskEnqueued:
    return TaskEnqueued(actor="seed", task_id=task, url=f"{site}/{task}", site=site)


def _crawl_log() -> list[AnyEvent]:
    a, b = "http://a", "http://b"
    retry = RetryScheduled(actor="w1", task_id="a2", attempt=1, delay_s=1.0, reason="HTTP 503")
    return [
        _enqueued("a1", a),
        _enqueued("a2", a),
        _enqueued("a3", a),
        _enqueued("b1", b),
        TaskClaimed(actor="w1", task_id="a1", attempt=1),
        TaskDone(actor="w1", task_id="a1", attempt=1),
        TaskClaimed(actor="w1", task_id="a2", attempt=1),
        retry,
        retry,  # a repeat the append script let through: the fold ignores it, so must we
        TaskClaimed(actor="w2", task_id="b1", attempt=1),
        TaskReclaimed(actor="w1", task_id="b1", attempt=1, previous_owner="w2", deliveries=2),
        TaskClaimed(actor="w1", task_id="b1", attempt=1),
        TaskFailed(actor="w1", task_id="b1", attempt=1, reason="HTTP 404"),
        # Refused by the fold (a1 is done): not a retry of anything.
        RetryScheduled(actor="w9", task_id="a1", attempt=1, delay_s=1.0, reason="zombie"),
    ]


def test_a_snapshot_counts_each_site_as_the_fold_does_with_retries_and_recoveries() -> None:
    tracker = Tracker()
    tracker.fold(as_entries(_crawl_log()))
    snapshot = tracker.snapshot(at=5.0)
    a, b = snapshot.sites
    assert (a.site, a.discovered, a.done, a.failed, a.pending, a.running) == (
        "http://a",
        3,
        1,
        0,
        2,
        0,
    )
    assert (a.retries, a.recoveries) == (1, 0)
    assert (b.site, b.discovered, b.done, b.failed, b.retries, b.recoveries) == (
        "http://b",
        1,
        0,
        1,
        0,
        1,
    )
    assert snapshot.total == sum_counts(snapshot.sites)
    assert (snapshot.total.site, snapshot.total.finished, snapshot.total.remaining) == (TOTAL, 2, 2)
    assert snapshot.position == f"1700000000000-{len(_crawl_log()) - 1}"


def test_the_rate_is_what_ended_between_two_snapshots_and_the_eta_what_is_left_at_it() -> None:
    older = SiteCounts(site="s", discovered=100, done=10, pages=20)
    newer = SiteCounts(site="s", discovered=120, done=30, failed=10, pages=60)
    measured = row(older, newer, window_s=10.0)
    assert measured.rate == 3.0  # 30 more ended in 10 s
    assert measured.pages_rate == 4.0
    assert measured.eta_s == 80 / 3.0  # 80 remaining


def test_no_rate_from_one_snapshot_no_eta_when_nothing_moves_zero_when_nothing_is_left() -> None:
    counts = SiteCounts(site="s", discovered=5, done=2)
    assert row(None, counts, 0.0).rate is None
    assert row(None, counts, 0.0).eta_s is None
    assert row(counts, counts, 4.0).rate == 0.0
    assert row(counts, counts, 4.0).eta_s is None
    finished = SiteCounts(site="s", discovered=5, done=4, failed=1)
    assert row(None, finished, 0.0).eta_s == 0.0


def test_an_operator_retry_moving_ended_tasks_back_is_not_a_negative_rate() -> None:
    older = SiteCounts(site="s", discovered=10, done=8)
    newer = SiteCounts(site="s", discovered=10, done=5)
    assert row(older, newer, 1.0).rate == 0.0


def test_progress_matches_sites_by_name_and_a_new_site_has_no_earlier_count() -> None:
    one = SiteCounts(site="a", discovered=4, done=1)
    older = Snapshot(at=1.0, position="1-0", sites=(one,), total=sum_counts([one]))
    two = (SiteCounts(site="a", discovered=4, done=3), SiteCounts(site="b", discovered=2, done=1))
    newer = Snapshot(at=3.0, position="2-0", sites=two, total=sum_counts(two))
    report = progress("j", older, newer)
    assert [r.rate for r in report.sites] == [1.0, None]
    assert report.total.rate == 1.5  # 1 ended -> 4 ended, over 2 s
    assert not report.complete


def test_the_rate_window_measures_from_the_oldest_snapshot_within_it() -> None:
    window = RateWindow(window_s=10.0)
    taken = [
        Snapshot(at=t, position="0-0", sites=(), total=SiteCounts(site=TOTAL)) for t in range(25)
    ]
    olders = [window.add(s) for s in taken]
    assert olders[0] is None
    assert olders[1] is taken[0]
    assert olders[10] is taken[0]
    assert olders[24] is taken[14]  # exactly the window back, never more than needed


def test_plain_lines_and_json_say_the_same_numbers() -> None:
    tracker = Tracker()
    tracker.fold(as_entries(_crawl_log()))
    workers = [WorkerInfo(name="w1", alive=True, leases=2, oldest_lease_ms=1500, idle_ms=3)]
    report = progress("j", None, tracker.snapshot(1.0), workers=workers, lease_ms=30_000)
    lines = progress_lines(report, detail=True)
    assert lines[0].startswith("progress j: 2/4 tasks ended (50.0%), -/s, ETA -, 1 failed")
    assert "1 worker(s) alive, oldest lease 1.5s" in lines[0]
    assert any(line.strip().startswith("http://a: 1/3 tasks ended") for line in lines)
    data = as_dict(report)
    assert data["total"]["finished"] == 2 and data["total"]["rate"] is None
    assert data["workers"] == [
        {
            "name": "w1",
            "alive": True,
            "leases": 2,
            "oldest_lease_ms": 1500,
            "idle_ms": 3,
            "held_slots": 0,
            "slots_expire_ms": None,
        }
    ]


@given(logs, st.integers(0, 64))
def test_a_tracker_started_from_a_committed_state_counts_as_one_that_folded_everything(
    log: list[LogEntry], split: int
) -> None:
    whole = Tracker()
    whole.fold(log)
    # The status command starts from the projector's committed state and folds the tail.
    resumed = Tracker(fold(log[:split]))
    # And from the clock offsets the projector committed with its fetch figures.
    committed: dict[str, float] = {}
    for entry in log[:split]:
        if isinstance(entry.event, PageFetched):
            actor = entry.event.actor
            committed[actor] = max(committed.get(actor, -math.inf), clock_offset(entry))
    resumed.load_clock_offsets(committed)
    resumed.fold(log[split:])
    assert resumed.snapshot(0.0) == whole.snapshot(0.0)
    by_site: dict[str, int] = {}
    for task in whole.state.tasks.values():
        by_site[task.site] = by_site.get(task.site, 0) + task.retries
    assert {s.site: s.retries for s in whole.snapshot(0.0).sites if s.retries} == {
        k: v for k, v in by_site.items() if v
    }


@given(logs, st.integers(0, 64), st.floats(0, 100))
def test_done_never_exceeds_discovered_and_the_eta_is_never_negative(
    log: list[LogEntry], split: int, window: float
) -> None:
    tracker = Tracker()
    tracker.fold(log[:split])
    older = tracker.snapshot(0.0)
    tracker.fold(log[split:])
    newer = tracker.snapshot(window)
    report = progress("j", older, newer)
    for measured in (*report.sites, report.total):
        counts = measured.counts
        assert 0 <= counts.done <= counts.finished <= counts.discovered
        assert counts.remaining == counts.discovered - counts.finished
        assert measured.rate is None or measured.rate >= 0
        assert measured.eta_s is None or measured.eta_s >= 0
