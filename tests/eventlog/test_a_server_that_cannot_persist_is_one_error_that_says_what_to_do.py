"""A server that cannot persist refuses every write, and PING, with ``MISCONF``. At eventlog's
boundary that is :class:`ServerCannotPersist` (a ``CrawlogError``) in plain words with what to
do, never redis-py's raw ``ResponseError``; on the command line, one line and exit 2.

Made real without filling a disk: a server with RDB snapshots and
``stop-writes-on-bgsave-error``, whose snapshot directory is moved where no file can be
created (``/proc``), fails its BGSAVE and from then on refuses writes exactly as a full
disk makes it. (A full disk itself: tests/crawler/test_a_full_disk_is_said_once_...)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from eventlog import CrawlogError, EventLog, ServerCannotPersist, TaskEnqueued
from eventlog._connection import connect
from tests.crawler.cli_run import clean_env, crawlog
from tests.valkey_process import ValkeyProcess, running_valkey

pytestmark = pytest.mark.anyio
UNWRITABLE_DIR = "/proc"
BGSAVE_TIMEOUT_S = 10.0


@pytest.fixture
def refusing_server(tmp_path: Path) -> Iterator[ValkeyProcess]:
    """A real valkey-server that refuses writes (MISCONF) until the test ends."""
    options = (
        "--save",
        "3600 1",
        "--stop-writes-on-bgsave-error",
        "yes",
        "--enable-protected-configs",
        "yes",
    )
    directory = tmp_path / "valkey"
    with running_valkey(directory, *options) as server, redis.Redis.from_url(server.url) as admin:
        admin.config_set("dir", UNWRITABLE_DIR)
        admin.bgsave()
        deadline = time.monotonic() + BGSAVE_TIMEOUT_S
        while admin.info("persistence")["rdb_last_bgsave_status"] != "err":
            if time.monotonic() > deadline:
                pytest.skip(f"BGSAVE into {UNWRITABLE_DIR} did not fail on this machine")
            time.sleep(0.02)
        yield server
        # Its shutdown save must succeed, or it refuses SIGTERM until killed.
        admin.config_set("dir", str(directory))


async def test_a_refused_append_is_server_cannot_persist(refusing_server: ValkeyProcess) -> None:
    client = redis.asyncio.Redis.from_url(refusing_server.url)
    try:
        event = TaskEnqueued(actor="t", task_id="t1", url="http://a.test/", site="http://a.test")
        with pytest.raises(ServerCannotPersist) as raised:
            await EventLog(client, "j").append(event)
    finally:
        await client.aclose()
    error = raised.value
    assert isinstance(error, CrawlogError)
    assert not error.disk_full
    message = str(error)
    assert "cannot save to disk" in message and "refuses every write" in message
    assert "run the same command again" in message
    assert "script:" not in message


async def test_connecting_to_it_is_server_cannot_persist(refusing_server: ValkeyProcess) -> None:
    with pytest.raises(ServerCannotPersist):
        async with connect(refusing_server.url):
            pass


def test_a_command_against_it_is_one_line_and_exit_2(
    refusing_server: ValkeyProcess, tmp_path: Path
) -> None:
    result = crawlog(
        "enqueue",
        "--job",
        "j",
        "http://a.test/",
        cwd=tmp_path,
        env=clean_env(REDIS_URL=refusing_server.url),
    )
    assert result.returncode == 2, result
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("crawlog: error: the Redis server cannot save to disk")
    assert "internal error" not in lines[0]
