"""How an operator reads a task's events: one line of detail for each, beside its type.

``crawlog history`` prints them as a table, the console's task page as a list.
"""

from __future__ import annotations

import msgspec

from crawler.ops._evidence import evidence_summary
from eventlog import (
    AnyEvent,
    CheckpointSaved,
    ItemScraped,
    PageFetched,
    RequestSpec,
    RetryScheduled,
    TaskAborted,
    TaskClaimed,
    TaskEnqueued,
    TaskFailed,
    TaskOrphaned,
    TaskReclaimed,
    TaskReleased,
)

DATA_SHOWN = 80
"""Characters of a task's data, meta or cb_kwargs (as JSON) its history shows."""


def request_summary(spec: RequestSpec) -> str:
    """What a task asks for when it is not a plain GET parsed by ``parse``."""
    parts = [spec.method]
    if spec.body:
        parts[0] += f" with a {len(spec.body)} B body"
    if spec.headers:
        parts.append(f"headers {', '.join(sorted(spec.headers))}")
    parts.append(f"callback {spec.callback or 'parse'}")
    for name, value in (("data", spec.data), ("meta", spec.meta), ("cb_kwargs", spec.cb_kwargs)):
        if value:
            shown = msgspec.json.encode(value).decode()
            parts.append(
                f"{name} {shown if len(shown) <= DATA_SHOWN else shown[: DATA_SHOWN - 1] + '…'}"
            )
    return ", ".join(parts)


_NONE_ON_ITS_WAY = "; no request of it was on its way"
"""A retake whose lost lease had taken no politeness slot since the task's last write."""


def detail_of(event: AnyEvent) -> str:
    """What ``crawlog history`` says of an event beside its type: why, or what it carried."""
    match event:
        case TaskEnqueued():
            return (
                f"depth {event.depth}"
                + (f", linked from task {event.parent_task_id}" if event.parent_task_id else "")
                + (f"; {request_summary(event.spec)}" if event.spec is not None else "")
            )
        case TaskClaimed():
            again = f", delivery {event.deliveries}" if event.deliveries > 1 else ""
            quiet = _NONE_ON_ITS_WAY if event.deliveries > 1 and not event.unrecorded_fetch else ""
            return f"attempt {event.attempt}{again}{quiet}"
        case TaskReclaimed():
            owner, deliveries = event.previous_owner, event.deliveries
            quiet = "" if event.unrecorded_fetch else _NONE_ON_ITS_WAY
            return f"{event.reason}: taken from {owner} (delivery {deliveries}){quiet}"
        case PageFetched():
            outcome = event.error or f"HTTP {event.status}"
            dropped = "".join(f", {n} {why}" for why, n in sorted(event.dropped.items()))
            items = "".join(f", {n} {why}" for why, n in sorted(event.items_dropped.items()))
            return (
                f"page {event.page} {outcome}, {event.bytes} B, {event.elapsed_ms:.0f} ms"
                + (f", {event.change}" if event.change is not None else "")
                + (f"; URLs dropped{dropped}" if dropped else "")
                + (f"; items dropped by pipelines{items}" if items else "")
            )
        case CheckpointSaved():
            counts = event.counts
            return f"after page {event.cursor.page} ({counts.pages} pages, {counts.items} items)"
        case ItemScraped():
            return f"item {event.key}"
        case RetryScheduled():
            return f"{event.reason}: attempt {event.attempt + 1} in {event.delay_s:.1f} s"
        case TaskReleased():
            return f"released by {event.actor}: {event.reason} (attempt {event.attempt} kept)"
        case TaskOrphaned():
            owner = f"taken over by {event.owner}" if event.owner else "gone"
            return (
                f"{event.events} event(s) of {event.actor}'s {event.step} from its journal "
                f"not applied: the lease was {owner}"
            )
        case TaskAborted():
            owners = f"; held by {', '.join(event.owners)}" if event.owners else ""
            last = f"; last error {event.last_error}" if event.last_error else ""
            kept = f"; evidence {evidence_summary(event.evidence)}" if event.evidence else ""
            return f"{event.reason}{last}{owners}{kept}"
        case TaskFailed() if event.evidence is not None:
            return f"{event.reason}; evidence {evidence_summary(event.evidence)}"
    parts = [
        str(getattr(event, name))
        for name in ("site", "reason", "action_id")
        if getattr(event, name, None)
    ]
    return ": ".join(parts)
