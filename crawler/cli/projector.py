"""``crawlog project``, ``crawlog replay`` and ``crawlog repair``: run the projector, rebuild
and check state, rebuild the projector's files."""

from __future__ import annotations

import logging
import math
import signal
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import click
import redis.asyncio as aioredis
from anyio.abc import TaskStatus

from crawler.cli._lifeline import die_with_parent
from crawler.cli._logs import set_log_level
from crawler.cli._options import data_dir_option, job_option, log_level_option, metrics_options
from crawler.cli._unwritable import said_by_the_crawl
from eventlog import (
    DEFAULT_PROJECTOR_LEASE_MS,
    DEFAULT_RIDE_OUT_S,
    ConfigError,
    CrawlogError,
    EventLog,
    JobKeys,
    connect,
    did_you_mean,
    job_exists,
    job_names,
    resolve_data_dir,
    resolve_url,
    stream_id_key,
)
from projector import (
    DEFAULT_COMMIT_INTERVAL_S,
    DEFAULT_KEEP_TAIL_S,
    DEFAULT_SNAPSHOT_INTERVAL_S,
)

if TYPE_CHECKING:
    from crawler._metrics import ProjectorMetrics
    from projector import Projector, Store

DEFAULT_WAIT_TIMEOUT_S = 60.0
STOP_CATCH_UP_S = 10.0
"""On SIGTERM, the projector reads on to the log's end for at most this long, then commits
(``crawlog crawl`` gives it ``STOP_GRACE_S``, 15 s, before a SIGKILL)."""

log = logging.getLogger("crawlog.projector")


@click.command(
    "project",
    epilog="Example:  crawlog project --job shop --metrics-port 9100",
)
@log_level_option
@job_option
@data_dir_option
@click.option("--once", is_flag=True, help="Project what the log holds now, commit, and exit.")
@click.option(
    "--wait-for",
    metavar="ID",
    help="Do not project: wait until the running projector has committed stream ID ID "
    "('last': the log's newest entry now), then exit 0 (1 on timeout).",
)
@click.option(
    "--timeout",
    type=float,
    default=DEFAULT_WAIT_TIMEOUT_S,
    show_default=True,
    help="Seconds --wait-for waits.",
)
@click.option(
    "--commit-interval",
    type=float,
    default=DEFAULT_COMMIT_INTERVAL_S,
    show_default=True,
    help="Seconds between commits while events arrive.",
)
@click.option(
    "--snapshot-interval",
    type=float,
    default=DEFAULT_SNAPSHOT_INTERVAL_S,
    show_default=True,
    help="Seconds between state snapshots.",
)
@click.option(
    "--keep-tail",
    type=float,
    default=DEFAULT_KEEP_TAIL_S,
    show_default=True,
    help="Seconds of committed events left in Redis when trimming.",
)
@click.option("--no-trim", is_flag=True, help="Never trim the stream in Redis.")
@click.option(
    "--lease",
    type=click.FloatRange(min=0.3),
    default=DEFAULT_PROJECTOR_LEASE_MS / 1000,
    show_default=True,
    help="Seconds the job's projector lease lasts unless renewed: how long a projector "
    "killed on another machine holds the job.",
)
@metrics_options
@click.pass_context
def project_command(
    ctx: click.Context,
    log_level: str,
    job: str,
    data_dir: Path | None,
    once: bool,
    wait_for: str | None,
    timeout: float,
    commit_interval: float,
    snapshot_interval: float,
    keep_tail: float,
    no_trim: bool,
    lease: float,
    metrics_host: str,
    metrics_port: int | None,
) -> None:
    """Fold the job's log into state, archive it to Parquet, and trim Redis behind it.

    Runs until SIGTERM or Ctrl-C, then reads to the log's end (for at most 10 s) and
    commits; with --once, projects to the log's current end and exits. One projector per
    job: a second one is refused.
    """
    die_with_parent()
    set_log_level(log_level)
    url, directory = resolve_url(data_dir), resolve_data_dir(data_dir)
    if wait_for is not None:
        reached = anyio.run(_wait_for, url, job, wait_for, timeout, directory)
        ctx.exit(0 if reached else 1)
    from projector import Projector, tune_gc

    metrics = _serve_metrics(job, metrics_host, metrics_port)

    async def run() -> None:
        # A Redis restart or a full server is waited out: the projector reads again after
        # its position (a crawl says it once for all of its processes).
        async with connect(url, ride_out_s=DEFAULT_RIDE_OUT_S, quiet=said_by_the_crawl()) as client:
            await _require_job(client, job, directory)
            async with (
                Projector(
                    client,
                    job,
                    directory,
                    commit_interval_s=commit_interval,
                    snapshot_interval_s=snapshot_interval,
                    keep_tail_s=None if no_trim else keep_tail,
                    lease_ms=int(lease * 1000),
                ) as projector,
                anyio.create_task_group() as tg,
            ):
                if metrics is not None:
                    tg.start_soon(metrics.watch, client, projector)
                tune_gc()  # after the state is restored: it is frozen out of collections
                if once:
                    log.info("projector of %s started at %s", job, projector.position)
                else:
                    await _run_until_stopped(projector, job)
                # Stopped, or --once: read what the log holds now and commit it. The crawl
                # that stops its projector has finished: its last events are in, and the
                # crawl's summary reads what this commits (instead of waiting up to a
                # commit interval for the next regular commit, as it did).
                with anyio.move_on_after(math.inf if once else STOP_CATCH_UP_S):
                    # The snapshot too, in the same commit: the exit has none left to make.
                    await projector.catch_up(snapshot=True)
                tg.cancel_scope.cancel()
        manifest = projector.manifest
        click.echo(f"committed {job} up to {manifest.position}: {manifest.events} events archived")

    anyio.run(run)


def _serve_metrics(job: str, host: str, port: int | None) -> ProjectorMetrics | None:
    """The projector's metrics, served on ``host``:``port``; None without a port."""
    if port is None:
        return None
    from crawler._metrics import ProjectorMetrics, new_registry, serve

    registry = new_registry()
    metrics = ProjectorMetrics(registry, job=job)
    serve(registry, host, port)
    return metrics


async def _run_until_stopped(projector: Projector, job: str) -> None:
    """Run ``projector`` until SIGTERM or Ctrl-C."""
    async with anyio.create_task_group() as until_stopped:
        # Listening before saying it started: a SIGTERM right after must stop it the
        # graceful way, not with the default action.
        await until_stopped.start(
            _cancel_on_signal,
            until_stopped.cancel_scope,
            lambda: log.info("projector of %s started at %s", job, projector.position),
        )
        await projector.run()


async def _require_job(client: aioredis.Redis, job: str, directory: Path) -> None:
    """``ConfigError`` unless the job exists: its settings or its log in Redis, or its
    projected data here (a mistyped --job would otherwise wait for events forever)."""
    from projector import MANIFEST, job_dir, projected_jobs

    keys = JobKeys(job)
    if await job_exists(client, keys):
        return
    if (job_dir(directory, job) / MANIFEST).exists():
        return
    hint = did_you_mean(job, [*await job_names(client), *projected_jobs(directory)])
    raise ConfigError(
        f"no job {job!r} here{hint} (no settings or events in Redis, no data under "
        f"{directory}): start it with `crawlog crawl SEED --job {job}`; `crawlog jobs` lists "
        "the jobs"
    )


async def _cancel_on_signal(
    scope: anyio.CancelScope,
    announce: Callable[[], None],
    *,
    task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        # A crawl starts its projector with both blocked, so that a stop sent while it was
        # starting waits for this moment (crawler/cli/_processes.py). Announced before the
        # loop runs again: a stop waiting here cancels the scope at its next turn.
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
        announce()
        task_status.started()
        async for _ in signals:
            scope.cancel()
            return


async def _wait_for(url: str, job: str, target: str, timeout: float, directory: Path) -> bool:
    from projector import committed_position, wait_for_position

    async with connect(url) as client:
        await _require_job(client, job, directory)
        if target == "last":
            last = await EventLog(client, job).last_id()
            if last is None:
                return True
            target = last
        try:
            stream_id_key(target)
        except ValueError:
            raise CrawlogError(
                f"--wait-for {target!r} is not a stream ID (like 1700000000000-0) nor 'last'"
            ) from None
        if await wait_for_position(client, job, target, timeout) is not None:
            return True
        position = await committed_position(client, job)
        click.echo(
            f"crawlog: the projector of {job} has not reached {target} "
            f"(it is at {position or 'nothing yet'})",
            err=True,
        )
        return False


@click.command("replay", epilog="Example:  crawlog replay --job shop --verify")
@job_option
@data_dir_option
@click.option("--verify", is_flag=True,
              help="Compare with the live snapshot; exit 1 if they differ.")  # fmt: skip
@click.option("--rebuild-index", is_flag=True,
              help="Point the checkpoint index in Redis at what the log says.")  # fmt: skip
@click.option(
    "--from-redis",
    is_flag=True,
    help="First rewrite archive segments that cannot be read, from the events "
    "the stream in Redis still holds (stop the projector first).",
)
@click.pass_context
def replay_command(
    ctx: click.Context,
    job: str,
    data_dir: Path | None,
    verify: bool,
    rebuild_index: bool,
    from_redis: bool,
) -> None:
    """Rebuild the job's whole state from the archive and the stream tail."""
    from projector import Store, TaskSpill, rebuild_checkpoint_index, repair, replay_job, tune_gc
    from projector import verify as verify_snapshot

    tune_gc()  # a fold of the whole log: as few collections as the projector's

    directory = resolve_data_dir(data_dir)
    store = Store(directory, job)
    if from_redis:
        rebuilt = anyio.run(_rebuild_segments, resolve_url(data_dir), store)
        click.echo(f"{len(rebuilt)} damaged archive segment(s) rebuilt from Redis")
        for name in rebuilt:
            click.echo(f"  {name}")
    if store.manifest_problem() or not store.snapshot_readable(store.read_manifest()):
        for line in repair(store):  # a damaged snapshot is written again from the archive
            click.echo(line)
    if verify:
        if store.read_manifest().snapshot is None:
            raise CrawlogError(
                f"no projected state for job {job!r} under {directory}: "
                f"run `crawlog project --job {job}` first"
            )
        position, found = verify_snapshot(store)
        try:
            gap = anyio.run(_stream_gap, resolve_url(data_dir), store)
        except CrawlogError as exc:  # where the stream cannot be asked, the files still can
            click.echo(f"crawlog: the stream was not checked for a gap: {exc}", err=True)
            gap = None
        found += [gap] if gap else []
        if found:
            click.echo(f"replay differs from the live state at {position}:")
            for line in found:
                click.echo(f"  {line}")
            ctx.exit(1)
        click.echo(f"replay is identical to the live state at {position}")
        if not rebuild_index:
            return
    url = resolve_url(data_dir)

    async def run() -> None:
        async with connect(url) as client:
            await _require_job(client, job, directory)
            with TaskSpill() as spill:
                replayed = await replay_job(client, store, spill)
                state = replayed.state
                click.echo(
                    f"replayed {state.job.events} events of {job} up to {state.position}: "
                    f"{replayed.task_count()} tasks, {state.job.refused} anomalies"
                    + (
                        f", {state.job.orphaned} journalled write(s) orphaned"
                        if state.job.orphaned
                        else ""
                    )
                )
                if rebuild_index:
                    changed = await rebuild_checkpoint_index(client, job, replayed)
                    click.echo(f"checkpoint index rebuilt: {changed} entries changed")

    anyio.run(run)


async def _stream_gap(url: str, store: Store) -> str | None:
    from projector import stream_gap

    async with connect(url) as client:
        return await stream_gap(client, store)


@click.command("repair", epilog="Example:  crawlog repair --job shop")
@job_option
@data_dir_option
def repair_command(job: str, data_dir: Path | None) -> None:
    """Rebuild the job's projector files that can be rebuilt from its archive: a manifest
    missing or damaged (from the segment files on disk), a snapshot or task and key files
    that cannot be read. Stop the projector first. Archive segments themselves come back
    with `crawlog replay --from-redis` while the stream still holds their events."""
    from projector import Store, files_warning, projected_jobs, repair

    directory = resolve_data_dir(data_dir)
    store = Store(directory, job)
    if not store.root.is_dir():
        known = projected_jobs(directory)
        raise ConfigError(
            f"no job {job!r} has projected data under {directory}{did_you_mean(job, known)}: "
            "`crawlog jobs` lists the jobs"
        )
    done = repair(store)
    for line in done or [f"nothing to repair in {store.root}"]:
        click.echo(line)
    warning = files_warning(store)
    if warning:
        raise CrawlogError(warning)


async def _rebuild_segments(url: str, store: Store) -> list[str]:
    from projector import rebuild_from_redis

    async with connect(url) as client:
        return await rebuild_from_redis(client, store)
