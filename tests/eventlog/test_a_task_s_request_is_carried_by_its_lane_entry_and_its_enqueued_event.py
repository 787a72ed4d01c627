"""A task may carry its whole request (the Scrapy plug-in's): the lane entry a worker
claims and the ``TaskEnqueued`` event both hold it byte for byte, so the log alone can
rebuild the task; a task without one carries nothing extra."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from eventlog import EventLog, Task, TaskEnqueued, TaskQueue

pytestmark = pytest.mark.anyio
REQUEST = b"\x82\xa3url\xb0http://x.test/a\xa6method\xa4POST"


async def test_the_request_a_task_carries_comes_back_with_its_lease_and_in_the_log(
    log: EventLog, make_queue: Callable[..., TaskQueue]
) -> None:
    queue = make_queue("w1")
    carried = Task(task_id="a", url="http://x.test/a", site="http://x.test", request=REQUEST)
    bare = Task(task_id="b", url="http://x.test/b", site="http://x.test")
    assert await queue.enqueue([carried, bare], actor="test") == [True, True]

    leases = {lease.task.task_id: lease.task for lease in await queue.claim(10)}
    assert leases["a"].request == REQUEST
    assert leases["b"].request is None
    enqueued = {
        e.event.task_id: e.event
        for e in await log.read_range()
        if isinstance(e.event, TaskEnqueued)
    }
    assert enqueued["a"].request == REQUEST
    assert enqueued["b"].request is None
