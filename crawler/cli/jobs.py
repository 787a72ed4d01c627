"""``crawlog jobs``: every job of the data directory and of its server, with its status.

A job lives in two places: its settings, queue and log on the server, its projected data
(the committed archive and state) in the data directory. Either may be missing — a job fed
through the API has no projected data until a projector runs, and the data directory keeps
a job whose server is stopped or was wiped — so both are listed, each job once, with where
it was found. Read-only, and it starts no server: crawlog's own is asked only if it runs.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import anyio
import anyio.to_thread
import click
import msgspec

from crawler.cli._exit import EXIT_NO
from crawler.cli._options import data_dir_option, json_option
from crawler.ops import JobRow, format_duration, read_job_rows
from eventlog import (
    REDIS_URL_ENV,
    redacted,
    resolve_data_dir,
    server_status,
)


@click.command(
    "jobs", epilog="Example:  crawlog jobs --data-dir ~/crawls   (or: crawlog jobs --json)"
)
@data_dir_option
@json_option
@click.pass_context
def jobs_command(ctx: click.Context, data_dir: Path | None, as_json: bool) -> None:
    """Every job in the data directory and on its server: status, tasks, last activity.

    Status: running (a worker is alive or holds a lease), done (no task left), unfinished
    (tasks left, nobody working: run the same `crawl` again), empty (no task yet). Run is
    the job's latest (past 1: `crawlog recrawl` ran it again), from the server. Ended and
    failed count every run's tasks, as of the projector's last commit; remaining is live
    when the server runs.
    Exit status 1 when there is no job.
    """
    from projector import Store, files_warning, projected_jobs

    directory = resolve_data_dir(data_dir)
    url = _server_url(directory)
    for job in projected_jobs(directory):
        warning = files_warning(Store(directory, job))
        if warning:
            click.echo(f"crawlog: warning: {warning}", err=True)
    rows = anyio.run(read_job_rows, directory, url)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "data_dir": str(directory),
                    "server": url is not None,
                    "jobs": [msgspec.to_builtins(row) for row in rows],
                },
                indent=2,
            )
        )
    elif not rows:
        where = f"no job in {directory}"
        click.echo(where + ("" if url else " (and no server running for it)") + _elsewhere())
    else:
        _print(rows, directory, url)
    if not rows:
        ctx.exit(EXIT_NO)


def _server_url(directory: Path) -> str | None:
    """The server to ask: REDIS_URL's, or crawlog's own if it runs (none is started)."""
    external = os.environ.get(REDIS_URL_ENV)
    if external:
        return external
    status = server_status(directory)
    return status.url if status is not None else None


def _print(rows: list[JobRow], directory: Path, url: str | None) -> None:
    from crawler.cli.reports import format_table
    from projector import QueryResult

    now = time.time()
    table = QueryResult(
        columns=(
            "job",
            "status",
            "run",
            "ended",
            "failed",
            "remaining",
            "workers",
            "last activity",
            "where",
        ),
        rows=[
            (
                r.job,
                r.status,
                r.run,
                r.done,
                r.failed,
                r.remaining,
                r.workers_alive,
                _ago(r.last_activity, now),
                _where(r),
            )
            for r in rows
        ],
    )
    click.echo(format_table(table))
    if url is None:
        click.echo(
            f"data directory {directory}; no server running for it: remaining is as of each "
            "job's last commit"
        )
    elif os.environ.get(REDIS_URL_ENV):
        click.echo(f"data directory {directory} and the server at {redacted(url)} (REDIS_URL)")
    else:
        click.echo(f"data directory {directory} and its server")


def _where(row: JobRow) -> str:
    return "+".join(
        name for name, yes in (("server", row.on_server), ("data dir", row.in_data_dir)) if yes
    )


def _ago(when: float | None, now: float) -> str | None:
    if when is None:
        return None
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(when))
    return f"{stamp} UTC ({format_duration(max(0, int(now - when)))} ago)"


def _elsewhere() -> str:
    return (
        ": point --data-dir (or CRAWLOG_HOME) at the data directory a crawl used, or set "
        "REDIS_URL to the server it used"
    )
