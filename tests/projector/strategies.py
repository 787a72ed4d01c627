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
