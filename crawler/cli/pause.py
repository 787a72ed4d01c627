"""``crawlog pause`` and ``crawlog resume``: the job, one site or one task, with who and why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import click

from crawler.cli._operator import by_option, reason_option
from crawler.cli._options import data_dir_option, job_option
from crawler.ops import open_job, pause_or_resume, task_id_of


def _target_options(command: Any) -> Any:
    command = click.option(
        "--task", "task", metavar="ID|URL", help="One task (its id, or its URL)."
    )(command)
    return click.option(
        "--site", metavar="HOST", help="Every task of a site: HOST[:PORT] or scheme://host[:port]."
    )(command)


@click.command(
    "pause",
    epilog="Example:  crawlog pause --job shop --site shop.example.com "
    "--reason 'they asked us to slow down'",
)
@job_option
@data_dir_option
@_target_options
@reason_option
@by_option
def pause_command(
    job: str, data_dir: Path | None, site: str | None, task: str | None, reason: str, by: str
) -> None:
    """Pause the job, one site (--site) or one task (--task), recording who and why.

    Workers see it within a second: a paused job's tasks go back to their lanes, a paused
    site's or task's tasks are parked (the page in flight is finished and checkpointed).
    Pausing what is already paused writes nothing.
    """
    click.echo(anyio.run(_control, data_dir, job, site, task, reason, by, True))


@click.command(
    "resume",
    epilog="Example:  crawlog resume --job shop --site shop.example.com --reason 'rate agreed'",
)
@job_option
@data_dir_option
@_target_options
@reason_option
@by_option
def resume_command(
    job: str, data_dir: Path | None, site: str | None, task: str | None, reason: str, by: str
) -> None:
    """Resume the job, a site (--site) or a task (--task), recording who and why.

    A resumed site's or task's parked tasks go back to their lanes in the same step.
    Resuming what is not paused writes nothing.
    """
    click.echo(anyio.run(_control, data_dir, job, site, task, reason, by, False))


async def _control(
    data_dir: Path | None,
    job_name: str,
    site_arg: str | None,
    task_arg: str | None,
    reason: str,
    by: str,
    pause: bool,
) -> str:
    if site_arg is not None and task_arg is not None:
        raise click.UsageError("give --site or --task, not both")
    async with open_job(data_dir, job_name) as job:
        task_id = task_id_of(task_arg)[0] if task_arg is not None else None
        return await pause_or_resume(job, reason, by, pause=pause, site=site_arg, task_id=task_id)
