"""``crawlog crawl``: a job's processes, started, watched and summed up.

The crawl process itself crawls nothing: it forks N workers and the projector before its
event loop (``fork_children``, see ``_fork``), stores the job's configuration, enqueues the
seeds (idempotently: running the same command again after a crash enqueues nothing new),
starts the children, prints progress, and when every task is terminal stops the projector
(which commits at once) and prints a summary from that commit. Nothing heavy is imported
before the children are forked (the progress table, the projector's archive): they would
inherit it, and a restart after a crash is timed to its first request
(``tools/bench_restart.py``), a 1-page crawl to its summary (``tools/bench_tiny_crawl.py``);
so the children's own imports overlap each other and the crawl's start of the server. The
one exception is the HTTP stack of two workers or more, imported once here rather than
once a worker (``_import_http_stack``).
A crawl that stops before the projector started runs it once
(``project --once``), so the summary is still read from a commit of the whole log; one
that stops it while it is still starting finds the stop waiting for it (it is started
with SIGTERM blocked, and unblocks it once it listens).

A stop (Ctrl-C, SIGTERM) goes in the same order: the workers first, until each has
exited (its last events are in the log), then the projector, which reads to the log's
end and commits, and the summary is read from that commit. The projector runs in its own
session so that a Ctrl-C at the terminal, which signals the whole foreground process
group, does not stop it before the workers' last events are written. Workers
are named ``w1`` … ``wN``, so a re-run after a crash resumes each one's pending tasks at
once; tasks of a worker that does not come back are reclaimed when their leases expire.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import importlib
import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Container, Mapping, Sequence
from typing import TYPE_CHECKING

import anyio
import msgspec
from anyio.abc import Process

from crawler._defaults import (
    DEFAULT_SPIDER_ERROR_SHARE,
    PAST_MAX_PAGES,
    FailOn,
    is_spider_failure,
)
from crawler._job import JobConfig, save_config
from crawler._loop import loop_options
from crawler._spider import load_spider
from crawler._start_requests import enqueue_start_requests
from crawler._worker import enqueue_seeds_within
from crawler.cli._argv import crawlog_command
from crawler.cli._crawl_settings import bound_line
from crawler.cli._durability_option import durability_in_force
from crawler.cli._exit import EXIT_STORE_LOST
from crawler.cli._fork import Forked, can_fork, fork_command
from crawler.cli._lifeline import PARENT_ENV
from crawler.cli._light import without_httpx_cli
from crawler.cli._terminal import ChildOutput
from eventlog import (
    DEFAULT_RIDE_OUT_S,
    FIRST_RUN,
    MEMORY_CHECK_S,
    JobIdentity,
    JobKeys,
    JournalFlush,
    ServerCannotPersist,
    ServerError,
    ServerEvicts,
    ServerInfo,
    StoreLost,
    TaskQueue,
    answers,
    check_identity,
    connect,
    evicting_server,
    flush_journals,
    hold_job_crawl,
    is_sentinel_url,
    out_of_memory_advice,
    read_memory,
    redacted,
    replica_set_url,
    require_replica,
    supervise_replica_set,
    supervise_server,
    watch_primary,
)

if TYPE_CHECKING:
    from pathlib import Path

    import redis.asyncio as aioredis

    from crawler.cli._crawl_settings import CrawlSettings
    from crawler.cli._progress_view import Display
    from crawler.ops import LiveProgress, Progress
    from projector import Store

PROGRESS_EVERY_S = 1.0
PROGRESS_GC_GEN0 = 100_000
"""Allocations between two young-generation collections while the crawl shows progress
(700 by default): each refresh decodes and folds every event appended since the last one,
short-lived objects that make almost no cycles (as the projector's, which collects as
rarely for the same reason)."""
_STOPS = {signal.SIGTERM, signal.SIGINT}
STOP_GRACE_S = 15.0
WAITING_SHOWN = 10
"""Tasks waiting for a person named by id in the crawl's last lines (then "...")."""


WORKER_PRELOAD = ("crawler._worker", "crawler._fetch")
"""What a forked worker imports while the crawl starts the server: its HTTP stack."""
PROJECTOR_PRELOAD = (
    "crawler.cli.projector",
    "projector:Projector",
    "pyarrow",
    "pyarrow.json",
    "pyarrow.parquet",
)
"""What a forked projector imports meanwhile: its archive (Arrow, which the projector's
modules import only at its first use: the crawl's own process, reading its summary,
needs none)."""

Child = Process | Forked
"""A worker or projector: forked before the event loop, or started as a new interpreter."""


class Forks:
    """The children a crawl forked before its event loop (see ``_fork``), and the pipe
    their stderr goes to; those never started are killed by :meth:`dismiss`."""

    def __init__(self, workers: list[Forked], projector: Forked, output: ChildOutput) -> None:
        self.workers = workers
        self.projector = projector
        self.output = output

    def dismiss(self) -> None:
        """End each child that was not started (it did nothing)."""
        for child in (*self.workers, self.projector):
            if not child.started:
                child.dismiss()


def fork_children(settings: CrawlSettings) -> Forks | None:
    """Fork the crawl's workers and projector now (None where forking is not safe: see
    ``can_fork``); ``run_crawl`` starts them once the job is stored and seeded."""
    if not can_fork():
        return None
    without_httpx_cli()  # for the workers, which import httpx (and so, this process)
    with contextlib.suppress(ImportError):
        # The event loop's backend, which anyio imports on its first run: every child runs
        # one, and each would import it again.
        importlib.import_module("anyio._backends._asyncio")
    loop_options()  # imports uvloop, which every worker runs on, once for all of them
    # What every process has imported by now lives as long as it does: out of every
    # collection, a child's collector neither walks it nor copies its pages by writing to it.
    gc.freeze()
    most = _most_tasks(settings.config)
    count = settings.workers if most is None else min(settings.workers, most)
    output = ChildOutput(relay=False)
    projector: Forked | None = None
    forked: list[Forked] = []
    try:
        # First, so that it inherits none of the workers' HTTP stack.
        projector = fork_command(
            _projector_args(settings),
            name="crawlog-project",
            title=f"crawlog projector job {settings.job}",
            preload=PROJECTOR_PRELOAD,
            stderr=output.fd,
            quiet=True,
            new_session=True,
            blocked=_STOPS,
        )
        if count > 1:
            _import_http_stack()
        for n in range(1, count + 1):
            forked.append(
                fork_command(
                    _worker_args(settings, n),
                    name=f"crawlog-w{n}",
                    title=f"crawlog worker w{n} job {settings.job}",
                    preload=WORKER_PRELOAD,
                    stderr=output.fd,
                )
            )
    except BaseException:
        for child in (*forked, *([projector] if projector is not None else [])):
            child.dismiss()
        raise
    finally:
        output.relay()
    return Forks(forked, projector, output)


def _import_http_stack() -> None:
    """Import the workers' HTTP stack and build their TLS context here, once, rather than
    in every worker, each paying the same CPU for it. A crawl of one worker leaves it to
    the worker, where it overlaps the crawl's start of the server; its context reads its CA
    certificates only if the crawl meets an https URL (``crawler._tls``)."""
    from crawler._fetch import tls_context
    from crawler._tls import DeferredCAContext

    context = tls_context()
    if isinstance(context, DeferredCAContext):
        context.read_cas()  # here, once for every worker, as the rest of the stack
    gc.freeze()  # as what was imported before: out of every collection, shared


def _worker_args(settings: CrawlSettings, n: int) -> tuple[str, ...]:
    common = ("--job", settings.job, "--data-dir", str(settings.data_dir))
    worker = ("worker", *common, "--concurrency", str(settings.concurrency), "--exit-when-done")
    return (*worker, "--name", f"w{n}", *_metrics_args(settings.metrics, n))


def _projector_args(settings: CrawlSettings, *, once: bool = False) -> tuple[str, ...]:
    common = ("--job", settings.job, "--data-dir", str(settings.data_dir))
    once_args = ("--once",) if once else ()
    return ("project", *common, *once_args, *_metrics_args(settings.metrics, 0))


class CrawlSummary(msgspec.Struct, kw_only=True):
    """How a crawl ended, from the log."""

    job: str
    complete: bool
    tasks: dict[str, int]
    pages: int
    refetches: int
    items: int
    duplicate_items: int
    anomalies: int
    """Refused events but the orphaned journal writes (``JobState.refused``)."""
    seconds: float
    requests_maybe_twice: int = 0
    """Requests that may have reached the site twice, as of the projector's last commit
    (``projector.Totals.requests_maybe_twice``): the refetches the log holds, and first
    fetches after a lost lease whose request may have been sent before."""
    dead_letters: int = 0
    """Entries nobody could decode (the dead stream), as of the projector's last commit."""
    exits: tuple[int | None, ...] = ()
    """Exit statuses of the projector and the workers, in that order."""
    past_bound: int = 0
    """URLs (and next pages) not crawled because the job had fetched ``--max-pages`` pages."""
    spider_failures: int | None = None
    """Failed tasks whose spider failed them (``is_spider_failure``), not the site; None
    where not counted (`spider_failures_counted`: no count could pass the share)."""
    orphaned: int = 0
    """Journalled writes refused as their task's lease was taken over (``JobState.orphaned``):
    by design after a store loss or stall, so not among the anomalies."""


async def _finished(queue: TaskQueue, echo: Callable[[str], None]) -> bool:
    """Whether every task is terminal; names the tasks waiting for a person (the workers
    exit when nothing else is left: the crawl ends rather than wait for them)."""
    left, waiting = await queue.left()
    if waiting:
        more = ", ..." if len(waiting) > WAITING_SHOWN else ""
        shown = ", ".join(waiting[:WAITING_SHOWN]) + more
        echo(
            f"{len(waiting)} task(s) wait for a person to decide about an uncertain action: "
            f"{shown}; see `crawlog history --job {queue.keys.job} TASK_ID`, then "
            f"`crawlog resolve --job {queue.keys.job} --task TASK_ID --done|--redo --reason ...`"
        )
    return left == 0


def failure(
    summary: CrawlSummary,
    fail_on: FailOn,
    spider_error_share: float = DEFAULT_SPIDER_ERROR_SHARE,
) -> str | None:
    """Why a finished crawl fails under ``fail_on`` (see ``FailOn``), or None if it does not;
    ``spider_error_share``: the share of ended tasks that may fail through spider errors
    under ``spider-errors``."""
    if fail_on == "never":
        return None
    done, failed = summary.tasks.get("done", 0), summary.tasks.get("failed", 0)
    aborted = summary.tasks.get("aborted", 0)
    if done == 0:
        ended = ", ".join(f"{n} {status}" for status, n in sorted(summary.tasks.items()))
        return f"no task ended done ({ended or 'no tasks'})"
    if fail_on == "none-done":
        return None
    if aborted:
        return f"{aborted} task(s) aborted: recovered too often (each killed its workers)"
    tasks, spider = sum(summary.tasks.values()), summary.spider_failures or 0
    if fail_on == "spider-errors" and spider > spider_error_share * tasks:
        return (
            f"{spider} of {tasks} task(s) ({spider / tasks:.0%}) failed through spider errors, "
            f"more than {spider_error_share:.0%} (--spider-error-share {spider_error_share:g}): "
            f"`crawlog report --job {summary.job}` says where"
        )
    if fail_on == "failed" and failed:
        return f"{failed} task(s) failed: `crawlog report --job {summary.job}` says why"
    return None


async def run_crawl(
    settings: CrawlSettings,
    url: str,
    *,
    echo: Callable[[str], None],
    server: ServerInfo | None = None,
    forks: Forks | None = None,
    seed: Seeder | None = None,
    finished: Callable[[TaskQueue], Awaitable[None]] | None = None,
    run: Callable[[], int] | None = None,
    spider_error_share: float | None = None,
) -> CrawlSummary:
    """Run the job to completion (or until interrupted); its summary.

    ``forks``: its children, forked already (``fork_children``); those it has no use for
    are dismissed, and what it needs more is started as new interpreters.

    ``server``: crawlog's own server, at ``url``, which the crawl supervises (restarts
    it if it dies, see ``supervise_server``); None for a server of the user's
    (``REDIS_URL``), of which progress says when it stops answering.

    ``seed``: what enqueues the job's first tasks, under the job's crawl lock (by default
    its seeds and sitemaps, ``_store_and_seed``; ``crawlog recrawl``'s run's pages);
    ``finished``: called once every task ended, before the summary. ``run``: the run the
    seeding chose (``crawlog recrawl``'s), whose own tasks the progress counts.
    ``spider_error_share``: ``--fail-on spider-errors``'s share, for the summary to count
    the spider failures that could pass it (None: the exit does not judge them).
    """
    started = time.monotonic()
    job, data_dir = settings.job, settings.data_dir
    # Like its workers and projector, the crawl waits out a Redis restart (and refuses a
    # server that evicts keys); it says itself when the server is out of memory. One crawl
    # of a job at a time: a second one says so up front, before it stores or starts anything.
    evicting: list[ServerEvicts] = []  # set by watch_memory: the crawl stops with it
    # No health check (a PING before a command on a connection new or idle): a server that
    # cannot save refuses PING with its writes, and the progress must still read the log
    # then; a connection found dead is opened again by the ride-out's retry.
    async with (
        connect(url, ride_out_s=DEFAULT_RIDE_OUT_S, quiet=True, health_check_s=0) as client,
        _said_if_full(client, job, url, echo),
        hold_job_crawl(client, JobKeys(job)),
    ):
        if durability_in_force() == "replica":
            await require_replica(client, redacted(url))
        # Before anything is written: a store that lost the job must not take it for a new
        # one (its seeds enqueued again, every page fetched again).
        identity = await _store_checked(client, data_dir, job)
        queue = TaskQueue(client, job, "crawl")
        # Before any worker claims: what the job's workers journalled and no store answered
        # (the workers of the last crawl, however many this one starts).
        flushed = sum((await flush_journals(client, job, data_dir)).values(), JournalFlush())
        if flushed.total:
            echo(journals_line(job, flushed))
        config, new = await (seed or _store_and_seed)(queue, settings.config, echo)
        most = _most_tasks(config)
        workers = settings.workers if most is None else min(settings.workers, most)
        # A recrawl's are its run's tasks (its revisits and what its sitemaps list new).
        named = f"job {job}: {new} new seed(s)"
        if run is not None:
            named = f"job {job} run {run()}: {new} task(s) enqueued"
        echo(f"{named}, {workers} worker(s) x {settings.concurrency}, data in {data_dir}")
        echo(bound_line(config.max_pages))
        children = _Children(settings, url, workers, forks)
        try:
            await children.start_workers()
            # Beside the workers, not after their first event: a small job ends as soon as
            # the projector has read its last events and committed, so its start (Arrow,
            # its store) is on the way to the summary of every crawl.
            await children.start_projector()
            # Every child has its copy of the pipe's write end now (a projector started
            # later, with --once, is started before the pipe is closed, in ``stop``).
            children.output.started()

            await _watch_children(
                children, client, settings, url, config.lease_ms, server, evicting.append, echo,
                run=None if run is None else run(),
            )  # fmt: skip
            complete = await _finished(queue, echo)
            if identity is not None:
                # "Nothing left" from a store that lost the job is no end of it.
                await check_identity(client, queue.keys, identity)
            if complete and finished is not None:
                await finished(queue)
        finally:
            with anyio.CancelScope(shield=True):
                await children.stop()
    _raise_why_stopped(children, job, evicting)
    return _summary(
        settings,
        complete=complete,
        seconds=time.monotonic() - started,
        exits=children.exits(),
        spider_error_share=spider_error_share,
    )


@contextlib.asynccontextmanager
async def _said_if_full(
    client: aioredis.Redis, job: str, url: str, echo: Callable[[str], None]
) -> AsyncIterator[None]:
    """Say, before the crawl's first write, that the server is out of memory if it is: the
    write waits for room (`ride_out_retry`), and `watch_memory` says it only once the
    workers run, so a crawl started on a full server waited in silence."""
    memory = await read_memory(client)
    if memory is not None and memory.full:
        echo(
            f"crawl {job}: {out_of_memory_advice(redacted(url))}; the crawl waits for room "
            f"to start (up to {DEFAULT_RIDE_OUT_S:.0f} s)"
        )
    yield


async def _watch_children(
    children: _Children,
    client: aioredis.Redis,
    settings: CrawlSettings,
    url: str,
    lease_ms: int,
    server: ServerInfo | None,
    evicts: Callable[[ServerEvicts], None],
    echo: Callable[[str], None],
    *,
    run: int | None = None,
) -> None:
    """Show progress (of ``run``'s tasks, if given) until every worker has exited,
    meanwhile forwarding signals to the workers, supervising the server (see
    ``run_crawl``) and watching its memory."""
    data_dir = settings.data_dir
    async with anyio.create_task_group() as tg:
        tg.start_soon(_forward_signals, children.worker_processes, echo)
        tg.start_soon(children.stop_projector_after_the_workers)
        if server is not None:
            tg.start_soon(children.supervise, server, echo)
        elif replica_set_url(data_dir) == url:
            tg.start_soon(children.supervise_set, data_dir, echo)
        elif is_sentinel_url(url):
            # Sentinels of the user's: nothing to restart, a failover to say.
            tg.start_soon(watch_primary, url, echo)
        tg.start_soon(
            watch_memory,
            client,
            settings.job,
            url,
            children.worker_processes,
            evicts,
            echo,
        )
        tg.start_soon(_import_progress_source)
        progress = functools.partial(_live_progress, client, settings, lease_ms, run)
        await _watch(progress, children.workers_exited, echo, url)
        tg.cancel_scope.cancel()


def _raise_why_stopped(children: _Children, job: str, evicting: list[ServerEvicts]) -> None:
    """Raise what stopped the crawl short, if anything did: its store lost, or a server
    that evicts keys."""
    if EXIT_STORE_LOST in children.exits():
        # Its processes found the job's keys gone (and said nothing: the crawl says it).
        raise StoreLost(job, "its processes found its task lanes or identity gone")
    if evicting:
        # Stopped cleanly (the workers handed their tasks back, the projector committed):
        # the same command carries on once the server no longer evicts.
        raise evicting[0]


Seeder = Callable[[TaskQueue, JobConfig, Callable[[str], None]], Awaitable[tuple[JobConfig, int]]]
"""What enqueues a crawl's first tasks: the job's configuration stored and how many are new."""


def journals_line(job: str, flushed: JournalFlush) -> str:
    """What the journals the job's workers left gave back, as a crawl says it."""
    return (
        f"job {job}: the workers' journals gave back {flushed.applied} write(s) the store "
        f"had not (or had lost), {flushed.present} it had, {flushed.orphaned} orphaned "
        f"(their tasks were taken over), {flushed.skipped} skipped"
    )


async def _store_checked(client: aioredis.Redis, data_dir: Path, job: str) -> JobIdentity | None:
    """The job's identity, minted for a new job; `StoreLost` if the store lost the job."""
    from projector import check_store  # light: the manifest's identity, read as JSON

    return await check_store(client, data_dir, job, create=True)


async def _store_and_seed(
    queue: TaskQueue, config: JobConfig, echo: Callable[[str], None]
) -> tuple[JobConfig, int]:
    """Store the job's configuration (or check it is the one stored) and enqueue its seeds
    and sitemaps' URLs; the configuration stored and how many seeds were new."""
    config = await save_config(queue.redis, queue.keys, config)
    seeds = list(config.seeds)
    new, past = await enqueue_seeds_within(queue, seeds, actor="crawl", max_pages=config.max_pages)
    if past:
        # A job at its bound refuses a new seed as it refuses a link: said, not silent.
        echo(f"seeds: {past} past --max-pages, not enqueued")
    spider = load_spider(config.spider, config.spider_args)  # imported already: checked
    started, made, before, refused = await enqueue_start_requests(
        queue, config, spider, actor="crawl"
    )
    if made:
        past_bound = f", {refused} past --max-pages, not enqueued" if refused else ""
        echo(
            f"start_requests(): {made} request(s), {before} enqueued before, {started} new"
            f"{past_bound}"
        )
        new += started
    if config.sitemaps or config.sitemaps_from_robots:
        # Before the workers: a crawl seeded only by sitemaps has nothing else queued,
        # and its workers would find the job done.
        await seed_sitemaps(queue, config, echo)
    return config, new


def spider_failures_counted(tasks: Mapping[str, int], share: float | None) -> bool:
    """Whether a crawl's spider failures must be counted (every task's state read) to
    judge ``--fail-on spider-errors`` with ``share`` (None: not judged, as a recrawl's
    exit is not): only if its failed tasks are more than that share of its tasks, for its
    spider failures are some of them."""
    return share is not None and tasks.get("failed", 0) > share * sum(tasks.values())


def _summary(
    settings: CrawlSettings,
    *,
    complete: bool,
    seconds: float,
    exits: tuple[int | None, ...],
    spider_error_share: float | None,
) -> CrawlSummary:
    """The crawl's summary, from the projector's last commit (its spider failures counted
    if `spider_failures_counted` says so)."""
    from projector import Store, read_committed

    job = settings.job
    store = Store(settings.data_dir, job)
    manifest, state = read_committed(store, tasks=False)  # totals only
    # Every task's state is read (for a recrawled job, every run's) only when its count
    # could fail the crawl: to tell the spider's failures from the site's.
    spider_failures = (
        _spider_failures(store)
        if spider_failures_counted(state.job.tasks, spider_error_share)
        else None
    )
    fetches = manifest.summary.fetches if manifest.summary else None
    return CrawlSummary(
        requests_maybe_twice=(
            fetches.extra_fetches + fetches.unrecorded_refetches if fetches is not None else 0
        ),
        dead_letters=manifest.summary.dead_letters if manifest.summary else 0,
        job=job,
        complete=complete,
        tasks={k: v for k, v in state.job.tasks.items() if v},
        pages=state.job.pages,
        refetches=state.job.refetches,
        items=state.job.items,
        duplicate_items=state.job.duplicate_items,
        anomalies=state.job.refused,
        orphaned=state.job.orphaned,
        seconds=seconds,
        exits=exits,
        past_bound=state.job.dropped.get(PAST_MAX_PAGES, 0),
        spider_failures=spider_failures,
    )


def _spider_failures(store: Store) -> int:
    """How many of the job's failed tasks (as committed) their spider failed."""
    from projector import read_committed

    _, state = read_committed(store)
    return sum(
        1
        for task in state.tasks.values()
        if task.status == "failed" and is_spider_failure(task.last_reason)
    )


class _Children:
    """A crawl's workers and projector: started (forked already, or as new interpreters),
    their stop ordered (the workers first, then the projector), their exit statuses."""

    def __init__(self, settings: CrawlSettings, url: str, workers: int, forks: Forks | None):
        self.settings = settings
        self.workers = workers
        self.forks = forks
        self.env = {**os.environ, "REDIS_URL": url, PARENT_ENV: str(os.getpid())}
        # The children's stderr comes through this process: written to the terminal by
        # themselves, it broke the live table's redraw (ChildOutput says how).
        self.output = forks.output if forks is not None else ChildOutput()
        self.worker_processes: list[Child] = []
        self.projector: Child | None = None
        self.server_lost = False
        self.projector_told = False
        """Sent its SIGTERM once the workers had exited."""
        self.workers_exited = anyio.Event()

    async def start_workers(self) -> None:
        """Start ``workers`` workers: the forked ones first, then new interpreters."""
        forked = self.forks.workers if self.forks is not None else []
        for n in range(1, self.workers + 1):
            if n <= len(forked):
                forked[n - 1].start(self.env)
                self.worker_processes.append(forked[n - 1])
                continue
            command = crawlog_command(*_worker_args(self.settings, n))
            # stderr into ChildOutput's pipe, not anyio's default one: nobody would read
            # that pipe, so a child's errors were lost, and a full pipe would block its
            # logging.
            child = await anyio.open_process(
                command, env=self.env, stdout=None, stderr=self.output.fd
            )
            self.worker_processes.append(child)
        for extra in forked[self.workers :]:
            extra.dismiss()  # the job's stored settings allow fewer than were forked

    async def start_projector(self, *, once: bool = False) -> Child:
        """Start the projector: the forked one, or (``once``: to the log's end and one
        commit) a new interpreter."""
        if self.forks is not None and not once:
            self.forks.projector.start(self.env)
            self.projector = self.forks.projector
            return self.projector
        command = crawlog_command(*_projector_args(self.settings, once=once))
        # Started with SIGTERM blocked (a child inherits the mask): a stop that
        # comes while it is still starting waits until it listens for it, instead
        # of killing it before it could commit.
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, set() if once else _STOPS)
        try:
            # Its stdout is only the line of its last commit, which the crawl's own
            # summary says again; printed, it went under the live table (the table is
            # still drawn when the projector stops) or among the JSON log lines.
            self.projector = projector = await anyio.open_process(
                command,
                env=self.env,
                stdout=subprocess.DEVNULL,
                stderr=self.output.fd,
                start_new_session=True,
            )
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        return projector

    async def supervise(self, own: ServerInfo, echo: Callable[[str], None]) -> None:
        """Restart crawlog's own server if it dies; note when it could not be."""
        try:
            await supervise_server(own, echo)
        except ServerError:
            self.server_lost = True
            raise

    async def supervise_set(self, data_dir: Path, echo: Callable[[str], None]) -> None:
        """The data directory's replica set: members restarted, a failover said."""
        try:
            await supervise_replica_set(data_dir, echo)
        except ServerError:
            self.server_lost = True
            raise

    async def stop_projector_after_the_workers(self) -> None:
        """Their last events are in the log once they have exited: the projector's last
        commit starts now, beside the last progress refresh, not after it (the progress
        waits for this, not for the workers: its first refresh imports the table, and held
        this up)."""
        for process in self.worker_processes:
            await process.wait()
        projector = self.projector
        if projector is not None and projector.returncode is None and not self.server_lost:
            projector.send_signal(signal.SIGTERM)
            self.projector_told = True
        self.workers_exited.set()

    async def stop(self) -> None:
        """Stop what still runs, the workers first: the projector, stopped, reads to the
        log's end and commits before it exits, and the summary reads that commit."""
        workers = self.worker_processes
        if self.server_lost:
            # Nothing they could still write would reach a server: what they hold
            # stays leased, as after a kill, for the next run to take back.
            for process in (self.projector, *workers):
                if process is not None and process.returncode is None:
                    process.kill()
        await stop_processes(workers)
        if self.projector is not None:
            # Told once only: a second SIGTERM would end it in its last commit.
            await stop_processes([self.projector], told=self.projector_told)
        elif not self.server_lost:
            # Never started (all over before the workers wrote): once, to the end.
            await (await self.start_projector(once=True)).wait()
        await anyio.to_thread.run_sync(self.output.close)

    def exits(self) -> tuple[int | None, ...]:
        """Exit statuses of the projector and the workers, in that order."""
        projector = self.projector.returncode if self.projector is not None else None
        return (projector, *(p.returncode for p in self.worker_processes))


def _live_progress(
    client: aioredis.Redis, settings: CrawlSettings, lease_ms: int, run: int | None
) -> LiveProgress:
    """The crawl's progress source (of ``run``'s tasks, if given); imported once the
    workers are under way (it reads the projector's archive)."""
    from crawler.ops import LiveProgress

    return LiveProgress(client, settings.job, settings.data_dir, lease_ms=lease_ms, run=run)


async def _import_progress_source() -> None:
    """Import what progress and the summary read with (Arrow, the projector's store) in a
    thread, beside the children's start: imported once the workers had exited, it held up
    a small crawl's last refresh and summary after its projector's last commit. In a
    thread, so the loop still sends the projector its stop the moment the workers exit."""
    await anyio.to_thread.run_sync(importlib.import_module, "crawler.ops._progress_source")


def _most_tasks(config: JobConfig) -> int | None:
    """How many tasks the job can have, as far as its configuration says: its seeds, for
    the default spider at ``--depth 0`` (it follows no link), with no sitemap to seed from.

    A worker with nothing to do costs a core its start-up, and its blocking claim delays the
    crawl's end: a job of one page gets one worker. The same command gets the same workers
    again, so a re-run after a crash resumes each one's pending tasks at once as ever.
    """
    sitemaps = config.sitemaps or config.sitemaps_from_robots
    if config.max_depth == 0 and config.spider is None and not sitemaps:
        return max(1, len(config.seeds))
    return None


async def seed_sitemaps(
    queue: TaskQueue,
    config: JobConfig,
    echo: Callable[[str], None],
    *,
    run: int = FIRST_RUN,
    known: Container[str] = frozenset(),
) -> int:
    """Enqueue what the job's sitemaps list (again on a re-run: nothing is queued twice),
    as tasks of ``run``, but for the pages ``known`` (`seed_from_sitemaps`); how many."""
    # The HTTP stack and the XML parser, only for a crawl given sitemaps.
    from crawler._fetch import Fetcher
    from crawler._sitemaps import seed_from_sitemaps
    from crawler._urls import site_of

    robots_sites = [site_of(seed) for seed in config.seeds] if config.sitemaps_from_robots else []
    # The job's identity (user agent, headers, proxies, timeouts), as its workers fetch.
    async with Fetcher(config.fetch_config()) as fetcher:
        seeds = await seed_from_sitemaps(
            queue,
            fetcher,
            config.scope_rule(),
            sitemaps=config.sitemaps,
            robots_sites=robots_sites,
            actor="crawl",
            max_pages=config.max_pages,
            run=run,
            known=known,
        )
    for url, why in seeds.robots_failed:
        echo(f"robots.txt {url} not read: {why}")
    for url, why in seeds.failed:
        echo(f"sitemap {url} not read: {why}")
    echo(
        f"sitemaps: {seeds.sitemaps_read} read, {seeds.urls} URL(s) in scope "
        f"({seeds.new} new), {seeds.out_of_scope} out of scope"
        + (f", {seeds.malformed} malformed" if seeds.malformed else "")
        + (f"; {seeds.past_bound} past --max-pages, not enqueued" if seeds.past_bound else "")
    )
    return seeds.new


async def _watch(
    progress: Callable[[], LiveProgress],
    workers_exited: anyio.Event,
    echo: Callable[[str], None],
    url: str,
) -> None:
    """Show progress until every worker has exited (``workers_exited`` is set): a live table
    on a terminal, else lines.

    A refresh waits out a lost server (its client rides out an outage): while one takes
    over a second, the server is asked directly, and if it does not answer the progress
    says so and for how long, every second, instead of going quiet.

    The first period goes by (or the workers exit) before the first refresh; what it reads
    with is imported meanwhile, in a thread (``_import_progress_source``).
    """
    with anyio.move_on_after(PROGRESS_EVERY_S):
        await workers_exited.wait()
    from crawler.cli._progress_view import display_for

    source = progress()
    collecting = gc.get_threshold()
    gc.set_threshold(PROGRESS_GC_GEN0, *collecting[1:])
    try:
        await _show(source, workers_exited, echo, url, display_for(echo))
    finally:
        gc.set_threshold(*collecting)  # a crawl run in-process leaves its caller's as they were


async def _show(
    source: LiveProgress,
    workers_exited: anyio.Event,
    echo: Callable[[str], None],
    url: str,
    shown: Display,
) -> None:
    """``_watch``'s refreshes, one a period, each shown once it is read."""
    with shown as display:
        first = True
        async with anyio.create_task_group() as tg:
            refreshed: list[Progress] = []
            in_flight = anyio.Event()
            in_flight.set()
            answered = time.monotonic()

            async def refresh(done: anyio.Event) -> None:
                # A server that cannot save: the crawl says it once, when its workers stop.
                with contextlib.suppress(ServerCannotPersist):
                    refreshed.append(await source.refresh())
                done.set()

            while first or not workers_exited.is_set():
                if not first:
                    with anyio.move_on_after(PROGRESS_EVERY_S):
                        await workers_exited.wait()
                first = False
                if in_flight.is_set():
                    in_flight = anyio.Event()
                    tg.start_soon(refresh, in_flight)
                with anyio.move_on_after(PROGRESS_EVERY_S):
                    await in_flight.wait()
                if refreshed:
                    display.update(refreshed.pop())
                    answered = time.monotonic()
                elif not await answers(url, PROGRESS_EVERY_S):
                    echo(
                        f"progress {source.job}: server {redacted(url)} unreachable for "
                        f"{time.monotonic() - answered:.0f} s; workers and projector keep "
                        "retrying"
                    )
            tg.cancel_scope.cancel()


async def watch_memory(
    client: aioredis.Redis,
    job: str,
    url: str,
    workers: Sequence[Child],
    evicting: Callable[[ServerEvicts], None],
    echo: Callable[[str], None],
) -> None:
    """Read the server's memory every ``MEMORY_CHECK_S`` while the crawl runs.

    Full (``OOM``: its workers go on with the pages they hold, `crawler._offline`, then
    wait with the projector, each write retried): one progress line an outage, saying what
    to do. A ``maxmemory-policy`` that evicts (changed since the
    crawl's start): ``evicting`` is told, the workers are stopped as by Ctrl-C (they hand
    their tasks back, then the projector commits) and the crawl ends with that error.
    """
    said_full = False
    while True:
        await anyio.sleep(MEMORY_CHECK_S)
        memory = await read_memory(client)
        if memory is None:
            return  # this user may not read it: nothing to watch
        if memory.evicts:
            evicting(evicting_server(memory.policy, redacted(url)))
            for process in workers:
                if process.returncode is None:
                    process.send_signal(signal.SIGTERM)
            return
        if memory.full and not said_full:
            echo(
                f"progress {job}: {out_of_memory_advice(redacted(url))}; workers go on "
                "with the pages they hold, then wait with the projector until it has room"
            )
        said_full = memory.full


def _metrics_args(metrics: tuple[str, int] | None, offset: int) -> tuple[str, ...]:
    if metrics is None:
        return ()
    host, port = metrics
    return ("--metrics-host", host, "--metrics-port", str(port + offset))


async def _forward_signals(workers: list[Child], echo: Callable[[str], None]) -> None:
    """Stop the workers on the first SIGINT or SIGTERM; ignore the ones after it.

    The projector is stopped once the workers have exited (``run_crawl``). A second
    Ctrl-C does not cut that short: the stop is bounded anyway (each worker's grace
    period, the projector's catch-up), and dying half-way would leave the summary stale.
    """
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        stopping = False
        async for _ in signals:
            if stopping:
                echo("stopping: waiting for the workers, then the projector's last commit")
                continue
            stopping = True
            echo("stopping: the workers end or hand back their tasks, then the projector commits")
            for process in workers:
                if process.returncode is None:
                    process.send_signal(signal.SIGTERM)


async def stop_processes(processes: Sequence[Child], *, told: bool = False) -> None:
    """SIGTERM what still runs (the projector commits on it), SIGKILL after a grace.

    ``told``: they were sent their SIGTERM already; only the grace and the SIGKILL are left.
    """
    for process in processes:
        if process.returncode is None and not told:
            process.send_signal(signal.SIGTERM)
    with anyio.move_on_after(STOP_GRACE_S):
        for process in processes:
            await process.wait()
    for process in processes:
        if process.returncode is None:
            process.kill()
            await process.wait()
