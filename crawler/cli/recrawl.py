"""``crawlog recrawl``: run a finished job again, asking each page whether it changed."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Final

import anyio
import click

from crawler._job import JobConfig, load_config
from crawler._recrawl import revisit_tasks
from crawler.cli._crawl_settings import CrawlSettings
from crawler.cli._options import concurrency_option, data_dir_option, job_option
from crawler.cli._terminal import echo_line
from eventlog import (
    DEFAULT_RIDE_OUT_S,
    FINISHED,
    FIRST_RUN,
    REDIS_URL_ENV,
    RUNNING,
    AnyEvent,
    ConfigError,
    JobKeys,
    RunRecord,
    TaskEnqueued,
    TaskQueue,
    connect,
    ensure_server,
    read_run,
    replica_set_url,
    resolve_data_dir,
    resolve_url,
    write_run,
)

if TYPE_CHECKING:
    from crawler.cli._processes import Seeder

RECRAWL_BATCH: Final = 1000
"""Pages enqueued by one script call: a run of a large job is enqueued in these steps, each
idempotent (a page enqueued already is not again), so a killed recrawl's rerun goes on."""
RECRAWL_ACTOR: Final = "recrawl"


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
    "--all",
    "every_page",
    is_flag=True,
    default=True,
    help="Revisit every page the job reached (the only choice so far).",
)
def recrawl_command(
    job: str, data_dir: Path | None, workers: int, concurrency: int, every_page: bool
) -> None:
    """Run a finished (or stopped) job again as a new run: every page it reached is asked
    for again with If-None-Match/If-Modified-Since from its last fetch; a 304 or the same
    body is unchanged (not parsed), another body changed (parsed, its new links crawled),
    a 404/410 gone. Run it again after a crash or a kill to finish the same run.

    The job's stored options apply (scope, spider, politeness, identity). `crawlog changes
    --job J` lists what the run found.
    """
    from crawler.cli._processes import run_crawl

    directory = resolve_data_dir(data_dir)
    elsewhere = os.environ.get(REDIS_URL_ENV) or replica_set_url(directory)
    server = None if elsewhere else ensure_server(directory)
    url = server.url if server is not None else resolve_url(data_dir)

    async def stored() -> JobConfig:
        async with connect(url, ride_out_s=DEFAULT_RIDE_OUT_S, quiet=True) as client:
            return await load_config(client, JobKeys(job))

    config = anyio.run(stored)
    settings = CrawlSettings(
        job=job, data_dir=directory, config=config, workers=workers, concurrency=concurrency
    )
    runs: list[int] = []
    summary = anyio.run(
        lambda: run_crawl(
            settings,
            url,
            echo=echo_line,
            server=server,
            seed=_run_seeder(directory, runs.append),
            finished=lambda queue: _finish(queue, runs[-1]),
        )
    )
    ended = "finished" if summary.complete else "stopped"
    click.echo(
        f"{ended} run {runs[-1] if runs else '?'} of {job} in {summary.seconds:.1f} s; "
        f"next: crawlog changes --job {job}"
    )
    raise SystemExit(0 if summary.complete else 1)


def _run_seeder(data_dir: Path, chosen: Callable[[int], None]) -> Seeder:
    """The recrawl's seeding, under the job's crawl lock: its run chosen (told to
    ``chosen``) and its pages enqueued."""

    async def seed(
        queue: TaskQueue, config: JobConfig, echo: Callable[[str], None]
    ) -> tuple[JobConfig, int]:
        from projector import Store, log_entries

        entries = await log_entries(queue.redis, Store(data_dir, queue.keys.job))
        events = [entry.event for entry in entries]
        run = await start_run(queue, logged=latest_run(events))
        chosen(run)
        new, pages = await enqueue_run(queue, events, run)
        echo(f"run {run}: {pages} page(s) to revisit, {new} enqueued now")
        return config, new

    return seed


def latest_run(events: Iterable[AnyEvent]) -> int:
    """The highest run the log has a task of."""
    return max((e.run for e in events if isinstance(e, TaskEnqueued)), default=FIRST_RUN)


async def start_run(queue: TaskQueue, *, logged: int = FIRST_RUN) -> int:
    """The run to work on: the latest if it was stopped before it ended, else a new one
    (recorded as running before any task of it is enqueued). ``logged``: the latest run
    the log has tasks of; a later one than recorded (the record lost with a store, a
    restore) is taken as running, to be finished (its tasks enqueued already are not
    enqueued again)."""
    keys, redis = queue.keys, queue.redis
    record = await read_run(redis, keys)
    if logged > record.run:
        await write_run(redis, keys, RunRecord(run=logged, state=RUNNING))
        return logged
    if record.state == RUNNING:
        return record.run
    left, _ = await queue.left()
    if left:
        raise ConfigError(
            f"job {keys.job!r} has {left} task(s) not ended: finish its run first "
            f"(`crawlog crawl --job {keys.job} ...` with its options), then recrawl it"
        )
    run = record.run + 1
    await write_run(redis, keys, RunRecord(run=run, state=RUNNING))
    return run


async def enqueue_run(queue: TaskQueue, events: Iterable[AnyEvent], run: int) -> tuple[int, int]:
    """Enqueue ``run``'s pages (from the job's log, ``events``), `RECRAWL_BATCH` at a time:
    (how many were new, how many the run has)."""
    tasks = revisit_tasks(events, run)
    new = 0
    for start in range(0, len(tasks), RECRAWL_BATCH):
        batch = tasks[start : start + RECRAWL_BATCH]
        new += sum(await queue.enqueue(batch, actor=RECRAWL_ACTOR))
    return new, len(tasks)


async def _finish(queue: TaskQueue, run: int) -> None:
    await write_run(queue.redis, queue.keys, RunRecord(run=run, state=FINISHED))
