"""`crawlog dead list|replay`: entries moved aside are shown, and put back once if readable."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio
import msgspec
import pytest
import redis.asyncio as aioredis

from eventlog import LANE_NORMAL, EventLog, JobKeys, PoisonEntry, Task, TaskQueue
from tests.crawler.operator_cli import crawlog

pytestmark = pytest.mark.anyio


async def test_a_dead_task_that_decodes_is_replayed_once_and_one_that_does_not_is_refused(
    start_job: Callable[..., object],
    redis_client: aioredis.Redis,
    make_queue: Callable[..., TaskQueue],
    log: EventLog,
    job: str,
    valkey_url: str,
    data_dir: Path,
) -> None:
    await start_job(["http://127.0.0.1:8765/"])
    keys = JobKeys(job)
    queue = make_queue("w1")
    assert len(await queue.claim(10)) == 1  # the seed, out of the way
    # A task entry nobody can read: the worker that claims it moves it aside.
    await redis_client.xadd(keys.tasks(LANE_NORMAL), {"t": b"\xc1 not msgpack"})
    assert await queue.claim(10) == [] and queue.poisoned == 1
    # And one an older version could not read but this one can (what replay is for).
    task = Task(task_id="t-later", url="http://127.0.0.1:8765/later", site="http://127.0.0.1:8765")
    readable = PoisonEntry(
        keys.tasks(LANE_NORMAL),
        "1-1",
        "unknown field (old worker)",
        {b"t": msgspec.msgpack.encode(task)},
    )
    await log.dead_letter(readable)
    with anyio.fail_after(60):
        listed = await crawlog(valkey_url, data_dir, "dead", "list", "--job", job, "--json")
        assert listed.returncode == 0, listed.stderr
        letters = listed.json()
        assert [d["reason"].split(":")[0] for d in letters] == [
            "task does not decode",
            "unknown field (old worker)",
        ]
        bad, good = (d["dead_id"] for d in letters)
        text = await crawlog(valkey_url, data_dir, "dead", "list", "--job", job)
        assert "tasks:1" in text.stdout and "(2 dead letters;" in text.stdout
        refused = await crawlog(valkey_url, data_dir, "dead", "replay", "--job", job, bad)
        assert refused.returncode == 2 and "still does not decode" in refused.stderr
        replayed = await crawlog(valkey_url, data_dir, "dead", "replay", "--job", job, good)
        assert replayed.returncode == 0, replayed.stderr
        twice = await crawlog(valkey_url, data_dir, "dead", "replay", "--job", job, good)
        assert twice.returncode == 2 and "already replayed?" in twice.stderr
        left = await crawlog(valkey_url, data_dir, "dead", "list", "--job", job, "--json")
    assert [d["dead_id"] for d in left.json()] == [bad]
    claimed = await make_queue("w2").claim(10)
    assert [lease.task for lease in claimed] == [task]
