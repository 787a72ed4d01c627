"""A PostgreSQL feed SIGKILLed inside a batch's transaction — its rows inserted, its
position being moved (a trigger on the positions table holds it there) — leaves nothing of
that batch: the same command run again writes
every item once, none of them over a row already there."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import psycopg
import pytest

from crawler.cli._argv import crawlog_command
from tests.crawler.conftest import ROOT
from tests.postgres_process import killed_at_its_position, write_counts

pytestmark = pytest.mark.anyio


@pytest.mark.timeout(120)
async def test_a_feed_killed_between_its_rows_and_its_position_writes_each_item_once(
    projected_items: Path, job: str, postgres_url: str
) -> None:
    def feed(table: str) -> list[str]:
        return crawlog_command(
            "export", "--job", job, "--data-dir", str(projected_items), "--what", "items",
            "--to", postgres_url, "--table", table,
        )  # fmt: skip

    # A first feed (into another table) makes the positions table the gate goes on.
    first = await anyio.run_process(feed("first"), env={**os.environ}, cwd=ROOT, check=False)
    assert first.returncode == 0, first.stderr
    command = feed("held")
    await killed_at_its_position(postgres_url, command, env={**os.environ}, cwd=ROOT)
    with psycopg.connect(postgres_url, autocommit=True) as gate:
        [(inserted, position)] = gate.execute(
            "SELECT (SELECT count(*) FROM held), rows FROM crawlog_feed_positions "
            "WHERE table_name = 'held'"
        ).fetchall()
        assert (inserted, position) == (0, 0)

    again = await anyio.run_process(command, env={**os.environ}, cwd=ROOT, check=False)
    assert again.returncode == 0, again.stderr
    assert again.stdout.decode().startswith("exported 4 items")
    with psycopg.connect(postgres_url) as con:
        keys = con.execute("SELECT key FROM held ORDER BY key").fetchall()
        [(rows,)] = con.execute(
            "SELECT rows FROM crawlog_feed_positions WHERE table_name = 'held'"
        ).fetchall()
    assert [key for (key,) in keys] == ["a", "b", "c", "d"] and rows == 4
    # The killed batch's insertions were undone with it: the second run inserted every row
    # again, none over a row already there.
    inserted, updated = write_counts(postgres_url, "held", inserted=4)
    assert inserted >= 4 and updated == 0
