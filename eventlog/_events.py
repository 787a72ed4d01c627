"""The events of the log: one tagged union of frozen msgspec Structs.

Evolution rules, because an old log must still decode:

* a new field always has a default;
* every field is written, defaults included: were defaults omitted, changing a default
  would silently change what old events say;
* a tag is never reused or renamed, even after its event type is retired;
* a change a default cannot express bumps ``SCHEMA_VERSION`` in ``_codec`` and adds an
  upcaster there that rewrites the older payload.

Order is the stream ID, never ``at``: ``at`` is the actor's wall clock, for reports only.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Iterable
from typing import Any, ClassVar, Final, Literal, TypeAlias, TypeVar

import msgspec

from eventlog._ids import new_event_id

NO_REASON = ""
FIRST_RUN: Final = 1
"""The run of a job's first crawl; ``crawlog recrawl`` numbers its runs on from it."""
RECRAWL_ACTOR: Final = "recrawl"
"""The actor of the ``TaskEnqueued`` of a recrawl's revisits (``crawlog recrawl``): pages an
earlier run counted against ``--max-pages``, enqueued without counting them again. A
restore, which rebuilds the count from the log, leaves them out by it."""


def _now() -> float:
    return time.time()


# gc=False: events are immutable values that cannot form reference cycles, and keeping
# them out of the cycle collector's reach makes decoding a large batch markedly faster.
class Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", gc=False):
    """Fields every event carries: its id, who did it, and their wall clock."""

    event_id: str = msgspec.field(default_factory=new_event_id)
    actor: str
    at: float = msgspec.field(default_factory=_now)

    subject_kind: ClassVar[str] = "job"


class TaskEvent(Event, frozen=True, kw_only=True):
    """Something that happened to one task."""

    task_id: str
    run: int = FIRST_RUN
    """The job's run the task belongs to (`FIRST_RUN`; ``crawlog recrawl`` starts runs past
    it): stamped on each event of a run's task by the queue that writes it (`of_run`)."""

    subject_kind: ClassVar[str] = "task"


class SiteEvent(Event, frozen=True, kw_only=True):
    """Something that happened to one site (a scheme://host:port)."""

    site: str

    subject_kind: ClassVar[str] = "site"


class Cursor(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Where a task resumes: the next page to fetch and the last item already written."""

    page: int = 0
    url: str | None = None
    last_item_key: str | None = None
    state: str | None = None
    """Whatever the spider asked to get back on resume (``NextPage.cursor``)."""
    data: dict[str, Any] | None = None
    """The next page's ``response.data`` (``NextPage.data``; None: the task's own)."""


class RequestSpec(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """How a task's first page is asked for and which spider method parses its pages,
    when that is not a plain GET parsed by ``parse`` (a task without one has None).

    Carried by the task's lane entry and its ``TaskEnqueued`` event, so that another worker
    redoes a task exactly after a kill, and an operator's retry keeps it."""

    callback: str | None = None
    """The spider method that parses the task's pages (None: ``parse``)."""
    data: dict[str, Any] | None = None
    """What the callback gets as ``response.data`` (None: ``{}``)."""
    method: str = "GET"
    body: bytes | None = None
    headers: dict[str, str] | None = None
    """Sent with the task's requests, over the fetcher's default headers."""
    meta: dict[str, Any] | None = None
    """What the callback gets as ``response.meta`` (None: ``{}``)."""
    cb_kwargs: dict[str, Any] | None = None
    """The keywords the callback is called with (None: none)."""


Change = Literal["new", "changed", "unchanged", "gone"]
"""What a run found of a page: not in an earlier run, a different body, the same body (or
a 304), or a 404/410 where the page was."""


class Validators(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """What the earlier runs left of a page, carried by its revisit (`Task.revisit`, and its
    `TaskEnqueued`, so a restored or retried revisit has it too): what its last fetch said
    of its body, which the revisit asks the server with (``If-None-Match``,
    ``If-Modified-Since``) and compares a new body's hash with; that fetch's status and
    landing; how many of its pages were fetched; the actions done on it."""

    etag: str | None = None
    last_modified: str | None = None
    body_hash: str | None = None
    status: int = 0
    """The status that fetch got (0: not recorded, a log of before it was): a page of its
    own (2xx) or a redirect (3xx), which a revisit's verdict tells apart (`Change`)."""
    landed: str | None = None
    """The URL that fetch landed on when a redirect took it elsewhere (None: the task's
    own). That run counted it against ``--max-pages`` as it claimed it: following the same
    redirect again does not count it again; landing elsewhere is a move (`Change`)."""
    pages: int = 0
    """How many pages of it (its first and next pages) any earlier run fetched. Its next
    pages up to that one were counted against ``--max-pages`` then: a run going through them
    again does not count them again (0: not recorded, a log of before it was)."""
    actions_done: tuple[str, ...] = ()
    """The ``response.once`` actions an earlier run's visit of it did (their ids, sorted):
    a revisit parsing it again does not do them again. Once is once per page for the job,
    not per run: a recrawl of a changed page must not ship an order twice."""


class Counts(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A task's running totals, carried by checkpoints so a resume restores them."""

    pages: int = 0
    items: int = 0
    bytes: int = 0


EVIDENCE_BODY_BYTES: Final = 64 * 1024
"""Bytes of a response's body its evidence keeps (compressed): enough to see the page."""
EVIDENCE_HEADER_BYTES: Final = 16 * 1024
"""Bytes of header names and values an evidence keeps, so that a site answering with
endless headers cannot make an event of any size: the headers past it are left out."""
EVIDENCE_LEVEL: Final = 6
EVIDENCE_TRACEBACK_CHARS: Final = 4 * 1024
"""Characters of a spider's traceback an evidence keeps: its end, where the spider's own
frames and the error are."""
"""zlib's level for the body: a failure is rare, so its ratio matters more than its cost."""
EVIDENCE_SCREENSHOT_BYTES: Final = 256 * 1024
"""Bytes of a screenshot an evidence keeps: a page's first screen, as a JPEG."""


class Evidence(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """The last response a task got before it failed: what an operator looks at to see why.

    Carried by the terminal event (`TaskFailed`, `TaskAborted`), so it is written in the
    same fenced step, archived with it and trimmed from Redis with it."""

    url: str
    """The URL that answered (after redirects)."""
    status: int
    headers: tuple[tuple[str, str], ...] = ()
    """Every header as received, in order, a repeated one (``Set-Cookie``) once each."""
    body_z: bytes = b""
    """The first `EVIDENCE_BODY_BYTES` of the decoded body, zlib-compressed."""
    body_bytes: int = 0
    """The length of the whole body as the worker had it."""
    truncated: bool = False
    """The body was longer than what ``body_z`` keeps."""
    headers_truncated: bool = False
    """Headers past `EVIDENCE_HEADER_BYTES` were left out."""
    content_type: str | None = None
    traceback: str | None = None
    """The spider's traceback when its exception failed the task (the last
    `EVIDENCE_TRACEBACK_CHARS` of it); None otherwise."""
    screenshot: bytes = b""
    """A browser page's screenshot (JPEG) when a flow handed its task to a person; at
    most `EVIDENCE_SCREENSHOT_BYTES` (else none is kept)."""

    @property
    def body(self) -> bytes:
        """The kept start of the body, decompressed."""
        return zlib.decompress(self.body_z) if self.body_z else b""

    def with_screenshot(self, image: bytes) -> Evidence:
        """This evidence with a screenshot, unless it is past its bound."""
        if len(image) > EVIDENCE_SCREENSHOT_BYTES:
            return self
        return msgspec.structs.replace(self, screenshot=image)

    def with_traceback(self, text: str) -> Evidence:
        """This evidence with the end of the traceback ``text``, cut to its bound."""
        return msgspec.structs.replace(self, traceback=text[-EVIDENCE_TRACEBACK_CHARS:])

    @classmethod
    def of(
        cls,
        url: str,
        status: int,
        headers: Iterable[tuple[str, str]],
        body: bytes,
        *,
        content_type: str | None = None,
    ) -> Evidence:
        """The evidence of a response: its headers and body cut to the bounds above."""
        kept: list[tuple[str, str]] = []
        room = EVIDENCE_HEADER_BYTES
        cut = False
        for name, value in headers:
            room -= len(name) + len(value)
            if room < 0:
                cut = True
                break
            kept.append((name, value))
        start = body[:EVIDENCE_BODY_BYTES]
        return cls(
            url=url,
            status=status,
            headers=tuple(kept),
            body_z=zlib.compress(start, EVIDENCE_LEVEL) if start else b"",
            body_bytes=len(body),
            truncated=len(body) > len(start),
            headers_truncated=cut,
            content_type=content_type,
        )


# --- task events -------------------------------------------------------------------------


class TaskEnqueued(TaskEvent, frozen=True, kw_only=True, tag="task.enqueued"):
    """A task entered the queue (only the first time its fingerprint was seen)."""

    url: str
    site: str
    depth: int = 0
    priority: int = 0
    parent_task_id: str | None = None
    spec: RequestSpec | None = None
    """Its method, body, headers, callback and data, if not a plain GET for ``parse``."""
    request: bytes | None = None
    """The request the task carries (`Task.request`), so the log alone can rebuild it."""
    lastmod: str | None = None
    """The ``<lastmod>`` the sitemap that listed the URL gave it, if any."""
    changefreq: str | None = None
    """The ``<changefreq>`` the sitemap that listed the URL gave it, if any."""
    revisit: Validators | None = None
    """For a page an earlier run fetched: its validators then (None: a page new to the run)."""


class TaskClaimed(TaskEvent, frozen=True, kw_only=True, tag="task.claimed"):
    """A worker took the task's lease; ``deliveries`` > 1 means it is a recovery."""

    attempt: int
    deliveries: int = 1
    unrecorded_fetch: bool = True
    """With ``deliveries`` > 1 (a take-back): whether the worker before took a politeness
    slot for the task after the task's last write, so that a request of it may have reached
    the site with nothing in the log; False: it had not (`Lease.unrecorded_fetch`). Logs
    written before this was known say True."""


class TaskReclaimed(TaskEvent, frozen=True, kw_only=True, tag="task.reclaimed"):
    """A lease expired: another worker took the entry and put the task back in the queue."""

    attempt: int
    previous_owner: str
    deliveries: int
    reason: str = "lease expired"
    unrecorded_fetch: bool = True
    """Whether ``previous_owner`` may have had a request of the task on its way that the
    log never heard of (as `TaskClaimed.unrecorded_fetch`)."""


class CheckpointSaved(TaskEvent, frozen=True, kw_only=True, tag="task.checkpoint"):
    """The task's whole resume state after a page: everything before it is done."""

    attempt: int
    cursor: Cursor
    counts: Counts = Counts()
    recent_pages: tuple[str, ...] = ()
    """Fingerprints of the URLs of the task's latest pages (a bounded few, the latest
    last): a resumed task still sees a next page it fetched just before the checkpoint."""
    meta: dict[str, Any] | None = None
    """The next page's ``response.meta`` (``NextPage.meta``; None: the task's own). Beside
    the cursor, not in it: the state keeps the cursor, and these are the spider's alone."""
    cb_kwargs: dict[str, Any] | None = None
    """The next page's callback keywords (``NextPage.cb_kwargs``; None: the task's own)."""


class PageFetched(TaskEvent, frozen=True, kw_only=True, tag="task.page"):
    """One HTTP fetch, whatever its outcome."""

    attempt: int
    url: str
    status: int
    bytes: int = 0
    elapsed_ms: float = 0.0
    page: int = 0
    error: str | None = None
    dropped: dict[str, int] = msgspec.field(default_factory=dict)
    """URLs the spider yielded for this page that are not crawled, counted by reason
    ("not http(s)", "malformed", "out of scope", "too deep")."""
    items_dropped: dict[str, int] = msgspec.field(default_factory=dict)
    """Items the spider yielded for this page that its pipelines dropped, counted by
    reason (a ``DropItem``'s message, or "dropped by STEP" for a step returning None)."""
    etag: str | None = None
    """The response's ``ETag`` header, if any."""
    last_modified: str | None = None
    """The response's ``Last-Modified`` header, if any."""
    body_hash: str | None = None
    """A hash of the body, or of what the spider compares (`crawler.body_hash`); for a 304,
    the earlier fetch's."""
    change: Change | None = None
    """What a run past the first found (None in the first run: every page is new there)."""


class ItemScraped(TaskEvent, frozen=True, kw_only=True, tag="task.item"):
    """An output record; its ``key`` makes a refetched page write nothing twice."""

    key: str
    data: dict[str, Any] = msgspec.field(default_factory=dict)


class RetryScheduled(TaskEvent, frozen=True, kw_only=True, tag="task.retry_scheduled"):
    """The task goes back to pending and runs again after ``delay_s``."""

    attempt: int
    delay_s: float
    reason: str


ReleaseReason = Literal["worker stopped"]
"""Why a worker hands a task back unfinished: it was told to stop (SIGTERM, Ctrl-C)."""
WORKER_STOPPED: Final = "worker stopped"


class TaskReleased(TaskEvent, frozen=True, kw_only=True, tag="task.released"):
    """The worker (``actor``) gave the task back unfinished: pending again at once, with the
    attempt it had, to resume after its last checkpoint.

    Not a retry: nothing went wrong with the task and no attempt is used up. Logs written
    before this event say the same with ``RetryScheduled(attempt - 1, "worker stopped")``,
    which still folds as it always did (a retry)."""

    attempt: int
    """The attempt the task keeps: the next claim runs it again under the same number."""
    reason: ReleaseReason = WORKER_STOPPED


class TaskDone(TaskEvent, frozen=True, kw_only=True, tag="task.done"):
    """The task finished; terminal."""

    attempt: int
    reason: str = NO_REASON
    counts: Counts = Counts()


class TaskFailed(TaskEvent, frozen=True, kw_only=True, tag="task.failed"):
    """The task ran out of attempts; terminal."""

    attempt: int
    reason: str
    evidence: Evidence | None = None
    """The response the task failed on; None when it had none (a timeout, a refused
    connection, robots.txt), or in a log written before evidence was kept."""


class TaskAborted(TaskEvent, frozen=True, kw_only=True, tag="task.aborted"):
    """Recovery gave up after too many deliveries; terminal."""

    attempt: int
    reason: str
    deliveries: int
    last_error: str | None = None
    owners: tuple[str, ...] = ()
    evidence: Evidence | None = None
    """The last response of the task, if the aborting worker had one (see `TaskFailed`)."""


class TaskPaused(TaskEvent, frozen=True, kw_only=True, tag="task.paused"):
    """An operator (or an uncertain action) paused the task."""

    reason: str
    evidence: Evidence | None = None
    """What a flow that handed its task to a person saw last (its page, a screenshot)."""


class TaskParked(TaskEvent, frozen=True, kw_only=True, tag="task.parked"):
    """A worker set the task aside, unrun, because its site or the whole job is paused.

    Not a pause of the task itself: it runs again once that pause is lifted, with no
    ``TaskResumed``. Without this event the task stayed "running" in the fold, held by
    nobody, for as long as the pause lasted."""

    reason: str


class TaskResumed(TaskEvent, frozen=True, kw_only=True, tag="task.resumed"):
    """An operator resumed a paused task."""

    reason: str


class TaskRetried(TaskEvent, frozen=True, kw_only=True, tag="task.retried"):
    """An operator restarted a terminal task: the only way out of a terminal state."""

    reason: str


# --- site events -------------------------------------------------------------------------


class SitePaused(SiteEvent, frozen=True, kw_only=True, tag="site.paused"):
    """An operator paused every task of a site."""

    reason: str


class SiteResumed(SiteEvent, frozen=True, kw_only=True, tag="site.resumed"):
    """An operator resumed a paused site."""

    reason: str


class CircuitOpened(SiteEvent, frozen=True, kw_only=True, tag="site.circuit_opened"):
    """Too many consecutive failures: the site's tasks wait for a cooldown."""

    reason: str
    failures: int
    cooldown_s: float


class CircuitClosed(SiteEvent, frozen=True, kw_only=True, tag="site.circuit_closed"):
    """A probe succeeded: the site's tasks run again."""

    reason: str


class RobotsNotWhole(SiteEvent, frozen=True, kw_only=True, tag="site.robots"):
    """A worker fetched the site's robots.txt (for the whole job) and could not take it
    whole: it could not be read (5xx, 429, no response, a body that broke off, an address
    refused: nothing of the site is fetched until it can be), or it was longer than RFC
    9309's 500 KiB (its rules past the cut are not read). ``reason``: what ``report`` says
    of it; ``status``: its HTTP status (0: no response)."""

    reason: str
    status: int = 0


# --- job events --------------------------------------------------------------------------


class JobPaused(Event, frozen=True, kw_only=True, tag="job.paused"):
    """An operator paused the whole job."""

    reason: str


class JobResumed(Event, frozen=True, kw_only=True, tag="job.resumed"):
    """An operator resumed the job."""

    reason: str


# --- side effects ------------------------------------------------------------------------


class ActionIntended(TaskEvent, frozen=True, kw_only=True, tag="action.intended"):
    """Written before an action that must never run twice."""

    action_id: str


class ActionDone(TaskEvent, frozen=True, kw_only=True, tag="action.done"):
    """Written after the action ran; on resume the action is skipped."""

    action_id: str
    result: str | None = None


Decision = Literal["done", "redo", "abort"]
"""A person's answer about an action that may have run: it did (skip it), run it again, or
neither: stop the task (its next run fails it)."""


class ActionResolved(TaskEvent, frozen=True, kw_only=True, tag="action.resolved"):
    """A person decided about an uncertain action (its intent logged, its completion not):
    ``done`` skips it when the task resumes, ``redo`` lets it run again, ``abort`` fails
    the task when it resumes (its marker says "aborted")."""

    action_id: str
    decision: Decision
    reason: str


ORPHANED_REASON: Final = "journalled events orphaned: lease taken over"
"""The anomaly a `TaskOrphaned` is counted under."""


class TaskOrphaned(TaskEvent, frozen=True, kw_only=True, tag="task.orphaned"):
    """A worker's journalled write (``step``, with ``events`` events) came back from its
    journal after another worker had taken the task's lease over (``owner``; None: the
    lease was gone): recorded, never applied. The fold counts it as an anomaly
    (`ORPHANED_REASON`), so that ``report`` and ``status`` show how many there were."""

    entry_id: str
    step: str
    events: int
    owner: str | None = None


AnyEvent: TypeAlias = (
    TaskEnqueued
    | TaskClaimed
    | TaskReclaimed
    | CheckpointSaved
    | PageFetched
    | ItemScraped
    | RetryScheduled
    | TaskDone
    | TaskFailed
    | TaskAborted
    | TaskPaused
    | TaskResumed
    | TaskRetried
    | SitePaused
    | SiteResumed
    | CircuitOpened
    | CircuitClosed
    | JobPaused
    | JobResumed
    | ActionIntended
    | ActionDone
    | TaskParked
    | ActionResolved
    | TaskReleased
    | TaskOrphaned
    | RobotsNotWhole
)

EVENT_TYPES: tuple[type[Event], ...] = AnyEvent.__args__
TERMINAL_EVENT_TYPES: tuple[type[TaskEvent], ...] = (TaskDone, TaskFailed, TaskAborted)


def tag_of(event_type: type[Event]) -> str:
    """The wire tag of an event type (``"task.done"``)."""
    tag = event_type.__struct_config__.tag
    assert isinstance(tag, str)
    return tag


E = TypeVar("E", bound=Event)


def of_run(event: E, run: int) -> E:
    """``event`` as a task of ``run`` writes it: a task event of a run past the first gets
    the run stamped (the first run's, and every other event, are left as they are)."""
    if run == FIRST_RUN or not isinstance(event, TaskEvent) or event.run == run:
        return event
    return msgspec.structs.replace(event, run=run)
