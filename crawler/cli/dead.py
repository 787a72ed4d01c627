"""``crawlog dead list`` and ``crawlog dead replay``: entries that could not be decoded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import click

from crawler.cli._operator import echo_json
from crawler.cli._options import data_dir_option, job_option, json_option
from crawler.ops import open_job, table_lines
from eventlog import (
    DeadLetter,
    EventLog,
    JobKeys,
    OperatorRefused,
    find_dead_letter,
    replay_dead_letter,
)


@click.group("dead", epilog="Example:  crawlog dead list --job shop")
def dead_group() -> None:
    """Entries that could not be decoded, moved aside: list them, put them back."""


@dead_group.command("list", epilog="Example:  crawlog dead list --job shop --json")
@job_option
@data_dir_option
@click.option("--limit", type=click.IntRange(1), default=1000, show_default=True,
              help="Dead letters listed at most, oldest first.")  # fmt: skip
@json_option
def dead_list_command(job: str, data_dir: Path | None, limit: int, as_json: bool) -> None:
    """List dead-lettered entries: where from, why, how often delivered."""

    async def run() -> list[DeadLetter]:
        async with open_job(data_dir, job) as opened:
            return await EventLog(opened.client, opened.keys).dead_letters(limit)

    letters = anyio.run(run)
    if as_json:
        echo_json([_dead_json(d) for d in letters])
        return
    if not letters:
        click.echo(f"no dead letters in job {job}")
        return
    keys = JobKeys(job)
    rows = [
        [
            d.dead_id,
            keys.short(d.stream),
            d.entry_id,
            str(d.deliveries),
            f"{sum(len(v) for v in d.fields.values())} B",
            d.reason,
        ]
        for d in letters
    ]
    for line in table_lines([["dead id", "from", "entry", "deliveries", "size", "reason"], *rows]):
        click.echo(line)
    click.echo(
        f"({len(letters)} dead letter{'s' if len(letters) != 1 else ''}; "
        f"`crawlog dead replay --job {job} ID` puts one back)"
    )


def _dead_json(letter: DeadLetter) -> dict[str, Any]:
    return {
        "dead_id": letter.dead_id,
        "stream": letter.stream,
        "entry_id": letter.entry_id,
        "reason": letter.reason,
        "deliveries": letter.deliveries,
        "fields": {k.decode(errors="replace"): v.hex() for k, v in letter.fields.items()},
    }


@dead_group.command("replay", epilog="Example:  crawlog dead replay --job shop 1714564800123-0")
@job_option
@data_dir_option
@click.argument("dead_ids", nargs=-1, metavar="[DEAD_ID]...")
@click.option("--all", "replay_all", is_flag=True, help="Every dead letter of the job.")
def dead_replay_command(
    job: str, data_dir: Path | None, dead_ids: tuple[str, ...], replay_all: bool
) -> None:
    """Put dead letters back on the stream they came from, as new entries.

    Only entries that decode now (after an upgrade that reads them) are put back; each is
    removed from the dead letters in the same step, so a replay never happens twice.
    """
    if bool(dead_ids) == replay_all:
        raise click.UsageError("give DEAD_IDs, or --all")

    async def run() -> list[str]:
        refusals: list[str] = []
        async with open_job(data_dir, job) as opened:
            log = EventLog(opened.client, opened.keys)
            letters = (
                await log.dead_letters(1_000_000)
                if replay_all
                else [await find_dead_letter(log, dead_id) for dead_id in dead_ids]
            )
            for letter in letters:
                try:
                    new_id = await replay_dead_letter(log, letter)
                except OperatorRefused as refused:
                    refusals.append(str(refused))
                    continue
                click.echo(f"replayed {letter.dead_id} to {letter.stream} as {new_id}")
        return refusals

    refusals = anyio.run(run)
    if refusals:
        for line in refusals[:-1]:
            click.echo(f"crawlog: {line}", err=True)
        raise OperatorRefused(refusals[-1])
