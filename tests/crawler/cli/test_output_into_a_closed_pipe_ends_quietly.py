"""``crawlog export ... - | head``: when the reader of stdout goes away, crawlog stops
writing and exits as a Unix tool does (status 141, 128 + SIGPIPE), with nothing on stderr."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from crawler.cli._argv import crawlog_command
from eventlog import AnyEvent, EventLog, PageFetched, TaskClaimed, TaskDone, TaskEnqueued
from projector._projector import Projector
from tests.crawler.cli_run import CLI_TIMEOUT_S, clean_env

pytestmark = pytest.mark.anyio
SITE = "http://site.test"
# Far more than a pipe holds (64 KiB on Linux): the writer must block and then meet the close.
PAGES = 3000
EXIT_BROKEN_PIPE = 141


def crawl() -> list[AnyEvent]:
    events: list[AnyEvent] = []
    for n in range(PAGES):
        task, url = f"t{n}", f"{SITE}/a/rather/long/path/so/that/rows/fill/the/pipe/{n}"
        events += [
            TaskEnqueued(actor="seed", task_id=task, url=url, site=SITE),
            TaskClaimed(actor="w1", task_id=task, attempt=1),
            PageFetched(
                actor="w1",
                task_id=task,
                attempt=1,
                url=url,
                status=200,
                bytes=10,
                elapsed_ms=1.0,
                page=1,
            ),
            TaskDone(actor="w1", task_id=task, attempt=1),
        ]
    return events


@pytest.fixture
async def data_dir(tmp_path: Path, redis_client: aioredis.Redis, job: str) -> Path:
    directory = tmp_path / "data"
    await EventLog(redis_client, job).append_many(crawl())
    async with Projector(redis_client, job, directory) as projector:
        await projector.catch_up()
    return directory


@pytest.mark.parametrize(
    "command",
    [
        ["export", "--what", "pages", "--format", "csv", "-"],
        ["export", "--what", "pages", "--format", "jsonl", "-"],
        ["sql", "--format", "csv", "SELECT * FROM pages"],
    ],
    ids=" ".join,
)
async def test_a_reader_that_stops_reading_ends_crawlog_quietly(
    data_dir: Path, job: str, tmp_path: Path, command: list[str]
) -> None:
    process = subprocess.Popen(
        crawlog_command(command[0], "--job", job, "--data-dir",
         str(data_dir), *command[1:]),
        cwd=tmp_path, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    with process:
        assert process.stdout is not None and process.stderr is not None
        first = process.stdout.readline()  # what `head -1` does, then it exits
        process.stdout.close()
        stderr = process.stderr.read().decode()
        returncode = process.wait(timeout=CLI_TIMEOUT_S)

    assert first, stderr
    assert stderr == ""
    assert returncode == EXIT_BROKEN_PIPE
