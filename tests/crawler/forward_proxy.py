"""A small HTTP forward proxy on 127.0.0.1 for the proxy tests, logging what passes through.

It takes requests in absolute form (``GET http://host:port/path HTTP/1.1``, as a client
sends them to a proxy), records each URL, forwards the request to its origin with
``Connection: close`` and relays the answer, then closes the client's connection. No
CONNECT (https) tunnels: the test site is plain HTTP.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from urllib.parse import urlsplit

HOST = "127.0.0.1"
_HOP_BY_HOP = frozenset({b"connection", b"proxy-connection", b"keep-alive"})


class ForwardProxy:
    """A running proxy: ``url`` to give the crawler, ``requests`` that went through."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.requests: list[str] = []
        """Absolute URLs of the requests forwarded, in the order they arrived."""

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()
            return
        lines = head.split(b"\r\n")
        method, target, _version = lines[0].split(b" ", 2)
        url = target.decode("latin-1")
        self.requests.append(url)
        parts = urlsplit(url)
        headers = [line for line in lines[1:] if line]
        length = 0
        kept: list[bytes] = []
        for line in headers:
            name = line.partition(b":")[0].strip().lower()
            if name == b"content-length":
                length = int(line.partition(b":")[2])
            if name not in _HOP_BY_HOP:
                kept.append(line)
        body = await reader.readexactly(length) if length else b""
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
        upstream_reader, upstream_writer = await asyncio.open_connection(
            parts.hostname, parts.port or 80
        )
        upstream_writer.write(
            method + b" " + path.encode("latin-1") + b" HTTP/1.1\r\n"
            + b"".join(line + b"\r\n" for line in kept)
            + b"Connection: close\r\n\r\n" + body
        )  # fmt: skip
        await upstream_writer.drain()
        answer = await upstream_reader.read()  # to the origin's close
        upstream_writer.close()
        writer.write(answer)
        with suppress(ConnectionError):
            await writer.drain()
        writer.close()


@asynccontextmanager
async def serve_forward_proxy() -> AsyncIterator[ForwardProxy]:
    """A forward proxy on a free port of 127.0.0.1 while the block runs."""
    holder: list[ForwardProxy] = []
    server = await asyncio.start_server(lambda r, w: holder[0].handle(r, w), HOST, 0)
    holder.append(ForwardProxy(server.sockets[0].getsockname()[1]))
    try:
        yield holder[0]
    finally:
        server.close()
        await server.wait_closed()
