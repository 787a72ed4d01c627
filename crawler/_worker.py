"""The worker: leases tasks, runs them, and keeps its leases alive.

One process, one anyio task group, one HTTP client. The worker claims tasks for its free
slots (after taking back its own pending list on a restart) and runs each lease's task
through its steps (`crawler._task_steps`: fetch with `crawler._downloader`, parse with
`crawler._scraper`, write in one fenced step).

Beside the tasks run four loops: lease renewal, recovery (moving others' expired leases to
the recovery lane), re-reading this worker's own pending list, and the control poll
(pauses, open circuits, due retries).
"""

from __future__ import annotations

import logging
import math
import time
from collections import deque
from collections.abc import Sequence
from contextlib import AsyncExitStack, nullcontext
from fractions import Fraction
from pathlib import Path
from typing import Final

import anyio
import msgspec
import redis.asyncio as aioredis
from anyio.abc import TaskGroup

from crawler._browser import tasks_at_once
from crawler._defaults import DEFAULT_CONCURRENCY, DEFAULT_GRACE_S
from crawler._downloader import Downloader
from crawler._fair_claims import LEASES_PER_PLACE, ClaimPause, busy_sites, first_of
from crawler._fetch_spec import FetchConfig
from crawler._gc import collector_paused
from crawler._job import JobConfig
from crawler._offline import DEFAULT_OFFLINE_PAGES
from crawler._recovery import Recovery, recovery_of
from crawler._scraper import Scraper, UncertainAction
from crawler._spider import Spider
from crawler._store_loss import is_store_lost, save_in_flight_at_loss, store_identity
from crawler._task_steps import TaskSteps, WorkerStats
from crawler._urls import fingerprint, site_of
from eventlog import (
    CONTROL_POLL_S,
    DEFAULT_DURABILITY,
    DEFAULT_NAME_TTL_MS,
    WORKER_STOPPED,
    AnyEvent,
    Controls,
    CrawlogError,
    Durability,
    JobIdentity,
    Journal,
    JournalFull,
    Lease,
    LeaseLost,
    QueueObserver,
    ServerCannotPersist,
    ServerOutOfMemory,
    StoreLost,
    Task,
    TaskAborted,
    TaskQueue,
    TaskReleased,
    check_identity,
    hold_worker_name,
    read_controls,
)

log = logging.getLogger("crawlog.worker")

IDLE_BLOCK_MS = 500
DONE_LOOK_FIRST_S = 0.01
"""With nothing in flight and nothing to claim, a worker that exits when the job is done
looks whether it is this soon, then twice as long after each look (up to
``IDLE_BLOCK_MS``), and this soon again after a look that found fewer tasks left than
the one before (or once it claims a task): the job's last tasks are other workers', and
its blocking claim is woken by no task's end, so it waited that out at the end of every
crawl and recrawl."""
PENDING_BATCH = 10_000
RECOVER_BATCH = 256
"""Expired leases moved per recovery pass: two dead workers' worth, and more, in one."""
HAND_BACK_CONCURRENCY = 16
"""Backlog leases released at once on a graceful stop (one fenced script each)."""
RECOVER_MARGIN_S = 0.02
"""Looked for this long after a lease is due to expire (and never sooner after a pass)."""
# The cadences of the loops beside the tasks, as shares of the lease time: each is short
# enough that a lease is renewed (or a dead worker's moved) well within one lease.
FRESH_SHARE = Fraction(1, 2)
"""A lease the server last reset this share of the lease time ago or longer is renewed (or
found lost) before a fetch: a worker stalled past its lease must not fetch a page another
worker has taken over."""
RENEW_SHARE = Fraction(1, 3)
"""Every lease this worker runs a task of is renewed once per this share of the lease."""
BACKLOG_RENEW_SHARE = Fraction(1, 3)
"""With each renewal, the backlog's leases idle for this share of the lease are renewed."""
RECOVERY_SHARE = Fraction(1, 6)
"""A recovery pass (others' expired leases moved) at least once per this share."""
PENDING_REREAD_SHARE = Fraction(1, 6)
"""This worker's own pending list is re-read once per this share (lost claim replies)."""
STOP_RESERVE_S = 2.0
"""The end of the grace period kept for giving tasks back and releasing the worker's name
(half of it each; at most half of the grace): pages in flight get the rest."""
NAME_WAIT_S = DEFAULT_NAME_TTL_MS / 1000 * 2

HeldAs = tuple[int, str]
"""A lease as this worker keeps it (`Lease.held_as`): its entry id alone may name an entry
of another lane too."""


def worker_queue(
    redis: aioredis.Redis,
    job: str,
    name: str,
    config: JobConfig,
    *,
    observer: QueueObserver | None = None,
    durability: Durability = DEFAULT_DURABILITY,
    journal: Journal | None = None,
) -> TaskQueue:
    """The queue a worker ``name`` of ``job`` works through: its lease time and whether it
    records events come from the job's ``config``; ``observer`` is told of its calls (the
    worker's metrics); ``durability``: when a checkpoint counts as written
    (`TaskQueue.durability`); ``journal``: where its writes go first (`TaskQueue.journal`)."""
    return TaskQueue(
        redis,
        job,
        name,
        lease_ms=config.lease_ms,
        record_events=config.record_events,
        observer=observer,
        durability=durability,
        journal=journal,
    )


def _queue_for(
    redis: aioredis.Redis, job: str, name: str, config: JobConfig, queue: TaskQueue | None
) -> TaskQueue:
    """``queue`` if it is worker ``name``'s of ``job`` with the job's lease (ValueError if
    not), or, if None, such a queue without an observer."""
    if queue is None:
        return worker_queue(redis, job, name, config)
    if (queue.keys.job, queue.consumer, queue.lease_ms) != (job, name, config.lease_ms):
        raise ValueError(
            f"the queue is {queue.consumer!r}'s of job {queue.keys.job!r} with a lease of "
            f"{queue.lease_ms} ms, not {name!r}'s of {job!r} with {config.lease_ms} ms"
        )
    return queue


class WorkerOptions(msgspec.Struct, frozen=True, kw_only=True):
    """How one worker process runs, beside what the job's configuration says.

    ``concurrency``: tasks run at once; ``exit_when_done``: return once every task of the
    job has ended, rather than waiting for more; ``grace_s``: how long a graceful stop
    (`Worker.stop`) may take in all; ``fetch_config``: the HTTP client's settings (None:
    the job's, `JobConfig.fetch_config`); ``offline_pages``: of the tasks held, pages
    fetched at most per store outage (`crawler._offline`; 0: none);
    ``batch_script_calls``: the queue's script calls made while one is in flight go
    together (`eventlog.ScriptBatcher`, ``BATCH_SCRIPT_CALLS_ENV``).
    """

    concurrency: int = DEFAULT_CONCURRENCY
    exit_when_done: bool = False
    grace_s: float = DEFAULT_GRACE_S
    fetch_config: FetchConfig | None = None
    offline_pages: int = DEFAULT_OFFLINE_PAGES
    batch_script_calls: bool = False


DEFAULT_OPTIONS: Final = WorkerOptions()
"""A worker's by default: `DEFAULT_CONCURRENCY` tasks, waiting for more, `DEFAULT_GRACE_S`."""


class Worker:
    """One worker process's crawl of a job.

    ``redis``: the client of the job's server; ``job``: its name; ``name``: this worker's,
    unique among the job's live workers (held for the run, `hold_worker_name`), its
    consumer name in the queue; ``config``: the job's settings (lease time, politeness,
    scope, retries, recovery limit); ``spider``: what parses the pages.

    ``data_dir``: where the projector archives the log (a trimmed checkpoint is read from
    there); ``options``: how this process runs (`WorkerOptions`: its concurrency, whether
    it exits once the job is done, its grace period, its HTTP client's settings);
    ``queue``: the queue to work through, for ``name`` and ``config`` (`worker_queue`,
    e.g. with an observer); by default one without an observer.
    """

    def __init__(
        self,
        redis: aioredis.Redis,
        job: str,
        name: str,
        config: JobConfig,
        spider: Spider,
        *,
        data_dir: Path,
        options: WorkerOptions = DEFAULT_OPTIONS,
        queue: TaskQueue | None = None,
    ) -> None:
        self.redis, self.job, self.name = redis, job, name
        self.config, self.spider = config, spider
        self.data_dir = data_dir
        """Where the projector archives the log: a trimmed checkpoint is read from there."""
        self.concurrency = tasks_at_once(config.browser, options.concurrency)
        self.exit_when_done = options.exit_when_done
        self.grace_s = grace_s = options.grace_s
        self._batching = options.batch_script_calls
        self._store_lost = False
        self.identity: JobIdentity | None = None
        """The job's identity in the store at start (None: a job begun before identities)."""
        self._queue = queue = _queue_for(redis, job, name, config, queue)
        self.keys = queue.keys
        self.scope = config.scope_rule()
        self.scraper = Scraper(spider, config, queue, self.scope)
        fetching = options.fetch_config or config.fetch_config()
        self.downloader = Downloader(
            redis,
            queue,
            config,
            fetching,
            self.scope,
            self.scraper.seen,
            hooks=self.scraper.middlewares,
            offline_pages=options.offline_pages,
        )
        self.gate = self.downloader.gate
        self.offline = self.downloader.offline  # the pages held, while the store is down
        self.controls = Controls()
        self.stats = WorkerStats()
        self.steps = TaskSteps(
            self,
            queue,
            config,
            scraper=self.scraper,
            downloader=self.downloader,
            stats=self.stats,
            data_dir=data_dir,
        )
        self.stopping = anyio.Event()
        self._fresh_for_s = self._share_s(FRESH_SHARE)
        """How long a lease is taken to be safe from takeover since its idle time was reset."""
        self._in_flight: dict[HeldAs, anyio.CancelScope] = {}
        self._leases: dict[HeldAs, Lease] = {}
        self._fresh: dict[HeldAs, float] = {}
        """When (monotonic, just before the claim or renewal) each lease's idle time was reset."""
        self._taken_back_at = 0.0
        """The same for every taken-back lease not renewed since: one time for all of them."""
        self._capacity = anyio.Event()
        self._claim_pause = ClaimPause()
        self._done_look_s = DONE_LOOK_FIRST_S
        """How long after its last look an idle worker looks whether the job is done."""
        self._backlog: deque[Lease] = deque()
        """Leases of ours waiting for capacity (a restart's pending list, lost replies)."""
        self._ended: set[HeldAs] = set()
        """Entries whose task ended since the current re-read of our PEL began."""
        self._resumed = anyio.Event()
        """Set once the whole pending list (of a restart) is taken back."""
        self._fetcher_open = anyio.Event()
        """Set once the fetcher is open (`_open_fetcher`): no task starts before."""
        self._reserve_s = min(STOP_RESERVE_S, grace_s / 2)
        self._pages_until = math.inf
        """Once stopping: when claiming, the pages in flight and the hand-back are cut
        short (the reserve before the grace period ends); `_until_grace` enforces it."""
        self._until_grace: anyio.CancelScope | None = None
        self._released_by = math.inf
        """Once stopping: when a task being given back stops trying (its lease then expires)."""

    @property
    def queue(self) -> TaskQueue:
        """The queue this worker works through, given or built when it was made."""
        return self._queue

    def stop(self) -> None:
        """Stop claiming; in-flight tasks finish their page or are released (graceful stop).

        The whole stop ends within ``grace_s``, whether or not the server answers.
        """
        if not self.stopping.is_set():
            now = anyio.current_time()
            self._pages_until = now + self.grace_s - self._reserve_s
            if self._until_grace is not None:
                self._until_grace.deadline = self._pages_until
            self._released_by = now + self.grace_s - self._reserve_s / 2
            self.gate.release_by(self._released_by)
        self.stopping.set()

    async def run(self) -> WorkerStats:
        """Crawl until stopped, or (``exit_when_done``) until every task of the job is done."""
        try:
            return await self._run()
        except BaseException as exc:
            if self.steps.unsettled and is_store_lost(exc):
                # The pages these tasks fetched are in no log now: the restore counts them
                # as refetched when they come again.
                save_in_flight_at_loss(self.data_dir, self.job, self.name, self.steps.unsettled)
            raise

    async def _run(self) -> WorkerStats:
        async with (
            # A restart right after a SIGKILL waits out the dead process's hold on the name.
            hold_worker_name(
                self.redis,
                self.keys,
                self.name,
                wait_s=NAME_WAIT_S,
                release_timeout_s=self._reserve_s / 2,
            ),
            # The page's script calls of its tasks go together (`eventlog.ScriptBatcher`).
            self.queue.batcher.running() if self._batching else nullcontext(),
            AsyncExitStack() as closing,  # the fetcher, once open: closed after every task
            anyio.create_task_group() as background,
        ):
            # Before the groups are made: made again in a store that lost the job, they
            # would hide the loss, and the job would be taken for a new one.
            self.identity = await store_identity(self.redis, self.data_dir, self.job)
            # Its writes carry the epoch: the store's scripts refuse them once it changes.
            self.queue.epoch = self.identity.epoch if self.identity is not None else 0
            # A promotion of the store since the last look raises the epoch once, and this
            # queue follows it (its journal's writes the old primary had given back first).
            await self.queue.follow_promotion()
            self._follow_epoch()
            await self.queue.ensure_groups()
            # Before any claim: what this name wrote and was never acknowledged goes first.
            flushed = await self.queue.flush_journal()
            if flushed.total:
                log.info("%s flushed its journal: %s", self.name, msgspec.structs.asdict(flushed))
            self.controls = await read_controls(self.redis, self.keys)
            background.start_soon(self._control_loop)
            background.start_soon(self._renew_loop)
            background.start_soon(self._recovery_loop)
            background.start_soon(self._pending_loop)
            background.start_soon(self.gate.free_loop)
            background.start_soon(self.offline.run)
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(self._open_fetcher, closing)
                # Once stopping, `_until_grace` has a deadline: a claim stuck on a server
                # that does not answer is cut short there too, not only the pages.
                with anyio.CancelScope(deadline=self._pages_until) as self._until_grace:
                    await self._claim_loop(tasks)
                    # Stopping: tasks end at their next page boundary, and those not
                    # started are handed back meanwhile; what is still running at the
                    # deadline is cancelled (and gives its task back, if it can in time).
                    async with anyio.create_task_group() as stopping:
                        stopping.start_soon(self._hand_back)
                        while self._in_flight:
                            await self._capacity.wait()
                tasks.cancel_scope.cancel()
            # The slots of the last requests, left for the next acquire (`free_loop`).
            await self.gate.flush()
            background.cancel_scope.cancel()
        batcher = self.queue.batcher
        log.debug(
            "%s sent %d script calls in %d batches, %d alone",
            self.name, batcher.calls, batcher.batches, batcher.alone,
        )  # fmt: skip
        if self._backlog:
            log.warning(
                "%s stopped with %d task(s) not handed back: they stay leased until their "
                "leases expire",
                self.name,
                len(self._backlog),
            )
        return self.stats

    # --- claiming ------------------------------------------------------------------------

    async def _claim_loop(self, tasks: TaskGroup) -> None:
        # A restarted worker resumes its own pending list at once, without waiting for
        # its leases to expire (the worker-name lock makes it the only one doing so).
        # They wait in the backlog, started as capacity allows, before any new claim.
        tasks.start_soon(self._resume)
        while not self.stopping.is_set():
            if not self._resumed.is_set() or not self._fetcher_open.is_set():
                # The whole pending list is taken back before any of it runs: the take-back
                # renews every lease, and tasks running meanwhile slowed it (they share the
                # worker's thread and the machine's cores with it).
                with anyio.move_on_after(CONTROL_POLL_S):
                    await (self._fetcher_open if self._resumed.is_set() else self._resumed).wait()
                continue
            # A task waiting for its host's politeness slot takes no place (sharing claims
            # between sites), up to a bound on the leases one worker holds.
            free = min(
                self.concurrency - len(self._in_flight) + self.gate.waiting,
                LEASES_PER_PLACE * self.concurrency - len(self._in_flight),
            )
            if free <= 0 or self.controls.job_paused:
                with anyio.move_on_after(CONTROL_POLL_S):
                    await first_of(self._capacity.wait, self.gate.queued)
                continue
            if self._backlog:
                for _ in range(min(free, len(self._backlog))):
                    self._start(tasks, self._backlog.popleft())
                continue
            sent = time.monotonic()
            busy = self._busy_sites()
            leases: list[Lease] | None
            if busy:
                if wait := self._claim_pause.wait_s(time.monotonic()):
                    with anyio.move_on_after(wait):
                        await first_of(self.stopping.wait, self.gate.eased)
                    continue
                leases = await self._claim_around(free, busy)
            else:
                leases = await self._claim_unless_done(free)
            if leases is None:
                return
            for lease in leases:
                self._fresh[lease.held_as] = sent
                self._start(tasks, lease)
            if not leases and not self._in_flight and self.exit_when_done and await self._done():
                return

    # --- sharing claims between sites (crawler._fair_claims) ----------------------------

    def _busy_sites(self) -> set[str]:
        """Sites of tasks in flight whose host has ``per_host`` of our requests waiting."""
        hosts = self.gate.busy_hosts()
        return busy_sites({lease.task.site for lease in self._leases.values()}, hosts)

    async def _claim_around(self, free: int, busy: set[str]) -> list[Lease]:
        """New tasks of sites that are not busy; after none, a pause (`ClaimPause`)."""
        leases, _moved = await self.queue.claim_around(free, busy)
        if leases:
            self._claim_pause.found()
        else:
            self._claim_pause.empty(time.monotonic())
        return leases

    # --- end of sharing claims between sites ----------------------------------------------

    async def _claim_unless_done(self, free: int) -> list[Lease] | None:
        """New tasks (the claim waits up to ``IDLE_BLOCK_MS`` for some), or None if, with
        ``exit_when_done``, the job is done meanwhile (its last task ended here, or in
        another worker while this one had none in flight): it exits then, not when the
        blocking read gives up (every crawl waits for its workers to exit before its
        summary)."""
        if not self.exit_when_done:
            return await self.queue.claim(free, block_ms=IDLE_BLOCK_MS)
        # What is queued comes without a wait: the race below (two tasks and a cancel, on
        # most pages of a crawl) is only for a read that would block.
        if leases := await self.queue.claim(free):
            self._done_look_s = DONE_LOOK_FIRST_S
            return leases
        claimed: list[Lease] | None = None
        async with anyio.create_task_group() as racing:

            async def claim() -> None:
                nonlocal claimed
                claimed = await self.queue.claim(free, block_ms=IDLE_BLOCK_MS)
                if claimed:
                    self._done_look_s = DONE_LOOK_FIRST_S
                racing.cancel_scope.cancel()

            async def until_done() -> None:
                while self._in_flight:
                    await self._capacity.wait()
                # A done job has nothing left to claim: the read cut short could not have
                # been handed an entry (one added meanwhile stays in this worker's pending
                # list, taken back as any lease of a worker that stopped).
                before = None
                while left := await self._undecided():
                    if before is not None and left < before:
                        # Other workers' tasks are ending: the job's end may be next.
                        self._done_look_s = DONE_LOOK_FIRST_S
                    before = left
                    await anyio.sleep(self._done_look_s)
                    self._done_look_s = min(2 * self._done_look_s, IDLE_BLOCK_MS / 1000)
                racing.cancel_scope.cancel()

            racing.start_soon(claim)
            racing.start_soon(until_done)
        return claimed

    async def _open_fetcher(self, closing: AsyncExitStack) -> None:
        await self.downloader.open(closing, data_dir=self.data_dir, spider=self.spider)
        self.scraper.browser = self.downloader.browser
        self._fetcher_open.set()

    async def _resume(self) -> None:
        """Take back this worker's own pending list into the backlog, with every task's
        resume point (`TaskQueue.take_back_all`)."""
        started = time.monotonic()
        # The modules the HTTP stack's thread imported meanwhile and the backlog are
        # frozen: else traversed by the first collection after it, before the first fetch.
        with collector_paused(freeze=True):
            leases = await self.queue.take_back_all()
            self._taken_back_at = started
            self._backlog.extend(leases)
        self._resumed.set()
        if leases:
            log.info(
                "resumed %d tasks of %s (resume points loaded) in %.3f s",
                len(leases),
                self.name,
                time.monotonic() - started,
            )

    def _start(self, tasks: TaskGroup, lease: Lease) -> None:
        held = lease.held_as
        if held in self._in_flight:
            return
        scope = anyio.CancelScope()
        self._in_flight[held] = scope
        self._leases[held] = lease
        tasks.start_soon(self._run_task, lease, scope)

    async def _done(self) -> bool:
        """Every task of the job is terminal (none queued, leased or waiting for a retry),
        or waits for a person to decide about an uncertain action (``crawlog resolve``)."""
        return await self._undecided() == 0

    async def _undecided(self) -> int:
        """The job's tasks not ended that no person is asked to decide about (0: done)."""
        left, waiting = await self.queue.left()
        await self._check_store()  # after: "nothing left" from a store that lost it is no end
        if waiting and left == len(waiting):
            log.warning(
                "%d task(s) wait for a person to decide about an uncertain action: %s "
                "(crawlog resolve --job %s --task ID --done|--redo --reason ...)",
                len(waiting),
                ", ".join(waiting),
                self.job,
            )
        return left - len(waiting)

    async def _check_store(self) -> None:
        """`StoreLost` if the store no longer holds the job this worker started on (flushed,
        or restored since: what this worker holds is void)."""
        if self.identity is not None:
            # A promotion is followed (`TaskQueue.follow_promotion`); a restore is not.
            await self.queue.follow_promotion()
            self._follow_epoch()
            self.identity = await check_identity(self.redis, self.keys, self.identity)

    def _follow_epoch(self) -> None:
        """The identity this worker checks the store against, in its queue's epoch."""
        if self.identity is not None and self.queue.epoch > self.identity.epoch:
            self.identity = msgspec.structs.replace(self.identity, epoch=self.queue.epoch)

    # --- background loops ----------------------------------------------------------------

    def _share_s(self, share: Fraction) -> float:
        """Seconds: that share of the lease time."""
        return float(self.config.lease_ms * share / 1000)

    async def _control_loop(self) -> None:
        while True:
            await anyio.sleep(CONTROL_POLL_S)
            await self._check_store()
            self.controls = await read_controls(self.redis, self.keys)
            # Due retries go back to their lanes: promptly, whatever the lease time.
            await self.queue.promote()

    async def _renew_loop(self) -> None:
        while True:
            await anyio.sleep(self._share_s(RENEW_SHARE))
            sent, held = time.monotonic(), list(self._leases.values())
            lost = await self.queue.renew_held(held)
            for lease in held:
                if lease.held_as not in lost and lease.held_as in self._leases:
                    self._fresh[lease.held_as] = sent
            for lane, entry_id in lost:
                if (lane, entry_id) not in self._leases:
                    continue  # the task ended while the renewal ran: its entry is acked
                # Another worker reclaimed it while we stalled: stop, the fenced scripts
                # would refuse anything this task still tries to write.
                log.warning("lease on %s lost; abandoning its task", entry_id)
                if scope := self._in_flight.get((lane, entry_id)):
                    scope.cancel()
            if self._backlog:
                # Leases waiting their turn (a restart's pending list) are ours too: left
                # to expire, other workers would move them, each move counted as a
                # recovery of a task that never ran.
                # (``_taken_back_at`` stays: a lease moved during a stall must still be
                # found lost by `hold_lease` before its page is fetched.)
                await self.queue.renew_idle(int(self.config.lease_ms * BACKLOG_RENEW_SHARE))

    async def _recovery_loop(self) -> None:
        # Once the take-back is done, then every `RECOVERY_SHARE` of the lease, or sooner:
        # when a lease is due to expire before that, right after it does. A dead worker's tasks
        # are back in a lane a pass (two round trips) after their leases expire, not up to
        # a period later. Not during the take-back: a pass reads every pending list of the
        # job (XPENDING ... IDLE over every entry), server time the take-back is waiting on.
        period = self._share_s(RECOVERY_SHARE)
        await self._resumed.wait()
        while True:
            soonest = await self._recover_expired(period)
            wait = period if soonest is None else min(period, soonest + RECOVER_MARGIN_S)
            await anyio.sleep(max(wait, RECOVER_MARGIN_S))

    async def _recover_expired(self, horizon_s: float) -> float | None:
        """Tasks whose holder stopped renewing: to the recovery lane, or aborted past the
        recovery limit, in one atomic step each (``TaskQueue.recover``). Returns the
        seconds until the next lease expires, if within ``horizon_s``."""
        expired, soonest = await self.queue.expired(RECOVER_BATCH, horizon_ms=int(horizon_s * 1000))
        moves = await self._with_evidence([self._recovery(lease) for lease in expired])
        for (_, _, task), moved in zip(moves, await self.queue.recover(moves), strict=True):
            if not moved:
                continue  # renewed by its owner, or another worker was quicker
            if task is None:
                self.stats.aborted += 1
            else:
                self.stats.reclaimed += 1
        return soonest

    def _recovery(self, lease: Lease) -> Recovery:
        return recovery_of(lease, self.name, self.config.recovery_limit)

    async def _with_evidence(self, moves: list[Recovery]) -> list[Recovery]:
        """The moves, each abort carrying the response its task's last worker kept."""
        aborted = [event.task_id for _, event, _ in moves if isinstance(event, TaskAborted)]
        kept = await self.queue.kept_evidence(aborted)
        return [
            (lease, msgspec.structs.replace(event, evidence=kept[event.task_id]), task)
            if isinstance(event, TaskAborted) and event.task_id in kept
            else (lease, event, task)
            for lease, event, task in moves
        ]

    async def _pending_loop(self) -> None:
        while True:
            await anyio.sleep(self._share_s(PENDING_REREAD_SHARE))
            # Entries of our own that no task runs: a lost XREADGROUP reply delivered them
            # to us without our knowing, or the resume found more than one batch.
            # A task that ends while the PEL is read is in the reply but no longer in
            # flight: without ``_ended`` it would run a second time (found by chaos.py).
            if not self._resumed.is_set():
                continue  # the resume is reading the pending list: every entry comes
            if self.stopping.is_set():
                continue  # handing back: an entry being released is in no list of ours
            # After the flush: a task ended while the store was down is pending until then.
            await self.queue.wait_up()
            queued = {lease.held_as for lease in self._backlog}
            self._ended.clear()
            for lease in await self.queue.pending(PENDING_BATCH):
                entry = lease.held_as
                ours = entry in self._in_flight or entry in queued or entry in self._ended
                if not ours:
                    self._backlog.append(lease)

    # --- one task ------------------------------------------------------------------------

    async def _run_task(self, lease: Lease, scope: anyio.CancelScope) -> None:
        try:
            with scope:
                await self.steps.crawl(lease)
        except LeaseLost as lost:
            log.warning("%s", lost)
        except UncertainAction as uncertain:
            log.warning("%s: task paused for a person to decide", uncertain)
        except StoreLost:
            self._store_lost = True
            raise
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True, deadline=self._released_by) as releasing:
                await self.release_lease(lease)
            if releasing.cancelled_caught:
                log.warning(
                    "could not give %s back in time: it stays leased until its lease expires",
                    lease.entry_id,
                )
            raise
        finally:
            if not self._store_lost:  # its step was written, or it fetched nothing
                self.steps.unsettled.pop(lease.task.task_id, None)
            held = lease.held_as
            self._in_flight.pop(held, None)
            self._leases.pop(held, None)
            self._fresh.pop(held, None)
            self._ended.add(held)
            self._capacity.set()
            self._capacity = anyio.Event()
            if (browser := self.downloader.browser) is not None:
                await browser.release_task()  # a page left open by a step cut short

    async def _hand_back(self) -> None:
        """Release the leases waiting in the backlog (a graceful stop), a few at a time."""
        # Without this, other workers get them only once they expire, each counted as a
        # recovery of a task that never ran.

        async def some() -> None:
            while self._backlog:
                await self.release_lease(self._backlog.popleft())

        async with anyio.create_task_group() as releasing:
            for _ in range(min(HAND_BACK_CONCURRENCY, len(self._backlog))):
                releasing.start_soon(some)

    async def release_lease(self, lease: Lease, pending: Sequence[AnyEvent] = ()) -> None:
        """Give a task back to the queue at once (a graceful stop)."""
        # A worker that stops has not used up an attempt: the task keeps the one it had.
        event = TaskReleased(
            actor=self.name,
            task_id=lease.task.task_id,
            attempt=lease.task.attempt,
            reason=WORKER_STOPPED,
        )
        try:
            await self.queue.requeue(lease, [*pending, event], lease.task, lease.lane)
        except (ServerCannotPersist, ServerOutOfMemory, JournalFull):
            # The worker stops with this error, said once; a line per task would bury it.
            # The lease stays and expires as after a kill: nothing is lost.
            pass
        except StoreLost:
            self._store_lost = True  # said once too; the restore rebuilds the lease
        except LeaseLost as exc:
            # Nothing to give back: a step written just before the stop cut off its reply
            # ended the task, or another worker recovered it. Either way it is not lost.
            log.info("%s was no longer ours to release: %s", lease.entry_id, exc)
        except CrawlogError as exc:
            log.warning("could not release %s: %s", lease.entry_id, exc)

    async def hold_lease(self, lease: Lease) -> None:
        """Renew the lease if the server may have seen it idle long enough to let another
        worker take it; LeaseLost if one did."""
        if self._known_fresh(lease):
            return
        if self.offline.down:
            log.info("lease %s not known fresh: waiting for the store", lease.entry_id)
        now = time.monotonic()
        if lease.entry_id in await self.queue.renew([lease]):
            raise LeaseLost(lease.entry_id, self.name, None)
        self._fresh[lease.held_as] = now

    def _known_fresh(self, lease: Lease) -> bool:
        """The server reset the lease's idle time recently enough that no worker can take
        it over yet (by this worker's clock, which a stalled server's idle times follow)."""
        # A lease with no time of its own and its resume point (``resume`` not None) is a
        # taken-back one: a claimed lease has its claim's time, from the moment it starts.
        default = self._taken_back_at if lease.resume is not None else 0.0
        fresh = self._fresh.get(lease.held_as, default)
        return time.monotonic() - fresh < self._fresh_for_s


async def enqueue_seeds(
    queue: TaskQueue, seeds: list[str], *, actor: str, max_pages: int = 0
) -> int:
    """Enqueue the seed URLs (idempotent: a seed already seen is not enqueued again)."""
    new, _ = await enqueue_seeds_within(queue, seeds, actor=actor, max_pages=max_pages)
    return new


async def enqueue_seeds_within(
    queue: TaskQueue, seeds: list[str], *, actor: str, max_pages: int = 0
) -> tuple[int, int]:
    """`enqueue_seeds`: how many were new, and how many ``max_pages`` refused."""
    tasks = [
        Task(task_id=fingerprint(url), url=url, site=site_of(url), priority=1) for url in seeds
    ]
    new, past = await queue.enqueue_within(tasks, actor=actor, cap=max_pages)
    return sum(new), past
