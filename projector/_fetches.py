"""The report's figures over every page fetch, kept by the projector as it reads the log.

``crawlog report``'s throughput, response-time, page-error, retry and recovery sections are
figures over every ``task.page`` event. Computed by SQL over the archive at each report they
cost time in proportion to the job (a window over every fetch, partitioned by task and page,
seconds at a million tasks). The projector sees every event once, in log order, so it keeps
them as running counts instead (:class:`FetchTracker`, one call a batch before the fold) and
commits them with the summary in each manifest (:class:`FetchFigures`): a report reads them in
constant time, and they are exactly as recent as the archive beside them.

Every count is the one the SQL gives. Two figures are not counts:

* the average response time is a sum over a count (the same sum, added in another order:
  equal to the last few bits of a double);
* p50 and p95 come from a histogram of log-spaced buckets (:data:`RELATIVE_ERROR`): each is
  within 1 % of the interpolated quantile (``quantile_cont``) of the fetches' ``elapsed_ms``.

The retry and recovery figures need, for each fetch, whether an earlier fetch of the same page
of the task was good. Keeping that bit for every page of every task would cost a million
entries at a million tasks; instead the tracker keeps the pages of a task only while they
say more than the fold's ``TaskState`` does. A task is *clean* when its pages fetched are
exactly ``furthest_page - pages_fetched + 1 .. furthest_page``, each fetched once and good:
the fold's two numbers then give them back. Every other task (a failed fetch, a refetch, a
fetch the fold refused) keeps its pages here (``_dirty``).

The manifest's figures hold the counts but not those pages. The whole tracker is committed
beside each snapshot instead (:class:`TrackedFetches`, at the snapshot's position): a
projector restarting from that snapshot restores it and observes the archived events after
the snapshot as it folds them, reading nothing else. Only a snapshot written before these
files existed, under figures that name kept-apart pages (or no figures at all), makes a
projector rebuild them from the whole archive (:func:`rebuild`, one pass over its page
fetches).
"""

from __future__ import annotations

import heapq
import math
import tempfile
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Final

import msgspec

from eventlog import (
    RECRAWL_ACTOR,
    LogEntry,
    PageFetched,
    RobotsNotWhole,
    TaskClaimed,
    TaskEnqueued,
    TaskOrphaned,
    TaskReclaimed,
    TaskReleased,
)
from projector._fold import HTTP_ERROR, STORE_RESTORED
from projector._state import State

LISTED: Final = 20
"""Refetched pages a report names (the rest are only counted)."""

MS_PER_MINUTE: Final = 60_000
"""Fetches are counted by the minute of their stream ID: the server's clock when the event
was written, whatever the clock of the worker that wrote it."""

RELATIVE_ERROR: Final = 0.01
"""The most a p50 or p95 from the histogram is off, relative to the exact quantile."""
GAMMA: Final = (1 + RELATIVE_ERROR) / (1 - RELATIVE_ERROR)
"""Bucket ``i`` holds the response times in ``(GAMMA ** (i - 1), GAMMA ** i]``: its value
``2 * GAMMA ** i / (GAMMA + 1)`` is within ``RELATIVE_ERROR`` of every one of them (about 700
buckets from a tenth of a millisecond to a hundred seconds)."""
_LOG_GAMMA: Final = math.log(GAMMA)
ZERO_BUCKET: Final = -(2**31)
"""The bucket of response times of 0 or less (and of none a log could place): valued 0."""

# A page's history as the tracker keeps it: fetched and never good, the same after its
# first retry's fetch was counted, and fetched good at least once.
_FAILED: Final = 0
_RETRIED: Final = 1
_GOOD: Final = 2


CLOCK_SKEW_WARNING_S: Final = 5.0
"""A worker whose clock is further than this from the server's is named in a warning
(``report``, ``status``): its events' own times (``at``) are off by that much; rates and
durations are taken from the server's clock (the stream IDs)."""


class ClockSkew(msgspec.Struct, frozen=True, kw_only=True):
    """A worker (an event's actor) whose clock is off the server's by ``offset_s`` (ahead
    if positive), as its page fetches' times and stream IDs tell."""

    worker: str
    offset_s: float


def clock_offset(entry: LogEntry) -> float:
    """How far ahead of the server's clock the entry's event says it was made: its ``at``
    minus its stream ID's time, in seconds (the time it took to be written included)."""
    stream_id = entry.stream_id
    return entry.event.at - int(stream_id[: stream_id.index("-")]) / 1000


def clock_skew(offsets: dict[str, float]) -> list[ClockSkew]:
    """The workers of ``offsets`` (actor -> the largest ``clock_offset`` of its fetches)
    off by more than ``CLOCK_SKEW_WARNING_S``, furthest first."""
    return [
        ClockSkew(worker=worker, offset_s=offset)
        for worker, offset in sorted(offsets.items(), key=lambda kv: (-abs(kv[1]), kv[0]))
        if abs(offset) > CLOCK_SKEW_WARNING_S
    ]


class RefetchedPage(msgspec.Struct, frozen=True, kw_only=True):
    """A page of a task fetched again after a good fetch of it, and how many times in all
    since that good fetch (it included); ``url``: its first fetch after the good one."""

    task_id: str
    page: int
    url: str
    times: int


class FetchFigures(msgspec.Struct, frozen=True, kw_only=True):
    """Every figure a report shows over the log's page fetches (and releases), as of the
    summary's position."""

    fetches: int = 0
    """``task.page`` events in the log (refused and repeated ones included)."""
    released: int = 0
    """``task.released`` events."""
    per_minute: dict[int, int] = {}
    """Fetches by UTC minute of the server's clock (their stream IDs' milliseconds
    ``// MS_PER_MINUTE``), minutes without any left out. Committed before these were the
    server's: ``floor(at / 60)``, the worker's."""
    statuses: dict[int, int] = {}
    """Fetches by HTTP status (0: no response)."""
    errors: dict[str, int] = {}
    """Fetches with an error, by error."""
    elapsed_sum_ms: float = 0.0
    elapsed_buckets: dict[int, int] = {}
    """Fetches by response-time bucket (see :data:`GAMMA`)."""
    retry_fetches: int = 0
    """Fetches of a page every earlier fetch of which had failed."""
    pages_retried: int = 0
    """Pages (of a task) with at least one such fetch."""
    extra_fetches: int = 0
    """Fetches of a page after a good fetch of it."""
    pages_refetched: int = 0
    """Pages (of a task) with at least one such fetch."""
    refetched: tuple[RefetchedPage, ...] = ()
    """The ``LISTED`` pages refetched most (then by task and page)."""
    dirty_tasks: int = 0
    """Tasks whose pages the projector keeps apart (see the module's doc): more than none, and
    a projector starting from these figures reads the archive to get them back."""
    unrecorded_refetches: int = 0
    """First fetches of a page (no ``task.page`` of it before) by a task taken again after a
    lost lease that may have sent a request it never recorded (``task.orphaned``, or
    ``task.reclaimed`` or ``task.claimed`` with ``deliveries`` > 1 whose
    ``unrecorded_fetch`` is true: its worker had taken a politeness slot for the task since
    the task's last write) and not fetched since: that worker may have requested the page
    and died (or lost the lease) before its fetch was written, so the site may have seen it
    twice. A lease lost while its task waited for a slot sent nothing and counts nothing."""
    retaken: tuple[str, ...] = ()
    """Tasks taken again after a lost lease and not fetched since (sorted)."""
    restored: tuple[str, ...] = ()
    """Tasks a restore reclaimed (``STORE_RESTORED``) and nobody claimed since (sorted): the
    page after their checkpoint counts as taken again only once a worker claims them, as
    what their old worker's journal gives back meanwhile was fetched once."""
    clock_offsets: dict[str, float] = {}
    """Actor -> the largest ``at`` minus its stream ID's time, in seconds, over its page
    fetches: how far ahead of the server's clock its own clock is (an event is written
    after it is made, so the largest offset is the one written soonest after)."""
    robots: dict[str, str] = {}
    """Site -> why its robots.txt was last not taken whole (``site.robots``'s reason):
    it could not be read, or was cut at 500 KiB."""
    recrawled: bool | None = None
    """Whether the log has a run past the first (a `RECRAWL_ACTOR` enqueue): the report
    then reads the archive for the items its latest run left. None: not known (figures
    committed before this was kept)."""


class TrackedFetches(msgspec.Struct, frozen=True, kw_only=True, array_like=True):
    """All a :class:`FetchTracker` holds, as committed beside a snapshot (at its position):
    a projector starting from that snapshot goes on from it, observing the archived events
    after it as it folds them, and reads no other archive."""

    fetches: int
    released: int
    per_minute: dict[int, int]
    statuses: dict[int, int]
    errors: dict[str, int]
    elapsed_sum_ms: float
    elapsed_buckets: dict[int, int]
    retry_fetches: int
    pages_retried: int
    extra_fetches: int
    refetched: list[tuple[str, int, int, str]]
    """Every refetched page: task, page, times, URL."""
    dirty: dict[str, dict[int, int]]
    """The pages of every task kept apart: page -> failed (0), retried (1) or good (2)."""
    unrecorded_refetches: int = 0
    retaken: list[str] = []
    clock_offsets: dict[str, float] = {}
    robots: dict[str, str] = {}
    restored: list[str] = []
    recrawled: bool | None = None


_TRACKED_ENCODER: Final = msgspec.msgpack.Encoder()
_TRACKED_DECODER: Final = msgspec.msgpack.Decoder(TrackedFetches)


def bucket(elapsed_ms: float) -> int:
    """The histogram bucket of a response time."""
    if elapsed_ms > 0 and math.isfinite(elapsed_ms):
        return math.ceil(math.log(elapsed_ms) / _LOG_GAMMA)
    return ZERO_BUCKET


def bucket_value(key: int) -> float:
    """The value a bucket stands for: within ``RELATIVE_ERROR`` of each time in it."""
    if key == ZERO_BUCKET:
        return 0.0
    return 2 * GAMMA**key / (GAMMA + 1)


def quantiles(buckets: dict[int, int], qs: Sequence[float]) -> list[float] | None:
    """``quantile_cont`` of the times counted in ``buckets``, each within ``RELATIVE_ERROR``.

    The exact quantile interpolates between the two times ranked around ``q * (n - 1)``;
    each is replaced by its bucket's value, within the bound, and so is their interpolation.
    """
    n = sum(buckets.values())
    if n == 0:
        return None
    ordered = sorted(buckets.items())
    cumulative: list[int] = []
    total = 0
    for _, count in ordered:
        total += count
        cumulative.append(total)

    def ranked(rank: int) -> float:
        # The bucket holding the time of this rank (0-based).
        lo, hi = 0, len(cumulative) - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if cumulative[mid] > rank:
                hi = mid
            else:
                lo = mid + 1
        return bucket_value(ordered[lo][0])

    values = []
    for q in qs:
        h = q * (n - 1)
        below = math.floor(h)
        low = ranked(below)
        high = ranked(min(below + 1, n - 1))
        values.append(low + (h - below) * (high - low))
    return values


class FetchTracker:
    """The running figures of :class:`FetchFigures`, fed every batch before it is folded."""

    def __init__(self) -> None:
        self.fetches = 0
        self.released = 0
        self.per_minute: Counter[int] = Counter()
        self.statuses: Counter[int] = Counter()
        self.errors: Counter[str] = Counter()
        self.elapsed_sum_ms = 0.0
        self.elapsed_buckets: Counter[int] = Counter()
        self.retry_fetches = 0
        self.pages_retried = 0
        self.extra_fetches = 0
        # (task, page) -> [times, url]: every refetched page (recoveries are rare).
        self.refetched: dict[tuple[str, int], list[Any]] = {}
        self._dirty: dict[str, dict[int, int]] = {}
        """The pages of the tasks the fold's figures do not describe (and of those fetched
        since the last ``prune``): page -> _FAILED, _RETRIED or _GOOD."""
        self._fetched: set[str] = set()
        """Tasks fetched since the last ``prune``."""
        self.unrecorded_refetches = 0
        self.retaken: set[str] = set()
        """Tasks taken again after a lost lease, not fetched since (few: recoveries are rare)."""
        self.restored: set[str] = set()
        """Tasks reclaimed by a restore and not claimed since (`FetchFigures.restored`)."""
        self.clock_offsets: dict[str, float] = {}
        self.robots: dict[str, str] = {}
        self.recrawled: bool | None = False
        """`FetchFigures.recrawled`: True from the first recrawl's enqueue on."""

    def response_times(self) -> tuple[float | None, float | None]:
        """(average, p95) in ms of every fetch counted, the p95 within ``RELATIVE_ERROR``
        (as ``crawlog report`` gives them); None before the first fetch."""
        if not self.fetches:
            return None, None
        found = quantiles(self.elapsed_buckets, (0.95,))
        return self.elapsed_sum_ms / self.fetches, found[0] if found else None

    def observe(self, state: State, entries: Iterable[LogEntry]) -> None:
        """Count a batch's fetches and releases; ``state`` is the fold's before the batch
        (with the tasks it names in memory)."""
        # It runs on the projector's main thread over every event: names are local, the
        # counts kept in locals until the end, the bucket computed inline (as ``bucket``).
        tasks, dirty, fetched, refetched = state.tasks, self._dirty, self._fetched, self.refetched
        per_minute, statuses, buckets = self.per_minute, self.statuses, self.elapsed_buckets
        errors = self.errors
        log, ceil, log_gamma, inf = math.log, math.ceil, _LOG_GAMMA, math.inf
        fetches = released = retry_fetches = pages_retried = extra_fetches = unrecorded = 0
        elapsed_sum = self.elapsed_sum_ms
        page_fetched, task_released = PageFetched, TaskReleased
        retakes, task_enqueued = _RETAKE_KINDS, TaskEnqueued
        retaken, offsets, ms_per_minute = self.retaken, self.clock_offsets, MS_PER_MINUTE
        for entry in entries:
            event: Any = entry.event
            kind = type(event)
            if kind is not page_fetched:
                if kind is task_released:
                    released += 1
                elif kind is RobotsNotWhole:
                    self.robots[event.site] = event.reason
                elif kind in retakes:
                    _note_retake(event, self.restored, retaken)
                elif kind is task_enqueued and event.actor == RECRAWL_ACTOR:
                    self.recrawled = True
                continue
            fetches += 1
            stream_id = entry.stream_id
            ms = int(stream_id[: stream_id.index("-")])
            per_minute[ms // ms_per_minute] += 1
            offset = event.at - ms / 1000
            actor = event.actor
            if offset > offsets.get(actor, -inf):
                offsets[actor] = offset
            status = event.status
            statuses[status] += 1
            error = event.error
            if error is not None:
                errors[error] += 1
            elapsed = event.elapsed_ms
            elapsed_sum += elapsed
            if 0 < elapsed < inf:
                buckets[ceil(log(elapsed) / log_gamma)] += 1
            else:
                buckets[ZERO_BUCKET] += 1
            good = error is None and 0 < status < HTTP_ERROR
            task_id, n = event.task_id, event.page
            again_after_loss = False
            if task_id in retaken:
                retaken.discard(task_id)
                again_after_loss = True
            pages = dirty.get(task_id)
            if pages is None:
                task = tasks.get(task_id)
                if task is None or not task.pages_fetched:
                    unrecorded += again_after_loss
                    dirty[task_id] = {n: _GOOD if good else _FAILED}
                    fetched.add(task_id)
                    continue
                top = task.furthest_page
                pages = dict.fromkeys(range(top - task.pages_fetched + 1, top + 1), _GOOD)
                dirty[task_id] = pages
                fetched.add(task_id)
            had = pages.get(n)
            if had is None:
                unrecorded += again_after_loss
                pages[n] = _GOOD if good else _FAILED
            elif had == _GOOD:
                extra_fetches += 1
                _count_refetch(refetched, task_id, n, event.url)
            else:
                retry_fetches += 1
                if had == _FAILED:
                    pages_retried += 1
                pages[n] = _GOOD if good else _RETRIED
        self._add_counts(
            fetches, released, retry_fetches, pages_retried, extra_fetches, unrecorded, elapsed_sum
        )

    def _add_counts(
        self,
        fetches: int,
        released: int,
        retry_fetches: int,
        pages_retried: int,
        extra_fetches: int,
        unrecorded: int,
        elapsed_sum: float,
    ) -> None:
        """Add a batch's counts, kept in ``observe``'s locals, to the figures."""
        self.fetches += fetches
        self.released += released
        self.retry_fetches += retry_fetches
        self.pages_retried += pages_retried
        self.extra_fetches += extra_fetches
        self.unrecorded_refetches += unrecorded
        self.elapsed_sum_ms = elapsed_sum

    def prune(self, state: State) -> None:
        """Forget the pages of the tasks fetched lately that the fold's figures describe
        (``state`` has folded everything observed)."""
        tasks, dirty = state.tasks, self._dirty
        for task_id in self._fetched:
            pages = dirty.get(task_id)
            task = tasks.get(task_id)
            if pages is not None and task is not None and _clean(pages, task.pages_fetched):
                top = task.furthest_page
                if not pages or (min(pages) == top - len(pages) + 1 and max(pages) == top):
                    del dirty[task_id]
        self._fetched = set()

    def figures(self) -> FetchFigures:
        """The figures as of everything observed (after a ``prune``)."""
        most = heapq.nsmallest(
            LISTED, self.refetched.items(), key=lambda kv: (-kv[1][0], kv[0][0], kv[0][1])
        )
        return FetchFigures(
            fetches=self.fetches,
            released=self.released,
            per_minute=dict(sorted(self.per_minute.items())),
            statuses=dict(sorted(self.statuses.items())),
            errors=dict(sorted(self.errors.items())),
            elapsed_sum_ms=self.elapsed_sum_ms,
            elapsed_buckets=dict(sorted(self.elapsed_buckets.items())),
            retry_fetches=self.retry_fetches,
            pages_retried=self.pages_retried,
            extra_fetches=self.extra_fetches,
            pages_refetched=len(self.refetched),
            refetched=tuple(
                RefetchedPage(task_id=task, page=page, url=url, times=times)
                for (task, page), (times, url) in most
            ),
            dirty_tasks=len(self._dirty),
            unrecorded_refetches=self.unrecorded_refetches,
            retaken=tuple(sorted(self.retaken)),
            clock_offsets=dict(sorted(self.clock_offsets.items())),
            robots=dict(sorted(self.robots.items())),
            restored=tuple(sorted(self.restored)),
            recrawled=self.recrawled,
        )

    def load(self, figures: FetchFigures) -> None:
        """Take committed figures that name no page kept apart (``needs_archive`` false)."""
        self._take_counts(figures)
        self.refetched = {(r.task_id, r.page): [r.times, r.url] for r in figures.refetched}
        self._dirty, self._fetched = {}, set()

    def dump(self) -> bytes:
        """Everything the tracker holds (after a ``prune``), for :meth:`restore`."""
        tracked = TrackedFetches(
            fetches=self.fetches,
            released=self.released,
            per_minute=dict(self.per_minute),
            statuses=dict(self.statuses),
            errors=dict(self.errors),
            elapsed_sum_ms=self.elapsed_sum_ms,
            elapsed_buckets=dict(self.elapsed_buckets),
            retry_fetches=self.retry_fetches,
            pages_retried=self.pages_retried,
            extra_fetches=self.extra_fetches,
            refetched=[
                (task, page, times, url) for (task, page), (times, url) in self.refetched.items()
            ],
            dirty=self._dirty,
            unrecorded_refetches=self.unrecorded_refetches,
            retaken=sorted(self.retaken),
            clock_offsets=self.clock_offsets,
            robots=self.robots,
            restored=sorted(self.restored),
            recrawled=self.recrawled,
        )
        return _TRACKED_ENCODER.encode(tracked)

    @classmethod
    def restore(cls, data: bytes) -> FetchTracker:
        """The tracker that was ``dump``ed as ``data``; ``msgspec.DecodeError`` if damaged."""
        tracked = _TRACKED_DECODER.decode(data)
        tracker = cls()
        tracker._take_counts(tracked)
        tracker.refetched = {
            (task, page): [times, url] for task, page, times, url in tracked.refetched
        }
        tracker._dirty = tracked.dirty
        return tracker

    def _take_counts(self, source: FetchFigures | TrackedFetches) -> None:
        """Take the counts both committed forms hold under the same names."""
        self.fetches, self.released = source.fetches, source.released
        self.per_minute = Counter(source.per_minute)
        self.statuses = Counter(source.statuses)
        self.errors = Counter(source.errors)
        self.elapsed_sum_ms = source.elapsed_sum_ms
        self.elapsed_buckets = Counter(source.elapsed_buckets)
        self.retry_fetches, self.pages_retried = source.retry_fetches, source.pages_retried
        self.extra_fetches = source.extra_fetches
        self.unrecorded_refetches = source.unrecorded_refetches
        self.retaken = set(source.retaken)
        self.restored = set(source.restored)
        self.clock_offsets = dict(source.clock_offsets)
        self.robots = dict(source.robots)
        self.recrawled = source.recrawled


_RETAKE_KINDS: Final = frozenset({TaskClaimed, TaskReclaimed, TaskOrphaned})


def _note_retake(
    event: TaskClaimed | TaskReclaimed | TaskOrphaned, restored: set[str], retaken: set[str]
) -> None:
    """Note in ``retaken`` a task taken again whose lost lease may have sent a request the
    log never heard of; a restore's reclaim waits in ``restored`` for the next claim."""
    task_id = event.task_id
    if isinstance(event, TaskReclaimed) and event.reason == STORE_RESTORED:
        restored.add(task_id)
    elif isinstance(event, TaskClaimed) and task_id in restored:
        # Taken again only now: what came between was its journal's.
        restored.discard(task_id)
        retaken.add(task_id)
    elif isinstance(event, TaskOrphaned | TaskReclaimed) or event.deliveries > 1:
        # Any of these ends a restore's wait for the next claim (as in the SQL). An
        # orphaned write is a worker's work on the task that never reached the log (a lease
        # taken over, or a store lost and restored without a reclaim of the task): the page
        # it was at may have been requested. A lease lost before its worker took a slot for
        # the task sent nothing.
        restored.discard(task_id)
        if isinstance(event, TaskOrphaned) or event.unrecorded_fetch:
            retaken.add(task_id)


def needs_archive(figures: FetchFigures | None) -> bool:
    """Whether a projector starting from ``figures`` must read the archive to go on: they
    are missing (a manifest written before them), or name pages the tracker kept apart."""
    if figures is None:
        return True
    return figures.dirty_tasks > 0 or figures.pages_refetched > len(figures.refetched)


def _count_refetch(
    refetched: dict[tuple[str, int], list[Any]], task_id: str, page: int, url: str
) -> None:
    """Count a good page fetched again: its second fetch, or one more."""
    again = refetched.get((task_id, page))
    if again is None:
        refetched[(task_id, page)] = [2, url]
    else:
        again[0] += 1


def _clean(pages: dict[int, int], pages_fetched: int) -> bool:
    return len(pages) == pages_fetched and all(v == _GOOD for v in pages.values())


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


# The same figures from the archive's events (``src``: the archive's columns): what a
# projector starting without them computes once. Only pages fetched more than once need the
# window over their fetches (a page fetched once is neither retried nor refetched), so the
# window runs over those alone; the pages of every task are one grouping, kept in a table
# DuckDB may spill to disk (``REBUILD_MEMORY``).
_FETCHES_SQL = f"""
CREATE TEMP VIEW fetches AS
SELECT task_id, page, url, status, error, elapsed_ms, "at", actor,
       CAST(split_part(stream_id, '-', 1) AS BIGINT) AS ms,
       CAST(split_part(stream_id, '-', 2) AS BIGINT) AS seq,
       (error IS NULL AND status > 0 AND status < {HTTP_ERROR}) AS good
FROM src WHERE type = 'task.page'
"""
_PAGES_SQL = """
CREATE TEMP TABLE pages AS
SELECT task_id, page, count(*) AS n, bool_or(good) AS good,
       min([ms, seq]) AS first, max([ms, seq]) AS last
FROM fetches GROUP BY task_id, page
"""
_HISTORY_SQL = """
CREATE TEMP TABLE history AS
SELECT task_id, page, url, ms, seq, good,
       bool_or(good) OVER (
           PARTITION BY task_id, page ORDER BY ms, seq
           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
       ) AS had_it
FROM fetches AS f
SEMI JOIN (SELECT task_id, page FROM pages WHERE n > 1) AS m
    ON f.task_id = m.task_id AND f.page = m.page
"""
# Tasks the fold's figures may not describe: a page fetched more than once or never good,
# pages with a gap, a fetch before the task's enqueue (or without one) or after it ended.
# More than the tracker would keep, never fewer: each is kept with its pages as they are.
_DIRTY_SQL = """
WITH tasks AS (
    SELECT task_id, count(*) AS pages, min(page) AS lo, max(page) AS hi,
           bool_and(n = 1 AND good) AS simple, min(first) AS first, max(last) AS last
    FROM pages GROUP BY task_id
), marks AS (
    SELECT task_id,
           min([ms, seq]) FILTER (WHERE type = 'task.enqueued') AS enqueued,
           min([ms, seq]) FILTER (WHERE type IN ('task.done', 'task.failed', 'task.aborted'))
               AS ended
    FROM (SELECT task_id, type,
                 CAST(split_part(stream_id, '-', 1) AS BIGINT) AS ms,
                 CAST(split_part(stream_id, '-', 2) AS BIGINT) AS seq
          FROM src
          WHERE type IN ('task.enqueued', 'task.done', 'task.failed', 'task.aborted'))
    GROUP BY task_id
), dirty AS (
    SELECT t.task_id FROM tasks AS t LEFT JOIN marks AS m ON t.task_id = m.task_id
    WHERE NOT t.simple OR t.hi - t.lo + 1 <> t.pages OR m.enqueued IS NULL
       OR t.first < m.enqueued OR (m.ended IS NOT NULL AND t.last > m.ended)
)
SELECT p.task_id, p.page, p.n, p.good FROM pages AS p SEMI JOIN dirty AS d ON p.task_id = d.task_id
"""


def _marks_sql(source: str, ms: str, seq: str) -> str:
    """Each task's page fetches, reclaims, orphaned writes and claims in log order, with
    ``raw`` 'page', 'restored' (a restore's reclaim), 'claim' (a first delivery) or 'retake'
    (any other reclaim, an orphaned write, a claim with ``deliveries`` > 1), and the last
    of the others before it (``mark``)."""
    restored = _sql_string(STORE_RESTORED)
    return f"""
SELECT *, last_value(CASE WHEN raw <> 'page' THEN raw END IGNORE NULLS) OVER (
           PARTITION BY task_id ORDER BY ms, seq
           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS mark
FROM (SELECT task_id, page, {ms} AS ms, {seq} AS seq,
             CASE WHEN type = 'task.page' THEN 'page'
                  WHEN type = 'task.reclaimed' AND reason = {restored} THEN 'restored'
                  WHEN type = 'task.claimed' AND deliveries <= 1 THEN 'claim'
                  ELSE 'retake' END AS raw
      FROM {source}
      WHERE type IN ('task.page', 'task.reclaimed', 'task.orphaned', 'task.claimed'))
"""


def retakes_sql(source: str, ms: str, seq: str) -> str:
    """Each task's page fetches and retakes in log order (``kind``: 'page' or 'retake'),
    with the kind of the one before (``before``) and whether it is the page's first fetch
    (``first``): of ``source``, whose stream ID's parts are the columns ``ms`` and ``seq``.
    A retake is a reclaim, an orphaned write, a claim with ``deliveries`` > 1, or the first
    claim after a restore's reclaim (not the reclaim itself: what a journal gives back
    before that claim was fetched once).

    The archive has no column for a retake's ``unrecorded_fetch``: every retake is one here,
    as in the logs written before it was recorded. Over a log that has some false, the SQL
    counts more than the projector does, never fewer; it runs only for a job whose
    committed state predates the projector's own figures (`rebuild`, the SQL report)."""
    return f"""
SELECT task_id, kind, ms, seq,
       lag(kind) OVER (PARTITION BY task_id ORDER BY ms, seq) AS before,
       kind = 'page' AND row_number() OVER (
           PARTITION BY task_id, kind, page ORDER BY ms, seq) = 1 AS first
FROM (SELECT task_id, page, ms, seq, CASE WHEN raw = 'page' THEN 'page' ELSE 'retake' END AS kind
      FROM ({_marks_sql(source, ms, seq)})
      WHERE raw IN ('page', 'retake') OR (raw = 'claim' AND mark = 'restored'))
"""


def unrecorded_refetches_sql(source: str, ms: str, seq: str) -> str:
    """``FetchFigures.unrecorded_refetches`` of ``source`` (see :func:`retakes_sql`)."""
    return (
        f"SELECT count(*) FROM ({retakes_sql(source, ms, seq)}) "
        "WHERE kind = 'page' AND first AND before = 'retake'"
    )


def robots_sql(source: str, ms: str, seq: str) -> str:
    """``FetchFigures.robots`` of ``source`` (site, reason rows; see :func:`retakes_sql`)."""
    return (
        f"SELECT site, arg_max(reason, [{ms}, {seq}]) FROM {source} "
        "WHERE type = 'site.robots' GROUP BY site ORDER BY site"
    )


_STREAM_MS: Final = "CAST(split_part(stream_id, '-', 1) AS BIGINT)"
_STREAM_SEQ: Final = "CAST(split_part(stream_id, '-', 2) AS BIGINT)"

REBUILD_MEMORY: Final = "2GB"
"""DuckDB's memory limit for a rebuild: past it, it spills to its temporary directory."""


def _source(con: Any, paths: Sequence[Path]) -> None:
    if paths:
        files = ", ".join(_sql_string(str(p)) for p in paths)
        con.execute(f"CREATE VIEW src AS SELECT * FROM read_parquet([{files}])")
    else:
        con.execute(
            "CREATE VIEW src AS SELECT NULL::VARCHAR AS task_id, NULL::INTEGER AS page, "
            "NULL::VARCHAR AS url, NULL::INTEGER AS status, NULL::VARCHAR AS error, "
            'NULL::DOUBLE AS elapsed_ms, NULL::DOUBLE AS "at", NULL::VARCHAR AS stream_id, '
            "NULL::VARCHAR AS type, NULL::VARCHAR AS actor, NULL::INTEGER AS deliveries, "
            "NULL::VARCHAR AS site, NULL::VARCHAR AS reason "
            "WHERE false"
        )


def counts_from_archive(con: Any) -> FetchTracker:
    """The counts of a tracker that observed every event of ``src`` (a view of the archive
    on ``con``), but the pages kept apart (see :func:`rebuild`)."""
    con.execute(_FETCHES_SQL)
    con.execute(_PAGES_SQL)
    con.execute(_HISTORY_SQL)
    tracker = FetchTracker()
    (tracker.recrawled,) = con.execute(
        "SELECT count(*) > 0 FROM src WHERE type = 'task.enqueued' AND actor = ?", [RECRAWL_ACTOR]
    ).fetchone()
    row = con.execute("SELECT count(*), coalesce(sum(elapsed_ms), 0.0) FROM fetches").fetchone()
    tracker.fetches, tracker.elapsed_sum_ms = row
    (tracker.released,) = con.execute(
        "SELECT count(*) FROM src WHERE type = 'task.released'"
    ).fetchone()
    minute = f"ms // {MS_PER_MINUTE}"
    tracker.per_minute = Counter(
        dict(con.execute(f"SELECT {minute} AS m, count(*) FROM fetches GROUP BY m").fetchall())
    )
    tracker.statuses = Counter(
        dict(con.execute("SELECT status, count(*) FROM fetches GROUP BY status").fetchall())
    )
    tracker.errors = Counter(
        dict(
            con.execute(
                "SELECT error, count(*) FROM fetches WHERE error IS NOT NULL GROUP BY error"
            ).fetchall()
        )
    )
    # Bucketed by DuckDB (a million distinct times are not a million rows for Python): its
    # logarithm may round a time on a bucket's edge into the next bucket, whose value is
    # within the bound of it all the same.
    sql_bucket = (
        f"CASE WHEN elapsed_ms > 0 AND isfinite(elapsed_ms) "
        f"THEN CAST(ceil(ln(elapsed_ms) / {_LOG_GAMMA!r}) AS BIGINT) ELSE {ZERO_BUCKET} END"
    )
    buckets = Counter(
        dict(con.execute(f"SELECT {sql_bucket} AS b, count(*) FROM fetches GROUP BY b").fetchall())
    )
    tracker.elapsed_buckets = buckets
    retried = con.execute(
        "SELECT count(DISTINCT (task_id, page)), count(*) FROM history WHERE NOT had_it"
    ).fetchone()
    tracker.pages_retried, tracker.retry_fetches = retried
    tracker.refetched = {
        (task, page): [times, url]
        for task, page, times, url in con.execute(
            "SELECT task_id, page, count(*) + 1, arg_min(url, [ms, seq]) FROM history "
            "WHERE had_it GROUP BY task_id, page"
        ).fetchall()
    }
    tracker.extra_fetches = sum(times - 1 for times, _ in tracker.refetched.values())
    tracker.clock_offsets = dict(
        con.execute('SELECT actor, max("at" - ms / 1000) FROM fetches GROUP BY actor').fetchall()
    )
    (tracker.unrecorded_refetches,) = con.execute(
        unrecorded_refetches_sql("src", _STREAM_MS, _STREAM_SEQ)
    ).fetchone()
    tracker.robots = dict(con.execute(robots_sql("src", _STREAM_MS, _STREAM_SEQ)).fetchall())
    tracker.retaken = {
        task_id
        for (task_id,) in con.execute(
            f"SELECT task_id FROM ({retakes_sql('src', _STREAM_MS, _STREAM_SEQ)}) "
            "GROUP BY task_id HAVING arg_max(kind, [ms, seq]) = 'retake'"
        ).fetchall()
    }
    tracker.restored = {
        task_id
        for (task_id,) in con.execute(
            f"SELECT task_id FROM ({_marks_sql('src', _STREAM_MS, _STREAM_SEQ)}) "
            "WHERE raw <> 'page' GROUP BY task_id HAVING arg_max(raw, [ms, seq]) = 'restored'"
        ).fetchall()
    }
    return tracker


def rebuild(paths: Sequence[Path]) -> FetchTracker:
    """A tracker that observed every event of the archive segments ``paths``: the counts,
    and the pages of every task the fold's figures might not describe."""
    import duckdb  # only a projector starting over such an archive needs it

    con = duckdb.connect(":memory:")
    spill = tempfile.TemporaryDirectory(prefix="crawlog-rebuild-")
    try:
        con.execute("SET enable_progress_bar = false")
        con.execute(f"SET temp_directory = {_sql_string(spill.name)}")
        con.execute(f"SET memory_limit = '{REBUILD_MEMORY}'")
        con.execute("SET preserve_insertion_order = false")
        _source(con, paths)
        tracker = counts_from_archive(con)
        dirty: dict[str, dict[int, int]] = {}
        for task_id, page, n, good in con.execute(_DIRTY_SQL).fetchall():
            state = _GOOD if good else (_RETRIED if n > 1 else _FAILED)
            dirty.setdefault(task_id, {})[page] = state
        tracker._dirty = dirty  # its own class, built from the archive
        tracker._fetched = set(dirty)  # pruned at the next commit
    finally:
        con.close()
        spill.cleanup()
    return tracker
