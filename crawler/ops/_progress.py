"""Progress of a job, computed: per-site counts from the folded state, rates and ETAs.

Pure: no I/O and no clock. The caller folds the log into a :class:`Tracker`, takes a
:class:`Snapshot` of it now and then (passing the time itself), and :func:`progress`
turns two snapshots into rows: the rate is what ended between them, the ETA what is left
at that rate. Where the numbers come from (committed state + stream tail, Redis for the
workers) is ``_progress_source``; how they are shown is ``crawler/cli/_progress_view.py``
(a terminal) and the console's pages.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

import msgspec

from crawler.ops._format import format_duration
from eventlog import LogEntry, PageFetched, RetryScheduled, TaskReclaimed, WorkerInfo
from projector import (
    ABORTED,
    DONE,
    FAILED,
    PAUSED,
    PENDING,
    RUNNING,
    TERMINAL,
    ClockSkew,
    State,
    apply,
    clock_offset,
    clock_skew,
    fold,
)

RATE_WINDOW_S = 10.0
"""Rates are measured over about this long: one second of a crawl is too noisy for an ETA."""
TOTAL = "*"
"""The site name of the row that sums every site."""


class SiteCounts(msgspec.Struct, frozen=True, kw_only=True):
    """What the log says about one site (or, as ``TOTAL``, all of them) at one moment."""

    site: str
    discovered: int = 0
    """Tasks enqueued: every URL found so far."""
    done: int = 0
    failed: int = 0
    """Failed and aborted tasks (aborted: recovery gave up)."""
    running: int = 0
    pending: int = 0
    paused: int = 0
    pages: int = 0
    retries: int = 0
    """Retries scheduled (429/5xx, network errors, a stopped worker giving a task back)."""
    recoveries: int = 0
    """Leases that expired and were taken over by another worker."""
    site_paused: bool = False
    circuit_open: bool = False
    circuit_openings: int = 0
    """Times the site's circuit opened (the total: on every site)."""

    @property
    def finished(self) -> int:
        """Tasks that ended: done, failed or aborted."""
        return self.done + self.failed

    @property
    def remaining(self) -> int:
        """Tasks not ended yet."""
        return max(self.discovered - self.finished, 0)


class Snapshot(msgspec.Struct, frozen=True, kw_only=True):
    """Every site's counts at time ``at`` (seconds, any monotonic clock) and log position."""

    at: float
    position: str
    sites: tuple[SiteCounts, ...]
    total: SiteCounts
    job_paused: bool = False
    job_paused_reason: str = ""
    events: int = 0
    """Events folded into the state this snapshot counts (the fold's own counter)."""
    items_dropped: dict[str, int] = {}
    """Items the spiders' pipelines dropped, by reason."""
    clock_skew: tuple[ClockSkew, ...] = ()
    """Workers whose clock is off the server's (``projector.clock_skew``)."""


class Row(msgspec.Struct, frozen=True, kw_only=True):
    """One line of progress: counts now, and the rate and ETA measured over ``window_s``."""

    counts: SiteCounts
    rate: float | None
    """Tasks ended per second; None before there are two snapshots to measure it."""
    pages_rate: float | None
    """Pages fetched per second; None like ``rate``."""
    eta_s: float | None
    """Seconds until every discovered task has ended at this rate; None: not moving, or
    ``paused``."""
    window_s: float
    paused: bool = False
    """Nothing left here can end until a pause is lifted (the job's, or the site's): the
    ETA is no figure but "paused"."""


class HostDelay(msgspec.Struct, frozen=True, kw_only=True):
    """The delay between request starts to one host, as every worker applies it now."""

    host: str
    delay_ms: int
    """The longest of the job's ``--delay``, robots.txt's Crawl-delay and the adapted one."""
    adapted_ms: int | None = None
    """Adapted to the host's latency (``--autothrottle``); None before its first sample."""


class Progress(msgspec.Struct, frozen=True, kw_only=True):
    """What a progress display shows: rows per site and in total, and the workers."""

    job: str
    position: str
    sites: tuple[Row, ...]
    total: Row
    run: int | None = None
    """The run whose tasks alone the rows count (a recrawl's, `of_run`); None: every task."""
    workers: tuple[WorkerInfo, ...] = ()
    lease_ms: int | None = None
    tail_events: int = 0
    """Events in the log after the projector's last commit: how far it is behind."""
    behind_s: float | None = None
    """Age of the oldest of those events (the server's clock); None when there is none."""
    job_paused: bool = False
    job_paused_reason: str = ""
    dead_letters: int = 0
    """Entries in the job's dead stream: nobody could decode them, no count includes them."""
    host_delays: tuple[HostDelay, ...] = ()
    """Per host, the delay applied now (with ``--autothrottle``; empty without)."""
    items_dropped: dict[str, int] = {}
    """Items the spiders' pipelines dropped, by reason."""
    requests_maybe_twice: int = 0
    """Requests that may have reached the sites twice (``projector.FetchFigures``' refetches
    in the log and first fetches after a lost lease), the tail's included."""
    clock_skew: tuple[ClockSkew, ...] = ()
    """Workers whose clock is off the server's by more than ``projector.CLOCK_SKEW_WARNING_S``:
    their events' own times are off by as much (the rates here are this process's clock)."""

    @property
    def complete(self) -> bool:
        """Every discovered task has ended."""
        counts = self.total.counts
        return counts.discovered > 0 and counts.remaining == 0


class Tracker:
    """A folded state plus the per-site retry and recovery counts the state does not keep.

    The state counts tasks by status per site but retries only per task: summing a million
    tasks every refresh would cost more than the refresh, so the sums are taken once and
    then kept in step, event by event, with what the fold really applied.
    """

    def __init__(self, state: State | None = None) -> None:
        self.state = state if state is not None else State()
        self.retries: dict[str, int] = {}
        self.recoveries: dict[str, int] = {}
        for task in self.state.tasks.values():
            if task.retries:
                self.retries[task.site] = self.retries.get(task.site, 0) + task.retries
            if task.recoveries:
                self.recoveries[task.site] = self.recoveries.get(task.site, 0) + task.recoveries
        self.clock_offsets: dict[str, float] = {}
        """Actor -> the largest ``projector.clock_offset`` of its page fetches: the committed
        figures' (``load_clock_offsets``), then the tail's."""

    def load_clock_offsets(self, offsets: dict[str, float]) -> None:
        """Start from the committed figures' offsets (``FetchFigures.clock_offsets``)."""
        self.clock_offsets = dict(offsets)

    def apply(self, entry: LogEntry) -> None:
        """Fold one entry, as the projector would."""
        event = entry.event
        if type(event) is PageFetched:
            _note_offset(self.clock_offsets, entry, event.actor)
        if not isinstance(event, RetryScheduled | TaskReclaimed):
            apply(self.state, entry)
            return
        self._count_retries(entry)

    def _count_retries(self, entry: LogEntry) -> None:
        """Fold a ``RetryScheduled`` or ``TaskReclaimed``, keeping the per-site sums in step."""
        event = entry.event
        assert isinstance(event, RetryScheduled | TaskReclaimed)
        task = self.state.tasks.get(event.task_id)
        if task is None:
            apply(self.state, entry)  # refused by the fold: an anomaly, nothing to count
            return
        retries, recoveries = task.retries, task.recoveries
        apply(self.state, entry)
        site = task.site
        # Differences, not +1: a refused or repeated event changes nothing.
        self.retries[site] = self.retries.get(site, 0) + task.retries - retries
        self.recoveries[site] = self.recoveries.get(site, 0) + task.recoveries - recoveries

    def fold(self, entries: Sequence[LogEntry]) -> None:
        """Fold entries in order, as :meth:`apply` would one by one.

        A refresh folds every event appended since the last one: the runs between two
        events that change a retry or recovery count go through the projector's batch
        loop (``projector.fold``, what the projector folds with), not one ``apply`` call
        each. A subclass that notes more per event (the console's) still gets each one.
        """
        if type(self).apply is not Tracker.apply:
            for entry in entries:
                self.apply(entry)
            return
        state, offsets, start = self.state, self.clock_offsets, 0
        for at, entry in enumerate(entries):
            event = entry.event
            if type(event) is PageFetched:
                _note_offset(offsets, entry, event.actor)
            elif type(event) is RetryScheduled or type(event) is TaskReclaimed:
                fold(entries[start:at], state)
                self._count_retries(entry)
                start = at + 1
        fold(entries[start:] if start else entries, state)

    def snapshot(self, at: float) -> Snapshot:
        """Every site's counts now; ``at`` is the caller's clock reading."""
        sites = tuple(
            SiteCounts(
                site=name,
                discovered=sum(site.tasks.values()),
                done=site.tasks.get(DONE, 0),
                failed=site.tasks.get(FAILED, 0) + site.tasks.get(ABORTED, 0),
                running=site.tasks.get(RUNNING, 0),
                pending=site.tasks.get(PENDING, 0),
                paused=site.tasks.get(PAUSED, 0),
                pages=site.pages,
                retries=self.retries.get(name, 0),
                recoveries=self.recoveries.get(name, 0),
                site_paused=site.paused,
                circuit_open=site.circuit == "open",
                circuit_openings=site.circuit_openings,
            )
            for name, site in sorted(self.state.sites.items())
        )
        job = self.state.job
        return Snapshot(
            at=at,
            position=self.state.position,
            sites=sites,
            total=sum_counts(sites),
            job_paused=job.paused,
            job_paused_reason=job.paused_reason,
            events=job.events,
            items_dropped=dict(sorted(job.items_dropped.items())),
            clock_skew=tuple(clock_skew(self.clock_offsets)),
        )


def _note_offset(offsets: dict[str, float], entry: LogEntry, actor: str) -> None:
    """Keep ``actor``'s largest clock offset (``entry`` is one of its page fetches)."""
    offset = clock_offset(entry)
    if offset > offsets.get(actor, offset - 1):
        offsets[actor] = offset


_COUNTED: Final = ("discovered", "done", "failed", "running", "pending", "paused", "pages")
_BY_STATUS: Final = {
    DONE: "done", FAILED: "failed", ABORTED: "failed", RUNNING: "running",
    PENDING: "pending", PAUSED: "paused",
}  # fmt: skip


def earlier_runs(state: State, run: int) -> dict[str, SiteCounts]:
    """Per site, what the ended tasks of the runs before ``run`` count in a snapshot
    (tasks by status, their pages, retries and recoveries): what ``run``'s own progress
    leaves out (`of_run`). Read once, as a run starts or a status loads: those tasks have
    ended. One of them not ended (retried by ``crawlog retry`` since) stays in the
    progress: work left is never left out."""
    counts: dict[str, dict[str, int]] = {}
    for task in state.tasks.values():
        if task.run >= run or task.status not in TERMINAL:
            continue
        site = counts.setdefault(task.site, dict.fromkeys((*_COUNTED, "retries", "recoveries"), 0))
        site["discovered"] += 1
        if (field := _BY_STATUS.get(task.status)) is not None:
            site[field] += 1
        site["pages"] += task.pages_fetched
        site["retries"] += task.retries
        site["recoveries"] += task.recoveries
    return {
        name: msgspec.structs.replace(SiteCounts(site=name), **fields)
        for name, fields in counts.items()
    }


def of_run(snapshot: Snapshot, earlier: Mapping[str, SiteCounts]) -> Snapshot:
    """``snapshot`` less what ``earlier`` (`earlier_runs`) counts: a run's own tasks, so
    that a recrawl's progress goes from 0 to its own pages, not from the runs before it."""
    if not earlier:
        return snapshot
    sites = tuple(_less(counts, earlier.get(counts.site)) for counts in snapshot.sites)
    return msgspec.structs.replace(snapshot, sites=sites, total=sum_counts(sites))


def _less(counts: SiteCounts, before: SiteCounts | None) -> SiteCounts:
    if before is None:
        return counts
    fewer = {
        name: max(0, getattr(counts, name) - getattr(before, name))
        for name in (*_COUNTED, "retries", "recoveries")
    }
    return msgspec.structs.replace(counts, **fewer)


def sum_counts(sites: Iterable[SiteCounts]) -> SiteCounts:
    """The ``TOTAL`` row: every count summed; paused / circuit if any site is."""
    fields = ("discovered", "done", "failed", "running", "pending", "paused", "pages")
    totals = dict.fromkeys((*fields, "retries", "recoveries", "circuit_openings"), 0)
    any_paused = any_open = False
    for counts in sites:
        for name in totals:
            totals[name] += getattr(counts, name)
        any_paused |= counts.site_paused
        any_open |= counts.circuit_open
    return SiteCounts(site=TOTAL, site_paused=any_paused, circuit_open=any_open, **totals)


def row(
    older: SiteCounts | None, newer: SiteCounts, window_s: float, *, paused: bool = False
) -> Row:
    """One site's row: its rate between two moments ``window_s`` apart, and its ETA.

    A rate is never negative: an operator's retry moves an ended task back to pending,
    which is work added, not work undone at a negative speed. ``paused``: what is left
    waits for a pause to be lifted, so there is no ETA (a rate decaying towards zero
    would give one that climbs for as long as the pause lasts).
    """
    rate: float | None
    pages_rate: float | None
    if older is None or window_s <= 0:
        rate = pages_rate = None
    else:
        rate = max(newer.finished - older.finished, 0) / window_s
        pages_rate = max(newer.pages - older.pages, 0) / window_s
    eta: float | None
    paused = paused and newer.remaining > 0
    if newer.remaining == 0:
        eta = 0.0
    elif rate and not paused:
        eta = newer.remaining / rate
    else:
        eta = None
    return Row(
        counts=newer,
        rate=rate,
        pages_rate=pages_rate,
        eta_s=eta,
        window_s=max(window_s, 0.0),
        paused=paused,
    )


def progress(
    job: str,
    older: Snapshot | None,
    newer: Snapshot,
    *,
    workers: Iterable[WorkerInfo] = (),
    lease_ms: int | None = None,
    tail_events: int = 0,
    behind_s: float | None = None,
    dead_letters: int = 0,
) -> Progress:
    """Rows for every site of ``newer`` and in total, rates measured since ``older``.

    A row is paused when the job is, or its site is; the total when the job is, or every
    site with tasks left is.
    """
    window = newer.at - older.at if older is not None else 0.0
    before = {c.site: c for c in older.sites} if older is not None else {}
    held = newer.job_paused
    waiting = [c for c in newer.sites if c.remaining]
    all_held = held or (bool(waiting) and all(c.site_paused for c in waiting))
    return Progress(
        job=job,
        position=newer.position,
        sites=tuple(
            row(before.get(c.site), c, window, paused=held or c.site_paused) for c in newer.sites
        ),
        total=row(older.total if older is not None else None, newer.total, window, paused=all_held),
        workers=tuple(workers),
        lease_ms=lease_ms,
        tail_events=tail_events,
        behind_s=behind_s,
        job_paused=newer.job_paused,
        job_paused_reason=newer.job_paused_reason,
        dead_letters=dead_letters,
        items_dropped=newer.items_dropped,
        clock_skew=newer.clock_skew,
    )


class RateWindow:
    """The snapshots of the last ``window_s`` seconds: rates are measured from the oldest."""

    def __init__(self, window_s: float = RATE_WINDOW_S) -> None:
        self.window_s = window_s
        self._snapshots: deque[Snapshot] = deque()

    def add(self, snapshot: Snapshot) -> Snapshot | None:
        """Keep ``snapshot``; the oldest one within the window before it (None: none yet)."""
        kept = self._snapshots
        # Keep one snapshot at or beyond the window's edge, so the window is full once it
        # can be, rather than shrinking to the refresh interval.
        while len(kept) >= 2 and snapshot.at - kept[1].at >= self.window_s:
            kept.popleft()
        older = kept[0] if kept else None
        kept.append(snapshot)
        return older


PAUSED_ETA = "paused"


def format_eta(row: Row) -> str:
    """A row's ETA as shown: a duration, ``-`` when unknown, ``paused`` when held back."""
    return PAUSED_ETA if row.paused else format_duration(row.eta_s)
