"""``crawlog restore``: rebuild a job's keys in a store that lost them, from its archive."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import click

from crawler._job import JobConfig, load_config
from crawler._recrawl import run_fingerprint
from crawler._urls import fingerprint
from crawler.cli._options import data_dir_option, job_option
from eventlog import (
    ConfigError,
    JobKeys,
    OperatorRefused,
    connect,
    journal_directory,
    resolve_data_dir,
    resolve_url,
)

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

    async def run() -> tuple[Restored, JobConfig | None]:
        async with connect(url) as client:
            if from_server is None:
                done = await restore_job(client, directory, job, landing=_landing)
            else:
                async with connect(from_server) as source:
                    done = await restore_job(
                        client, directory, job, tail_from=source, landing=_landing
                    )
            try:
                return done, await load_config(client, JobKeys(job))
            except ConfigError:
                return done, None  # its settings were lost with the store (a flush)

    done, config = anyio.run(run)
    click.echo(
        f"restored job {job} at {done.position} (epoch {done.epoch}) in {done.seconds:.1f} s: "
        f"{done.tasks} task(s) known, {done.queued} queued ({done.running} reclaimed from "
        f"their workers, in the recovery lane), {done.delayed} retries held until due, "
        f"{done.parked} parked, {done.uncertain} with an uncertain action, "
        f"{done.redirects} redirect claim(s); "
        f"{done.tail_events} event(s) of the log's tail kept"
        + (
            "; the store's log did not go on from the archive and was started again"
            if done.dropped_log
            else ""
        )
    )
    for line in not_restored(config, done.sites, journals_left(directory, job)):
        click.echo(line)
    click.echo("next: run the same `crawlog crawl` command to resume the job")


def _landing(url: str, run: int) -> str:
    """The fingerprint a task of ``run`` claims for a URL it was redirected to."""
    return run_fingerprint(fingerprint(url), run)


SITES_NAMED = 5
"""Sites a line of `not_restored` names before it says how many more."""


def not_restored(config: JobConfig | None, sites: list[str], journals: list[str]) -> list[str]:
    """What a restore could not bring back, one line each, and what comes back later."""
    named = ", ".join(sites[:SITES_NAMED]) + (
        f" and {len(sites) - SITES_NAMED} more" if len(sites) > SITES_NAMED else ""
    )
    lines = []
    if config is None or config.cookies:
        lines.append(
            f"not restored: the cookie jar of {named or 'each site'}"
            + (" (if the job keeps cookies)" if config is None else "")
            + ": never logged (a spider that logs in does it again)"
        )
    if config is None or config.obey_robots:
        lines.append(
            f"not restored: robots.txt of {named or 'each site'}"
            + (" (if the job obeys it)" if config is None else "")
            + ": never logged (fetched again before the site's next page)"
        )
    lines.append(
        "not restored: redirect claims past a first page, and the hops before the last of a "
        "chain (only where a task's first page landed is logged: a page reached that way may "
        "be fetched once more as its own task); operator retry markers and the revisit "
        "intervals given to `crawlog recrawl` (the defaults apply until given again): never "
        "logged"
    )
    if journals:
        lines.append(
            f"comes back at the next crawl: what the journals of {', '.join(journals)} in this "
            "data directory hold after the archive (a worker on another machine gives back "
            "its own when it starts there under its name)"
        )
    return lines


def journals_left(data_dir: Path, job: str) -> list[str]:
    """The workers whose journals of ``job`` are in ``data_dir``, by name."""
    workers = data_dir / "workers"
    if not workers.is_dir():
        return []
    return sorted(
        path.name
        for path in workers.iterdir()
        if any(journal_directory(data_dir, path.name, job).glob("*.journal"))
    )


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
