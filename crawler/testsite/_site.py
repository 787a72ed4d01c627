"""A site to crawl: deterministic generated pages, opt-in faults, and a log of every request.

The demo, the tests and the benchmarks crawl it. In a test::

    async with serve_testsite(pages=200, seed=1, faults=Faults(redirects=True)) as site:
        ...  # crawl site.url, then compare with site.reachable and site.requests

and as a separate process (benchmarks, the demo)::

    crawlog testsite --port 0 --pages 5000 --faults all --request-log requests.jsonl

which prints ``serving http://127.0.0.1:PORT (5000 pages)`` once it listens and serves until
SIGINT or SIGTERM. What the pages are is :mod:`crawler.testsite._sitegen`; this module serves them.

The server is a small HTTP/1.1 server on :class:`asyncio.Protocol` (GET and HEAD, POST to the
pages of :mod:`crawler.testsite._interactive` and the order console's confirm button
(:mod:`crawler.testsite._orders`), keep-alive,
pipelining, ``Connection: close``), not aiohttp: it must outrun the crawler it measures, and
on one core it answers several times as many requests as aiohttp.web (measured with wrk on
loopback, see docs/history.md). It listens on 127.0.0.1 only, and runs on asyncio (anyio's
asyncio backend included).

Every request served is a :class:`Request` (time, method, path, status, body bytes): kept in
memory for in-process use and/or appended as JSON lines to a file, flushed within
:data:`FLUSH_INTERVAL_S`, which :func:`read_request_log` reads — so a test can count fetches
independently of crawlog's own events.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import gzip
import html
import signal
import time
import zlib
from collections.abc import AsyncIterator, Callable
from email.utils import formatdate
from http import HTTPStatus
from pathlib import Path

import msgspec

from crawler.testsite._app import APP_TOKEN_PATH
from crawler.testsite._interactive import IncomingRequest, accepts_body, answer
from crawler.testsite._orders import CONFIRM_PATH, OrderConsole
from crawler.testsite._revisions import MUTATE_PATH, Mutation, Revisions
from crawler.testsite._sitegen import (
    DEFAULT_HUGE_PAGE_BYTES,
    NO_FAULTS,
    TEXT,
    Faults,
    Layout,
    Page,
    SiteMap,
)
from eventlog import ConfigError

__all__ = [
    "DEFAULT_HUGE_PAGE_BYTES",
    "Faults",
    "Request",
    "RunningSite",
    "SiteMap",
    "read_request_log",
    "run_testsite",
    "serve_testsite",
]

HOST = "127.0.0.1"
DEFAULT_PAGES = 1000
FLUSH_INTERVAL_S = 0.1
"""The request log reaches its file at most this long after a request was served."""
MAX_HEAD_BYTES = 64 * 1024
"""A request head (request line and headers) larger than this is refused with 431."""
MAX_BODY_BYTES = 1024 * 1024
"""A request body larger than this is refused with 413 (only forms and echoes take one)."""
SPLIT_WRITE_BYTES = 256 * 1024
"""Bodies larger than this are written apart from their head, not copied into one buffer."""
LISTEN_BACKLOG = 4096
"""Benchmarks open hundreds of connections at once; the default backlog of 100 drops SYNs."""
SHUTDOWN_GRACE_S = 1.0
"""On shutdown, connections get this long to finish writing before they are aborted."""
SERVER_NAME = "crawlog-testsite"
JSON_PATH = "/api/items.json"
"""Not HTML (and linked from no page): the first `OTHER_TYPE_ITEMS` items as JSON, each
with a relative ``href``, and an ``X-Items`` header saying how many."""
TEXT_PATH = "/notes.txt"
"""Not HTML either: one line per item of the same few, as text/plain."""
OTHER_TYPE_ITEMS = 3
JSON = "application/json"
SITEMAP_PATH = "/sitemap.xml"
"""A sitemap index (robots.txt names it) of `SITEMAP_CHILD` sitemaps, which list every
page of `SiteMap.pages_ok` once, each with a ``lastmod`` and a ``changefreq``."""
SITEMAP_CHILD = "/sitemaps/pages-{}.xml"
"""Child k (from 1): gzipped, as ``.xml.gz`` (application/gzip) for an odd k, and as this
``.xml`` sent with ``Content-Encoding: gzip`` for an even one."""
SITEMAP_URLS = 100
"""URLs per child sitemap."""
XML = "application/xml"
_SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"

_REASONS = {status.value: status.phrase for status in HTTPStatus}
_REQUEST_LINE_PARTS = 3


class Request(msgspec.Struct, frozen=True, gc=False):
    """One request the test site served."""

    time: float
    """Wall-clock time (Unix seconds) the response was written."""
    method: str
    path: str
    """The request target in origin form: path and query, as the client sent it."""
    status: int
    size: int
    """Body bytes sent (0 for HEAD)."""


_ENCODER = msgspec.json.Encoder()
_DECODER = msgspec.json.Decoder(Request)


def read_request_log(path: str | Path) -> list[Request]:
    """The requests recorded in a request-log file, in the order they were served.

    A last line still being written (no newline yet) is left out.
    """
    data = Path(path).read_bytes()
    complete = data[: data.rfind(b"\n") + 1]
    return [_DECODER.decode(line) for line in complete.splitlines()]


class _RequestLog:
    """Appends requests to a file as JSON lines, in batches flushed every FLUSH_INTERVAL_S."""

    def __init__(self, path: Path, loop: asyncio.AbstractEventLoop) -> None:
        try:
            self._file = path.open("ab")
        except OSError as exc:
            raise ConfigError(f"cannot open the request log {path}: {exc.strerror}") from exc
        self._loop = loop
        self._pending: list[Request] = []
        self._timer: asyncio.TimerHandle | None = None

    def add(self, request: Request) -> None:
        self._pending.append(request)
        if self._timer is None:
            self._timer = self._loop.call_later(FLUSH_INTERVAL_S, self.flush)

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._pending:
            self._file.write(_ENCODER.encode_lines(self._pending))
            self._file.flush()
            self._pending.clear()

    def close(self) -> None:
        self.flush()
        self._file.close()


class RunningSite:
    """A test site being served: where it is, what it holds, what it was asked for."""

    def __init__(self, sitemap: SiteMap, port: int, *, keep_requests: bool) -> None:
        self.sitemap = sitemap
        """The generated site: its pages, faults and structure (paths, not URLs)."""
        self.port = port
        self.url = f"http://{HOST}:{port}"
        """The site's origin, ``http://127.0.0.1:PORT``: crawl from here."""
        self.requests: list[Request] = []
        """Every request served, in order (stays empty unless ``keep_requests``)."""
        self.request_count = 0
        """How many requests were served."""
        self._keep_requests = keep_requests
        self._log: _RequestLog | None = None
        self._connections: set[_Connection] = set()
        self._no_connections = asyncio.Event()
        self._no_connections.set()
        self._fault_counts: dict[str, int] = {}
        self._date_second = -1
        self._date = ""
        self.revisions = Revisions(sitemap.pages_ok)
        """Its edits and deletions between runs (`mutate`), and its validators."""
        self.orders = OrderConsole()
        """Its order console (``/orders``): the confirmations it received, its delays."""

    def mutate(self, changed: int, deleted: int, seed: int = 0, added: int = 0) -> Mutation:
        """Edit ``changed`` item pages and delete ``deleted`` others, the first ``added``
        edited ones linking a new page each (see `Revisions`)."""
        return self.revisions.mutate(changed, deleted, seed, added)

    def edit(self, *paths: str) -> Mutation:
        """Edit these pages (any the site serves: a listing, say), as `mutate` does items."""
        return self.revisions.edit(paths)

    @functools.cached_property
    def reachable(self) -> frozenset[str]:
        """Absolute URLs of every page a robots-obeying crawler reaches from the home page."""
        return frozenset(self.url + path for path in self.sitemap.reachable)

    @functools.cached_property
    def disallowed(self) -> frozenset[str]:
        """Absolute URLs of the linked pages robots.txt disallows."""
        return frozenset(self.url + path for path in self.sitemap.disallowed)

    def fetch_counts(self) -> dict[str, int]:
        """How many times each path was requested (from :attr:`requests`)."""
        counts: dict[str, int] = {}
        for request in self.requests:
            counts[request.path] = counts.get(request.path, 0) + 1
        return counts

    def logins(self) -> int:
        """How many times the app (`crawler.testsite._app`) let someone log in: its token
        POSTs answered 200 (from :attr:`requests`)."""
        return sum(
            r.method == "POST" and r.path == APP_TOKEN_PATH and r.status == 200
            for r in self.requests
        )

    def answering(self, path: str) -> bool:
        """Whether a request of ``path`` has arrived and its (late) answer is not sent yet:
        the request log records a request only once it is answered."""
        return any(c.delayed_path == path for c in self._connections)

    def in_flight(self) -> int:
        """Requests arrived whose (late) answer is not sent yet: what a client killed now
        had on its way, as the site sees it (a request answered at once is never in flight
        between two of the site's callbacks)."""
        return sum(c.delayed_path is not None for c in self._connections)

    def flush_log(self) -> None:
        """Write the requests served so far to the request-log file now."""
        if self._log is not None:
            self._log.flush()

    async def no_connections(self) -> None:
        """Wait until no client connection is open: after a client is killed, until what
        it had asked for is answered (and logged) and its connections are closed."""
        await self._no_connections.wait()

    # --- for the connections -------------------------------------------------------------

    def _answer(self, path: str, request: IncomingRequest) -> tuple[Page, float]:
        """The page for a request of ``path`` and how long to wait before sending it."""
        if (page := answer(request)) is not None:
            return page, 0.0
        if (
            late := self.orders.answer(request.method, path, request.headers, request.body)
        ) is not None:
            return late
        if path.startswith(MUTATE_PATH):
            return self.revisions.admin(path), 0.0
        plan = self.sitemap.fault_plan(path)
        if plan.failures:
            seen = self._fault_counts.get(path, 0)
            self._fault_counts[path] = seen + 1
            if seen < len(plan.failures):
                return _failure(plan.failures[seen], self.sitemap.faults), plan.delay_s
        if (kept := self.revisions.not_modified(path, request.headers)) is not None:
            return kept, plan.delay_s
        page = self.sitemap.render(path) or _other_type(self.sitemap, path)
        return self.revisions.serve(path, page, request.headers), plan.delay_s

    def _date_header(self) -> str:
        now = time.time()
        if int(now) != self._date_second:
            self._date_second = int(now)
            self._date = formatdate(now, usegmt=True)
        return self._date

    def _record(self, method: str, path: str, status: int, size: int) -> None:
        self.request_count += 1
        if self._log is None and not self._keep_requests:
            return
        request = Request(time.time(), method, path, status, size)
        if self._keep_requests:
            self.requests.append(request)
        if self._log is not None:
            self._log.add(request)

    async def _close_connections(self) -> None:
        for connection in list(self._connections):
            connection.close()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._no_connections.wait(), SHUTDOWN_GRACE_S)
        for connection in list(self._connections):
            connection.abort()
        await self._no_connections.wait()


def _simple_page(status: int, text: str, headers: tuple[tuple[str, str], ...] = ()) -> Page:
    return Page(status, f"{text}\n".encode(), TEXT, headers)


_NOT_FOUND = _simple_page(404, "not found")


def _other_type(sitemap: SiteMap, path: str) -> Page:
    """`JSON_PATH` and `TEXT_PATH` (else 404): pages a spider must ask for to parse."""
    items = range(1, min(OTHER_TYPE_ITEMS, sitemap.pages) + 1)
    header = (("X-Items", str(len(items))),)
    if path == JSON_PATH:
        rows = [{"id": item, "href": f"../item/{item}"} for item in items]
        return Page(200, msgspec.json.encode({"items": rows}), JSON, header)
    if path == TEXT_PATH:
        body = "".join(f"item {item}: /item/{item}\n" for item in items).encode()
        return Page(200, body, TEXT, header)
    if path == SITEMAP_PATH or path.startswith(SITEMAP_CHILD.partition("{")[0]):
        return _sitemap(sitemap, path) or _NOT_FOUND
    return _NOT_FOUND


def sitemap_children(sitemap: SiteMap) -> list[str]:
    """The paths of the child sitemaps `SITEMAP_PATH` lists."""
    count = -(-len(sitemap.pages_ok) // SITEMAP_URLS)
    return [SITEMAP_CHILD.format(k) + (".gz" if k % 2 else "") for k in range(1, count + 1)]


def sitemap_lastmod(path: str) -> str:
    """The ``lastmod`` the child sitemaps give a page's path (fixed by the path)."""
    return f"2026-{zlib.crc32(path.encode()) % 12 + 1:02d}-01"


def sitemap_changefreq(path: str) -> str:
    """The ``changefreq`` the child sitemaps give a page's path (fixed by the path): a
    quarter of the pages change ``always``, the others ``weekly``."""
    return "always" if zlib.crc32(path.encode()) % 4 == 0 else "weekly"


@functools.lru_cache(maxsize=16)
def _sitemap(sitemap: SiteMap, path: str) -> Page | None:
    children = sitemap_children(sitemap)
    if path == SITEMAP_PATH:
        entries = "".join(
            f"<sitemap><loc>{sitemap.origin}{child}</loc></sitemap>\n" for child in children
        )
        index = f'<sitemapindex xmlns="{_SITEMAP_NS}">\n{entries}</sitemapindex>\n'
        return Page(200, f'<?xml version="1.0"?>\n{index}'.encode(), XML)
    if path not in children:
        return None
    k = children.index(path)
    pages = sorted(sitemap.pages_ok)[k * SITEMAP_URLS : (k + 1) * SITEMAP_URLS]
    entries = "".join(
        f"<url><loc>{html.escape(sitemap.origin + page)}</loc>"
        f"<lastmod>{sitemap_lastmod(page)}</lastmod>"
        f"<changefreq>{sitemap_changefreq(page)}</changefreq></url>\n"
        for page in pages
    )
    xml = f'<?xml version="1.0"?>\n<urlset xmlns="{_SITEMAP_NS}">\n{entries}</urlset>\n'
    body = gzip.compress(xml.encode(), mtime=0)
    if path.endswith(".gz"):
        return Page(200, body, "application/gzip")
    return Page(200, body, XML, (("Content-Encoding", "gzip"),))


@functools.lru_cache(maxsize=4)
def _failure(status: int, faults: Faults) -> Page:
    if status == HTTPStatus.TOO_MANY_REQUESTS:
        return _simple_page(status, "slow down", (("Retry-After", str(faults.retry_after_s)),))
    return _simple_page(status, "injected failure: try again")


class _Connection(asyncio.Protocol):
    """One client connection: requests parsed and answered in order, one at a time."""

    def __init__(self, site: RunningSite) -> None:
        self._site = site
        self._transport: asyncio.Transport | None = None
        self._buffer = bytearray()
        self._delayed: asyncio.TimerHandle | None = None
        self.delayed_path: str | None = None
        """The path whose answer is waiting (a slow page), if any."""
        self._write_paused = False
        self._closing = False
        self._eof = False

    # --- asyncio callbacks ---------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        self._site._connections.add(self)
        self._site._no_connections.clear()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._delayed is not None:
            self._delayed.cancel()
            self._delayed = None
        self._closing = True
        self._site._connections.discard(self)
        if not self._site._connections:
            self._site._no_connections.set()

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        self._serve()

    def eof_received(self) -> bool:
        # Keep the transport open to answer what was already received (a delayed response,
        # pipelined requests held back by a full write buffer); _serve closes it after.
        self._eof = True
        self._serve()
        return True

    def pause_writing(self) -> None:
        # The client reads slower than we answer: stop reading its next requests as well,
        # so pipelined requests cannot pile up responses in memory.
        self._write_paused = True
        if self._transport is not None and not self._closing:
            self._transport.pause_reading()

    def resume_writing(self) -> None:
        self._write_paused = False
        if self._transport is not None and not self._closing:
            self._transport.resume_reading()
            self._serve()

    # --- for the site --------------------------------------------------------------------

    def close(self) -> None:
        """Finish writing what is buffered, then close (shutdown)."""
        if self._delayed is not None:
            self._delayed.cancel()
            self._delayed = None
        self._closing = True
        if self._transport is not None:
            self._transport.close()

    def abort(self) -> None:
        """Close now, dropping unwritten data (shutdown, after the grace period)."""
        if self._transport is not None:
            self._transport.abort()

    # --- HTTP ----------------------------------------------------------------------------

    def _serve(self) -> None:
        while not (self._closing or self._write_paused or self._delayed is not None):
            end = self._buffer.find(b"\r\n\r\n")
            if end < 0 or end > MAX_HEAD_BYTES:
                if len(self._buffer) > MAX_HEAD_BYTES:
                    self._refuse(
                        HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "request head too large"
                    )
                break
            length = _content_length(self._buffer, end)
            if length is None:
                self._refuse(HTTPStatus.BAD_REQUEST, "malformed Content-Length")
                break
            if length > MAX_BODY_BYTES:
                self._refuse(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "request body too large")
                break
            if len(self._buffer) < end + 4 + length:
                break  # the body is still on its way
            head = bytes(self._buffer[:end])
            body = bytes(self._buffer[end + 4 : end + 4 + length])
            del self._buffer[: end + 4 + length]
            self._handle(head, body)
        if self._eof and not self._closing and self._delayed is None and not self._write_paused:
            self._closing = True
            assert self._transport is not None
            self._transport.close()

    def _handle(self, head: bytes, body: bytes) -> None:
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != _REQUEST_LINE_PARTS:
            self._refuse(HTTPStatus.BAD_REQUEST, "malformed request line")
            return
        method, target, version = parts
        if version not in ("HTTP/1.1", "HTTP/1.0"):
            self._refuse(HTTPStatus.HTTP_VERSION_NOT_SUPPORTED, "HTTP/1.1 only", method, target)
            return
        keep_alive = version == "HTTP/1.1"
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, colon, value = line.partition(":")
            if not colon:
                self._refuse(HTTPStatus.BAD_REQUEST, "malformed header", method, target)
                return
            name, value = name.lower(), value.strip()
            if name in headers:
                value = headers[name] + ("; " if name == "cookie" else ", ") + value
            headers[name] = value
            if name == "connection":
                tokens = {token.strip().lower() for token in value.split(",")}
                if "close" in tokens:
                    keep_alive = False
                elif "keep-alive" in tokens:
                    keep_alive = True
            elif name == "transfer-encoding":
                # A body is read by its Content-Length only: chunked uploads are more than
                # this site needs.
                self._refuse(HTTPStatus.BAD_REQUEST, "no chunked request bodies", method, target)
                return
        path = _origin_form(target)
        if path is None:
            self._refuse(HTTPStatus.BAD_REQUEST, "bad request target", method, target)
            return
        takes_body = accepts_body(path) or path.partition("?")[0] == CONFIRM_PATH
        if method not in ("GET", "HEAD") and not (method == "POST" and takes_body):
            allowed = "GET, HEAD, POST" if takes_body else "GET, HEAD"
            refusal = _simple_page(
                HTTPStatus.METHOD_NOT_ALLOWED, f"{allowed} only", (("Allow", allowed),)
            )
            self._send(method, target, refusal, keep_alive=keep_alive)
            return
        if body and not takes_body:
            self._refuse(HTTPStatus.BAD_REQUEST, "no request bodies here", method, target)
            return
        page, delay_s = self._site._answer(path, IncomingRequest(method, path, headers, body))
        if delay_s > 0:
            loop = asyncio.get_running_loop()
            self.delayed_path = path
            self._delayed = loop.call_later(
                delay_s, self._send_delayed, method, path, page, keep_alive
            )
        else:
            self._send(method, path, page, keep_alive=keep_alive)

    def _send_delayed(self, method: str, path: str, page: Page, keep_alive: bool) -> None:
        self._delayed = self.delayed_path = None
        self._send(method, path, page, keep_alive=keep_alive)
        self._serve()

    def _refuse(self, status: HTTPStatus, why: str, method: str = "-", target: str = "-") -> None:
        """Answer a request we cannot read, and close: what follows it cannot be trusted."""
        self._send(method, target, _simple_page(status, why), keep_alive=False)

    def _send(self, method: str, path: str, page: Page, *, keep_alive: bool) -> None:
        transport = self._transport
        assert transport is not None
        body = page.body
        head = (
            f"HTTP/1.1 {page.status} {_REASONS[page.status]}\r\n"
            f"Content-Type: {page.content_type}\r\nContent-Length: {len(body)}\r\n"
            f"Date: {self._site._date_header()}\r\nServer: {SERVER_NAME}\r\n"
        )
        for name, value in page.headers:
            head += f"{name}: {value}\r\n"
        if not keep_alive:
            head += "Connection: close\r\n"
        data = (head + "\r\n").encode("latin-1")
        if method == "HEAD":
            body = b""
        if len(body) > SPLIT_WRITE_BYTES:
            transport.write(data)
            transport.write(body)
        else:
            transport.write(data + body)
        self._site._record(method, path, page.status, len(body))
        if not keep_alive:
            self._closing = True
            transport.close()


def _content_length(buffer: bytearray, end: int) -> int | None:
    """The Content-Length of the request whose head ends at ``end`` (0 without one), or
    None if it is not a number."""
    at = buffer.find(b"\r\ncontent-length:", 0, end)
    if at < 0:
        at = bytes(buffer[:end]).lower().find(b"\r\ncontent-length:")
        if at < 0:
            return 0
    stop = buffer.find(b"\r\n", at + 2, end + 2)
    value = bytes(buffer[at + len(b"\r\ncontent-length:") : stop]).strip()
    return int(value) if value.isdigit() else None


def _origin_form(target: str) -> str | None:
    """The path and query of a request target (origin form, or absolute form from proxies)."""
    if target.startswith("/"):
        return target
    if target.startswith("http://"):
        slash = target.find("/", len("http://"))
        return "/" if slash < 0 else target[slash:]
    return None


@contextlib.asynccontextmanager
async def serve_testsite(
    *,
    pages: int = DEFAULT_PAGES,
    seed: int = 0,
    faults: Faults = NO_FAULTS,
    port: int = 0,
    request_log: str | Path | None = None,
    keep_requests: bool = True,
    layout: Layout = "default",
) -> AsyncIterator[RunningSite]:
    """Serve the test site on 127.0.0.1 while the block runs.

    ``port=0`` picks a free port (``site.url`` says which). ``request_log`` names a file
    that every request served is appended to as a JSON line (see :func:`read_request_log`);
    ``keep_requests`` keeps them in ``site.requests`` as well. ``layout="link-dense"``
    serves a documentation site instead (see :mod:`crawler.testsite._linkdense`). On exit
    the server stops, open connections are closed and the log is flushed and closed.
    """
    loop = asyncio.get_running_loop()
    holder: list[RunningSite] = []
    try:
        server = await loop.create_server(
            lambda: _Connection(holder[0]),
            host=HOST,
            port=port,
            backlog=LISTEN_BACKLOG,
            start_serving=False,
        )
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(
                f"port {port} on {HOST} is in use: pick another, or 0 for any free port"
            ) from exc
        raise ConfigError(f"cannot listen on {HOST}:{port}: {exc.strerror}") from exc
    try:
        bound = server.sockets[0].getsockname()[1]
        sitemap = SiteMap(pages, seed, faults, origin=f"http://{HOST}:{bound}", layout=layout)
        site = RunningSite(sitemap, bound, keep_requests=keep_requests)
        holder.append(site)
        if request_log is not None:
            site._log = _RequestLog(Path(request_log), loop)
        await server.start_serving()
        yield site
    finally:
        server.close()
        if holder:
            await holder[0]._close_connections()
        await server.wait_closed()
        if holder and holder[0]._log is not None:
            holder[0]._log.close()


async def run_testsite(
    *,
    pages: int,
    seed: int,
    faults: Faults,
    port: int,
    request_log: Path | None,
    announce: Callable[[str], None],
    layout: Layout = "default",
) -> int:
    """Serve until SIGINT or SIGTERM (the ``crawlog testsite`` command); returns requests served."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        async with serve_testsite(
            pages=pages,
            seed=seed,
            faults=faults,
            port=port,
            request_log=request_log,
            keep_requests=False,
            layout=layout,
        ) as site:
            announce(f"serving {site.url} ({pages} pages)")
            await stop.wait()
        return site.request_count
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
