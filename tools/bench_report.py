"""Benchmark ``build_report`` (``crawlog report``) over a large archive.

    python tools/bench_report.py [--quick] [--events N] [--rounds R] [--segment-events S]

Builds a job of N events (default 10,000,000; ``--quick``: 1,000,000) in a temporary data
directory without Redis or the projector: the columns are computed in bulk (DuckDB SQL over
``range(N)``, fetched as Arrow) and written by the archive's own ``write_table`` as
segments of S events (default 1,000,000, the size compaction makes), then a snapshot and a
manifest, as a projector would leave them.

The crawl: one task per 10 events (1M tasks for 10M events) on 200 sites, one event per
millisecond (10M events: 2.8 h), the events of 1,000 tasks at a time interleaved. A task is
enqueued, claimed, fetches three pages with an item and a checkpoint after each of the
first two, and is done; 4 % fetch an HTTP 503 first, are retried and fetch page 1 again;
2 % time out (or fail otherwise) three times and fail; 0.9 % lose their lease and are
taken over; 0.1 % are still running.

The snapshot is a ``State`` whose every task, site and total matches those events (built
from the same formulas, not by folding them: folding 10M events would take minutes), with
every item key and a full window of recent event ids, as the fold keeps them.

Prints a table, then as its last line one JSON object with ``report_events``,
``report_tasks`` and ``report_s`` (median of the rounds) and the parts of it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, TypeVar

import duckdb
import msgspec

from eventlog import Counts, Cursor
from projector import (
    DEDUP_WINDOW,
    DONE,
    FAILED,
    SCHEMA,
    JobState,
    Manifest,
    Report,
    SegmentInfo,
    SiteState,
    State,
    Store,
    TaskState,
    build_report,
    canonical,
    read_committed,
    summarize,
    write_table,
)
from projector._fetches import rebuild

T = TypeVar("T")

FULL_EVENTS: Final = 10_000_000
QUICK_EVENTS: Final = 1_000_000
SEGMENT_EVENTS: Final = 1_000_000
ROUNDS: Final = 3
TARGET_S: Final = 2.0
JOB: Final = "bench"
LEASE_S: Final = 30.0

SLOTS: Final = 10
"""Events per task: every variant below has exactly this many."""
CONCURRENT: Final = 1_000
"""Tasks whose events interleave in the log."""
SITES: Final = 200
WORKERS: Final = 16
START_MS: Final = 1_717_000_000_000

# One row per (variant, slot): what the slot's event is. Columns: type, page, attempt,
# status, error, reason, item number, deliveries, worker shift (a taken-over task's events
# come from the next worker).
Slot = tuple[
    str, int | None, int | None, int | None, str | None, str | None, int | None, int | None, int
]
ENQ: Final[Slot] = ("task.enqueued", None, None, None, None, None, None, None, 0)


def claim(attempt: int, shift: int = 0) -> Slot:
    return ("task.claimed", None, attempt, None, None, None, None, 1, shift)


def page(
    n: int, attempt: int = 1, status: int = 200, error: str | None = None, shift: int = 0
) -> Slot:
    return ("task.page", n, attempt, status, error, None, None, None, shift)


def item(n: int, shift: int = 0) -> Slot:
    return ("task.item", None, None, None, None, None, n, None, shift)


def checkpoint(n: int, item_n: int | None, attempt: int = 1, shift: int = 0) -> Slot:
    return ("task.checkpoint", n, attempt, None, None, None, item_n, None, shift)


def retry(attempt: int, reason: str) -> Slot:
    return ("task.retry_scheduled", None, attempt, None, None, reason, None, None, 0)


def done(attempt: int, shift: int = 0) -> Slot:
    return ("task.done", None, attempt, None, None, "", None, None, shift)


def failed(attempt: int, reason: str) -> Slot:
    return ("task.failed", None, attempt, None, None, reason, None, None, 0)


def failing(error: str, status: int) -> list[Slot]:
    return [
        ENQ,
        claim(1),
        page(1, 1, status, error),
        retry(1, error),
        claim(2),
        page(1, 2, status, error),
        retry(2, error),
        claim(3),
        page(1, 3, status, error),
        failed(3, error),
    ]


class Variant:
    """A kind of task: its share of all tasks, its events, and the state they fold into."""

    def __init__(self, name: str, share: float, slots: list[Slot], **final: Any) -> None:
        assert len(slots) == SLOTS
        self.name, self.share, self.slots, self.final = name, share, slots, final


VARIANTS: Final = [
    Variant(
        "done",
        0.930,
        [
            ENQ,
            claim(1),
            page(1),
            item(1),
            checkpoint(1, 1),
            page(2),
            item(2),
            checkpoint(2, 2),
            page(3),
            done(1),
        ],
        status=DONE,
        attempt=1,
        retries=0,
        recoveries=0,
        refetches=0,
        pages=3,
        items=2,
        last_reason="",
        last_error=None,
        checkpoint_slot=7,
        furthest_page=3,
        owner=False,
    ),
    Variant(
        "retried",
        0.040,
        [
            ENQ,
            claim(1),
            page(1, 1, 503, "http 503"),
            retry(1, "http 503"),
            claim(2),
            page(1, 2),
            item(1),
            checkpoint(1, 1, 2),
            page(2, 2),
            done(2),
        ],
        status=DONE,
        attempt=2,
        retries=1,
        recoveries=0,
        refetches=1,
        pages=3,
        items=1,
        last_reason="",
        last_error="http 503",
        checkpoint_slot=7,
        furthest_page=2,
        owner=False,
    ),
    *(
        Variant(
            f"failed {error}",
            share,
            failing(error, status),
            status=FAILED,
            attempt=3,
            retries=2,
            recoveries=0,
            refetches=2,
            pages=3,
            items=0,
            last_reason=error,
            last_error=error,
            checkpoint_slot=None,
            furthest_page=1,
            owner=False,
        )
        for error, status, share in (
            ("timeout", 0, 0.012),
            ("connection reset", 0, 0.005),
            ("http 500", 500, 0.003),
        )
    ),
    Variant(
        "taken over",
        0.009,
        [
            ENQ,
            claim(1),
            page(1),
            item(1),
            checkpoint(1, 1),
            ("task.reclaimed", None, 1, None, None, "lease expired", None, 2, 1),
            page(2, shift=1),
            item(2, shift=1),
            checkpoint(2, 2, shift=1),
            done(1, shift=1),
        ],
        status=DONE,
        attempt=1,
        retries=0,
        recoveries=1,
        refetches=0,
        pages=2,
        items=2,
        last_reason="",
        last_error=None,
        checkpoint_slot=8,
        furthest_page=2,
        owner=False,
    ),
    Variant(
        "running",
        0.001,
        [
            ENQ,
            claim(1),
            page(1),
            item(1),
            checkpoint(1, 1),
            page(2),
            item(2),
            checkpoint(2, 2),
            page(3),
            checkpoint(3, 2),
        ],
        status="running",
        attempt=1,
        retries=0,
        recoveries=0,
        refetches=0,
        pages=3,
        items=2,
        last_reason="claimed",
        last_error=None,
        checkpoint_slot=9,
        furthest_page=3,
        owner=True,
    ),
]
assert abs(sum(v.share for v in VARIANTS) - 1) < 1e-9


def _setup(con: duckdb.DuckDBPyConnection, tasks: int) -> None:
    """Macros shared by the event and the state queries: one formula, two uses."""
    span = CONCURRENT * SLOTS
    thresholds, total = [], 0.0
    for v in VARIANTS[:-1]:
        total += v.share
        thresholds.append(total)
    cases = " ".join(f"WHEN u < {t!r} THEN {i}" for i, t in enumerate(thresholds))
    slots = ", ".join(
        "(" + ", ".join([str(vi), str(si), *(_sql(x) for x in slot)]) + ")"
        for vi, v in enumerate(VARIANTS)
        for si, slot in enumerate(v.slots)
    )
    con.execute(f"""
        CREATE MACRO stream_index(task, slot) AS
            task // {CONCURRENT} * {span} + slot * {CONCURRENT} + task % {CONCURRENT};
        CREATE MACRO stream_id(k) AS ({START_MS} + k)::VARCHAR || '-0';
        CREATE MACRO at_of(k) AS ({START_MS} + k - k * 7919 % 200) / 1000.0;
        CREATE MACRO task_id(task) AS lpad(lower(hex(task)), 16, '0');
        CREATE MACRO site_of(task) AS 'https://shop-' || lpad((task % {SITES})::VARCHAR, 3, '0')
            || '.example';
        CREATE MACRO url_of(task) AS site_of(task) || '/catalog/' || (task % 97)::VARCHAR
            || '/item-' || task::VARCHAR;
        CREATE MACRO worker(task, shift) AS
            'worker-' || lpad(((task + shift) % {WORKERS})::VARCHAR, 2, '0');
        CREATE MACRO page_bytes(task, page) AS 2000 + (task * 7919 + page * 104729) % 78000;
        CREATE TABLE variant_of AS
            SELECT range AS task,
                   CASE {cases} ELSE {len(VARIANTS) - 1} END AS variant
            FROM (SELECT range, (range * 2654435761 % 4294967296) / 4294967296.0 AS u
                  FROM range({tasks}));
        CREATE TABLE slots(variant INT, slot INT, type VARCHAR, page INT, attempt INT,
            status INT, error VARCHAR, reason VARCHAR, item INT, deliveries INT, shift INT);
        INSERT INTO slots VALUES {slots};
    """)


def _sql(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return str(value)


def _events_sql(first: int, last: int) -> str:
    """The events of stream indexes ``[first, last)``, in log order, as SCHEMA's columns."""
    span = CONCURRENT * SLOTS
    return f"""
        SELECT
            stream_id(k) AS stream_id, s.type,
            '01900000-0000-7000-8000-' || lpad(k::VARCHAR, 12, '0') AS event_id,
            CASE WHEN s.type = 'task.enqueued' THEN 'seed' ELSE worker(t.task, s.shift) END
                AS actor,
            at_of(k) AS "at", task_id(t.task) AS task_id,
            CASE WHEN s.type = 'task.enqueued' THEN site_of(t.task) END AS site,
            CASE WHEN s.type = 'task.enqueued' THEN url_of(t.task)
                 WHEN s.type = 'task.page' THEN url_of(t.task) || '?page=' || s.page::VARCHAR
            END AS url,
            s.status,
            CASE WHEN s.status = 200 THEN page_bytes(t.task, s.page)
                 WHEN s.type = 'task.page' THEN 0 END AS bytes,
            CASE WHEN s.type <> 'task.page' THEN NULL
                 WHEN s.error = 'timeout' THEN 30000.0
                 ELSE 20 + 3000 * pow((k * 40503 % 65536) / 65536.0, 4) END AS elapsed_ms,
            s.page, s.attempt, s.deliveries, s.reason, s.error,
            CASE WHEN s.item IS NOT NULL THEN task_id(t.task) || '-' || s.item::VARCHAR END
                AS key,
            NULL AS action_id,
            CASE WHEN s.type = 'task.item' THEN '{{"title":"Item ' || t.task::VARCHAR || '-'
                || s.item::VARCHAR || '","price":' || (t.task % 1000)::VARCHAR || '.99}}' END
                AS data
        FROM (SELECT range AS k, range // {span} * {CONCURRENT} + range % {CONCURRENT} AS task,
                     range % {span} // {CONCURRENT} AS slot
              FROM range({first}, {last})) AS r
        JOIN variant_of AS t USING (task)
        JOIN slots AS s ON s.variant = t.variant AND s.slot = r.slot
        ORDER BY k
    """


# A stand-in for the msgpack bytes: the event's strings, about as long as its encoding.
_PAYLOAD_SQL = """
SELECT *, encode(concat_ws('|', event_id, type, actor, "at"::VARCHAR, task_id, site, url,
    status::VARCHAR, bytes::VARCHAR, elapsed_ms::VARCHAR, page::VARCHAR, reason, error, key,
    data)) AS payload
FROM ({events})
"""

_TASKS_SQL = f"""
SELECT t.task, t.variant, task_id(t.task) AS task_id, url_of(t.task) AS url,
       site_of(t.task) AS site, worker(t.task, last.shift) AS last_actor,
       at_of(stream_index(t.task, 0)) AS enqueued_at,
       at_of(stream_index(t.task, {SLOTS - 1})) AS updated_at,
       coalesce(b.bytes, 0) AS bytes
FROM variant_of AS t
JOIN slots AS last ON last.variant = t.variant AND last.slot = {SLOTS - 1}
LEFT JOIN (
    SELECT t.task, CAST(sum(page_bytes(t.task, s.page)) AS BIGINT) AS bytes
    FROM variant_of AS t JOIN slots AS s ON s.variant = t.variant
    WHERE s.type = 'task.page' AND s.status = 200 GROUP BY t.task
) AS b USING (task)
ORDER BY t.task
"""


def write_segments(
    con: duckdb.DuckDBPyConnection, archive: Path, events: int, segment_events: int
) -> list[SegmentInfo]:
    """The log as segments, generated and written one segment at a time."""
    segments = []
    for first in range(0, events, segment_events):
        sql = _events_sql(first, min(first + segment_events, events))
        table = con.sql(_PAYLOAD_SQL.format(events=sql)).to_arrow_table()
        segments.append(write_table(archive, table.select(SCHEMA.names).cast(SCHEMA)))
    return segments


def build_state(con: duckdb.DuckDBPyConnection, events: int) -> State:
    """The state the generated log folds into."""
    columns = con.sql(_TASKS_SQL).to_arrow_table().to_pydict()
    state = State(position=_stream_id(events - 1), job=JobState(events=events))
    job, sites = state.job, state.sites
    for n, (task, variant_index) in enumerate(
        zip(columns["task"], columns["variant"], strict=True)
    ):
        variant = VARIANTS[variant_index]
        final = variant.final
        task_id, site = columns["task_id"][n], columns["site"][n]
        slot = final["checkpoint_slot"]
        cursor, checkpoint_id = None, None
        if slot is not None:
            spec = variant.slots[slot]
            last_item = f"{task_id}-{spec[6]}" if spec[6] is not None else None
            cursor = Cursor(page=spec[1] or 0, last_item_key=last_item)
            checkpoint_id = _stream_id(_stream_index(task, slot))
        task_bytes = columns["bytes"][n]
        state.tasks[task_id] = TaskState(
            task_id=task_id,
            url=columns["url"][n],
            site=site,
            status=final["status"],
            attempt=final["attempt"],
            owner=columns["last_actor"][n] if final["owner"] else None,
            last_actor=columns["last_actor"][n],
            last_reason=final["last_reason"],
            last_error=final["last_error"],
            checkpoint=cursor,
            checkpoint_id=checkpoint_id,
            counts=Counts(pages=final["pages"], items=final["items"], bytes=task_bytes),
            pages_fetched=final["pages"],
            refetches=final["refetches"],
            bytes=task_bytes,
            items=final["items"],
            retries=final["retries"],
            recoveries=final["recoveries"],
            deliveries=2 if final["recoveries"] else 1,
            enqueued_at=columns["enqueued_at"][n],
            updated_at=columns["updated_at"][n],
            furthest_page=final["furthest_page"],
        )
        state.item_keys.update(f"{task_id}-{i}" for i in range(1, final["items"] + 1))
        found = sites.get(site)
        if found is None:
            found = sites[site] = SiteState(site=site)
        found.tasks[final["status"]] = found.tasks.get(final["status"], 0) + 1
        found.pages += final["pages"]
        found.failures += final["status"] == FAILED
        job.tasks[final["status"]] = job.tasks.get(final["status"], 0) + 1
        job.pages += final["pages"]
        job.refetches += final["refetches"]
        job.bytes += task_bytes
        job.items += final["items"]
    # The fold's window of recent ids: the last window full, the one before it.
    recent = events % DEDUP_WINDOW
    state.recent_event_ids = {_event_id(k) for k in range(events - recent, events)}
    older = range(max(events - recent - DEDUP_WINDOW, 0), events - recent)
    state.older_event_ids = {_event_id(k) for k in older}
    return state


def _stream_index(task: int, slot: int) -> int:
    span = CONCURRENT * SLOTS
    return task // CONCURRENT * span + slot * CONCURRENT + task % CONCURRENT


def _stream_id(k: int) -> str:
    return f"{START_MS + k}-0"


def _event_id(k: int) -> str:
    return f"01900000-0000-7000-8000-{k:012d}"


def generate(data_dir: Path, events: int, segment_events: int) -> dict[str, float]:
    """Write the job's archive, snapshot and manifest; sizes and times of the parts."""
    tasks = events // SLOTS
    store = Store(data_dir, JOB)
    store.prepare()
    with duckdb.connect(":memory:") as con:
        _setup(con, tasks)
        started = time.perf_counter()
        segments = write_segments(con, store.archive, events, segment_events)
        archive_s = time.perf_counter() - started
        started = time.perf_counter()
        state = build_state(con, events)
        state_s = time.perf_counter() - started
    # Both sides of one formula: the SQL macro wrote the last stream ID, Python the position.
    assert segments[-1].last_id == state.position, (segments[-1].last_id, state.position)
    snapshot = canonical(state)
    name = store.write_snapshot(snapshot, state.position)
    store.commit(
        Manifest(
            job=JOB,
            position=state.position,
            segments=tuple(segments),
            snapshot=name,
            snapshot_position=state.position,
            events=events,
            # With the figures over the page fetches a projector commits (computed from the
            # archive, as a projector migrating a job does): the report reads no segment.
            summary=msgspec.structs.replace(
                summarize(state),
                fetches=rebuild([store.archive / s.name for s in segments]).figures(),
            ),
        )
    )
    # The segments alone: each has an index file beside it (``.idx``), counted apart.
    archive_mb = sum(p.stat().st_size for p in store.segment_paths(store.read_manifest())) / 1e6
    index_mb = sum(p.stat().st_size for p in store.archive.glob("*.idx")) / 1e6
    return {
        "tasks": len(state.tasks),
        "segments": len(segments),
        "archive_mb": archive_mb,
        "index_mb": index_mb,
        "snapshot_mb": len(snapshot) / 1e6,
        "generate_archive_s": archive_s,
        "generate_state_s": state_s,
    }


def timed(work: Callable[[], T], rounds: int) -> tuple[float, T]:
    """The median time of ``rounds`` calls, and the last result."""
    times, results = [], []
    for _ in range(rounds):
        started = time.perf_counter()
        results.append(work())
        times.append(time.perf_counter() - started)
    return statistics.median(times), results[-1]


def read_and_drop_state(store: Store) -> None:
    """What ``build_report`` would pay for the whole state: ``read_committed``, then freeing it."""
    read_committed(store)


def bench(
    events: int,
    *,
    rounds: int = ROUNDS,
    segment_events: int = SEGMENT_EVENTS,
    keep: Path | None = None,
) -> tuple[dict[str, Any], Report]:
    """Generate a job of about ``events`` events, time its report; the figures and the report."""
    events -= events % (SLOTS * CONCURRENT)
    with contextlib.ExitStack() as stack:
        if keep is None:
            data_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="crawlog-")))
        else:
            data_dir = keep
        info = generate(data_dir, events, segment_events)
        store = Store(data_dir, JOB)
        now = (START_MS + events) / 1000 + 60
        report_s, report = timed(lambda: build_report(store, lease_s=LEASE_S, now=now), rounds)
        state_s, _ = timed(lambda: read_and_drop_state(store), rounds)
    totals = report.totals
    # The archive and the state, read through different files, agree.
    assert report.events == totals.events == events
    assert report.response_times.pages == totals.pages
    assert sum(totals.by_status.values()) == totals.tasks == info["tasks"]
    figures = {**info, "events": events, "rounds": rounds, "report_s": report_s}
    return {**figures, "state_s": state_s}, report


def measure(events: int) -> float:
    """The median time of ``build_report`` over a generated job of ``events`` events."""
    figures, _ = bench(events)
    return float(figures["report_s"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=None, help=f"default {FULL_EVENTS:,}")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_EVENTS:,} events")
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--segment-events", type=int, default=SEGMENT_EVENTS)
    parser.add_argument(
        "--keep",
        type=Path,
        default=None,
        metavar="DIR",
        help=f"generate into DIR and keep it (job {JOB!r}), to profile or query it after",
    )
    args = parser.parse_args()
    events = args.events or (QUICK_EVENTS if args.quick else FULL_EVENTS)
    f, report = bench(
        events, rounds=args.rounds, segment_events=args.segment_events, keep=args.keep
    )
    totals = report.totals
    rows = [
        ("events", f"{f['events']:,}"),
        ("tasks", f"{f['tasks']:,}"),
        (
            "segments",
            f"{f['segments']} (archive {f['archive_mb']:,.0f} MB, indexes {f['index_mb']:,.0f} MB)",
        ),
        ("snapshot", f"{f['snapshot_mb']:,.0f} MB"),
        (
            "generated in",
            f"{f['generate_archive_s']:.1f} s archive, {f['generate_state_s']:.1f} s state",
        ),
        (f"build_report (median of {f['rounds']})", f"{f['report_s']:.2f} s"),
        (
            "reading the full state",
            f"{f['state_s']:.2f} s (read_committed, which the report "
            "skips: it reads the manifest's summary)",
        ),
        ("target", f"<= {TARGET_S:.1f} s: {'met' if f['report_s'] <= TARGET_S else 'MISSED'}"),
        (
            "report",
            f"{totals.tasks:,} tasks, {totals.pages:,} pages, "
            f"p95 {report.response_times.p95_ms or 0:,.0f} ms, "
            f"{report.recoveries.pages_refetched:,} pages refetched",
        ),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name.ljust(width)}  {value}")
    summary = {
        "report_events": f["events"],
        "report_tasks": f["tasks"],
        "report_segments": f["segments"],
        "report_s": round(f["report_s"], 3),
        "state_s": round(f["state_s"], 3),
        "target_s": TARGET_S,
    }
    print(json.dumps(summary))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
