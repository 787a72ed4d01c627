"""A task and a lease on it: what a lane entry holds, and how it is encoded.

A lane entry has one field, :data:`TASK_FIELD`, whose value is the task in msgpack. Its own
module so that the queue (`eventlog._queue`) and the take-back of a restarted worker's
pending list (`eventlog._take_back`) share it without importing each other.
"""

from __future__ import annotations

import msgspec

from eventlog._events import FIRST_RUN, RequestSpec, Validators
from eventlog._keys import TASK_FIELD


# Task and Lease hold only strings, numbers, tuples of strings and a spec of decoded values,
# so they cannot be part of a reference cycle: untracked by the garbage collector
# (gc=False), the 100,000 leases a restarted worker holds at once cost its collections
# nothing.
class Task(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    """What a worker needs to run a task; the payload of a lane entry."""

    task_id: str
    url: str
    site: str
    depth: int = 0
    priority: int = 0
    parent_task_id: str | None = None
    attempt: int = 1
    recoveries: int = 0
    """Times the task was taken from a worker that stopped renewing its lease."""
    owners: tuple[str, ...] = ()
    """Workers that held the task and lost it (the abort report's owner history)."""
    not_before: float = 0.0
    """Wall-clock time before which a retried task should not be fetched."""
    spec: RequestSpec | None = None
    """Method, body, headers, callback and data: None (omitted) for a plain GET for
    ``parse``, the default spider's every task."""
    request: bytes | None = None
    """A request the task carries in full (the Scrapy plug-in's ``Request.to_dict`` as
    msgpack); None for a task that is only its URL."""
    lastmod: str | None = None
    """The ``<lastmod>`` a sitemap gave the task's URL (W3C datetime, as written), if any."""
    changefreq: str | None = None
    """The ``<changefreq>`` a sitemap gave the task's URL, if any."""
    run: int = FIRST_RUN
    """The job's run the task belongs to: its links are tasks of the same run."""
    revisit: Validators | None = None
    """For a page an earlier run fetched: its validators then, sent as a conditional
    request (None: a first visit)."""


class Lease(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A task held by this worker: the PEL entry ``entry_id`` of lane ``lane``."""

    lane: int
    entry_id: str
    task: Task
    deliveries: int = 1
    """How many times the server delivered this entry (new reads, restarts, reclaims)."""
    previous_owner: str | None = None
    """For a reclaimed lease: the consumer it was taken from."""
    resume: bytes | None = None
    """For a taken-back or claimed lease: its task's ``ckpt`` value, read with it and decoded
    only when the task starts (``b""``: no checkpoint); None: not read (see
    `TaskQueue.resume_point`)."""
    unrecorded_fetch: bool = True
    """For a lease taken again (a take-back, an expired lease read for recovery): whether
    its worker then took a politeness slot for the task after the task's last write, so a
    request of it may have reached the site with nothing in the log
    (`JobKeys.fetches_started`). False only where that was read and found not so."""

    @property
    def held_as(self) -> tuple[int, str]:
        """Its lane and entry id, what names it among the leases of one holder: an entry id
        is unique within its lane only (one script call that adds to two lanes within one
        millisecond gives both entries the same id: a recrawl's seed, of priority 1, and
        the first of its other pages)."""
        return self.lane, self.entry_id

    @property
    def recoveries(self) -> int:
        """Recoveries of the task so far: earlier requeues plus redeliveries of this entry."""
        return self.task.recoveries + self.deliveries - 1


task_encoder = msgspec.msgpack.Encoder()
task_decoder = msgspec.msgpack.Decoder(Task)


def task_of(fields: list[bytes]) -> Task:
    """The task of a lane entry's fields; msgspec's DecodeError if there is none."""
    if len(fields) != 2 or fields[0] != TASK_FIELD:
        raise msgspec.DecodeError(f"expected one field {TASK_FIELD!r}")
    return task_decoder.decode(fields[1])
