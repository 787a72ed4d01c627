"""A worker going on with the pages it holds while its store does not take its writes.

A probe (`eventlog.probe_store`: a write that changes nothing) asks the store every
`PROBE_EVERY_S`. One not answered within `DOWN_AFTER_S` (stalled, unreachable), or refused
because the server is out of memory (``OOM``: it still answers a PING and reads) or serves
nothing (`eventlog.refusal_means`), takes the store for down (`TaskQueue.store_down`):
from then on the tasks the worker holds go on, each write journalled and not sent, their requests
spaced by a politeness slot of this process's own (`OfflineRide.slot`: one request per
host at a time, the job's delay between two), up to ``pages`` of them. Once the store
answers again, the journal is flushed in order, fenced per lease (`TaskQueue.store_back`),
before anything else is written.

What still waits for the store: robots.txt not in the worker's cache, a lease not known
fresh (`Worker.hold_lease`), a claim (the links a page found go with its journalled
write). The lease check is the guard against a page fetched twice: a lease is fetched with
offline only while the worker's own clock says it was reset less than half a lease ago
(the server's idle time of a lease counts the stall too: a SIGSTOPped server's clock jumps
when it goes on).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import anyio
import msgspec
import redis.asyncio as aioredis
import redis.exceptions

from crawler._politeness import PolitenessGate
from eventlog import CrawlogError, StoreState, TaskQueue, probe_store

log = logging.getLogger(__name__)

DEFAULT_OFFLINE_PAGES = 64
"""Pages a worker fetches at most while its store is down (``--offline-pages``), per
outage: bounded as well by the leases it holds (`LEASES_PER_PLACE` per place)."""
OFFLINE_PAGES_ENV = "CRAWLOG_OFFLINE_PAGES"
PROBE_EVERY_S = 0.25
"""How often the store is asked whether it answers."""
DOWN_AFTER_S = 1.0
"""A store that does not answer the probe this long is taken for down."""
OFFLINE_MIN_LEASE_MS = 10_000
"""Below this lease time a worker does not go on without its store: a page is fetched
offline with at least half a lease left, and what it writes must reach the store before
the lease runs out, or another worker takes the task over and fetches it again; with a
shorter lease the detection (`DOWN_AFTER_S`) alone takes most of that half."""


_GOING_ON: dict[StoreState, str] = {
    "down": "the store does not answer",
    "full": "the store is out of memory and refuses writes",
}
"""What a worker says as it takes its store for down, by what the probe found."""


class _LocalHost:
    def __init__(self) -> None:
        self.lock = anyio.Lock()
        self.next_at = 0.0


class OfflineRide:
    """The worker's ride through a store outage: ``queue`` is told when the store is down
    and back; ``gate`` gives the slots while it answers; ``delay_s`` spaces two requests
    to a host without it; ``pages`` bounds what is fetched per outage (0: nothing). Only
    with a journal and a lease of `OFFLINE_MIN_LEASE_MS` or more."""

    def __init__(
        self,
        redis: aioredis.Redis,
        queue: TaskQueue,
        gate: PolitenessGate,
        *,
        delay_s: float,
        pages: int = DEFAULT_OFFLINE_PAGES,
    ) -> None:
        self.redis, self.queue, self.gate = redis, queue, gate
        self.delay_s = delay_s
        self.pages = pages
        self.enabled = (
            pages > 0 and queue.journal is not None and queue.lease_ms >= OFFLINE_MIN_LEASE_MS
        )
        self.fetched = 0
        """Pages fetched while the store was down, over every outage."""
        self._left = pages
        self._hosts: dict[str, _LocalHost] = {}
        self._probing = False
        """Whether `run` probes the store (the gate's slots are then given up on once the
        store is taken for down)."""

    @property
    def down(self) -> bool:
        return self.queue.is_down

    async def run(self) -> None:
        """Probe the store, beside the worker's tasks, until cancelled."""
        if not self.enabled:
            return
        self._probing = True
        try:
            while True:
                await anyio.sleep(PROBE_EVERY_S)
                state = await self._state()
                if state != "answers" and not self.down:
                    log.warning(
                        "%s: going on with the pages held (%d waiting)",
                        _GOING_ON[state],
                        self.gate.waiting,
                    )
                    self.queue.store_down()
                elif state == "answers" and self.down:
                    flushed = await self.queue.store_back()
                    during, self._left = self.pages - self._left, self.pages
                    log.warning(
                        "the store answers again: %d page(s) fetched meanwhile; journal flushed %s",
                        during,
                        msgspec.structs.asdict(flushed),
                    )
        finally:
            self._probing = False

    async def _state(self) -> StoreState:
        with anyio.move_on_after(DOWN_AFTER_S):
            try:
                return await probe_store(self.redis, self.queue.keys)
            except (redis.exceptions.RedisError, OSError, CrawlogError):
                return "down"
        return "down"

    async def unless_down(self, call: Callable[[], Awaitable[object]]) -> None:
        """Run ``call`` (a store call whose answer can wait), given up once the store is
        taken for down."""
        if not self.enabled:
            await call()
            return
        if self.down:
            return
        with self.queue.cancelled_if_down():
            await call()

    @asynccontextmanager
    async def slot(
        self,
        host: str,
        task_id: str = "",
        started: Callable[[], Awaitable[object]] | None = None,
    ) -> AsyncIterator[None]:
        """A politeness slot on ``host`` for a request of ``task_id``: the gate's while the
        store answers (taking it records the request started); this process's own once it
        is down (within the page budget; past it, the gate's again, which waits for the
        store), ``started`` awaited last thing before the request (it journals the start:
        `TaskQueue.mark_fetch_started`)."""
        if not self.enabled or (not self._probing and not self.down):
            async with self.gate.slot(host, task_id):
                yield
            return
        if not self.down:
            async with contextlib.AsyncExitStack() as held:
                if await self._shared(host, task_id, held):
                    yield
                    return
        if self._left <= 0:
            await self.queue.wait_up()
            async with self.gate.slot(host, task_id):
                yield
            return
        # Taken from the budget before the host's turn: the requests waiting for it would
        # otherwise all have found some left, and gone past it.
        self._left -= 1
        local = self._hosts.setdefault(host, _LocalHost())
        sent = False
        try:
            async with local.lock:
                wait = local.next_at - anyio.current_time()
                if wait > 0:
                    await anyio.sleep(wait)  # the job's delay between two requests
                sent = True
                self.fetched += 1
                if started is not None:
                    await started()
                try:
                    yield
                finally:
                    local.next_at = anyio.current_time() + self.delay_s
        finally:
            if not sent:
                self._left += 1  # given up before its turn

    async def _shared(self, host: str, task_id: str, held: contextlib.AsyncExitStack) -> bool:
        """Take the gate's slot on ``host`` into ``held``, which keeps it until it closes;
        True once held, False if the store was taken for down first. The acquire is then
        given up on, and a slot it may have taken (its reply lost) is freed later by the
        gate (``release_later``), not waited for: the store does not answer."""
        # In the request's own task: a holder task per request, kept until the request
        # ended, cost a task, two events and their switches on every page.
        with self.queue.cancelled_if_down():
            await held.enter_async_context(self.gate.slot(host, task_id, release_later=True))
            return True
        return False
