"""What each run of a job found: its pages new, changed, gone or unchanged (``crawlog
changes``, the DuckDB views ``runs`` and ``changes``).

A run past the first is ``crawlog recrawl``'s: its worker says on each first-page fetch
what it found (`PageFetched.change`), with the body hash it compares. A change is a page's
*last* verdict in its run (a retried 5xx has none; a kill and a second delivery record the
same verdict once more, counted once here), so each page is listed once per run. The first
run has no verdicts: every page it fetched (a 2xx: not a redirect another task's page
answers) is ``new`` there.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, Literal

import duckdb
import msgspec
import pyarrow as pa

from eventlog import (
    FIRST_RUN,
    Change,
    LogEntry,
    PageFetched,
    TaskAborted,
    TaskDone,
    TaskEnqueued,
    TaskEvent,
    TaskFailed,
    TaskRetried,
)
from projector._item_changes import ITEM_CHANGES, register_item_changes
from projector._replay import archived_entries
from projector._revisits import RequestKey, request_key
from projector._state_tables import MICROS
from projector._store import Manifest, Store

CHANGES: Final[tuple[Change, ...]] = ("new", "changed", "gone", "unchanged")
CHANGED_ONLY: Final[tuple[Change, ...]] = ("new", "changed", "gone")
"""What ``changes`` lists unless asked for every page (``--all``)."""
PAGE_STATUSES: Final = range(200, 300)
"""The statuses of a first run's fetch that found a page: not an error, nor a redirect
whose target another task fetched (that one is listed, by its own task)."""


class PageChange(msgspec.Struct, frozen=True, kw_only=True):
    """One page's verdict in one run."""

    url: str
    change: Change
    run: int
    time: float
    """When the fetch that found it was made (the worker's clock)."""
    task_id: str
    status: int
    previous_hash: str | None = None
    new_hash: str | None = None


class RunSummary(msgspec.Struct, frozen=True, kw_only=True):
    """One run: when its first and last fetch were, and its pages by verdict."""

    run: int
    started: float
    ended: float
    pages: int
    new: int = 0
    changed: int = 0
    gone: int = 0
    unchanged: int = 0


def page_changes(entries: Iterable[LogEntry], *, run: int | None = None) -> list[PageChange]:
    """Every page's verdict of every run (of ``run`` only if given), in the order each was
    first found; pure.

    A page a revisit found at another URL than the last time (its redirect now lands
    elsewhere) is two changes: the URL it was at ``gone``, the one it is at ``new``, as its
    items are (the worker says it ``changed``, and parses it)."""
    previous: dict[str, str | None] = {}  # task id -> the hash its revisit compared with
    request_of: dict[str, RequestKey] = {}  # task id -> its request, the same every run
    at: dict[RequestKey, tuple[int, str]] = {}  # request -> (run, URL) of its latest page
    before: dict[RequestKey, tuple[int, str]] = {}  # ... of its latest in a run before that
    found: dict[tuple[int, str], PageChange] = {}
    for entry in entries:
        event = entry.event
        if isinstance(event, TaskEnqueued):
            request_of[event.task_id] = request_key(event.url, event.spec)
            if event.revisit is not None:
                previous[event.task_id] = event.revisit.body_hash
            continue
        if not isinstance(event, PageFetched) or event.page > 1:
            continue
        change: Change | None = event.change
        if event.run == FIRST_RUN and change is None and event.status in PAGE_STATUSES:
            change = "new"
        request = request_of.get(event.task_id)
        was = None
        if request is not None:
            # Where an earlier run found the page: a redelivery's second fetch in the same
            # run compares with the same place as its first.
            latest = at.get(request)
            was = latest if latest is not None and latest[0] < event.run else before.get(request)
            if change in _FOUND_AT:
                if latest is not None and latest[0] < event.run:
                    before[request] = latest
                at[request] = (event.run, event.url)
        if change is None or (run is not None and event.run != run):
            continue
        made = PageChange(
            url=event.url,
            change=change,
            run=event.run,
            time=event.at,
            task_id=event.task_id,
            status=event.status,
            previous_hash=previous.get(event.task_id),
            new_hash=None if change == "gone" else event.body_hash,
        )
        if was is not None and was[1] != event.url and change in _FOUND_AT:
            # Moved: its old URL is gone, its new one new.
            left = msgspec.structs.replace(made, url=was[1], change="gone", new_hash=None)
            _add(found, left)
            made = msgspec.structs.replace(made, change="new", previous_hash=None)
        _add(found, made)
    return list(found.values())


_FOUND_AT: Final = frozenset({"new", "changed", "unchanged"})
"""The verdicts that found the page at the URL fetched (not ``gone``)."""


def _add(found: dict[tuple[int, str], PageChange], change: PageChange) -> None:
    key = (change.run, change.url)
    if key in found and found[key].change == change.change:
        return  # the same verdict again (a redelivered task)
    found[key] = change


class Unjudged(msgspec.Struct, frozen=True, kw_only=True):
    """A run's tasks whose page has no verdict: those that failed (or were aborted), by
    their last reason, and those not ended yet."""

    failed: dict[str, int] = msgspec.field(default_factory=dict)
    open: int = 0

    @property
    def total(self) -> int:
        return sum(self.failed.values()) + self.open


def unjudged(entries: Iterable[LogEntry], run: int) -> Unjudged:
    """``run``'s tasks whose first page got no verdict (`page_changes` lists none for
    them): failed or aborted (a redirect loop, robots.txt, a 5xx past its retries), or not
    ended yet. What a run's "no changes" must not hide. A task retried since its failure is
    open again; one the first run fetched as a page has its verdict (``new``)."""
    judged: set[str] = set()
    ended: dict[str, str | None] = {}  # task id -> its failure's reason, None: not ended
    for entry in entries:
        event = entry.event
        if not isinstance(event, TaskEvent) or event.run != run:
            continue
        if isinstance(event, TaskEnqueued):
            ended.setdefault(event.task_id, None)
        elif isinstance(event, PageFetched) and event.page <= 1:
            if event.change is not None or (run == FIRST_RUN and event.status in PAGE_STATUSES):
                judged.add(event.task_id)
        elif isinstance(event, TaskFailed | TaskAborted):
            ended[event.task_id] = event.reason
        elif isinstance(event, TaskDone):
            ended[event.task_id] = ""
        elif isinstance(event, TaskRetried):
            ended[event.task_id] = None
    failed: dict[str, int] = {}
    still_open = 0
    for task_id, reason in ended.items():
        if task_id in judged or reason == "":
            continue
        if reason is None:
            still_open += 1
        else:
            failed[reason] = failed.get(reason, 0) + 1
    return Unjudged(failed=failed, open=still_open)


def run_summaries(changes: Iterable[PageChange]) -> list[RunSummary]:
    """Each run's figures from its pages' verdicts, by run."""
    runs: dict[int, dict[str, float]] = {}
    for change in changes:
        row = runs.setdefault(
            change.run, {"started": change.time, "ended": change.time, "pages": 0}
        )
        row["started"] = min(row["started"], change.time)
        row["ended"] = max(row["ended"], change.time)
        row["pages"] += 1
        row[change.change] = row.get(change.change, 0) + 1
    return [
        RunSummary(
            run=run,
            started=row["started"],
            ended=row["ended"],
            pages=int(row["pages"]),
            new=int(row.get("new", 0)),
            changed=int(row.get("changed", 0)),
            gone=int(row.get("gone", 0)),
            unchanged=int(row.get("unchanged", 0)),
        )
        for run, row in sorted(runs.items())
    ]


Listed = Literal["changed", "all"]


def listed(changes: Iterable[PageChange], which: Listed = "changed") -> list[PageChange]:
    """``changes`` but the unchanged pages (all of them with ``which="all"``)."""
    kept = CHANGES if which == "all" else CHANGED_ONLY
    return [c for c in changes if c.change in kept]


RUN_VIEWS: Final = frozenset({"runs", "changes", ITEM_CHANGES})
"""The views `register_run_views` adds: every page's verdict per run, each run's counts,
and every item's change per run (`projector._item_changes`)."""

_CHANGE_COLUMNS: Final = pa.schema(
    [
        ("url", pa.string()),
        ("change", pa.string()),
        ("run", pa.int32()),
        ("epoch_s", pa.float64()),
        ("task_id", pa.string()),
        ("status", pa.int32()),
        ("previous_hash", pa.string()),
        ("new_hash", pa.string()),
    ]
)
_RUN_COLUMNS: Final = pa.schema(
    [
        ("run", pa.int32()),
        ("started_s", pa.float64()),
        ("ended_s", pa.float64()),
        ("pages", pa.int64()),
        ("new", pa.int64()),
        ("changed", pa.int64()),
        ("gone", pa.int64()),
        ("unchanged", pa.int64()),
    ]
)


def register_run_views(
    con: duckdb.DuckDBPyConnection, store: Store, manifest: Manifest, views: Iterable[str]
) -> None:
    """Add ``views`` (of `RUN_VIEWS`) to ``con``: the verdicts of the archive ``manifest``
    commits, as in-memory tables (read before the connection's file access is cut)."""
    wanted = RUN_VIEWS & set(views)
    if ITEM_CHANGES in wanted:
        register_item_changes(con, store, manifest)
    if not wanted - {ITEM_CHANGES}:
        return
    found = page_changes(archived_entries(store, manifest))
    rows = [msgspec.structs.asdict(c) for c in found]
    changes = pa.Table.from_pylist(
        [{**row, "epoch_s": row["time"]} for row in rows], schema=_CHANGE_COLUMNS
    )
    con.register("_changes", changes)
    con.execute(
        f"CREATE VIEW changes AS SELECT url, change, run, epoch_s, "
        f"make_timestamp(CAST(round(epoch_s * {MICROS}) AS BIGINT)) AS time, task_id, status, "
        "previous_hash, new_hash FROM _changes"
    )
    runs = pa.Table.from_pylist(
        [
            {**msgspec.structs.asdict(r), "started_s": r.started, "ended_s": r.ended}
            for r in run_summaries(found)
        ],
        schema=_RUN_COLUMNS,
    )
    con.register("_runs", runs)
    con.execute(
        f"CREATE VIEW runs AS SELECT run, "
        f"make_timestamp(CAST(round(started_s * {MICROS}) AS BIGINT)) AS started, "
        f"make_timestamp(CAST(round(ended_s * {MICROS}) AS BIGINT)) AS ended, "
        "pages, new, changed, gone, unchanged FROM _runs"
    )
