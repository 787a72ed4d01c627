"""A small real HTTP server for pages the generated test site does not serve: bytes that
trickle, bogus charsets, broken robots.txt files, links that leave the scope.

Each path answers with a :class:`Route`; every request is recorded (path, in order).
HTTP/1.1 with one request per connection, enough for the crawler's client.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Route:
    """How one path answers."""

    body: bytes = b""
    status: int = 200
    content_type: str = "text/html; charset=utf-8"
    headers: tuple[tuple[str, str], ...] = ()
    trickle_s: float = 0.0
    """Send the body a byte at a time, this long apart (a server that trickles)."""
    hang: bool = False
    """Accept the request and never answer."""
    unavailable_first: int = 0
    """Answer the first this many requests with 503 instead."""
    cut_after: int | None = None
    """Send only this many bytes of the body (its Content-Length says all), then hang up."""


def html_page(text: str, *links: str, headers: tuple[tuple[str, str], ...] = ()) -> Route:
    """A small HTML page titled and saying ``text``, linking each of ``links``."""
    anchors = "".join(f'<a href="{link}">{link}</a>\n' for link in links)
    body = f"<!DOCTYPE html>\n<title>{text}</title>\n<p>{text}</p>\n{anchors}".encode()
    return Route(body, headers=headers)


def redirect_to(location: str, status: int = 301) -> Route:
    """A redirect to ``location``."""
    return Route(status=status, headers=(("Location", location),))


@dataclass
class HostileSite:
    """The running server: its URL, its routes and the requests it got."""

    port: int
    routes: dict[str, Route]
    requests: list[str] = field(default_factory=list)
    heads: list[str] = field(default_factory=list)
    """Each request's head as sent (request line and headers), in order."""
    connections: int = 0
    """Connections accepted, whether or not a request came over them."""
    host: str = "127.0.0.1"

    @property
    def url(self) -> str:
        """The site's origin, ``http://HOST:PORT``."""
        return f"http://{self.host}:{self.port}"


@contextlib.asynccontextmanager
async def serve_hostile(
    routes: dict[str, Route], *, host: str = "127.0.0.1", port: int = 0
) -> AsyncIterator[HostileSite]:
    """Serve ``routes`` on ``host`` (a free port unless ``port``) while the block runs (404
    elsewhere)."""
    site = HostileSite(port=port, routes=routes, host=host)
    handlers: set[asyncio.Task[None]] = set()

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        site.connections += 1
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            target = head.split(b" ", 2)[1].decode("latin-1")
            site.requests.append(target)
            site.heads.append(head.decode("latin-1"))
            route = site.routes.get(target, Route(b"not here", status=404))
            if site.requests.count(target) <= route.unavailable_first:
                route = Route(b"try later", status=503)
            if route.hang:
                await asyncio.Event().wait()
            lines = [
                f"HTTP/1.1 {route.status} X",
                f"Content-Type: {route.content_type}",
                f"Content-Length: {len(route.body)}",
                "Connection: close",
                *(f"{name}: {value}" for name, value in route.headers),
            ]
            writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
            if route.trickle_s:
                for n in range(len(route.body)):
                    writer.write(route.body[n : n + 1])
                    await writer.drain()
                    await asyncio.sleep(route.trickle_s)
            else:
                writer.write(route.body[: route.cut_after])
            await writer.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass  # the client gave up (a timeout): nothing to answer
        finally:
            writer.close()

    def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.ensure_future(answer(reader, writer))
        handlers.add(task)
        task.add_done_callback(handlers.discard)

    server = await asyncio.start_server(handle, host, port)
    site.port = server.sockets[0].getsockname()[1]
    try:
        yield site
    finally:
        server.close()
        for task in list(handlers):
            task.cancel()
        await asyncio.gather(*handlers, return_exceptions=True)
