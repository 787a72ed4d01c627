"""One task's steps: page after page, fetch → parse → write.

A task resumes from its last checkpoint (or starts at page 1). For every page: held back
if a pause or an open circuit says so; fetched by the downloader (`crawler._downloader`);
a failed fetch retried later or failing the task; the page parsed by the scraper
(`crawler._scraper`), its new tasks enqueued *before* the step is written (a crash in
between refetches the page and enqueues the same links again, deduplicated, whereas the
other order could lose them); then the page's events written with a checkpoint (or, for
the last page, the task's end) in one fenced step. The worker (`crawler._worker`) runs
these steps for each lease it holds.
"""

from __future__ import annotations

import logging
import random
import time
from collections import deque
from collections.abc import Container, Iterable, Sequence
from pathlib import Path
from typing import Final, Protocol, TypeAlias

import anyio
import msgspec

from crawler._addresses import ERROR_REFUSED_ADDRESS_PREFIX
from crawler._circuit import SiteCircuits, verdict_of
from crawler._downloader import Downloader
from crawler._fetch_spec import (
    ERROR_INVALID_REDIRECT,
    ERROR_INVALID_URL,
    ERROR_REDIRECT_LOOP,
    ERROR_REDIRECT_OUT_OF_SCOPE,
    ERROR_TOO_LARGE_PREFIX,
    ERROR_TOO_MANY_REDIRECTS,
    NO_RESPONSE,
    FetchResult,
)
from crawler._job import JobConfig
from crawler._middlewares import Dropped as DroppedByHook
from crawler._middlewares import DropRequest
from crawler._recovery import aborted_for_recoveries, past_recovery_limit
from crawler._recrawl import (
    UNCHANGED,
    body_hash,
    change_of,
    fetched_validators,
    spider_change_rule,
)
from crawler._scraper import Parsed, Scraper, UncertainAction
from crawler._spider import NextPage
from crawler._urls import fingerprint
from eventlog import (
    AnyEvent,
    CheckpointSaved,
    CircuitClosed,
    CircuitOpened,
    Controls,
    Counts,
    Cursor,
    Evidence,
    ItemScraped,
    Lease,
    LeaseLost,
    PageFetched,
    RetryScheduled,
    Task,
    TaskAborted,
    TaskClaimed,
    TaskDone,
    TaskFailed,
    TaskParked,
    TaskQueue,
)

log = logging.getLogger("crawlog.worker")

EVIDENCE_KEPT_MIN_S = 3600.0
"""How long at least a recovered task's last response is kept for its abort: past the
leases of all its recoveries, and the waits in the recovery lane between them."""

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
"""How a task ends (`TaskSteps._end`)."""


NEXT_PAGE_FETCHED: Final = "next page already fetched by this task"
"""Why a task ends at a `NextPage` to a URL it fetched (a pagination loop): the next page is
counted as dropped for it, and the task done with it as its reason."""
TASK_PAGE_CAP: Final = "task page cap reached"
"""Why a task ends at a `NextPage` past ``JobConfig.max_task_pages``."""
PAGES_REMEMBERED = 16
"""Fingerprints of a task's latest pages its checkpoint keeps (`CheckpointSaved.recent_pages`):
a loop through them is still seen after a resume, at a few hundred bytes a checkpoint."""


def next_page_stop(
    next_page: NextPage, fetched: Container[str], page: int, max_pages: int
) -> str | None:
    """Why the task does not go on to ``next_page`` after its page number ``page``: its URL
    is one the task fetched (``fetched``: their fingerprints) and the spider did not say
    ``dont_filter``; or the task has fetched ``max_pages`` pages (0: no cap). None: it goes
    on."""
    if not next_page.dont_filter and fingerprint(next_page.url) in fetched:
        return NEXT_PAGE_FETCHED
    if max_pages and page >= max_pages:
        return TASK_PAGE_CAP
    return None


class FetchedPages:
    """The URLs a task fetched, by fingerprint: every one of this run of it, with those its
    checkpoint remembered, and the latest `PAGES_REMEMBERED` in order (for the next)."""

    __slots__ = ("_all", "_recent")

    def __init__(self, remembered: Iterable[str] = ()) -> None:
        self._recent: deque[str] = deque(remembered, maxlen=PAGES_REMEMBERED)
        self._all = set(self._recent)

    def add(self, url: str) -> None:
        fp = fingerprint(url)
        self._all.add(fp)
        if fp in self._recent:
            self._recent.remove(fp)  # a page fetched again (``dont_filter``): the latest now
        self._recent.append(fp)

    def __contains__(self, fp: object) -> bool:
        return fp in self._all

    def recent(self) -> tuple[str, ...]:
        return tuple(self._recent)


class _Step:
    """One page of a task on its way: where it is, and the events of its step so far."""

    __slots__ = (
        "body_hash",
        "counts",
        "fetched",
        "fetched_at",
        "last",
        "page",
        "pending",
        "url",
    )

    def __init__(
        self,
        *,
        page: int,
        url: str,
        last: CheckpointSaved | None,
        counts: Counts,
        pending: StepEvents,
        fetched: FetchedPages,
    ) -> None:
        self.page, self.url, self.last = page, url, last
        """``last``: the task's checkpoint before this page (None on its first page)."""
        self.counts = counts
        """The task's totals before this page."""
        self.pending = pending
        self.fetched = fetched
        """The pages the task fetched before this one (this one too, once fetched)."""
        self.fetched_at: int | None = None
        """Where the page's `PageFetched` is in ``pending`` (None: not fetched yet)."""
        self.body_hash: str | None = None
        """The fetched body's `body_hash` once computed for its `PageFetched`: the spider's
        `Response.body_hash`, so that a page is hashed once."""


class WorkerStats(msgspec.Struct, kw_only=True):
    """What one worker did."""

    pages: int = 0
    tasks_done: int = 0
    tasks_failed: int = 0
    retries: int = 0
    reclaimed: int = 0
    aborted: int = 0
    enqueued: int = 0


class TaskHost(Protocol):
    """What the steps of a task need of the worker that holds its lease."""

    @property
    def stopping(self) -> anyio.Event:
        """Set once the worker stops: a task hands its lease back at its next page."""

    @property
    def controls(self) -> Controls:
        """The job's pauses and open circuits, as the worker last read them."""

    async def hold_lease(self, lease: Lease) -> None:
        """LeaseLost unless the lease is still the worker's (renewed if it may be stale)."""

    async def release_lease(self, lease: Lease, pending: Sequence[AnyEvent]) -> None:
        """Give the task back to the queue at once, with the events of its step so far."""


class TaskSteps:
    """How one worker takes each task it holds through its pages.

    ``host``: the worker (its stop, its controls, its leases); ``queue`` and ``config``: its
    queue and the job's settings; ``scraper`` and ``downloader``: its spider at work and its
    fetching; ``stats``: the worker's counts, kept up to date; ``data_dir``: where the
    projector archives the log (a trimmed checkpoint is read from there).
    """

    def __init__(
        self,
        host: TaskHost,
        queue: TaskQueue,
        config: JobConfig,
        *,
        scraper: Scraper,
        downloader: Downloader,
        stats: WorkerStats,
        data_dir: Path,
    ) -> None:
        self._host, self.queue, self.config = host, queue, config
        self.name, self.job = queue.consumer, queue.keys.job
        self.scraper, self.downloader, self.stats = scraper, downloader, stats
        self.data_dir = data_dir
        self.policy = config.retry_policy()
        self.circuits = SiteCircuits(config.breaker())
        self.change_rule = spider_change_rule(scraper.spider)
        self._rng = random.Random()
        self.unsettled: dict[str, str] = {}
        """Task id -> this worker, for the tasks that sent a request whose step is not
        written yet: saved if the store loses the job (`save_in_flight_at_loss`)."""

    async def crawl(self, lease: Lease) -> None:
        """The task of ``lease``, page after page from its resume point: each page fetched
        (`_fetch_step`), parsed (`_parse_step`), then written (`_write_step`)."""
        task = lease.task
        if past_recovery_limit(lease, self.config.recovery_limit):
            await self._end(lease, await self._aborted(lease, (*task.owners, self.name)))
            return
        step: _Step | None = await self._first_step(lease)
        while step is not None:
            if (result := await self._fetch_step(lease, step)) is None:
                return
            if (parsed := await self._parse_step(lease, step, result)) is None:
                return
            step = await self._write_step(lease, step, result, parsed)

    async def _first_step(self, lease: Lease) -> _Step:
        """The step the task starts (or resumes) at, its claim to be written with it."""
        task = lease.task
        claimed = TaskClaimed(
            actor=self.name,
            task_id=task.task_id,
            attempt=task.attempt,
            deliveries=lease.deliveries,
            unrecorded_fetch=lease.unrecorded_fetch,
        )
        last = await self._last_checkpoint(lease)
        if last is None:
            return _Step(
                page=1,
                url=task.url,
                last=None,
                counts=Counts(),
                pending=[claimed],
                fetched=FetchedPages(),
            )
        resume = last.cursor
        return _Step(
            page=resume.page + 1,
            url=resume.url or task.url,
            last=last,
            counts=last.counts,
            pending=[claimed],
            fetched=FetchedPages(last.recent_pages),
        )

    async def _fetch_step(self, lease: Lease, step: _Step) -> FetchResult | None:
        """The step's page, fetched and its `PageFetched` in ``step.pending``; None if the
        task ended or left this worker instead (stopping, held back, disallowed, failed,
        retried later, handed over to the task of a redirect's target)."""
        task, pending = lease.task, step.pending
        if self._host.stopping.is_set():
            # Stopping: what was checkpointed is kept; hand the rest over at once.
            await self._host.release_lease(lease, pending)
            return None
        if await self._held_back(lease, pending):
            return None
        # Only the task's own request has its method and body: a next page is a GET.
        result = await self.downloader.fetch(
            step.url,
            task,
            first=step.page == 1,
            hold=lambda: self._host.hold_lease(lease),
            started=lambda: self.queue.mark_fetch_started(lease),
        )
        if result is None:  # robots.txt says no
            await self._end(lease, self._task_failed(task, "disallowed by robots.txt"), pending)
            return None
        if isinstance(result, DroppedByHook):  # a spider's request hook said no
            await self._end(lease, self._task_failed(task, result.reason), pending)
            return None
        if result.requested:
            # A page is counted only when it was asked for: the retry that follows an
            # unreadable robots.txt says why the task waits (its reason), not a fetch.
            self.stats.pages += 1
            self.unsettled[task.task_id] = self.name
            step.fetched_at = len(pending)
            pending.append(self._page_fetched(task, step, result))
            step.fetched.add(step.url)
            if result.final_url and result.final_url != step.url:
                step.fetched.add(result.final_url)
        if await self._retry_or_fail(lease, result, pending):
            return None
        if result.handed_over:
            reason = f"redirect to {result.location}, fetched by its own task"
            await self._end(lease, self._task_done(task, reason, step.counts), pending)
            return None
        fetched = None if step.fetched_at is None else pending[step.fetched_at]
        if isinstance(fetched, PageFetched) and fetched.change == UNCHANGED:
            # A revisit that found the page as it was: not parsed, its items stay.
            c = step.counts
            counts = Counts(pages=c.pages + 1, items=c.items, bytes=c.bytes)
            await self._end(lease, self._task_done(task, UNCHANGED, counts), pending)
            return None
        if lease.recoveries and (evidence := evidence_of(result)) is not None:
            # Its workers died with this task before: if this one does too, its abort
            # comes from a worker that never saw the page, and carries this instead.
            await self.queue.keep_evidence(task.task_id, evidence, self._evidence_ttl_ms)
        return result

    def _page_fetched(self, task: Task, step: _Step, result: FetchResult) -> PageFetched:
        if self.change_rule is None:
            step.body_hash = body_hash(result.body)
        seen = fetched_validators(
            task,
            result.status,
            result.headers,
            result.body,
            self.change_rule,
            hashed=step.body_hash,
        )
        # Its URL now redirects to another task's page, or out of the crawl.
        moved = result.handed_over or result.error == ERROR_REDIRECT_OUT_OF_SCOPE
        url = result.final_url or step.url
        return PageFetched(
            actor=self.name,
            task_id=task.task_id,
            attempt=task.attempt,
            url=url,
            status=result.status,
            bytes=len(result.body),
            elapsed_ms=result.elapsed_ms,
            page=step.page,
            error=result.error,
            etag=seen.etag,
            last_modified=seen.last_modified,
            body_hash=seen.body_hash,
            run=task.run,
            change=(
                change_of(
                    task,
                    result.status,
                    seen.body_hash,
                    moved=moved,
                    landed=url if url != task.url else None,
                )
                if step.page == 1
                else None
            ),
        )

    async def _parse_step(self, lease: Lease, step: _Step, result: FetchResult) -> Parsed | None:
        """What the spider makes of the page, its new tasks enqueued and its next page
        taken (not to a page the task fetched, nor past a page cap), its drops noted on
        the page's `PageFetched`; None if the spider failed the task."""
        try:
            parsed = await self.scraper.parse(
                lease, result, step.page, step.last, body_hash=step.body_hash
            )
        except (LeaseLost, UncertainAction):
            raise
        except DropRequest as drop:  # a spider's response hook said no
            await self._end(lease, self._task_failed(lease.task, str(drop), result), step.pending)
            return None
        except Exception as exc:
            # A bug in the spider (or output crawlog cannot take): the same page would
            # fail the same way on every retry, and crashing the worker would redeliver
            # it until the recovery limit. The task fails with the error; ``crawlog
            # retry`` once the spider is fixed.
            failure = self.scraper.failure(exc, step.url)
            failed = self._task_failed(lease.task, failure.reason, result)
            if failure.traceback is not None and failed.evidence is not None:
                evidence = failed.evidence.with_traceback(failure.traceback)
                failed = msgspec.structs.replace(failed, evidence=evidence)
            await self._end(lease, failed, step.pending)
            return None
        finally:
            if (browser := self.downloader.browser) is not None:
                await browser.release(result)  # the rendered page, left open for the spider
        nxt, cap = parsed.next_page, self.config.max_task_pages
        if nxt is not None and (stop := next_page_stop(nxt, step.fetched, step.page, cap)):
            # A pagination loop (or one that never ends): Scrapy's dupefilter drops such a
            # request; here the task ends, its page's items kept, the drop counted.
            parsed.next_page, parsed.stop = None, stop
            parsed.drop(stop)
        # Awaited first: ``stats.enqueued += await ...`` reads the count before the await,
        # and the worker's other tasks' additions meanwhile would be lost.
        enqueued = await self.scraper.admit(parsed)
        self.stats.enqueued += enqueued
        if step.fetched_at is not None:
            fetched = step.pending[step.fetched_at]
            if parsed.dropped:
                fetched = msgspec.structs.replace(fetched, dropped=parsed.dropped)
            if parsed.items_dropped:
                fetched = msgspec.structs.replace(fetched, items_dropped=parsed.items_dropped)
            step.pending[step.fetched_at] = fetched
        return parsed

    async def _write_step(
        self, lease: Lease, step: _Step, result: FetchResult, parsed: Parsed
    ) -> _Step | None:
        """The page's events written with a checkpoint, and the next page's step; or, for
        the task's last page, with its end (None)."""
        task, items = lease.task, parsed.items
        pending = step.pending
        pending += [
            ItemScraped(actor=self.name, task_id=task.task_id, key=i.key, data=i.data)
            for i in items
        ]
        counts = Counts(
            pages=step.counts.pages + 1,
            items=step.counts.items + len(items),
            bytes=step.counts.bytes + len(result.body),
        )
        if (nxt := parsed.next_page) is None:
            reason = parsed.stop or f"HTTP {result.status}"
            await self._end(lease, self._task_done(task, reason, counts), pending)
            return None
        cursor = Cursor(
            page=step.page,
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
            recent_pages=step.fetched.recent(),
        )
        await self.queue.checkpoint(lease, saved, before=pending)
        self.unsettled.pop(task.task_id, None)  # its page is in the log now
        return _Step(
            page=step.page + 1,
            url=nxt.url,
            last=saved,
            counts=counts,
            pending=[],
            fetched=step.fetched,
        )

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
        if (why := self._host.controls.blocks(site, task.task_id)) is not None:
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
        until = self._host.controls.open_circuits.get(site, 0.0)
        if until > now or not self.circuits.allow(site, now):
            wait = max(until - now, self.circuits.breaker.cooldown / 2)
            await self.queue.delay(lease, pending, task, wait)
            return True
        return False

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

    async def _aborted(self, lease: Lease, owners: tuple[str, ...]) -> TaskAborted:
        aborted = aborted_for_recoveries(lease, self.name, self.config.recovery_limit, owners)
        kept = await self.queue.kept_evidence([aborted.task_id])
        if aborted.task_id in kept:
            return msgspec.structs.replace(aborted, evidence=kept[aborted.task_id])
        return aborted

    @property
    def _evidence_ttl_ms(self) -> int:
        """How long a recovered task's last response is kept for its abort."""
        leases = self.config.lease_ms * (self.config.recovery_limit + 2)
        return max(int(EVIDENCE_KEPT_MIN_S * 1000), leases)


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
