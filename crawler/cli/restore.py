"""``crawlog restore``: rebuild a job's keys in a store that lost them, from its archive."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import click

from crawler.cli._options import data_dir_option, job_option
from eventlog import JobKeys, OperatorRefused, connect, resolve_data_dir, resolve_url

if TYPE_CHECKING:
    from projector import Restored


@click.command(
    "restore",
    epilog="Example:  crawlog restore --job shop   (then the same `crawlog crawl` command)",
)
@job_option
@data_dir_option
@click.option("--yes", is_flag=True, help="Do not ask to type the job name to confirm.")
@click.option(
    "--from-server",
    metavar="URL",
    default=None,
    help="Also take the log's tail after the archive from this server (the old one, if it "
    "still answers).",
)
def restore_command(job: str, data_dir: Path | None, yes: bool, from_server: str | None) -> None:
    """Rebuild every key of a job the store lost (flushed, evicted, restarted on a missing
    or cut append-only file) from its archive and whatever tail of the log is left.

    Unfinished tasks go back to their lanes once each (with their attempt, request and
    resume point), pauses, circuits and once-only markers as the log last set them, every
    URL seen, and a new fencing epoch: nothing from before the loss writes again. Refused
    while workers of the job hold leases. Then run the same `crawlog crawl` command.
    """
    from projector import restore_job

    JobKeys(job)  # a bad name is one line before anything starts
    directory = resolve_data_dir(data_dir)
    url = resolve_url(data_dir)
    if not yes:
        _confirm(job)

    async def run() -> Restored:
        async with connect(url) as client:
            if from_server is None:
                return await restore_job(client, directory, job)
            async with connect(from_server) as source:
                return await restore_job(client, directory, job, tail_from=source)

    done = anyio.run(run)
    click.echo(
        f"restored job {job} at {done.position} (epoch {done.epoch}) in {done.seconds:.1f} s: "
        f"{done.tasks} task(s) known, {done.queued} queued ({done.running} reclaimed from "
        f"their workers, in the recovery lane), {done.delayed} retries held until due, "
        f"{done.parked} parked, {done.uncertain} with an uncertain action; "
        f"{done.tail_events} event(s) of the log's tail kept"
        + (
            "; the store's log did not go on from the archive and was started again"
            if done.dropped_log
            else ""
        )
    )
    from projector import NOT_RESTORED

    click.echo("not restored (not in the log): " + "; ".join(NOT_RESTORED))
    click.echo("next: run the same `crawlog crawl` command to resume the job")


def _confirm(job: str) -> None:
    click.echo(
        f"about to replace every key of job {job} in the store with what its archive holds",
        err=True,
    )
    try:
        typed = click.prompt(
            f"type the job name ({job}) to confirm", err=True, default="", show_default=False
        )
    except click.Abort:
        typed = ""
    if typed.strip() != job:
        raise OperatorRefused(
            "not confirmed (the job name was not typed); nothing restored: pass --yes to skip"
        )
