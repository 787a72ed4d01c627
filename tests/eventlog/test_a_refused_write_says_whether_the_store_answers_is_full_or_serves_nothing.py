"""What a server's refusal of a write says of it (`refusal_means`): one out of memory
(``OOM``) is full, and still answers a PING and reads; one loading its data, held by a
script or without its primary serves nothing; one that cannot save, or refuses this user a
command, answers (the write that fails says why, once). The probe (`probe_store`) is a
write that changes nothing: a real server whose ``maxmemory`` is lowered below what it
holds is told full by it, while it answers a PING, and it creates no key."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
import redis.asyncio as aioredis
import redis.exceptions
from hypothesis import given
from hypothesis import strategies as st

from eventlog import JobKeys, connect, error_code, probe_store, refusal_means
from tests.valkey_process import running_valkey

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("code", "means"),
    [
        ("OOM", "full"),
        ("LOADING", "down"),
        ("BUSY", "down"),
        ("MASTERDOWN", "down"),
        ("MISCONF", "answers"),
        ("NOPERM", "answers"),
        ("READONLY", "answers"),
        ("ERR", "answers"),
    ],
)
def test_a_refusal_means_what_its_code_says(code: str, means: str) -> None:
    assert refusal_means(code) == means


@given(st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ", min_size=1, max_size=12))
def test_a_code_it_does_not_know_answers(code: str) -> None:
    if code not in {"OOM", "LOADING", "BUSY", "MASTERDOWN"}:
        assert refusal_means(code) == "answers"


@pytest.mark.parametrize(
    ("error", "code"),
    [
        # A code redis-py knows is kept apart from the message (its parser's way).
        (redis.exceptions.OutOfMemoryError(
            "command not allowed when used memory > 'maxmemory'.", status_code="OOM"), "OOM"),
        (redis.exceptions.MasterDownError("Link with MASTER is down", status_code="MASTERDOWN"),
         "MASTERDOWN"),
        # One it does not know stays the message's first word.
        (redis.exceptions.ResponseError("BUSY Valkey is busy running a script."), "BUSY"),
        (redis.exceptions.ResponseError("MISCONF Errors writing to the AOF file"), "MISCONF"),
        (redis.exceptions.ResponseError(""), ""),
    ],
)  # fmt: skip
def test_the_code_is_read_where_redis_py_keeps_it(
    error: redis.exceptions.ResponseError, code: str
) -> None:
    assert error_code(error) == code


async def test_the_probe_tells_a_full_server_that_still_answers_a_ping(tmp_path: Path) -> None:
    keys = JobKeys("probe")
    with running_valkey(tmp_path / "v", "--save", "") as server:
        async with (
            connect(server.url, ride_out_s=30, quiet=True) as client,
            aioredis.Redis.from_url(server.url) as admin,
        ):
            assert await probe_store(client, keys) == "answers"
            await admin.config_set("maxmemory", "1")  # below what it holds: writes refused
            assert await client.ping()
            with anyio.fail_after(5):  # told, not retried for the 30 s ride-out as a write is
                assert await probe_store(client, keys) == "full"
            await admin.config_set("maxmemory", "0")
            assert await probe_store(client, keys) == "answers"
            assert await admin.exists(keys.write_probe) == 0
            assert await admin.dbsize() == 0
