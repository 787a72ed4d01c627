"""A --job that names no job, one letter off a real one: every command that takes --job says
there is no such job, suggests the nearest names (``did you mean 'books'?``) and points at
``crawlog jobs`` — not "is the projector running?" — in one line, exit status 2."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis.asyncio as aioredis

from crawler._job import JobConfig, save_config
from eventlog import EventLog, JobKeys, TaskEnqueued
from projector._projector import Projector
from tests.crawler.cli.test_errors_are_one_line_and_exit_2 import one_line_error
from tests.crawler.cli_run import clean_env, crawlog

pytestmark = pytest.mark.anyio
SITE = "http://site.test"
COMMANDS = [
    ["report"],
    ["sql", "SELECT 1"],
    ["export", "--what", "pages", "--format", "csv", "-"],
    ["status"],
    ["workers"],
    ["history", "t1"],
    ["pause", "--reason", "typo"],
    ["enqueue", f"{SITE}/2"],
    ["project", "--once"],
    ["replay"],
    ["repair"],
]


@pytest.fixture
async def data_dir(redis_client: aioredis.Redis, job: str, tmp_path: Path) -> Path:
    """A job with settings on the server and projected data in the data directory."""
    directory = tmp_path / "data"
    await save_config(redis_client, JobKeys(job), JobConfig(seeds=(f"{SITE}/",)))
    await EventLog(redis_client, job).append(
        TaskEnqueued(actor="seed", task_id="t1", url=f"{SITE}/1", site=SITE)
    )
    async with Projector(redis_client, job, directory) as projector:
        await projector.catch_up()
    return directory


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
async def test_a_mistyped_job_gets_the_nearest_names(
    data_dir: Path, valkey_url: str, job: str, tmp_path: Path, command: list[str]
) -> None:
    typo = job[:-1] + ("x" if job[-1] != "x" else "y")  # one letter off
    result = crawlog(
        command[0],
        "--job",
        typo,
        "--data-dir",
        str(data_dir),
        *command[1:],
        cwd=tmp_path,
        env=clean_env(REDIS_URL=valkey_url),
    )
    line = one_line_error(result, repr(typo), f"did you mean {job!r}", "`crawlog jobs`")
    assert "projector running" not in line
