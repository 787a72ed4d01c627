"""The work queue of a job: priority lanes of tasks, leased through a consumer group.

A task entry sits in a lane stream; a worker that reads it through the ``workers`` group
owns it in its pending entry list (PEL), and that PEL entry *is* the lease. The server's
idle time of the entry is the lease age: renewing resets it, and an entry idle past the
lease can be reclaimed by any worker. Checkpoint, finish and requeue are fenced scripts
that write nothing unless the caller still owns the entry.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import defaultdict
from collections.abc import Awaitable, Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, NamedTuple

import anyio
import msgspec
import redis.asyncio as aioredis
import redis.exceptions

from eventlog._batching import ScriptBatcher
from eventlog._codec import decode, encode
from eventlog._connection import command, redis_errors, script_pipeline
from eventlog._control import ControlEvent, apply_control
from eventlog._durability import CONFIRMED_MODES, DEFAULT_DURABILITY, Durability, run_confirmed
from eventlog._events import (
    AnyEvent,
    CheckpointSaved,
    Event,
    Evidence,
    TaskAborted,
    TaskDone,
    TaskEnqueued,
    TaskEvent,
    TaskFailed,
    TaskOrphaned,
    TaskPaused,
    TaskReclaimed,
    TaskRetried,
    of_run,
)
from eventlog._exceptions import ConfigError, LeaseLost, PoisonEntry, ServerError, StoreLost
from eventlog._failover import failover_chain, follow_primary, may_follow
from eventlog._journal import Journal, JournalSettle, journal_directory
from eventlog._keys import (
    IDENTITY_EPOCH,
    LANE_HIGH,
    LANE_NORMAL,
    RESTORED_EPOCH,
    RESTORED_POSITION,
    WORKERS_GROUP,
    JobKeys,
    awaiting_value,
    delayed_member,
    parked_member,
    seen_slot,
    site_pause_flag,
    task_pause_flag,
)
from eventlog._keys import action_field as action_field_of
from eventlog._log import START, EventLog, stream_id_key
from eventlog._observer import QueueObserver, SettleMode
from eventlog._replies import (
    PendingEntry,
    SettleReply,
    expired_reply,
    pending_entries,
    settle_reply,
)
from eventlog._scripts import (
    CHECKPOINT_VALUES,
    CHECKPOINTS,
    CLAIM,
    CLAIM_AROUND,
    CLAIM_URL,
    ENQUEUE,
    EXPIRED,
    LEFT,
    PENDING,
    PROMOTE,
    RECOVER,
    RELEASE_HELD,
    RENEW,
    RENEW_IDLE,
    RETRY,
    SETTLE,
    TAKE_PAGE,
)
from eventlog._take_back import DEFAULT_TAKE_BACK_CHUNK, TakeBack
from eventlog._tasks import Lease as Lease
from eventlog._tasks import Task as Task
from eventlog._tasks import task_encoder, task_of

log = logging.getLogger(__name__)

DEFAULT_LEASE_MS = 30_000
"""A lease not renewed for this long (server idle time) may be reclaimed by others."""
DEFAULT_CLAIM_COUNT = 16
DEFAULT_RENEW_IDLE_COUNT = 500
"""Idle leases a lane renewed in one call of `TaskQueue.renew_idle`: few enough that one
call keeps the server only briefly from other workers' commands."""
PROMOTE_BATCH = 1000
MAX_SCAN_COUNT = 1000
"""Log entries a journal flush reads in one call as it looks for its writes."""
JOURNAL_DROP_EVERY_S = 2.0
"""How often, at most, a queue with a journal reads the projector's committed position to
delete the journal segments it committed (one GET, on a settle call)."""
_ORPHAN_IDS = uuid.UUID("6f7c1d0e-3a52-4c39-9b7e-0d2a5e4f1c88")
DEFAULT_CLAIM_AROUND_BUDGET = 64
"""Entries of busy sites one `TaskQueue.claim_around` may move to the end of their lane:
enough to reach other sites' tasks behind a run of one site's, few enough that one call
keeps the server only briefly from other workers' commands."""
DEFAULT_CLAIM_AROUND_LOOK_AHEAD = 1024
"""Entries past those a `TaskQueue.claim_around` found all busy that it reads (and does not
move) for another site's task, from where its last look ended: only if it finds one does
it move them. A lane of one busy site (a recrawl's, a one-site crawl's) is then read once,
instead of moved behind itself a budget at a time by every call."""

TerminalEvent = TaskDone | TaskFailed | TaskAborted
ActionState = Literal["intended", "done", "aborted"]
"""A ``ctx.once`` marker: the action's intent is logged, or its completion too; or a person
decided to stop the task there (``crawlog resolve --abort``)."""


_evidence_encoder = msgspec.msgpack.Encoder()
_evidence_decoder = msgspec.msgpack.Decoder(Evidence)


class Retry(msgspec.Struct, frozen=True, kw_only=True):
    """One operator retry: the task as it runs again, from the attempt that ended."""

    task: Task
    """The task's next attempt (``attempt`` = the ended one + 1)."""
    event: TaskRetried
    ended_attempt: int
    """The attempt the task ended at: a second retry of it is refused."""
    resume_after: str | None = None
    """Stream ID of the checkpoint to resume after; None to start at the first page."""


class JournalFlush(msgspec.Struct, frozen=True, kw_only=True):
    """What a journal flush (`TaskQueue.flush_journal`) did with the writes it found
    unacknowledged: each is counted once."""

    present: int = 0
    """Found in the log already (the store had them; the reply was lost with the worker)."""
    applied: int = 0
    """Written now: their lease was still the worker's (fenced as any write)."""
    orphaned: int = 0
    """Their lease was taken over since: recorded as `TaskOrphaned`, never applied."""
    skipped: int = 0
    """Refused as repeats of writes that went through, or parks of tasks resumed since."""
    unsure: int = 0
    """Of those not found in the log, how many it could not be searched for: it was
    trimmed past where they would be (`JournalSettle.after`), so one of them may have gone
    through before (a worker down longer than the projector's kept tail)."""

    @property
    def total(self) -> int:
        return self.present + self.applied + self.orphaned + self.skipped

    def __add__(self, other: JournalFlush) -> JournalFlush:
        return JournalFlush(
            present=self.present + other.present,
            applied=self.applied + other.applied,
            orphaned=self.orphaned + other.orphaned,
            skipped=self.skipped + other.skipped,
            unsure=self.unsure + other.unsure,
        )


OFFLINE_MODES: frozenset[SettleMode] = frozenset({"ckpt", "finish", "requeue", "delay"})
"""The steps a worker takes on while the store is down (`TaskQueue.store_down`): journalled,
sent by the flush once it is back. A note (an action's marker) and a park wait for the
store: their answer decides what the task does next."""


async def flush_journals(
    redis: aioredis.Redis, job: str | JobKeys, data_dir: Path
) -> dict[str, JournalFlush]:
    """Flush the journal every worker of ``job`` left in ``data_dir`` (`flush_journal`, as
    each worker does at its own start), by worker name: for a crawl to call before any of
    its workers claims (after ``crawlog restore``, a crawl started with fewer workers than
    the last). A journal in use is skipped: its live worker flushed it itself."""
    keys = job if isinstance(job, JobKeys) else JobKeys(job)
    flushed: dict[str, JournalFlush] = {}
    workers = data_dir / "workers"
    names = sorted(p.name for p in workers.iterdir()) if workers.is_dir() else []
    for name in names:
        directory = journal_directory(data_dir, name, keys.job)
        if not directory.is_dir():
            continue
        try:
            journal = Journal(directory)
        except ConfigError:
            continue
        try:
            flushed[name] = await TaskQueue(redis, keys, name, journal=journal).flush_journal()
        finally:
            journal.close()
    return flushed


def orphan_event_id(marker: str) -> str:
    """The id of the `TaskOrphaned` of a journalled write whose last event is ``marker``:
    the same on every flush, so that a flush cut short and run again records it once."""
    return str(uuid.uuid5(_ORPHAN_IDS, marker))


class Claimed(NamedTuple):
    """What `TaskQueue.claim_around` took, and how many entries of busy sites it moved."""

    leases: list[Lease]
    moved: int


class _Resumed(Exception):
    """A park refused because the pause was lifted meanwhile."""


def _joined(task_ids: Sequence[str]) -> str:
    """Task ids as one script argument, one a line."""
    joined = "\n".join(task_ids)
    if joined.count("\n") != len(task_ids) - 1:
        raise ValueError("a task id may not contain a newline")
    return joined


_JOURNALLED_ARGS = 3
"""``SETTLE``'s arguments a journal record leaves out: the dedup ttl, the epoch and the
restored entry (`JournalSettle.args` start at the group)."""
_UNCOUNTED = -1
"""The cap an `ENQUEUE` call is sent with for tasks the ``--max-pages`` count leaves out."""


def _stale_why(epoch: int, now: bytes | None) -> str:
    if not now:
        return "its identity key is gone: the store lost its data"
    return (
        f"it was restored meanwhile (epoch {epoch} -> {now.decode()}): what this process "
        "holds is void"
    )


def lane_for(task: Task) -> int:
    """The lane a fresh task goes to: positive priority jumps the queue."""
    return LANE_HIGH if task.priority > 0 else LANE_NORMAL


class TaskQueue:
    """One consumer's view of a job's work queue.

    ``redis``: the client; ``job``: the job's name or keys; ``consumer``: the worker's
    name in the ``workers`` group (its leases are its pending entries); ``lease_ms``: how
    long a lease lasts unrenewed; ``log``: the job's event log (default: one on ``redis``);
    ``record_events``: see the attribute; ``observer``: told of every writing call (the
    worker's metrics, `QueueObserver`), None for none; ``durability``: see the attribute.
    """

    def __init__(
        self,
        redis: aioredis.Redis,
        job: str | JobKeys,
        consumer: str,
        *,
        lease_ms: int = DEFAULT_LEASE_MS,
        log: EventLog | None = None,
        record_events: bool = True,
        observer: QueueObserver | None = None,
        durability: Durability = DEFAULT_DURABILITY,
        journal: Journal | None = None,
    ) -> None:
        if not consumer or any(c.isspace() for c in consumer):
            raise ConfigError(f"invalid worker name {consumer!r}: no spaces, not empty")
        if lease_ms < 1:
            raise ConfigError(f"lease must be at least 1 ms, not {lease_ms}")
        self.redis = redis
        self.keys = job if isinstance(job, JobKeys) else JobKeys(job)
        self.consumer = consumer
        self.lease_ms = lease_ms
        self.log = log or EventLog(redis, self.keys)
        self.record_events = record_events
        """False: task events are dropped, not appended (a no-op sink, to measure what the
        log costs: nothing can be resumed, replayed or reported then)."""
        self.poisoned = 0
        """Task entries this consumer moved to the dead stream because they did not decode."""
        self.observer = observer
        self.durability = durability
        """``replica``: a checkpoint or finish returns once a replica has it too
        (`eventlog._durability`)."""
        self.journal = journal
        """Every fenced write is appended here before it is sent (`eventlog._journal`);
        None: not journalled."""
        self.epoch = 0
        """The job's epoch this queue's leases are held in (`JobIdentity.epoch`, set by
        its worker once it has read it): ``SETTLE`` refuses a write of another epoch than
        the store's, atomically (`StoreLost`). 0: not checked."""
        self._enqueued: dict[str, list[list[str | bytes | int]]] = {}
        """Per task: the `ENQUEUE` calls of its links since its last journalled write,
        journalled with that write (`JournalSettle.enqueued`)."""
        self._journal_checked = 0.0
        self._down = anyio.Event()
        """Set while the store is taken for down (`store_down`): writes are journalled only."""
        self._up = anyio.Event()
        self._up.set()
        self._on_down: set[anyio.CancelScope] = set()
        """The scopes of `cancelled_if_down`, cancelled by `store_down`."""
        self._take_back = TakeBack(redis, self.keys, consumer, poisoned=self._poisoned)
        self.batcher = ScriptBatcher(redis)
        """Sends the hot script calls of this queue's concurrent callers (a settle, an
        enqueue, a claim; a host slot's, `HostSlots`) together while it runs
        (`ScriptBatcher.running`, a worker's whole run); alone otherwise."""
        self._settle_tails: dict[int, tuple[str, ...]] = {}
        """Per lane a task may be requeued to: the keys of a settle call after the dedup
        sets, built once (`_settle_keys`)."""
        self._groups_ready = False
        self._following = anyio.Lock()
        """One `follow_promotion` at a time: the others wait, then find it followed."""
        self._enqueue = redis.register_script(ENQUEUE)
        self._settle = redis.register_script(SETTLE)
        self._renew = redis.register_script(RENEW)
        self._renew_idle = redis.register_script(RENEW_IDLE)
        self._claim = redis.register_script(CLAIM)
        self._claim_around = redis.register_script(CLAIM_AROUND)
        self._looked: tuple[frozenset[str], list[str]] = (frozenset(), [])
        """The busy sites of the last `claim_around`, and per lane the entry up to which it
        found only their tasks ('': none): where the next one, for the same sites, looks on."""
        self._pending = redis.register_script(PENDING)
        self._expired = redis.register_script(EXPIRED)
        self._recover = redis.register_script(RECOVER)
        self._promote = redis.register_script(PROMOTE)
        self._checkpoints = redis.register_script(CHECKPOINTS)
        self._checkpoint_values = redis.register_script(CHECKPOINT_VALUES)
        self._retry = redis.register_script(RETRY)
        self._claim_url = redis.register_script(CLAIM_URL)
        self._take_page = redis.register_script(TAKE_PAGE)
        self._release_held = redis.register_script(RELEASE_HELD)
        self._left = redis.register_script(LEFT)

    async def ensure_groups(self) -> None:
        """Create every lane and its ``workers`` group if missing (idempotent)."""
        if self._groups_ready:
            return
        with redis_errors("creating the task lanes"):
            for lane in self.keys.lanes:
                try:
                    # From ID 0, not $: tasks enqueued before the group existed are work too.
                    await self.redis.xgroup_create(lane, WORKERS_GROUP, id="0", mkstream=True)
                except redis.exceptions.ResponseError as exc:
                    if "BUSYGROUP" not in str(exc):
                        raise
        self._groups_ready = True

    async def enqueue(
        self,
        tasks: Sequence[Task],
        *,
        actor: str,
        fingerprints: Sequence[str] | None = None,
        cap: int = 0,
        counted: bool = True,
    ) -> list[bool]:
        """Enqueue tasks whose fingerprint (default: task id) was never seen; one round trip.

        Returns, per task, whether it was new. Each new task gets its lane entry and its
        ``TaskEnqueued`` event in the same script, so neither exists without the other.
        With ``cap`` > 0, nothing is enqueued once the job has that many tasks (and pages
        taken by `take_page`). ``counted=False`` (with no cap) leaves the tasks out of that
        count: a recrawl's revisits, pages an earlier run counted already.
        """
        new, _ = await self.enqueue_within(
            tasks, actor=actor, fingerprints=fingerprints, cap=cap, counted=counted
        )
        return new

    async def enqueue_within(
        self,
        tasks: Sequence[Task],
        *,
        actor: str,
        fingerprints: Sequence[str] | None = None,
        cap: int = 0,
        counted: bool = True,
    ) -> tuple[list[bool], int]:
        """`enqueue`, and how many of the tasks were refused by ``cap`` alone (never seen,
        and not enqueued because the job had reached its cap)."""
        if fingerprints is not None and len(fingerprints) != len(tasks):
            raise ValueError("one fingerprint per task")
        if not counted and cap:
            raise ValueError("tasks left out of the count are not capped by it")
        if not tasks:
            return [], 0
        started = time.perf_counter()
        await self.ensure_groups()
        fps = fingerprints if fingerprints is not None else [t.task_id for t in tasks]
        dedup, ttl = self.log.dedup_args()
        keys = [self.keys.seen, self.keys.events, *dedup, *self.keys.lanes, self.keys.seen_count]
        args: list[str | bytes | int] = [ttl, cap if counted else _UNCOUNTED]
        for task, fp in zip(tasks, fps, strict=True):
            bucket, field = seen_slot(fp)
            keys.append(self.keys.seen_bucket(bucket))
            event = TaskEnqueued(
                actor=actor,
                task_id=task.task_id,
                url=task.url,
                site=task.site,
                depth=task.depth,
                priority=task.priority,
                parent_task_id=task.parent_task_id,
                spec=task.spec,
                request=task.request,
                lastmod=task.lastmod,
                changefreq=task.changefreq,
                run=task.run,
                revisit=task.revisit,
            )
            if self.record_events:
                args += (fp, field, lane_for(task), task_encoder.encode(task), event.event_id)
                args.append(encode(event))
            else:
                args += (fp, field, lane_for(task), task_encoder.encode(task), "", "")
        parent = tasks[0].parent_task_id
        journalled = (
            self.journal is not None
            and self.record_events
            and parent is not None
            and all(task.parent_task_id == parent for task in tasks)
        )
        if journalled:
            # Journalled with the parent's next write and sent again by any flush of it
            # (a store lost since, or down now: `flush_journal`).
            assert parent is not None
            self._enqueued.setdefault(parent, []).append(args[1:])
        with redis_errors("enqueueing tasks"):
            if not journalled:
                reply = await self.batcher.call(self._enqueue, keys, args)
            elif (
                answered := await self._unless_down(
                    lambda: self.batcher.call(self._enqueue, keys, args)
                )
            ) is None:
                # The store does not answer: the links go with the page's write, which the
                # flush sends once it is back. Whether they were new is not known here.
                return [False] * len(tasks), 0
            else:
                reply = answered
        new = [flag == 1 for flag in reply]
        if self.observer is not None:
            self.observer.enqueued(tasks, new, time.perf_counter() - started)
        return new, sum(flag == 2 for flag in reply)

    async def take_page(self, cap: int) -> bool:
        """Whether the job may fetch one more page under ``cap`` (``--max-pages``, > 0): a
        task's next page, counted (as enqueued tasks are) if so."""
        keys = [self.keys.seen, self.keys.seen_count]
        with redis_errors("counting a page against --max-pages"):
            return bool(await self._take_page(keys=keys, args=[cap]))

    async def control(self, event: ControlEvent, *, task_site: str = "") -> int:
        """Append a pause, resume or circuit event with its flag (``apply_control``)."""
        started = time.perf_counter()
        moved = await apply_control(self.redis, self.keys, event, task_site=task_site)
        if self.observer is not None:
            self.observer.controlled(event, time.perf_counter() - started)
        return moved

    async def claim_url(self, fingerprint: str, task_id: str, *, counted: bool = True) -> bool:
        """Whether task ``task_id`` may fetch the URL of ``fingerprint`` (a redirect
        target): True if no task has it yet (it is then seen) or this one claimed it.
        ``counted=False``: marked seen without counting against ``--max-pages``."""
        bucket, field = seen_slot(fingerprint)
        keys = [
            self.keys.seen,
            self.keys.redirected,
            self.keys.seen_bucket(bucket),
            self.keys.seen_count,
        ]
        with redis_errors("claiming a redirect target"):
            args: list[str | bytes] = [fingerprint, task_id, field, "1" if counted else "0"]
            found = await self._claim_url(keys=keys, args=args)
        return bool(found)

    async def retry(self, retries: Sequence[Retry]) -> list[bool]:
        """An operator's retries of ended tasks, in one round trip: per task, whether it was
        retried (False: a retry of that same ended attempt was already made).

        Each retried task gets its ``TaskRetried`` event and a new lane entry in the same
        script, so neither exists without the other, and never twice for one ended attempt.
        """
        if not retries:
            return []
        await self.ensure_groups()
        dedup, ttl = self.log.dedup_args()
        keys = [self.keys.events, *dedup, self.keys.retries, self.keys.ckpt, *self.keys.lanes]
        args: list[str | bytes | int] = [ttl]
        for retry in retries:
            task, event = retry.task, retry.event
            if event.task_id != task.task_id:
                raise ValueError(f"event is about task {event.task_id}, not {task.task_id}")
            args += (
                task.task_id, retry.ended_attempt, lane_for(task), task_encoder.encode(task),
                retry.resume_after or "", event.event_id, encode(event),
            )  # fmt: skip
        with redis_errors("retrying tasks"):
            reply = await self._retry(keys=keys, args=args)
        return [bool(flag) for flag in reply]

    async def claim(self, count: int = DEFAULT_CLAIM_COUNT, *, block_ms: int = 0) -> list[Lease]:
        """New tasks, highest-priority lane first; waits up to ``block_ms`` if there are none.

        What the script reads comes with each task's resume point (`Lease.resume`); what the
        blocking read waited for comes without it (`resume_point` reads it)."""
        await self.ensure_groups()
        with redis_errors("claiming tasks"):
            reply = await self.batcher.call(
                self._claim,
                [*self.keys.lanes, self.keys.ckpt],
                [WORKERS_GROUP, self.consumer, count],
            )
            if not reply and block_ms > 0:
                # One blocking read on every lane: whichever gets work first wakes us.
                lanes = self.keys.lanes
                block = min(block_ms, self.log._max_block_ms)
                raw = await command(self.redis, 
                    "XREADGROUP", "GROUP", WORKERS_GROUP, self.consumer, "COUNT", count,
                    "BLOCK", block, "STREAMS", *lanes, *([">"] * len(lanes)),
                )  # fmt: skip
                reply = [[lanes.index(name.decode()), entries, None] for name, entries in raw or []]
        leases = []
        for lane, entries, resumes in reply:
            for i, (entry_id, fields) in enumerate(entries):
                # b"": read, and none; None: not read.
                resume = None if resumes is None else (resumes[i] or b"")
                lease = await self._lease(lane, entry_id, fields, deliveries=1, resume=resume)
                if lease is not None:
                    leases.append(lease)
        return leases

    async def claim_around(
        self,
        count: int,
        busy_sites: Collection[str],
        *,
        budget: int = DEFAULT_CLAIM_AROUND_BUDGET,
        look_ahead: int = DEFAULT_CLAIM_AROUND_LOOK_AHEAD,
    ) -> Claimed:
        """New tasks as `claim` takes them, none of whose site is in ``busy_sites``: an
        entry of a busy site met on the way is moved to the end of its lane (never leased,
        nothing logged), up to ``budget`` of them, and only on the way to another site's
        task (within ``look_ahead`` entries past them, read from where this queue's last
        call for the same sites stopped). Never blocks: with entries moved, a blocking read
        would hand out the very entries just moved."""
        await self.ensure_groups()
        busy = frozenset(busy_sites)
        lanes = self.keys.lanes
        looked_for, cursors = self._looked
        if looked_for != busy or len(cursors) != len(lanes):
            cursors = [""] * len(lanes)
        with redis_errors("claiming tasks"):
            moved, reply, after = await self._claim_around(
                keys=[*lanes, self.keys.ckpt],
                args=[WORKERS_GROUP, self.consumer, count, budget, look_ahead, *cursors,
                      *sorted(busy)],
            )  # fmt: skip
        self._looked = (busy, [c.decode() if isinstance(c, bytes) else str(c) for c in after])
        leases = []
        for lane, entries, resumes in reply:
            for i, (entry_id, fields) in enumerate(entries):
                lease = await self._lease(
                    lane, entry_id, fields, deliveries=1, resume=resumes[i] or b""
                )
                if lease is not None:
                    leases.append(lease)
        return Claimed(leases, int(moved))

    async def pending(self, count: int = 1000) -> list[Lease]:
        """This consumer's own leases (its PEL), with their tasks, without re-delivering them.

        The periodic re-read picks up entries whose XREADGROUP reply was lost on the way.
        """
        await self.ensure_groups()
        with redis_errors("reading pending tasks"):
            reply = await self._pending(
                keys=list(self.keys.lanes), args=[WORKERS_GROUP, self.consumer, count, 0]
            )
        return await self._leases(pending_entries(reply), reclaimed=False)

    async def take_back(
        self, count: int, after: tuple[str, ...] | None = None
    ) -> tuple[list[Lease], tuple[str, ...] | None]:
        """Re-deliver this consumer's own pending entries, each with its task's resume point
        (`Lease.resume`): up to ``count`` a lane, after the entry ids ``after`` (one a lane;
        None: from the start).

        For a restarted worker resuming its PEL: that counts as a delivery, so a task that
        keeps killing its worker reaches the recovery limit. Returns the leases and where
        to go on from, or None once every lane is read to its end.
        """
        await self.ensure_groups()
        return await self._take_back.chunk(count, after)

    async def take_back_all(self, chunk: int = DEFAULT_TAKE_BACK_CHUNK) -> list[Lease]:
        """`take_back` the whole pending list, ``chunk`` entries a lane at a time, pipelined
        (`TakeBack.all`)."""
        await self.ensure_groups()
        # Before anything of this process runs, so every slot held under its name is one
        # its dead predecessor took: otherwise the tasks taken back would wait for them
        # to expire.
        await self.release_slots_of(self.consumer)
        return await self._take_back.all(chunk)

    async def release_slots_of(self, holder: str) -> None:
        """Free every politeness slot ``holder`` holds (a worker killed mid-request).

        Only for a holder known to run nothing: its in-flight requests would no longer
        count against their host's limit.
        """
        hosts = (await self._held_hosts([holder])).get(holder, [])
        if not hosts:
            return
        keys = [self.keys.slots_held(holder), *(self.keys.host_slots(h) for h in hosts)]
        with redis_errors("freeing a dead worker's host slots"):
            await self._release_held(keys=keys, args=hosts)

    async def _held_hosts(self, holders: Sequence[str]) -> dict[str, list[str]]:
        """The hosts each of ``holders`` holds politeness slots on, in one round trip."""
        if not holders:
            return {}
        with redis_errors("reading held host slots"):
            async with self.redis.pipeline(transaction=False) as pipe:
                for holder in holders:
                    pipe.hvals(self.keys.slots_held(holder))
                replies: list[list[bytes]] = await pipe.execute()
        return {
            holder: sorted({host.decode() for host in hosts})
            for holder, hosts in zip(holders, replies, strict=True)
            if hosts
        }

    async def resume_point(self, lease: Lease) -> tuple[str, AnyEvent | None] | None:
        """The last checkpoint of the lease's task: its stream ID and the event (None where
        it was trimmed from Redis: the archive has it); None if the task has none."""
        value = lease.resume
        task_id = lease.task.task_id
        if value is None:
            return (await self.last_checkpoints([task_id])).get(task_id)
        if not value:
            return None
        stream_id, _, payload = value.partition(b"|")
        if not payload:  # a bare pointer (see `last_checkpoints`)
            return (await self.last_checkpoints([task_id])).get(task_id)
        return stream_id.decode(), decode(payload)

    async def expired(
        self,
        count: int = DEFAULT_CLAIM_COUNT,
        *,
        min_idle_ms: int | None = None,
        horizon_ms: int = 0,
    ) -> tuple[list[Lease], float | None]:
        """Leases of any consumer that the server has seen idle for at least the lease
        time, read without taking them over: what ``recover`` may move. Each counts the
        delivery a takeover adds.

        Also the seconds until the next lease expires, if one does within ``horizon_ms``
        (0: more have expired than ``count``), else None.
        """
        await self.ensure_groups()
        idle = self.lease_ms if min_idle_ms is None else min_idle_ms
        with redis_errors("reading expired leases"):
            reply = expired_reply(
                await self._expired(
                    keys=list(self.keys.lanes), args=[WORKERS_GROUP, count, idle, horizon_ms]
                )
            )
        next_s = None if reply.soonest_ms < 0 else reply.soonest_ms / 1000
        return await self._with_fetches_started(
            await self._leases(reply.entries, reclaimed=True)
        ), next_s

    async def _with_fetches_started(self, leases: list[Lease]) -> list[Lease]:
        """Expired ``leases``, each saying whether its owner took a politeness slot for its
        task after the task's last write (`JobKeys.fetches_started`), in one round trip.

        Read before the move, not in it: an owner that wakes up in between and takes a slot
        renews its lease before its request (`Worker.hold_lease`), and a renewed lease is
        not moved; one moved first is lost to it before the request goes."""
        by_owner: dict[str, list[Lease]] = defaultdict(list)
        for lease in leases:
            if lease.previous_owner:
                by_owner[lease.previous_owner].append(lease)
        if not by_owner:
            return leases
        with redis_errors("reading the fetches an expired lease started"):
            async with self.redis.pipeline(transaction=False) as pipe:
                for owner, held in by_owner.items():
                    pipe.hmget(self.keys.fetches_started(owner), [x.task.task_id for x in held])
                replies: list[list[bytes | None]] = await pipe.execute()
        none = {
            lease.held_as
            for held, marks in zip(by_owner.values(), replies, strict=True)
            for lease, mark in zip(held, marks, strict=True)
            if mark is None
        }
        return [
            msgspec.structs.replace(lease, unrecorded_fetch=False)
            if lease.held_as in none
            else lease
            for lease in leases
        ]

    async def recover(
        self,
        moves: Sequence[tuple[Lease, TaskReclaimed | TaskAborted, Task | None]],
        *,
        min_idle_ms: int | None = None,
    ) -> list[bool]:
        """Move expired leases (from ``expired``) in one round trip: each entry acked and
        deleted with its event, and its task (with the event ``TaskReclaimed``) put in the
        recovery lane, or with ``None`` (the event ``TaskAborted``) ended there.

        Per lease, whether it was moved: not if its owner renewed it or another worker
        moved it since it was read. Unlike the former ``reclaim`` + ``requeue``, the entry
        never sits in this consumer's pending list, where a stall of ours would hold it up.
        """
        if not moves:
            return []
        started = time.perf_counter()
        idle = self.lease_ms if min_idle_ms is None else min_idle_ms
        dedup, ttl = self.log.dedup_args()
        lanes = self.keys.lanes
        keys = [self.keys.events, *dedup, self.keys.ckpt, *lanes]
        args: list[str | bytes | int] = [ttl, WORKERS_GROUP, idle, len(lanes), len(moves)]
        for lease, event, task in moves:
            if event.task_id != lease.task.task_id or (task and task.task_id != event.task_id):
                raise ValueError(f"event and task must be about task {lease.task.task_id}")
            if isinstance(event, TaskReclaimed) != (task is not None):
                raise ValueError("a reclaimed task is requeued, an aborted one is not")
            payload = task_encoder.encode(task) if task is not None else b""
            stamped = of_run(event, lease.task.run)
            eid, encoded = (event.event_id, encode(stamped)) if self.record_events else ("", b"")
            args += (
                lease.lane, lease.entry_id, lease.previous_owner or "", lease.deliveries - 1,
                lease.task.task_id, payload, eid, encoded,
            )  # fmt: skip
        owners = sorted({lease.previous_owner for lease, _, _ in moves if lease.previous_owner})
        for owner, hosts in (await self._held_hosts(owners)).items():
            keys += [self.keys.slots_held(owner), *(self.keys.host_slots(h) for h in hosts)]
            args += [owner, len(hosts), *hosts]
        with redis_errors("recovering expired tasks"):
            reply = await self._recover(keys=keys, args=args)
        moved = [bool(flag) for flag in reply]
        if self.observer is not None:
            events = [event for (_, event, _), ok in zip(moves, moved, strict=True) if ok]
            self.observer.recovered(events, time.perf_counter() - started)
        return moved

    async def renew(self, leases: Sequence[Lease]) -> set[str]:
        """Reset the lease time of ``leases``; returns the entry ids this consumer lost."""
        if self.observer is None:
            return await self._renewed(leases)
        started = time.perf_counter()
        lost = await self._renewed(leases)
        self.observer.renewed(leases, lost, time.perf_counter() - started)
        return lost

    async def renew_held(self, leases: Sequence[Lease]) -> set[tuple[int, str]]:
        """`renew` ``leases``; returns those this consumer lost, by `Lease.held_as`. An
        entry id may name an entry of another lane too: a lease sharing a lost id with
        another of ``leases`` is renewed again alone, to know which of them was lost."""
        lost = await self.renew(leases)
        named = [lease for lease in leases if lease.entry_id in lost]
        if len({lease.entry_id for lease in named}) != len(named):
            named = [lease for lease in named if await self.renew([lease])]
        return {lease.held_as for lease in named}

    async def _renewed(self, leases: Sequence[Lease]) -> set[str]:
        by_lane: dict[int, list[str]] = defaultdict(list)
        for lease in leases:
            by_lane[lease.lane].append(lease.entry_id)
        if not by_lane:
            return set()
        calls = [
            (self._renew, [self.keys.tasks(lane)], [WORKERS_GROUP, self.consumer, *ids])
            for lane, ids in by_lane.items()
        ]
        with redis_errors("renewing leases"):
            replies = await script_pipeline(self.redis, calls)
        return {entry.decode() for reply in replies for entry in reply}

    async def renew_idle(self, min_idle_ms: int, count: int = DEFAULT_RENEW_IDLE_COUNT) -> int:
        """Renew every lease of this consumer idle for at least ``min_idle_ms``; how many.

        For leases held but not worked on yet (a restart's backlog), in one pass over the
        pending list rather than a check per entry (`renew`): no delivery is counted, and
        no other consumer's entry is touched. ``count`` entries a lane a call.
        """
        starts = {lane: "-" for lane in range(len(self.keys.lanes))}
        renewed = 0
        while starts:
            lanes = list(starts)
            with redis_errors("renewing idle leases"):
                reply = await self._renew_idle(
                    keys=[self.keys.lanes[lane] for lane in lanes],
                    args=[WORKERS_GROUP, self.consumer, min_idle_ms, count, *starts.values()],
                )
            for lane, (done, listed, last) in zip(lanes, reply, strict=True):
                renewed += done
                if listed < count:
                    del starts[lane]  # read to its end
                else:
                    starts[lane] = f"({last.decode()}"
        return renewed

    async def checkpoint(
        self, lease: Lease, event: CheckpointSaved, *, before: Sequence[AnyEvent] = ()
    ) -> str | None:
        """Append ``before`` and the checkpoint, point ``ckpt`` at it, renew the lease.

        Returns the checkpoint's stream ID (None for a repeated call that already went
        through); raises ``LeaseLost``, having written nothing, if the lease was taken.
        """
        return await self._settle_call(lease, "ckpt", [*before, event])

    async def note(
        self,
        lease: Lease,
        events: Sequence[TaskEvent],
        *,
        action: tuple[str, ActionState] | None = None,
    ) -> str | None:
        """Append events about the leased task and renew the lease; fenced.

        ``action`` = (action id, "intended" | "done") also sets that ``ctx.once`` marker.
        """
        return await self._settle_call(lease, "note", events, action=action)

    async def finish(
        self, lease: Lease, event: TerminalEvent, *, before: Sequence[AnyEvent] = ()
    ) -> str | None:
        """Append ``before`` and the terminal event and ack the task, atomically; fenced."""
        return await self._settle_call(lease, "finish", [*before, event])

    async def requeue(
        self,
        lease: Lease,
        events: Sequence[AnyEvent],
        task: Task,
        lane: int,
    ) -> str | None:
        """Append the events, ack this entry and put ``task`` back in ``lane``; fenced."""
        return await self._settle_call(lease, "requeue", events, task=task, lane=lane)

    async def delay(
        self, lease: Lease, events: Sequence[AnyEvent], task: Task, delay_s: float
    ) -> str | None:
        """Append the events, ack this entry, and hold ``task`` for ``delay_s`` (server time)."""
        member = delayed_member(lane_for(task), task_encoder.encode(task))
        return await self._settle_call(
            lease, "delay", events, task=task, member=member, delay_ms=int(delay_s * 1000)
        )

    async def park(self, lease: Lease, events: Sequence[AnyEvent] = ()) -> bool:
        """Ack this entry and park the task until its site or itself is resumed.

        False (nothing written) if neither is paused any more: the caller goes on with it.
        """
        task = lease.task
        member = parked_member(task.site, task.task_id, lane_for(task), task_encoder.encode(task))
        flags = (site_pause_flag(task.site), task_pause_flag(task.task_id))
        try:
            await self._settle_call(lease, "park", events, member=member, action=flags)
        except _Resumed:
            return False
        return True

    async def pause_for_a_person(self, lease: Lease, action_id: str, event: TaskPaused) -> bool:
        """Pause and park the leased task until a person decides about its uncertain action
        ``action_id`` (``crawlog resolve``): ``left`` then counts it as waiting for them.

        False if it was decided meanwhile (not parked: the lease is still the caller's).
        """
        task = lease.task
        with redis_errors("pausing a task for a person"):
            # First: a worker killed before the park leaves a task that is not parked, and
            # so not counted as waiting, and whose next worker pauses it again.
            awaiting = awaiting_value(task.site, action_id)
            await self.redis.hset(self.keys.awaiting, task.task_id, awaiting)
        await self.control(event, task_site=task.site)
        return await self.park(lease)

    async def left(self) -> tuple[int, list[str]]:
        """Tasks not finished yet (as `remaining`), and the ids of those of them parked for
        a person to decide about an uncertain action: no worker can move them on."""
        with redis_errors("counting remaining tasks"):
            reply = await self._left(
                keys=[self.keys.delayed, self.keys.parked, self.keys.awaiting, *self.keys.lanes]
            )
        return int(reply[0]), sorted(task_id.decode() for task_id in reply[1:])

    async def promote(self, limit: int = PROMOTE_BATCH) -> int:
        """Move delayed tasks that are due (server time) back to their lanes; how many."""
        with redis_errors("promoting delayed tasks"):
            return int(
                await self._promote(keys=[self.keys.delayed, *self.keys.lanes], args=[limit])
            )

    async def dead_letter(
        self, lane: int, entry_id: str, reason: str, fields: dict[bytes, bytes], deliveries: int
    ) -> str:
        """Move a task entry this consumer holds to the dead stream, and ack it."""
        poison = PoisonEntry(self.keys.tasks(lane), entry_id, reason, fields)
        return await self.log.dead_letter(poison, group=WORKERS_GROUP, deliveries=deliveries)

    async def remaining(self) -> int:
        """Tasks not finished yet: in a lane, leased, delayed for a retry, or parked.

        One MULTI: a delayed task moves to its lane between two separate reads, and would
        be counted in neither.
        """
        with redis_errors("counting remaining tasks"):
            async with self.redis.pipeline(transaction=True) as pipe:
                for lane in self.keys.lanes:
                    pipe.xlen(lane)
                pipe.zcard(self.keys.delayed)
                pipe.zcard(self.keys.parked)
                counts = await pipe.execute()
        return sum(counts)

    async def leases_of(self, consumer: str) -> list[tuple[int, str]]:
        """(lane, entry id) of every lease ``consumer`` holds, without touching them."""
        await self.ensure_groups()
        held = []
        with redis_errors("reading leases"):
            for lane, key in enumerate(self.keys.lanes):
                reply = await command(
                    self.redis, "XPENDING", key, WORKERS_GROUP, "-", "+", 10_000, consumer
                )
                held += [(lane, entry[0].decode()) for entry in reply]
        return held

    async def last_checkpoints(
        self, task_ids: Sequence[str]
    ) -> dict[str, tuple[str, AnyEvent | None]]:
        """Each task's last checkpoint: its stream ID and the event.

        The event is None where it was trimmed from Redis (the archive has it).
        """
        if not task_ids:
            return {}
        with redis_errors("reading checkpoints"):
            values = await self._checkpoint_values(keys=[self.keys.ckpt], args=[_joined(task_ids)])
        found: dict[str, tuple[str, AnyEvent | None]] = {}
        bare: list[str] = []
        for task_id, value in zip(task_ids, values, strict=True):
            if not isinstance(value, bytes):
                continue
            stream_id, _, payload = value.partition(b"|")
            if payload:
                found[task_id] = (stream_id.decode(), decode(payload))
            else:
                bare.append(task_id)
        if bare:
            # A pointer without its event (set by a retry or ``replay --rebuild-index``):
            # the event is read from the stream.
            with redis_errors("reading checkpoints"):
                reply = await self._checkpoints(
                    keys=[self.keys.ckpt, self.keys.events], args=[_joined(bare)]
                )
            for task_id, (stream_id, payload) in zip(bare, reply, strict=True):
                if stream_id:
                    found[task_id] = (stream_id.decode(), decode(payload) if payload else None)
        return found

    async def keep_evidence(self, task_id: str, evidence: Evidence, ttl_ms: int) -> None:
        """Keep the response a recovered task got, before its spider sees it, for ``ttl_ms``.

        A task is aborted by a worker that never saw its page: the ones that fetched it
        died with it. What the last of them kept here is what its `TaskAborted` carries
        (`kept_evidence`); it expires by itself, so nothing stays past the task's end.
        """
        with redis_errors("keeping a task's last response"):
            await self.redis.set(
                self.keys.evidence(task_id), _evidence_encoder.encode(evidence), px=ttl_ms
            )

    async def kept_evidence(self, task_ids: Sequence[str]) -> dict[str, Evidence]:
        """The response kept by `keep_evidence` of each task that has one, in one round trip."""
        if not task_ids:
            return {}
        with redis_errors("reading tasks' last responses"):
            values = await self.redis.mget([self.keys.evidence(t) for t in task_ids])
        found: dict[str, Evidence] = {}
        for task_id, value in zip(task_ids, values, strict=True):
            if isinstance(value, bytes):
                try:
                    found[task_id] = _evidence_decoder.decode(value)
                except msgspec.DecodeError:
                    continue  # not ours to fail an abort over: it goes without
        return found

    async def checkpoint_ids(self, task_ids: Sequence[str]) -> dict[str, str]:
        """Stream IDs of the last checkpoint of each task that has one, in one round trip."""
        if not task_ids:
            return {}
        with redis_errors("reading checkpoint pointers"):
            values = await self.redis.hmget(self.keys.ckpt, list(task_ids))
        return {
            task_id: value.partition(b"|")[0].decode()
            for task_id, value in zip(task_ids, values, strict=True)
            if isinstance(value, bytes)
        }

    async def _settle_call(
        self,
        lease: Lease,
        mode: SettleMode,
        events: Sequence[Event],
        *,
        task: Task | None = None,
        lane: int = LANE_NORMAL,
        member: bytes = b"",
        delay_ms: int = 0,
        action: tuple[str, str] | None = None,
    ) -> str | None:
        # The observer is told of the step as it was asked for, whatever is written below.
        observer = self.observer
        started = 0.0
        if observer is not None:
            observer.settling(mode, lease)
            started = time.perf_counter()
        task_id = lease.task.task_id
        written, script_mode = events, mode
        if not self.record_events:
            # Nothing appended, so no checkpoint to point at: a checkpoint only renews.
            written, script_mode = (), "note" if mode == "ckpt" else mode
        for event in written:
            if isinstance(event, TaskEvent) and event.task_id != task_id:
                raise ValueError(f"event is about task {event.task_id}, lease is {task_id}")
        if task is not None and task.task_id != task_id:
            raise ValueError("a task keeps its task id")
        ttl, keys = self._settle_keys(lease.lane, lane)
        payload = member or (task_encoder.encode(task) if task is not None else b"")
        if mode == "park" and action is not None:
            action_field, action_value = action
        elif action is not None:
            action_field, action_value = action_field_of(task_id, action[0]), action[1]
        else:
            action_field, action_value = "", ""
        args: list[str | bytes | int] = [
            ttl, self.epoch, "", WORKERS_GROUP, self.consumer, lease.entry_id, script_mode,
            task_id, payload, delay_ms, action_field, action_value,
        ]  # fmt: skip
        run = lease.task.run
        for e in written:
            args += (e.event_id, encode(of_run(e, run)))
        journalled = await self._journalled(lease, mode, lane, args)
        if journalled is not None and self._down.is_set():
            return None  # the flush sends it once the store is back (`store_back`)
        with redis_errors("writing a task's progress"):
            if journalled is None or mode not in OFFLINE_MODES:
                reply = await self._send_settle(mode, keys, args)
            elif (
                answered := await self._unless_down(lambda: self._send_settle(mode, keys, args))
            ) is None:
                return None  # the store went down meanwhile: left to the flush
            else:
                reply = answered
            status, value = settle_reply(reply)
        if status == "stale":
            status, value = await self._settle_after_stale(mode, keys, args, value)
        if journalled is not None:
            await self._journal_ack(journalled, status, value)
        if status == "lost":
            raise LeaseLost(lease.entry_id, self.consumer, value.decode() if value else None)
        if status == "resumed":
            raise _Resumed
        if observer is not None:
            observer.settled(mode, lease, events, time.perf_counter() - started)
        if status == "dup" or not value:
            return None
        return value.decode()

    async def _settle_after_stale(
        self, mode: SettleMode, keys: list[str], args: list[str | bytes | int], value: bytes | None
    ) -> SettleReply:
        """A write refused as stale: sent again in the epoch a Sentinel promotion raised
        (once this queue has followed it, `follow_promotion`), else `StoreLost`: left
        unacknowledged, the flush after the restore gives it back, or not."""
        held = int(args[1])
        if await self.follow_promotion():
            args[1] = self.epoch
            with redis_errors("writing a task's progress"):
                reply = settle_reply(await self._send_settle(mode, keys, args))
            if reply.status != "stale":
                return reply
            value = reply.value
        raise StoreLost(self.keys.job, _stale_why(held, value))

    async def follow_promotion(self) -> bool:
        """Follow a Sentinel promotion of the store (`eventlog._failover`): the job's epoch
        raised once (by whoever notices first), then, before this queue takes the new
        epoch, the writes its journal holds that the old primary acknowledged after the
        projector's position at the raise given back (`flush_journal`'s way: found in the
        log, sent again fenced by their lease, or orphaned). False if the epoch was
        raised by something else than promotions (a restore: what this queue holds is
        void); True otherwise, or with no epoch to check."""
        async with self._following:
            facts = await follow_primary(self.redis, self.keys)
            if not self.epoch or facts.epoch == self.epoch:
                return True
            if not may_follow(self.epoch, facts.epoch, facts.failovers):
                return False
            chain = failover_chain(facts.epoch, facts.failovers)
            assert chain is not None, "may_follow says promotions raised it"
            if self.journal is not None:
                lost = self._lost_in_failover(chain, facts.epoch)
                flushed = await self._give_back(lost, facts.epoch, chain[0])
                if flushed.total:
                    log.info(
                        "%s followed a promotion (epoch %d -> %d) and gave back its "
                        "journalled writes: %s",
                        self.consumer, self.epoch, facts.epoch, msgspec.structs.asdict(flushed),
                    )  # fmt: skip
            self.epoch = facts.epoch
            return True

    def _lost_in_failover(self, chain: tuple[int, str], epoch: int) -> list[JournalSettle]:
        """The journalled writes the primary before the promotions of ``chain``
        (`failover_chain`) acknowledged after the position at the first of them: the
        promoted one may lack them. A request's start is left out: the page's write that
        followed clears it, and a start given back after that write would stay."""
        assert self.journal is not None
        follows_from, position = chain
        return [
            record
            for record in self.journal.lost_with_store(position or START, epoch)
            if record.epoch >= follows_from and record.mode != "started"
        ]

    async def _journalled(
        self, lease: Lease, mode: SettleMode, lane: int, args: list[str | bytes | int]
    ) -> JournalSettle | None:
        """Journal a settle call before it is sent (a write the worker dies with, or the
        store loses, is in it), with the links its task's pages found since its last write;
        None without a journal."""
        if self.journal is None or not self.record_events:
            return None
        if self._down.is_set() and mode not in OFFLINE_MODES:
            await self._up.wait()  # sent after the flush, in the journal's order
        record = self.journal.settle(
            lease.lane,
            lane,
            args[_JOURNALLED_ARGS:],
            epoch=self.epoch,
            enqueued=self._enqueued.pop(lease.task.task_id, None),
        )
        await self.journal.sync()
        return record

    async def _send_settle(
        self, mode: SettleMode, keys: list[str], args: list[str | bytes | int]
    ) -> object:
        if self.durability == "replica" and mode in CONFIRMED_MODES:
            return await run_confirmed(self.redis, self._settle, keys, args)
        return await self.batcher.call(self._settle, keys, args)

    async def _unless_down(self, call: Callable[[], Awaitable[Any]]) -> Any | None:
        """The reply of a script call, or None if the store was taken for down before it
        came (at once if it is down): the write stays in the journal, for the flush (which
        looks for a settle in the log first: the server may run it once it answers
        again; an enqueue is deduplicated by ``seen``)."""
        if self._down.is_set():
            return None
        replies: list[object] = []
        with self.cancelled_if_down():
            replies.append(await call())
        return replies[0] if replies else None

    def _settle_keys(self, lease_lane: int, lane: int) -> tuple[int, list[str]]:
        """The dedup ttl and the keys of a settle call on an entry of ``lease_lane`` that
        may requeue to ``lane``."""
        dedup, ttl = self.log.dedup_args()
        if (tail := self._settle_tails.get(lane)) is None:
            tail = self._settle_tails[lane] = (
                self.keys.ckpt,
                self.keys.tasks(lane),
                self.keys.delayed,
                self.keys.parked,
                self.keys.actions,
                self.keys.control,
                self.keys.fetches_started(self.consumer),
                self.keys.identity,
                self.keys.restored,
                self.keys.primary,
            )
        return ttl, [self.keys.tasks(lease_lane), self.keys.events, *dedup, *tail]

    # --- the journal -------------------------------------------------------------------

    async def _journal_ack(self, record: JournalSettle, status: str, value: bytes | None) -> None:
        assert self.journal is not None
        epoch = self.epoch
        if status == "ok":
            self.journal.ack(record.seq, "applied", value.decode() if value else "", epoch=epoch)
        elif status == "dup":
            # Written by an earlier try, at an ID the reply does not say: the log's end now
            # is after it.
            self.journal.ack(record.seq, "dup", await self._log_end(), epoch=epoch)
        else:
            self.journal.ack(record.seq, "lost" if status == "lost" else "resumed", epoch=epoch)
        if time.monotonic() - self._journal_checked >= JOURNAL_DROP_EVERY_S:
            try:
                await self.drop_committed_journal()
            except ServerError:
                # The write went through: its caller must not hear otherwise. The segments
                # wait for the next look.
                self._journal_checked = time.monotonic()

    async def drop_committed_journal(self) -> int:
        """Delete the journal's segments the projector has committed (by the position it
        publishes, `read_projector_position`); how many."""
        if self.journal is None:
            return 0
        self._journal_checked = time.monotonic()
        with redis_errors("reading the projector position"):
            value = await self.redis.get(self.keys.projector)
        return self.journal.drop_committed(value.decode() if isinstance(value, bytes) else None)

    async def _log_end(self) -> str:
        """The ID of the log's last entry ("0-0" if it has none)."""
        with redis_errors("reading the end of the log"):
            last = await command(self.redis, "XREVRANGE", self.keys.events, "+", "-", "COUNT", 1)
        return bytes(last[0][0]).decode() if last else "0-0"

    @property
    def is_down(self) -> bool:
        """The store is taken for down (`store_down`): writes go to the journal only."""
        return self._down.is_set()

    def store_down(self) -> None:
        """Take the store for down (it does not answer: stalled, unreachable; or it refuses
        writes, out of memory: `eventlog._probe`): from now on,
        until `store_back`, a checkpoint, end, requeue or delay is journalled and not sent
        (its call returns None at once, as for a repeat), and one being sent is left to the
        flush. A note or a park waits for `store_back`. Only with a journal."""
        if self.journal is None:
            raise ConfigError("a queue without a journal cannot go on without its store")
        if not self._down.is_set():
            self._down.set()
            self._up = anyio.Event()
            for scope in list(self._on_down):
                scope.cancel()

    @contextmanager
    def cancelled_if_down(self) -> Iterator[anyio.CancelScope]:
        """A cancel scope that `store_down` cancels (at once if the store is down already):
        a store call in it is given up then. Per call, where a task group racing the call
        against `wait_down` cost two tasks and a cancellation on every page."""
        scope = anyio.CancelScope()
        if self._down.is_set():
            scope.cancel()
        self._on_down.add(scope)
        try:
            with scope:
                yield scope
        finally:
            self._on_down.discard(scope)

    async def mark_fetch_started(self, lease: Lease) -> None:
        """Journal, before its request goes on a slot of the worker's own while the store is
        down (`crawler._offline`), that the lease's task may have a request on its way: the
        flush (`store_back`, or a restart's) puts it in the worker's fetches started
        (`JobKeys.fetches_started`, as a slot taken in the store does) ahead of the page's
        write, which clears it; or, the lease taken over meanwhile, records it as
        `TaskOrphaned`, counted as a retake that may have sent its request."""
        if self.journal is None:
            return
        args: list[str | bytes | int] = [
            WORKERS_GROUP, self.consumer, lease.entry_id, "started", lease.task.task_id, b"",
            0, "", "",
        ]  # fmt: skip
        self.journal.settle(lease.lane, lease.lane, args, epoch=self.epoch)
        await self.journal.sync()

    async def wait_down(self) -> None:
        """Until the store is taken for down (`store_down`)."""
        await self._down.wait()

    async def wait_up(self) -> None:
        """Until the store is back and the journal flushed (at once if it was not down)."""
        await self._up.wait()

    async def store_back(self) -> JournalFlush:
        """The store answers again: flush what the journal holds unacknowledged, in order
        and fenced per lease (`flush_journal`), until nothing is left, then send again."""
        flushed = JournalFlush()
        assert self.journal is not None
        while True:
            flushed += await self.flush_journal()
            # No await between this look and the switch: a write journalled meanwhile
            # would wait for a next outage's flush.
            if not self.journal.unsettled():
                break
        self._down = anyio.Event()
        self._up.set()
        return flushed

    async def flush_journal(self) -> JournalFlush:
        """Send what this consumer's journal holds that the store never acknowledged, in the
        order it was written, before the consumer takes tasks (a restarted worker; a crawl
        after a restore).

        Each write is looked for in the log first, by its last event's id, from where the
        log stood when it was journalled (`JournalSettle.after`): one found there went
        through (its reply was lost) and is not sent again, whatever the dedup window.
        One not found is sent as it was, fenced as it was: applied if its lease is still
        this consumer's, recorded once as `TaskOrphaned` (never applied) if another
        worker took the task over meanwhile. Then the segments the projector has
        committed are deleted (`drop_committed_journal`).

        After a ``crawlog restore``, the writes of the epoch before it that its store
        acknowledged after the restored position are given back too (`lost_with_store`):
        each is adopted by the entry the restore added for its task (`_adopt`), if nobody
        claimed that entry since; otherwise it is orphaned as above.
        """
        journal = self.journal
        if journal is None:
            return JournalFlush()
        # A promotion nobody followed yet is followed first: ``SETTLE`` refuses a write
        # on the new primary until then.
        failovers = (await follow_primary(self.redis, self.keys)).failovers
        epoch, restored_at = await self._restore_facts()
        writes = {record.seq: record for record in journal.unsettled()}
        if restored_at is not None:
            for record in journal.lost_with_store(restored_at, epoch):
                writes.setdefault(record.seq, record)
        chain = failover_chain(epoch, failovers)
        follows_from = epoch if chain is None else chain[0]
        if chain is not None:
            for record in self._lost_in_failover(chain, epoch):
                writes.setdefault(record.seq, record)
        return await self._give_back([writes[seq] for seq in sorted(writes)], epoch, follows_from)

    async def _give_back(
        self, unsettled: list[JournalSettle], epoch: int, follows_from: int
    ) -> JournalFlush:
        """`flush_journal`'s writes, sent or accounted for in order, at ``epoch``: one of
        an epoch from ``follows_from`` on (a promotion's, `follow_promotion`) is sent again
        in ``epoch``, fenced by its own lease; one of an older epoch is adopted by the
        entry a restore added."""
        journal = self.journal
        assert journal is not None
        end = await self._log_end()
        if not unsettled:
            journal.advance(end)
            await self.drop_committed_journal()
            return JournalFlush()
        markers = {record.event_ids[-1] for record in unsettled if record.event_ids}
        # A flush cut short may have recorded an orphan already: it is not recorded twice.
        orphans = {orphan_event_id(marker) for marker in markers}
        start = min((record.after for record in unsettled), key=stream_id_key)
        found = await self._find_in_log(markers | orphans, start)
        trimmed = await self._trimmed_before()
        unsure = 0
        counts = {"present": 0, "applied": 0, "orphaned": 0, "skipped": 0}
        for record in unsettled:
            marker = record.event_ids[-1] if record.event_ids else None
            for enqueued in record.enqueued:
                # Before its write, as the worker did: a store lost since, or down when
                # the page was done, may not have them (a URL seen already writes nothing).
                await self._enqueue_again(enqueued)
            if marker is not None and marker in found:
                journal.ack(record.seq, "present", found[marker], epoch=epoch)
                counts["present"] += 1
                continue
            if marker is not None and orphan_event_id(marker) in found:
                journal.ack(record.seq, "orphaned", found[orphan_event_id(marker)], epoch=epoch)
                counts["orphaned"] += 1
                continue
            if follows_from <= record.epoch < epoch:
                record = msgspec.structs.replace(record, epoch=epoch)
            elif 0 < record.epoch < epoch:
                counts[await self._adopt(record, epoch, marker)] += 1
                continue
            if record.event_ids and trimmed > stream_id_key(record.after):
                unsure += 1  # (a write of no events, a request's start, appends nothing)
            counts[await self._resend(record, epoch, marker, end)] += 1
        journal.advance(await self._log_end())
        await self.drop_committed_journal()
        return JournalFlush(**counts, unsure=unsure)

    async def _restore_facts(self) -> tuple[int, str | None]:
        """The job's epoch in the store now (0: none), and the committed position the last
        restore went on from, if the store is of that restore's epoch."""
        with redis_errors("reading the job's epoch"):
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.hget(self.keys.identity, IDENTITY_EPOCH)
                pipe.hmget(self.keys.restored, [RESTORED_EPOCH, RESTORED_POSITION])
                epoch, (restored_epoch, position) = await pipe.execute()
        now = int(epoch) if epoch else 0
        if now and restored_epoch and int(restored_epoch) == now and position:
            return now, bytes(position).decode()
        return now, None

    async def _trimmed_before(self) -> tuple[int, int]:
        """Entries were removed (trimmed) before the first one the log holds: a write
        journalled before that one may have been among them."""
        info = await self.log.stream_info()
        if info is not None and info.entries_added > info.length:
            return stream_id_key(info.first_id or info.last_id)
        return (0, 0)

    async def _resend(
        self, record: JournalSettle, epoch: int, marker: str | None, end: str
    ) -> Literal["applied", "present", "orphaned", "skipped"]:
        """Send a journalled write of this epoch again, fenced by its own lease."""
        assert self.journal is not None
        ttl, keys = self._settle_keys(record.lane, record.target_lane)
        with redis_errors("flushing the worker's journal"):
            reply = await self._settle(keys=keys, args=[ttl, record.epoch, "", *record.args])
        status, value = settle_reply(reply)
        if status == "stale":
            raise StoreLost(self.keys.job, _stale_why(record.epoch, value))
        if status == "ok":
            self.journal.ack(record.seq, "applied", value.decode() if value else "", epoch=epoch)
            return "applied"
        if (
            status == "lost"
            and marker is not None
            and (late := await self._find_in_log({marker}, record.after))
        ):
            # Sent before, its reply lost (a store taken for down meanwhile), and run
            # by the server after the look above: it went through, once.
            self.journal.ack(record.seq, "present", late[marker], epoch=epoch)
            return "present"
        if status == "lost":
            stream_id = await self._record_orphan(record, value, marker)
            self.journal.ack(record.seq, "orphaned", stream_id, epoch=epoch)
            return "orphaned"
        self.journal.ack(record.seq, "dup" if status == "dup" else "resumed", end, epoch=epoch)
        return "skipped"

    async def _adopt(
        self, record: JournalSettle, epoch: int, marker: str | None
    ) -> Literal["applied", "orphaned", "skipped"]:
        """Give back a write of before a restore (the flush has enqueued its links again):
        applied to the entry the restore added for its task, if nobody claimed that entry
        since (``SETTLE``, fenced on that); else recorded once as orphaned. A task the
        restore put in no lane (it had ended, or waits parked or delayed) is skipped."""
        assert self.journal is not None
        with redis_errors("reading a restored task's entry"):
            mapping = await self.redis.hget(self.keys.restored, record.task_id)
        # A request's start of before the loss: the restore's reclaim counts that page.
        if not isinstance(mapping, bytes) or record.mode == "started":
            self.journal.ack(record.seq, "lost", epoch=epoch)
            return "skipped"
        lane, _, entry = mapping.decode().partition("|")
        ttl, keys = self._settle_keys(int(lane), record.target_lane)
        args = list(record.args)
        args[2] = entry
        with redis_errors("giving back a journalled write"):
            reply = await self._settle(keys=keys, args=[ttl, epoch, mapping, *args])
        status, value = settle_reply(reply)
        if status == "ok":
            self.journal.ack(record.seq, "applied", value.decode() if value else "", epoch=epoch)
            return "applied"
        if status == "lost":
            stream_id = await self._record_orphan(record, value, marker)
            self.journal.ack(record.seq, "orphaned", stream_id, epoch=epoch)
            return "orphaned"
        if status == "stale":
            raise StoreLost(self.keys.job, _stale_why(epoch, value))
        self.journal.ack(record.seq, "dup" if status == "dup" else "resumed", epoch=epoch)
        return "skipped"

    async def _enqueue_again(self, enqueued: list[Any]) -> None:
        """Run a journalled `ENQUEUE` call again (arguments after its dedup ttl): a
        fingerprint seen already writes nothing."""
        dedup, ttl = self.log.dedup_args()
        keys = [self.keys.seen, self.keys.events, *dedup, *self.keys.lanes, self.keys.seen_count]
        for fingerprint in enqueued[1::6]:
            keys.append(self.keys.seen_bucket(seen_slot(str(fingerprint))[0]))
        with redis_errors("enqueueing a journalled page's links again"):
            await self._enqueue(keys=keys, args=[ttl, *enqueued])

    async def _record_orphan(
        self, record: JournalSettle, owner: bytes | None, marker: str | None
    ) -> str:
        event = TaskOrphaned(
            event_id=orphan_event_id(marker or f"{self.consumer}|{record.seq}"),
            actor=self.consumer,
            task_id=record.task_id,
            entry_id=record.entry_id,
            step=record.mode,
            events=len(record.event_ids),
            owner=owner.decode() if owner else None,
        )
        stream_id = await self.log.append(event)
        return stream_id or await self._log_end()

    async def _find_in_log(self, event_ids: set[str], after: str) -> dict[str, str]:
        """The stream IDs of those of ``event_ids`` the log holds after ``after``."""
        found: dict[str, str] = {}
        position = after
        while event_ids - found.keys():
            try:
                entries = await self.log.read_after(position, MAX_SCAN_COUNT)
            except PoisonEntry as poison:
                position = poison.entry_id  # not a write of ours: the projector moves it aside
                continue
            if not entries:
                break
            for entry in entries:
                if entry.event.event_id in event_ids:
                    found[entry.event.event_id] = entry.stream_id
            position = entries[-1].stream_id
        return found

    async def action_state(self, task_id: str, action_id: str) -> ActionState | None:
        """The ``ctx.once`` marker of an action: None, "intended" or "done"."""
        with redis_errors("reading an action marker"):
            value = await self.redis.hget(self.keys.actions, action_field_of(task_id, action_id))
        if value == b"intended":
            return "intended"
        if value == b"aborted":
            return "aborted"
        return "done" if value == b"done" else None

    async def _leases(self, reply: list[PendingEntry], *, reclaimed: bool) -> list[Lease]:
        leases = []
        for lane, entry_id, owner, deliveries, fields in reply:
            if not fields:
                continue  # deleted while pending: nothing left to run
            lease = await self._lease(
                lane,
                entry_id,
                fields,
                deliveries=deliveries,
                previous_owner=owner.decode() if reclaimed else None,
            )
            if lease is not None:
                leases.append(lease)
        return leases

    async def _lease(
        self,
        lane: int,
        entry_id: bytes,
        fields: list[bytes],
        *,
        deliveries: int,
        previous_owner: str | None = None,
        resume: bytes | None = None,
    ) -> Lease | None:
        try:
            task = task_of(fields)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            await self._poisoned(lane, entry_id, fields, exc, deliveries)
            return None
        return Lease(
            lane=lane,
            entry_id=entry_id.decode(),
            task=task,
            deliveries=deliveries,
            previous_owner=previous_owner,
            resume=resume,
        )

    async def _poisoned(
        self, lane: int, entry_id: bytes, fields: list[bytes], exc: Exception, deliveries: int
    ) -> None:
        # A task nobody can read would be redelivered forever: move it aside at once.
        self.poisoned += 1
        pairs = dict(zip(fields[::2], fields[1::2], strict=False))
        reason = f"task does not decode: {exc}"
        await self.dead_letter(lane, entry_id.decode(), reason, pairs, deliveries)
