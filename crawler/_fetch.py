"""The worker's fetcher: one request, its redirects checked hop by hop, as a result — never raised.

httpx is the interface, sending through :class:`AiohttpTransport`, an httpx transport backed
by an aiohttp session. The transport was chosen by measurement (``python
tools/bench_fetch.py``: pages from the test site in another process, keep-alive, at several
concurrencies). httpx's own transport (httpcore) collapses once many connections are open,
while through this one httpx keeps its rate however many are in flight. What stays between
that and aiohttp used alone is httpx itself: its request and response objects and
``AsyncClient.send`` cost more CPU per request than aiohttp's whole request. The transport
is this module's rather than the ``httpx-aiohttp`` package's (measured alongside, a little
slower) because that
package maps aiohttp's errors lossily — a refused connection and a dropped one both become
``ConnectTimeout`` — and a result must name the right reason.

Every network or HTTP problem is a :class:`FetchResult` with a short ``error``; the worker
decides what to retry. Only misuse raises (fetching outside ``async with``, a
``redirect_allowed`` hook that raises).
"""

from __future__ import annotations

import errno
import functools
import itertools
import os
import re
import socket
import ssl
import time
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from http.client import HTTPResponse
from http.cookiejar import CookieJar
from types import TracebackType
from typing import Any, Protocol, Self
from urllib.parse import urlsplit
from urllib.request import Request as UrllibRequest

import anyio
import certifi
import httpx
import msgspec
import yarl

from crawler._addresses import ERROR_REFUSED_ADDRESS_PREFIX, AddressRefused
from crawler._aiohttp import aiohttp
from crawler._fetch_spec import (
    CONDITIONAL_HEADERS,
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_USER_AGENT,
    ERROR_BAD_ENCODING,
    ERROR_BAD_RESPONSE,
    ERROR_CONNECT,
    ERROR_CONNECT_REFUSED,
    ERROR_CONNECT_TIMEOUT,
    ERROR_CONNECTION_CLOSED,
    ERROR_DNS,
    ERROR_INVALID_REDIRECT,
    ERROR_INVALID_URL,
    ERROR_PROXY_PREFIX,
    ERROR_READ_TIMEOUT,
    ERROR_REDIRECT_LOOP,
    ERROR_REDIRECT_OUT_OF_SCOPE,
    ERROR_TIMEOUT,
    ERROR_TLS,
    ERROR_TOO_MANY_REDIRECTS,
    KEPT_HEADERS,
    NO_RESPONSE,
    REDIRECT_STATUSES,
    FetchConfig,
    FetchResult,
    too_large,
)
from crawler._identity import ProxyRotation, proxy_for_site
from crawler._resolver import GuardedResolver
from crawler._robots import MAX_ROBOTS_BYTES, ROBOTS_MAX_REDIRECTS, ROBOTS_PATH
from crawler._tls import check_ca_location, deferred_default_context
from crawler._urls import HTTP_SCHEMES, site_of, url_key
from eventlog import ConfigError

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "DEFAULT_USER_AGENT",
    "ERROR_BAD_ENCODING",
    "ERROR_BAD_RESPONSE",
    "ERROR_CONNECT",
    "ERROR_CONNECTION_CLOSED",
    "ERROR_CONNECT_REFUSED",
    "ERROR_CONNECT_TIMEOUT",
    "ERROR_DNS",
    "ERROR_INVALID_REDIRECT",
    "ERROR_INVALID_URL",
    "ERROR_PROXY_PREFIX",
    "ERROR_READ_TIMEOUT",
    "ERROR_REDIRECT_LOOP",
    "ERROR_REDIRECT_OUT_OF_SCOPE",
    "ERROR_REFUSED_ADDRESS_PREFIX",
    "ERROR_TIMEOUT",
    "ERROR_TLS",
    "ERROR_TOO_MANY_REDIRECTS",
    "KEPT_HEADERS",
    "REDIRECT_STATUSES",
    "AiohttpTransport",
    "CookieHook",
    "FetchConfig",
    "FetchResult",
    "Fetcher",
    "too_large",
]


_GET = "GET"
_POST = "POST"
_HEAD = "HEAD"
_SEE_OTHER = 303
_POST_BECOMES_GET = frozenset({301, 302})
"""Redirects after which a POST continues as a GET, as browsers do (and the Fetch
standard says); a 307 or 308 repeats the method and its body."""
_BODY_HEADERS = ("content-type", "content-length", "content-encoding", "transfer-encoding")
_CA_ENV = ("SSL_CERT_FILE", "SSL_CERT_DIR")
"""Where httpx looks for CA certificates instead of certifi's bundle, if set."""
_MAX_CAUSES = 8
"""How far down an exception's causes a connect error's reason is looked for."""
_HEADER_NAMES = {name.encode(): name for name in KEPT_HEADERS}
_CONTENT_ENCODING = "Content-Encoding"
_PLAIN_URL = re.compile(
    r"https?://[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*(?::[0-9]{1,5})?"
    r"(?:[/?#](?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*)?"
)
"""A URL that httpx and yarl read alike, neither re-encoding nor normalizing any of it (no
dot segment either: ``"/." not in url``); yarl alone parses it for the request. Any other
goes through httpx first, as every URL did when requests were httpx's."""
_MAX_SITES_REMEMBERED = 65_536
"""Sites whose proxy the transport keeps at hand (past that it starts afresh)."""


class CookieHook(Protocol):
    """What the fetcher calls on each hop of a fetch when it keeps cookies (``--cookies``):
    see `crawler._cookies.SharedCookies`."""

    async def add_to(self, request: httpx.Request) -> None:
        """Give ``request`` the cookies it may carry, just before it is sent."""

    async def keep_from(self, response: httpx.Response) -> None:
        """Keep the cookies ``response`` sets (its head is in, its body not yet read)."""


class Fetcher:
    """Fetches pages over one keep-alive aiohttp-backed transport, httpx requests sent to
    it directly (the ``httpx.AsyncClient`` holds the defaults and closes it); use
    ``async with``.

    ::

        async with Fetcher(FetchConfig(total_timeout_s=30)) as fetcher:
            result = await fetcher.fetch(url, redirect_allowed=scope_check)

    Redirects are followed here, not by httpx, so that each hop is checked: against
    ``redirect_allowed``, against the URLs already in the chain, and against
    ``max_redirects``. No cookies are kept or sent unless ``cookies`` is given (a crawl's
    ``--cookies``): by default a page must not depend on what the worker that fetched it
    had fetched before. With ``cookies``, every hop's request goes through its ``add_to``
    and every hop's response through its ``keep_from``.
    """

    def __init__(
        self, config: FetchConfig | None = None, *, cookies: CookieHook | None = None
    ) -> None:
        self.config = config or FetchConfig()
        self.cookies = cookies
        self._client: httpx.AsyncClient | None = None
        self._transport: AiohttpTransport | None = None
        self._headers = httpx.Headers()
        self._header_items: list[tuple[str, str]] = []
        self._extensions: dict[str, Any] = {}
        self._timeout: aiohttp.ClientTimeout | None = None
        self._too_large = too_large(self.config.max_response_bytes)
        # Built here, not on entry: the worker builds its fetcher in a thread, where reading
        # a CA bundle the environment names does not hold up the event loop (certifi's is
        # read at the first https connection, once a process).
        self._ssl_context = tls_context()

    async def __aenter__(self) -> Self:
        if self._client is not None:
            raise RuntimeError("this Fetcher is already open")
        config = self.config
        guard = None
        if config.addresses is not None:
            proxy_hosts = (urlsplit(proxy).hostname or "" for proxy in config.proxies)
            guard = GuardedResolver(config.addresses, trusted_hosts=proxy_hosts)
        session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(
                limit=config.max_connections,
                limit_per_host=config.max_connections_per_host or 0,
                ssl=self._ssl_context,
                # Every address a connection is opened to is one the guard let through.
                resolver=guard,
            ),
            cookie_jar=aiohttp.DummyCookieJar(),
            # httpx decodes, so that the size cap applies to the decoded body.
            auto_decompress=False,
            trust_env=False,
        )
        # Waiting for a free connection (pool) is bounded by the total timeout alone.
        timeout = httpx.Timeout(config.read_timeout_s, connect=config.connect_timeout_s, pool=None)
        self._transport = AiohttpTransport(
            session, proxies=config.proxies, rotation=config.proxy_rotation, guard=guard
        )
        self._client = httpx.AsyncClient(
            transport=self._transport,
            # The defaults replace httpx's own of the same name (Accept, ...), by name.
            headers=[("user-agent", config.user_agent), *config.headers],
            timeout=timeout,
            follow_redirects=False,
            cookies=_NoCookieJar(),
            trust_env=False,
        )
        # Built once: each request reuses them rather than merging the client's defaults.
        self._headers = httpx.Headers(self._client.headers)
        self._header_items = self._headers.multi_items()
        self._extensions = {"timeout": timeout.as_dict()}
        self._timeout = _client_timeout(timeout.as_dict())
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close every connection; the fetcher cannot fetch afterwards."""
        client, self._client = self._client, None
        self._transport = None
        if client is not None:
            await client.aclose()

    async def fetch(
        self,
        url: str,
        *,
        redirect_allowed: Callable[[str], bool] | None = None,
        claim_target: Callable[[str], Awaitable[bool]] | None = None,
        method: str = _GET,
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        max_redirects: int | None = None,
        keep_bytes: int | None = None,
        validators_of: str | None = None,
    ) -> FetchResult:
        """GET ``url`` (or send ``method`` with ``body``), following redirects that
        ``redirect_allowed`` (if given) accepts, at most ``max_redirects`` of them (the
        config's if None).

        ``keep_bytes``: a body longer than this is cut there, ``truncated`` (the rest is
        not read), rather than failing the fetch as one over the config's size cap does.

        ``headers`` are sent over the fetcher's own (a name given here replaces its value
        there). A 301, 302 or 303 after a POST (a 303 after anything but HEAD) continues as
        a GET without the body, as browsers do; a 307 or 308 repeats the method and body.

        ``claim_target`` is asked, for each redirect about to be followed as a GET, whether
        this fetch may have that URL; if not (another task fetches it), the redirect is the
        result, ``handed_over``.

        ``validators_of``: the URL the conditional headers among ``headers`` (a revisit's
        `CONDITIONAL_HEADERS`) are of; they go with the request for that URL only, the
        first or a redirect's (None: with the first).
        """
        transport = self._transport
        if transport is None:
            raise RuntimeError("Fetcher.fetch called outside `async with Fetcher(...)`")
        started = time.perf_counter()
        sent, items = self._headers, self._header_items
        if headers:
            sent = httpx.Headers(self._headers)
            sent.update(headers)
            items = sent.multi_items()
        target = _target(url)
        if target is None:
            return FetchResult(url=url, final_url=url, error=ERROR_INVALID_URL)
        chain = _Chain(url, started, sent, items)
        if headers and (held := _conditional_of(headers)):
            chain.conditional = held
            if validators_of is not None:
                chain.conditional_key = url_key(validators_of)
                chain.aim_conditional(url)
        if max_redirects is not None:
            chain.max_redirects = max_redirects
        if keep_bytes is not None:
            chain.keep_bytes = keep_bytes
        hop = _Hop(method.upper(), url, target, body or None)
        with anyio.move_on_after(self.config.total_timeout_s):
            return await self._follow(transport, chain, hop, redirect_allowed, claim_target)
        return self._result(chain, NO_RESPONSE, {}, b"", ERROR_TIMEOUT)

    async def _follow(
        self,
        transport: AiohttpTransport,
        chain: _Chain,
        hop: _Hop,
        redirect_allowed: Callable[[str], bool] | None,
        claim_target: Callable[[str], Awaitable[bool]] | None,
    ) -> FetchResult:
        """Send ``hop`` and the redirects that follow it, until a response that is not a
        redirect, or a redirect that is not followed."""
        seen: set[str] | None = None
        while True:
            try:
                if self.cookies is None:
                    status, headers, raw, body = await self._exchange(transport, chain, hop)
                else:
                    exchange = self._exchange_with_cookies(transport, chain, hop, self.cookies)
                    status, headers, raw, body = await exchange
            except httpx.InvalidURL:
                # Only a redirect's can get here (the URL asked for was checked before
                # sending): httpx refuses it as the cookies' request is built.
                return self._result(chain, NO_RESPONSE, {}, b"", ERROR_INVALID_REDIRECT)
            except httpx.RequestError as exc:
                return self._result(chain, NO_RESPONSE, {}, b"", _reason(exc))
            location = headers.get("location")
            if location is None or status not in REDIRECT_STATUSES:
                if body is None:
                    return self._result(chain, status, headers, b"", self._too_large, raw)
                result = self._result(chain, status, headers, body, None, raw)
                if chain.truncated:
                    return msgspec.structs.replace(result, truncated=True)
                return result
            target = _resolve(httpx.URL(hop.url), location)
            if target is None:
                return self._result(chain, status, headers, b"", ERROR_INVALID_REDIRECT, raw)
            headers["location"] = target
            if seen is None:
                seen = {url_key(chain.url)}
            key = url_key(target)
            error = self._refusal(key in seen, chain, target, redirect_allowed)
            if error is not None:
                return self._result(chain, status, headers, b"", error, raw)
            hop = _redirected(chain, hop, status, target)
            if chain.conditional:
                chain.aim_conditional(target)
            # A task's own URL is a GET's: a redirect that repeats a POST is this fetch's.
            if claim_target is not None and hop.method == _GET and not await claim_target(target):
                stop = self._result(chain, status, headers, b"", None, raw)
                return msgspec.structs.replace(stop, parseable=False, handed_over=True)
            seen.add(key)
            chain.redirects.append(target)

    async def _exchange(self, transport: AiohttpTransport, chain: _Chain, hop: _Hop) -> _Answer:
        """``hop`` sent straight through aiohttp: its status, kept and raw headers, and
        body (None past the size cap); httpx's errors raised for aiohttp's."""
        target = hop.target
        # A redirect's target is worked out here (httpx checked it as it resolved it).
        if target is None and (target := _target(hop.url)) is None:
            raise httpx.UnsupportedProtocol(f"cannot request {hop.url!r}")
        response = await transport.send(hop.method, target, chain.items, hop.content, self._timeout)
        try:
            raw = response.raw_headers
            if _CONTENT_ENCODING in response.headers:
                # httpx decodes (gzip, br, ...): the size cap is the decoded body's.
                decoded = httpx.Response(
                    response.status, headers=raw, stream=_AiohttpStream(response, None)
                )
                body = await self._read(decoded.aiter_bytes(), chain)
            else:
                body = await self._read(_AiohttpStream(response, None), chain)
            return response.status, _kept_headers(raw), raw, body
        finally:
            # A redirect's body is read too, so that its connection can be reused.
            response.release()

    async def _exchange_with_cookies(
        self, transport: AiohttpTransport, chain: _Chain, hop: _Hop, cookies: CookieHook
    ) -> _Answer:
        """``hop`` sent as an httpx request, through ``cookies``' hands both ways."""
        try:
            request = httpx.Request(
                hop.method,
                hop.url,
                headers=chain.headers,
                content=hop.content,
                extensions=self._extensions,
            )
        except httpx.InvalidURL as exc:
            raise httpx.UnsupportedProtocol(str(exc)) from exc  # a redirect's target
        await cookies.add_to(request)
        response = await transport.handle_async_request(request)
        try:
            await cookies.keep_from(response)
            raw = response.headers.raw
            body = await self._read(response.aiter_bytes(), chain)
            return response.status_code, _kept_headers(raw), raw, body
        finally:
            await response.aclose()

    async def fetch_robots(self, site: str) -> FetchResult:
        """``site``'s robots.txt (``scheme://host[:port]``) as RFC 9309 has it fetched:
        up to `ROBOTS_MAX_REDIRECTS` redirects, to any host (each hop through the address
        check all fetches have), and its first `MAX_ROBOTS_BYTES` (the rest not read)."""
        return await self.fetch(
            site + ROBOTS_PATH, max_redirects=ROBOTS_MAX_REDIRECTS, keep_bytes=MAX_ROBOTS_BYTES
        )

    def _refusal(
        self,
        looped: bool,
        chain: _Chain,
        target: str,
        redirect_allowed: Callable[[str], bool] | None,
    ) -> str | None:
        """Why a redirect to ``target`` is not followed, or None to follow it."""
        if looped:
            return ERROR_REDIRECT_LOOP
        limit = self.config.max_redirects if chain.max_redirects is None else chain.max_redirects
        if len(chain.redirects) >= limit:
            return ERROR_TOO_MANY_REDIRECTS
        if redirect_allowed is not None and not redirect_allowed(target):
            return ERROR_REDIRECT_OUT_OF_SCOPE
        return None

    async def _read(self, stream: AsyncIterable[bytes], chain: _Chain) -> bytes | None:
        """The decoded body, or None once it passes the size cap (the rest is not read);
        cut at the chain's ``keep_bytes``, if it has them."""
        keep = chain.keep_bytes
        limit = self.config.max_response_bytes if keep is None else keep
        chunks: list[bytes] = []
        size = 0
        chain.truncated = False
        async for chunk in stream:
            size += len(chunk)
            if size > limit:
                if keep is None:
                    return None
                chunks.append(chunk[: len(chunk) - (size - limit)])
                chain.truncated = True
                break
            chunks.append(chunk)
        return b"".join(chunks)

    def _result(
        self,
        chain: _Chain,
        status: int,
        headers: dict[str, str],
        body: bytes,
        error: str | None,
        raw: Sequence[tuple[bytes, bytes]] = (),
    ) -> FetchResult:
        parseable = False
        if error is None and (content_type := headers.get("content-type")) is not None:
            media_type = content_type.partition(";")[0].strip().lower()
            parseable = media_type in self.config.parse_content_types
        redirects = chain.redirects
        return FetchResult(
            url=chain.url,
            final_url=redirects[-1] if redirects else chain.url,
            status=status,
            headers=headers,
            body=body,
            elapsed_ms=(time.perf_counter() - chain.started) * 1000.0,
            redirects=tuple(redirects),
            error=error,
            parseable=parseable,
            raw_headers=raw,
        )


def _redirected(chain: _Chain, hop: _Hop, status: int, target: str) -> _Hop:
    """The request a redirect (``status`` to ``target``) of ``hop`` leads to; the chain's
    headers become the ones it sends."""
    method = hop.method
    if (status == _SEE_OTHER and method != _HEAD) or (
        status in _POST_BECOMES_GET and method == _POST
    ):
        method = _GET
    content = hop.content if method == hop.method else None
    cross_origin = _origin(httpx.URL(hop.url)) != _origin(httpx.URL(target))
    if method != hop.method or cross_origin:
        headers = httpx.Headers(chain.headers)
        if not content:
            # The body is not sent again: neither is what described it.
            for name in _BODY_HEADERS:
                headers.pop(name, None)
        if cross_origin:
            headers.pop("authorization", None)  # credentials stay with their origin
        chain.headers, chain.items = headers, headers.multi_items()
    return _Hop(method, target, None, content)


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    return url.scheme, url.host, url.port


def _target(url: str) -> yarl.URL | None:
    """What a request for ``url`` is sent to, or None if it is no http(s) URL with a host."""
    if _PLAIN_URL.fullmatch(url) is None or "/." in url:
        try:
            url = str(httpx.URL(url))
        except httpx.InvalidURL:
            return None
    try:
        target = yarl.URL(url)
    except ValueError:  # a port out of range, say
        return None
    if target.scheme not in HTTP_SCHEMES or not target.host:
        return None
    return target


def tls_context() -> ssl.SSLContext:
    """httpx's TLS context (certifi's CA bundle, or SSL_CERT_FILE / SSL_CERT_DIR if set).

    The certificates are read at the context's first connection (``crawler._tls``): a
    crawl with no https URL never reads them. A bundle the environment names is looked at
    now, so that one missing or holding no PEM certificate is one clear error before
    anything is fetched.
    """
    return _tls_context_for(tuple(os.environ.get(name) for name in _CA_ENV))


@functools.lru_cache(maxsize=4)
def _tls_context_for(ca_settings: tuple[str | None, ...]) -> ssl.SSLContext:
    # One per process and CA setting: reading the CA bundle is most of a worker's fetcher
    # set-up, and a crawl that imported this module before forking its workers reads it
    # once for all of them (``fork_children``). Nothing changes a context once built.
    cafile, capath = ca_settings
    # httpx's choice: SSL_CERT_FILE, else SSL_CERT_DIR, else certifi's bundle.
    if not cafile and not capath:
        cafile = certifi.where()
    elif cafile:
        capath = None
    try:
        check_ca_location(cafile, capath)
    except OSError as exc:
        where = {name: os.environ[name] for name in _CA_ENV if name in os.environ}
        shown = ", ".join(f"{name}={value}" for name, value in where.items()) or "certifi's"
        raise ConfigError(
            f"cannot load the CA certificates ({shown}): {exc.strerror or exc}; point "
            "SSL_CERT_FILE at a PEM bundle, or unset it to use certifi's"
        ) from exc
    return deferred_default_context(
        lambda context: context.load_verify_locations(cafile=cafile, capath=capath)
    )


class _Chain:
    """One fetch under way: the URL asked for, the redirects followed, when it started."""

    __slots__ = (
        "conditional",
        "conditional_key",
        "headers",
        "items",
        "keep_bytes",
        "max_redirects",
        "redirects",
        "started",
        "truncated",
        "url",
    )

    def __init__(
        self, url: str, started: float, headers: httpx.Headers, items: list[tuple[str, str]]
    ) -> None:
        self.url = url
        self.started = started
        self.redirects: list[str] = []
        self.headers = headers
        """The headers its requests send (Host and Content-Length added to each)."""
        self.items = items
        """The same as aiohttp takes them: ``headers.multi_items()``."""
        self.max_redirects: int | None = None
        self.keep_bytes: int | None = None
        self.truncated = False
        self.conditional: dict[str, str] = {}
        """A revisit's validators (`CONDITIONAL_HEADERS`): sent with the request for the
        URL they are of only."""
        self.conditional_key: str | None = None
        """That URL's `url_key`; None: the URL asked for (the first request's)."""

    def aim_conditional(self, url: str) -> None:
        """The validators in the headers of the request for ``url`` if they are of it, out
        of them otherwise."""
        wanted = self.conditional_key is not None and url_key(url) == self.conditional_key
        if wanted == (next(iter(self.conditional)) in self.headers):
            return
        headers = httpx.Headers(self.headers)
        if wanted:
            headers.update(self.conditional)
        else:
            for name in self.conditional:
                headers.pop(name, None)
        self.headers, self.items = headers, headers.multi_items()


class _Hop:
    """One request of a fetch: the URL asked for, then each redirect's."""

    __slots__ = ("content", "method", "target", "url")

    def __init__(self, method: str, url: str, target: yarl.URL | None, content: bytes | None):
        self.method = method
        self.url = url
        self.target = target
        """``url`` as aiohttp sends it, None until it is worked out."""
        self.content = content


_Answer = tuple[int, dict[str, str], Sequence[tuple[bytes, bytes]], bytes | None]
"""A hop's status, kept headers, raw headers and body (None past the size cap)."""


class _NoCookieJar(CookieJar):
    """A cookie jar that keeps nothing, so that httpx does not parse every Set-Cookie."""

    def extract_cookies(self, response: HTTPResponse, request: UrllibRequest) -> None:
        """Keep no cookie."""


def _kept_headers(raw: Sequence[tuple[bytes, bytes]]) -> dict[str, str]:
    kept: dict[str, str] = {}
    # One pass over the raw list: each Headers.get would scan and decode all of it.
    for name, value in raw:
        lower = name.lower()
        text = value.decode("latin-1")
        single = _HEADER_NAMES.get(lower)
        if single is not None:
            kept[single] = text  # read by the worker as one value: the last one counts
            continue
        key = lower.decode("latin-1")
        kept[key] = f"{kept[key]}, {text}" if key in kept else text
    return kept


def _resolve(base: httpx.URL, location: str) -> str | None:
    """``location`` as an absolute http(s) URL against ``base``, or None if it is not one."""
    try:
        target = base.join(location.strip())
    except httpx.InvalidURL:
        return None
    if target.scheme not in HTTP_SCHEMES or not target.host:
        return None
    return str(target)


def _conditional_of(headers: Mapping[str, str]) -> dict[str, str]:
    """The `CONDITIONAL_HEADERS` among ``headers``, their names lower-cased."""
    return {
        name.lower(): value
        for name, value in headers.items()
        if name.lower() in CONDITIONAL_HEADERS
    }


def _reason(exc: Exception) -> str:
    """The ``error`` for an exception httpx raised while sending or reading."""
    if isinstance(exc, httpx.ConnectTimeout):
        return ERROR_CONNECT_TIMEOUT
    if isinstance(exc, httpx.ReadTimeout):
        return ERROR_READ_TIMEOUT
    if isinstance(exc, httpx.TimeoutException):
        return ERROR_TIMEOUT
    if isinstance(exc, httpx.ConnectError):
        return _connect_reason(exc)
    if isinstance(exc, httpx.ProxyError):
        return ERROR_PROXY_PREFIX + (str(exc) if exc.__cause__ is None else _proxy_reason(exc))
    if isinstance(exc, httpx.UnsupportedProtocol | httpx.InvalidURL):
        return ERROR_INVALID_URL
    if isinstance(exc, httpx.DecodingError):
        return ERROR_BAD_ENCODING
    if isinstance(exc, httpx.ProtocolError):
        return ERROR_BAD_RESPONSE
    return ERROR_CONNECTION_CLOSED


def _proxy_reason(exc: httpx.ProxyError) -> str:
    cause = exc.__cause__
    if isinstance(cause, aiohttp.ClientHttpProxyError):
        return f"answered HTTP {cause.status}"
    return _connect_reason(exc)


def _connect_reason(exc: BaseException) -> str:
    """Why a connection could not be made, from the OS or TLS error beneath ``exc``."""
    link: BaseException | None = exc
    for _ in range(_MAX_CAUSES):
        if link is None:
            break
        if isinstance(link, AddressRefused):
            return link.reason
        if isinstance(link, ssl.SSLError):
            return ERROR_TLS
        if isinstance(link, socket.gaierror):
            return ERROR_DNS
        if isinstance(link, OSError) and link.errno == errno.ECONNREFUSED:
            return ERROR_CONNECT_REFUSED
        link = link.__cause__ or link.__context__
    return ERROR_CONNECT


# --- the transport ----------------------------------------------------------------------------


class AiohttpTransport(httpx.AsyncBaseTransport):
    """An httpx transport that sends through an aiohttp session, which it owns and closes.

    Redirects are never followed here; the request's ``timeout`` extension maps to the
    session's socket timeouts (``pool`` to aiohttp's ``connect``, which also covers the
    connect itself). aiohttp's errors are raised as the httpx errors httpx's own transport
    raises for the same failure, with the OS or TLS error kept as a cause (a proxy's as
    ``httpx.ProxyError``).

    ``proxies``: every request goes through one of them, chosen by ``rotation``: by the
    request's site (`crawler._identity.proxy_for_site`), or in turn.

    ``guard``: the session connector's resolver, if it checks addresses: a request whose
    host is an address (which aiohttp does not resolve), or any request through a proxy,
    is checked by it before it is sent (``httpx.ConnectError`` from ``AddressRefused``).
    """

    def __init__(
        self,
        session: aiohttp.ClientSession,
        *,
        proxies: tuple[str, ...] = (),
        rotation: ProxyRotation = "site",
        guard: GuardedResolver | None = None,
    ) -> None:
        self._session = session
        self._guard = guard
        self._timeouts_seen: object = None
        self._timeout = session.timeout
        self._proxies = proxies
        self._by_site = rotation == "site"
        self._turns = itertools.cycle(proxies)
        self._site_proxies: dict[tuple[str, str], str] = {}

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request``; the response's body is streamed from the connection."""
        timeouts = request.extensions.get("timeout")
        if timeouts is not self._timeouts_seen:
            # A client passes the same dict with every request: build the aiohttp form once.
            self._timeouts_seen = timeouts
            self._timeout = _client_timeout(timeouts) if timeouts else self._session.timeout
        content = await request.aread()
        try:
            target = yarl.URL(str(request.url))
        except ValueError as exc:
            raise httpx.UnsupportedProtocol(str(exc), request=request) from exc
        headers = request.headers.multi_items()
        response = await self.send(
            request.method, target, headers, content or None, self._timeout, request
        )
        return httpx.Response(
            response.status,
            headers=response.raw_headers,
            stream=_AiohttpStream(response, request),
            request=request,
        )

    async def send(
        self,
        method: str,
        target: yarl.URL,
        headers: list[tuple[str, str]],
        content: bytes | None,
        timeout: aiohttp.ClientTimeout | None,
        request: httpx.Request | None = None,
    ) -> aiohttp.ClientResponse:
        """Send a request to ``target`` through aiohttp alone (no httpx object built);
        its errors raised as httpx's (given ``request``, if any). The response's body is
        the caller's to read and release."""
        if self._guard is not None:
            port = target.port or (443 if target.scheme == "https" else 80)
            try:
                await self._guard.check_host(
                    target.raw_host or "", port, resolve=bool(self._proxies)
                )
            except OSError as exc:  # AddressRefused, or a name that does not resolve
                raise httpx.ConnectError(str(exc), request=request) from exc
        try:
            return await self._session.request(
                method,
                target,
                headers=headers,
                data=content,
                allow_redirects=False,
                timeout=self._session.timeout if timeout is None else timeout,
                proxy=self._proxy(target) if self._proxies else None,
            )
        except (aiohttp.ClientError, OSError) as exc:
            raise _httpx_error(exc, request) from exc

    def _proxy(self, target: yarl.URL) -> str:
        if not self._by_site:
            return next(self._turns)
        key = (target.scheme, target.raw_authority)
        proxy = self._site_proxies.get(key)
        if proxy is None:
            if len(self._site_proxies) >= _MAX_SITES_REMEMBERED:
                self._site_proxies.clear()
            proxy = proxy_for_site(self._proxies, site_of(str(target)))
            self._site_proxies[key] = proxy
        return proxy

    async def aclose(self) -> None:
        """Close the session and its connections."""
        await self._session.close()
        if self._guard is not None:
            await self._guard.close()


class _AiohttpStream(httpx.AsyncByteStream):
    """A response body as aiohttp receives it; closing releases (or drops) the connection."""

    __slots__ = ("_request", "_response")

    def __init__(self, response: aiohttp.ClientResponse, request: httpx.Request | None) -> None:
        self._response = response
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        content = self._response.content
        try:
            while chunk := await content.readany():
                yield chunk
        except (aiohttp.ClientError, OSError) as exc:
            raise _httpx_error(exc, self._request) from exc

    async def aclose(self) -> None:
        # An unfinished body makes aiohttp close the connection rather than reuse it.
        self._response.release()


def _client_timeout(timeouts: dict[str, float | None]) -> aiohttp.ClientTimeout:
    return aiohttp.ClientTimeout(
        total=None,
        connect=timeouts.get("pool"),
        sock_connect=timeouts.get("connect"),
        sock_read=timeouts.get("read"),
    )


def _httpx_error(exc: BaseException, request: httpx.Request | None) -> httpx.TransportError:
    """The httpx error httpx's own transport would raise for aiohttp's ``exc``."""
    message = str(exc) or type(exc).__name__
    error: type[httpx.TransportError]
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        error = httpx.ConnectTimeout
    elif isinstance(exc, TimeoutError):
        error = httpx.ReadTimeout
    elif isinstance(exc, aiohttp.ClientProxyConnectionError | aiohttp.ClientHttpProxyError):
        error = httpx.ProxyError
    elif isinstance(exc, aiohttp.ClientConnectorError):
        error = httpx.ConnectError
    elif isinstance(exc, aiohttp.InvalidURL | aiohttp.NonHttpUrlClientError):
        error = httpx.UnsupportedProtocol
    elif isinstance(exc, aiohttp.ClientResponseError | aiohttp.ClientPayloadError):
        error = httpx.RemoteProtocolError
    else:
        # A reset or a server that hung up: the request may not have been answered.
        error = httpx.ReadError
    return error(message, request=request)
