"""A fault-injecting TCP proxy on 127.0.0.1, for the chaos run (``tools/chaos.py``).

Clients connect to the proxy's port; every connection is forwarded to the upstream server
(a unix socket, or a TCP host and port). On command, the proxy:

* **loses a reply**: ``lose_next_reply()`` lets the next chunk a client sends reach the
  server, waits for the server's answer, throws it away and cuts the connection — the
  server applied the command, the client never hears so (redis-py retries it: the
  retried script must find its own earlier effect);
* **cuts** every open connection now (``cut()``);
* **delays** every chunk in both directions by some seconds for a while (``delay()``).

Used as a library::

    async with serve_proxy(unix_path="/tmp/valkey.sock") as proxy:
        url = proxy.url   # redis://127.0.0.1:PORT
        proxy.lose_next_reply()

or standalone: ``python tools/faultproxy.py --upstream unix:/path/valkey.sock --port 7000``
(forwards without faults until stopped: a base to experiment from).
"""

from __future__ import annotations

import argparse
import contextlib
import math
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import anyio
from anyio.abc import ByteStream, SocketAttribute, TaskGroup

HOST = "127.0.0.1"
CHUNK = 65_536


@dataclass
class ProxyStats:
    """What the proxy did, for the chaos report."""

    connections: int = 0
    replies_lost: int = 0
    cuts: int = 0
    delayed_chunks: int = 0


@dataclass(eq=False)
class _Link:
    """One proxied connection: cancelling its scope closes both ends."""

    scope: anyio.CancelScope
    lose_reply: bool = False


@dataclass
class FaultProxy:
    """A running proxy: its port, and the faults it can inject."""

    port: int
    unix_path: str | None
    upstream: tuple[str, int] | None
    stats: ProxyStats = field(default_factory=ProxyStats)
    _links: set[_Link] = field(default_factory=set)
    _lose_next: bool = False
    _delay_s: float = 0.0
    _delay_until: float = -math.inf

    @property
    def url(self) -> str:
        """``redis://`` URL of the proxy."""
        return f"redis://{HOST}:{self.port}"

    def lose_next_reply(self) -> None:
        """The next command any client sends is applied; its reply is dropped with the
        connection, and every other open connection is cut with it."""
        self._lose_next = True

    def cut(self) -> int:
        """Close every open connection now; how many there were."""
        links = list(self._links)
        for link in links:
            link.scope.cancel()
        self.stats.cuts += len(links)
        return len(links)

    def delay(self, seconds: float, for_s: float) -> None:
        """Hold every chunk ``seconds`` before passing it on, for the next ``for_s`` s."""
        self._delay_s = seconds
        self._delay_until = anyio.current_time() + for_s

    async def _handle(self, client: ByteStream) -> None:
        self.stats.connections += 1
        link = _Link(anyio.CancelScope())
        self._links.add(link)
        try:
            with link.scope:
                server: ByteStream
                if self.unix_path is not None:
                    server = await anyio.connect_unix(self.unix_path)
                else:
                    assert self.upstream is not None
                    server = await anyio.connect_tcp(*self.upstream)
                async with server, anyio.create_task_group() as tg:
                    tg.start_soon(self._pump, client, server, link, True)
                    tg.start_soon(self._pump, server, client, link, False)
        except OSError:
            pass  # the upstream is down (a killed server): the client sees a closed socket
        finally:
            self._links.discard(link)
            with contextlib.suppress(Exception):
                await anyio.aclose_forcefully(client)

    async def _pump(self, source: ByteStream, sink: ByteStream, link: _Link, up: bool) -> None:
        """Copy one direction until either end closes; then close the whole link."""
        try:
            while True:
                data = await source.receive(CHUNK)
                if anyio.current_time() < self._delay_until:
                    self.stats.delayed_chunks += 1
                    await anyio.sleep(self._delay_s)
                if up and self._lose_next:
                    # Forward this command, then drop the reply it gets (below).
                    self._lose_next = False
                    link.lose_reply = True
                elif not up and link.lose_reply:
                    self.stats.replies_lost += 1
                    self.cut()
                    return
                await sink.send(data)
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass
        link.scope.cancel()


@contextlib.asynccontextmanager
async def serve_proxy(
    *, unix_path: str | None = None, upstream: tuple[str, int] | None = None, port: int = 0
) -> AsyncIterator[FaultProxy]:
    """Serve a proxy to ``unix_path`` (or TCP ``upstream``) on 127.0.0.1 while the block runs."""
    if (unix_path is None) == (upstream is None):
        raise ValueError("give exactly one of unix_path and upstream")
    listener = await anyio.create_tcp_listener(local_host=HOST, local_port=port)
    async with listener, anyio.create_task_group() as tg:
        proxy = FaultProxy(
            port=listener.extra(SocketAttribute.local_port), unix_path=unix_path, upstream=upstream
        )
        tg.start_soon(_serve, listener, proxy, tg)
        try:
            yield proxy
        finally:
            tg.cancel_scope.cancel()


async def _serve(
    listener: anyio.abc.Listener[ByteStream], proxy: FaultProxy, tg: TaskGroup
) -> None:
    await listener.serve(proxy._handle, task_group=tg)


def main() -> None:
    """Forward 127.0.0.1:PORT to an upstream until interrupted (no faults)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--upstream", required=True, help="unix:/path/to.sock or HOST:PORT")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    target: str = args.upstream

    async def run() -> None:
        if target.startswith("unix:"):
            context = serve_proxy(unix_path=target.removeprefix("unix:"), port=args.port)
        else:
            host, _, port = target.rpartition(":")
            context = serve_proxy(upstream=(host, int(port)), port=args.port)
        async with context as proxy:
            print(f"proxying {proxy.url} -> {target}", flush=True)
            await anyio.sleep_forever()

    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(run)


if __name__ == "__main__":
    main()
