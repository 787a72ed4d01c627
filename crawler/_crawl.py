"""``crawlog crawl``: a job's processes, started, watched and summed up.

The crawl process itself crawls nothing: it stores the job's configuration, enqueues the
seeds (idempotently: running the same command again after a crash enqueues nothing new),
starts N worker processes and the projector, prints progress, and when every task is
terminal stops the projector (which commits) and prints a summary from the log. Workers
are named ``w1`` … ``wN``, so a re-run after a crash resumes each one's pending tasks at
once; tasks of a worker that does not come back are reclaimed when their leases expire.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import msgspec
from anyio.abc import Process

from crawler._job import JobConfig, save_config
from crawler._progress_source import LiveProgress
from crawler._progress_view import ChildOutput, display_for
from crawler._worker import enqueue_seeds
from eventlog import JobKeys, TaskQueue, connect
from eventlog._connection import DEFAULT_RIDE_OUT_S
from projector._projector import read_committed
from projector._store import Store

PROGRESS_EVERY_S = 1.0
STOP_GRACE_S = 15.0
WAITING_SHOWN = 10
"""Tasks waiting for a person named by id in the crawl's last lines (then "...")."""


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
    seconds: float
    dead_letters: int = 0
    """Entries nobody could decode (the dead stream), as of the projector's last commit."""


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


def crawlog_command(*args: str) -> list[str]:
    """argv running ``crawlog ARGS`` with this interpreter (the one crawlog is installed in)."""
    return [sys.executable, "-m", "crawler.cli", *args]


async def run_crawl(
    url: str,
    data_dir: Path,
    job: str,
    config: JobConfig,
    *,
    workers: int,
    concurrency: int,
    echo: Callable[[str], None],
    metrics: tuple[str, int] | None = None,
) -> CrawlSummary:
    """Run the job to completion (or until interrupted); its summary.

    ``metrics`` = (host, P): the projector serves metrics on port P, worker wN on P+N.
    """
    started = time.monotonic()
    keys = JobKeys(job)
    env = {**os.environ, "REDIS_URL": url}
    common = ("--job", job, "--data-dir", str(data_dir))
    # Like its workers and projector, the crawl waits out a Redis restart.
    async with connect(url, ride_out_s=DEFAULT_RIDE_OUT_S) as client:
        config = await save_config(client, keys, config)
        queue = TaskQueue(client, job, "crawl")
        new = await enqueue_seeds(
            queue, list(config.seeds), actor="crawl", max_pages=config.max_pages
        )
        echo(
            f"job {job}: {new} new seed(s), {workers} worker(s) x {concurrency}, data in {data_dir}"
        )
        processes: list[Process] = []
        # The children's stderr comes through this process: written to the terminal by
        # themselves, it broke the live table's redraw (ChildOutput says how).
        output = ChildOutput()
        try:
            projector = await anyio.open_process(
                crawlog_command("project", *common, *_metrics_args(metrics, 0)), env=env,
                stdout=None, stderr=output.fd,
            )
            processes.append(projector)
            worker = ("worker", *common, "--concurrency", str(concurrency), "--exit-when-done")
            for n in range(1, workers + 1):
                command = crawlog_command(*worker, "--name", f"w{n}", *_metrics_args(metrics, n))
                # stderr into ChildOutput's pipe, not anyio's default one: nobody would read
                # that pipe, so a child's errors were lost, and a full pipe would block its
                # logging.
                child = await anyio.open_process(command, env=env, stdout=None, stderr=output.fd)
                processes.append(child)
            output.started()
            async with anyio.create_task_group() as tg:
                tg.start_soon(_forward_signals, processes, tg.cancel_scope)
                source = LiveProgress(client, job, data_dir, lease_ms=config.lease_ms)
                await _watch(source, processes[1:], echo)
                tg.cancel_scope.cancel()
            complete = await _finished(queue, echo)
        finally:
            # The projector, stopped, reads to the log's end and commits before it exits:
            # the summary below reads that commit.
            with anyio.CancelScope(shield=True):
                await stop_processes(processes)
                await anyio.to_thread.run_sync(output.close)
    manifest, state = read_committed(Store(data_dir, job))
    return CrawlSummary(
        dead_letters=manifest.summary.dead_letters if manifest.summary else 0,
        job=job, complete=complete, tasks={k: v for k, v in state.job.tasks.items() if v},
        pages=state.job.pages, refetches=state.job.refetches, items=state.job.items,
        duplicate_items=state.job.duplicate_items,
        anomalies=sum(state.job.anomalies.values()), seconds=time.monotonic() - started,
    )  # fmt: skip


async def _watch(source: LiveProgress, workers: list[Process], echo: Callable[[str], None]) -> None:
    """Show progress until every worker has exited: a live table on a terminal, else lines."""
    with display_for(echo) as display:
        while any(p.returncode is None for p in workers):
            with anyio.move_on_after(PROGRESS_EVERY_S):
                for process in workers:
                    await process.wait()
            display.update(await source.refresh())


def _metrics_args(metrics: tuple[str, int] | None, offset: int) -> tuple[str, ...]:
    if metrics is None:
        return ()
    host, port = metrics
    return ("--metrics-host", host, "--metrics-port", str(port + offset))


async def _forward_signals(processes: list[Process], scope: anyio.CancelScope) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            for process in processes:
                if process.returncode is None:
                    process.send_signal(signal.SIGTERM)
            return


async def stop_processes(processes: list[Process]) -> None:
    """SIGTERM what still runs (the projector commits on it), SIGKILL after a grace."""
    for process in processes:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
    with anyio.move_on_after(STOP_GRACE_S):
        for process in processes:
            await process.wait()
    for process in processes:
        if process.returncode is None:
            process.kill()
            await process.wait()
