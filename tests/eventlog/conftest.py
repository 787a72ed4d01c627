"""The queue tests run twice: on a plain queue, and on one with an observer attached."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import redis.asyncio as aioredis

from eventlog import TaskQueue
from tests.eventlog.helpers import RecordingObserver


@pytest.fixture(params=["plain", "observed"])
def make_queue(
    request: pytest.FixtureRequest, redis_client: aioredis.Redis, job: str
) -> Callable[..., TaskQueue]:
    """Factory: ``make_queue("w1", lease_ms=...)`` is worker w1's view of the job's queue;
    in the ``observed`` run each queue has a `RecordingObserver`, which must change
    nothing the queue does."""

    def make(consumer: str, **options: Any) -> TaskQueue:
        observer = RecordingObserver() if request.param == "observed" else None
        return TaskQueue(redis_client, job, consumer, observer=observer, **options)

    return make
