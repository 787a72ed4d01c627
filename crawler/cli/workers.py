"""``crawlog workers``: the workers alive and the leases they hold, with their ages."""

from __future__ import annotations

from pathlib import Path

import anyio
import click
import msgspec

from crawler.cli._operator import SHOWN, echo_json
from crawler.cli._options import data_dir_option, job_option, json_option
from crawler.ops import format_duration, open_job, table_lines
from eventlog import LeaseInfo, TaskQueue, read_leases, read_workers


@click.command("workers", epilog="Example:  crawlog workers --job shop --all")
@job_option
@data_dir_option
@click.option("--all", "show_all", is_flag=True, help="List every lease, not the oldest 20.")
@json_option
def workers_command(job: str, data_dir: Path | None, show_all: bool, as_json: bool) -> None:
    """Workers alive and the leases they hold, with their ages (the server's clock).

    Alive: the process holds its name's lock (renewed every few seconds). A lease older
    than the job's lease time is expired: the next recovery pass of any worker moves its task
    to the recovery lane.
    """

    async def run() -> tuple[list[LeaseInfo], int, set[str], int]:
        async with open_job(data_dir, job) as opened:
            await TaskQueue(opened.client, opened.keys, "operator").ensure_groups()
            leases, total = await read_leases(opened.client, opened.keys)
            workers = await read_workers(opened.client, opened.keys)
            alive = {w.name for w in workers if w.alive}
            return leases, total, alive, opened.config.lease_ms

    leases, total, alive, lease_ms = anyio.run(run)
    held: dict[str, list[LeaseInfo]] = {}
    for lease in leases:
        held.setdefault(lease.worker, []).append(lease)
    names = sorted(set(alive) | set(held))
    if as_json:
        echo_json(
            {
                "lease_ms": lease_ms,
                "leases": total,
                "workers": [
                    {
                        "name": n,
                        "alive": n in alive,
                        "leases": [msgspec.to_builtins(x) for x in held.get(n, [])],
                    }
                    for n in names
                ],
            }
        )
        return
    if not names:
        click.echo(f"no worker is alive or holds a lease in job {job}")
        return
    rows = _worker_rows(names, alive, held, lease_ms)
    for line in table_lines([["worker", "state", "leases", "oldest", "expired"], *rows]):
        click.echo(line)
    click.echo(f"{len(alive)} alive, {total} lease(s); lease time {_age(lease_ms)}")
    if leases:
        click.echo("")
        for line in _lease_lines(leases, show_all):
            click.echo(line)


def _worker_rows(
    names: list[str], alive: set[str], held: dict[str, list[LeaseInfo]], lease_ms: int
) -> list[list[str]]:
    """Per worker: its name, alive or gone, its leases, the oldest's age, how many expired."""
    rows = []
    for name in names:
        mine = held.get(name, [])
        oldest = max((x.age_ms for x in mine), default=None)
        expired = sum(x.age_ms > lease_ms for x in mine)
        rows.append(
            [
                name,
                "alive" if name in alive else "gone",
                str(len(mine)),
                _age(oldest) if oldest is not None else "-",
                str(expired),
            ]
        )
    return rows


def _lease_lines(leases: list[LeaseInfo], show_all: bool) -> list[str]:
    """The leases as a table, oldest first (the first ``SHOWN`` unless ``show_all``)."""
    ordered = sorted(leases, key=lambda x: -x.age_ms)
    shown = ordered if show_all else ordered[:SHOWN]
    table = [
        [
            x.worker,
            x.task_id or "?",
            str(x.lane),
            _age(x.age_ms),
            str(x.deliveries),
            x.url or "(entry deleted)",
        ]
        for x in shown
    ]
    lines = table_lines([["worker", "task", "lane", "age", "deliveries", "url"], *table])
    if len(leases) > len(shown):
        lines.append(f"... and {len(leases) - len(shown)} more (--all lists them)")
    return lines


def _age(ms: int) -> str:
    return format_duration(ms / 1000, tenths=True)
