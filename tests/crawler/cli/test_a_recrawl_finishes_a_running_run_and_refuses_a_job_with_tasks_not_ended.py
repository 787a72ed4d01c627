"""Which run ``crawlog recrawl`` works on (`start_run`): a run recorded ``running`` (its
recrawl was killed) is finished, never followed by a new one; a finished run is followed by
the next, recorded ``running`` before anything of it is enqueued; a job whose tasks have
not all ended is refused, saying how to finish it; a later run in the log than on record
(the record lost with a store) is the one finished."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis

from crawler.cli.recrawl import start_run
from eventlog import FINISHED, RUNNING, ConfigError, RunRecord, Task, TaskQueue, read_run, write_run

pytestmark = pytest.mark.anyio


async def test_a_running_run_is_finished_and_a_finished_one_followed(
    redis_client: aioredis.Redis, job: str
) -> None:
    queue = TaskQueue(redis_client, job, "recrawl")
    assert await read_run(redis_client, queue.keys) == RunRecord(run=1, state=FINISHED)
    assert await start_run(queue) == 2
    assert await read_run(redis_client, queue.keys) == RunRecord(run=2, state=RUNNING)
    assert await start_run(queue) == 2  # killed, run again: the same run
    await write_run(redis_client, queue.keys, RunRecord(run=2, state=FINISHED))
    assert await start_run(queue) == 3


async def test_a_job_with_tasks_not_ended_is_refused(
    redis_client: aioredis.Redis, job: str
) -> None:
    queue = TaskQueue(redis_client, job, "crawl")
    await queue.enqueue([Task(task_id="t1", url="http://a.test/", site="http://a.test")], actor="t")
    with pytest.raises(ConfigError, match="1 task\\(s\\) not ended: finish its run first"):
        await start_run(queue)
    assert await read_run(redis_client, queue.keys) == RunRecord(run=1, state=FINISHED)


async def test_a_run_the_log_has_but_the_record_lost_is_finished(
    redis_client: aioredis.Redis, job: str
) -> None:
    queue = TaskQueue(redis_client, job, "recrawl")
    assert await start_run(queue, logged=3) == 3
    assert await read_run(redis_client, queue.keys) == RunRecord(run=3, state=RUNNING)
    await write_run(redis_client, queue.keys, RunRecord(run=3, state=FINISHED))
    assert await start_run(queue, logged=3) == 4


async def test_a_run_the_log_shows_over_but_the_record_lost_is_followed(
    redis_client: aioredis.Redis, job: str
) -> None:
    queue = TaskQueue(redis_client, job, "recrawl")
    assert await start_run(queue, logged=3, logged_ended=lambda: True) == 4
    assert await read_run(redis_client, queue.keys) == RunRecord(run=4, state=RUNNING)
