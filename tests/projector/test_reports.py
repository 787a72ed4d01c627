"""Reports, views and exports over what a real projector committed from a real log."""

from __future__ import annotations

import csv
import json
import re
import shutil
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path

import anyio
import anyio.to_thread
import msgspec
import pyarrow.parquet as pq
import pytest

from crawler.cli._report_text import format_report
from eventlog import (
    AnyEvent,
    CircuitOpened,
    CrawlogError,
    EventLog,
    ItemScraped,
    PageFetched,
    RetryScheduled,
    SitePaused,
    TaskAborted,
    TaskClaimed,
    TaskDone,
    TaskEnqueued,
    TaskFailed,
    TaskReclaimed,
    connect,
)
from projector import _views
from projector._archive import merge_segments
from projector._committed import wait_for_position
from projector._export import export
from projector._fetches import RELATIVE_ERROR
from projector._item_fields import create_items_view
from projector._projector import Projector
from projector._query import query
from projector._report import build_report
from projector._report_model import (
    AnomalyRow,
    ReasonCount,
    Report,
    RetryCount,
    StatusCount,
)
from projector._state import State
from projector._state_tables import register_state, state_views_used
from projector._store import Manifest, Store
from projector._views import VIEWS, Committed, NoProjectedData, run_on_committed

pytestmark = pytest.mark.anyio

A, B = "http://a.test", "http://b.test"
T0 = 1_700_000_040.0
"""A whole minute (epoch seconds), so the throughput buckets are known."""
NOW = T0 + 1000
LEASE_S = 30.0
SEGMENT_EVENTS = 10
DOCS = Path(__file__).resolve().parents[2] / "docs" / "reports.md"


def enqueue(task: str, site: str, at: float) -> TaskEnqueued:
    return TaskEnqueued(actor="seed", task_id=task, url=f"{site}/{task}", site=site, at=at)


def claim(task: str, worker: str, at: float, attempt: int = 1) -> TaskClaimed:
    return TaskClaimed(actor=worker, task_id=task, attempt=attempt, at=at)


def page(
    task: str,
    worker: str,
    at: float,
    *,
    n: int = 1,
    status: int = 200,
    elapsed_ms: float,
    error: str | None = None,
    attempt: int = 1,
) -> PageFetched:
    site = A if task in ("t1", "t2", "t6", "t7") else B
    return PageFetched(
        actor=worker,
        task_id=task,
        attempt=attempt,
        url=f"{site}/{task}?page={n}",
        status=status,
        bytes=100 * n if status == 200 else 0,
        elapsed_ms=elapsed_ms,
        page=n,
        error=error,
        at=at,
    )


def item(task: str, key: str, worker: str, at: float) -> ItemScraped:
    return ItemScraped(actor=worker, task_id=task, key=key, data={"key": key, "by": task}, at=at)


def retry(task: str, worker: str, at: float, attempt: int, reason: str) -> RetryScheduled:
    return RetryScheduled(
        actor=worker, task_id=task, attempt=attempt, delay_s=1.0, reason=reason, at=at
    )


def scenario() -> list[AnyEvent]:
    """Seven tasks on two sites: done, retried, refetched, failed, stuck, resumed, aborted."""
    return [
        *(enqueue(t, A, T0) for t in ("t1", "t2", "t6", "t7")),
        *(enqueue(t, B, T0) for t in ("t3", "t4", "t5")),
        # t1: two pages and two items, done.
        claim("t1", "w1", T0 + 1),
        page("t1", "w1", T0 + 10, elapsed_ms=100),
        item("t1", "k1", "w1", T0 + 11),
        page("t1", "w1", T0 + 20, n=2, elapsed_ms=200),
        item("t1", "k2", "w1", T0 + 21),
        TaskDone(actor="w1", task_id="t1", attempt=1, at=T0 + 22),
        # t2: an HTTP 500, a retry, page 1 fetched again; its item k1 repeats t1's key.
        claim("t2", "w1", T0 + 25),
        page("t2", "w1", T0 + 30, status=500, elapsed_ms=300, error="http 500"),
        retry("t2", "w1", T0 + 31, 1, "http 500"),
        claim("t2", "w2", T0 + 60, attempt=2),
        page("t2", "w2", T0 + 70, elapsed_ms=400, attempt=2),
        item("t2", "k3", "w2", T0 + 71),
        item("t2", "k1", "w2", T0 + 72),
        TaskDone(actor="w2", task_id="t2", attempt=2, at=T0 + 73),
        # t3: times out twice, fails.
        claim("t3", "w2", T0 + 75),
        page("t3", "w2", T0 + 80, status=0, elapsed_ms=5000, error="timeout"),
        retry("t3", "w2", T0 + 81, 1, "timeout"),
        claim("t3", "w3", T0 + 185, attempt=2),
        page("t3", "w3", T0 + 190, status=0, elapsed_ms=6000, error="timeout", attempt=2),
        TaskFailed(actor="w3", task_id="t3", attempt=2, reason="timeout", at=T0 + 191),
        # t4: claimed, one page, then nothing: stuck.
        claim("t4", "w3", T0 + 195),
        page("t4", "w3", T0 + 200, elapsed_ms=50),
        # t5: w1's lease expires, w2 takes it over and finishes; w1's late done is refused.
        claim("t5", "w1", T0 + 100),
        TaskReclaimed(
            actor="w2", task_id="t5", attempt=1, previous_owner="w1", deliveries=2, at=T0 + 150
        ),
        page("t5", "w2", T0 + 210, elapsed_ms=150),
        TaskDone(actor="w2", task_id="t5", attempt=1, at=T0 + 220),
        TaskDone(actor="w1", task_id="t5", attempt=1, at=T0 + 230),
        # t6: retried twice, pending.
        claim("t6", "w1", T0 + 2),
        retry("t6", "w1", T0 + 3, 1, "http 429"),
        claim("t6", "w1", T0 + 4, attempt=2),
        retry("t6", "w1", T0 + 5, 2, "http 429"),
        # t7: aborted by recovery.
        claim("t7", "w2", T0 + 6),
        TaskAborted(
            actor="w3",
            task_id="t7",
            attempt=1,
            reason="recovery limit",
            deliveries=4,
            last_error="worker killed",
            at=T0 + 7,
        ),
        SitePaused(actor="operator", site=B, reason="maintenance", at=T0 + 240),
        CircuitOpened(
            actor="w1", site=A, reason="5 failures", failures=5, cooldown_s=60.0, at=T0 + 241
        ),
    ]


@pytest.fixture(scope="module")
async def projected(valkey_url: str, tmp_path_factory: pytest.TempPathFactory) -> Store:
    """The scenario appended, projected (in several segments) and committed: once a module."""
    job, data_dir = f"test-{uuid.uuid4().hex[:12]}", tmp_path_factory.mktemp("reports") / "data"
    events = scenario()
    async with connect(valkey_url) as client, Projector(client, job, data_dir) as projector:
        for start in range(0, len(events), SEGMENT_EVENTS):
            await EventLog(client, job).append_many(events[start : start + SEGMENT_EVENTS])
            await projector.catch_up()
    return Store(data_dir, job)


@pytest.fixture
def store(projected: Store, tmp_path: Path) -> Store:
    """A copy of the projected job's files, which the test may damage."""
    data_dir = tmp_path / "data"
    shutil.copytree(projected.root.parent.parent, data_dir)
    return Store(data_dir, projected.job)


@pytest.fixture
def report(store: Store) -> Report:
    return build_report(store, lease_s=LEASE_S, now=NOW)


async def test_totals_and_sites(report: Report) -> None:
    events = len(scenario())
    assert (report.events, report.totals.events) == (events, events)
    assert report.totals.by_status == {
        "pending": 1,
        "running": 1,
        "paused": 0,
        "done": 3,
        "failed": 1,
        "aborted": 1,
    }
    assert report.totals.tasks == 7
    # t2's and t3's second fetches retry a page that failed: no refetch of a page they had.
    assert (report.totals.pages, report.totals.refetches) == (8, 0)
    assert (report.totals.items, report.totals.duplicate_items) == (3, 1)
    assert report.totals.bytes == 100 + 200 + 100 + 100 + 100
    site_a, site_b = report.sites
    assert (site_a.site, site_a.done, site_a.total, site_a.pages, site_a.failures) == (
        A,
        2,
        4,
        4,
        1,
    )
    assert (site_a.circuit, site_a.circuit_reason, site_a.paused) == ("open", "5 failures", False)
    assert (site_b.site, site_b.done, site_b.total, site_b.pages, site_b.failures) == (
        B,
        1,
        3,
        4,
        1,
    )
    assert (site_b.paused, site_b.paused_reason) == (True, "maintenance")
    assert site_b.by_status["running"] == 1


async def test_throughput_and_response_times(report: Report, store: Store) -> None:
    t = report.throughput
    # By the server's clock (the pages' stream IDs), not the events' own times: the scenario
    # was appended in a moment, though its events say they span four minutes of 2023.
    minutes = query(
        store, "SELECT stream_ms // 60000 * 60 AS m, count(*) FROM pages GROUP BY m ORDER BY m"
    ).rows
    assert [(m.minute, m.pages) for m in t.series if m.pages] == [(float(m), n) for m, n in minutes]
    assert sum(m.pages for m in t.series) == 8 and t.minutes <= 2
    r = report.response_times
    # 50 100 150 200 300 400 5000 6000
    assert r.pages == 8
    assert r.avg_ms == pytest.approx(12_200 / 8)
    # From the projector's histogram: within its bound, and said to be.
    assert r.quantiles_error == RELATIVE_ERROR
    assert r.p50_ms == pytest.approx(250.0, rel=RELATIVE_ERROR)
    assert r.p95_ms == pytest.approx(5000 + 0.65 * 1000, rel=RELATIVE_ERROR)


async def test_the_archive_s_exact_response_times(store: Store) -> None:
    r = build_report(store, lease_s=LEASE_S, now=NOW, from_archive=True).response_times
    assert (r.p50_ms, r.quantiles_error) == (pytest.approx(250.0), 0.0)
    assert r.p95_ms == pytest.approx(5000 + 0.65 * 1000)


async def test_failures_and_retries(report: Report) -> None:
    f = report.failures
    assert f.tasks == 2
    assert f.task_reasons == [
        ReasonCount(reason="recovery limit", count=1),
        ReasonCount(reason="timeout", count=1),
    ]
    assert f.pages == 3
    assert f.page_errors == [
        ReasonCount(reason="timeout", count=2),
        ReasonCount(reason="http 500", count=1),
    ]
    assert f.http_statuses == [
        StatusCount(status=0, pages=2),
        StatusCount(status=200, pages=5),
        StatusCount(status=500, pages=1),
    ]
    r = report.retries
    assert (r.total, r.peak) == (4, 2)
    assert r.distribution == [
        RetryCount(retries=0, tasks=4),
        RetryCount(retries=1, tasks=2),
        RetryCount(retries=2, tasks=1),
    ]


async def test_recoveries_stuck_tasks_and_anomalies(report: Report) -> None:
    r = report.recoveries
    assert r.tasks_resumed == 1
    assert [(t.task_id, t.recoveries, t.status) for t in r.resumed] == [("t5", 1, "done")]
    # t2's and t3's pages were fetched again after failing: retries, not recoveries.
    assert (r.pages_refetched, r.extra_fetches, r.refetched) == (0, 0, [])
    assert (report.retries.pages_retried, report.retries.retry_fetches) == (2, 2)
    s = report.stuck
    assert (s.count, s.lease_s) == (1, LEASE_S)
    (stuck,) = s.tasks
    assert (stuck.task_id, stuck.owner, stuck.site, stuck.idle_s) == ("t4", "w3", B, 800.0)
    a = report.anomalies
    assert a.total == 1
    assert a.by_reason == [ReasonCount(reason="done while done", count=1)]
    assert [(x.event_type, x.task_id, x.from_status) for x in a.first] == [
        ("task.done", "t5", "done")
    ]
    assert isinstance(a.first[0], AnomalyRow)


async def test_a_longer_lease_reports_no_stuck_task(store: Store) -> None:
    assert build_report(store, lease_s=1000, now=NOW).stuck.count == 0


async def test_the_text_report_names_every_section(report: Report) -> None:
    text = format_report(report)
    for fragment in (
        "crawlog report: job test-",
        "Tasks: 7",
        "Sites: 2",
        "paused (maintenance)",
        "circuit open (5 failures)",
        f"Throughput: {8 / report.throughput.minutes:.1f} pages/min on average over "
        f"{report.throughput.minutes} min",
        "p50 ~250.1 ms",
        "Failures: 2 tasks failed or aborted, 3 page errors",
        "Retries: 4 scheduled, at most 2 for one task; 2 pages fetched again after a failed "
        "fetch (2 fetches)",
        "Recoveries: 1 task resumed after a lost lease; 0 pages fetched again after a good "
        "fetch (0 extra fetches)",
        "Stuck: 1 task running past the 30 s lease",
        "Anomalies: 1 refused event",
        "done while done",
    ):
        assert fragment in text
    assert "refetched:" not in text, "a retried page is no recovery's refetch"
    assert re.search(r"t4\s+w3\s+800 s idle", text)


async def test_the_views_count_fetches_with_duplicates_and_items_once(store: Store) -> None:
    counts = query(
        store,
        "SELECT " + ", ".join(f"(SELECT count(*) FROM {view})" for view in VIEWS),
    ).rows[0]
    assert dict(zip(VIEWS, counts, strict=True)) == {
        "events": len(scenario()),
        "pages": 8,
        "items": 3,
        "tasks": 7,
        "sites": 2,
        "anomalies": 1,
        "job": 1,
        "item_events": 3,
    }
    first_k1 = query(store, "SELECT task_id, worker, data->>'by' FROM item_events WHERE key = 'k1'")
    assert first_k1.rows == [("t1", "w1", "t1")]
    # The items as the spider wrote them: a column per field.
    fields = query(store, "SELECT * FROM items ORDER BY key")
    assert fields.columns == ("key", "by")
    assert fields.rows == [("k1", "t1"), ("k2", "t1"), ("k3", "t2")]
    sites = query(store, "SELECT DISTINCT task_id, site FROM pages WHERE task_id IN ('t2', 't3')")
    assert sorted(sites.rows) == [("t2", A), ("t3", B)]
    t4 = query(
        store, "SELECT status, owner, pages_fetched, updated_time FROM tasks WHERE task_id='t4'"
    )
    (status, owner, pages, updated) = t4.rows[0]
    assert (status, owner, pages, updated.timestamp()) == ("running", "w3", 1, T0 + 200)


async def test_every_view_column_is_documented(store: Store) -> None:
    docs = DOCS.read_text()

    def columns(committed: Committed) -> dict[str, list[str]]:
        assert committed.state is not None
        con = committed.con
        register_state(con, committed.manifest, committed.state)
        create_items_view(con)
        return {v: [row[0] for row in con.execute(f"DESCRIBE {v}").fetchall()] for v in VIEWS}

    described = run_on_committed(store, columns, read_state=True, doing="describing the views")
    # ``items`` has the items' own fields (documented as a rule, not column by column).
    assert described.pop("items") == ["key", "by"]
    assert "### `items`" in docs
    for view in described:
        section = docs.split(f"### `{view}`", 1)[1].split("\n### ", 1)[0]
        missing = [c for c in described[view] if f"| `{c}` |" not in section]
        assert not missing, f"view {view}: columns not in docs/reports.md: {missing}"


async def test_exports_read_back_in_every_format(store: Store, tmp_path: Path) -> None:
    pages_jsonl, pages_csv, pages_parquet = (
        tmp_path / f"pages.{x}" for x in ("jsonl", "csv", "pq")
    )
    assert export(store, what="pages", fmt="jsonl", out=pages_jsonl) == 8
    assert export(store, what="pages", fmt="csv", out=pages_csv) == 8
    assert export(store, what="pages", fmt="parquet", out=pages_parquet) == 8
    from_json = [json.loads(line) for line in pages_jsonl.read_text().splitlines()]
    with pages_csv.open(newline="") as source:
        from_csv = list(csv.DictReader(source))
    from_parquet = pq.read_table(pages_parquet).to_pylist()
    for rows in (from_json, from_csv, from_parquet):
        assert len(rows) == 8
        assert {"url", "status", "bytes", "elapsed_ms", "worker", "attempt", "time"} <= set(rows[0])
    # Log order: t1's two pages come first, then t2's failed fetch by w1.
    assert [(r["task_id"], r["page"], r["worker"]) for r in from_json[:3]] == [
        ("t1", 1, "w1"),
        ("t1", 2, "w1"),
        ("t2", 1, "w1"),
    ]
    assert [r["url"] for r in from_csv] == [r["url"] for r in from_json]
    assert [r["elapsed_ms"] for r in from_parquet] == [r["elapsed_ms"] for r in from_json]
    assert from_csv[2]["status"] == "500" and from_csv[2]["error"] == "http 500"

    items = tmp_path / "items.jsonl"
    assert export(store, what="items", fmt="jsonl", out=items) == 3
    assert [json.loads(line) for line in items.read_text().splitlines()] == [
        {"key": "k1", "by": "t1"},
        {"key": "k2", "by": "t1"},
        {"key": "k3", "by": "t2"},
    ]
    assert export(store, what="items", fmt="jsonl", out=items, with_meta=True) == 3
    rows = [json.loads(line) for line in items.read_text().splitlines()]
    assert [(r["key"], r["task_id"], r["data"]) for r in rows] == [
        ("k1", "t1", {"key": "k1", "by": "t1"}),
        ("k2", "t1", {"key": "k2", "by": "t1"}),
        ("k3", "t2", {"key": "k3", "by": "t2"}),
    ]


async def test_a_query_of_the_archive_alone_does_not_read_the_state(store: Store) -> None:
    assert state_views_used("SELECT count(*) FROM pages JOIN items USING (task_id)") == set()
    assert state_views_used("SELECT * FROM Tasks, job") == {"tasks", "job"}
    snapshot = store.snapshots / str(store.read_manifest().snapshot)
    snapshot.write_bytes(b"damaged")
    assert query(store, "SELECT count(*) FROM pages").rows == [(8,)]
    with pytest.raises(CrawlogError, match=r"snapshot .* cannot be read"):
        query(store, "SELECT count(*) FROM sites")


async def test_a_bad_query_names_duckdbs_message_and_the_views(store: Store) -> None:
    with pytest.raises(CrawlogError) as raised:
        query(store, "SELECT nope FROM pages")
    message = str(raised.value)
    assert "\n" not in message
    assert "nope" in message and "views: events, pages, items, tasks" in message


async def test_a_job_without_projected_data_is_a_clear_error(data_dir: Path) -> None:
    store = Store(data_dir, "never-projected")
    for read in (
        partial(build_report, store, lease_s=LEASE_S, now=NOW),
        partial(query, store, "SELECT 1"),
        partial(export, store, what="pages", fmt="csv", out=data_dir / "x.csv"),
    ):
        with pytest.raises(NoProjectedData, match="crawlog project --job never-projected"):
            read()


def compact_all(store: Store) -> None:
    """Merge every segment into one and delete the old files, as a compaction does."""
    manifest = store.read_manifest()
    merged = merge_segments(store.archive, manifest.segments)
    compacted = msgspec.structs.replace(manifest, segments=(merged,))
    store.commit(compacted)
    store.remove_unreferenced(compacted)


async def test_a_read_is_tried_again_when_a_compaction_removes_its_segments(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # From the archive: the report from the summary reads no segment.
    before = build_report(store, lease_s=LEASE_S, now=NOW, from_archive=True)
    assert len(store.read_manifest().segments) > 1
    real_read = _views._read
    opened: list[int] = []

    def read_then_compact(store: Store, *, read_state: bool) -> tuple[Manifest, State | None]:
        manifest, state = real_read(store, read_state=read_state)
        opened.append(len(manifest.segments))
        if len(opened) == 1:
            compact_all(store)
        return manifest, state

    monkeypatch.setattr(_views, "_read", read_then_compact)
    assert build_report(store, lease_s=LEASE_S, now=NOW, from_archive=True) == before
    assert opened[0] > 1 and opened[1:] == [1]


async def test_a_segment_missing_from_the_committed_manifest_is_an_error(
    store: Store, tmp_path: Path
) -> None:
    missing = store.segment_paths(store.read_manifest())[0]
    missing.unlink()
    with pytest.raises(CrawlogError, match=f"exporting pages to .* failed: .*{missing.name}"):
        export(store, what="pages", fmt="csv", out=tmp_path / "pages.csv")


def batch(n: int, size: int) -> list[AnyEvent]:
    """``size`` tasks, each enqueued, claimed, fetched and done."""
    events: list[AnyEvent] = []
    for i in range(size):
        task = f"b{n}-{i}"
        events += [
            enqueue(task, A, T0),
            claim(task, "w1", T0 + n),
            page(task, "w1", T0 + n, elapsed_ms=float(i)),
            TaskDone(actor="w1", task_id=task, attempt=1, at=T0 + n),
        ]
    return events


def assert_consistent(report: Report) -> None:
    totals = report.totals
    assert sum(totals.by_status.values()) == totals.tasks
    assert sum(site.total for site in report.sites) == totals.tasks
    assert report.events == totals.events
    assert report.response_times.pages == totals.pages
    assert report.anomalies.total == 0


async def test_reports_taken_while_the_projector_commits_are_consistent(
    log: EventLog, make_projector: Callable[..., Projector], data_dir: Path, job: str
) -> None:
    batches, size = 15, 20
    store = Store(data_dir, job)
    positions: list[str] = []
    # Tiny commits and a snapshot each time: segments are compacted and snapshots replaced
    # while the reports read them.
    projector = make_projector(commit_events=size, commit_interval_s=0.005, snapshot_interval_s=0)
    with anyio.fail_after(30):
        async with projector, anyio.create_task_group() as tasks:
            tasks.start_soon(projector.run)
            await log.append_many(batch(0, size))
            first = await log.last_id()
            assert first is not None
            await wait_for_position(log.redis, job, first, timeout_s=10)
            appended = anyio.Event()

            async def append() -> None:
                for n in range(1, batches):
                    await log.append_many(batch(n, size))
                appended.set()

            tasks.start_soon(append)
            while not appended.is_set() or len(positions) < batches:
                report = await anyio.to_thread.run_sync(
                    partial(build_report, store, lease_s=LEASE_S, now=NOW)
                )
                assert_consistent(report)
                positions.append(report.position)
                views = await anyio.to_thread.run_sync(
                    query,
                    store,
                    "SELECT (SELECT count(*) FROM events) - archived_events, "
                    "(SELECT count(*) FROM tasks) - tasks, "
                    "(SELECT count(*) FROM pages) - pages FROM job",
                )
                assert views.rows == [(0, 0, 0)]
            last = await log.last_id()
            assert last is not None
            await wait_for_position(log.redis, job, last, timeout_s=10)
            tasks.cancel_scope.cancel()
    keys = [tuple(map(int, p.split("-"))) for p in positions]
    assert keys == sorted(keys)
    final = build_report(store, lease_s=LEASE_S, now=NOW)
    assert final.totals.by_status["done"] == final.totals.tasks == batches * size
    assert final.events == 4 * batches * size
