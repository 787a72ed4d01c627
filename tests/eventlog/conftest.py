"""The queue tests run twice: on a plain queue, and on one with an observer attached."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
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


@pytest.fixture
def stalled_url() -> Iterator[str]:
    """A Redis URL whose server takes connections and never answers (a stalled store): a
    listening socket nobody accepts from, so the kernel completes the handshake alone."""
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen(16)
        yield f"redis://127.0.0.1:{listening.getsockname()[1]}/0"
