"""The state the log folds into: tasks, sites and the job.

Mutable msgspec Structs, owned by one fold: ``apply`` updates them in place (copying a
whole state per event would cost far more than the fold itself). Everything in here
is derived from the log alone, so ``replay`` rebuilds it exactly; ``canonical`` is the
byte form two states are compared by.
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias

import msgspec

from eventlog import FIRST_RUN, ORPHANED_REASON, Counts, Cursor, RequestSpec, Validators

TaskStatus: TypeAlias = Literal["pending", "running", "paused", "done", "failed", "aborted"]
"""Where a task is in its life, as the log tells it."""

PENDING: Final = "pending"
RUNNING: Final = "running"
PAUSED: Final = "paused"
DONE: Final = "done"
FAILED: Final = "failed"
ABORTED: Final = "aborted"
STATUSES: Final[tuple[TaskStatus, ...]] = (PENDING, RUNNING, PAUSED, DONE, FAILED, ABORTED)
TERMINAL: Final[frozenset[TaskStatus]] = frozenset({DONE, FAILED, ABORTED})

CIRCUIT_CLOSED: Final = "closed"
CIRCUIT_OPEN: Final = "open"

DEDUP_WINDOW: Final = 100_000
"""Event ids remembered to ignore a repeat: the append script already skips repeats within
its own window, so this only has to catch the rare one it let through."""
MAX_ANOMALIES_KEPT: Final = 10_000
"""Anomalies kept in full; beyond, only counted (a runaway zombie must not fill memory)."""
CarriedRequest: TypeAlias = bytes
"""A task's carried request (msgpack); named so, because ``TaskState.bytes`` is a field."""


class TaskState(msgspec.Struct, kw_only=True, gc=False):
    """One task as the log tells it."""

    task_id: str
    url: str
    site: str
    depth: int = 0
    parent_task_id: str | None = None
    status: TaskStatus = PENDING
    attempt: int = 1
    owner: str | None = None
    last_actor: str = ""
    last_reason: str = ""
    last_error: str | None = None
    checkpoint: Cursor | None = None
    checkpoint_id: str | None = None
    """Stream ID of the last checkpoint: what the ``ckpt`` index in Redis points at."""
    counts: Counts = Counts()
    pages_fetched: int = 0
    refetches: int = 0
    bytes: int = 0
    items: int = 0
    retries: int = 0
    recoveries: int = 0
    deliveries: int = 0
    enqueued_at: float = 0.0
    updated_at: float = 0.0
    furthest_page: int = -1
    """The highest page fetched so far with a good response: fetching one at or before it
    again is a refetch (the fetch after a failed one is the page's retry).

    A number, not a set of pages: a task's pages are fetched in order, and a million
    tasks each holding a set would keep the garbage collector busy scanning them."""
    actions: dict[str, str] | None = None
    """Action id -> "intended" or "done" (the two-phase marker of ``ctx.once``)."""
    dropped: int = 0
    """URLs its spider yielded that are not crawled (by reason: the site's and job's)."""
    parked: bool = False
    """Paused because its site or the job is (``TaskParked``), not by a pause of its own:
    pending again once that pause is lifted."""
    spec: RequestSpec | None = None
    """Its method, body, headers, callback and data (``TaskEnqueued``): a retry keeps them."""
    request: CarriedRequest | None = None
    """The request it carries (``TaskEnqueued.request``, a Scrapy request): a retry keeps it."""
    run: int = FIRST_RUN
    """The job's run it belongs to (``TaskEnqueued.run``): a retry stays in that run."""
    revisit: Validators | None = None
    """The validators an earlier run's fetch left (``TaskEnqueued.revisit``): a retry of a
    revisit asks the site conditionally again, as the run did."""


class SiteState(msgspec.Struct, kw_only=True, gc=False):
    """One site: its tasks by status, and whether it may be crawled."""

    site: str
    tasks: dict[str, int] = msgspec.field(default_factory=dict)
    paused: bool = False
    paused_reason: str = ""
    circuit: str = CIRCUIT_CLOSED
    circuit_reason: str = ""
    pages: int = 0
    failures: int = 0
    dropped: dict[str, int] = msgspec.field(default_factory=dict)
    """URLs its spiders yielded that are not crawled, by reason."""
    circuit_openings: int = 0
    """Times its circuit opened (``CircuitOpened``): each held its pages for a cooldown."""


class Anomaly(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """An event the state machine refused: recorded, never applied."""

    event_id: str
    stream_id: str
    event_type: str
    task_id: str | None
    from_status: str | None
    reason: str


class JobState(msgspec.Struct, kw_only=True, gc=False):
    """Totals of the whole job."""

    tasks: dict[str, int] = msgspec.field(default_factory=dict)
    paused: bool = False
    paused_reason: str = ""
    events: int = 0
    """Events folded (repeats and anomalies included)."""
    repeats_ignored: int = 0
    pages: int = 0
    refetches: int = 0
    bytes: int = 0
    items: int = 0
    duplicate_items: int = 0
    anomalies: dict[str, int] = msgspec.field(default_factory=dict)
    """Refused events counted by reason."""
    dropped: dict[str, int] = msgspec.field(default_factory=dict)
    """URLs spiders yielded that are not crawled, by reason ("not http(s)", "out of
    scope", ...): counted per fetched page that yielded them."""
    items_dropped: dict[str, int] = msgspec.field(default_factory=dict)
    """Items spiders yielded that their pipelines dropped, by reason: counted per fetched
    page, as URLs dropped are."""

    @property
    def refused(self) -> int:
        """Refused events but the orphaned journal writes: what no fault explains (a crawl,
        however it was cut, must end with none)."""
        return sum(n for why, n in self.anomalies.items() if why != ORPHANED_REASON)

    @property
    def orphaned(self) -> int:
        """Journalled writes refused because their task's lease was taken over meanwhile
        (`ORPHANED_REASON`): the journal's fencing at work, counted apart from the others."""
        return self.anomalies.get(ORPHANED_REASON, 0)


class State(msgspec.Struct, kw_only=True, gc=False):
    """Everything the log folds into, and the stream ID of the last event folded."""

    position: str = "0-0"
    job: JobState = msgspec.field(default_factory=JobState)
    tasks: dict[str, TaskState] = msgspec.field(default_factory=dict)
    sites: dict[str, SiteState] = msgspec.field(default_factory=dict)
    anomalies: list[Anomaly] = msgspec.field(default_factory=list)
    item_keys: set[str] = msgspec.field(default_factory=set)
    recent_event_ids: set[str] = msgspec.field(default_factory=set)
    older_event_ids: set[str] = msgspec.field(default_factory=set)
    """Event ids of the last one to two ``DEDUP_WINDOW``s: when the recent set is full it
    becomes the older one. Sets, not an ordered window, so that a state restored from a
    snapshot (whose sets are sorted) goes on exactly as the one that wrote it."""


_canonical_encoder = msgspec.msgpack.Encoder(order="deterministic")
_state_decoder = msgspec.msgpack.Decoder(State)


def canonical(state: State) -> bytes:
    """The state as bytes that are equal exactly when two states are equal."""
    return _canonical_encoder.encode(state)


def state_from_bytes(data: bytes) -> State:
    """A state saved with ``canonical``."""
    return _state_decoder.decode(data)
