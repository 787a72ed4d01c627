"""``crawlog resolve``: a person's decision about a task's uncertain ``response.once`` action."""

from __future__ import annotations

from pathlib import Path

import anyio
import click

from crawler.cli._operator import by_option, reason_option
from crawler.cli._options import data_dir_option, job_option
from crawler.ops import open_job, resolve, task_id_of
from eventlog import Decision, read_workers


@click.command(
    "resolve",
    epilog="Example:  crawlog resolve --job shop --task 3f9c0e4d2a1b7c55 --done "
    "--reason 'the mail went out: seen in the outbox'",
)
@job_option
@data_dir_option
@click.option("--task", "task", metavar="ID|URL", required=True, help="The task (id or URL).")
@click.option("--done", "decision", flag_value="done", help="The action ran: skip it.")
@click.option("--redo", "decision", flag_value="redo", help="The action did not run: run it.")
@click.option("--abort", "decision", flag_value="abort", help="Neither: stop the task (it fails).")
@reason_option
@by_option
def resolve_command(
    job: str, data_dir: Path | None, task: str, decision: str | None, reason: str, by: str
) -> None:
    """Decide about a task's uncertain action, recording who and why; the task resumes.

    A worker that died during a `response.once` action leaves its intent in the log and
    not its completion: the next worker pauses the task for a person, who finds out
    whether the action happened. --done: it did, and the task resumes without running it
    again; --redo: it did not, and the task resumes and runs it once more; --abort: the
    task resumes only to fail, running nothing more. A flow's step handed to a person
    is decided the same way: --done skips the item, --redo retries the step. Refused for a
    task with no action waiting for a decision.
    """
    if decision not in ("done", "redo", "abort"):
        raise click.UsageError(
            "give --done (the action ran), --redo (run it again) or --abort (stop the task)"
        )
    chosen: Decision = "done" if decision == "done" else "redo" if decision == "redo" else "abort"
    click.echo(anyio.run(_resolve, data_dir, job, task, chosen, reason, by))


async def _resolve(
    data_dir: Path | None, job_name: str, task_arg: str, decision: Decision, reason: str, by: str
) -> str:
    task_id, _ = task_id_of(task_arg)
    async with open_job(data_dir, job_name) as job:
        line = await resolve(job, task_id, decision, reason, by)
        alive = any(w.alive for w in await read_workers(job.client, job.keys))
    if not alive:
        line += f"; no worker is running: `crawlog worker --job {job_name}` resumes the task"
    return line
