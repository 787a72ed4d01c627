"""``crawlog recrawl``: run a finished job again, asking each page whether it changed."""

from __future__ import annotations

import importlib
import os
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Final

import anyio
import click
import msgspec

from crawler._defaults import PAST_MAX_PAGES
from crawler._job import SCRAPY_SPIDER_PREFIX, JobConfig, load_config
from crawler._recrawl import known_requests, latest_run, revisit_tasks, run_ended
from crawler._spider import load_spider
from crawler._start_requests import enqueue_run_start_requests
from crawler.cli._crawl_settings import CrawlSettings
from crawler.cli._exit import exit_now
from crawler.cli._options import concurrency_option, data_dir_option, job_option
from crawler.cli._revisit_text import nothing_due_line, revisit_policy
from crawler.cli._terminal import echo_line
from eventlog import (
    DEFAULT_RIDE_OUT_S,
    FINISHED,
    FIRST_RUN,
    RECRAWL_ACTOR,
    REDIS_URL_ENV,
    RUNNING,
    AnyEvent,
    ConfigError,
    JobKeys,
    PageFetched,
    RunRecord,
    Task,
    TaskQueue,
    connect,
    ensure_server,
    read_run,
    replica_set_url,
    resolve_data_dir,
    resolve_url,
    write_run,
)
from projector import (
    DEFAULT_INTERVAL_S,
    DEFAULT_MAX_INTERVAL_S,
    DEFAULT_MIN_INTERVAL_S,
    RevisitPolicy,
)

if TYPE_CHECKING:
    from crawler.cli._processes import Seeder

RECRAWL_BATCH: Final = 1000
"""Pages enqueued by one script call: a run of a large job is enqueued in these steps, each
idempotent (a page enqueued already is not again), so a killed recrawl's rerun goes on."""
START_ACTOR: Final = "crawl"
"""The actor of a run's start requests new to it: counted against ``--max-pages`` as a
crawl's seeds are (not `RECRAWL_ACTOR`, whose revisits a restore leaves out of the count)."""
NOT_DUE: Final = "not due"
"""Who holds, in the run's seen set, a page a ``--due`` run does not revisit."""
_SECONDS: Final = click.FloatRange(min=0, min_open=True)
ARCHIVE_READER: Final = "pyarrow.parquet"
"""What the seeding reads the job's archive with: imported in a thread from the fork on."""


@click.command(
    "recrawl", epilog="Example:  crawlog recrawl --job site --workers 2   # then: crawlog changes"
)
@job_option
@data_dir_option
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    default=os.cpu_count() or 1,
    show_default="number of CPUs",
    help="Worker processes.",
)
@concurrency_option
@click.option(
    "--due/--all",
    "due_only",
    default=False,
    show_default=True,
    help="Revisit only the pages whose revisit interval has passed, or every page the job reached.",
)
@click.option(
    "--interval",
    "first_s",
    type=_SECONDS,
    default=None,
    metavar="S",
    help=f"Seconds: a page's first interval when no sitemap says [default: "
    f"{DEFAULT_INTERVAL_S:.0f}].",
)
@click.option(
    "--min-interval",
    "least_s",
    type=_SECONDS,
    default=None,
    metavar="S",
    help=f"Seconds a changed page's interval halves down to [default: {DEFAULT_MIN_INTERVAL_S:g}].",
)
@click.option(
    "--max-interval",
    "most_s",
    type=_SECONDS,
    default=None,
    metavar="S",
    help=f"Seconds an unchanged page's interval doubles up to [default: "
    f"{DEFAULT_MAX_INTERVAL_S:.0f}].",
)
def recrawl_command(
    job: str,
    data_dir: Path | None,
    workers: int,
    concurrency: int,
    due_only: bool,
    first_s: float | None,
    least_s: float | None,
    most_s: float | None,
) -> None:
    """Run a finished (or stopped) job again as a new run: every page it reached is asked
    for again with If-None-Match/If-Modified-Since from its last fetch; a 304 or the same
    body is unchanged (not parsed), another body changed (parsed, its new links crawled),
    a 404/410 gone. Run it again after a crash or a kill to finish the same run.

    With --due, only the pages whose interval has passed since their last verdict: an
    unchanged page's interval doubles (up to --max-interval), a changed page's halves (down
    to --min-interval), a sitemap's changefreq or lastmod gives a page its first. The
    intervals given are kept for the job's next runs and its status.

    The job's stored options apply (scope, spider, politeness, identity). `crawlog changes
    --job J` lists what the run found.
    """
    from crawler.cli._processes import fork_children, run_crawl

    directory = resolve_data_dir(data_dir)
    # First, before the server and the event loop, as a crawl does (``_fork``): the
    # workers and the projector import their stacks while the run is seeded. The job's
    # stored options are read after; forking needs none of them (a child not needed is
    # dismissed by the crawl).
    forks = fork_children(
        CrawlSettings(
            job=job,
            data_dir=directory,
            config=JobConfig(seeds=()),
            workers=workers,
            concurrency=concurrency,
        )
    )
    # The seeding reads the job's log with Arrow: imported meanwhile, beside the server's
    # start, the job's options read and the crawl lock taken, rather than after them with
    # the workers waiting to start. After the fork: a thread must not run across one.
    threading.Thread(
        target=importlib.import_module, args=(ARCHIVE_READER,), name="import-arrow", daemon=True
    ).start()
    runs: list[int] = []
    bound_before: list[int] = []  # links the runs before this one left past --max-pages
    try:
        elsewhere = os.environ.get(REDIS_URL_ENV) or replica_set_url(directory)
        server = None if elsewhere else ensure_server(directory)
        url = server.url if server is not None else resolve_url(data_dir)

        async def stored() -> JobConfig:
            async with connect(url, ride_out_s=DEFAULT_RIDE_OUT_S, quiet=True) as client:
                return await load_config(client, JobKeys(job))

        config = anyio.run(stored)
        if config.spider is not None and config.spider.startswith(SCRAPY_SPIDER_PREFIX):
            # crawlog's workers cannot run a Scrapy spider: refused before a task of a run
            # is enqueued, rather than a run started and left with every task pending.
            raise ConfigError(
                f"job {job!r} is crawled by Scrapy (spider {config.spider}, through "
                "crawler.scrapy): `crawlog recrawl` runs crawlog's own workers, which cannot "
                "run it; recrawls of Scrapy jobs are not supported yet"
            )
        settings = CrawlSettings(
            job=job, data_dir=directory, config=config, workers=workers, concurrency=concurrency
        )
        seeder = _run_seeder(
            directory,
            runs.append,
            bound_before.append,
            due_only=due_only,
            given=(first_s, least_s, most_s),
        )
        summary = anyio.run(
            lambda: run_crawl(
                settings,
                url,
                echo=echo_line,
                server=server,
                forks=forks,
                seed=seeder,
                finished=lambda queue: _finish(queue, runs[-1]),
                run=lambda: runs[-1],
            )
        )
    except (_NothingDue, BaseExceptionGroup) as exc:
        nothing = _nothing_due(exc)
        if nothing is None:
            raise
        click.echo(nothing_due_line(job, nothing.next_due, time.time()))
        raise SystemExit(0) from None
    finally:
        if forks is not None:
            forks.dismiss()
    ended = "finished" if summary.complete else "stopped"
    click.echo(
        f"{ended} run {runs[-1] if runs else '?'} of {job} in {summary.seconds:.1f} s; "
        f"next: crawlog changes --job {job}"
    )
    from crawler.cli._report_text import bound_reached_line

    # The job's count is every run's: what this run's pages left out is what it added.
    past = summary.past_bound - bound_before[-1] if bound_before else 0
    if (bound := bound_reached_line(past)) is not None:
        click.echo(bound)
    # As a crawl exits: the finalization tore down Arrow and the rest after the last line.
    exit_now(0 if summary.complete else 1)


class _NothingDue(Exception):
    """A ``--due`` recrawl that would start a run with no page due: none is started."""

    def __init__(self, next_due: float | None) -> None:
        super().__init__("nothing is due")
        self.next_due = next_due


def _nothing_due(exc: BaseException) -> _NothingDue | None:
    """The `_NothingDue` ``exc`` is or holds (a task group's wraps what it met)."""
    if isinstance(exc, _NothingDue):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _nothing_due(inner)
            if found is not None:
                return found
    return None


def _run_seeder(
    data_dir: Path,
    chosen: Callable[[int], None],
    bound_before: Callable[[int], None],
    *,
    due_only: bool,
    given: tuple[float | None, float | None, float | None],
) -> Seeder:
    """The recrawl's seeding, under the job's crawl lock: its run chosen (told to
    ``chosen``, and the links the runs before it left past ``--max-pages`` to
    ``bound_before``), the intervals ``given`` recorded, and its pages (the due ones with
    ``due_only``) enqueued. A new ``--due`` run with no page due is not started
    (`_NothingDue`): its number stays free, the intervals given are recorded."""

    async def seed(
        queue: TaskQueue, config: JobConfig, echo: Callable[[str], None]
    ) -> tuple[JobConfig, int]:
        from projector import Store, log_entries

        entries = await log_entries(queue.redis, Store(data_dir, queue.keys.job))
        events = [entry.event for entry in entries]
        logged = latest_run(events)
        run, fresh = await choose_run(
            queue, logged=logged, logged_ended=lambda: run_ended(events, logged)
        )
        record = await read_run(queue.redis, queue.keys)
        policy = given_policy(record, given)
        pages = run_pages(events, run, due_at=time.time() if due_only else None, policy=policy)
        intervals = None if given == (None, None, None) else _intervals(policy)
        if fresh and due_only and not pages.due:
            if intervals is not None:
                kept = msgspec.structs.replace(record, intervals=intervals)
                await write_run(queue.redis, queue.keys, kept)
            raise _NothingDue(pages.next_due)
        started = RunRecord(run=run, state=RUNNING, intervals=intervals)
        await write_run(queue.redis, queue.keys, started)
        chosen(run)
        bound_before(past_bound_before(events, run))
        new = await enqueue_run(queue, pages)
        not_due = f", {len(pages.later)} not due" if due_only else ""
        echo(f"run {run}: {len(pages.due)} page(s) to revisit{not_due}, {new} enqueued now")
        known = known_requests(events, run)
        if config.sitemaps or config.sitemaps_from_robots:
            # Read again: a page new to the site may be listed there and linked from no
            # page a revisit finds changed.
            from crawler.cli._processes import seed_sitemaps

            new += await seed_sitemaps(queue, config, echo, run=run, known=known)
        new += await _start_requests_again(queue, config, echo, run=run, known=known)
        return config, new

    return seed


async def _start_requests_again(
    queue: TaskQueue,
    config: JobConfig,
    echo: Callable[[str], None],
    *,
    run: int,
    known: set[str],
) -> int:
    """The spider's ``start_requests()`` run again for ``run``: the requests no earlier run
    had enqueued as the run's (`enqueue_run_start_requests`), said in one line; how many."""
    spider = load_spider(config.spider, config.spider_args)
    new, made, past = await enqueue_run_start_requests(
        queue, config, spider, actor=START_ACTOR, run=run, known=known
    )
    if made:
        past_bound = f", {past} past --max-pages, not enqueued" if past else ""
        echo(f"start_requests(): {made} request(s), {new} new to run {run}{past_bound}")
    return new


def given_policy(
    record: RunRecord, given: tuple[float | None, float | None, float | None]
) -> RevisitPolicy:
    """The job's revisit policy: the one ``record`` holds with what ``given`` says over it
    (recorded with the run, for its next runs and ``status``)."""
    policy = revisit_policy(record)
    first, least, most = given
    return RevisitPolicy(
        interval_s=policy.interval_s if first is None else first,
        min_s=policy.min_s if least is None else least,
        max_s=policy.max_s if most is None else most,
    )


def _intervals(policy: RevisitPolicy) -> tuple[float, float, float]:
    return (policy.interval_s, policy.min_s, policy.max_s)


def past_bound_before(events: Iterable[AnyEvent], run: int) -> int:
    """Links (and next pages) the pages of the runs before ``run`` left past
    ``--max-pages``, as their ``PageFetched`` events counted them."""
    return sum(
        e.dropped.get(PAST_MAX_PAGES, 0)
        for e in events
        if type(e) is PageFetched and e.run < run and e.dropped
    )


async def start_run(
    queue: TaskQueue, *, logged: int = FIRST_RUN, logged_ended: Callable[[], bool] | None = None
) -> int:
    """The run to work on (`choose_run`), recorded as running before any task of it is
    enqueued."""
    run, _ = await choose_run(queue, logged=logged, logged_ended=logged_ended)
    await write_run(queue.redis, queue.keys, RunRecord(run=run, state=RUNNING))
    return run


async def choose_run(
    queue: TaskQueue, *, logged: int = FIRST_RUN, logged_ended: Callable[[], bool] | None = None
) -> tuple[int, bool]:
    """The run to work on and whether it is a new one: the latest if it was stopped before
    it ended, else the next (not recorded here: the caller records it before it enqueues
    a task of it). ``logged``: the latest run the log has tasks of. One later than
    recorded (the record lost with a store, a restore) is finished (its tasks enqueued
    already are not enqueued again) unless ``logged_ended`` says the log shows it over
    (`run_ended`; None: not known); then it is followed by the next."""
    keys, redis = queue.keys, queue.redis
    record = await read_run(redis, keys)
    if logged > record.run:
        if logged_ended is None or not logged_ended():
            await write_run(redis, keys, RunRecord(run=logged, state=RUNNING))
            return logged, False
        record = RunRecord(run=logged, state=FINISHED, intervals=record.intervals)
        await write_run(redis, keys, record)
    if record.state == RUNNING:
        return record.run, False
    left, _ = await queue.left()
    if left:
        raise ConfigError(
            f"job {keys.job!r} has {left} task(s) not ended: finish its run first "
            f"(`crawlog crawl --job {keys.job} ...` with its options), then recrawl it"
        )
    return record.run + 1, True


class RunPages(msgspec.Struct, frozen=True, kw_only=True):
    """A run's pages: those it revisits, those not due, and when the first of these is."""

    due: list[Task]
    later: list[Task] = msgspec.field(default_factory=list)
    next_due: float | None = None
    """The earliest due time of the pages not due (None: none is on the schedule)."""


def run_pages(
    events: Iterable[AnyEvent],
    run: int,
    *,
    due_at: float | None = None,
    policy: RevisitPolicy | None = None,
) -> RunPages:
    """``run``'s pages from the job's log ``events``: every page, or with ``due_at`` only
    those due then (by the schedule of the runs before ``run``)."""
    from projector import is_due, request_key, schedules

    events = list(events)
    tasks = revisit_tasks(events, run)
    if due_at is None:
        return RunPages(due=tasks)
    known = schedules(events, policy or RevisitPolicy(), before_run=run)
    due: list[Task] = []
    later: list[Task] = []
    next_due: float | None = None
    for task in tasks:
        schedule = known.get(request_key(task.url, task.spec))
        if is_due(schedule, due_at):
            due.append(task)
            continue
        later.append(task)
        assert schedule is not None  # a page the schedule does not know is due
        next_due = schedule.due_at if next_due is None else min(next_due, schedule.due_at)
    return RunPages(due=due, later=later, next_due=next_due)


async def enqueue_run(queue: TaskQueue, pages: RunPages) -> int:
    """Enqueue a run's due ``pages``, `RECRAWL_BATCH` at a time: how many were new.

    A page not due is marked seen for the run (as a redirect's target is,
    `TaskQueue.claim_url`): a changed page's link to it does not fetch it in full as new."""
    new = 0
    for start in range(0, len(pages.due), RECRAWL_BATCH):
        batch = pages.due[start : start + RECRAWL_BATCH]
        # Pages earlier runs counted against --max-pages: a revisit is not one more page
        # (else a site recrawled every day reached the default bound in days, and from then
        # on every new page a run found was refused).
        new += sum(await queue.enqueue(batch, actor=RECRAWL_ACTOR, counted=False))
    for task in pages.later:
        await queue.claim_url(task.task_id, NOT_DUE, counted=False)
    return new


async def _finish(queue: TaskQueue, run: int) -> None:
    await write_run(queue.redis, queue.keys, RunRecord(run=run, state=FINISHED))
