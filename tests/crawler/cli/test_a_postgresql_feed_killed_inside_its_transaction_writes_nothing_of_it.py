"""A PostgreSQL feed SIGKILLed inside a batch's transaction — its rows inserted, its
position being moved (a trigger on the positions table holds it there) — leaves nothing of
that batch: the same command run again writes
every item once, none of them over a row already there."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import anyio
import psycopg
import pytest

from crawler.cli._argv import crawlog_command
from tests.crawler.conftest import ROOT
from tests.postgres_process import write_counts

pytestmark = pytest.mark.anyio
HOLD: int = 4040
"""The advisory lock the test holds and the positions table's trigger waits for."""
# The feed's rows are in, its position is being moved: the moment a feed that wrote its
# position in a transaction of its own would have the rows committed and not the position.
GATE = f"""
CREATE FUNCTION wait_for_the_test() RETURNS trigger LANGUAGE plpgsql AS
$$ BEGIN PERFORM pg_advisory_xact_lock_shared({HOLD}); RETURN NEW; END $$;
CREATE TRIGGER gate BEFORE UPDATE ON crawlog_feed_positions
FOR EACH ROW WHEN (NEW.table_name = 'held') EXECUTE FUNCTION wait_for_the_test();
"""


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
    with psycopg.connect(postgres_url, autocommit=True) as gate:
        gate.execute(GATE)
        gate.execute("SELECT pg_advisory_lock(%s)", (HOLD,))
        feed = await anyio.open_process(command, env={**os.environ}, cwd=ROOT)
        try:
            with anyio.fail_after(60):
                while not gate.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = "
                    "'crawlog export' AND wait_event = 'advisory'"
                ).fetchall()[0][0]:
                    await anyio.sleep(0.05)
            feed.send_signal(signal.SIGKILL)
            assert await feed.wait() == -signal.SIGKILL
        finally:
            if feed.returncode is None:
                feed.kill()
            await feed.aclose()
        gate.execute("SELECT pg_advisory_unlock(%s)", (HOLD,))
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
