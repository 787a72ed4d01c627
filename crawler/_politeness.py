"""Per-host politeness shared by every worker of a job: concurrency and delay kept in Redis.

A worker wraps every request in ``async with gate.slot(host):``. Taking a slot is one
script call that, on the server's clock, drops expired slots, checks the host's count
against ``per_host`` and its next allowed start time, and either takes a slot (advancing
the next start by the delay) or says how long to wait. Freeing it is one ``MULTI`` (the
``ZREM`` and its holder's ``HDEL``); in a worker (`PolitenessGate.free_loop`) it rides on
its next acquire instead, the same script freeing it first, or is sent on its own
``DEFERRED_FREE_S`` later if no acquire came. So the limits hold across all workers (a slot
freed late only holds its host longer), and a worker's clock never matters.

Per host, up to four keys (`JobKeys.host_slot_keys`), each expiring when idle:

- ``slots``: zset of slot tokens scored by their expiry; a slot whose holder is never
  heard of again expires after ``slot_ttl_s``, so no host is blocked forever.
- ``next``: server time (ms) before which no request may start; lives as long as the delay.
- ``delay``: a per-host delay set with `PolitenessGate.set_delay` (robots.txt Crawl-delay),
  seen by every worker until it expires; the longer of it and ``delay_s`` applies.
- ``adapted`` (with ``autothrottle``): the delay adapted to the host's latency, every
  worker's samples folded in on the server (`PolitenessGate.observe`,
  ``crawler._autothrottle``); the longest of the three applies.

Each slot is also listed under its holder (the worker's name, `JobKeys.slots_held`),
so that a worker killed mid-request does not hold its hosts for the whole ttl: its slots
are freed when its restart (same name) takes its tasks back, or when another worker
recovers its expired leases (`TaskQueue.take_back_all`, `TaskQueue.recover`).

Within one process, tasks waiting for the same host queue locally behind one that asks
Redis, and a local release wakes it at once: a thousand tasks waiting on one busy host
cost one poll, not a thousand. Where no delay applies, the slot released goes on to that
task without asking at all, or to the next new request of the host while it waits for its
deferred free (`crawler._handover`: the rules, and why they keep the limits).
"""

from __future__ import annotations

import contextlib
import math
import random
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import msgspec
import redis.asyncio as aioredis

from crawler._autothrottle import (
    DEFAULT_MAX_DELAY_S,
    DEFAULT_TARGET_CONCURRENCY,
    MAX_TARGET_CONCURRENCY,
    THROTTLED_FACTOR,
    THROTTLED_MIN_MS,
    sample_kind,
)
from crawler._handover import HeldSlot, may_hand_over, must_ask, started_ms
from crawler._robots import DEFAULT_ROBOTS_TTL_S
from eventlog import ConfigError, HostSlots, JobKeys, ScriptBatcher, ServerError, SlotAnswer

DEFAULT_PER_HOST = 2
DEFAULT_DELAY_S = 0.0
DEFAULT_SLOT_TTL_S = 30.0
"""Longer than any fetch's timeout: a slot outliving its ttl no longer counts."""
DEFAULT_MAX_POLL_S = 0.1
"""Another worker's release of a full host is noticed within this long."""
MAX_DELAY_S = 3600.0
MAX_TTL_S = 7 * 86_400.0
MIN_S = 0.001
"""Redis counts in milliseconds."""
JITTER = 0.1
"""Extra sleep, as a share of ``max_poll_s``, so workers polling a full host drift apart. Not
after a wait for the host's delay: its end is a time the server gave, the slot free then,
and every request to a delay-limited host would start that much later (on average half
of it: 5 % of a 0.1 s delay)."""
MAX_HOST_CHARS = 300
"""A DNS name (253) plus a port, with room for an IPv6 literal's brackets."""
MS_PER_S = 1000
TOKEN_BYTES = 8
DEFERRED_FREE_S = 0.05
"""With `PolitenessGate.free_loop` running, a slot done with is freed by the gate's next
acquire, in the same script; this long after it at the latest, when no acquire came."""


def _ms(seconds: float) -> int:
    # Rounded first so that 0.3 s is 300 ms, not 301 through float error.
    return math.ceil(round(seconds * MS_PER_S, 6))


def _check_seconds(what: str, value: float, *, low: float, high: float) -> None:
    if not (math.isfinite(value) and low <= value <= high):
        raise ConfigError(f"{what} {value!r} is not between {low} and {high} seconds")


def check_host(host: str) -> str:
    """``host`` if it can name a host's politeness keys, else ``ConfigError``."""
    if (
        not host
        or len(host) > MAX_HOST_CHARS
        or any(c.isspace() or c in "{}" or not c.isprintable() for c in host)
    ):
        raise ConfigError(
            f"invalid host {host!r}: 1-{MAX_HOST_CHARS} printable characters, no spaces or braces"
        )
    return host


class Politeness(msgspec.Struct, frozen=True, kw_only=True):
    """How hard a job may hit one host, counted across all of its workers."""

    per_host: int = DEFAULT_PER_HOST
    """Requests to one host in flight at once."""
    delay_s: float = DEFAULT_DELAY_S
    """Least time between the starts of two requests to one host."""
    slot_ttl_s: float = DEFAULT_SLOT_TTL_S
    """A held slot expires after this long: keep it above the fetch timeout."""
    delay_ttl_s: float = DEFAULT_ROBOTS_TTL_S
    """How long a delay set with `PolitenessGate.set_delay` lasts (as a robots.txt does)."""
    max_poll_s: float = DEFAULT_MAX_POLL_S
    """Longest sleep before asking again for a host whose slots are all held."""
    autothrottle: bool = False
    """Adapt each host's delay to its latency (``crawler._autothrottle``), for every worker;
    ``delay_s`` is then its floor."""
    autothrottle_target: float = DEFAULT_TARGET_CONCURRENCY
    """With ``autothrottle``: requests a host should have in flight on average."""
    autothrottle_max_delay_s: float = DEFAULT_MAX_DELAY_S
    """With ``autothrottle``: the adapted delay never grows past this."""

    def __post_init__(self) -> None:
        if isinstance(self.per_host, bool) or not isinstance(self.per_host, int):
            raise ConfigError(f"per-host concurrency {self.per_host!r} is not a whole number")
        if self.per_host < 1:
            raise ConfigError(f"per-host concurrency {self.per_host} is not 1 or more")
        _check_seconds("per-host delay", self.delay_s, low=0.0, high=MAX_DELAY_S)
        _check_seconds("slot ttl", self.slot_ttl_s, low=MIN_S, high=MAX_TTL_S)
        _check_seconds("delay ttl", self.delay_ttl_s, low=MIN_S, high=MAX_TTL_S)
        _check_seconds("max poll", self.max_poll_s, low=MIN_S, high=MAX_DELAY_S)
        target = self.autothrottle_target
        if not (math.isfinite(target) and 0 < target <= MAX_TARGET_CONCURRENCY):
            raise ConfigError(
                f"autothrottle target concurrency {target!r} is not above 0 and at most "
                f"{MAX_TARGET_CONCURRENCY:g}"
            )
        low = self.delay_s if self.autothrottle else 0.0
        _check_seconds(
            "autothrottle max delay", self.autothrottle_max_delay_s, low=low, high=MAX_DELAY_S
        )


class HostSlot(msgspec.Struct, frozen=True):
    """A slot held on a host while a request runs."""

    host: str
    started_ms: int
    """Server time (Unix ms) at which the slot was taken: the request's permitted start
    (handed over: about when it was handed, as this process tells the server's time)."""
    handed_over: bool = False
    """Handed over by this process's request before it (`crawler._handover`), the server
    not asked: it expires when it would have for that request."""


class _Seat:
    """One request waiting for a slot on a host."""

    __slots__ = ("asking", "offer", "task_id")

    def __init__(self, task_id: str) -> None:
        self.task_id = task_id
        self.offer: HeldSlot | None = None
        """A slot handed over to it (`crawler._handover`)."""
        self.asking = False
        """Its call to the server is in flight: it may take a slot of its own."""


class _Waiters:
    """This process's tasks after one host: the lock's holder polls Redis for all of them."""

    __slots__ = ("held", "holder", "lock", "released", "users", "waiting")

    def __init__(self) -> None:
        self.lock = anyio.Lock()
        self.released = anyio.Event()
        self.users = 0
        self.waiting = 0
        """Of the users, those still waiting for their slot."""
        self.held = 0
        """Slots of the host this process holds for requests running."""
        self.holder: _Seat | None = None
        """The request that holds the lock: the next to get a slot."""

    def wake(self) -> None:
        # Only the lock's holder ever waits for a release: no holder, no event to replace.
        if self.lock.locked():
            self.released.set()
            self.released = anyio.Event()


class PolitenessGate:
    """One worker's gate to the hosts of a job; ``async with gate.slot(host):`` per request.

    ``batcher``: sends the taking of a slot with the worker's other script calls (its
    queue's, `eventlog.TaskQueue.batcher`); None: each alone."""

    def __init__(
        self,
        redis: aioredis.Redis,
        job: str | JobKeys,
        politeness: Politeness | None = None,
        *,
        rng: random.Random | None = None,
        holder: str | None = None,
        batcher: ScriptBatcher | None = None,
    ) -> None:
        self.redis = redis
        self.keys = job if isinstance(job, JobKeys) else JobKeys(job)
        self.politeness = politeness or Politeness()
        self.holder = holder or f"gate-{secrets.token_hex(TOKEN_BYTES)}"
        """Whose slots these are: the worker's name, so its restart or the recovery of its
        tasks frees what a kill left held."""
        self._rng = rng or random.Random()
        self._slots = HostSlots(redis, self.keys, self.holder, batcher=batcher)
        self._waiters: dict[str, _Waiters] = {}
        self._release_deadline = math.inf
        self._releasing: set[anyio.CancelScope] = set()
        self._to_free: dict[str, str] = {}
        """Slots done with and not freed yet (token -> host), while `free_loop` runs."""
        self._spares: dict[str, HeldSlot] = {}
        """Of the slots in ``_to_free``, those a new request of the same host may take over
        until they are freed (`crawler._handover`), by token."""
        self._to_free_added: anyio.Event | None = None
        """Set when a slot is added to ``_to_free``: made by `free_loop`, which waits on it."""
        self.waiting = 0
        """This gate's requests waiting for a slot, on every host."""
        self.busy_at = self.politeness.per_host
        """A host is busy (`busy_hosts`) once this many of the gate's requests wait for it."""
        self._eased = anyio.Event()
        self._queued = anyio.Event()
        self.acquires = 0
        """Slots taken from the server."""
        self.handovers = 0
        """Slots handed from a request done with them to the next of the same host
        (`crawler._handover`), the server not asked."""

    @asynccontextmanager
    async def slot(
        self, host: str, task_id: str = "", *, release_later: bool = False
    ) -> AsyncIterator[HostSlot]:
        """Wait for a free slot on ``host`` and its next start time, hold it while the block runs.

        ``ServerUnreachable`` if Redis is lost; the slot is freed on exit, and a slot whose
        holder died is freed with its tasks, or by itself after ``slot_ttl_s``. A slot for
        a task's request (``task_id``) records, as it is taken, that the request may go
        (`eventlog.JobKeys.fetches_started`): a kill before its page is written leaves the
        record for the task's retake to count. ``release_later``: a slot left by an error
        or a cancellation (one that gave up on a store that does not answer) is freed with
        the gate's next acquire or by `free_loop`, not waited for here.
        """
        check_host(host)
        token = secrets.token_hex(TOKEN_BYTES)
        waiters = self._waiters.get(host) or self._waiters.setdefault(host, _Waiters())
        waiters.users += 1
        seat = _Seat(task_id)
        held: HeldSlot | None = None
        try:
            waiters.waiting += 1
            self.waiting += 1
            self._queued.set()
            self._queued = anyio.Event()
            try:
                held = await self._acquire(host, token, waiters, seat)
            finally:
                waiters.waiting -= 1
                self.waiting -= 1
                if waiters.waiting == self.busy_at - 1:
                    self._eased.set()
                    self._eased = anyio.Event()
            if held.token == token:
                yield HostSlot(host, held.at_ms)
            else:
                yield HostSlot(host, started_ms(held, anyio.current_time()), handed_over=True)
        except BaseException:
            # A cancelled acquire may have taken a slot before its reply was lost, so free
            # it (and one handed over to it); but the error in flight says more than a
            # failed release would, and an unfreed slot expires by itself.
            freeing = {token: host}
            for gone in (held, seat.offer):
                if gone is not None:
                    freeing[gone.token] = host
            waiters.held -= held is not None or seat.offer is not None
            if release_later:
                self._still_to_free(freeing)
                raise
            with contextlib.suppress(ServerError):
                await self._release(freeing)
            raise
        else:
            if not self._handed_over(waiters, held):
                waiters.held -= 1
                await self._free(host, held.token, held)
        finally:
            waiters.wake()
            waiters.users -= 1
            if not waiters.users:
                del self._waiters[host]

    def busy_hosts(self) -> set[str]:
        """Hosts for which at least `busy_at` of this gate's requests wait for a slot: one
        more request to them would only wait too (see `TaskQueue.claim_around`)."""
        return {host for host, w in self._waiters.items() if w.waiting >= self.busy_at}

    async def eased(self) -> None:
        """Return once a busy host (`busy_hosts`) is busy no more."""
        await self._eased.wait()

    async def queued(self) -> None:
        """Return once one more of this gate's requests waits for a slot (`waiting`)."""
        await self._queued.wait()

    async def set_delay(self, host: str, seconds: float) -> None:
        """Space request starts to ``host`` by at least ``seconds``, in every worker.

        For a site's own wish (robots.txt Crawl-delay): it lasts ``delay_ttl_s``, and the
        longer of it and ``delay_s`` applies. It counts from the next request's start.
        """
        check_host(host)
        _check_seconds("per-host delay", seconds, low=0.0, high=MAX_DELAY_S)
        await self._slots.set_delay(host, _ms(seconds), ttl_ms=_ms(self.politeness.delay_ttl_s))

    async def observe(self, host: str, latency_ms: float, status: int) -> int | None:
        """Fold a fetch's latency and status (0: no response) into ``host``'s adapted delay,
        for every worker; the new delay (ms), or None without ``autothrottle``."""
        p = self.politeness
        if not p.autothrottle:
            return None
        check_host(host)
        return await self._slots.observe(
            host,
            latency_ms,
            sample_kind(status),
            target=p.autothrottle_target,
            floor_ms=_ms(p.delay_s),
            max_ms=_ms(p.autothrottle_max_delay_s),
            ttl_ms=_ms(p.delay_ttl_s),
            throttled_factor=THROTTLED_FACTOR,
            throttled_min_ms=THROTTLED_MIN_MS,
        )

    async def free_loop(self) -> None:
        """Run beside the requests (a worker's background): meanwhile a slot done with is
        freed by this gate's next acquire, in the same script, or by this loop
        `DEFERRED_FREE_S` later if none came; not by a round trip of its own. Until the
        gate stops (`release_by`), after which each is freed at once again.

        A slot not freed when the process dies is freed as a killed request's is: by the
        holder's restart, by the recovery of its leases, or after ``slot_ttl_s``."""
        self._to_free_added = added = anyio.Event()
        try:
            while True:
                await added.wait()
                self._to_free_added = added = anyio.Event()
                await anyio.sleep(DEFERRED_FREE_S)
                await self.flush()
        finally:
            self._to_free_added = None

    async def flush(self) -> None:
        """Free the slots done with and not freed yet, at once (before a worker exits)."""
        freeing = self._freeing()
        if not freeing:
            return
        with anyio.CancelScope(shield=True, deadline=self._release_deadline) as releasing:
            self._releasing.add(releasing)
            try:
                await self._slots.release_all(freeing)
            except BaseException:
                self._still_to_free(freeing)
                raise
            finally:
                self._releasing.discard(releasing)

    def _freeing(self) -> dict[str, str]:
        """The slots done with, to free now: none of them is a spare any more."""
        freeing, self._to_free = self._to_free, {}
        if self._spares:
            self._spares = {}
        return freeing

    def _take_spare(self, host: str) -> HeldSlot | None:
        """A slot of ``host`` done with and not freed yet that a new request may go on."""
        now = anyio.current_time()
        stopping = self._release_deadline != math.inf
        for token, spare in self._spares.items():
            if self._to_free.get(token) == host:
                del self._spares[token]
                del self._to_free[token]
                if may_hand_over(
                    spare, now_s=now, ttl_s=self.politeness.slot_ttl_s, stopping=stopping
                ):
                    return spare
                self._to_free[token] = host
                return None
        return None

    def _still_to_free(self, freeing: dict[str, str]) -> None:
        # Freed or not (a reply lost): freeing again is a no-op, forgetting holds the
        # slots until their ttl.
        if freeing:
            self._to_free.update(freeing)
            if self._to_free_added is not None:
                self._to_free_added.set()

    def release_by(self, deadline: float) -> None:
        """Slot releases, running or to come, stop trying at ``deadline`` (anyio time).

        For a stopping worker: a server that does not answer must not hold up its stop;
        a slot not freed expires by itself (``slot_ttl_s``).
        """
        self._release_deadline = deadline
        for scope in self._releasing:
            scope.deadline = deadline

    async def _release(self, freeing: dict[str, str]) -> None:
        # Shielded: a cancelled request must still free its slot.
        with anyio.CancelScope(shield=True, deadline=self._release_deadline) as releasing:
            self._releasing.add(releasing)
            try:
                await self._slots.release_all(freeing)
            finally:
                self._releasing.discard(releasing)

    async def _free(self, host: str, token: str, spare: HeldSlot | None = None) -> None:
        if self._to_free_added is not None and self._release_deadline == math.inf:
            # Freed by the next acquire (a waiter for this host woken by the caller makes
            # it at once), or by `free_loop`: a round trip a request less.
            self._to_free[token] = host
            self._to_free_added.set()
            if spare is not None:
                self._spares[token] = spare
        else:
            await self._release({token: host})

    def _handed_over(self, waiters: _Waiters, held: HeldSlot) -> bool:
        """Give ``held``, done with, to the request next in line for its host if the
        rules allow (`crawler._handover`): it goes on it without asking the server."""
        seat = waiters.holder
        if (
            seat is None
            or seat.asking
            or seat.offer is not None
            or not may_hand_over(
                held,
                now_s=anyio.current_time(),
                ttl_s=self.politeness.slot_ttl_s,
                stopping=self._release_deadline != math.inf,
            )
        ):
            return False
        seat.offer = held
        self.handovers += 1
        return True

    async def _acquire(self, host: str, token: str, waiters: _Waiters, seat: _Seat) -> HeldSlot:
        held = self._spare_for(host, waiters, seat) or await self._take_or_wait(
            host, token, waiters, seat
        )
        if held is seat.offer and seat.task_id:
            # Recorded as a slot taken from the server records it, before the request
            # goes: a kill from now on counts the request as one the site may have had.
            await self._slots.record_started(seat.task_id)
        return held

    def _spare_for(self, host: str, waiters: _Waiters, seat: _Seat) -> HeldSlot | None:
        """A slot of ``host`` done with a moment ago and still held (`_spares`), taken
        over by ``seat``; None if there is none to take."""
        spare = self._take_spare(host)
        if spare is not None:
            seat.offer = spare
            waiters.held += 1
            self.handovers += 1
        return spare

    async def _take_or_wait(
        self, host: str, token: str, waiters: _Waiters, seat: _Seat
    ) -> HeldSlot:
        if not waiters.lock.locked() and must_ask(waiters.held, self.politeness.per_host):
            held, _ = await self._try(host, token, waiters, seat)
            if held is not None:
                return held
        async with waiters.lock:
            waiters.holder = seat
            try:
                return await self._next_in_line(host, token, waiters, seat)
            finally:
                waiters.holder = None

    async def _next_in_line(
        self, host: str, token: str, waiters: _Waiters, seat: _Seat
    ) -> HeldSlot:
        """The slot of the lock's holder: taken from the server, or handed over."""
        while True:
            # Taken before asking, so a release between the reply and the wait counts.
            released = waiters.released
            if (offer := seat.offer or self._spare_for(host, waiters, seat)) is not None:
                return offer
            wait = self.politeness.max_poll_s
            if must_ask(waiters.held, self.politeness.per_host):
                held, answer = await self._try(host, token, waiters, seat)
                if held is not None:
                    return held
                wait = answer.wait_ms / MS_PER_S
                if answer.full:
                    wait += self._rng.uniform(0, JITTER * self.politeness.max_poll_s)
            with anyio.move_on_after(wait):
                await released.wait()

    async def _try(
        self, host: str, token: str, waiters: _Waiters, seat: _Seat
    ) -> tuple[HeldSlot | None, SlotAnswer]:
        p = self.politeness
        freeing = self._freeing()
        seat.asking = True
        asked_at = anyio.current_time()
        try:
            answer = await self._slots.acquire(
                host,
                token,
                per_host=p.per_host,
                delay_ms=_ms(p.delay_s),
                ttl_ms=_ms(p.slot_ttl_s),
                max_wait_ms=_ms(p.max_poll_s),
                freeing=freeing,
                task_id=seat.task_id,
            )
        except BaseException:
            self._still_to_free(freeing)
            raise
        finally:
            seat.asking = False
        if answer.wait_ms:
            return None, answer
        waiters.held += 1
        self.acquires += 1
        return HeldSlot(token, answer.at_ms, asked_at, answer.delay_ms), answer
