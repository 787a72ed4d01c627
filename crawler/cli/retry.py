"""``crawlog retry``: ended tasks run again, one by its id or URL, or in bulk by status and site."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import click

from crawler.cli._operator import SHOWN, by_option, echo_json, reason_option
from crawler.cli._options import data_dir_option, job_option, json_option
from crawler.ops import open_job, resolve_site, retry_tasks, task_id_of
from eventlog import OperatorRefused, read_workers
from projector import ABORTED, FAILED, TERMINAL, TaskState


@click.command(
    "retry",
    epilog="Examples:  crawlog retry --job shop 3f9c0e4d2a1b7c55 --reason 'fixed the proxy'\n\n"
    "           crawlog retry --job shop --failed --site shop.example.com --reason 'site back' "
    "--yes",
)
@job_option
@data_dir_option
@click.argument("task", metavar="[TASK_ID|URL]", required=False)
@click.option("--failed", is_flag=True, help="Every failed task (of --site, or of the job).")
@click.option("--aborted", is_flag=True, help="Every aborted task (of --site, or of the job).")
@click.option("--site", metavar="HOST", help="Only tasks of this site (with --failed/--aborted).")
@reason_option
@by_option
@click.option("--yes", is_flag=True, help="Do not ask to type the job name to confirm.")
@click.option("--all", "show_all", is_flag=True, help="List every task retried, not the first 20.")
@json_option
def retry_command(
    job: str,
    data_dir: Path | None,
    task: str | None,
    failed: bool,
    aborted: bool,
    site: str | None,
    reason: str,
    by: str,
    yes: bool,
    show_all: bool,
    as_json: bool,
) -> None:
    """Run ended tasks again: one TASK, or every --failed / --aborted task of a site or job.

    Appends TaskRetried (who, why) and puts each task back in its lane, so workers fetch
    it again as its next attempt; a failed or aborted task resumes after its last
    checkpoint, a done one starts over. Only an ended task can be retried, once per ended
    attempt: running the command twice enqueues nothing twice. A bulk retry asks you to
    type the job name unless --yes.
    """
    if task is not None and (failed or aborted or site):
        raise click.UsageError("give a TASK, or --failed/--aborted [--site], not both")
    if task is None and not (failed or aborted):
        raise click.UsageError("give a TASK to retry, or --failed and/or --aborted")
    statuses = frozenset(s for s, on in ((FAILED, failed), (ABORTED, aborted)) if on)
    outcome = anyio.run(_retry, data_dir, job, task, statuses, site, reason, by, yes)
    retried, refused, alive = outcome
    if as_json:
        echo_json({"retried": [_task_json(t) for t in retried], "refused": refused})
        return
    if not retried and not refused:
        what = " or ".join(sorted(statuses))
        click.echo(f"no {what} tasks to retry in job {job}{f' (site {site})' if site else ''}")
        return
    click.echo(f"retried {len(retried)} task(s) of job {job} by {by}: {reason}")
    for t in retried if show_all else retried[:SHOWN]:
        click.echo(
            f"  {t.task_id}  {t.status} at attempt {t.attempt} -> attempt {t.attempt + 1}  {t.url}"
        )
    if not show_all and len(retried) > SHOWN:
        click.echo(f"  ... and {len(retried) - SHOWN} more (--all lists them)")
    if refused:
        click.echo(
            f"{len(refused)} already retried meanwhile (by someone else): {', '.join(refused)}"
        )
    if retried and not alive:
        click.echo(f"no worker is running: `crawlog worker --job {job}` fetches them")


def _task_json(task: TaskState) -> dict[str, Any]:
    return {
        "task_id": task.task_id,
        "url": task.url,
        "site": task.site,
        "status": task.status,
        "ended_attempt": task.attempt,
        "attempt": task.attempt + 1,
    }


async def _retry(
    data_dir: Path | None,
    job_name: str,
    task_arg: str | None,
    statuses: frozenset[str],
    site_arg: str | None,
    reason: str,
    by: str,
    yes: bool,
) -> tuple[list[TaskState], list[str], bool]:
    async with open_job(data_dir, job_name) as job:
        if task_arg is not None:
            task_id, _ = task_id_of(task_arg)
            task = await job.task(task_id)
            if task.status not in TERMINAL:
                raise OperatorRefused(
                    f"task {task_id} is {task.status} (attempt {task.attempt}), it has not "
                    "ended: only a done, failed or aborted task can be retried; nothing written"
                )
            chosen = [task]
        else:
            site = await resolve_site(job, site_arg) if site_arg is not None else None
            # Only the failed (aborted) tasks of the site are read from the task store.
            _, tasks = await job.tasks(statuses=statuses, site=site)
            chosen = sorted(tasks.values(), key=lambda t: (t.site, t.url))
            if not chosen:
                return [], [], True
            if not yes:
                _confirm(job_name, chosen)
        retried, not_retried = await retry_tasks(job, chosen, reason, by)
        refused = [t.task_id for t in not_retried]
        if task_arg is not None and refused:
            raise OperatorRefused(
                f"task {refused[0]} was already retried from attempt {chosen[0].attempt} "
                "(another operator, or this command run twice); nothing written"
            )
        alive = any(w.alive for w in await read_workers(job.client, job.keys))
        return retried, refused, alive


def _confirm(job: str, tasks: Sequence[TaskState]) -> None:
    by_status = Counter(t.status for t in tasks)
    sites = Counter(t.site for t in tasks)
    summary = ", ".join(f"{n} {s}" for s, n in sorted(by_status.items()))
    click.echo(
        f"about to retry {len(tasks)} task(s) of job {job} ({summary}) on {len(sites)} site(s):",
        err=True,
    )
    for site, n in sites.most_common(5):
        click.echo(f"  {n:>6}  {site}", err=True)
    try:
        typed = click.prompt(
            f"type the job name ({job}) to confirm", err=True, default="", show_default=False
        )
    except click.Abort:
        typed = ""
    if typed.strip() != job:
        raise OperatorRefused(
            "not confirmed (the job name was not typed); nothing retried: pass --yes to skip"
        )
