"""`TaskQueue.retry`: a failed task goes back to its lane at its last checkpoint, once."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from eventlog import (
    CheckpointSaved,
    Cursor,
    EventLog,
    Task,
    TaskFailed,
    TaskQueue,
    TaskRetried,
)
from eventlog._queue import Retry

pytestmark = pytest.mark.anyio
SITE = "http://site.test"


async def test_a_retry_restores_the_checkpoint_pointer_and_a_second_one_writes_nothing(
    make_queue: Callable[..., TaskQueue], log: EventLog
) -> None:
    w1 = make_queue("w1")
    task = Task(task_id="t1", url=f"{SITE}/list?page=1", site=SITE)
    await w1.enqueue([task], actor="seed")
    (lease,) = await w1.claim(1)
    saved = CheckpointSaved(actor="w1", task_id="t1", attempt=1, cursor=Cursor(page=2))
    checkpoint_id = await w1.checkpoint(lease, saved)
    assert checkpoint_id is not None
    await w1.finish(lease, TaskFailed(actor="w1", task_id="t1", attempt=1, reason="HTTP 500"))
    assert await w1.last_checkpoints(["t1"]) == {}  # the finish dropped the pointer

    def retry(reason: str) -> Retry:
        again = Task(task_id="t1", url=task.url, site=SITE, attempt=2)
        event = TaskRetried(actor="alice", task_id="t1", reason=reason)
        return Retry(task=again, event=event, ended_attempt=1, resume_after=checkpoint_id)

    operator = make_queue("alice")
    assert await operator.retry([retry("proxy fixed")]) == [True]
    assert await operator.retry([retry("proxy fixed, again")]) == [False]
    (found_id, found) = (await w1.last_checkpoints(["t1"]))["t1"]
    assert found_id == checkpoint_id and found == saved
    (again,) = await make_queue("w2").claim(10)
    assert again.task.attempt == 2 and await make_queue("w3").claim(10) == []
    retries = [e.event for e in await log.read_range() if isinstance(e.event, TaskRetried)]
    assert [(e.actor, e.reason) for e in retries] == [("alice", "proxy fixed")]
