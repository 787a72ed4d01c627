"""``crawlog crawl``, ``crawlog worker`` and ``crawlog enqueue``."""

from __future__ import annotations

import logging
import os
import signal
import socket
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import click
import msgspec

from crawler._autothrottle import (
    DEFAULT_MAX_DELAY_S,
    DEFAULT_TARGET_CONCURRENCY,
    MAX_TARGET_CONCURRENCY,
)
from crawler._defaults import (
    BATCH_SCRIPT_CALLS_ENV,
    DEFAULT_FAIL_ON,
    DEFAULT_GRACE_S,
    DEFAULT_MAX_ITEM_BYTES,
    DEFAULT_MAX_PAGES,
    DEFAULT_SPIDER_ERROR_SHARE,
    FAIL_ON_CHOICES,
)
from crawler._gc import tune_worker_gc
from crawler._job import load_config
from crawler._loop import loop_options, running_loop
from crawler._offline import DEFAULT_OFFLINE_PAGES, OFFLINE_PAGES_ENV
from crawler._politeness import Politeness
from crawler._scope import DEFAULT_SCOPE_MODE, SCOPE_MODES
from crawler._spider import load_spider
from crawler._urls import check_seed_url
from crawler.cli._crawl_settings import CrawlOptions, crawl_settings
from crawler.cli._durability_option import durability_in_force, durability_option
from crawler.cli._exit import EXIT_ERROR, exit_now
from crawler.cli._identity_options import identity_options
from crawler.cli._lifeline import die_with_parent
from crawler.cli._light import without_httpx_cli
from crawler.cli._logs import set_log_level
from crawler.cli._options import (
    concurrency_option,
    data_dir_option,
    job_option,
    log_level_option,
    metrics_options,
)
from crawler.cli._unwritable import said_by_the_crawl, said_once_if_unwritable
from eventlog import (
    DEFAULT_JOURNAL_FSYNC,
    DEFAULT_LEASE_MS,
    DEFAULT_RIDE_OUT_S,
    JOURNAL_FSYNC_ENV,
    JOURNAL_FSYNC_POLICIES,
    REDIS_URL_ENV,
    JobKeys,
    Journal,
    JournalFsync,
    TaskQueue,
    connect,
    ensure_server,
    journal_directory,
    replica_set_url,
    resolve_data_dir,
    resolve_url,
)

if TYPE_CHECKING:
    from crawler.cli._processes import CrawlSummary

log = logging.getLogger("crawlog.worker")


@click.command(
    "crawl", epilog="Example:  crawlog crawl http://127.0.0.1:8000/ --job site --workers 2"
)
@click.argument("seeds", nargs=-1)
@click.option(
    "--job", default=None, metavar="NAME", help="Job name [default: from the first seed's host]."
)
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
    "--per-host",
    type=click.IntRange(1, 1000),
    default=Politeness().per_host,
    show_default=True,
    help="Requests in flight per host, across all workers.",
)
@click.option(
    "--delay",
    type=click.FloatRange(0, 3600),
    default=Politeness().delay_s,
    show_default=True,
    help="Seconds between request starts per host, across workers.",
)
@click.option(
    "--autothrottle",
    is_flag=True,
    help="Adapt each host's delay to its latency, for every worker (--delay is its floor).",
)
@click.option(
    "--autothrottle-target",
    type=click.FloatRange(0, MAX_TARGET_CONCURRENCY, min_open=True),
    default=DEFAULT_TARGET_CONCURRENCY,
    show_default=True,
    metavar="N",
    help="With --autothrottle: requests a host should have in flight on average.",
)
@click.option(
    "--autothrottle-max-delay",
    type=click.FloatRange(0, 3600),
    default=DEFAULT_MAX_DELAY_S,
    show_default=True,
    metavar="S",
    help="With --autothrottle: the adapted delay never grows past this many seconds.",
)
@click.option("--depth", type=click.IntRange(0), default=None, help="Follow links this deep.")
@click.option(
    "--max-pages",
    type=click.IntRange(0),
    default=DEFAULT_MAX_PAGES,
    show_default=True,
    metavar="N",
    help="Fetch at most N pages: each task's first page and every next page count (0: no "
    "bound). The crawl says so at its start, and its summary and report when it was reached.",
)
@click.option(
    "--max-item-bytes",
    type=click.IntRange(0),
    default=DEFAULT_MAX_ITEM_BYTES,
    show_default=True,
    metavar="N",
    help="An item's size at most, encoded (0: no cap): a larger one fails its task, saying "
    "so, rather than travel through Redis, the archive and every export.",
)
@click.option(
    "--scope",
    type=click.Choice(SCOPE_MODES),
    default=DEFAULT_SCOPE_MODE,
    show_default=True,
    help="prefix: under the seed's directory; host: the seed's host; domain: and subdomains.",
)
@click.option(
    "--spider",
    default=None,
    metavar="MODULE:CLASS",
    help="A spider class, or FILE.py:CLASS [default: follow every link]. Without SEEDS, "
    "its start_urls are the seeds.",
)
@click.option(
    "-a",
    "spider_arg",
    multiple=True,
    metavar="KEY=VALUE",
    help="A spider argument (repeatable): the spider gets self.KEY = VALUE, as with "
    "`scrapy crawl -a`; stored with the job.",
)
@click.option(
    "--lease",
    type=click.FloatRange(0.5, 3600),
    default=DEFAULT_LEASE_MS / 1000,
    show_default=True,
    help="Seconds a stalled worker keeps its tasks.",
)
@click.option("--ignore-robots", is_flag=True, help="Do not obey robots.txt.")
@click.option(
    "--cookies/--no-cookies",
    default=None,
    help="Keep and send cookies, one jar per site shared by every worker (a login serves "
    "the whole crawl) [default: the spider's `cookies` attribute, else off].",
)
@click.option(
    "--browser/--no-browser",
    default=None,
    help="Render every page in Chromium (Debian's chromium, or $CRAWLOG_CHROMIUM) through "
    "Playwright: links written by scripts are followed [default: the spider's `browser` "
    "attribute, else off].",
)
@click.option(
    "--allow",
    multiple=True,
    metavar="REGEX",
    help="Follow only found links matching one of these (repeatable) [default: the "
    "spider's allow].",
)
@click.option(
    "--deny",
    multiple=True,
    metavar="REGEX",
    help="Follow no found link matching one of these (repeatable) [default: the spider's deny].",
)
@click.option(
    "--sitemap",
    multiple=True,
    metavar="URL",
    help="Seed from the URLs this sitemap (or index, gzipped or not) lists (repeatable).",
)
@click.option(
    "--sitemaps-from-robots",
    is_flag=True,
    help="Seed from the sitemaps each seed site's robots.txt names, too.",
)
@click.option(
    "--fail-on",
    type=click.Choice(FAIL_ON_CHOICES),
    default=DEFAULT_FAIL_ON,
    show_default=True,
    help="Exit 1 when the finished crawl had: none-done: no task done; aborted: that, or an "
    "aborted task; spider-errors: that, or more than --spider-error-share of the tasks failed "
    "by the spider (it raised), not by the site (a 404); failed: that, or any failed task "
    "(strict, for CI); never: exit 0.",
)
@click.option(
    "--spider-error-share",
    type=click.FloatRange(0, 1),
    default=DEFAULT_SPIDER_ERROR_SHARE,
    show_default=True,
    metavar="FRACTION",
    help="With --fail-on spider-errors: the share of the tasks that may fail through spider "
    "errors (0.1: 10 %) before the crawl exits 1.",
)
@click.option(
    "--no-events",
    is_flag=True,
    hidden=True,
    help="Benchmarks only: workers append no task events (nothing to resume or report).",
)
@click.option(
    "--console",
    "with_console",
    is_flag=True,
    help="Open the job's web console for as long as the crawl runs; prints its URL.",
)
@click.option(
    "--console-port",
    type=click.IntRange(0, 65535),
    default=8777,
    show_default=True,
    help="Port of --console (0: any free port).",
)
@identity_options
@metrics_options
@durability_option
def crawl_command(**params: Any) -> None:
    """Crawl from SEEDS until every task is done; run it again after a crash to resume.

    Starts the embedded server if REDIS_URL is not set (and restarts it if it dies),
    enqueues the seeds, runs the workers and the projector, shows progress, and prints a
    summary from the log. Fetches at most --max-pages pages (10,000 unless told). Exit
    status 0 when every task ended and --fail-on finds nothing wrong (by default: some
    task done, none aborted, at most 10 % failed by the spider itself); 1 with a one-line
    reason when it does, or when the crawl was stopped (Ctrl-C, SIGTERM) before every task
    ended; 2 for an error, such as the job being crawled by another live crawl.

    With --metrics-port P the projector serves its metrics on port P and worker wN on
    P+N (the crawl process itself serves none).
    """
    from crawler.cli._processes import fork_children, run_crawl
    from crawler.cli._terminal import echo_line
    from crawler.cli.console import console_of_crawl

    options = CrawlOptions.of(params)
    settings = crawl_settings(options)
    # First, before the server: the children import what they need meanwhile (``_fork``).
    forks = fork_children(settings)
    try:
        # crawlog's own server is supervised by the crawl (restarted if it dies); a server
        # of the user's (REDIS_URL) is theirs to run; the data directory's replica set is
        # supervised by `run_crawl`, and no single server is started beside it.
        elsewhere = os.environ.get(REDIS_URL_ENV) or replica_set_url(settings.data_dir)
        server = None if elsewhere else ensure_server(settings.data_dir)
        url = server.url if server is not None else resolve_url(options.data_dir)
        beside = (
            console_of_crawl(url, settings.data_dir, settings.job, port=options.console_port)
            if options.with_console
            else None
        )
        with beside or nullcontext():
            summary = anyio.run(
                lambda: run_crawl(
                    settings,
                    url,
                    echo=echo_line,
                    server=server,
                    forks=forks,
                    spider_error_share=(
                        options.spider_error_share if options.fail_on == "spider-errors" else None
                    ),
                )
            )
    finally:
        if forks is not None:
            forks.dismiss()
    summary, refused = said_once_if_unwritable(url, settings.data_dir, summary)
    exit_now(_summed_up(summary, options, refused=refused))


def _summed_up(summary: CrawlSummary, options: CrawlOptions, *, refused: bool) -> int:
    """Print the crawl's summary (and why it failed, if it did); its exit status."""
    from crawler.cli._processes import failure
    from crawler.cli._report_text import bound_reached_line
    from crawler.ops import twice_phrase

    tasks = ", ".join(f"{n} {status}" for status, n in sorted(summary.tasks.items()))
    ended = "finished" if summary.complete else "stopped"
    click.echo(
        f"{ended} {summary.job} in {summary.seconds:.1f} s: "
        f"{tasks or 'no tasks'}; {summary.pages} pages "
        f"({twice_phrase(summary.requests_maybe_twice)}), "
        f"{summary.items} items, {summary.duplicate_items} duplicate items ignored, "
        f"{summary.anomalies} anomalies"
        + (
            f", {summary.orphaned} journalled write(s) orphaned (lease taken over: not applied)"
            if summary.orphaned
            else ""
        )
        + (
            f", {summary.dead_letters} dead letter(s) (crawlog dead list --job {summary.job})"
            if summary.dead_letters
            else ""
        )
    )
    if (bound := bound_reached_line(summary.past_bound)) is not None:
        click.echo(bound)
    click.echo(f"next: crawlog report --job {summary.job}")
    if refused:
        return EXIT_ERROR
    if not summary.complete:
        return 1
    fail_on = options.fail_on
    reason = failure(summary, fail_on, options.spider_error_share)
    if reason is not None:
        click.echo(f"crawlog: crawl failed: {reason} (--fail-on {fail_on})", err=True)
        return 1
    return 0


@click.command(
    "worker",
    epilog="Example:  crawlog worker --job site --name w3 --concurrency 64 --metrics-port 9101",
)
@log_level_option
@job_option
@data_dir_option
@click.option(
    "--name",
    default=None,
    help="Worker name [default: HOST-PID]. Reuse it to resume its tasks at once.",
)
@concurrency_option
@click.option("--exit-when-done", is_flag=True, help="Exit once every task of the job is terminal.")
@click.option(
    "--grace",
    type=click.FloatRange(0, 600),
    default=DEFAULT_GRACE_S,
    show_default=True,
    help="Seconds in-flight tasks get to finish their page on SIGTERM.",
)
@click.option(
    "--fsync",
    "journal_fsync",
    type=click.Choice(JOURNAL_FSYNC_POLICIES),
    default=DEFAULT_JOURNAL_FSYNC,
    show_default=True,
    envvar=JOURNAL_FSYNC_ENV,
    help="When the worker's journal of its writes reaches the disk: before each write is "
    f"sent (survives a power loss), or when the OS flushes it (survives a kill) [env: "
    f"{JOURNAL_FSYNC_ENV}, which a crawl's workers inherit].",
)
@click.option(
    "--offline-pages",
    type=click.IntRange(0),
    default=DEFAULT_OFFLINE_PAGES,
    show_default=True,
    envvar=OFFLINE_PAGES_ENV,
    help="Pages the worker fetches at most, of the tasks it holds, while the store does not "
    "answer (journalled, sent once it is back); 0: it waits for the store [env: "
    f"{OFFLINE_PAGES_ENV}, which a crawl's workers inherit].",
)
@click.option(
    "--batch-script-calls/--no-batch-script-calls",
    default=False,
    show_default=True,
    envvar=BATCH_SCRIPT_CALLS_ENV,
    help="Send the store calls the worker's tasks make while one is in flight together, in "
    f"one pipeline [env: {BATCH_SCRIPT_CALLS_ENV}, which a crawl's workers inherit].",
)
@metrics_options
@durability_option
def worker_command(
    log_level: str,
    job: str,
    data_dir: Path | None,
    name: str | None,
    concurrency: int,
    exit_when_done: bool,
    grace: float,
    journal_fsync: JournalFsync,
    offline_pages: int,
    batch_script_calls: bool,
    metrics_host: str,
    metrics_port: int | None,
) -> None:
    """Work on a job's tasks (started by `crawlog crawl`) until SIGTERM or Ctrl-C."""
    without_httpx_cli()
    from crawler._worker import Worker, WorkerOptions, worker_queue

    die_with_parent()
    set_log_level(log_level)
    url, directory = resolve_url(data_dir), resolve_data_dir(data_dir)
    worker_name = name or f"{socket.gethostname()}-{os.getpid()}"
    metrics = None
    if metrics_port is not None:
        from crawler._metrics import WorkerMetrics, new_registry, serve

        registry = new_registry()
        metrics = WorkerMetrics(registry, job=job, worker=worker_name)
        serve(registry, metrics_host, metrics_port)

    async def run() -> None:
        # A Redis restart or a full server mid-crawl is waited out (each write is
        # idempotent), not fatal; a crawl says it once for all of its processes.
        async with connect(url, ride_out_s=DEFAULT_RIDE_OUT_S, quiet=said_by_the_crawl()) as client:
            config = await load_config(client, JobKeys(job))
            observer = None
            if metrics is not None:
                from crawler._metrics import QueueMetrics

                # What the queue appends is counted on the way, by its observer.
                observer = QueueMetrics(metrics)
            worker = Worker(
                client,
                job,
                worker_name,
                config,
                load_spider(config.spider, config.spider_args),
                data_dir=directory,
                options=WorkerOptions(
                    concurrency=concurrency,
                    exit_when_done=exit_when_done,
                    grace_s=grace,
                    offline_pages=offline_pages,
                    batch_script_calls=batch_script_calls,
                ),
                queue=worker_queue(
                    client,
                    job,
                    worker_name,
                    config,
                    observer=observer,
                    durability=durability_in_force(),
                    journal=Journal(
                        journal_directory(directory, worker_name, job), fsync=journal_fsync
                    ),
                ),
            )
            log.info(
                "worker %s started on job %s (concurrency %d, loop %s)",
                worker_name,
                job,
                concurrency,
                running_loop(),
            )
            async with anyio.create_task_group() as tg:
                tg.start_soon(_stop_on_signal, worker.stop)
                stats = await worker.run()
                tg.cancel_scope.cancel()
            log.info("worker %s stopped: %s", worker_name, msgspec.structs.asdict(stats))

    tune_worker_gc()  # a page's leftovers examined once, not a dozen times
    anyio.run(run, backend_options=loop_options())


async def _stop_on_signal(stop: Callable[[], object]) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for _ in signals:
            stop()


@click.command("enqueue", epilog="Example:  crawlog enqueue --job site http://127.0.0.1:8000/new/")
@job_option
@data_dir_option
@click.argument("urls", nargs=-1, required=True)
def enqueue_command(job: str, data_dir: Path | None, urls: tuple[str, ...]) -> None:
    """Add seed URLs to a running job (a URL already seen is not enqueued again)."""
    from crawler._worker import enqueue_seeds_within

    canonical = [check_seed_url(u) for u in urls]
    url = resolve_url(data_dir)

    async def run() -> tuple[int, int]:
        async with connect(url) as client:
            config = await load_config(client, JobKeys(job))
            queue = TaskQueue(client, job, "enqueue")
            return await enqueue_seeds_within(
                queue, canonical, actor="enqueue", max_pages=config.max_pages
            )

    new, past = anyio.run(run)
    refused = f", {past} past --max-pages, not enqueued" if past else ""
    click.echo(f"{new} new task(s), {len(canonical) - new - past} already known{refused}")
