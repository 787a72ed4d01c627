"""What a fetch is configured with and what it gives back: `FetchConfig`, `FetchResult` and
the reasons a result names in ``error``.

Apart from `crawler._fetch` (the `Fetcher`, which imports aiohttp and httpx) so that a
worker can start, and take a restart's pending list back, while that HTTP stack loads in
a thread (see `crawler._worker`); `crawler._fetch` re-exports every name here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from importlib import metadata
from typing import Final

import msgspec

from crawler._addresses import AddressPolicy
from crawler._identity import (
    DEFAULT_PROXY_ROTATION,
    PROXY_ROTATIONS,
    Header,
    ProxyRotation,
    check_header,
    check_header_value,
    check_proxy,
)
from eventlog import ConfigError


def _package_version() -> str:
    try:
        return metadata.version("crawlog")
    except metadata.PackageNotFoundError:
        return "0"


DEFAULT_USER_AGENT: Final = f"crawlog/{_package_version()}"
DEFAULT_CONNECT_TIMEOUT_S = 10.0
DEFAULT_READ_TIMEOUT_S = 30.0
"""The longest wait for the next bytes of a response (its head or its body)."""
DEFAULT_TOTAL_TIMEOUT_S = 60.0
"""The longest a whole fetch may take: every redirect hop and the body included."""
DEFAULT_MAX_RESPONSE_BYTES = 10 * 1024 * 1024
DEFAULT_MAX_REDIRECTS = 10
DEFAULT_PARSE_CONTENT_TYPES = frozenset({"text/html", "application/xhtml+xml"})
DEFAULT_MAX_CONNECTIONS = 100
"""Open connections per fetcher (per worker), over all hosts."""

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
KEPT_HEADERS = ("content-type", "retry-after", "location")
"""The response headers the worker reads, each as one value (a repeated one: its last)."""

# The reasons a result gives in ``error``; see also `too_large`.
ERROR_TIMEOUT = "timeout"
"""The whole fetch took longer than ``total_timeout_s``."""
ERROR_CONNECT_TIMEOUT = "connect timeout"
ERROR_READ_TIMEOUT = "read timeout"
ERROR_CONNECT_REFUSED = "connect refused"
ERROR_DNS = "DNS failure"
ERROR_TLS = "TLS error"
ERROR_CONNECT = "connect error"
"""A connection could not be made for another reason (host unreachable, …)."""
ERROR_CONNECTION_CLOSED = "connection closed"
"""The connection broke (reset, closed by the server) before the response was complete."""
ERROR_BAD_RESPONSE = "bad response"
"""The server's answer is not valid HTTP (malformed head, truncated body)."""
ERROR_BAD_ENCODING = "bad content encoding"
ERROR_INVALID_URL = "invalid URL"
ERROR_PROXY_PREFIX = "proxy "
"""The start of the ``error`` of a fetch its proxy failed: ``proxy connect refused``, ``proxy
answered HTTP 407``, … (retried as a connect error is)."""
ERROR_INVALID_REDIRECT = "invalid redirect"
"""A redirect's Location is not an http(s) URL."""
ERROR_REDIRECT_LOOP = "redirect loop"
ERROR_TOO_MANY_REDIRECTS = "too many redirects"
ERROR_REDIRECT_OUT_OF_SCOPE = "redirect out of scope"

NO_RESPONSE = 0
"""The ``status`` of a result for which no response arrived."""
CONDITIONAL_HEADERS: Final = frozenset({"if-none-match", "if-modified-since"})
"""A revisit's validators, lower-cased: sent only with the request for the URL they are of
(``validators_of``), not to a redirect's other target: they belong to their resource
(RFC 9110, section 15.4), and a 304 from another URL says nothing of the page."""


ERROR_TOO_LARGE_PREFIX = "response larger than "


def too_large(limit: int) -> str:
    """The ``error`` of a response whose body exceeds ``limit`` bytes."""
    return f"{ERROR_TOO_LARGE_PREFIX}{limit} bytes"


class FetchConfig(msgspec.Struct, frozen=True, kw_only=True):
    """How a :class:`Fetcher` fetches: timeouts, limits and what counts as a parseable page."""

    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S
    """Seconds to open a connection (TLS handshake included)."""
    read_timeout_s: float = DEFAULT_READ_TIMEOUT_S
    total_timeout_s: float = DEFAULT_TOTAL_TIMEOUT_S
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    """A body (after content decoding) larger than this is not kept: the fetch fails."""
    max_redirects: int = DEFAULT_MAX_REDIRECTS
    user_agent: str = DEFAULT_USER_AGENT
    parse_content_types: frozenset[str] = DEFAULT_PARSE_CONTENT_TYPES
    """Media types (lowercase, no parameters) a result calls ``parseable``. The worker does
    not ask: which responses reach a spider is the spider's ``content_types``."""
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    max_connections_per_host: int | None = None
    """None: no cap per host here (per-host politeness is the worker's gate's job)."""
    headers: tuple[Header, ...] = ()
    """Default headers of every request, over httpx's own (Accept, …); a request's own
    headers replace them by name."""
    proxies: tuple[str, ...] = ()
    """http(s) proxy URLs every request goes through; none: requests go direct."""
    proxy_rotation: ProxyRotation = DEFAULT_PROXY_ROTATION
    """How a request's proxy is chosen among ``proxies`` (see `ProxyRotation`)."""
    addresses: AddressPolicy | None = None
    """The addresses every hop of a fetch may connect to (`crawler._addresses`); None: any
    (a fetcher of one's own). A job's fetchers always have one (`JobConfig.fetch_config`)."""

    def __post_init__(self) -> None:
        for name in ("connect_timeout_s", "read_timeout_s", "total_timeout_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ConfigError(f"{name.replace('_', ' ')} {value} is not a positive number")
        if self.max_response_bytes < 1:
            raise ConfigError(f"max response bytes {self.max_response_bytes} is not 1 or more")
        if self.max_redirects < 0:
            raise ConfigError(f"max redirects {self.max_redirects} is negative")
        if self.max_connections < 1:
            raise ConfigError(f"max connections {self.max_connections} is not 1 or more")
        per_host = self.max_connections_per_host
        if per_host is not None and per_host < 1:
            raise ConfigError(f"max connections per host {per_host} is not 1 or more")
        if not self.user_agent.strip():
            raise ConfigError("user agent is empty")
        check_header_value("user agent", self.user_agent)
        for name, value in self.headers:
            check_header(name, value)
        for proxy in self.proxies:
            check_proxy(proxy)
        if self.proxy_rotation not in PROXY_ROTATIONS:
            raise ConfigError(
                f"proxy rotation {self.proxy_rotation!r} is not one of {', '.join(PROXY_ROTATIONS)}"
            )
        for media_type in self.parse_content_types:
            if media_type != media_type.strip().lower() or media_type.count("/") != 1:
                raise ConfigError(
                    f"parse content type {media_type!r} is not a lowercase type/subtype "
                    "such as text/html"
                )


class FetchResult(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """What one fetch got: a response (any status), or the reason there is none to use."""

    url: str
    """The URL asked for."""
    final_url: str
    """The URL that answered last (after redirects), or that was being fetched on error."""
    status: int = NO_RESPONSE
    """The last response's HTTP status; 0 when no response arrived."""
    headers: dict[str, str] = {}
    """Every header of the last response, by lowercase name; a repeated one joined with
    ", " (but those of `KEPT_HEADERS`: their last value). ``location`` is resolved to an
    absolute URL."""
    raw_headers: Sequence[tuple[bytes, bytes]] = ()
    """The last response's headers as received, in order, repeated ones each on their own
    (the client's own list, not a copy: read only for a failed task's evidence)."""
    body: bytes = b""
    """The decoded body; empty on error."""
    elapsed_ms: float = 0.0
    redirects: tuple[str, ...] = ()
    """The URLs redirected to, in order (the last is ``final_url``)."""
    error: str | None = None
    """None, or why the fetch has no usable page: a timeout, a refused connection, a
    redirect not followed, an oversized body. An HTTP error status is not an error here."""
    parseable: bool = False
    """No error, and the content type is one of the config's parse content types."""
    handed_over: bool = False
    """A redirect not followed because another task fetches its target (``location``)."""
    truncated: bool = False
    """The body is the first bytes of a longer one (a fetch given ``keep_bytes``)."""
    requested: bool = True
    """False when no request for the page was made (robots.txt could not be read): there
    is no page fetch to record, only the reason the task waits."""

    @property
    def content_type(self) -> str | None:
        """The Content-Type header, if any."""
        return self.headers.get("content-type")

    @property
    def retry_after(self) -> str | None:
        """The Retry-After header, if any (see `crawler._backoff.retry_after_seconds`)."""
        return self.headers.get("retry-after")

    @property
    def location(self) -> str | None:
        """The Location of a redirect that was not followed, as an absolute URL."""
        return self.headers.get("location")
