"""The fold: ``apply(state, entry)`` for every event type, and nothing else.

Pure: no I/O and no clock. The only time it knows is the actors' wall clocks carried by the
events, and order is the stream ID. The task state machine::

    pending ──claimed──▶ running ──done/failed/aborted──▶ (terminal)
       ▲                   │  retry scheduled / released / lease expired (reclaimed)
       └───────────────────┘
    pending, running ──paused──▶ paused ──resumed──▶ pending
    pending, running ──parked──▶ paused (parked) ──site or job resumed, or claimed──▶
    terminal ──retried (operator)──▶ pending, attempt + 1

A parked task is one a worker set aside because its site or the job is paused: it is
paused (nobody holds it, nothing of it runs) but left by the lifting of that pause, not
by a ``TaskResumed`` of its own.

An event the machine refuses is recorded as an ``Anomaly`` and counted by reason, never
applied and never raised: a zombie's late write must not stop the projector.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import msgspec

from eventlog import (
    ORPHANED_REASON,
    ActionDone,
    ActionIntended,
    ActionResolved,
    AnyEvent,
    CheckpointSaved,
    CircuitClosed,
    CircuitOpened,
    Event,
    ItemScraped,
    JobPaused,
    JobResumed,
    LogEntry,
    PageFetched,
    RetryScheduled,
    RobotsNotWhole,
    SitePaused,
    SiteResumed,
    TaskAborted,
    TaskClaimed,
    TaskDone,
    TaskEnqueued,
    TaskEvent,
    TaskFailed,
    TaskOrphaned,
    TaskParked,
    TaskPaused,
    TaskReclaimed,
    TaskReleased,
    TaskResumed,
    TaskRetried,
    tag_of,
)
from projector._state import (
    ABORTED,
    CIRCUIT_CLOSED,
    CIRCUIT_OPEN,
    DEDUP_WINDOW,
    DONE,
    FAILED,
    MAX_ANOMALIES_KEPT,
    PAUSED,
    PENDING,
    RUNNING,
    TERMINAL,
    Anomaly,
    SiteState,
    State,
    TaskState,
    TaskStatus,
)

HTTP_ERROR = 400
"""A fetch with this status or above (or no response, status 0) did not get the page."""
STORE_RESTORED = "store lost: restored from the archive"
"""The reason of the ``TaskReclaimed`` a ``crawlog restore`` logs for each task that was
running when the store lost the job (``_restore``)."""

# Each handler takes the state and an event of its own type.
Handler = Callable[[State, Any], None]


class Refused(Exception):
    """Raised inside a handler to refuse an event; becomes an anomaly."""

    def __init__(self, reason: str, task: TaskState | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.task = task


def apply(state: State, entry: LogEntry) -> State:
    """Fold one log entry into ``state`` (in place) and return it."""
    event = entry.event
    job = state.job
    job.events += 1
    state.position = entry.stream_id
    event_id, recent = event.event_id, state.recent_event_ids
    if event_id in recent or event_id in state.older_event_ids:
        job.repeats_ignored += 1
        return state
    recent.add(event_id)
    if len(recent) >= DEDUP_WINDOW:
        state.older_event_ids, state.recent_event_ids = recent, set()
    try:
        _HANDLERS[type(event)](state, event)
    except Refused as refused:
        _record_anomaly(state, entry.stream_id, event, refused)
    return state


def apply_events(state: State, stream_ids: Sequence[str], events: Sequence[AnyEvent]) -> State:
    """``apply_all`` over a batch given as two lists, the entries' stream IDs and events
    (replay's batches: no ``LogEntry`` is built per event), to the same state.

    The batch's event ids are first checked against the windows all at once (a set, two
    set comparisons, in C): in the common case, no repeat, they are added in bulk, turning
    the window where ``apply_all`` would, and the handlers run with no per-event check. A
    batch with a repeat, or one the bulk check cannot clear, is folded by ``apply_all``.
    """
    if not mark_new(state, [event.event_id for event in events]):
        return apply_all(state, map(_entry, stream_ids, events))
    return apply_marked(state, stream_ids, events)


def apply_marked(state: State, stream_ids: Sequence[str], events: Sequence[AnyEvent]) -> State:
    """Fold a batch whose event ids ``mark_new`` added to the windows already: the
    handlers in log order, with no per-event check of the windows."""
    handlers = _HANDLERS
    try:
        for stream_id, event in zip(stream_ids, events, strict=True):
            # Read by ``_checkpoint`` (the ``ckpt`` pointer) and by whoever reads the state.
            state.position = stream_id
            try:
                handlers[type(event)](state, event)
            except Refused as refused:
                _record_anomaly(state, stream_id, event, refused)
    finally:
        # ``apply_all`` counts the events it got through; here the ids of the whole batch
        # are in the windows already, and a handler raising (a bug) ends the fold anyway.
        state.job.events += len(events)
    return state


def _entry(stream_id: str, event: AnyEvent) -> LogEntry:
    return LogEntry(stream_id, event, b"")  # the fold never reads an entry's payload


def mark_new(state: State, event_ids: list[str]) -> bool:
    """Add ``event_ids`` to the windows if none is a repeat (of the windows or of another
    in the list), turning the window at the same event as ``apply_all``; else change
    nothing and return False."""
    recent, older = state.recent_event_ids, state.older_event_ids
    fresh = set(event_ids)
    if len(fresh) != len(event_ids) or not fresh.isdisjoint(recent) or not fresh.isdisjoint(older):
        return False
    add_new_ids(state, len(event_ids), lambda start, stop: event_ids[start:stop])
    return True


def add_new_ids(state: State, total: int, ids: Callable[[int, int], Iterable[str]]) -> None:
    """Add ``total`` event ids, none of them a repeat (of the windows or of another of
    them), to the windows, turning the window at the same event as ``apply_all``;
    ``ids(start, stop)`` gives those from ``start`` to ``stop``, and is asked only for the
    ids that stay in the windows (at most two windows' worth, the last ones).

    With no repeat, ``apply_all`` would find none either, whatever window turns happen in
    between (an older window only ever receives ids already seen), so only where the
    window turns is left to reproduce: when the recent one is full, the first time after
    ``room`` ids, then every ``DEDUP_WINDOW``."""
    window = DEDUP_WINDOW
    recent = state.recent_event_ids
    room = max(1, window - len(recent))
    if total < room:
        recent.update(ids(0, total))
        return
    last = room + (total - room) // window * window  # where the window turns last
    if last == room:
        recent.update(ids(0, room))
        older = recent
    else:
        older = set(ids(last - window, last))
    state.older_event_ids, state.recent_event_ids = older, set(ids(last, total))


def fold(entries: Iterable[LogEntry], state: State | None = None) -> State:
    """Fold ``entries`` in order into ``state`` (a new one if None)."""
    state = State() if state is None else state
    apply_all(state, entries)
    return state


def apply_all(state: State, entries: Iterable[LogEntry]) -> State:
    """``apply`` each entry in order, with what ``apply`` looks up per event hoisted out
    of the loop: the projector's main thread folds every event, and the Python work on
    it is what the projector's rate is bounded by (the GIL)."""
    job, handlers = state.job, _HANDLERS
    recent, older = state.recent_event_ids, state.older_event_ids
    count = 0
    try:
        for entry in entries:
            count += 1
            event = entry.event
            state.position = entry.stream_id
            event_id = event.event_id
            # One hash lookup for the common case, a new event: adding it either grows
            # the set or finds it was there already.
            seen = len(recent)
            recent.add(event_id)
            if len(recent) == seen:
                job.repeats_ignored += 1
                continue
            if event_id in older:
                recent.discard(event_id)
                job.repeats_ignored += 1
                continue
            if seen + 1 >= DEDUP_WINDOW:
                state.older_event_ids, state.recent_event_ids = older, recent = recent, set()
            try:
                handlers[type(event)](state, event)
            except Refused as refused:
                _record_anomaly(state, entry.stream_id, event, refused)
    finally:
        # Counted once for the batch: no handler reads it.
        job.events += count
    return state


def _record_anomaly(state: State, stream_id: str, event: AnyEvent, refused: Refused) -> None:
    counts = state.job.anomalies
    counts[refused.reason] = counts.get(refused.reason, 0) + 1
    if len(state.anomalies) < MAX_ANOMALIES_KEPT:
        state.anomalies.append(
            Anomaly(
                event_id=event.event_id,
                stream_id=stream_id,
                event_type=tag_of(type(event)),
                task_id=event.task_id if isinstance(event, TaskEvent) else None,
                from_status=refused.task.status if refused.task else None,
                reason=refused.reason,
            )
        )


# --- helpers -----------------------------------------------------------------------------


def _task(state: State, event: TaskEvent, allowed: frozenset[str], what: str) -> TaskState:
    """The event's task, if its status allows the event."""
    task = state.tasks.get(event.task_id)
    if task is None:
        raise Refused("unknown task")
    if task.status not in allowed:
        raise Refused(f"{what} while {task.status}", task)
    return task


def _site(state: State, site: str) -> SiteState:
    found = state.sites.get(site)
    if found is None:
        found = state.sites[site] = SiteState(site=site)
    return found


def _move(state: State, task: TaskState, status: TaskStatus, event: Event, reason: str) -> None:
    """Change a task's status, keeping the site and job counts by status in step."""
    old = task.status
    counts = state.sites[task.site].tasks
    counts[old] -= 1
    counts[status] = counts.get(status, 0) + 1
    counts = state.job.tasks
    counts[old] -= 1
    counts[status] = counts.get(status, 0) + 1
    task.status = status
    task.last_actor, task.updated_at, task.last_reason = event.actor, event.at, reason


def _touch(task: TaskState, event: TaskEvent, reason: str | None = None) -> None:
    task.last_actor = event.actor
    task.updated_at = event.at
    if reason is not None:
        task.last_reason = reason


_NOT_TERMINAL = frozenset({PENDING, RUNNING, PAUSED})
_ACTIVE = frozenset({PENDING, RUNNING})
_PAUSED = frozenset({PAUSED})
_ANY = frozenset({PENDING, RUNNING, PAUSED, *TERMINAL})


# --- task events ---------------------------------------------------------------------------


def _enqueued(state: State, event: TaskEnqueued) -> None:
    if event.task_id in state.tasks:
        raise Refused("enqueued twice", state.tasks[event.task_id])
    state.tasks[event.task_id] = TaskState(
        task_id=event.task_id,
        url=event.url,
        site=event.site,
        depth=event.depth,
        parent_task_id=event.parent_task_id,
        enqueued_at=event.at,
        spec=event.spec,
        request=event.request,
        updated_at=event.at,
        last_actor=event.actor,
        run=event.run,
        revisit=event.revisit,
    )
    counts = _site(state, event.site).tasks
    counts[PENDING] = counts.get(PENDING, 0) + 1
    counts = state.job.tasks
    counts[PENDING] = counts.get(PENDING, 0) + 1


def _claimed(state: State, event: TaskClaimed) -> None:
    task = state.tasks.get(event.task_id)
    if task is None or task.status not in _ACTIVE:
        if task is None or not task.parked:
            task = _task(state, event, _ACTIVE, "claimed")
        # A parked task is in a lane again once its pause was lifted: claimed like any.
        task.parked = False
    if task.last_reason == STORE_RESTORED:
        # Its worker was fetching the page after its checkpoint when the store lost it:
        # fetched again now, that page is a refetch the loss caused. Not before this claim:
        # what its worker's journal gave back meanwhile (`TaskQueue.flush_journal`) moved
        # the checkpoint on, and those pages were fetched once.
        next_page = task.checkpoint.page + 1 if task.checkpoint is not None else 1
        task.furthest_page = max(task.furthest_page, next_page)
    task.owner, task.attempt, task.deliveries = event.actor, event.attempt, event.deliveries
    _move(state, task, RUNNING, event, "claimed")


def _reclaimed(state: State, event: TaskReclaimed) -> None:
    # The lease expired and the task went back to the queue (the recovery lane): pending
    # until a worker claims it again.
    task = _task(state, event, _ACTIVE, "reclaimed")
    task.owner, task.deliveries = None, event.deliveries
    task.recoveries += 1
    _move(state, task, PENDING, event, event.reason)


def _checkpoint(state: State, event: CheckpointSaved) -> None:
    # A paused task may still save the page that was in flight when the pause came.
    task = state.tasks.get(event.task_id)
    if task is None or task.status not in _NOT_TERMINAL:
        task = _task(state, event, _NOT_TERMINAL, "checkpoint")
    task.checkpoint, task.counts = event.cursor, event.counts
    task.checkpoint_id = state.position  # ``apply`` sets it to this entry's ID first
    task.last_actor, task.updated_at = event.actor, event.at


def _page(state: State, event: PageFetched) -> None:
    task = state.tasks.get(event.task_id)
    if task is None or task.status not in _NOT_TERMINAL:
        task = _task(state, event, _NOT_TERMINAL, "page fetched")
    job, site = state.job, state.sites[task.site]
    task.pages_fetched += 1
    job.pages += 1
    site.pages += 1
    if event.page <= task.furthest_page:
        task.refetches += 1
        job.refetches += 1
    elif event.error is None and 0 < event.status < HTTP_ERROR:
        # Only a good fetch makes the page fetched: the next fetch of a page that failed
        # (a 500, a 429, a timeout) is its retry, not a refetch of something already had.
        task.furthest_page = event.page
    task.bytes += event.bytes
    job.bytes += event.bytes
    if event.error is not None:
        task.last_error = event.error
    if event.dropped:
        for reason, count in event.dropped.items():
            task.dropped += count
            site.dropped[reason] = site.dropped.get(reason, 0) + count
            job.dropped[reason] = job.dropped.get(reason, 0) + count
    for reason, count in event.items_dropped.items():
        job.items_dropped[reason] = job.items_dropped.get(reason, 0) + count
    task.last_actor, task.updated_at = event.actor, event.at


def _item(state: State, event: ItemScraped) -> None:
    task = state.tasks.get(event.task_id)
    if task is None or task.status not in _NOT_TERMINAL:
        task = _task(state, event, _NOT_TERMINAL, "item scraped")
    # Output is keyed: a redone page emits the same keys, and each key counts once.
    if event.key in state.item_keys:
        state.job.duplicate_items += 1
        return
    state.item_keys.add(event.key)
    task.items += 1
    state.job.items += 1
    task.last_actor, task.updated_at = event.actor, event.at


def _retry_scheduled(state: State, event: RetryScheduled) -> None:
    task = _task(state, event, _ACTIVE, "retry scheduled")
    task.retries += 1
    task.attempt = event.attempt + 1
    task.owner = None
    _move(state, task, PENDING, event, event.reason)


def _released(state: State, event: TaskReleased) -> None:
    # What ``RetryScheduled(attempt - 1, "worker stopped")`` did in older logs, which still
    # fold that way, except that a hand-back is not a retry: the task did nothing wrong.
    task = _task(state, event, _ACTIVE, "released")
    task.attempt = event.attempt
    task.owner = None
    _move(state, task, PENDING, event, event.reason)


# One handler per terminal event (rather than one for the three): a task ends once, so
# every task of a log goes through one of these.
def _done(state: State, event: TaskDone) -> None:
    task = state.tasks.get(event.task_id)
    if task is None or task.status not in _ACTIVE:
        task = _task(state, event, _ACTIVE, DONE)
    task.attempt = event.attempt
    task.owner = None
    task.counts = event.counts
    _move(state, task, DONE, event, event.reason)


def _failed(state: State, event: TaskFailed) -> None:
    task = state.tasks.get(event.task_id)
    if task is None or task.status not in _ACTIVE:
        task = _task(state, event, _ACTIVE, FAILED)
    task.attempt = event.attempt
    task.owner = None
    state.sites[task.site].failures += 1
    _move(state, task, FAILED, event, event.reason)


def _aborted(state: State, event: TaskAborted) -> None:
    task = state.tasks.get(event.task_id)
    if task is None or task.status not in _ACTIVE:
        task = _task(state, event, _ACTIVE, ABORTED)
    task.attempt = event.attempt
    task.owner = None
    task.last_error = event.last_error or task.last_error
    state.sites[task.site].failures += 1
    _move(state, task, ABORTED, event, event.reason)


def _paused(state: State, event: TaskPaused) -> None:
    task = _task(state, event, _ACTIVE, "paused")
    _move(state, task, PAUSED, event, event.reason)


def _parked(state: State, event: TaskParked) -> None:
    task = state.tasks.get(event.task_id)
    if task is not None and task.status == PAUSED:
        # Paused already (by its own pause, or parked before): that pause still holds it.
        _touch(task, event)
        return
    task = _task(state, event, _ACTIVE, "parked")
    task.owner, task.parked = None, True
    _move(state, task, PAUSED, event, event.reason)


def _unpark(state: State, event: SiteResumed | JobResumed, site: str | None) -> None:
    """Parked tasks (of ``site``, or of every site) whose pauses are all lifted: pending."""
    if state.job.paused:
        return
    sites = state.sites
    if site is not None and not sites[site].tasks.get(PAUSED):
        return
    for task in state.tasks.values():
        if task.parked and (site is None or task.site == site) and not sites[task.site].paused:
            task.parked, task.owner = False, None
            _move(state, task, PENDING, event, event.reason)


def _resumed(state: State, event: TaskResumed) -> None:
    task = _task(state, event, _PAUSED, "resumed")
    task.owner, task.parked = None, False
    _move(state, task, PENDING, event, event.reason)


def _retried(state: State, event: TaskRetried) -> None:
    task = _task(state, event, TERMINAL, "retried")
    task.attempt += 1
    task.owner = None
    _move(state, task, PENDING, event, event.reason)


def _action_intended(state: State, event: ActionIntended) -> None:
    task = _task(state, event, _ANY, "action intended")
    actions = task.actions = task.actions or {}
    if event.action_id in actions:
        raise Refused("action intended twice", task)
    actions[event.action_id] = "intended"
    _touch(task, event)


def _action_done(state: State, event: ActionDone) -> None:
    task = _task(state, event, _ANY, "action done")
    if task.actions is None or task.actions.get(event.action_id) != "intended":
        raise Refused("action done without intent", task)
    task.actions[event.action_id] = "done"
    _touch(task, event)


def _action_resolved(state: State, event: ActionResolved) -> None:
    task = _task(state, event, _ANY, "action resolved")
    if task.actions is None or task.actions.get(event.action_id) != "intended":
        raise Refused("action resolved without an uncertain intent", task)
    if event.decision == "done":
        task.actions[event.action_id] = "done"
    elif event.decision == "abort":
        task.actions[event.action_id] = "aborted"
    else:
        # Run again: its new intent must not count as a second one.
        del task.actions[event.action_id]
    _touch(task, event)


# --- site and job events -----------------------------------------------------------------


def _site_paused(state: State, event: SitePaused) -> None:
    site = _site(state, event.site)
    site.paused, site.paused_reason = True, event.reason


def _site_resumed(state: State, event: SiteResumed) -> None:
    site = _site(state, event.site)
    if not site.paused:
        raise Refused("site resumed while not paused")
    site.paused, site.paused_reason = False, event.reason
    _unpark(state, event, event.site)


def _circuit_opened(state: State, event: CircuitOpened) -> None:
    site = _site(state, event.site)
    site.circuit, site.circuit_reason = CIRCUIT_OPEN, event.reason
    site.circuit_openings += 1


def _circuit_closed(state: State, event: CircuitClosed) -> None:
    site = _site(state, event.site)
    site.circuit, site.circuit_reason = CIRCUIT_CLOSED, event.reason


def _robots_not_whole(state: State, event: RobotsNotWhole) -> None:
    # Nothing to fold: the site's tasks say what it did to them (a retry, a failure); the
    # report's line about it is the fetch figures' (``projector._fetches``).
    return


def _orphaned(state: State, event: TaskOrphaned) -> None:
    # Counted where refused events are: the report and status show anomalies by reason.
    raise Refused(ORPHANED_REASON, state.tasks.get(event.task_id))


def _job_paused(state: State, event: JobPaused) -> None:
    state.job.paused, state.job.paused_reason = True, event.reason


def _job_resumed(state: State, event: JobResumed) -> None:
    if not state.job.paused:
        raise Refused("job resumed while not paused")
    state.job.paused, state.job.paused_reason = False, event.reason
    _unpark(state, event, None)


_HANDLERS: dict[type[msgspec.Struct], Handler] = {
    TaskEnqueued: _enqueued,
    TaskClaimed: _claimed,
    TaskReclaimed: _reclaimed,
    CheckpointSaved: _checkpoint,
    PageFetched: _page,
    ItemScraped: _item,
    RetryScheduled: _retry_scheduled,
    TaskReleased: _released,
    TaskOrphaned: _orphaned,
    TaskDone: _done,
    TaskFailed: _failed,
    TaskAborted: _aborted,
    TaskPaused: _paused,
    TaskParked: _parked,
    TaskResumed: _resumed,
    TaskRetried: _retried,
    ActionIntended: _action_intended,
    ActionDone: _action_done,
    ActionResolved: _action_resolved,
    SitePaused: _site_paused,
    SiteResumed: _site_resumed,
    CircuitOpened: _circuit_opened,
    CircuitClosed: _circuit_closed,
    RobotsNotWhole: _robots_not_whole,
    JobPaused: _job_paused,
    JobResumed: _job_resumed,
}
