"""The queue tests run twice: on a plain queue, and on one with an observer attached."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import redis.asyncio as aioredis

from eventlog import TaskQueue
from tests.eventlog.helpers import RecordingObserver
from tests.valkey_process import ValkeyProcess, running_valkey


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


REPLICA_SYNC_TIMEOUT_S = 10.0
PAIR_PASSWORD = "pair-password"


@pytest.fixture
def primary_and_replica(tmp_path: Path) -> Iterator[tuple[ValkeyProcess, ValkeyProcess]]:
    """Two real servers: a primary and its replica, in sync (no Sentinels: a test promotes
    the replica itself with ``REPLICAOF NO ONE``, as a Sentinel does)."""
    auth = ("--masterauth", PAIR_PASSWORD, "--repl-diskless-sync-delay", "0")
    with running_valkey(tmp_path / "a", *auth, password=PAIR_PASSWORD) as primary:
        replica_of = ("--replicaof", "127.0.0.1", str(primary.port))
        with running_valkey(tmp_path / "b", *auth, *replica_of, password=PAIR_PASSWORD) as replica:
            deadline = time.monotonic() + REPLICA_SYNC_TIMEOUT_S
            with redis.Redis.from_url(replica.url) as probe:
                while probe.info("replication").get("master_link_status") != "up":
                    assert time.monotonic() < deadline, "the replica did not sync"
                    time.sleep(0.02)
            yield primary, replica
