"""What each run did to a job's items: each item ``added``, ``changed`` or ``removed``
(``crawlog changes --items``, the feed ``crawlog export --follow --changes``).

An item is its key (the spider's). In log order: the first time a run scrapes a key it is
``added`` if no run had it (or its page had lost it), ``changed`` if its data differs from
what it was, and nothing if the same; a key scraped again in the same run (a redelivered
task, another page) is not looked at again. A page a run found ``gone`` removes every item
it held; a page a run found ``changed`` removes, when its task is done, the items it held
and did not scrape again. An unchanged page is not parsed: its items stay as they are.
The first run's items are all ``added``. An item is held by the page that scraped it last:
one that moves to another page (its key scraped there) is not removed with the page it
left, and one removed and then scraped by another page of the same run (a page now
redirecting to another task's) is ``added`` back, whichever of the two came first in the
log.

Each change is placed in the log by the entry that made it: its stream ID, and its place
among that entry's changes (`SUB_SEQ`), so a feed of them resumes after the last written.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final, Literal, NamedTuple

import duckdb
import msgspec
import pyarrow as pa

from eventlog import (
    RECRAWL_ACTOR,
    START,
    Change,
    ItemScraped,
    LogEntry,
    PageFetched,
    TaskDone,
    TaskEnqueued,
    stream_id_key,
)
from projector._archive import ArchiveCorrupt
from projector._replay import archived_batches, archived_entries
from projector._state_tables import MICROS
from projector._store import Manifest, Store
from projector._views import ITEM_EVENTS

ItemChangeKind = Literal["added", "changed", "removed"]
ITEM_CHANGES: Final = "item_changes"
"""The DuckDB view of the item changes (`register_item_changes`)."""
SUB_SEQ: Final = 1_000_000
"""A change's place in the feed: its entry's stream sequence times this, plus its place
among the entry's changes (a gone page's items are one entry's changes)."""
_json = msgspec.json.Encoder()


class ItemChange(msgspec.Struct, frozen=True, kw_only=True):
    """One item's change in one run."""

    key: str
    change: ItemChangeKind
    run: int
    url: str
    """The page that scraped it (for ``removed``: the page that lost it)."""
    task_id: str
    time: float
    data: dict[str, Any] | None = None
    """The item now (None: removed)."""
    previous: dict[str, Any] | None = None
    """The item before (None: added)."""
    worker: str = ""
    """The worker that scraped it (empty for ``removed``)."""
    stream_id: str = "0-0"
    """Where in the feed: the entry's stream ID, its sequence part times `SUB_SEQ` plus the
    change's place among the entry's."""


class _Live(NamedTuple):
    """A live item: the scrape that made it what it is, the page holding it, where in the
    log that scrape is."""

    scrape: ItemScraped
    page: str
    stream_id: str


class ItemTally(msgspec.Struct, frozen=True, kw_only=True):
    """A job's items over its runs, as the item changes have them (`item_tally`)."""

    runs: int
    """The job's latest run in the log."""
    keys: int
    """Item keys any run scraped."""
    live: int
    """Keys live after the latest run: ``keys`` less those a run removed and none
    scraped again."""
    scraped_again: int
    """Scrapes of a key an earlier run had, each run and key once: a recrawl's new look
    at an item, which the job's totals count with the duplicates it ignored."""


class _Items:
    """The fold's memory: every live item, the page holding it, and what each task did."""

    def __init__(self) -> None:
        self.live: dict[str, _Live] = {}  # key -> its scrape now, and the page holding it
        self.on_page: dict[str, dict[str, None]] = {}  # page -> its live keys, in order
        self.removed: set[str] = set()  # keys a run removed and none scraped again
        self.looked: set[tuple[int, str]] = set()  # (run, key) already looked at
        self.tasks: dict[str, tuple[int, str]] = {}  # task id -> (run, url)
        self.verdicts: dict[str, Change] = {}  # task id -> its first page's verdict
        self.scraped: dict[str, set[str]] = {}  # task id -> keys it scraped
        self.runs = 0
        self.scraped_again = 0

    def hold(self, key: str, live: _Live) -> _Live | None:
        """``key`` live as ``live`` now, on its page; what it was before (None: not live)."""
        before = self.live.get(key)
        if before is not None and before.page != live.page:
            del self.on_page[before.page][key]
        self.live[key] = live
        self.on_page.setdefault(live.page, {})[key] = None
        self.removed.discard(key)
        return before

    def drop(self, key: str) -> _Live:
        """``key`` no longer live (a run removed it); what it was."""
        live = self.live.pop(key)
        del self.on_page[live.page][key]
        self.removed.add(key)
        return live


def item_changes(entries: Iterable[LogEntry], *, run: int | None = None) -> list[ItemChange]:
    """Every item change of every run (of ``run`` only, if given), in log order; pure."""
    memory = _Items()
    found: list[ItemChange] = []
    for entry in entries:
        found.extend(c for c in _placed(memory, entry) if run is None or c.run == run)
    return found


def _placed(memory: _Items, entry: LogEntry) -> list[ItemChange]:
    """``entry``'s changes folded into ``memory``, each with its place in the feed."""
    made = _fold(memory, entry)
    if not made:
        return made
    ms, _, seq = entry.stream_id.partition("-")
    return [
        msgspec.structs.replace(change, stream_id=f"{ms}-{int(seq or 0) * SUB_SEQ + place}")
        for place, change in enumerate(made)
    ]


class ItemChangeFold:
    """`item_changes` of a growing archive, folded once: the fold's memory and how far it
    read are kept between looks, so each look reads only the segments committed since
    (the feed ``export --follow --changes``, whose every look would else read the whole
    archive). The changes found and not yet taken (`take_after`) are kept."""

    def __init__(self) -> None:
        self._memory = _Items()
        self.position = START
        """The stream ID of the last archived entry folded."""
        self.entries_read = 0
        """Archived entries read over every look (each once, however many looks)."""
        self._found: list[ItemChange] = []

    def advance(self, store: Store, manifest: Manifest) -> None:
        """Fold the entries ``manifest`` commits after `position`. A segment that cannot
        be read raises `ArchiveCorrupt`; what was folded before it stays folded. An archive
        that ends before `position` (put back by ``crawlog restore``) is folded anew."""
        if stream_id_key(manifest.position) < stream_id_key(self.position):
            self._memory, self.position, self._found = _Items(), START, []
        after = None if self.position == START else self.position
        for batch in archived_batches(store, manifest, after=after):
            for entry in batch:
                self._found.extend(_placed(self._memory, entry))
                self.position = entry.stream_id
                self.entries_read += 1

    def take_after(self, stream_id: str) -> list[ItemChange]:
        """The changes found after the feed's ``stream_id`` (those up to it forgotten: the
        feed has them), in log order."""
        done = stream_id_key(stream_id)
        self._found = [c for c in self._found if stream_id_key(c.stream_id) > done]
        return list(self._found)


def item_tally(entries: Iterable[LogEntry]) -> ItemTally:
    """The items of the log ``entries`` over its runs; pure."""
    fold = ItemTallyFold()
    for entry in entries:
        fold.add(entry)
    return fold.tally()


class ItemTallyFold:
    """`item_tally`, an entry at a time: for a pass over the log that folds other things
    too (``crawlog report``'s, with the revisit schedules)."""

    def __init__(self) -> None:
        self._memory = _Items()

    def add(self, entry: LogEntry) -> None:
        _fold(self._memory, entry)

    def tally(self) -> ItemTally:
        """The items of the entries added so far."""
        memory = self._memory
        return ItemTally(
            runs=memory.runs,
            keys=len(memory.live) + len(memory.removed),
            live=len(memory.live),
            scraped_again=memory.scraped_again,
        )


def _fold(memory: _Items, entry: LogEntry) -> list[ItemChange]:
    event = entry.event
    if isinstance(event, TaskEnqueued):
        memory.tasks[event.task_id] = (event.run, event.url)
        memory.runs = max(memory.runs, event.run)
    elif isinstance(event, ItemScraped):
        return _scraped(memory, event, entry.stream_id)
    elif isinstance(event, PageFetched) and event.page <= 1 and event.change is not None:
        memory.verdicts[event.task_id] = event.change
        if event.change == "gone":
            memory.tasks.setdefault(event.task_id, (event.run, event.url))
            return _removed(memory, event.task_id, event.at, kept=set())
    elif isinstance(event, TaskDone) and memory.verdicts.get(event.task_id) == "changed":
        return _removed(memory, event.task_id, event.at, kept=memory.scraped.get(event.task_id))
    return []


def _scraped(memory: _Items, event: ItemScraped, stream_id: str) -> list[ItemChange]:
    run, url = memory.tasks.get(event.task_id, (event.run, ""))
    memory.scraped.setdefault(event.task_id, set()).add(event.key)
    if (run, event.key) in memory.looked:
        return []
    memory.looked.add((run, event.key))
    if event.key in memory.live or event.key in memory.removed:
        memory.scraped_again += 1
    before = memory.hold(event.key, _Live(event, url, stream_id))
    if before is not None and before.scrape.data == event.data:
        return []
    return [
        ItemChange(
            key=event.key,
            change="added" if before is None else "changed",
            run=run,
            url=url,
            task_id=event.task_id,
            time=event.at,
            data=event.data,
            previous=None if before is None else before.scrape.data,
            worker=event.actor,
        )
    ]


def _removed(memory: _Items, task_id: str, at: float, *, kept: set[str] | None) -> list[ItemChange]:
    """The items the page of ``task_id`` held and did not scrape again (``kept``)."""
    run, url = memory.tasks.get(task_id, (0, ""))
    held = memory.on_page.get(url, {})
    lost = [k for k in held if k not in (kept or set()) and (run, k) not in memory.looked]
    changes = []
    for key in lost:
        data = memory.drop(key).scrape.data
        changes.append(
            ItemChange(
                key=key,
                change="removed",
                run=run,
                url=url,
                task_id=task_id,
                time=at,
                previous=data,
            )
        )
    return changes


_COLUMNS: Final = pa.schema(
    [
        ("key", pa.string()),
        ("change", pa.string()),
        ("run", pa.int32()),
        ("url", pa.string()),
        ("task_id", pa.string()),
        ("epoch_s", pa.float64()),
        ("data", pa.string()),
        ("previous", pa.string()),
        ("stream_id", pa.string()),
        ("stream_ms", pa.int64()),
        ("stream_seq", pa.int64()),
    ]
)


LIVE_ITEM_EVENTS: Final = "live_item_events"
"""The items as the job's latest run left them (`register_live_items`), in the
``item_events`` view's columns."""
_LIVE_COLUMNS: Final = pa.schema(
    [
        ("key", pa.string()),
        ("task_id", pa.string()),
        ("data", pa.string()),
        ("worker", pa.string()),
        ("epoch_s", pa.float64()),
        ("stream_id", pa.string()),
        ("stream_ms", pa.int64()),
        ("stream_seq", pa.int64()),
    ]
)


def live_items(entries: Iterable[LogEntry]) -> list[tuple[ItemScraped, str]]:
    """Each item key live at the end of ``entries`` (not removed by a run), with the scrape
    that made it what it is and that scrape's stream ID, in log order; pure."""
    memory = _Items()
    for entry in entries:
        _fold(memory, entry)
    found = sorted(memory.live.values(), key=lambda live: stream_id_key(live.stream_id))
    return [(live.scrape, live.stream_id) for live in found]


def recrawled(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the job whose archive ``con``'s ``events`` view reads was run again (a
    `RECRAWL_ACTOR` enqueue): its items are then what its runs' changes left."""
    return bool(
        con.execute(
            "SELECT 1 FROM events WHERE type = 'task.enqueued' AND actor = ? LIMIT 1",
            [RECRAWL_ACTOR],
        ).fetchall()
    )


def changes_after(
    fold: ItemChangeFold, store: Store, manifest: Manifest, after: str
) -> list[ItemChange]:
    """``fold`` advanced to the archive ``manifest`` commits: its changes after ``after``.
    A segment the projector merged away meanwhile is said as DuckDB says a file gone
    (`duckdb.IOException`), which `run_on_committed` reads the new manifest again for."""
    try:
        fold.advance(store, manifest)
    except ArchiveCorrupt as exc:
        if store.read_manifest() == manifest:
            raise
        raise duckdb.IOException(str(exc)) from None
    return fold.take_after(after)


def register_live_items(con: duckdb.DuckDBPyConnection, store: Store, manifest: Manifest) -> str:
    """The view the items of the archive ``manifest`` commits are read from: `ITEM_EVENTS`
    (each key's first scrape) for a job crawled once; for a recrawled one (a
    `RECRAWL_ACTOR` enqueue in ``con``'s ``events``), `LIVE_ITEM_EVENTS`, added to ``con``:
    each key as its latest run left it, none a run removed (`live_items`, the whole
    archive folded). A changed item's first scrape was its data before: exported, a
    recrawled job's items were its first run's."""
    if not recrawled(con):
        return ITEM_EVENTS
    try:
        found = live_items(archived_entries(store, manifest))
    except ArchiveCorrupt as exc:
        if store.read_manifest() == manifest:
            raise
        raise duckdb.IOException(str(exc)) from None
    rows = []
    for event, stream_id in found:
        ms, _, seq = stream_id.partition("-")
        rows.append(
            {
                "key": event.key,
                "task_id": event.task_id,
                "data": _json.encode(event.data).decode(),
                "worker": event.actor,
                "epoch_s": event.at,
                "stream_id": stream_id,
                "stream_ms": int(ms),
                "stream_seq": int(seq or 0),
            }
        )
    con.register("_live_items", pa.Table.from_pylist(rows, schema=_LIVE_COLUMNS))
    con.execute(
        f"CREATE OR REPLACE VIEW {LIVE_ITEM_EVENTS} AS SELECT key, task_id, "
        "CAST(data AS JSON) AS data, worker, epoch_s, "
        f"make_timestamp(CAST(round(epoch_s * {MICROS}) AS BIGINT)) AS time, stream_id, "
        "stream_ms, stream_seq FROM _live_items"
    )
    return LIVE_ITEM_EVENTS


def register_item_changes(
    con: duckdb.DuckDBPyConnection,
    store: Store,
    manifest: Manifest,
    *,
    fold: ItemChangeFold | None = None,
    after: str = START,
) -> None:
    """Add the view `ITEM_CHANGES` to ``con``: the changes of the archive ``manifest``
    commits, in log order, each with its place in it (``stream_id``, ``stream_ms``,
    ``stream_seq``) and its data and previous data as JSON. With ``fold``, only its
    changes after ``after``, folded on from where it was (the feed's).

    A segment the projector merged away meanwhile is said as DuckDB says a file gone
    (`duckdb.IOException`), which `run_on_committed` reads the new manifest again for."""
    if fold is not None:
        changes = changes_after(fold, store, manifest, after)
    else:
        try:
            changes = item_changes(archived_entries(store, manifest))
        except ArchiveCorrupt as exc:
            if store.read_manifest() == manifest:
                raise
            raise duckdb.IOException(str(exc)) from None
    rows = []
    for change in changes:
        ms, _, seq = change.stream_id.partition("-")
        rows.append(
            {
                "key": change.key,
                "change": change.change,
                "run": change.run,
                "url": change.url,
                "task_id": change.task_id,
                "epoch_s": change.time,
                "data": None if change.data is None else _json.encode(change.data).decode(),
                "previous": (
                    None if change.previous is None else _json.encode(change.previous).decode()
                ),
                "stream_id": change.stream_id,
                "stream_ms": int(ms),
                "stream_seq": int(seq),
            }
        )
    con.register("_item_changes", pa.Table.from_pylist(rows, schema=_COLUMNS))
    con.execute(
        f"CREATE OR REPLACE VIEW {ITEM_CHANGES} AS SELECT key, change, run, url, task_id, "
        f"epoch_s, make_timestamp(CAST(round(epoch_s * {MICROS}) AS BIGINT)) AS time, data, "
        "previous, stream_id, stream_ms, stream_seq FROM _item_changes"
    )
