"""What the console's pages show of one job, kept folded between requests.

One :class:`JobWatch` per job: the CLI's ``LiveProgress`` (committed state + the stream's
tail, the same numbers ``crawlog status`` prints), refreshed at most every
:data:`FRESH_S` however many pages and browsers ask, plus what the fold does not keep and
the panel shows: response times, fetches and failures per minute, the peak retries of a
task, who paused a site. Response times and who paused are observed on the events this
process folds: the stream's tail after the projector's last commit when the console
started, and everything since. The per-minute charts count what came before too: pages
from the projector's committed fetch figures (``FetchTracker.per_minute``, kept in step
with the tail by ``LiveProgress``), failures from the committed state's failed and aborted
tasks (the minute of their last event), then the tail's; each start from a commit (the
first, and one after a trim) counts them again from that commit. The queue and the ETA
are sampled by each refresh (the queue's past read once from the committed archive), and
the tasks are kept listed by status, site and failure reason (``TaskIndex``) for the
Tasks page.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Mapping
from pathlib import Path

import anyio
import anyio.to_thread
import msgspec
import redis.asyncio as aioredis
from anyio.abc import TaskGroup

from crawler.console._task_index import TaskIndex
from crawler.ops import LiveProgress, Progress, Row, Tracker
from eventlog import (
    FIRST_RUN,
    CrawlogError,
    JobKeys,
    JobResumed,
    LogEntry,
    PageFetched,
    RetryScheduled,
    SitePaused,
    SiteResumed,
    TaskAborted,
    TaskFailed,
    read_run,
    stream_id_key,
)
from projector import ABORTED, FAILED, State

FRESH_S = 0.2
"""A refresh this recent is served as it is: many pages open cost one fold."""
RESPONSE_TIMES_KEPT = 10_000
"""Fetches the average and p95 response time are taken over (the most recent)."""
MINUTES_KEPT = 60
MS_PER_MINUTE = 60_000
"""Minutes of fetches and failures the charts can draw."""
SAMPLE_EVERY_S = 10
"""The queue and the ETA are charted one sample per this many seconds (the slot's last)."""
SAMPLES_KEPT = MINUTES_KEPT * 60 // SAMPLE_EVERY_S
QUEUE_SQL = f"""
SELECT slot, CAST(sum(delta) OVER (ORDER BY slot) AS BIGINT) AS queue FROM (
    SELECT stream_ms // {SAMPLE_EVERY_S * 1000} AS slot,
           sum(CASE WHEN type IN ('task.enqueued', 'task.retried') THEN 1 ELSE -1 END) AS delta
    FROM events
    WHERE type IN ('task.enqueued', 'task.retried', 'task.done', 'task.failed', 'task.aborted')
    GROUP BY slot
) ORDER BY slot
"""
"""The tasks remaining at the end of each ``SAMPLE_EVERY_S`` slot of the committed archive
(by the server's clock): each task enqueued or retried is one more, each that ended one
less."""


class Observed:
    """What the panel shows that the fold does not keep, fed event by event."""

    def __init__(self) -> None:
        self.response_ms: deque[float] = deque(maxlen=RESPONSE_TIMES_KEPT)
        self.pages_per_minute: Mapping[int, int] = {}
        """Fetches by the server's minute: the committed figures' and the tail's."""
        self.failures_per_minute: dict[int, Counter[str]] = {}
        self.site_paused_by: dict[str, str] = {}
        self.peak_retries = 0
        self.tasks = TaskIndex({})
        """The state's tasks by status, site and failure reason: the Tasks page's list."""
        self.samples: deque[tuple[float, int, float | None]] = deque(maxlen=SAMPLES_KEPT)
        """(epoch seconds, tasks remaining, ETA in seconds or None) as refreshes saw them:
        the queue and ETA charts, since the console started."""
        self.queue_history: dict[int, int] = {}
        """Tasks remaining at the end of each ``SAMPLE_EVERY_S`` slot (since the epoch)
        before the console started, from the committed archive (``QUEUE_SQL``); read once,
        in the background."""

    def start_from(self, state: State) -> None:
        """Count the failures of a committed ``state`` (its failed and aborted tasks, at
        the minute of their last event) in place of what was counted before: the tail
        after it is observed next. Pages come from the committed fetch figures instead
        (:meth:`JobWatch.refresh`)."""
        self.tasks = TaskIndex(state.tasks)
        failures: dict[int, Counter[str]] = {}
        for task in state.tasks.values():
            if task.status == FAILED or task.status == ABORTED:
                minute = int(task.updated_at * 1000) // MS_PER_MINUTE
                failures.setdefault(minute, Counter())[task.last_reason] += 1
        latest = max(failures, default=0)
        self.failures_per_minute = {
            m: reasons for m, reasons in failures.items() if m >= latest - MINUTES_KEPT
        }

    def sample(self, at: float, total: Row) -> None:
        """Note the queue and the ETA of ``total`` at ``at`` (epoch seconds), in place of
        a sample of the same ``SAMPLE_EVERY_S`` slot."""
        point = (at, total.counts.remaining, total.eta_s)
        if self.samples and self.samples[-1][0] // SAMPLE_EVERY_S == at // SAMPLE_EVERY_S:
            self.samples[-1] = point
        else:
            self.samples.append(point)

    def queue_points(self) -> list[tuple[float, int]]:
        """The queue over time: the archive's slots before the first sample (each at the
        slot's end), then the samples."""
        first = self.samples[0][0] if self.samples else float("inf")
        before = [
            (min((slot + 1) * float(SAMPLE_EVERY_S), first), queue)
            for slot, queue in sorted(self.queue_history.items())
            if slot * SAMPLE_EVERY_S < first
        ]
        return before + [(at, remaining) for at, remaining, _ in self.samples]

    def observe(self, entry: LogEntry, state: State) -> None:
        """Note what ``entry`` (already folded into ``state``) says for the panel."""
        event = entry.event
        # The server's minute (the stream ID's), whatever the clock of the event's worker.
        minute = stream_id_key(entry.stream_id)[0] // MS_PER_MINUTE
        task_id = getattr(event, "task_id", None)
        if task_id is not None:
            self.tasks.update(task_id)
        elif isinstance(event, SiteResumed | JobResumed):
            self.tasks.update_all()  # its fold unparks tasks it does not name
        match event:
            case PageFetched():
                if event.error is None:
                    self.response_ms.append(event.elapsed_ms)
            case TaskFailed() | TaskAborted():
                reasons = self.failures_per_minute.setdefault(minute, Counter())
                reasons[event.reason] += 1
            case RetryScheduled():
                task = state.tasks.get(event.task_id)
                if task is not None:
                    self.peak_retries = max(self.peak_retries, task.retries)
            case SitePaused():
                self.site_paused_by[event.site] = event.actor
            case SiteResumed():
                self.site_paused_by.pop(event.site, None)
            case _:
                return
        self._forget_before(minute - MINUTES_KEPT)

    def _forget_before(self, minute: int) -> None:
        for old in [m for m in self.failures_per_minute if m < minute]:
            del self.failures_per_minute[old]

    def response_times(self) -> tuple[float | None, float | None]:
        """(average, p95) in ms of the fetches kept; None before the first."""
        if not self.response_ms:
            return None, None
        ordered = sorted(self.response_ms)
        p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
        return sum(ordered) / len(ordered), p95


class _ObservingTracker(Tracker):
    def __init__(self, state: State, observed: Observed) -> None:
        super().__init__(state)
        self.observed = observed
        observed.start_from(self.state)
        if self.state.tasks:
            observed.peak_retries = max(
                observed.peak_retries, max(t.retries for t in self.state.tasks.values())
            )

    def apply(self, entry: LogEntry) -> None:
        super().apply(entry)
        self.observed.observe(entry, self.state)


class PanelView(msgspec.Struct, frozen=True, kw_only=True):
    """What the job's panel draws: the progress, and what it takes from the state."""

    report: Progress
    aborted: int
    peak_retries: int
    committed_only: bool = False
    """Numbers as of the projector's last commit (the job's state is still being read)."""
    response_ms: tuple[float | None, float | None] = (None, None)
    """(average, p95): of the fetches this console saw, else of every fetch the job's
    figures count (a console opened after the crawl)."""


class JobWatch:
    """One job's live progress and observations, shared by every request about it.

    The folded state is read once (every task: seconds for a million of them) and then kept
    in step with the stream's tail. The panel never waits for that read: until it is done,
    it draws the manifest's summary (:meth:`LiveProgress.summary_progress`), and the read
    goes on in the background (``start_loading``); the pages that list tasks wait for it.
    """

    def __init__(
        self, redis: aioredis.Redis, job: str, data_dir: Path, *, lease_ms: int | None
    ) -> None:
        self.job = job
        self.observed = Observed()
        self._source = LiveProgress(
            redis,
            job,
            data_dir,
            lease_ms=lease_ms,
            make_tracker=lambda state: _ObservingTracker(state, self.observed),
        )
        self._lock = anyio.Lock()
        self._last: tuple[float, Progress] | None = None
        self._loaded = anyio.Event()
        self._loading = False
        self._history_read = False
        self._aborted_before: tuple[int | None, int] = (None, 0)
        """(run, the aborted tasks of the runs before it), for `_aborted`."""

    @property
    def state(self) -> State:
        """The folded state as of the last refresh (every task, ended ones included)."""
        return self._source.tracker.state

    def invalidate(self) -> None:
        """The next refresh reads the log again, however recent the last one is."""
        self._last = None

    def start_loading(self, tg: TaskGroup) -> None:
        """Read the job's state in ``tg`` (once), for the panel not to wait for it."""
        if self._loading:
            return
        self._loading = True
        tg.start_soon(self.refresh)

    def start_queue_history(self, tg: TaskGroup) -> None:
        """Read the queue's history from the committed archive in ``tg`` (once)."""
        if self._history_read:
            return
        self._history_read = True
        tg.start_soon(self._read_queue_history)

    async def _read_queue_history(self) -> None:
        from projector import query

        try:
            found = await anyio.to_thread.run_sync(query, self._source.store, QUEUE_SQL)
        except CrawlogError:
            return  # nothing committed yet (or no archive here): the samples alone
        self.observed.queue_history = {int(slot): int(q) for slot, q in found.rows}

    async def refresh(self, *, fresh: bool = False) -> Progress:
        """The progress now (at most ``FRESH_S`` old unless ``fresh``)."""
        async with self._lock:
            now = time.monotonic()
            if not fresh and self._last is not None and now - self._last[0] < FRESH_S:
                return self._last[1]
            # A recrawled job's panel counts its latest run, as `crawlog status` does.
            latest = (await read_run(self._source.redis, JobKeys(self.job))).run
            self._source.follow_run(latest if latest > FIRST_RUN else None)
            report = await self._source.refresh(now=now)
            self.observed.sample(time.time(), report.total)
            # Replaced by each start from a commit: read again after every refresh.
            self.observed.pages_per_minute = self._source.fetches.per_minute
            self._last = (now, report)
            self._loaded.set()
            return report

    def _aborted(self, run: int | None) -> int:
        """The aborted tasks the panel's failed count holds: the job's, or ``run``'s (the
        job's less the runs' before it, counted once a run: they have ended)."""
        job = self.state.job.tasks.get(ABORTED, 0)
        if run is None:
            return job
        if self._aborted_before[0] != run:
            tasks = self.state.tasks.values()
            before = sum(1 for t in tasks if t.run < run and t.status == ABORTED)
            self._aborted_before = (run, before)
        return job - self._aborted_before[1]

    async def panel(self, tg: TaskGroup) -> PanelView:
        """The panel's numbers: live once the state is read, the last commit's till then."""
        self.start_queue_history(tg)
        if not self._loaded.is_set():
            self.start_loading(tg)
            summary = await self._source.summary_progress()
            if summary is not None and not self._loaded.is_set():
                manifest = await anyio.to_thread.run_sync(self._source.store.read_manifest)
                committed = manifest.summary
                assert committed is not None  # summary_progress found it
                retried = [n for n, tasks in committed.retries.items() if tasks]
                if committed.fetches is not None and not self.observed.pages_per_minute:
                    self.observed.pages_per_minute = committed.fetches.per_minute
                self.observed.sample(time.time(), summary.total)
                return PanelView(
                    report=summary,
                    aborted=committed.job.tasks.get(ABORTED, 0),
                    peak_retries=max([self.observed.peak_retries, *retried]),
                    committed_only=True,
                )
        report = await self.refresh()
        recent = self.observed.response_times()
        return PanelView(
            report=report,
            aborted=self._aborted(report.run),
            peak_retries=self.observed.peak_retries,
            response_ms=recent if recent[0] is not None else self._source.fetches.response_times(),
        )
