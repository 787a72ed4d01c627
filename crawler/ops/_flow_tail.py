"""The event tail of a flow (`crawler.Flow`): the last moments of a task's long browser
interaction, as a person deciding about it reads them — the step each checkpoint reached
and its cursor, each once-only action's intent and outcome, the hand-over to a person and
the decision taken. ``crawlog history`` and ``crawlog report`` print it; the console's
task page shows it.

Folded from the task's events as they are (no event of its own): a checkpoint counts as a
flow's when its ``Cursor.state`` holds a `crawler.FlowState`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal

import msgspec

from crawler._flow import FlowState, decode_state
from eventlog import (
    ActionDone,
    ActionIntended,
    ActionResolved,
    AnyEvent,
    CheckpointSaved,
    LogEntry,
    TaskDone,
    TaskFailed,
    TaskPaused,
    TaskResumed,
    TaskRetried,
    stream_id_key,
)

if TYPE_CHECKING:
    import redis.asyncio as aioredis

    from projector import Store

FLOW_TAIL: Final = 12
"""Moments of a flow its tail keeps: the last ones, enough to see where it stopped."""

Moment = Literal["step", "intended", "done", "decided", "to a person", "resumed", "ended"]
"""What one line of a flow's tail is about."""
Phase = Literal["intended", "done", "aborted"]
"""Where a once-only action stands (as the fold's marker)."""


class FlowMoment(msgspec.Struct, frozen=True, kw_only=True):
    """One line of a flow's tail."""

    stream_id: str
    at_ms: int
    """When the server wrote it (its stream ID's milliseconds)."""
    kind: Moment
    what: str
    by: str


class FlowTail(msgspec.Struct, frozen=True, kw_only=True):
    """Where a flow stands and how it got there: its last checkpoint's state (None before
    its first) and its last `FLOW_TAIL` moments, oldest first."""

    flow: str | None
    step: str | None
    page: int | None
    last_key: str | None
    moments: list[FlowMoment]
    left_out: int = 0
    """Earlier moments not kept."""
    data: dict[str, Any] = {}
    """The flow's own data at its last checkpoint."""


class ActionOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """Where one once-only action of a task stands, from its events."""

    action_id: str
    phase: Phase
    """``intended``: begun, its outcome not known (a person, or its policy, decides)."""
    result: str | None = None
    """How it was done (``verified``: its check found it had happened), if said."""
    decision: str | None = None
    """A person's last decision about it (``done``, ``redo``, ``abort``), and why."""
    reason: str | None = None
    by: str | None = None


def _cursor(state: FlowState) -> str:
    after = f"after {state.last_key}" if state.last_key else "at its start"
    return f"page {state.page} {after}"


def moment_of(event: AnyEvent) -> tuple[Moment, str] | None:
    """What ``event`` is in a flow's tail (None: not a moment of it)."""
    match event:
        case CheckpointSaved():
            state = decode_state(event.cursor.state)
            if state is None:
                return None
            data = f", data {len(state.data)} key(s)" if state.data else ""
            return "step", f"step {state.step} reached: {_cursor(state)}{data}"
        case ActionIntended():
            return "intended", f"{event.action_id}: intended"
        case ActionDone():
            how = f" ({event.result})" if event.result else ""
            return "done", f"{event.action_id}: done{how}"
        case ActionResolved():
            return "decided", f"{event.action_id}: decided {event.decision} ({event.reason})"
        case TaskPaused():
            shown = " (page, HTML and screenshot kept)" if event.evidence is not None else ""
            return "to a person", f"{event.reason}{shown}"
        case TaskResumed() | TaskRetried():
            return "resumed", event.reason
        case TaskDone():
            return "ended", "done"
        case TaskFailed():
            return "ended", f"failed: {event.reason}"
    return None


def flow_tail(
    entries: Sequence[LogEntry], task_id: str, *, shown: int = FLOW_TAIL
) -> FlowTail | None:
    """The tail of ``task_id``'s flow in ``entries`` (its events among others, in log
    order); None if the task checkpointed no flow state and logged no action."""
    moments: list[FlowMoment] = []
    last: FlowState | None = None
    flow = False
    for entry in entries:
        event = entry.event
        if getattr(event, "task_id", None) != task_id:
            continue
        found = moment_of(event)
        if found is None:
            continue
        kind, what = found
        if isinstance(event, CheckpointSaved):
            last = decode_state(event.cursor.state)
        flow = flow or kind in ("step", "intended", "done", "decided")
        at_ms = stream_id_key(entry.stream_id)[0]
        moments.append(
            FlowMoment(stream_id=entry.stream_id, at_ms=at_ms, kind=kind, what=what, by=event.actor)
        )
    if not flow:
        return None
    kept = moments[-shown:] if shown else []
    return FlowTail(
        flow=last.flow if last else None,
        step=last.step if last else None,
        page=last.page if last else None,
        last_key=last.last_key if last else None,
        data=last.data if last else {},
        moments=kept,
        left_out=len(moments) - len(kept),
    )


def action_outcomes(entries: Sequence[LogEntry], task_id: str) -> list[ActionOutcome]:
    """Each once-only action of ``task_id`` in ``entries`` as its last event left it, in
    the order they were first intended (as the fold reads them: a ``redo`` forgets the
    intent, so the action is intended again when it next runs)."""
    found: dict[str, ActionOutcome] = {}
    for entry in entries:
        event = entry.event
        if getattr(event, "task_id", None) != task_id:
            continue
        match event:
            case ActionIntended():
                old = found.get(event.action_id)
                fresh = ActionOutcome(action_id=event.action_id, phase="intended")
                found[event.action_id] = (
                    fresh if old is None else msgspec.structs.replace(old, phase="intended")
                )
            case ActionDone():
                old = found.get(event.action_id) or ActionOutcome(
                    action_id=event.action_id, phase="done"
                )
                found[event.action_id] = msgspec.structs.replace(
                    old, phase="done", result=event.result
                )
            case ActionResolved() if event.action_id in found:
                decided = event.decision
                phase: Phase = (
                    "done" if decided == "done" else "aborted" if decided == "abort" else "intended"
                )
                found[event.action_id] = msgspec.structs.replace(
                    found[event.action_id],
                    phase=phase,
                    decision=event.decision,
                    reason=event.reason,
                    by=event.actor,
                )
    return list(found.values())


def flow_tail_lines(tail: FlowTail, indent: str = "") -> list[str]:
    """A flow's tail as text: where it stands, then a line a moment (server time, UTC)."""
    where = (
        f"flow {tail.flow}: step {tail.step}, page {tail.page} "
        + (f"after {tail.last_key}" if tail.last_key else "at its start")
        if tail.flow
        else "no flow checkpoint yet"
    )
    lines = [f"{indent}{where}; its last {len(tail.moments)} event(s):"]
    if tail.left_out:
        lines.append(f"{indent}  … {tail.left_out} earlier event(s) (crawlog history has them)")
    for moment in tail.moments:
        clock = dt.datetime.fromtimestamp(moment.at_ms / 1000, dt.UTC).strftime("%H:%M:%S")
        lines.append(f"{indent}  {clock}  {moment.kind:<11}  {moment.what}")
    return lines


async def flow_tails(
    client: aioredis.Redis, store: Store, task_ids: Collection[str]
) -> dict[str, FlowTail]:
    """The flow tails of ``task_ids`` (those that have one), from the archive and the
    stream after it: up to date."""
    from projector import task_history

    if not task_ids:
        return {}
    entries = await task_history(client, store, task_ids)
    tails = {t: flow_tail(entries, t) for t in task_ids}
    return {t: tail for t, tail in tails.items() if tail is not None}
