"""``crawlog sessions``: the browser logins a job keeps, listed or cleared for an origin."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import anyio
import click
import msgspec

from crawler.cli._operator import echo_json
from crawler.cli._options import data_dir_option, job_option, json_option
from crawler.ops import (
    SessionRow,
    clear_session_origin,
    open_job,
    origin_in,
    session_rows,
    table_lines,
)
from eventlog import BrowserSessionStore, OperatorRefused

HEADER = ("origin", "identity", "version", "saved (UTC)", "cookies", "local", "session")
NEVER = "-"
"""The save time of a session saved before its time was kept."""


@click.command(
    "sessions",
    epilog="Examples:  crawlog sessions --job shop\n\n"
    "           crawlog sessions --job shop --clear https://shop.example.com --yes",
)
@job_option
@data_dir_option
@click.option(
    "--clear",
    "clear",
    metavar="ORIGIN",
    default=None,
    help="Drop this origin's login (its cookies, localStorage and sessionStorage) from every "
    "session: the next page of it logs in again. ORIGIN: scheme://host[:port] or HOST[:PORT].",
)
@click.option("--yes", is_flag=True, help="Clear without asking.")
@click.option(
    "--values", is_flag=True, help="Also print the cookies' and storages' values (secrets)."
)
@json_option
def sessions_command(
    job: str, data_dir: Path | None, clear: str | None, yes: bool, values: bool, as_json: bool
) -> None:
    """List the browser logins a `crawl --browser` job keeps (one session per identity:
    user agent and proxy), a line per origin with how many cookies, localStorage and
    sessionStorage entries it holds; or clear one origin's (--clear).

    Values are not printed unless --values is given. A clear is refused while workers of
    the job are alive (they would save their browser's login back).
    """

    async def run() -> tuple[list[SessionRow], str | None, int]:
        async with open_job(data_dir, job) as opened:
            rows = session_rows(
                await BrowserSessionStore(opened.client, opened.keys).kept(), values=values
            )
            if clear is None:
                return rows, None, 0
            origin = origin_in(clear, rows)
            if not yes:
                _confirm(job, origin)
            return rows, origin, len(await clear_session_origin(opened, origin))

    rows, origin, cleared = anyio.run(run)
    if as_json:
        echo_json(
            {
                "sessions": [{**msgspec.to_builtins(r), "saved_at": _when(r)} for r in rows],
                "cleared": None if origin is None else {"origin": origin, "sessions": cleared},
            }
        )
        return
    if not rows:
        click.echo(f"no browser sessions kept for job {job}")
    elif origin is None:
        click.echo("\n".join(_lines(rows, values)))
    if origin is not None:
        click.echo(f"cleared {origin} from {cleared} session(s): the next page of it logs in again")


def _lines(rows: list[SessionRow], values: bool) -> list[str]:
    table = [HEADER]
    for r in rows:
        identity = r.user_agent + (f" via {r.proxy}" if r.proxy else "")
        table.append(
            (
                r.origin,
                f"{r.identity} ({identity})",
                str(r.version),
                _when(r) or NEVER,
                str(r.cookies),
                str(r.local_storage),
                str(r.session_storage),
            )
        )
    lines = table_lines(table, right=(False, False, True, False, True, True, True), rule=True)
    if values:
        for r in rows:
            lines.append(f"{r.origin} ({r.identity}):")
            for part, kept in (r.values or {}).items():
                lines += [f"  {part} {name} = {value}" for name, value in sorted(kept.items())]
    return lines


def _when(row: SessionRow) -> str | None:
    if row.saved_at_ms is None:
        return None
    stamp = dt.datetime.fromtimestamp(row.saved_at_ms / 1000, tz=dt.UTC)
    return stamp.strftime("%Y-%m-%d %H:%M:%S")


def _confirm(job: str, origin: str) -> None:
    try:
        sure = click.confirm(
            f"drop the browser login of {origin} kept for job {job}?", err=True, default=False
        )
    except click.Abort:
        sure = False
    if not sure:
        raise OperatorRefused(f"not confirmed; {origin} not cleared: pass --yes to skip asking")
