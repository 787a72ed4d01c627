"""Fixtures for projector tests: a data directory per test and a projector factory."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
import redis.asyncio as aioredis
from anyio.abc import Process

from crawler.cli._argv import crawlog_command
from eventlog import EventLog, TaskEnqueued
from projector._projector import Projector

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def make_projector(
    redis_client: aioredis.Redis, job: str, data_dir: Path
) -> Callable[..., Projector]:
    """``make_projector(commit_events=...)``: a projector of the test's job (not yet entered)."""

    def make(**options: float | int | None) -> Projector:
        return Projector(redis_client, job, data_dir, **options)  # type: ignore[arg-type]

    return make


@pytest.fixture
def seed_events(log: EventLog) -> Callable[[int, int], Awaitable[list[str]]]:
    """``await seed_events(first, n)``: append ``n`` enqueued tasks; their stream IDs."""

    async def seed(first: int, n: int) -> list[str]:
        events = [
            TaskEnqueued(
                actor="seed", task_id=f"t{i}", url=f"http://s.test/{i}", site="http://s.test"
            )
            for i in range(first, first + n)
        ]
        ids = await log.append_many(events)
        return [i for i in ids if i is not None]

    return seed


@pytest.fixture
def project_command(valkey_url: str, job: str) -> Callable[..., list[str]]:
    """``project_command(data_dir, *options)``: the ``crawlog project`` command line of the
    test's job, on the test's server (``project_env``)."""

    def command(data_dir: Path, *options: str) -> list[str]:
        return crawlog_command("project", "--job", job, "--data-dir", str(data_dir), *options)

    return command


@pytest.fixture
def project_env(valkey_url: str) -> dict[str, str]:
    """The environment of a ``crawlog project`` process on the test's server."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAWLOG_")}
    return {**env, "REDIS_URL": valkey_url, "PYTHONPATH": str(ROOT)}


@contextlib.asynccontextmanager
async def killed_at_exit(process: Process) -> AsyncIterator[Process]:
    """``process`` (as ``async with process``), SIGKILLed at exit if it still runs: a
    failed assertion must not leave the test waiting for it."""
    async with process:
        try:
            yield process
        finally:
            if process.returncode is None:
                process.kill()
