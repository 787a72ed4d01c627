"""What a `TaskQueue` tells an observer of it: the hook its metrics are counted through.

A queue built with ``observer=`` calls it around each of its writing calls, as httpx calls
its ``event_hooks`` around each request: a fenced step (``settling`` before the script is
sent, ``settled`` once it went through), an enqueue, a renewal, a recovery pass and a
control event. A call that raises (a lease lost,
a site resumed meanwhile, the server gone) wrote nothing and is not reported as done. The
observer runs inline, on the queue's task: it must not block or await.
"""

from __future__ import annotations

from collections.abc import Sequence, Set
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    from eventlog._control import ControlEvent
    from eventlog._events import Event, TaskAborted, TaskReclaimed
    from eventlog._tasks import Lease, Task

SettleMode = Literal["ckpt", "note", "finish", "requeue", "delay", "park", "started"]
"""The fenced steps of a leased task (the ``SETTLE`` script's modes): a checkpoint, a note
(events and an action marker), the end of the task, a requeue, a delay, a park, and a
request started while the store was down (`TaskQueue.mark_fetch_started`)."""
ACKING_MODES: frozenset[SettleMode] = frozenset({"finish", "requeue", "delay", "park"})
"""The fenced steps that ack the task's entry: it leaves the consumer's pending list."""


class QueueObserver(Protocol):
    """Told of what a `TaskQueue` wrote, and how long each call took (seconds)."""

    def settling(self, mode: SettleMode, lease: Lease) -> None:
        """A fenced step of ``lease`` is about to be sent (a renewal sent meanwhile may find
        the entry acked by it)."""

    def settled(
        self, mode: SettleMode, lease: Lease, events: Sequence[Event], seconds: float
    ) -> None:
        """A fenced step went through with ``events`` (also for a repeat the script found
        already written)."""

    def enqueued(self, tasks: Sequence[Task], new: Sequence[bool], seconds: float) -> None:
        """``tasks`` were offered (at least one); ``new``: per task, whether it was enqueued."""

    def renewed(self, leases: Sequence[Lease], lost: Set[str], seconds: float) -> None:
        """A renewal of ``leases`` (maybe none) is back: the entry ids in ``lost`` are no
        longer this consumer's (taken by another, or acked by this one meanwhile)."""

    def recovered(self, events: Sequence[TaskReclaimed | TaskAborted], seconds: float) -> None:
        """A recovery pass moved expired leases (at least one offered): the events of
        those it moved."""

    def controlled(self, event: ControlEvent, seconds: float) -> None:
        """A pause, resume or circuit event was appended with its flag."""
