"""``crawlog jobs`` lists every job on the server and in the data directory, each once, with
its status (running, done, unfinished), its task counts and its last activity; where no
server runs it lists the data directory's jobs and starts none."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from crawler._job import JobConfig, save_config
from crawler._worker import enqueue_seeds
from eventlog import (
    RUNNING,
    EventLog,
    JobKeys,
    RunRecord,
    TaskClaimed,
    TaskDone,
    TaskEnqueued,
    TaskQueue,
    write_run,
)
from eventlog._server import PID_FILE
from projector._projector import Projector
from tests.crawler.cli_run import clean_env, crawlog

pytestmark = pytest.mark.anyio
SITE = "http://site.test"


async def projected_done_job(redis: aioredis.Redis, job: str, data_dir: Path) -> None:
    """A job of one task, ended done, with its log projected into ``data_dir``."""
    await EventLog(redis, job).append_many(
        [
            TaskEnqueued(actor="seed", task_id="t1", url=f"{SITE}/1", site=SITE),
            TaskClaimed(actor="w1", task_id="t1", attempt=1),
            TaskDone(actor="w1", task_id="t1", attempt=1),
        ]
    )
    async with Projector(redis, job, data_dir) as projector:
        await projector.catch_up()


def listed(result: Any) -> dict[str, dict[str, Any]]:
    assert result.returncode == 0, result.stderr
    return {row["job"]: row for row in json.loads(result.stdout)["jobs"]}


async def test_jobs_on_the_server_and_in_the_data_dir_with_their_status(
    redis_client: aioredis.Redis, valkey_url: str, job: str, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    done, left, busy = f"{job}-done", f"{job}-left", f"{job}-busy"
    await projected_done_job(redis_client, done, data_dir)
    for name in (left, busy):  # settings and a seed, through the API, as `crawl` does
        await save_config(redis_client, JobKeys(name), JobConfig(seeds=(f"{SITE}/{name}",)))
        await enqueue_seeds(TaskQueue(redis_client, name, "t"), [f"{SITE}/{name}"], actor="t")
    assert await TaskQueue(redis_client, busy, "w9").claim(1)  # a lease held: running
    # A job run again (`crawlog recrawl` records its run so, and a restore from its log).
    await write_run(redis_client, JobKeys(left), RunRecord(run=2, state=RUNNING))
    before = time.time()

    env = clean_env(REDIS_URL=valkey_url)
    rows = listed(crawlog("jobs", "--json", "--data-dir", str(data_dir), env=env))

    assert rows[done]["status"] == "done"
    assert rows[done]["done"] == 1 and rows[done]["remaining"] == 0
    assert rows[done]["on_server"] and rows[done]["in_data_dir"]
    assert before - 60 < rows[done]["last_activity"] <= time.time()
    assert rows[left]["status"] == "unfinished" and rows[left]["remaining"] == 1
    assert rows[left]["on_server"] and not rows[left]["in_data_dir"]
    assert rows[busy]["status"] == "running"
    assert (rows[done]["run"], rows[left]["run"]) == (1, 2)

    text = crawlog("jobs", "--data-dir", str(data_dir), env=env)
    assert text.returncode == 0, text.stderr
    line = next(x for x in text.stdout.splitlines() if x.startswith(done + " "))
    assert line.split()[:6] == [done, "done", "1", "1", "0", "0"], line  # run 1, 1 ended
    assert "ago)" in line and "server+data dir" in line


async def test_without_a_server_the_data_dir_is_listed_and_no_server_started(
    redis_client: aioredis.Redis, job: str, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    await projected_done_job(redis_client, job, data_dir)

    result = crawlog("jobs", "--data-dir", str(data_dir), env=clean_env())

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[2].split()[:2] == [job, "done"]
    assert "no server running for it" in result.stdout
    assert not (data_dir / PID_FILE).exists()


def test_no_job_anywhere_says_where_it_looked(tmp_path: Path) -> None:
    result = crawlog("jobs", "--data-dir", str(tmp_path / "none"), env=clean_env())
    assert result.returncode == 1
    assert f"no job in {tmp_path / 'none'}" in result.stdout
    assert "--data-dir" in result.stdout and "REDIS_URL" in result.stdout
    assert not (tmp_path / "none").exists()
