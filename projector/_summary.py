"""What a report needs of the state, small enough to commit with every manifest.

A report must not decode the whole state: a million tasks take seconds to read back, and
``crawlog report`` should answer in well under that. Its sections only need the job and
site totals, the first anomalies, and a few figures over the tasks (failure reasons, the
retry distribution, the tasks that were recovered, the tasks running now). The projector
keeps those task figures up to date batch by batch (:class:`SummaryTracker` looks only at
the tasks a batch touched) and writes the :class:`Summary` into each manifest, so a report
reads one small file that is exactly as recent as the archive beside it.

``summarize`` computes the same thing from a whole state; the tracker is only a faster way
to the same answer, and the tests hold them equal.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, TypeVar

import msgspec

from eventlog import (
    EVENT_TYPES,
    ActionDone,
    ActionIntended,
    CheckpointSaved,
    ItemScraped,
    LogEntry,
    PageFetched,
    TaskEvent,
)
from projector._fetches import FetchFigures, FetchTracker, needs_archive, rebuild
from projector._state import (
    ABORTED,
    FAILED,
    RUNNING,
    Anomaly,
    JobState,
    SiteState,
    State,
    TaskState,
)

LISTED: Final = 20
"""Tasks a summary lists by name in each section (the rest are only counted)."""
ANOMALIES_LISTED: Final = 10

_FAILED_OR_ABORTED: Final = frozenset({FAILED, ABORTED})

_V = TypeVar("_V")


class RecoveredTask(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A task taken back from a worker that lost it (a lease expiry or a restart)."""

    task_id: str
    url: str
    status: str
    recoveries: int


class RunningTask(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A task some worker holds now; stuck if its last event is older than a lease."""

    task_id: str
    url: str
    site: str
    owner: str | None
    attempt: int
    updated_at: float


class Summary(msgspec.Struct, frozen=True, kw_only=True):
    """The state's figures a report shows, as of ``position``."""

    position: str
    job: JobState
    sites: tuple[SiteState, ...]
    """Every site, sorted by name."""
    anomalies: tuple[Anomaly, ...]
    """The first ``ANOMALIES_LISTED`` refused events (all are counted in ``job``)."""
    failure_reasons: dict[str, int]
    """Failed or aborted tasks, by their last reason."""
    retries: dict[int, int]
    """Tasks by how many retries they took (every task, zero included)."""
    recovered_tasks: int
    recovered: tuple[RecoveredTask, ...]
    """The ``LISTED`` tasks recovered most often (then by task id)."""
    running: tuple[RunningTask, ...]
    """Every running task, longest idle first."""
    fetches: FetchFigures | None = None
    """The figures over every page fetch of the log (``projector._fetches``); None in a
    manifest written before the projector kept them, and in a summary of a state alone."""
    dead_letters: int = 0
    """Entries in the job's dead stream when the projector last counted them: events it could
    not decode (so never folded: no anomaly counts them) and task entries no worker could."""


_ENCODER: Final = msgspec.msgpack.Encoder()
_SUMMARY_DECODER: Final = msgspec.msgpack.Decoder(Summary)


_UNSUMMARIZED: Final = (PageFetched, ItemScraped, CheckpointSaved, ActionIntended, ActionDone)
"""Task events that change nothing a summary holds (status, retries, recoveries, reason):
most of a crawl's events, so most are skipped when a batch's tasks are refreshed."""


_SUMMARIZED: Final = frozenset(
    t for t in EVENT_TYPES if issubclass(t, TaskEvent) and not issubclass(t, _UNSUMMARIZED)
)
"""The event types ``touched_tasks`` looks at: one set lookup an event, not two
``isinstance`` calls (it runs on the projector's main thread, over every event)."""


def touched_tasks(entries: Iterable[LogEntry]) -> set[str]:
    """The tasks whose summary figures ``entries`` may have changed."""
    summarized = _SUMMARIZED
    return {
        e.event.task_id  # type: ignore[union-attr]  # every type in _SUMMARIZED is a TaskEvent
        for e in entries
        if type(e.event) in summarized
    }


def summarize(state: State, *, dead_letters: int = 0) -> Summary:
    """The summary of a whole state (what the tracker keeps up to date incrementally)."""
    tracker = SummaryTracker()
    tracker.update(state, state.tasks)
    return tracker.summary(state, dead_letters=dead_letters)


class SummaryTracker:
    """Each task's part of the summary, refreshed for the tasks a batch touched.

    Only tasks that count somewhere are kept (failed, retried, recovered, running): a
    crawl of a million tasks keeps a few thousand entries here, not a million. What it
    keeps of a task is enough to summarize it once the task has left the in-memory state
    for the task store (``_taskstore``).
    """

    def __init__(self) -> None:
        self._failed: dict[str, str] = {}
        self._retries: dict[str, int] = {}
        self._recovered: dict[str, RecoveredTask] = {}
        self._running: set[str] = set()
        # The counts of ``_failed``'s and ``_retries``' values, kept as they change: counted
        # afresh for every summary, they cost each commit time in proportion to the job's
        # failed and retried tasks.
        self._reasons: Counter[str] = Counter()
        self._retry_counts: Counter[int] = Counter()
        self.fetches: FetchTracker | None = None
        """The figures over the log's fetches: None until ``start_fetches`` (``summarize``
        of a state alone cannot know them)."""

    def start_fetches(self, segments: Sequence[Path], committed: Summary | None) -> None:
        """Go on from the fetch figures of the ``committed`` summary, or compute them from
        the archive ``segments`` it commits when they are missing or incomplete."""
        figures = committed.fetches if committed is not None else None
        if not segments and figures is None:
            self.fetches = FetchTracker()  # a new job
        elif needs_archive(figures):
            self.fetches = rebuild(segments)
        else:
            assert figures is not None
            self.fetches = FetchTracker()
            self.fetches.load(figures)

    def observe(self, state: State, entries: Iterable[LogEntry]) -> None:
        """Count a batch's fetches; ``state`` is the fold's before the batch."""
        if self.fetches is not None:
            self.fetches.observe(state, entries)

    def load_rows(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Take the figures of stored tasks (``_taskstore.summary_rows``: task id, URL,
        status, last reason, retries, recoveries)."""
        for row in rows:
            task_id = row["task_id"]
            _set(
                self._failed,
                self._reasons,
                task_id,
                row["last_reason"],
                row["status"] in _FAILED_OR_ABORTED,
            )
            _set(self._retries, self._retry_counts, task_id, row["retries"], row["retries"] > 0)
            if row["recoveries"] > 0:
                self._recovered[task_id] = RecoveredTask(
                    task_id=task_id,
                    url=row["url"],
                    status=row["status"],
                    recoveries=row["recoveries"],
                )
            else:
                self._recovered.pop(task_id, None)

    def update(self, state: State, task_ids: Iterable[str]) -> None:
        """Take the current figures of ``task_ids`` from ``state`` (others are unchanged)."""
        tasks = state.tasks
        for task_id in task_ids:
            task = tasks.get(task_id)
            if task is None:
                # An event about a task the log never enqueued: an anomaly, not a task.
                continue
            _set(
                self._failed,
                self._reasons,
                task_id,
                task.last_reason,
                task.status in _FAILED_OR_ABORTED,
            )
            _set(self._retries, self._retry_counts, task_id, task.retries, task.retries > 0)
            if task.recoveries > 0:
                self._recovered[task_id] = _recovered(task)
            else:
                self._recovered.pop(task_id, None)
            if task.status == RUNNING:
                self._running.add(task_id)
            else:
                self._running.discard(task_id)
        if self.fetches is not None:
            # Here, not in ``summary``: a commit takes ended tasks out of memory in between.
            self.fetches.prune(state)

    def summary(self, state: State, *, dead_letters: int = 0) -> Summary:
        """The summary of ``state``, given that every task it changed was ``update``d;
        ``dead_letters`` is the dead stream's length, which no fold can know."""
        tasks = state.tasks
        retries = +self._retry_counts  # a copy, without zero counts
        # Counted by status, not ``len(tasks)``: terminal tasks may be in the task store.
        untried = sum(state.job.tasks.values()) - len(self._retries)
        if untried:
            retries[0] = untried
        # Ties broken by task id, so the same state always lists the same tasks.
        most = heapq.nsmallest(
            LISTED, self._recovered.values(), key=lambda r: (-r.recoveries, r.task_id)
        )
        running = sorted((tasks[t] for t in self._running), key=_idle_order)
        fetches = None
        if self.fetches is not None:
            fetches = self.fetches.figures()
        summary = Summary(
            position=state.position,
            job=state.job,
            sites=tuple(state.sites[name] for name in sorted(state.sites)),
            anomalies=tuple(state.anomalies[:ANOMALIES_LISTED]),
            failure_reasons=dict(sorted((+self._reasons).items())),
            retries=dict(sorted(retries.items())),
            recovered_tasks=len(self._recovered),
            recovered=tuple(most),
            running=tuple(_running(t) for t in running),
            fetches=fetches,
            dead_letters=dead_letters,
        )
        # A copy: the job and site structs are the fold's own, and it goes on changing them
        # while a commit thread writes this summary.
        return _SUMMARY_DECODER.decode(_ENCODER.encode(summary))


def _set(
    figures: dict[str, _V], counted: Counter[_V], task_id: str, value: _V, counts: bool
) -> None:
    """Set (or, unless it ``counts``, drop) a task's figure, and keep ``counted`` (how many
    tasks have each value) in step."""
    old = figures.pop(task_id, _MISSING)
    if old is not _MISSING:
        counted[old] -= 1  # type: ignore[index]
    if counts:
        figures[task_id] = value
        counted[value] += 1


_MISSING: Final = object()


def _idle_order(task: TaskState) -> tuple[float, str]:
    return (task.updated_at, task.task_id)


def _recovered(task: TaskState) -> RecoveredTask:
    return RecoveredTask(
        task_id=task.task_id, url=task.url, status=task.status, recoveries=task.recoveries
    )


def _running(task: TaskState) -> RunningTask:
    return RunningTask(
        task_id=task.task_id,
        url=task.url,
        site=task.site,
        owner=task.owner,
        attempt=task.attempt,
        updated_at=task.updated_at,
    )
