"""``crawlog pause`` and ``crawlog resume``: the job, one site or one task, with who and why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import click

from crawler.cli._operator import (
    by_option,
    open_job,
    reason_option,
    resolve_site,
    task_id_of,
)
from crawler.cli._options import data_dir_option, job_option
from eventlog import (
    JobPaused,
    JobResumed,
    OperatorRefused,
    SitePaused,
    SiteResumed,
    TaskPaused,
    TaskResumed,
    apply_control,
    read_controls,
    uncertain_action,
)
from projector import TERMINAL


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
    verb = "paused" if pause else "resumed"
    async with open_job(data_dir, job_name) as job:
        controls = await read_controls(job.client, job.keys)
        who = f"by {by}: {reason}"
        if task_arg is not None:
            task_id, _ = task_id_of(task_arg)
            is_paused = task_id in controls.paused_tasks
            subject = f"task {task_id}"
            if pause == is_paused:
                return f"{subject} is {'already' if pause else 'not'} paused; nothing written"
            if pause:
                task = await job.task(task_id)
                if task.status in TERMINAL:
                    raise OperatorRefused(
                        f"{subject} has ended ({task.status} at attempt {task.attempt}): "
                        "nothing to pause; `crawlog retry` runs it again"
                    )
                event: Any = TaskPaused(actor=by, task_id=task_id, reason=reason)
                await apply_control(job.client, job.keys, event, task_site=task.site)
                return f"{verb} {subject} ({task.url}) {who}"
            if (uncertain := await uncertain_action(job.client, job.keys, task_id)) is not None:
                # Resumed as it is, it would only be paused again at the same action.
                raise OperatorRefused(
                    f"{subject} waits for a decision about its action {uncertain[1]} (its "
                    "intent is logged, its completion not): `crawlog resolve --job "
                    f"{job_name} --task {task_id} --done|--redo --reason ...`"
                )
            moved = await apply_control(
                job.client, job.keys, TaskResumed(actor=by, task_id=task_id, reason=reason)
            )
            return f"{verb} {subject} {who}; {moved} parked task(s) back in the queue"
        if site_arg is not None:
            site = await resolve_site(job, site_arg, also=controls.paused_sites)
            if pause == (site in controls.paused_sites):
                return f"site {site} is {'already' if pause else 'not'} paused; nothing written"
            event = (SitePaused if pause else SiteResumed)(actor=by, site=site, reason=reason)
            moved = await apply_control(job.client, job.keys, event)
            back = "" if pause else f"; {moved} parked task(s) back in the queue"
            return f"{verb} site {site} {who}{back}"
        if pause == controls.job_paused:
            return f"job {job_name} is {'already' if pause else 'not'} paused; nothing written"
        event = (JobPaused if pause else JobResumed)(actor=by, reason=reason)
        await apply_control(job.client, job.keys, event)
        return f"{verb} job {job_name} {who}"
