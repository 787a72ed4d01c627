"""Where live progress comes from: committed state + the stream's tail, and Redis.

The projector commits at most every second (and may lag further behind a fast crawl), so
its committed state alone is not "within a second of the events". :class:`LiveProgress`
starts from it (``read_committed``: the snapshot plus the archive after it) and folds
the events after the committed position straight from the stream with the same pure
fold, then keeps folding whatever was appended since, on every refresh. It never waits
on, or writes for, the projector.

The projector trims the stream only below its committed position (and keeps `--keep-tail` more),
so the tail this reads is normally still there. If a trim removed events past what this
folded (a refresh more than a minute late, or a data dir without the job's archive), the
committed state is read again; if even that is behind the trim, progress cannot be exact
and this says so (``CrawlogError``) instead of showing wrong numbers.

Workers come from the task lanes' consumer group: ``XINFO CONSUMERS`` for every name
that ever read, ``XPENDING`` for the idle time of their leases (the server's clock,
renewed by the owner), and the worker-name lock for whether the process still lives.
"""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import anyio.to_thread
import redis.asyncio as aioredis
import redis.exceptions

from crawler.cli._progress import (
    RATE_WINDOW_S,
    Progress,
    RateWindow,
    Tracker,
    progress,
)
from eventlog import (
    CrawlogError,
    EventLog,
    JobKeys,
    PoisonEntry,
    stream_id_key,
)
from eventlog._connection import command, redis_errors
from eventlog._operator import read_workers
from projector._projector import read_committed
from projector._store import Store

TAIL_BATCH = 5_000
MAX_TAIL_PER_REFRESH = 200_000
"""Events folded per refresh at most, so a display far behind still redraws; it catches up
over the next refreshes."""


class LiveProgress:
    """A job's progress, refreshed from the committed state and the stream's tail."""

    def __init__(
        self,
        redis: aioredis.Redis,
        job: str,
        data_dir: Path,
        *,
        lease_ms: int | None = None,
        window_s: float = RATE_WINDOW_S,
    ) -> None:
        self.redis = redis
        self.job = job
        self.keys = JobKeys(job)
        self.log = EventLog(redis, self.keys)
        self.store = Store(data_dir, job)
        self.lease_ms = lease_ms
        self.tracker = Tracker()
        self.committed = "0-0"
        """The projector's committed position the tracker started from."""
        self.window = RateWindow(window_s)
        self._committed_events = 0
        self._loaded = False

    async def load(self) -> None:
        """Start from what the projector committed (read without its lock)."""
        manifest, state = await anyio.to_thread.run_sync(read_committed, self.store)
        self.tracker = Tracker(state)
        self.committed = manifest.position
        self._committed_events = state.job.events
        self._loaded = True

    async def refresh(self, *, now: float | None = None) -> Progress:
        """Fold what was appended since the last refresh; the progress as of now."""
        if not self._loaded:
            await self.load()
        before = self.tracker.state.position
        await self._fold_tail()
        trimmed = await self._trimmed_up_to()
        if trimmed is not None and stream_id_key(trimmed) > stream_id_key(before):
            # Events between ``before`` and the trim may be gone: start over from a newer
            # commit, which the trim implies exists (the projector trims only below it).
            await self.load()
            if stream_id_key(self.committed) < stream_id_key(trimmed):
                raise CrawlogError(
                    f"the log of job {self.job!r} was trimmed up to {trimmed}, and "
                    f"{self.store.root} has the archive only up to {self.committed}: run this "
                    "with the --data-dir the job's projector writes to"
                )
            await self._fold_tail()
        snapshot = self.tracker.snapshot(time.monotonic() if now is None else now)
        older = self.window.add(snapshot)
        workers = await read_workers(self.redis, self.keys)
        behind, behind_s = await self._projector_behind(snapshot.events)
        return progress(
            self.job,
            older,
            snapshot,
            workers=workers,
            lease_ms=self.lease_ms,
            tail_events=behind,
            behind_s=behind_s,
            dead_letters=await self.log.dead_letter_count(),
        )

    async def _projector_behind(self, folded: int) -> tuple[int, float | None]:
        """How far the projector's last commit is behind the log: events, and the age of
        the oldest event it has not committed (by the server's clock).

        Measured against the commit of now, not the one this started from: a watch left
        running for an hour would otherwise count an hour of events as "behind".
        """
        manifest = await anyio.to_thread.run_sync(self.store.read_manifest)
        committed = manifest.summary.job.events if manifest.summary else self._committed_events
        behind = max(folded - committed, 0)
        if not behind:
            return 0, None
        with redis_errors("reading the log after the projector's commit"):
            first = await command(
                self.redis, "XRANGE", self.keys.events, f"({manifest.position}", "+", "COUNT", 1
            )
            seconds, micros = await command(self.redis, "TIME")
        if not first:
            return behind, None
        oldest_ms = stream_id_key(_text(first[0][0]))[0]
        return behind, max(int(seconds) + int(micros) / 1e6 - oldest_ms / 1000, 0.0)

    async def _fold_tail(self) -> None:
        state = self.tracker.state
        folded = 0
        while folded < MAX_TAIL_PER_REFRESH:
            try:
                entries = await self.log.read_after(state.position, TAIL_BATCH)
            except PoisonEntry as poison:
                # The projector dead-letters it and reads on after it: so does this.
                state.position = poison.entry_id
                continue
            if not entries:
                return
            self.tracker.fold(entries)
            folded += len(entries)

    async def _trimmed_up_to(self) -> str | None:
        """The highest stream ID trimmed from the log, if any was."""
        with redis_errors("reading the log's stream info"):
            try:
                reply = await command(self.redis, "XINFO", "STREAM", self.keys.events)
            except redis.exceptions.ResponseError:
                return None  # no stream yet: nothing appended, nothing trimmed
        if isinstance(reply, dict):
            info = {_text(k): v for k, v in reply.items()}
        else:
            info = {_text(k): v for k, v in zip(reply[::2], reply[1::2], strict=False)}
        value = info.get("max-deleted-entry-id")
        found = _text(value) if value is not None else "0-0"
        return None if found == "0-0" else found


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
