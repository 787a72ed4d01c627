"""``crawlog export --to postgresql://... --table T --follow`` beside a real crawl, SIGKILLed
several times at random points while it feeds, then run again with ``--until-done``: the
table holds every item of the finished job once, each from its first event (as
``crawlog export --what items`` writes them), and no row was ever written twice."""

from __future__ import annotations

import json
import os
import random
import signal
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import psycopg
import pytest
from anyio.abc import Process

from crawler._politeness import Politeness
from crawler.cli._argv import crawlog_command
from crawler.testsite import Faults, serve_testsite
from tests.crawler.conftest import ROOT
from tests.postgres_process import write_counts

pytestmark = pytest.mark.anyio
SLOW = Faults(slow_rate=0.5, slow_s=0.3)
"""Pages slow enough that the crawl still runs while the feed is killed."""
KILLS = 3
TABLE = "crawled"


@pytest.fixture
async def spawn(valkey_url: str) -> AsyncIterator[Callable[..., Any]]:
    """``await spawn(*crawlog_args)``: a crawlog process; any left running is killed."""
    started: list[Process] = []

    async def start(*args: str) -> Process:
        env = {**os.environ, "REDIS_URL": valkey_url}
        process = await anyio.open_process(crawlog_command(*args), env=env, cwd=ROOT)
        started.append(process)
        return process

    yield start
    for process in started:
        if process.returncode is None:
            process.kill()
        await process.aclose()


def fed(url: str) -> int:
    """The rows the feed has committed so far (0 before it made its table)."""
    with psycopg.connect(url) as con:
        try:
            row = con.execute(f"SELECT count(*) FROM {TABLE}").fetchone()
        except psycopg.errors.UndefinedTable:
            return 0
    return int(row[0]) if row else 0


@pytest.mark.timeout(180)
async def test_a_feed_killed_at_random_points_holds_every_item_once(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    spawn: Callable[..., Any],
    job: str,
    data_dir: Path,
    tmp_path: Path,
    postgres_url: str,
) -> None:
    seed = random.randrange(2**32)
    chance = random.Random(seed)
    base = ("export", "--job", job, "--data-dir", str(data_dir), "--what", "items")
    feed = (*base, "--to", postgres_url, "--table", TABLE, "--follow", "--interval", "0.05")
    async with serve_testsite(pages=120, seed=5, faults=SLOW) as site:
        await start_job([site.url + "/"], politeness=Politeness(per_host=4))
        with anyio.fail_after(150):
            worker = await worker_process("w1", "--exit-when-done")
            projector = await spawn(
                "project", "--job", job, "--data-dir", str(data_dir), "--commit-interval", "0.2"
            )
            while not (data_dir / "jobs" / job).is_dir():
                await anyio.sleep(0.05)
            for kill in range(KILLS):
                before = fed(postgres_url)
                process = await spawn(*feed)
                # Killed once it is feeding (it wrote rows since it started), a random
                # moment later: between batches, or inside one.
                while fed(postgres_url) == before and worker.returncode is None:
                    await anyio.sleep(0.02)
                await anyio.sleep(chance.uniform(0, 0.4))
                if kill == 0:
                    assert worker.returncode is None, "the crawl ended before the first kill"
                process.send_signal(signal.SIGKILL)
                assert await process.wait() == -signal.SIGKILL
            last = await spawn(*feed, "--until-done")
            assert await worker.wait() == 0
            assert await last.wait() == 0
            projector.send_signal(signal.SIGTERM)
            assert await projector.wait() == 0
            export = tmp_path / "items.jsonl"
            done = await anyio.run_process(
                crawlog_command(*base, "--format", "jsonl", "--with-meta", str(export)),
                env={**os.environ}, cwd=ROOT,
            )  # fmt: skip
            assert done.returncode == 0

    expected = [json.loads(line) for line in export.read_text().splitlines()]
    assert len(expected) == len(site.reachable), f"seed {seed}"
    with psycopg.connect(postgres_url) as con:
        table = con.execute(f"SELECT key, stream_id, data FROM {TABLE}").fetchall()
        [(rows,)] = con.execute("SELECT rows FROM crawlog_feed_positions").fetchall()
    assert sorted(table) == sorted((e["key"], e["stream_id"], e["data"]) for e in expected), seed
    assert rows == len(expected), f"seed {seed}: the position counts an item twice"
    inserted, updated = write_counts(postgres_url, TABLE, inserted=len(expected))
    assert inserted >= len(expected) and updated == 0, f"seed {seed}: a row written twice"
