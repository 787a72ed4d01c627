"""What a crawl says about itself to the sites it fetches, and how it retries: the pure parts.

Parsing and checking of default headers (``--header 'Name: value'``), of the status codes a
fetch is retried on (``--retry-on 429,500-504``) and of proxy URLs, and the choice of a
proxy for a site. Plain functions, importable without the HTTP stack, so the command line
checks its input before a worker starts and every worker makes the same choice.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping
from typing import Literal, get_args
from urllib.parse import urlsplit

from eventlog import ConfigError

ProxyRotation = Literal["site", "request"]
"""``site``: each site always goes through the same proxy (a stable hash of the site);
``request``: the proxies take turns, request after request."""
PROXY_ROTATIONS: tuple[str, ...] = get_args(ProxyRotation)
DEFAULT_PROXY_ROTATION: ProxyRotation = "site"
PROXY_SCHEMES = frozenset({"http", "https"})
"""What aiohttp can send through (no SOCKS)."""

NO_STATUSES = "none"
"""``--retry-on none``: retry no HTTP status (network errors and timeouts still are)."""
MIN_STATUS, MAX_STATUS = 100, 599

_TOKEN_CHARACTERS = frozenset(
    "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
)
"""RFC 9110's ``tchar``: what a header name is made of."""
_PER_REQUEST_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection"})
"""Headers the HTTP client writes for each request: a default for them would break it."""
USER_AGENT_HEADER = "user-agent"
HEADER_EXAMPLE = "'Accept-Language: en'"

Header = tuple[str, str]


def parse_header(text: str) -> Header:
    """``'Name: value'`` as ``(name, value)``, both stripped; ConfigError if malformed."""
    name, colon, value = text.partition(":")
    if not colon:
        raise ConfigError(
            f"header {text!r} has no ':': expected Name: value, e.g. {HEADER_EXAMPLE}"
        )
    return check_header(name.strip(), value.strip())


def check_header(name: str, value: str) -> Header:
    """``(name, value)`` if they make a default header anyone may set; ConfigError if not."""
    if not name or not _TOKEN_CHARACTERS.issuperset(name):
        raise ConfigError(
            f"header name {name!r} is not a token (letters, digits, -, _ …): expected "
            f"Name: value, e.g. {HEADER_EXAMPLE}"
        )
    lower = name.lower()
    if lower == USER_AGENT_HEADER:
        raise ConfigError(
            "the User-Agent header is set by --user-agent (user_agent in crawlog.toml or on "
            "the spider), not as a header"
        )
    if lower in _PER_REQUEST_HEADERS:
        raise ConfigError(f"header {name!r} is written by the HTTP client for each request")
    check_header_value(f"header {name!r}", value)
    return name, value


def check_header_value(what: str, value: str) -> str:
    """``value`` if it is one line of printable ASCII (what httpx sends); ConfigError if not."""
    if not value.isascii() or any((c < " " and c != "\t") or c == "\x7f" for c in value):
        raise ConfigError(f"{what}: value {value!r} is not one line of printable ASCII")
    return value


def merged_headers(*layers: Iterable[Header] | Mapping[str, str]) -> tuple[Header, ...]:
    """Headers of several layers, weakest first: a later layer's header replaces an earlier
    one of the same name (any case), in the earlier one's place. Each is checked."""
    merged: dict[str, Header] = {}
    for layer in layers:
        pairs = layer.items() if isinstance(layer, Mapping) else layer
        for name, value in pairs:
            header = check_header(str(name), str(value))
            merged[header[0].lower()] = header
    return tuple(merged.values())


def parse_statuses(text: str) -> frozenset[int]:
    """``'429,500-504'`` as the set of those codes; ``none`` (or nothing) as the empty set.

    ConfigError naming the part that is not a code (100-599) or a range of codes.
    """
    stripped = text.strip()
    if not stripped or stripped.lower() == NO_STATUSES:
        return frozenset()
    codes: set[int] = set()
    for part in stripped.split(","):
        low, dash, high = part.strip().partition("-")
        try:
            first = int(low)
            last = int(high) if dash else first
        except ValueError:
            raise ConfigError(_not_statuses(text, part)) from None
        if not (MIN_STATUS <= first <= last <= MAX_STATUS):
            raise ConfigError(_not_statuses(text, part))
        codes.update(range(first, last + 1))
    return frozenset(codes)


def _not_statuses(text: str, part: str) -> str:
    return (
        f"status codes {text!r}: {part.strip()!r} is not an HTTP status ({MIN_STATUS}-"
        f"{MAX_STATUS}) or a range of them; expected e.g. 429,500-504, or {NO_STATUSES}"
    )


def format_statuses(codes: Iterable[int]) -> str:
    """The codes as `parse_statuses` reads them, runs written as ranges: ``429,500-504``."""
    ordered = sorted(set(codes))
    if not ordered:
        return NO_STATUSES
    runs: list[str] = []
    start = previous = ordered[0]
    for code in [*ordered[1:], None]:
        if code is not None and code == previous + 1:
            previous = code
            continue
        runs.append(str(start) if start == previous else f"{start}-{previous}")
        if code is not None:
            start = previous = code
    return ",".join(runs)


def check_proxy(url: str) -> str:
    """``url`` if it is an http(s) proxy URL with a host; ConfigError if not."""
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 - raises for a port that is not a number
    except ValueError as exc:
        raise ConfigError(f"proxy {url!r} is not a URL ({exc})") from None
    if parts.scheme.lower() not in PROXY_SCHEMES or not parts.hostname:
        raise ConfigError(
            f"proxy {url!r} is not an http(s) URL with a host, such as http://127.0.0.1:3128"
        )
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ConfigError(f"proxy {url!r} has a path or query: a proxy is only scheme://host:port")
    return url.strip()


def proxy_for_site(proxies: tuple[str, ...], site: str) -> str:
    """The proxy that ``site`` (``scheme://host[:port]``) always goes through.

    CRC-32 of the site, not ``hash()`` (salted per process): every worker, and a task
    resumed on another worker, chooses the same one.
    """
    if not proxies:
        raise ValueError("no proxies to choose from")
    return proxies[zlib.crc32(site.encode()) % len(proxies)]
