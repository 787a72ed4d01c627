"""``crawlog report`` from the figures the projector commits equals the report computed from
the whole archive by SQL (the way every report was computed before): on real jobs projected by
a real projector, restarted between batches, SIGKILLed at the worst moments of a commit, and
on a job whose manifest was written before those figures existed.

A restarted projector goes on from the fetch tracker committed beside its snapshot and the
archive after it: it rebuilds the figures from the whole archive only for a snapshot written
before those files.

Counts are equal; p50 and p95 are within the histogram's bound, and the average within the
last bits of a double (the same sum, added in another order)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec
import pytest

import projector._summary
from eventlog import (
    AnyEvent,
    EventLog,
    ItemScraped,
    PageFetched,
    RetryScheduled,
    TaskClaimed,
    TaskDone,
    TaskEnqueued,
    TaskFailed,
    TaskReclaimed,
    TaskReleased,
    stream_id_key,
)
from projector._archive import read_entries
from projector._fetches import RELATIVE_ERROR, FetchTracker, rebuild
from projector._projector import Projector
from projector._report import build_report
from projector._report_model import Report
from projector._store import Store

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parent.parent.parent
SITE = "http://site.test"
T0 = 1_700_000_000.0
NOW = T0 + 100_000


def fetch(task: str, page: int, at: float, *, status: int = 200, url: str = "") -> PageFetched:
    return PageFetched(
        actor="w1",
        task_id=task,
        attempt=1,
        url=url or f"{SITE}/{task}?page={page}",
        status=status,
        error=None if status and status < 400 else ("timeout" if not status else f"http {status}"),
        page=page,
        elapsed_ms=float(5 + (hash((task, page, at)) % 2000)),
        at=at,
        bytes=100,
    )


def crawl(n: int) -> list[AnyEvent]:
    """Task ``n`` in one of the ways a crawl goes, its events made at times spread over many
    minutes (by their workers' clocks: the report's minutes are the server's)."""
    t, at = f"t{n}", T0 + 7 * n
    events: list[AnyEvent] = [
        TaskEnqueued(actor="seed", task_id=t, url=f"{SITE}/{t}", site=SITE, at=at),
        TaskClaimed(actor="w1", task_id=t, attempt=1, at=at),
    ]
    kind = n % 7
    if kind == 1:  # a 503, a retry, the page again
        events += [
            fetch(t, 0, at + 1, status=503),
            RetryScheduled(actor="w1", task_id=t, attempt=1, delay_s=1, reason="503", at=at + 1),
            TaskClaimed(actor="w1", task_id=t, attempt=2, at=at + 2),
            fetch(t, 0, at + 3),
        ]
    elif kind == 2:  # a 404: failed
        events += [
            fetch(t, 0, at + 1, status=404),
            TaskFailed(actor="w1", task_id=t, attempt=1, reason="http 404", at=at + 1),
        ]
        return events
    elif kind == 3:  # lease lost after two pages: page 1 fetched again, then page 2; then
        # w2 restarted, taking back its own lease: page 3, fetched first, may be its second
        events += [
            fetch(t, 0, at + 1),
            fetch(t, 1, at + 2),
            TaskReclaimed(
                actor="w2", task_id=t, attempt=1, previous_owner="w1", deliveries=2, at=at + 3
            ),
            fetch(t, 1, at + 4, url=f"{SITE}/{t}?again"),
            fetch(t, 2, at + 5),
            TaskClaimed(actor="w2", task_id=t, attempt=1, deliveries=3, at=at + 5),
            fetch(t, 3, at + 5),
        ]
    elif kind == 4:  # handed back by a stopping worker, then pages 0 and 2 (a gap)
        events += [
            TaskReleased(actor="w1", task_id=t, attempt=1, at=at + 1),
            TaskClaimed(actor="w2", task_id=t, attempt=1, at=at + 2),
            fetch(t, 0, at + 3),
            fetch(t, 2, at + 4),
        ]
    elif kind == 5:  # timeouts, never good
        events += [fetch(t, 0, at + 1, status=0), fetch(t, 0, at + 2, status=0)]
    else:
        events += [fetch(t, 0, at + 1), fetch(t, 1, at + 2)]
    events += [
        ItemScraped(actor="w1", task_id=t, key=f"k{n}", at=at + 5),
        TaskDone(actor="w1", task_id=t, attempt=1, at=at + 6),
    ]
    if n % 11 == 3:  # a zombie's late fetch of a page the task had: refused by the fold
        events.append(fetch(t, 0, at + 600))
    if n % 13 == 0:  # a fetch of a task no one enqueued
        events.append(fetch(f"stray{n}", 0, at + 1, status=500))
    return events


def log_of(tasks: int) -> list[AnyEvent]:
    return [e for n in range(tasks) for e in crawl(n)]


def assert_same(report: Report, expected: Report) -> None:
    """Equal, but the response times: within their bounds."""
    r, x = report.response_times, expected.response_times
    assert (r.pages, r.quantiles_error) == (x.pages, RELATIVE_ERROR)
    assert r.avg_ms == pytest.approx(x.avg_ms, rel=1e-12)
    assert r.p50_ms == pytest.approx(x.p50_ms, rel=RELATIVE_ERROR)
    assert r.p95_ms == pytest.approx(x.p95_ms, rel=RELATIVE_ERROR)
    assert msgspec.structs.replace(report, response_times=x) == expected


@pytest.fixture
def rebuilds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Each rebuild of the fetch figures from the whole archive by an in-process projector
    (its segments' count)."""
    calls: list[int] = []

    def counted(paths: Sequence[Path]) -> FetchTracker:
        calls.append(len(paths))
        return rebuild(paths)

    monkeypatch.setattr(projector._summary, "rebuild", counted)
    return calls


def reports(store: Store) -> tuple[Report, Report]:
    """The report, and the one computed from the whole archive."""
    fast = build_report(store, lease_s=30, now=NOW)
    slow = build_report(store, lease_s=30, now=NOW, from_archive=True)
    return fast, slow


async def test_a_projector_restarted_between_batches_reports_as_the_whole_archive(
    log: EventLog,
    make_projector: Callable[..., Projector],
    data_dir: Path,
    job: str,
    rebuilds: list[int],
) -> None:
    events = log_of(400)
    store = Store(data_dir, job)
    for start in range(0, len(events), 700):
        await log.append_many(events[start : start + 700])
        # Small commits, each with a snapshot: tasks leave memory all along.
        async with make_projector(commit_events=150, snapshot_interval_s=0) as projector:
            await projector.catch_up()
        fast, slow = reports(store)
        assert_same(fast, slow)
    summary = store.read_manifest().summary
    assert summary is not None and summary.fetches is not None
    # Every restart went on from pages kept apart, and none read the archive for them.
    assert summary.fetches.dirty_tasks > 0
    assert rebuilds == []
    assert fast.retries.pages_retried > 0 and fast.recoveries.pages_refetched > 0
    assert fast.retries.released > 0 and fast.throughput.minutes >= 1
    assert fast.recoveries.refetched[0].url.endswith("?again")
    assert fast.recoveries.unrecorded_refetches == sum(n % 7 == 3 for n in range(400))
    assert fast.totals.requests_maybe_twice == (
        fast.recoveries.extra_fetches + fast.recoveries.unrecorded_refetches
    )


@pytest.fixture
async def projected(
    log: EventLog, make_projector: Callable[..., Projector], data_dir: Path, job: str
) -> Store:
    """The store of a job of 100 tasks, projected to its end by a projector now stopped."""
    await log.append_many(log_of(100))
    async with make_projector(commit_events=200) as projector:
        await projector.catch_up()
    return Store(data_dir, job)


async def test_a_job_projected_before_the_figures_is_reported_from_its_archive_until_projected(
    projected: Store, make_projector: Callable[..., Projector], rebuilds: list[int]
) -> None:
    store = projected
    manifest = store.read_manifest()
    assert manifest.summary is not None
    # As a projector before them wrote it.
    store.commit(
        msgspec.structs.replace(
            manifest,
            summary=msgspec.structs.replace(manifest.summary, fetches=None),
            snapshot_fetches=None,
        )
    )
    old = build_report(store, lease_s=30, now=NOW)
    assert old == build_report(store, lease_s=30, now=NOW, from_archive=True)
    assert old.response_times.quantiles_error == 0.0
    # A projector over it commits them, with nothing new in the log.
    async with make_projector() as projector:
        await projector.catch_up()
    assert rebuilds == [len(manifest.segments)]
    migrated = store.read_manifest()
    assert migrated.position == manifest.position
    assert migrated.summary is not None and migrated.summary.fetches is not None
    # Its snapshot was written again with the tracker beside it: no later start rebuilds.
    assert migrated.snapshot_fetches is not None
    async with make_projector() as projector:
        await projector.catch_up()
    assert rebuilds == [len(manifest.segments)]
    fast, slow = reports(store)
    assert slow == old
    assert_same(fast, slow)


async def test_a_damaged_tracker_beside_the_snapshot_is_rebuilt_from_the_archive_once(
    projected: Store, make_projector: Callable[..., Projector], rebuilds: list[int]
) -> None:
    store = projected
    manifest = store.read_manifest()
    assert manifest.snapshot_fetches is not None
    expected = reports(store)
    (store.snapshots / manifest.snapshot_fetches).write_bytes(b"\x93not a tracker")
    for _ in range(2):  # the first start rebuilds and writes it again; the second needs not
        async with make_projector() as projector:
            await projector.catch_up()
        assert rebuilds == [len(manifest.segments)]
        assert_same(*reports(store))
        assert reports(store) == expected


# A real projector process that SIGKILLs itself as it is about to replace the manifest of its
# third commit whose figures keep pages apart (every file before the manifest is written), or
# just after it replaced it (before it published its position). It snapshots with every
# commit, or never (before its stop, which never comes).
KILLED_PROJECTOR = """
import os
import signal
import sys
from pathlib import Path

import anyio

import projector._projector
from eventlog import connect
from projector._projector import Projector
from projector._store import Store

projector._projector.READ_BATCH = 250  # a commit every few reads, not one for the whole log
url, job, data_dir, moment, snapshot_interval_s = sys.argv[1:]
commit = Store.commit
seen = []


def commit_or_die(self, manifest):
    figures = manifest.summary.fetches if manifest.summary else None
    if figures is not None and figures.dirty_tasks:
        seen.append(manifest)
    if len(seen) == 3 and moment == "before":
        os.kill(os.getpid(), signal.SIGKILL)
    commit(self, manifest)
    if len(seen) == 3:
        os.kill(os.getpid(), signal.SIGKILL)


Store.commit = commit_or_die


async def main():
    async with connect(url) as client:
        projector = Projector(
            client,
            job,
            Path(data_dir),
            commit_events=300,
            snapshot_interval_s=float(snapshot_interval_s),
        )
        async with projector:
            await projector.catch_up()
    sys.exit("the projector was never killed")


anyio.run(main)
"""


@pytest.mark.timeout(120)
@pytest.mark.parametrize("moment", ["before", "after"])
@pytest.mark.parametrize("snapshots", ["with every commit", "only before it started"])
async def test_a_projector_killed_at_its_manifest_reports_as_the_whole_log(
    moment: str,
    snapshots: str,
    log: EventLog,
    make_projector: Callable[..., Projector],
    valkey_url: str,
    job: str,
    data_dir: Path,
    rebuilds: list[int],
) -> None:
    events = log_of(600)
    store = Store(data_dir, job)
    interval = "0"
    if snapshots == "only before it started":
        # A projector stopped after a third of the log (its stop snapshots), and the killed
        # one never snapshots: its restart folds and observes everything after that snapshot.
        await log.append_many(events[: len(events) // 3])
        async with make_projector(commit_events=300) as projector:
            await projector.catch_up()
        events = events[len(events) // 3 :]
        interval = "3600"
    first = store.read_manifest()
    await log.append_many(events)
    child = subprocess.run(
        [sys.executable, "-c", KILLED_PROJECTOR, valkey_url, job, str(data_dir), moment, interval],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=100,
    )
    assert child.returncode == -9, child.stderr[-3000:]
    killed_at = store.read_manifest()
    logged = await log.read_range()
    assert killed_at.position != logged[-1].stream_id
    if snapshots == "only before it started":
        assert killed_at.snapshot == first.snapshot is not None
        assert killed_at.snapshot_fetches == first.snapshot_fetches is not None
        assert stream_id_key(killed_at.position) > stream_id_key(killed_at.snapshot_position)
    # What the killed projector committed reports as its archive does.
    assert_same(*reports(store))
    async with make_projector(commit_events=300, snapshot_interval_s=0) as projector:
        await projector.catch_up()
    assert rebuilds == []  # it went on from the tracker beside the snapshot
    manifest = store.read_manifest()
    archived = [e for path in store.segment_paths(manifest) for e in read_entries(path)]
    assert [e.stream_id for e in archived] == [e.stream_id for e in logged]
    assert_same(*reports(store))
