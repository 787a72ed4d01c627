"""Hypothesis strategies for logs: short event sequences over a few tasks and sites."""

from __future__ import annotations

from hypothesis import strategies as st

from eventlog import (
    ActionDone,
    ActionIntended,
    ActionResolved,
    AnyEvent,
    CheckpointSaved,
    CircuitClosed,
    CircuitOpened,
    Counts,
    Cursor,
    ItemScraped,
    JobPaused,
    JobResumed,
    LogEntry,
    PageFetched,
    RetryScheduled,
    SitePaused,
    SiteResumed,
    TaskAborted,
    TaskClaimed,
    TaskDone,
    TaskEnqueued,
    TaskFailed,
    TaskPaused,
    TaskReclaimed,
    TaskReleased,
    TaskResumed,
    TaskRetried,
    encode,
)

TASKS = ["t0", "t1", "t2", "t3"]
SITES = {"t0": "http://a", "t1": "http://a", "t2": "http://b", "t3": "http://b"}

actors = st.sampled_from(["w0", "w1", "w2", "operator"])
task_ids = st.sampled_from(TASKS)
reasons = st.sampled_from(["timeout", "HTTP 503", "operator says so", ""])
attempts = st.integers(1, 4)
clock = st.floats(1.7e9, 1.7e9 + 3600)


RESTORE_RECLAIM = "store lost: restored from the archive"
"""``projector._fold.STORE_RESTORED``, as a restore's ``TaskReclaimed`` says it."""


@st.composite
def task_event(draw: st.DrawFn) -> AnyEvent:
    task_id = draw(task_ids)
    common = {"actor": draw(actors), "task_id": task_id, "at": draw(clock)}
    kind = draw(st.integers(0, 16))
    if kind == 0:
        site = SITES[task_id]
        return TaskEnqueued(**common, url=f"{site}/{task_id}", site=site)
    if kind == 1:
        return TaskClaimed(**common, attempt=draw(attempts), deliveries=draw(st.integers(1, 3)))
    if kind == 2:
        return TaskReclaimed(
            **common,
            attempt=draw(attempts),
            previous_owner="w9",
            deliveries=draw(attempts),
            # A restore's reclaim counts its retake only at the next claim.
            reason=draw(st.sampled_from(["lease expired", RESTORE_RECLAIM])),
        )
    if kind == 3:
        page = draw(st.integers(0, 5))
        return CheckpointSaved(
            **common, attempt=1, cursor=Cursor(page=page), counts=Counts(pages=page)
        )
    if kind == 4:
        return PageFetched(
            **common,
            attempt=1,
            url="u",
            status=200,
            page=draw(st.integers(0, 5)),
            bytes=draw(st.integers(0, 1000)),
        )
    if kind == 5:
        return ItemScraped(**common, key=draw(st.sampled_from(["k1", "k2", "k3"])))
    if kind == 6:
        return RetryScheduled(**common, attempt=draw(attempts), delay_s=1.0, reason=draw(reasons))
    if kind == 7:
        return TaskDone(**common, attempt=draw(attempts))
    if kind == 8:
        return TaskFailed(**common, attempt=draw(attempts), reason=draw(reasons))
    if kind == 9:
        return TaskAborted(**common, attempt=1, reason="too many recoveries", deliveries=4)
    if kind == 10:
        return TaskPaused(**common, reason=draw(reasons))
    if kind == 11:
        return TaskResumed(**common, reason=draw(reasons))
    if kind == 12:
        return TaskRetried(**common, reason=draw(reasons))
    if kind == 13:
        return ActionIntended(**common, action_id=draw(st.sampled_from(["a1", "a2"])))
    if kind == 14:
        return ActionDone(**common, action_id=draw(st.sampled_from(["a1", "a2"])))
    if kind == 15:
        return TaskReleased(**common, attempt=draw(attempts))
    return ActionResolved(
        **common,
        action_id=draw(st.sampled_from(["a1", "a2"])),
        decision=draw(st.sampled_from(["done", "redo"])),
        reason=draw(reasons),
    )


@st.composite
def other_event(draw: st.DrawFn) -> AnyEvent:
    common = {"actor": draw(actors), "at": draw(clock)}
    site = draw(st.sampled_from(sorted(set(SITES.values()))))
    return draw(
        st.sampled_from(
            [
                SitePaused(**common, site=site, reason="r"),
                SiteResumed(**common, site=site, reason="r"),
                CircuitOpened(**common, site=site, reason="5 failures", failures=5, cooldown_s=30),
                CircuitClosed(**common, site=site, reason="probe ok"),
                JobPaused(**common, reason="r"),
                JobResumed(**common, reason="r"),
            ]
        )
    )


def enqueue_all() -> list[AnyEvent]:
    """Every task enqueued, so most drawn events have a task to act on."""
    return [
        TaskEnqueued(actor="seed", task_id=t, url=f"{SITES[t]}/{t}", site=SITES[t], at=1.7e9)
        for t in TASKS
    ]


def as_entries(events: list[AnyEvent], start: int = 0) -> list[LogEntry]:
    """Events as log entries at consecutive stream IDs."""
    return [LogEntry(f"1700000000000-{start + n}", e, encode(e)) for n, e in enumerate(events)]


logs = st.lists(
    st.one_of(task_event(), task_event(), task_event(), other_event()), max_size=60
).map(lambda events: as_entries(enqueue_all() + events))
"""Logs that enqueue every task, then do anything at all to them (anomalies included)."""


@st.composite
def plain_task(draw: st.DrawFn, n: int) -> list[AnyEvent]:
    """The events of task ``p<n>`` as a crawl writes the common task (enqueued, claimed,
    a page, its items, done), sometimes cut short, reordered or given one event more, so
    that a log holds tasks that are plain and tasks that nearly are."""
    # A site of its own sometimes: its counts are made by plain tasks alone.
    task_id, site = f"p{n}", draw(st.sampled_from([*sorted(set(SITES.values())), "http://c"]))
    common = {"actor": draw(actors), "task_id": task_id, "at": draw(clock)}
    failed = draw(st.integers(0, 15)) == 0
    item_keys = st.lists(
        st.sampled_from(["k1", *(f"{task_id}-{k}" for k in "abcde")]), max_size=3, unique=True
    )
    events: list[AnyEvent] = [
        TaskEnqueued(**common, url=f"{site}/{task_id}", site=site, depth=draw(st.integers(0, 3))),
        TaskClaimed(**common, attempt=1, deliveries=draw(st.integers(1, 3))),
        PageFetched(
            **common,
            attempt=1,
            url=f"{site}/{task_id}",
            status=draw(st.sampled_from([200, 200, 404, 503, 0])),
            page=draw(st.integers(-1, 6)),
            bytes=draw(st.integers(0, 1000)),
            error=draw(st.sampled_from([None, None, "timeout"])),
            dropped=draw(st.sampled_from([{}, {}, {"out of scope": 2}])),
            items_dropped=draw(st.sampled_from([{}, {}, {"no price": 1}])),
        ),
        # Keys shared with other tasks (and the random ones) make duplicates across tasks.
        *(ItemScraped(**common, key=key) for key in draw(item_keys)),
        TaskFailed(**common, attempt=1, reason="http 404")
        if failed
        else TaskDone(**common, attempt=1, counts=Counts(pages=1)),
    ]
    change = draw(st.integers(0, 11))
    if change == 0 and len(events) > 2:
        del events[draw(st.integers(0, len(events) - 1))]
    elif change == 1:
        a, b = draw(st.integers(0, len(events) - 1)), draw(st.integers(0, len(events) - 1))
        events[a], events[b] = events[b], events[a]
    elif change == 2:
        events.insert(draw(st.integers(0, len(events))), draw(task_event()))
    return events


@st.composite
def logs_with_plain_tasks(draw: st.DrawFn) -> list[LogEntry]:
    """``logs`` interleaved with plain tasks (and near-plain ones), each task's events in
    order, some events appended again later (a repeat), and late events naming the plain
    tasks after they ended (a retry, a zombie's page)."""
    base = [e.event for e in draw(logs)]
    tasks = [draw(plain_task(n)) for n in range(draw(st.integers(0, 16)))]
    merged: list[AnyEvent] = []
    queues = [base, *tasks]
    while any(queues):
        queue = draw(st.sampled_from([q for q in queues if q]))
        merged.append(queue.pop(0))
    for _ in range(draw(st.integers(0, 3))):
        if not tasks:
            break
        task_id = f"p{draw(st.integers(0, len(tasks) - 1))}"
        late = draw(
            st.sampled_from(
                [
                    TaskRetried(actor="operator", task_id=task_id, reason="again"),
                    PageFetched(actor="w9", task_id=task_id, attempt=1, url="u", status=200),
                    ItemScraped(actor="w9", task_id=task_id, key="k1"),
                ]
            )
        )
        merged.insert(draw(st.integers(0, len(merged))), late)
    for _ in range(draw(st.integers(0, 2))):
        if merged:
            repeat = merged[draw(st.integers(0, len(merged) - 1))]
            merged.insert(draw(st.integers(0, len(merged))), repeat)
    return as_entries(merged)
