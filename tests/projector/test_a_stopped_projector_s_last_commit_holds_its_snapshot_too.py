"""A stopped projector's catch-up commits the log to its end and the state's snapshot in
one commit: its exit has nothing left to commit (before, a second commit wrote the
snapshot alone, and the crawl waited for both before its summary)."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis.asyncio as aioredis

from eventlog import EventLog, TaskEnqueued
from projector import Projector
from projector._store import Store

pytestmark = pytest.mark.anyio
NEVER_S = 3600.0
"""Commit and snapshot intervals no test reaches: only the catch-up commits."""


def enqueued(n: int) -> TaskEnqueued:
    return TaskEnqueued(actor="seed", task_id=f"t{n}", url=f"http://site.test/{n}", site="x")


async def test_a_catch_up_with_its_snapshot_is_the_stop_s_only_commit(
    redis_client: aioredis.Redis, log: EventLog, job: str, tmp_path: Path
) -> None:
    await log.append_many([enqueued(n) for n in range(20)])
    store = Store(tmp_path, job)
    async with Projector(
        redis_client, job, tmp_path, commit_interval_s=NEVER_S, snapshot_interval_s=NEVER_S
    ) as projector:
        await projector.catch_up(snapshot=True)
        caught_up = store.read_manifest()
        assert caught_up.position == await log.last_id()
        assert caught_up.snapshot_position == caught_up.position
        assert caught_up.snapshot is not None
    assert store.read_manifest() == caught_up  # the exit committed nothing more
