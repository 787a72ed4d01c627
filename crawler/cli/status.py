"""``crawlog status``: a job's live progress, from any process that can reach its Redis.

Not ``crawlog server status`` (is the server up?): this is about one job. The numbers are
the projector's committed state plus the stream's tail folded here
(``crawler.ops.LiveProgress``), so they are as recent as the log itself, whether or not the
projector keeps up.
"""

from __future__ import annotations

import json
import time
from contextlib import ExitStack, suppress
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import click

from crawler._job import load_config
from crawler.cli._options import data_dir_option, job_option, json_option
from eventlog import FIRST_RUN, JobKeys, connect, read_run, resolve_data_dir, resolve_url

if TYPE_CHECKING:
    from crawler.ops import LiveProgress, Progress

WATCH_EVERY_S = 0.5
"""Half the promised second: a refresh sees everything appended before it starts."""


@click.command(
    "status",
    epilog="Example:  crawlog status --job site --watch   (Ctrl-C to stop watching)",
)
@job_option
@data_dir_option
@json_option
@click.option(
    "--watch",
    is_flag=True,
    help="Refresh until the job ends (every task it found has ended) or Ctrl-C.",
)
@click.option(
    "--interval",
    type=click.FloatRange(0.1, 3600),
    default=WATCH_EVERY_S,
    show_default=True,
    metavar="S",
    help="Seconds between refreshes with --watch.",
)
@click.option(
    # What --watch does by itself now; still accepted so that scripts using it keep working.
    "--until-done",
    is_flag=True,
    hidden=True,
)
def status_command(
    job: str,
    data_dir: Path | None,
    as_json: bool,
    watch: bool,
    interval: float,
    until_done: bool,
) -> None:
    """Show a job's progress per site (ended/discovered, rate, ETA, failures, retries) and
    its workers with their lease ages, as of the last event in the log. A job crawled
    with --autothrottle shows each host's delay as it is now.

    Works for a job run elsewhere: it reads the job's Redis and the projector's committed
    files in --data-dir (without the projector's lock), and folds the events the projector
    has not committed yet itself. Rates need two readings: a single status shows them (and
    the ETA) as unknown, --watch measures them over the last 10 s.
    With --json, one JSON object per refresh, one per line.
    """
    from crawler.ops import LiveProgress

    directory = resolve_data_dir(data_dir)
    url = resolve_url(data_dir, create=False)  # reading a job starts no server of its own
    _warn_of_missing_files(directory, job)

    async def run() -> None:
        from projector import check_store

        async with connect(url) as client:
            # A job the archive knows and the store lost is said so, not "no job here".
            await check_store(client, directory, job, create=False)
            config = await load_config(client, JobKeys(job))  # an unknown job fails here
            politeness = config.politeness
            floor_ms = round(politeness.delay_s * 1000) if politeness.autothrottle else None
            # A recrawled job's progress is its latest run's, as the recrawl shows it: the
            # runs before it ended, and their failures (a page gone) are not this run's.
            latest = (await read_run(client, JobKeys(job))).run
            run = latest if latest > FIRST_RUN else None
            source = LiveProgress(
                client,
                job,
                directory,
                lease_ms=config.lease_ms,
                delay_floor_ms=floor_ms,
                # Counts per site (the ended tasks stay in the task store), but for a run's
                # own, which leave out the tasks of the runs before it.
                every_task=run is not None,
                run=run,
            )
            ended = await _show(source, watch=watch, as_json=as_json, interval=interval)
            if not watch and not as_json:
                from crawler.ops import needs_a_person, needs_a_person_lines

                waiting = await needs_a_person(client, JobKeys(job))
                for line in needs_a_person_lines(job, waiting):
                    click.echo(line)
            if ended and not watch and not as_json:
                # Of an ended job only: it reads the whole log, which a running crawl's
                # status has no use for (its pages are being visited).
                from crawler.cli._revisit_text import job_due_line

                revisits = await job_due_line(client, directory, job, time.time())
                if revisits:
                    click.echo(revisits)

    # Ctrl-C is how a watch ends: not an error.
    with suppress(KeyboardInterrupt):
        anyio.run(run)


async def _show(source: LiveProgress, *, watch: bool, as_json: bool, interval: float) -> bool:
    """One refresh, or with ``watch`` one every ``interval`` until the job ends: as a
    table on a terminal, plain lines elsewhere, or a JSON object a line. Whether the job
    had ended at the last."""
    from crawler.cli._progress_view import PlainDisplay, as_dict, display_for

    def emit_json(report: Progress) -> None:
        click.echo(json.dumps(as_dict(report)))

    if not watch:
        report = await source.refresh()
        if as_json:
            emit_json(report)
        else:
            PlainDisplay(click.echo, detail=True).update(report)
        return report.complete
    display = None if as_json else display_for(click.echo, detail=True)
    with ExitStack() as stack:
        if display is not None:
            stack.enter_context(display)
        while True:
            report = await source.refresh()
            if display is None:
                emit_json(report)
            else:
                display.update(report)
            if report.complete:
                # The job ended: what the help promises, and no reason to go on
                # redrawing the same numbers.
                return True
            await anyio.sleep(interval)


def _warn_of_missing_files(directory: Path, job: str) -> None:
    """One line on stderr if a file the projector committed is missing or cut short."""
    from projector import Store, files_warning, job_dir

    if job_dir(directory, job).is_dir():
        warning = files_warning(Store(directory, job))
        if warning:
            click.echo(f"crawlog: warning: {warning}", err=True)
