"""Commands are packed by hiredis (``_connection._packing_in_c``): the same bytes as
redis-py's own packer, for every kind of argument crawlog sends, over every URL scheme."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis
import redis.exceptions
from hypothesis import given
from hypothesis import strategies as st
from redis.asyncio.connection import Connection, SSLConnection, UnixDomainSocketConnection

from eventlog._connection import client_for

pytestmark = pytest.mark.anyio

arguments = st.one_of(
    st.text(),
    st.binary(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
)


@given(
    name=st.sampled_from(["XADD", "EVALSHA", "CLIENT SETNAME", b"CONFIG GET", b"HMGET"]),
    args=st.lists(arguments, max_size=12),
)
def test_packed_bytes_are_redis_pys(name: str | bytes, args: list[object]) -> None:
    ours = client_for("redis://127.0.0.1:1").connection_pool.connection_class()
    theirs = Connection()
    assert b"".join(ours.pack_command(name, *args)) == b"".join(theirs.pack_command(name, *args))


def test_every_url_scheme_keeps_its_connection_kind() -> None:
    for url, kind in [
        ("redis://127.0.0.1:6379", Connection),
        ("rediss://127.0.0.1:6379", SSLConnection),
        ("unix:///tmp/valkey.sock", UnixDomainSocketConnection),
    ]:
        assert issubclass(client_for(url).connection_pool.connection_class, kind)


def test_an_argument_redis_py_refuses_is_refused_the_same_way() -> None:
    connection = client_for("redis://127.0.0.1:1").connection_pool.connection_class()
    with pytest.raises(redis.exceptions.DataError):
        connection.pack_command("SET", "key", None)
    assert connection.pack_command("SET", bytearray(b"k"), memoryview(b"v")) == [
        b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"
    ]


async def test_a_real_server_answers_what_was_packed(redis_client: aioredis.Redis) -> None:
    await redis_client.hset("packed", mapping={"a": 0.25, "b": 7, "é": b"\x00\xff"})
    assert await redis_client.hmget("packed", ["a", "b", "é", "missing"]) == [
        b"0.25",
        b"7",
        b"\x00\xff",
        None,
    ]
    await redis_client.execute_command("CLIENT SETNAME", "packer")  # type: ignore[no-untyped-call]
    assert await redis_client.client_getname() == "packer"
