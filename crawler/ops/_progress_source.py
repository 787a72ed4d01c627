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

import contextlib
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import anyio.to_thread
import msgspec
import redis.asyncio as aioredis

from crawler.ops._progress import (
    RATE_WINDOW_S,
    TOTAL,
    HostDelay,
    Progress,
    RateWindow,
    SiteCounts,
    Tracker,
    earlier_runs,
    of_run,
    progress,
)
from eventlog import (
    CrawlogError,
    EventLog,
    JobKeys,
    PoisonEntry,
    read_host_delays,
    read_workers,
    stream_id_key,
)
from projector import (
    FetchTracker,
    Manifest,
    State,
    Store,
    bring_back_named,
    read_committed,
    read_live,
)

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
        delay_floor_ms: int | None = None,
        make_tracker: Callable[[State], Tracker] = Tracker,
        every_task: bool = True,
        run: int | None = None,
    ) -> None:
        self.redis = redis
        self.run = run
        """Count only this run's tasks (a recrawl's): the earlier runs' are read once, as
        it loads (`earlier_runs`), and left out of each snapshot. Needs ``every_task``."""
        self._earlier: dict[str, SiteCounts] = {}
        self._earlier_due = False
        """`_earlier` is read from the state at the next refresh, once its tail is folded."""
        self.every_task = every_task
        """Whether the tracker's state holds every task (the console looks tasks up in
        it), or only the live part (``crawlog status``: the ended tasks of a big job stay
        in the task store, and only their per-site retries and recoveries are read)."""
        self.make_tracker = make_tracker
        """What folds the state: a ``Tracker``, or one that also notes more per event (the
        console's charts)."""
        self.delay_floor_ms = delay_floor_ms
        """The job's ``--delay`` when it adapts its delays (``--autothrottle``): each
        refresh then reads every host's delay; None: it does not."""
        self.job = job
        self.keys = JobKeys(job)
        self.log = EventLog(redis, self.keys)
        self.store = Store(data_dir, job)
        self.lease_ms = lease_ms
        self.tracker = make_tracker(State())
        self.committed = "0-0"
        """The projector's committed position the tracker started from."""
        self.window = RateWindow(window_s)
        self.fetches = FetchTracker()
        """The projector's fetch figures as committed, and the tail's since: how many
        requests may have reached the sites twice."""
        self._committed_events = 0
        self._loaded = False
        self._manifest = Manifest(job=job)
        """The manifest the tracker started from: its task store has the ended tasks the
        tail may name."""

    def follow_run(self, run: int | None) -> None:
        """Count ``run``'s tasks from the next refresh on (None: every run's): a console
        open when a recrawl starts goes on with the new run, its rates measured anew."""
        if run == self.run:
            return
        self.run = run
        self._earlier = {}
        self._earlier_due = run is not None and self.every_task  # as `load` leaves it
        self.window = RateWindow(self.window.window_s)

    async def load(self) -> None:
        """Start from what the projector committed (read without its lock)."""

        def read() -> tuple[Manifest, Tracker]:
            if self.every_task:
                # The tracker too: made from a million tasks, it would hold the event loop.
                manifest, state = read_committed(self.store)
                return manifest, self.make_tracker(state)
            # The live part of the state, not every ended task: those are in the task
            # store, and only their per-site retries and recoveries are read here.
            manifest, state, stored = read_live(self.store)
            tracker = self.make_tracker(state)
            for site, (retries, recoveries) in stored.items():
                tracker.retries[site] = tracker.retries.get(site, 0) + retries
                tracker.recoveries[site] = tracker.recoveries.get(site, 0) + recoveries
            return manifest, tracker

        manifest, tracker = await anyio.to_thread.run_sync(read)
        fetches = manifest.summary.fetches if manifest.summary is not None else None
        self.fetches = FetchTracker()
        if fetches is not None:
            tracker.load_clock_offsets(fetches.clock_offsets)
            # The pages the projector kept apart are not in its figures: a refetch of one
            # in the tail may be taken for a first fetch (the next commit counts it right).
            self.fetches.load(fetches)
        self.tracker = tracker
        # After the tail is folded (`refresh`): a task the tail retried has not ended.
        self._earlier_due = self.run is not None and self.every_task
        self._manifest = manifest
        self.committed = manifest.position
        self._committed_events = tracker.state.job.events
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
        if self._earlier_due and self.run is not None:
            self._earlier = earlier_runs(self.tracker.state, self.run)
            self._earlier_due = False
        snapshot = self.tracker.snapshot(time.monotonic() if now is None else now)
        snapshot = of_run(snapshot, self._earlier)
        older = self.window.add(snapshot)
        workers = await read_workers(self.redis, self.keys)
        behind, behind_s = await self._projector_behind(snapshot.events)
        report = progress(
            self.job,
            older,
            snapshot,
            workers=workers,
            lease_ms=self.lease_ms,
            tail_events=behind,
            behind_s=behind_s,
            dead_letters=await self.log.dead_letter_count(),
        )
        report = msgspec.structs.replace(
            report,
            run=self.run,
            requests_maybe_twice=self.fetches.extra_fetches + self.fetches.unrecorded_refetches,
        )
        if self.delay_floor_ms is None:
            return report
        return msgspec.structs.replace(report, host_delays=await self._host_delays(report))

    async def summary_progress(self, *, now: float | None = None) -> Progress | None:
        """The progress as of the projector's last commit, from the manifest's summary
        alone: no task state is read, so it costs the same for a million tasks as for ten
        (what a display shows while :meth:`load` reads a big job's state). Per-site retry
        and recovery counts are not in the summary: zero here. None before a summary was
        committed."""
        manifest = await anyio.to_thread.run_sync(self.store.read_manifest)
        summary = manifest.summary
        if summary is None:
            return None
        state = State(
            position=summary.position,
            job=summary.job,
            sites={site.site: site for site in summary.sites},
        )
        snapshot = Tracker(state).snapshot(time.monotonic() if now is None else now)
        # What the projector has not committed, counted up to one batch (not folded).
        behind, behind_s = 0, None
        with contextlib.suppress(PoisonEntry):
            behind = len(await self.log.read_after(manifest.position, TAIL_BATCH))
        if behind:
            first = await self.log.first_id(after=manifest.position)
            if first is not None:
                now_s = await self.log.server_time()
                behind_s = max(now_s - stream_id_key(first)[0] / 1000, 0.0)
        report = progress(
            self.job,
            None,
            snapshot,
            workers=await read_workers(self.redis, self.keys),
            lease_ms=self.lease_ms,
            tail_events=behind,
            behind_s=behind_s,
            dead_letters=await self.log.dead_letter_count(),
        )
        if summary.fetches is None:
            return report
        twice = summary.fetches.extra_fetches + summary.fetches.unrecorded_refetches
        return msgspec.structs.replace(report, requests_maybe_twice=twice)

    async def _host_delays(self, report: Progress) -> tuple[HostDelay, ...]:
        """The delay each site's host has now: politeness is per host, not per scheme."""
        assert self.delay_floor_ms is not None
        sites = (r.counts.site for r in report.sites if r.counts.site != TOTAL)
        hosts = sorted({site.split("://", 1)[-1] for site in sites})
        found = await read_host_delays(self.redis, self.keys, hosts)
        return tuple(
            HostDelay(
                host=d.host,
                delay_ms=max(self.delay_floor_ms, d.crawl_delay_ms or 0, d.adapted_ms or 0),
                adapted_ms=d.adapted_ms,
            )
            for d in found
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
        first = await self.log.first_id(after=manifest.position)
        now_s = await self.log.server_time()
        if first is None:
            return behind, None
        oldest_ms = stream_id_key(first)[0]
        return behind, max(now_s - oldest_ms / 1000, 0.0)

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
            try:
                # An ended task the tail names (a retry, a late event) is read back first,
                # as the projector brings it back.
                if not self.every_task:
                    await anyio.to_thread.run_sync(
                        bring_back_named, self.store, self._manifest, state, entries
                    )
            except CrawlogError:
                # Its task segments were merged away meanwhile: start over on a newer commit.
                await self.load()
                state = self.tracker.state
                continue
            self.fetches.observe(state, entries)  # before the fold, as the projector does
            self.tracker.fold(entries)
            folded += len(entries)

    async def _trimmed_up_to(self) -> str | None:
        """The highest stream ID trimmed from the log, if any was."""
        info = await self.log.stream_info()
        return info.max_deleted_id if info else None
