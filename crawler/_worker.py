"""The worker: leases tasks, fetches their pages, and records progress in the log.

One process, one anyio task group, one HTTP client. Per task: resume from the last
checkpoint (or start at page 1), and for every page fetch it (politely), let the spider
parse it, enqueue the links it found, then append the page's events together with a
checkpoint (or, for the last page, the terminal event) in one fenced step. Links are
enqueued *before* that step: a crash in between refetches the page and enqueues the same
links again (they are deduplicated), whereas the other order could lose them.

Beside the tasks run four loops: lease renewal, recovery (moving others' expired leases to
the recovery lane), re-reading this worker's own pending list, and the control poll
(pauses, open circuits, due retries).
"""

from __future__ import annotations

import gc
import logging
import math
import random
import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import AsyncExitStack, contextmanager, suppress
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

import anyio
import msgspec
import redis.asyncio as aioredis
from anyio.abc import TaskGroup
from yarl import URL

from crawler._addresses import ERROR_REFUSED_ADDRESS_PREFIX
from crawler._circuit import SiteCircuits, verdict_of
from crawler._defaults import DEFAULT_CONCURRENCY, DEFAULT_GRACE_S, PAST_MAX_PAGES
from crawler._fair_claims import LEASES_PER_PLACE, ClaimPause, busy_sites, first_of
from crawler._fetch_spec import (
    ERROR_INVALID_REDIRECT,
    ERROR_INVALID_URL,
    ERROR_REDIRECT_LOOP,
    ERROR_REDIRECT_OUT_OF_SCOPE,
    ERROR_TOO_LARGE_PREFIX,
    ERROR_TOO_MANY_REDIRECTS,
    NO_RESPONSE,
    FetchConfig,
    FetchResult,
)
from crawler._job import JobConfig
from crawler._middlewares import Dropped as DroppedByHook
from crawler._middlewares import DropRequest, OutgoingRequest, middlewares_of
from crawler._pipelines import Dropped as DroppedItem
from crawler._pipelines import is_item, pipeline_of
from crawler._politeness import PolitenessGate
from crawler._recovery import Recovery, aborted_for_recoveries, past_recovery_limit, recovery_of
from crawler._recrawl import (
    UNCHANGED,
    change_of,
    conditional_headers,
    fetched_validators,
    run_fingerprint,
)
from crawler._robots import (
    RobotsCache,
    RobotsRules,
    RobotsVerdict,
    parse_robots,
    robots_lifetime,
)
from crawler._spider import (
    Item,
    NextPage,
    Response,
    SiteSpider,
    Spider,
    SpiderOutputError,
    accepted_types,
    check_callback,
    check_output,
    parses,
    spider_outputs,
)
from crawler._urls import (
    Dropped,
    ResolvedUrls,
    fingerprint,
    request_fingerprint,
    site_of,
)
from eventlog import (
    CONTROL_POLL_S,
    DEFAULT_DURABILITY,
    DEFAULT_NAME_TTL_MS,
    FIRST_RUN,
    WORKER_STOPPED,
    ActionDone,
    ActionIntended,
    AnyEvent,
    CheckpointSaved,
    CircuitClosed,
    CircuitOpened,
    Controls,
    CookieStore,
    Counts,
    CrawlogError,
    Cursor,
    Durability,
    Evidence,
    ItemScraped,
    JobIdentity,
    Journal,
    Lease,
    LeaseLost,
    PageFetched,
    QueueObserver,
    RetryScheduled,
    RobotsFile,
    ServerCannotPersist,
    ServerOutOfMemory,
    SharedRobots,
    StoreLost,
    Task,
    TaskAborted,
    TaskClaimed,
    TaskDone,
    TaskFailed,
    TaskParked,
    TaskPaused,
    TaskQueue,
    TaskReleased,
    check_identity,
    hold_worker_name,
    read_controls,
    write_atomic,
)

if TYPE_CHECKING:
    from crawler._fetch import Fetcher

log = logging.getLogger("crawlog.worker")

IDLE_BLOCK_MS = 500
PENDING_BATCH = 10_000
RECOVER_BATCH = 256
"""Expired leases moved per recovery pass: two dead workers' worth, and more, in one."""
HAND_BACK_CONCURRENCY = 16
"""Backlog leases released at once on a graceful stop (one fenced script each)."""
EVIDENCE_KEPT_MIN_S = 3600.0
"""How long at least a recovered task's last response is kept for its abort: past the
leases of all its recoveries, and the waits in the recovery lane between them."""
RECOVER_MARGIN_S = 0.02
"""Looked for this long after a lease is due to expire (and never sooner after a pass)."""
SPIDER_ERROR_MAX = 300
"""Characters of a spider's exception kept as a failed task's reason."""
SEEN_CACHE_SIZE = 200_000
"""Fingerprints this worker already sent to Redis: most links of a site are seen ones."""
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
PERMANENT_ERRORS = frozenset(
    {
        ERROR_INVALID_URL,
        ERROR_INVALID_REDIRECT,
        ERROR_REDIRECT_LOOP,
        ERROR_TOO_MANY_REDIRECTS,
        ERROR_REDIRECT_OUT_OF_SCOPE,
    }
)


StepEvents: TypeAlias = list[AnyEvent]
"""The events of a task's current step (its claim, the page fetched, its items...), not
written yet: they go to the log with the step's fenced write (a checkpoint, the end of the
task, a requeue, a delay or a park), all or none."""
TerminalEvent: TypeAlias = TaskDone | TaskFailed | TaskAborted
"""How a task ends (`Worker._end`)."""


class UncertainAction(CrawlogError):
    """An action's intent is in the log but not its completion: it may have run."""


class _Parsed(msgspec.Struct, kw_only=True):
    """What a page's outputs come to: its items, its new tasks, its next page (resolved),
    and the URLs dropped, by reason."""

    items: list[Item] = msgspec.field(default_factory=list)
    fresh: dict[str, Task] = msgspec.field(default_factory=dict)
    """New tasks by fingerprint: in scope and depth, and not in this worker's seen cache."""
    next_page: NextPage | None = None
    dropped: dict[str, int] = msgspec.field(default_factory=dict)
    items_dropped: dict[str, int] = msgspec.field(default_factory=dict)
    """Items the spider's pipelines dropped, by reason."""


class WorkerStats(msgspec.Struct, kw_only=True):
    """What one worker did."""

    pages: int = 0
    tasks_done: int = 0
    tasks_failed: int = 0
    retries: int = 0
    reclaimed: int = 0
    aborted: int = 0
    enqueued: int = 0


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


class Worker:
    """One worker process's crawl of a job.

    ``redis``: the client of the job's server; ``job``: its name; ``name``: this worker's,
    unique among the job's live workers (held for the run, `hold_worker_name`), its
    consumer name in the queue; ``config``: the job's settings (lease time, politeness,
    scope, retries, recovery limit); ``spider``: what parses the pages.

    ``data_dir``: where the projector archives the log (a trimmed checkpoint is read from
    there); ``concurrency``: tasks run at once; ``fetch_config``: the HTTP client's settings
    (default: the job's, `JobConfig.fetch_config`); ``exit_when_done``: return once every
    task of the job has ended, rather than waiting for more; ``grace_s``: how long a
    graceful stop (`stop`) may take in all; ``queue``: the queue to work through, for
    ``name`` and ``config`` (`worker_queue`, e.g. with an observer); by default one
    without an observer.
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
        concurrency: int = DEFAULT_CONCURRENCY,
        fetch_config: FetchConfig | None = None,
        exit_when_done: bool = False,
        grace_s: float = DEFAULT_GRACE_S,
        queue: TaskQueue | None = None,
    ) -> None:
        self.redis, self.job, self.name = redis, job, name
        self.config, self.spider = config, spider
        self.data_dir = data_dir
        """Where the projector archives the log: a trimmed checkpoint is read from there."""
        self.concurrency = concurrency
        self.exit_when_done = exit_when_done
        self._unsettled: dict[str, str] = {}
        """Task id -> this worker, for the tasks that sent a request whose step is not
        written yet: saved if the store loses the job (`save_in_flight_at_loss`)."""
        self._store_lost = False
        self.identity: JobIdentity | None = None
        """The job's identity in the store when this worker started (None: a job begun
        before identities), checked as the control flags are polled."""
        self.grace_s = grace_s
        if queue is None:
            queue = worker_queue(redis, job, name, config)
        elif (queue.keys.job, queue.consumer, queue.lease_ms) != (job, name, config.lease_ms):
            raise ValueError(
                f"the queue is {queue.consumer!r}'s of job {queue.keys.job!r} with a lease of "
                f"{queue.lease_ms} ms, not {name!r}'s of {job!r} with {config.lease_ms} ms"
            )
        self._queue = queue
        self.keys = queue.keys
        self.gate = PolitenessGate(redis, self.keys, config.politeness, holder=name)
        self.scope = config.scope_rule()
        self._rules = config.rules()
        self._accepted = accepted_types(spider)
        self._callbacks: set[str] = set()
        """Callback names a Follow named that `check_callback` found good on this spider."""
        # None without steps: the check per output is then one comparison.
        self._pipeline = pipeline_of(spider) or None
        self._middlewares = middlewares_of(spider)
        self._bulk_links = isinstance(spider, SiteSpider) and type(spider).parse is SiteSpider.parse
        """The spider's ``parse`` is the default spider's: its page's item and links are
        taken in bulk (`SiteSpider.page_outputs`), with no `Follow` per link."""
        self.policy = config.retry_policy()
        self.circuits = SiteCircuits(config.breaker())
        self.robots = RobotsCache()
        self.shared_robots = SharedRobots(redis, self.keys, name)
        self.controls = Controls()
        self.stats = WorkerStats()
        self.stopping = anyio.Event()
        self._fetch_config = fetch_config or config.fetch_config()
        self._fresh_for_s = self._share_s(FRESH_SHARE)
        """How long a lease is taken to be safe from takeover since its idle time was reset."""
        self._fetcher: Fetcher | None = None
        self._rng = random.Random()
        self._in_flight: dict[str, anyio.CancelScope] = {}
        self._leases: dict[str, Lease] = {}
        self._fresh: dict[str, float] = {}
        """When (monotonic) each lease of ours last had its idle time reset, at the latest:
        taken just before the claim or renewal that did it."""
        self._taken_back_at = 0.0
        """The same for every taken-back lease not renewed since (one time for all of them
        rather than 100,000 entries in ``_fresh``)."""
        self._capacity = anyio.Event()
        self._claim_pause = ClaimPause()
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._resolved = ResolvedUrls()
        self._backlog: deque[Lease] = deque()
        """Leases of ours waiting for capacity (a restart's pending list, lost replies)."""
        self._robots_locks: dict[str, anyio.Lock] = {}
        self._ended: set[str] = set()
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
        """Once stopping: when a task being given back stops trying (the server may be
        unreachable; its lease then expires, as after a kill)."""

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
            if self._unsettled and _is_store_lost(exc):
                # The pages these tasks fetched are in no log now: the restore counts them
                # as refetched when they come again.
                save_in_flight_at_loss(self.data_dir, self.job, self.name, self._unsettled)
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
            AsyncExitStack() as closing,  # the fetcher, once open: closed after every task
            anyio.create_task_group() as background,
        ):
            # Before the groups are made: made again in a store that lost the job, they
            # would hide the loss, and the job would be taken for a new one.
            self.identity = await _store_identity(self.redis, self.data_dir, self.job)
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
                self._fresh[lease.entry_id] = sent
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
        ``exit_when_done``, this worker's last task in flight ended meanwhile and left the
        job done: it exits then, not when the blocking read gives up (every crawl waits for
        its workers to exit before its summary)."""
        if not (self.exit_when_done and self._in_flight):
            return await self.queue.claim(free, block_ms=IDLE_BLOCK_MS)
        claimed: list[Lease] | None = None
        async with anyio.create_task_group() as racing:

            async def claim() -> None:
                nonlocal claimed
                claimed = await self.queue.claim(free, block_ms=IDLE_BLOCK_MS)
                racing.cancel_scope.cancel()

            async def until_done() -> None:
                while self._in_flight:
                    await self._capacity.wait()
                # A done job has nothing left to claim: the read cut short could not have
                # been handed an entry (one added meanwhile stays in this worker's pending
                # list, taken back as any lease of a worker that stopped).
                if await self._done():
                    racing.cancel_scope.cancel()

            racing.start_soon(claim)
            racing.start_soon(until_done)
        return claimed

    async def _open_fetcher(self, closing: AsyncExitStack) -> None:
        """Open the fetcher, its HTTP stack imported and its TLS context built in a thread."""
        # Importing aiohttp and httpx and reading the CA bundle are a large part of a
        # worker's start; in a thread, they overlap the take-back of a restart's pending list, which
        # mostly waits for the server (the CA bundle is read without the GIL).
        # Cookies only for a job that asked for them: by default nothing is kept or sent.
        store = CookieStore(self.redis, self.keys) if self.config.cookies else None
        fetcher = await anyio.to_thread.run_sync(_new_fetcher, self._fetch_config, store)
        self._fetcher = await closing.enter_async_context(fetcher)
        self._fetcher_open.set()

    async def _resume(self) -> None:
        """Take back this worker's own pending list into the backlog, with every task's
        resume point (`TaskQueue.take_back_all`)."""
        started = time.monotonic()
        with _collector_paused():
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
        if lease.entry_id in self._in_flight:
            return
        scope = anyio.CancelScope()
        self._in_flight[lease.entry_id] = scope
        self._leases[lease.entry_id] = lease
        tasks.start_soon(self._run_task, lease, scope)

    async def _done(self) -> bool:
        """Every task of the job is terminal (none queued, leased or waiting for a retry),
        or waits for a person to decide about an uncertain action (``crawlog resolve``)."""
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
        return left == len(waiting)

    async def _check_store(self) -> None:
        """`StoreLost` if the store no longer holds the job this worker started on (flushed,
        or restored since: what this worker holds is void)."""
        if self.identity is not None:
            await check_identity(self.redis, self.keys, self.identity)

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
            lost = await self.queue.renew(held)
            for lease in held:
                if lease.entry_id not in lost and lease.entry_id in self._leases:
                    self._fresh[lease.entry_id] = sent
            for entry_id in lost:
                if entry_id not in self._leases:
                    continue  # the task ended while the renewal ran: its entry is acked
                # Another worker reclaimed it while we stalled: stop, the fenced scripts
                # would refuse anything this task still tries to write.
                log.warning("lease on %s lost; abandoning its task", entry_id)
                if scope := self._in_flight.get(entry_id):
                    scope.cancel()
            if self._backlog:
                # Leases waiting their turn (a restart's pending list) are ours too: left
                # to expire, other workers would move them, each move counted as a
                # recovery of a task that never ran.
                # (``_taken_back_at`` stays: a lease moved during a stall must still be
                # found lost by `_hold` before its page is fetched.)
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

    @property
    def _evidence_ttl_ms(self) -> int:
        leases = self.config.lease_ms * (self.config.recovery_limit + 2)
        return max(int(EVIDENCE_KEPT_MIN_S * 1000), leases)

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
            queued = {lease.entry_id for lease in self._backlog}
            self._ended.clear()
            for lease in await self.queue.pending(PENDING_BATCH):
                entry = lease.entry_id
                ours = entry in self._in_flight or entry in queued or entry in self._ended
                if not ours:
                    self._backlog.append(lease)

    async def _aborted(self, lease: Lease, owners: tuple[str, ...]) -> TaskAborted:
        aborted = aborted_for_recoveries(lease, self.name, self.config.recovery_limit, owners)
        kept = await self.queue.kept_evidence([aborted.task_id])
        if aborted.task_id in kept:
            return msgspec.structs.replace(aborted, evidence=kept[aborted.task_id])
        return aborted

    # --- one task ------------------------------------------------------------------------

    async def _run_task(self, lease: Lease, scope: anyio.CancelScope) -> None:
        try:
            with scope:
                await self._crawl_task(lease)
        except LeaseLost as lost:
            log.warning("%s", lost)
        except UncertainAction as uncertain:
            log.warning("%s: task paused for a person to decide", uncertain)
        except StoreLost:
            self._store_lost = True
            raise
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True, deadline=self._released_by) as releasing:
                await self._release(lease)
            if releasing.cancelled_caught:
                log.warning(
                    "could not give %s back in time: it stays leased until its lease expires",
                    lease.entry_id,
                )
            raise
        finally:
            if not self._store_lost:  # its step was written, or it fetched nothing
                self._unsettled.pop(lease.task.task_id, None)
            self._in_flight.pop(lease.entry_id, None)
            self._leases.pop(lease.entry_id, None)
            self._fresh.pop(lease.entry_id, None)
            self._ended.add(lease.entry_id)
            self._capacity.set()
            self._capacity = anyio.Event()

    async def _hand_back(self) -> None:
        """Release the leases waiting in the backlog (a graceful stop), a few at a time."""
        # Without this, other workers get them only once they expire, each counted as a
        # recovery of a task that never ran.

        async def some() -> None:
            while self._backlog:
                await self._release(self._backlog.popleft())

        async with anyio.create_task_group() as releasing:
            for _ in range(min(HAND_BACK_CONCURRENCY, len(self._backlog))):
                releasing.start_soon(some)

    async def _release(self, lease: Lease, pending: Sequence[AnyEvent] = ()) -> None:
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
        except (ServerCannotPersist, ServerOutOfMemory):
            # The worker stops with this error, said once; a line per task would bury it.
            # The lease stays and expires as after a kill: nothing is lost.
            pass
        except StoreLost:
            self._store_lost = True  # said once too; the restore rebuilds the lease
        except (LeaseLost, CrawlogError) as exc:
            log.warning("could not release %s: %s", lease.entry_id, exc)

    async def _crawl_task(self, lease: Lease) -> None:
        task = lease.task
        if past_recovery_limit(lease, self.config.recovery_limit):
            await self._end(lease, await self._aborted(lease, (*task.owners, self.name)))
            return
        claimed = TaskClaimed(
            actor=self.name,
            task_id=task.task_id,
            attempt=task.attempt,
            deliveries=lease.deliveries,
        )
        pending: StepEvents = [claimed]  # written with the first page's step
        last = await self._last_checkpoint(lease)
        resume = last.cursor if last else None
        counts = last.counts if last else Counts()
        page = resume.page + 1 if resume else 1
        url = resume.url if resume and resume.url else task.url
        while True:
            if self.stopping.is_set():
                # Stopping: what was checkpointed is kept; hand the rest over at once.
                await self._release(lease, pending)
                return
            if await self._held_back(lease, pending):
                return
            # Only the task's own request has its method and body: a next page is a GET.
            result = await self._fetch(url, lease, first=page == 1)
            if result is None:  # robots.txt says no
                await self._end(lease, self._task_failed(task, "disallowed by robots.txt"), pending)
                return
            if isinstance(result, DroppedByHook):  # a spider's request hook said no
                await self._end(lease, self._task_failed(task, result.reason), pending)
                return
            fetched: PageFetched | None = None
            fetched_at = len(pending)
            if result.requested:
                # A page is counted only when it was asked for: the retry that follows an
                # unreadable robots.txt says why the task waits (its reason), not a fetch.
                self.stats.pages += 1
                seen = fetched_validators(task, result.status, result.headers, result.body)
                change = change_of(task, result.status, seen.body_hash)
                fetched = PageFetched(
                    actor=self.name,
                    task_id=task.task_id,
                    attempt=task.attempt,
                    url=result.final_url or url,
                    status=result.status,
                    bytes=len(result.body),
                    elapsed_ms=result.elapsed_ms,
                    page=page,
                    error=result.error,
                    etag=seen.etag,
                    last_modified=seen.last_modified,
                    body_hash=seen.body_hash,
                    run=task.run,
                    change=change if page == 1 else None,
                )
                pending.append(fetched)
            if await self._retry_or_fail(lease, result, pending):
                return
            if result.handed_over:
                reason = f"redirect to {result.location}, fetched by its own task"
                await self._end(lease, self._task_done(task, reason, counts), pending)
                return
            if fetched is not None and fetched.change == "unchanged":
                # A revisit that found the page as it was: not parsed, its items stay.
                counts = Counts(pages=counts.pages + 1, items=counts.items, bytes=counts.bytes)
                await self._end(lease, self._task_done(task, UNCHANGED, counts), pending)
                return
            if lease.recoveries and (evidence := evidence_of(result)) is not None:
                # Its workers died with this task before: if this one does too, its abort
                # comes from a worker that never saw the page, and carries this instead.
                await self.queue.keep_evidence(task.task_id, evidence, self._evidence_ttl_ms)
            try:
                parsed = await self._parse(lease, result, page, last)
            except (LeaseLost, UncertainAction):
                raise
            except DropRequest as drop:  # a spider's response hook said no
                await self._end(lease, self._task_failed(task, str(drop), result), pending)
                return
            except Exception as exc:
                # A bug in the spider (or output crawlog cannot take): the same page would
                # fail the same way on every retry, and crashing the worker would redeliver
                # it until the recovery limit. The task fails with the error; ``crawlog
                # retry`` once the spider is fixed.
                reason = self._spider_failure(exc, url)
                await self._end(lease, self._task_failed(task, reason, result), pending)
                return
            await self._admit(parsed)
            if parsed.dropped and fetched is not None:
                pending[fetched_at] = msgspec.structs.replace(fetched, dropped=parsed.dropped)
            if parsed.items_dropped and fetched is not None:
                pending[fetched_at] = msgspec.structs.replace(
                    pending[fetched_at], items_dropped=parsed.items_dropped
                )
            items = parsed.items
            pending += [
                ItemScraped(actor=self.name, task_id=task.task_id, key=i.key, data=i.data)
                for i in items
            ]
            counts = Counts(
                pages=counts.pages + 1,
                items=counts.items + len(items),
                bytes=counts.bytes + len(result.body),
            )
            if (nxt := parsed.next_page) is not None:
                cursor = Cursor(
                    page=page,
                    url=nxt.url,
                    last_item_key=items[-1].key if items else None,
                    state=nxt.cursor,
                    data=nxt.data,
                )
                saved = CheckpointSaved(
                    actor=self.name,
                    task_id=task.task_id,
                    attempt=task.attempt,
                    cursor=cursor,
                    counts=counts,
                    meta=nxt.meta,
                    cb_kwargs=nxt.cb_kwargs,
                )
                await self.queue.checkpoint(lease, saved, before=pending)
                self._unsettled.pop(task.task_id, None)  # its page is in the log now
                pending, page, url, resume, last = [], page + 1, nxt.url, cursor, saved
                continue
            await self._end(lease, self._task_done(task, f"HTTP {result.status}", counts), pending)
            return

    async def _end(
        self, lease: Lease, event: TerminalEvent, pending: Sequence[AnyEvent] = ()
    ) -> None:
        """End the task: its terminal event, after the events of its last step, written
        and its entry acked in one fenced step; then counted in `stats`."""
        await self.queue.finish(lease, event, before=pending)
        if isinstance(event, TaskDone):
            self.stats.tasks_done += 1
        elif isinstance(event, TaskFailed):
            self.stats.tasks_failed += 1
        else:
            self.stats.aborted += 1

    def _task_done(self, task: Task, reason: str, counts: Counts) -> TaskDone:
        return TaskDone(
            actor=self.name,
            task_id=task.task_id,
            attempt=task.attempt,
            reason=reason,
            counts=counts,
        )

    def _task_failed(
        self, task: Task, reason: str, result: FetchResult | None = None
    ) -> TaskFailed:
        """The task's failure, with the evidence of ``result``, the response it failed on
        (the only one of the task this worker still has: each page's replaces the last)."""
        return TaskFailed(
            actor=self.name,
            task_id=task.task_id,
            attempt=task.attempt,
            reason=reason,
            evidence=None if result is None else evidence_of(result),
        )

    def _spider_failure(self, exc: Exception, url: str) -> str:
        """The reason a task fails with when its spider raised ``exc`` on ``url`` (logged)."""
        if isinstance(exc, SpiderOutputError):
            log.error("%s", exc)
            reason = f"spider output: {exc}"
        else:
            log.exception("spider %s failed on %s", self.spider.name, url)
            reason = f"spider error: {type(exc).__name__}: {exc}"
        return reason[:SPIDER_ERROR_MAX]

    async def _last_checkpoint(self, lease: Lease) -> CheckpointSaved | None:
        """The task's last checkpoint, if it has one: taken back with the lease on a
        restart, else read by its stream ID from Redis, or from the archive when it was
        trimmed (the projector archives before trimming)."""
        found = await self.queue.resume_point(lease)
        if found is None:
            return None
        stream_id, event = found
        if event is None:
            # Imported here: the archive (pyarrow) is needed only for a trimmed checkpoint,
            # and a restarted worker's first fetch waits for its imports.
            from projector import Store, find_archived

            store = Store(self.data_dir, self.job)
            event = await anyio.to_thread.run_sync(find_archived, store, stream_id)
        return event if isinstance(event, CheckpointSaved) else None

    async def _held_back(self, lease: Lease, pending: StepEvents) -> bool:
        """Park, requeue or delay the task if a pause or an open circuit says so."""
        task = lease.task
        site = task.site
        if (why := self.controls.blocks(site, task.task_id)) is not None:
            # The task waits for a pause that is not its own: said in the log, or the fold
            # would go on showing it running, held by nobody.
            parked = TaskParked(actor=self.name, task_id=task.task_id, reason=why)
            if why == "job paused":
                await self.queue.requeue(lease, [*pending, parked], task, lease.lane)
                return True
            if why == "site paused":
                events = [*pending, parked]
            else:
                # Paused by an operator, so paused in the fold already: a claim would be
                # refused there (an anomaly for no fault), and the task never ran.
                events = [e for e in pending if not isinstance(e, TaskClaimed)]
            if await self.queue.park(lease, events):
                return True
            # Resumed a moment ago (this worker's flags are up to half a second old).
        now = time.time()
        until = self.controls.open_circuits.get(site, 0.0)
        if until > now or not self.circuits.allow(site, now):
            wait = max(until - now, self.circuits.breaker.cooldown / 2)
            await self.queue.delay(lease, pending, task, wait)
            return True
        return False

    async def _fetch(
        self, url: str, lease: Lease, *, first: bool
    ) -> FetchResult | DroppedByHook | None:
        """The page at ``url`` (None if robots.txt disallows it, `DroppedByHook` if the
        spider's request hooks do), fetched politely, while the lease is still ours
        (LeaseLost if not): with the task's headers, and for its ``first`` page its method
        and body, as the spider's request hooks leave them."""
        assert self._fetcher is not None
        site = site_of(url)
        if self.config.obey_robots:
            rules = await self._robots_for(site)
            if rules.verdict is RobotsVerdict.UNREACHABLE:
                # RFC 9309: nothing is fetched meanwhile, but this is no "disallowed": the
                # task is retried once the brief verdict has expired and robots.txt is asked again.
                wait = {"retry-after": str(math.ceil(self.robots.unreachable_ttl))}
                error = f"robots.txt unreachable: {rules.reason}"
                return FetchResult(
                    url=url, final_url=url, headers=wait, error=error, requested=False
                )
            if not rules.allowed(url):
                return None
        spec = lease.task.spec
        headers = None if spec is None else spec.headers
        if first and lease.task.revisit is not None:
            headers = {**(headers or {}), **conditional_headers(lease.task.revisit)}
        method = spec.method if spec is not None and first else "GET"
        body = spec.body if spec is not None and first else None
        if self._middlewares.requests:
            outgoing = await self._middlewares.request(
                OutgoingRequest(
                    url=url, method=method, headers=headers, body=body, task_id=lease.task.task_id
                )
            )
            if isinstance(outgoing, DroppedByHook):
                return outgoing
            method, headers, body = outgoing.method, outgoing.headers, outgoing.body
        host = site.split("://", 1)[1]
        async with self.gate.slot(host):
            # Checked last thing before the request, after any politeness wait: a worker
            # SIGSTOPped past its lease ran the tasks of a claim whose reply came in after
            # SIGCONT, refetching pages others had taken over (chaos.py, seed 2).
            await self._hold(lease)
            result = await self._fetcher.fetch(
                url,
                redirect_allowed=self._in_scope,
                claim_target=self._claimer(lease.task.task_id, lease.task.run),
                method=method,
                body=body,
                headers=headers,
            )
        if result.requested:
            self._unsettled[lease.task.task_id] = self.name
        # After the slot is done with: the next request to the host need not wait for this.
        await self.gate.observe(host, result.elapsed_ms, result.status)
        return result

    async def _hold(self, lease: Lease) -> None:
        """Renew the lease if the server may have seen it idle long enough to let another
        worker take it; LeaseLost if one did."""
        now = time.monotonic()
        # A lease with no time of its own and its resume point (``resume`` not None) is a
        # taken-back one: a claimed lease has its claim's time, from the moment it starts.
        default = self._taken_back_at if lease.resume is not None else 0.0
        fresh = self._fresh.get(lease.entry_id, default)
        if now - fresh < self._fresh_for_s:
            return
        if lease.entry_id in await self.queue.renew([lease]):
            raise LeaseLost(lease.entry_id, self.name, None)
        self._fresh[lease.entry_id] = now

    def _in_scope(self, url: str) -> bool:
        return self.scope.allows(url, 0)

    def _claimer(self, task_id: str, run: int = FIRST_RUN) -> Callable[[str], Awaitable[bool]]:
        """Whether the task may follow a redirect to a URL: not if a task of its own
        fetches it (enqueued, or reached by another redirect first). Without this, a page
        linked both directly and through a redirect is fetched twice."""

        async def claim(url: str) -> bool:
            fp = run_fingerprint(fingerprint(url), run)
            if fp == task_id:
                return True  # the same URL in another spelling: the task's own page
            if fp in self._seen:
                return False
            return await self.queue.claim_url(fp, task_id)

        return claim

    async def _robots_for(self, site: str) -> RobotsRules:
        now = time.time()
        if (rules := self.robots.get(site, now)) is not None:
            return rules
        lock = self._robots_locks.setdefault(site, anyio.Lock())
        async with lock:
            if (rules := self.robots.get(site, time.time())) is not None:
                return rules
            stored = await self.shared_robots.fetch_once(site, lambda: self._fetch_robots(site))
            body = stored.body if not stored.error else None
            # Matched against the job's own user agent: the group for what the crawl says it is.
            agent = self._fetch_config.user_agent
            rules = parse_robots(body, stored.status, user_agent=agent, error=stored.error)
            self.robots.put(site, rules, time.time(), expires=stored.expires_at)
            if (delay := rules.crawl_delay()) is not None:
                await self.gate.set_delay(site.split("://", 1)[1], delay)
            return rules

    async def _fetch_robots(self, site: str) -> RobotsFile:
        """``site``'s robots.txt as the job keeps it: fetched by this worker for all of them."""
        assert self._fetcher is not None
        result = await self._fetcher.fetch_robots(site)
        body = result.body if not result.error else b""
        rules = parse_robots(body, result.status, error=result.error)
        lifetime = robots_lifetime(rules, result.headers, unreachable_s=self.robots.unreachable_ttl)
        return RobotsFile(
            status=result.status, body=body, error=result.error, expires_at=time.time() + lifetime
        )

    async def _retry_or_fail(self, lease: Lease, result: FetchResult, pending: StepEvents) -> bool:
        """Handle a failed fetch: retry later, or fail the task. False if the page is good."""
        task = lease.task
        site = task.site
        now = time.time()
        verdict = verdict_of(
            result.status, error=result.error is not None, permanent=_permanent(result)
        )
        if verdict == "success" and self.circuits.record_success(site, now):
            log.info("circuit of %s closed", site)
            # The event clears the shared flag too: without it the state (and report)
            # showed the circuit open for the rest of the job.
            closed = CircuitClosed(actor=self.name, site=site, reason="the site answered")
            await self.queue.control(closed)
        if result.error is None and result.status < 400:
            return False
        if verdict == "failure" and self.circuits.record_failure(site, now):
            event = CircuitOpened(
                actor=self.name,
                site=site,
                reason=result.error or f"HTTP {result.status}",
                failures=self.circuits.breaker.failures_to_open,
                cooldown_s=self.circuits.breaker.cooldown,
            )
            await self.queue.control(event)
        reason = result.error or f"HTTP {result.status}"
        delay = (
            None
            if _permanent(result)
            else self.policy.next_delay(
                task.attempt, result.status or None, result.retry_after, now, self._rng
            )
        )
        if delay is None:
            await self._end(lease, self._task_failed(task, reason, result), pending)
            return True
        retry = RetryScheduled(
            actor=self.name,
            task_id=task.task_id,
            attempt=task.attempt,
            delay_s=delay,
            reason=reason,
        )
        again = msgspec.structs.replace(task, attempt=task.attempt + 1)
        await self.queue.delay(lease, [*pending, retry], again, delay)
        self.stats.retries += 1
        return True

    async def _parse(
        self, lease: Lease, result: FetchResult, page: int, last: CheckpointSaved | None
    ) -> _Parsed:
        """Let the spider parse the page (if it takes its content type), each output checked
        as it is yielded, its URLs resolved against the page and kept if in scope and depth.

        Raises whatever the spider raises, and SpiderOutputError for an output crawlog
        cannot take: either fails the task, never the worker."""
        task = lease.task
        spec = task.spec
        resume = last.cursor if last is not None else None
        data = None if spec is None else spec.data
        if resume is not None and resume.data is not None:
            data = resume.data  # a NextPage's own, from the checkpoint it left
        response = Response(
            url=result.final_url or task.url,
            status=result.status,
            headers=result.headers,
            body=result.body,
            elapsed_ms=result.elapsed_ms,
            task_id=task.task_id,
            depth=task.depth,
            page=page,
            resume=resume,
            data=data,
            once=self._once_for(lease),
            link_rules=self._rules,
            spec=spec,
            task_url=task.url,
            meta=last.meta if last is not None else None,
            cb_kwargs=last.cb_kwargs if last is not None else None,
        )
        parsed = _Parsed()
        if result.error is None and self._middlewares.responses:
            hooked = await self._middlewares.response(response)
            if isinstance(hooked, DroppedByHook):
                raise DropRequest(hooked.reason)  # the task fails with it
            response = hooked
        if result.error is not None or not parses(self._accepted, response.content_type):
            return parsed
        name, page_url, depth = self.spider.name, response.url, task.depth + 1
        dropped: dict[str, int] = {}
        fresh = parsed.fresh

        def base() -> URL:
            return response.base_url

        callback = None if spec is None else spec.callback
        links: list[str] = []
        outputs: AsyncIterator[tuple[int, Any]]
        if callback is None and self._bulk_links:
            assert isinstance(self.spider, SiteSpider)
            item, links = self.spider.page_outputs(response)
            outputs = _numbered(item)
        else:
            outputs = spider_outputs(self.spider, response, callback)
        async for index, yielded in outputs:
            if self._pipeline is not None and is_item(yielded):
                # Before the check: a step may make loggable what the spider yielded.
                yielded = await self._pipeline.run(yielded, response)
                if isinstance(yielded, DroppedItem):
                    drop = yielded.reason
                    parsed.items_dropped[drop] = parsed.items_dropped.get(drop, 0) + 1
                    continue
            output = check_output(yielded, spider=name, url=page_url, index=index)
            if isinstance(output, Item):
                parsed.items.append(output)
                continue
            known = self._resolved.resolve(output.url, base)
            if isinstance(known, Dropped):
                dropped[known.reason] = dropped.get(known.reason, 0) + 1
                continue
            resolved, plain_fp = known
            if isinstance(output, NextPage):
                # The same task's next page: its depth is the task's own.
                if (why := self.scope.refusal(resolved, task.depth)) is not None:
                    dropped[why] = dropped.get(why, 0) + 1
                else:
                    parsed.next_page = msgspec.structs.replace(output, url=resolved)
                continue
            # A plain GET for ``parse`` is passed through as yielded; any other Follow
            # comes back from the check as a new one, in the form its task carries.
            follow_spec = None if output is yielded else output.spec()
            if follow_spec is None:
                fp = plain_fp
            else:
                if (named := follow_spec.callback) is not None and named not in self._callbacks:
                    check_callback(self.spider, named)
                    self._callbacks.add(named)
                fp = request_fingerprint(resolved, follow_spec.method, follow_spec.body)
            fp = run_fingerprint(fp, task.run)
            if fp in self._seen or fp in fresh:
                continue  # enqueued already: not a drop, the crawl has it
            if (why := self.scope.refusal(resolved, depth)) is not None:
                dropped[why] = dropped.get(why, 0) + 1
                continue
            fresh[fp] = Task(
                task_id=fp,
                url=resolved,
                site=site_of(resolved),
                depth=depth,
                priority=output.priority,
                parent_task_id=task.task_id,
                spec=follow_spec,
                run=task.run,
            )
        # The default spider's links: what its Follows would come to, one plain GET each
        # (canonical already, so resolving is a lookup for all but a link's first time).
        resolve, seen, refusal, parent, run = (
            self._resolved.resolve,
            self._seen,
            self.scope.refusal,
            task.task_id,
            task.run,
        )
        for url in links:
            known = resolve(url, base)
            if isinstance(known, Dropped):
                dropped[known.reason] = dropped.get(known.reason, 0) + 1
                continue
            resolved, fp = known
            if run != FIRST_RUN:
                fp = run_fingerprint(fp, run)
            if fp in seen or fp in fresh:
                continue
            if (why := refusal(resolved, depth)) is not None:
                dropped[why] = dropped.get(why, 0) + 1
                continue
            fresh[fp] = Task(
                task_id=fp,
                url=resolved,
                site=site_of(resolved),
                depth=depth,
                priority=0,
                parent_task_id=parent,
                run=run,
            )
        for reason, count in response.dropped.items():  # left out by the link rules
            dropped[reason] = dropped.get(reason, 0) + count
        parsed.dropped = dropped
        return parsed

    def _once_for(
        self, lease: Lease
    ) -> Callable[[str, Callable[[], Awaitable[Any]]], Awaitable[Any]]:
        task_id = lease.task.task_id

        async def once(action_id: str, action: Callable[[], Awaitable[Any]]) -> Any:
            state = await self.queue.action_state(task_id, action_id)
            if state == "done":
                return None
            if state == "intended":
                await self._pause_uncertain(lease, action_id)
                raise UncertainAction(f"action {action_id!r} of task {task_id} may have run")
            intent = ActionIntended(actor=self.name, task_id=task_id, action_id=action_id)
            await self.queue.note(lease, [intent], action=(action_id, "intended"))
            value = await action()
            done = ActionDone(actor=self.name, task_id=task_id, action_id=action_id)
            await self.queue.note(lease, [done], action=(action_id, "done"))
            return value

        return once

    async def _pause_uncertain(self, lease: Lease, action_id: str) -> None:
        task = lease.task
        paused = TaskPaused(
            actor=self.name,
            task_id=task.task_id,
            reason=f"uncertain action {action_id}: its intent is logged, its completion not",
        )
        if not await self.queue.pause_for_a_person(lease, action_id, paused):
            # Resolved between the pause and the park: the task runs again, by the decision.
            await self.queue.requeue(lease, [], task, lease.lane)

    async def _admit(self, parsed: _Parsed) -> None:
        """Enqueue a page's new links and take its next page from the job's page bound
        (``--max-pages``); what the bound refuses is counted as dropped, by that reason."""
        past = await self._enqueue(parsed.fresh)
        cap = self.config.max_pages
        if parsed.next_page is not None and cap and not await self.queue.take_page(cap):
            parsed.next_page, past = None, past + 1
        if past:
            parsed.dropped[PAST_MAX_PAGES] = parsed.dropped.get(PAST_MAX_PAGES, 0) + past

    async def _enqueue(self, fresh: dict[str, Task]) -> int:
        """New tasks (by fingerprint) for the links a page gave, in one round trip; how
        many of them the job's page bound refused."""
        if not fresh:
            return 0
        new, past = await self.queue.enqueue_within(
            list(fresh.values()), actor=self.name, cap=self.config.max_pages
        )
        self.stats.enqueued += sum(new)
        for fp in fresh:
            self._seen[fp] = None
        while len(self._seen) > SEEN_CACHE_SIZE:
            self._seen.popitem(last=False)
        return past


async def _numbered(item: Item) -> AsyncIterator[tuple[int, Item]]:
    """``item`` as `spider_outputs` gives a spider's first output."""
    yield 0, item


def evidence_of(result: FetchResult) -> Evidence | None:
    """What a failed task keeps of the response ``result`` (None if no response came)."""
    if not result.requested or result.status == NO_RESPONSE:
        return None
    return Evidence.of(
        result.final_url or result.url,
        result.status,
        [(n.decode("latin-1"), v.decode("latin-1")) for n, v in result.raw_headers],
        result.body,
        content_type=result.content_type,
    )


def _permanent(result: FetchResult) -> bool:
    """A failure that no retry can fix (a bad URL, a redirect loop, a page too large)."""
    error = result.error or ""
    return error in PERMANENT_ERRORS or error.startswith(
        (ERROR_TOO_LARGE_PREFIX, ERROR_REFUSED_ADDRESS_PREFIX)
    )


async def enqueue_seeds(
    queue: TaskQueue, seeds: list[str], *, actor: str, max_pages: int = 0
) -> int:
    """Enqueue the seed URLs (idempotent: a seed already seen is not enqueued again)."""
    tasks = [
        Task(task_id=fingerprint(url), url=url, site=site_of(url), priority=1) for url in seeds
    ]
    return sum(await queue.enqueue(tasks, actor=actor, cap=max_pages))


def _new_fetcher(config: FetchConfig, cookies: CookieStore | None = None) -> Fetcher:
    """Run in a thread: import the HTTP stack, build a fetcher (its TLS context with it),
    keeping cookies in ``cookies`` if given."""
    from crawler._fetch import Fetcher

    if cookies is None:
        return Fetcher(config)
    from crawler._cookies import SharedCookies

    return Fetcher(config, cookies=SharedCookies(cookies))


@contextmanager
def _collector_paused() -> Iterator[None]:
    """No garbage collection inside: a take-back builds hundreds of thousands of objects
    that all stay alive (the replies, the leases), and the collections they set off found
    nothing to free while costing a large share of the time.

    On the way out, what is alive is frozen (`gc.freeze`): the modules the HTTP stack's
    thread imported meanwhile and the backlog would otherwise be traversed by the first
    collection after it, just before the first fetch, and by every full one after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def _is_store_lost(exc: BaseException) -> bool:
    if isinstance(exc, BaseExceptionGroup):
        return exc.split(StoreLost)[0] is not None
    return isinstance(exc, StoreLost)


def save_in_flight_at_loss(data_dir: Path, job: str, worker: str, tasks: dict[str, str]) -> None:
    """Leave the tasks whose requests the lost store never heard of for ``crawlog
    restore`` (`projector.in_flight_at_loss`), beside the worker's other local files."""
    from projector import in_flight_path

    path = in_flight_path(data_dir, job, worker)
    with suppress(OSError):  # at worst, those refetches go uncounted
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, msgspec.json.encode(tasks))


async def _store_identity(redis: aioredis.Redis, data_dir: Path, job: str) -> JobIdentity | None:
    """The job's identity in the store; `StoreLost` if the store lost the job its archive
    (where this worker has it) knows."""
    from projector import check_store  # light: the manifest's identity fields only

    return await check_store(redis, data_dir, job, create=False)
