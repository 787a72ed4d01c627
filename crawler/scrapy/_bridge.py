"""The Redis side of the plug-in: crawlog's queue, run on an event loop of its own thread.

Scrapy calls its scheduler synchronously from the reactor's thread, and a scheduler that
waited there for Redis would stall every download in flight. So the queue lives on a
dedicated thread with its own asyncio loop (anyio inside it, as everywhere in crawlog),
and the two sides meet only in thread-safe deques:

* ``ready``: leases claimed ahead (about Scrapy's ``CONCURRENT_REQUESTS`` of them), which
  ``next_request`` pops without waiting;
* ``outbox``: what Scrapy did, in the order it did it: tasks to enqueue, tasks to finish.
  One writer drains it in that order, so a request's finish is written only after every
  request its callback yielded was enqueued (a crash in between redoes the request and
  enqueues the same requests again, deduplicated; the other order could lose them).

A thread rather than the asyncio reactor's own loop: the plug-in then works under any
Twisted reactor, and a Redis restart that crawlog's client rides out (it retries for a
while) holds up only this thread, never Scrapy's downloads and callbacks. The cost is a
wake-up across threads per burst of work, not per call: the deques are polled by whoever
was woken last.

Beside the writer run the loops a crawlog worker runs: claiming, lease renewal (every
lease held, started or not, until its task is finished), recovery of other processes'
expired leases, and the control poll (pauses), plus a poll of how much work is left,
which ``has_pending_requests`` answers from.

With ``PolitenessMiddleware`` the thread also holds crawlog's shared per-host slots
(`crawler._politeness.PolitenessGate`, under this process's worker name) for the requests
Scrapy is downloading: a task per slot wanted, which takes the slot and keeps it until the
middleware gives it back (`SlotTicket.release`).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from contextlib import AsyncExitStack, suppress
from dataclasses import dataclass, field
from fractions import Fraction

import anyio
import anyio.abc
import msgspec
import redis.asyncio as aioredis

from crawler._job import SCRAPY_SPIDER_PREFIX, JobConfig, save_config
from crawler._politeness import Politeness, PolitenessGate
from crawler._recovery import Recovery, aborted_for_recoveries, past_recovery_limit, recovery_of
from crawler.scrapy._settings import PluginSettings
from eventlog import (
    CONTROL_POLL_S,
    DEFAULT_RIDE_OUT_S,
    AnyEvent,
    Controls,
    CrawlogError,
    JobKeys,
    Lease,
    LeaseLost,
    Task,
    TaskAborted,
    TaskDone,
    TaskFailed,
    TaskParked,
    TaskQueue,
    TaskReleased,
    WorkerNameTaken,
    connect,
    ensure_server,
    hold_worker_name,
    read_controls,
)

log = logging.getLogger("crawlog.scrapy")

WORKER_PREFIX = "scrapy-"
MAX_DEFAULT_WORKERS = 64
"""Default names tried (``scrapy-1`` … ``scrapy-64``) before giving up."""
CLAIM_BLOCK_MS = 200
"""How long one claim waits for work on an empty queue."""
LEFT_POLL_S = 0.25
"""How often the work left in the job is counted (``has_pending_requests``)."""
ENQUEUE_BATCH = 500
FINISH_CONCURRENCY = 32
RENEW_SHARE = Fraction(1, 3)
RECOVERY_SHARE = Fraction(1, 6)
RECOVER_BATCH = 256
START_TIMEOUT_S = 120.0
CLOSE_TIMEOUT_S = 60.0

TerminalEvent = TaskDone | TaskFailed | TaskAborted


@dataclass(frozen=True, slots=True)
class Enqueue:
    """A task to enqueue unless its fingerprint was seen."""

    task: Task
    fingerprint: str


@dataclass(frozen=True, slots=True)
class Finish:
    """A task Scrapy is done with: its events and its terminal event, one fenced step."""

    lease: Lease
    events: Sequence[AnyEvent]
    terminal: TerminalEvent


@dataclass(frozen=True, slots=True)
class Release:
    """A task Scrapy held but will not run (it closed first): back to the queue at once."""

    lease: Lease
    events: Sequence[AnyEvent]


@dataclass(frozen=True, slots=True)
class Hold:
    """A task Scrapy was about to get whose job, site or self is paused: parked (or, for a
    paused job, back in its lane), as a native worker holds one back."""

    lease: Lease
    reason: str
    """`eventlog.Controls.blocks`' answer: job, site or task paused."""


Op = Enqueue | Finish | Release | Hold


@dataclass(slots=True)
class BridgeStats:
    """Counts the loop thread keeps; copied into Scrapy's stats at close."""

    claimed: int = 0
    enqueued: int = 0
    already_seen: int = 0
    finished: int = 0
    leases_lost: int = 0
    recovered: int = 0
    aborted: int = 0
    parked: int = 0
    released: int = 0
    taken_back: int = 0


class SlotTicket:
    """One request's claim on a host slot: ``on_held`` is called (from the loop thread)
    once the slot is held, with None, or with the error that kept it from being taken;
    `release` (from any thread) frees it, or stops the wait for it."""

    __slots__ = ("_bridge", "_held", "_released", "_scope", "host", "on_held")

    def __init__(
        self, bridge: Bridge, host: str, on_held: Callable[[BaseException | None], None]
    ) -> None:
        self._bridge = bridge
        self.host = host
        self.on_held = on_held
        self._scope: anyio.CancelScope | None = None
        self._held = False
        self._released = False

    def release(self) -> None:
        """Free the slot (or give up waiting for it); only the first call counts."""
        if self._released:
            return
        self._released = True
        with suppress(RuntimeError):  # the queue has stopped: its slots were freed then
            self._bridge._call_in_loop(self._cancel)

    def _cancel(self) -> None:
        if self._scope is not None:
            self._scope.cancel()

    async def hold(self, gate: PolitenessGate) -> None:
        """Take the slot and keep it until released (run on the loop thread)."""
        with anyio.CancelScope() as self._scope:
            if self._released:
                return
            try:
                async with gate.slot(self.host):
                    self._held = True
                    self.on_held(None)
                    await anyio.sleep_forever()
            except Exception as exc:
                if not self._held:
                    self.on_held(exc)
                else:  # freeing it failed: it expires by itself (the slot's ttl)
                    log.warning("crawlog: a slot on %s was not freed: %s", self.host, exc)


@dataclass(slots=True)
class _Shared:
    ready: deque[Lease] = field(default_factory=deque)
    outbox: deque[Op] = field(default_factory=deque)


class Bridge:
    """crawlog's queue for one Scrapy process, on its own thread (see the module docs)."""

    def __init__(
        self,
        settings: PluginSettings,
        *,
        prefetch: int,
        seeds: tuple[str, ...],
        spider_name: str,
        wake_scrapy: Callable[[], None],
        politeness: Politeness | None = None,
    ) -> None:
        self.settings = settings
        self.prefetch = max(1, prefetch)
        self.seeds = seeds
        self.spider_name = spider_name
        self.wake_scrapy = wake_scrapy
        """Called (from this thread) when leases arrive while Scrapy's side had none."""
        self.politeness = politeness
        """The shared per-host limits (``PolitenessMiddleware``), or None: Scrapy's own."""
        self._gate: PolitenessGate | None = None
        self._slot_tasks: anyio.abc.TaskGroup | None = None
        self.shared = _Shared()
        self.ready = self.shared.ready
        self.outbox = self.shared.outbox
        self.stats = BridgeStats()
        self.name = ""
        self.error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._started: Future[None] = Future()
        self._closed: Future[None] = Future()
        self._poked = False
        self._writer_wake: anyio.Event | None = None
        self._claim_wake: anyio.Event | None = None
        self._closing: anyio.Event | None = None
        self._drain_lock: anyio.Lock | None = None
        self._held: dict[tuple[int, str], Lease] = {}
        self._writing = 0
        self._left = 1
        """Tasks of the job not finished yet, as last counted (1 until first counted)."""
        self._changes = 0
        """Bumped by every write, so a count taken across one is not trusted."""
        self._controls = Controls()

    # --- the Scrapy side (called from the reactor's thread) ------------------------------

    def start(self) -> None:
        """Start the thread; return once the job is open (a failure is raised here)."""
        self._thread = threading.Thread(target=self._run, name="crawlog-queue", daemon=True)
        self._thread.start()
        self._started.result(timeout=START_TIMEOUT_S)

    def submit(self, op: Op) -> None:
        """Queue a write, in order (see the module docs)."""
        self.outbox.append(op)
        self.poke()

    def poke(self) -> None:
        """Wake the writer and the claimer (once per burst)."""
        if self._poked or self._loop is None:
            return
        self._poked = True
        with suppress(RuntimeError):  # the loop is closed: nothing runs any more
            self._loop.call_soon_threadsafe(self._wake)

    def hold_slot(self, host: str, on_held: Callable[[BaseException | None], None]) -> SlotTicket:
        """Ask for a slot on ``host`` (see `SlotTicket`); never waits."""
        ticket = SlotTicket(self, host, on_held)
        self._call_in_loop(lambda: self._start_holding(ticket))
        return ticket

    def _call_in_loop(self, callback: Callable[[], None]) -> None:
        if self._loop is None:
            raise RuntimeError("the crawlog queue is not running")
        self._loop.call_soon_threadsafe(callback)

    def _start_holding(self, ticket: SlotTicket) -> None:
        if self._slot_tasks is None or self._gate is None:
            ticket.on_held(CrawlogError("the crawlog queue is closed: no host slot to take"))
            return
        self._slot_tasks.start_soon(ticket.hold, self._gate)

    def blocks(self, lease: Lease) -> str | None:
        """Why the lease's task may not run now (the controls last polled), or None."""
        return self._controls.blocks(lease.task.site, lease.task.task_id)

    def started(self) -> int:
        """Leases handed to Scrapy whose finish is not written yet (downloading, in the
        scraper, or finished in the outbox): what a kill of this process redoes."""
        return max(0, len(self._held) - len(self.ready))

    def pending(self) -> bool:
        """Whether work may still come: queued writes, leases ahead, or unfinished tasks."""
        if self.error is not None:
            return False
        return bool(self.outbox or self.ready or self._writing or self._left > 0)

    def close(self) -> None:
        """Write what is queued, hand back the leases not started, stop; blocks until done."""
        if self._loop is None or self._thread is None:
            return
        with suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._close_soon)
        self._thread.join(timeout=CLOSE_TIMEOUT_S)
        if self._thread.is_alive():
            log.error("crawlog: the queue did not close in %.0f s", CLOSE_TIMEOUT_S)

    # --- the loop thread -----------------------------------------------------------------

    def _run(self) -> None:
        try:
            anyio.run(self._main)
        except BaseException as exc:
            self.error = exc
            if not self._started.done():
                self._started.set_exception(exc)
            else:
                log.error("crawlog: the queue stopped: %s", exc, exc_info=exc)
                self.wake_scrapy()

    def _wake(self) -> None:
        self._poked = False
        for event in (self._writer_wake, self._claim_wake):
            if event is not None:
                event.set()

    def _close_soon(self) -> None:
        if self._closing is not None:
            self._closing.set()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._writer_wake, self._claim_wake = anyio.Event(), anyio.Event()
        self._closing = anyio.Event()
        self._drain_lock = anyio.Lock()
        url = self.settings.url or ensure_server(self.settings.data_dir).url
        keys = JobKeys(self.settings.job)
        async with connect(url, ride_out_s=DEFAULT_RIDE_OUT_S) as client, AsyncExitStack() as names:
            self.name = await self._take_name(client, keys, names)
            queue = TaskQueue(client, keys, self.name, lease_ms=self.settings.lease_ms)
            config = JobConfig(
                seeds=self.seeds,
                spider=f"{SCRAPY_SPIDER_PREFIX}{self.spider_name}",
                politeness=self.politeness or Politeness(),
                lease_ms=self.settings.lease_ms,
                recovery_limit=self.settings.recovery_limit,
            )
            await save_config(client, keys, config)
            await queue.ensure_groups()
            self._controls = await read_controls(client, keys)
            taken = await queue.take_back_all()
            self.stats.taken_back = len(taken)
            for lease in taken:
                await self._accept(queue, lease)
            if taken:
                log.info("crawlog: %s resumed %d request(s) it held", self.name, len(taken))
            if self.politeness is not None:
                self._gate = PolitenessGate(client, keys, self.politeness, holder=self.name)
            self._started.set_result(None)
            async with anyio.create_task_group() as tg:
                self._slot_tasks = await tg.start(self._slot_group)
                tg.start_soon(self._claim_loop, queue)
                tg.start_soon(self._renew_loop, queue)
                tg.start_soon(self._recovery_loop, queue)
                tg.start_soon(self._control_loop, client, keys, queue)
                tg.start_soon(self._left_loop, queue)
                async with anyio.create_task_group() as writing:
                    writing.start_soon(self._write_loop, queue)
                    await self._closing.wait()
                    # Scrapy has finished every request it started (its slot drained before
                    # it closed us): what it queued is written, then the writer stops.
                    await self._drain(queue)
                    writing.cancel_scope.cancel()
                await self._hand_back(queue)
                tg.cancel_scope.cancel()

    async def _slot_group(self, *, task_status: anyio.abc.TaskStatus[anyio.abc.TaskGroup]) -> None:
        """A task group for the slots held (`SlotTicket.hold`), alive as long as the bridge."""
        async with anyio.create_task_group() as slots:
            task_status.started(slots)
            await anyio.sleep_forever()

    async def _take_name(self, client: aioredis.Redis, keys: JobKeys, names: AsyncExitStack) -> str:
        if self.settings.worker:
            # A restart right after a kill finds its name held by the dead process: the
            # name lock sees that it is gone and hands it over at once.
            await names.enter_async_context(
                hold_worker_name(client, keys, self.settings.worker, wait_s=2.0)
            )
            return self.settings.worker
        for n in range(1, MAX_DEFAULT_WORKERS + 1):
            name = f"{WORKER_PREFIX}{n}"
            try:
                await names.enter_async_context(hold_worker_name(client, keys, name))
            except WorkerNameTaken:
                continue
            return name
        raise WorkerNameTaken(f"{WORKER_PREFIX}{MAX_DEFAULT_WORKERS}", 0)

    async def _accept(self, queue: TaskQueue, lease: Lease) -> None:
        """A lease of ours: to Scrapy, parked (its site or the job is paused) or aborted."""
        task = lease.task
        limit = self.settings.recovery_limit
        if past_recovery_limit(lease, limit):
            aborted = aborted_for_recoveries(lease, self.name, limit, (*task.owners, self.name))
            await self._finish(queue, Finish(lease, (), aborted))
            self.stats.aborted += 1
            return
        blocked = self._controls.blocks(task.site, task.task_id)
        if blocked is not None and await self._held_back(queue, lease, blocked):
            return
        self._held[lease.held_as] = lease
        was_empty = not self.ready
        self.ready.append(lease)
        if was_empty:
            self.wake_scrapy()

    async def _held_back(self, queue: TaskQueue, lease: Lease, why: str) -> bool:
        """Park the task (its site or itself is paused) or, the job paused, put it back in its
        lane, as a native worker does; False if the pause was lifted meanwhile."""
        task = lease.task
        parked = TaskParked(actor=self.name, task_id=task.task_id, reason=why)
        try:
            if why == "job paused":
                await queue.requeue(lease, [parked], task, lease.lane)
            elif not await queue.park(lease, [parked]):
                return False
        except LeaseLost as lost:
            log.warning("crawlog: %s", lost)
        self._held.pop(lease.held_as, None)
        self.stats.parked += 1
        return True

    async def _hold(self, queue: TaskQueue, op: Hold) -> None:
        if not await self._held_back(queue, op.lease, op.reason):
            # Resumed since Scrapy's side looked: Scrapy gets it after all, first.
            self.ready.appendleft(op.lease)
            self.wake_scrapy()

    async def _claim_loop(self, queue: TaskQueue) -> None:
        assert self._claim_wake is not None
        while True:
            want = self.prefetch - len(self.ready)
            if want * 2 < self.prefetch or self._controls.job_paused:
                with anyio.move_on_after(CONTROL_POLL_S):
                    await self._claim_wake.wait()
                self._claim_wake = anyio.Event()
                continue
            leases = await queue.claim(want, block_ms=CLAIM_BLOCK_MS)
            log.debug("claimed %d of %d", len(leases), want)
            if leases:
                self._changes += 1
                self._left = max(self._left, 1)
            self.stats.claimed += len(leases)
            for lease in leases:
                await self._accept(queue, lease)

    async def _write_loop(self, queue: TaskQueue) -> None:
        assert self._writer_wake is not None
        while True:
            await self._writer_wake.wait()
            self._writer_wake = anyio.Event()
            await self._drain(queue)

    async def _drain(self, queue: TaskQueue) -> None:
        """Write the outbox in order: a run of enqueues in one call, then a run of finishes
        side by side (finishes do not depend on each other, only on what came before).
        One drain at a time: the one at close would otherwise overtake the writer's."""
        assert self._drain_lock is not None
        async with self._drain_lock:
            await self._drain_in_order(queue)

    async def _drain_in_order(self, queue: TaskQueue) -> None:
        while self.outbox:
            self._writing += 1
            try:
                first = self.outbox.popleft()
                run: list[Op] = [first]
                while self.outbox and type(self.outbox[0]) is type(first):
                    run.append(self.outbox.popleft())
                self._changes += 1
                self._left = max(self._left, 1)
                log.debug("writing %d %s", len(run), type(first).__name__)
                if isinstance(first, Enqueue):
                    await self._enqueue(queue, [op for op in run if isinstance(op, Enqueue)])
                elif isinstance(first, Release):
                    for op in run:
                        if isinstance(op, Release):
                            await self._release(queue, op.lease, op.events)
                elif isinstance(first, Hold):
                    for op in run:
                        if isinstance(op, Hold):
                            await self._hold(queue, op)
                else:
                    finishes = [op for op in run if isinstance(op, Finish)]
                    async with anyio.create_task_group() as tg:
                        for lane in range(min(FINISH_CONCURRENCY, len(finishes))):
                            tg.start_soon(
                                self._finish_all, queue, finishes[lane::FINISH_CONCURRENCY]
                            )
            finally:
                self._writing -= 1

    async def _enqueue(self, queue: TaskQueue, ops: list[Enqueue]) -> None:
        for start in range(0, len(ops), ENQUEUE_BATCH):
            batch = ops[start : start + ENQUEUE_BATCH]
            new = await queue.enqueue(
                [op.task for op in batch],
                actor=self.name,
                fingerprints=[op.fingerprint for op in batch],
            )
            added = sum(new)
            self.stats.enqueued += added
            self.stats.already_seen += len(new) - added

    async def _finish_all(self, queue: TaskQueue, finishes: list[Finish]) -> None:
        for op in finishes:
            await self._finish(queue, op)

    async def _finish(self, queue: TaskQueue, op: Finish) -> None:
        try:
            await queue.finish(op.lease, op.terminal, before=op.events)
            self.stats.finished += 1
        except LeaseLost as lost:
            # Another process took it after we stalled past the lease: it redoes the
            # request, and nothing of ours was written.
            self.stats.leases_lost += 1
            log.warning("crawlog: %s", lost)
        finally:
            self._held.pop(op.lease.held_as, None)

    def _share_s(self, share: Fraction) -> float:
        return float(self.settings.lease_ms * share / 1000)

    async def _renew_loop(self, queue: TaskQueue) -> None:
        while True:
            await anyio.sleep(self._share_s(RENEW_SHARE))
            held = list(self._held.values())
            for lane, entry_id in await queue.renew_held(held):
                if self._held.pop((lane, entry_id), None) is not None:
                    self.stats.leases_lost += 1
                    log.warning("crawlog: lease %s lost: another process redoes it", entry_id)

    async def _recovery_loop(self, queue: TaskQueue) -> None:
        period = self._share_s(RECOVERY_SHARE)
        while True:
            expired, soonest = await queue.expired(RECOVER_BATCH, horizon_ms=int(period * 1000))
            moves = [self._recovery(lease) for lease in expired]
            for (_, _, task), moved in zip(moves, await queue.recover(moves), strict=True):
                if moved:
                    self._changes += 1
                    if task is None:
                        self.stats.aborted += 1
                    else:
                        self.stats.recovered += 1
            wait = period if soonest is None else min(period, soonest + 0.05)
            await anyio.sleep(max(wait, 0.05))

    def _recovery(self, lease: Lease) -> Recovery:
        # The plug-in's slots are taken for no task (`eventlog.JobKeys.fetches_started`
        # knows none of its requests): every lease it loses may have sent one.
        sent = msgspec.structs.replace(lease, unrecorded_fetch=True)
        return recovery_of(sent, self.name, self.settings.recovery_limit)

    async def _control_loop(self, client: aioredis.Redis, keys: JobKeys, queue: TaskQueue) -> None:
        while True:
            await anyio.sleep(CONTROL_POLL_S)
            self._controls = await read_controls(client, keys)
            await queue.promote()

    async def _left_loop(self, queue: TaskQueue) -> None:
        while True:
            changes = self._changes
            left, waiting = await queue.left()
            if changes == self._changes:
                was, self._left = self._left, left - len(waiting)
                if was > 0 and self._left <= 0:
                    # Scrapy asks whether to close only when woken (or on its heartbeat).
                    self.wake_scrapy()
            await anyio.sleep(LEFT_POLL_S)

    async def _hand_back(self, queue: TaskQueue) -> None:
        """Give back the leases Scrapy never started: others take them at once."""
        while self.ready:
            await self._release(queue, self.ready.popleft(), ())

    async def _release(self, queue: TaskQueue, lease: Lease, events: Sequence[AnyEvent]) -> None:
        self._held.pop(lease.held_as, None)
        released = TaskReleased(
            actor=self.name, task_id=lease.task.task_id, attempt=lease.task.attempt
        )
        try:
            await queue.requeue(lease, [*events, released], lease.task, lease.lane)
            self.stats.released += 1
        except (LeaseLost, CrawlogError) as exc:
            log.warning("crawlog: could not hand back %s: %s", lease.entry_id, exc)
