"""``crawlog export --to postgresql://... --table T --follow`` writes the items the projector
commits while it runs, each key once (a key logged again keeps its first item), and with
``--until-done`` stops by itself once the job has ended."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import anyio
import psycopg
import pytest
import redis.asyncio as aioredis
from anyio.abc import Process

from crawler.cli._argv import crawlog_command
from eventlog import EventLog, ItemScraped, TaskClaimed, TaskDone, TaskEnqueued
from projector import Projector
from tests.crawler.conftest import ROOT
from tests.postgres_process import write_counts
from tests.server_helpers import clean_env

pytestmark = pytest.mark.anyio
SITE = "http://site.test"


def count(url: str) -> int:
    """The rows of the table ``live`` (0 before the feed made it)."""
    with psycopg.connect(url) as con:
        try:
            row = con.execute("SELECT count(*) FROM live").fetchone()
        except psycopg.errors.UndefinedTable:
            return 0
    return int(row[0]) if row else 0


async def project(redis_client: aioredis.Redis, job: str, data_dir: Path, events: Any) -> None:
    """``events`` appended to the job's log, and committed by its projector."""
    await EventLog(redis_client, job).append_many(events)
    async with Projector(redis_client, job, data_dir) as projector:
        await projector.catch_up()


async def said_by(process: Process) -> str:
    """All a process writes to stderr, until it closes it."""
    assert process.stderr is not None
    chunks = []
    with contextlib.suppress(anyio.EndOfStream):
        while True:
            chunks.append(await process.stderr.receive())
    return b"".join(chunks).decode()


def items(*numbers: int) -> list[ItemScraped]:
    return [ItemScraped(actor="w1", task_id="t1", key=f"k{n}", data={"n": n}) for n in numbers]


@pytest.mark.timeout(120)
async def test_a_following_feed_writes_what_is_committed_while_it_runs(
    redis_client: aioredis.Redis,
    job: str,
    tmp_path: Path,
    postgres_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clean_env(monkeypatch)
    data_dir = tmp_path / "data"
    started = [
        TaskEnqueued(actor="seed", task_id="t1", url=f"{SITE}/", site=SITE),
        TaskClaimed(actor="w1", task_id="t1", attempt=1),
    ]
    await project(redis_client, job, data_dir, [*started, *items(0, 1, 2)])
    command = crawlog_command(
        "export", "--job", job, "--data-dir", str(data_dir), "--what", "items",
        "--to", postgres_url, "--table", "live", "--follow", "--until-done", "--interval", "0.1",
    )  # fmt: skip
    feed = await anyio.open_process(command, env={**os.environ}, cwd=ROOT, stderr=-1)
    try:
        with anyio.fail_after(60):
            while count(postgres_url) < 3:
                await anyio.sleep(0.05)
            assert feed.returncode is None, "the feed stopped before the job ended"
            again = ItemScraped(actor="w1", task_id="t1", key="k0", data={"n": "again"})
            done = TaskDone(actor="w1", task_id="t1", attempt=1)
            await project(redis_client, job, data_dir, [*items(3, 4), again, *items(5), done])
            said = await said_by(feed)
            assert await feed.wait() == 0, said
    finally:
        if feed.returncode is None:
            feed.kill()
        await feed.aclose()
    assert "the job ended; 6 items written" in said, said
    with psycopg.connect(postgres_url) as con:
        rows = con.execute("SELECT key, n FROM live ORDER BY key").fetchall()
        [position] = con.execute("SELECT rows FROM crawlog_feed_positions").fetchall()
    assert rows == [(f"k{n}", n) for n in range(6)]
    assert position == (6,)
    assert write_counts(postgres_url, "live", inserted=6) == (6, 0)
