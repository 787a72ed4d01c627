"""``crawlog changes``: what a run of a job found — its pages new, changed and gone."""

from __future__ import annotations

import csv
import io
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal, get_args

import anyio
import click
import msgspec

from crawler._job import load_config
from crawler._recrawl import latest_run
from crawler.cli._options import data_dir_option, job_option
from crawler.ops import unjudged_phrase
from eventlog import ConfigError, JobKeys, connect, read_run, resolve_data_dir, resolve_url

if TYPE_CHECKING:
    from projector import ItemChange, Unjudged

ChangesFormat = Literal["table", "jsonl", "csv"]
CHANGES_FORMATS: Final[tuple[str, ...]] = get_args(ChangesFormat)
COLUMNS: Final = ("url", "change", "run", "time", "previous_hash", "new_hash")
ITEM_COLUMNS: Final = ("key", "change", "run", "url", "time", "data", "previous")


@click.command("changes", epilog="Example:  crawlog changes --job site --format jsonl")
@job_option
@data_dir_option
@click.option(
    "--run",
    type=click.IntRange(1),
    default=None,
    metavar="N",
    help="The run to list [default: the job's latest].",
)
@click.option(
    "--all",
    "every_page",
    is_flag=True,
    help="List the unchanged pages too.",
)
@click.option(
    "--items",
    "of_items",
    is_flag=True,
    help="List the run's items added, changed and removed (with their data), not its pages.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(CHANGES_FORMATS),
    default="table",
    show_default=True,
    help="table for people, jsonl or csv for programs (one page a line).",
)
def changes_command(
    job: str,
    data_dir: Path | None,
    run: int | None,
    every_page: bool,
    of_items: bool,
    fmt: ChangesFormat,
) -> None:
    """List each page a run found new, changed or gone (with --all, unchanged too): its
    URL, what it found, the run, when, and the body's hash before and after. With --items,
    each item the run added, changed or removed: its key, page, data and data before."""
    from projector import Store, Unjudged, item_changes, listed, log_entries, page_changes, unjudged

    url, directory = resolve_url(data_dir), resolve_data_dir(data_dir)
    left = Unjudged()

    async def read() -> tuple[int, list[dict[str, object]]]:
        nonlocal left
        async with connect(url) as client:
            keys = JobKeys(job)
            await load_config(client, keys)  # a job nobody started: say so, exit 2
            record = await read_run(client, keys)
            entries = await log_entries(client, Store(directory, job))
        latest = latest_run((entry.event for entry in entries), recorded=record.run)
        if run is not None and run > latest:
            raise ConfigError(f"job {job!r} has no run {run}: its latest is run {latest}")
        chosen = latest if run is None else run
        left = unjudged(entries, chosen)
        if of_items:
            return chosen, [_item_row(c) for c in item_changes(entries, run=chosen)]
        found = listed(page_changes(entries, run=chosen), "all" if every_page else "changed")
        return chosen, [_row(msgspec.structs.asdict(c)) for c in found]

    chosen, rows = anyio.run(read)
    if fmt == "jsonl":
        for row in rows:
            click.echo(msgspec.json.encode(row).decode())
    elif fmt == "csv":
        out = io.StringIO()
        columns = ITEM_COLUMNS if of_items else COLUMNS
        writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(_flat(row) for row in rows)
        sys.stdout.write(out.getvalue())
    else:
        _table(job, chosen, rows, "key" if of_items else "url")
        if left.total:
            click.echo(unjudged_line(job, left))


def unjudged_line(job: str, left: Unjudged) -> str:
    """What a run's list leaves out: its pages with no verdict, and where to look."""
    phrase = unjudged_phrase(left.failed, left.open)
    return f"not judged: {phrase}; their tasks: crawlog report --job {job}"


def _row(change: dict[str, object]) -> dict[str, object]:
    at = change["time"]
    assert isinstance(at, float)
    return {
        "url": change["url"],
        "change": change["change"],
        "run": change["run"],
        "time": datetime.fromtimestamp(at, UTC).isoformat(timespec="seconds"),
        "previous_hash": change["previous_hash"],
        "new_hash": change["new_hash"],
    }


def _item_row(change: ItemChange) -> dict[str, object]:
    return {
        "key": change.key,
        "change": change.change,
        "run": change.run,
        "url": change.url,
        "time": datetime.fromtimestamp(change.time, UTC).isoformat(timespec="seconds"),
        "data": change.data,
        "previous": change.previous,
    }


def _flat(row: dict[str, object]) -> dict[str, object]:
    """A row as a CSV cell each: an item's data as JSON."""
    return {
        k: msgspec.json.encode(v).decode() if isinstance(v, dict) else v for k, v in row.items()
    }


def _table(job: str, run: int, rows: list[dict[str, object]], name: str = "url") -> None:
    counts: dict[str, int] = {}
    for row in rows:
        counts[str(row["change"])] = counts.get(str(row["change"]), 0) + 1
    said = ", ".join(f"{n} {change}" for change, n in sorted(counts.items())) or "no changes"
    click.echo(f"job {job}, run {run}: {said}")
    for row in rows:
        click.echo(f"{row['change']:<10} {row['time']}  {row[name]}")
