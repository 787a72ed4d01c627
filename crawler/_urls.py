"""URLs as the crawler keys them: canonical form, link resolution, fingerprints and sites.

Parsing, IDNA, default ports, dot segments and percent-encoding are yarl's (its C parser
resolves and normalises a page's links faster than ``urljoin`` followed by w3lib's
``canonicalize_url``, as ``python tools/bench_links.py`` measures). What is added here is what
dedup needs on top: no fragment, a stable parameter order, ``/`` for an empty path, and a
refusal of anything that is not an http(s) URL with a plausible host.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from hashlib import blake2b
from typing import Final, Literal, cast, get_args

from yarl import URL

from eventlog import ConfigError

HTTP_SCHEMES = frozenset({"http", "https"})
FINGERPRINT_BYTES = 8
"""16 hex characters: collisions stay unlikely up to billions of URLs in one job."""

# Code points a host never contains (WHATWG "forbidden domain code points", less ":" which
# yarl leaves in an IPv6 address's unbracketed host).
_FORBIDDEN_IN_HOST = frozenset('\x00\t\n\r #%/<>?@[\\]^|"{}`\x7f') | frozenset(
    chr(code) for code in range(0x20)
)
# As browsers do: an href loses C0 controls and spaces at its ends, and tabs and newlines
# anywhere (a URL wrapped over lines in the HTML); other whitespace is percent-encoded.
_TRIMMED_FROM_HREF = "".join(chr(code) for code in range(0x21))
_DROPPED_FROM_HREF = str.maketrans("", "", "\t\n\r")
_WHITESPACE = frozenset(" \t\n\r\f\v")
_SEED_EXAMPLE = "https://example.com/docs/"


def _http_url(url: URL) -> URL:
    """``url`` itself if it is an absolute http(s) URL with a valid host, else ValueError."""
    if url.scheme not in HTTP_SCHEMES:
        raise ValueError(f"not an http(s) URL (scheme {url.scheme!r})")
    host = url.raw_host
    if not host:
        raise ValueError("has no host")
    if not _FORBIDDEN_IN_HOST.isdisjoint(host):
        raise ValueError(f"host {host!r} contains characters a host cannot have")
    return url


def _serialise(url: URL) -> str:
    """The canonical text of an absolute http(s) URL that yarl has already normalised."""
    query = url.raw_query_string
    if query:
        # Sorted by key only, and stably: repeated keys keep their order, which can matter.
        pairs = [pair for pair in query.split("&") if pair]
        pairs.sort(key=_query_key)
        query = "?" + "&".join(pairs) if pairs else ""
    userinfo = ""
    if url.raw_user is not None:
        password = url.raw_password
        userinfo = f"{url.raw_user}:{password}@" if password is not None else f"{url.raw_user}@"
    return f"{url.scheme}://{userinfo}{url.host_port_subcomponent}{url.raw_path or '/'}{query}"


def _query_key(pair: str) -> str:
    return pair.partition("=")[0]


def parse_url(text: str) -> URL:
    """``URL(text)``, with ValueError for any text yarl cannot split: it raises IndexError
    for some authorities (``//[]@``, an empty host after userinfo), which would otherwise
    escape every ``except ValueError`` that guards an href a page or a spider gave."""
    try:
        return URL(text)
    except IndexError:
        raise ValueError(f"{text!r} does not parse as a URL") from None


def canonical_url(url: str) -> str:
    """The form of an http(s) URL used for dedup; ValueError if it is not one.

    Scheme and host lowercased (IDNA hosts in punycode), default port dropped, fragment
    dropped, query parameters in a stable order, percent-encoding normalised, dot segments
    resolved, ``/`` for an empty path. ``canonical_url(canonical_url(u)) == canonical_url(u)``.
    """
    return _serialise(_http_url(parse_url(url)))


def url_key(url: str) -> str:
    """What makes two URLs the same request target: the canonical form (`canonical_url`),
    or the URL itself if it has none."""
    try:
        return canonical_url(url)
    except ValueError:
        return url


def clean_href(href: str) -> str:
    """An href as a browser reads it: ends trimmed, tabs and newlines dropped."""
    href = href.strip(_TRIMMED_FROM_HREF)
    if "\t" in href or "\n" in href or "\r" in href:
        href = href.translate(_DROPPED_FROM_HREF)
    return href


def join_href(href: str, base: URL) -> str | None:
    """The canonical absolute URL an href (already cleaned) points to from ``base``, if it is
    http(s); None for other schemes and for hrefs that do not parse."""
    try:
        return _serialise(_http_url(_join(base, href)))
    except ValueError:  # yarl's parse errors, IDNA's UnicodeError, and _http_url's own
        return None


_PLAIN_PATH_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._/")


def is_plain_path(href: str) -> bool:
    """Whether ``href`` (cleaned, fragment dropped) is a relative path of unreserved
    characters and ``/`` only, without dot or empty segments (``page-7.html``,
    ``api/v2/``): resolving it only appends it to its base's directory, so its `join_href`
    is `directory_prefix` of the base followed by the href itself."""
    if not href or not _PLAIN_PATH_CHARS.issuperset(href):
        return False
    # Segments between slashes, as text: no empty one but the last ("//", or a leading
    # "/"), and no "." or ".." anywhere (the last one's closed by the slash added).
    opened = "/" + href
    closed = opened + "/"
    return "//" not in opened and "/./" not in closed and "/../" not in closed


FROM_ROOT: Final = -1
"""`plain_path_ups` of an href that opens with one ``/`` (``/api/x.html``): from the root."""


def plain_path_ups(href: str) -> tuple[int, str] | None:
    """``href`` (cleaned, fragment dropped) as leading ``../`` segments and a plain path
    (`is_plain_path`) after them: (how many ``../``, the plain path); for one ``/`` and a
    plain path or nothing after it, (`FROM_ROOT`, the rest); None if it is of neither form.
    Its `join_href` is ``directory_prefix(base, ups) + path``."""
    if href[:1] == "/":
        rest = href[1:]
        return (FROM_ROOT, rest) if not rest or is_plain_path(rest) else None
    ups, path = 0, href
    while path.startswith("../"):
        ups, path = ups + 1, path[3:]
    return (ups, path) if is_plain_path(path) else None


_PROBE = "x"


def directory_prefix(base: URL, ups: int = 0) -> str | None:
    """The canonical text of ``base``'s directory, ``ups`` levels up (never above the
    root; the root for `FROM_ROOT`), to which a plain path (`is_plain_path`) is appended
    to resolve ``"../" * ups`` (or ``/``) and that path: what `join_href` gives a
    one-letter file name there, less that letter; None if that does not resolve (a base
    that is not http(s))."""
    probe = join_href(("/" if ups == FROM_ROOT else "../" * ups) + _PROBE, base)
    if probe is None or not probe.endswith(_PROBE):
        return None
    return probe[: -len(_PROBE)]


BasePart = Literal["none", "scheme", "origin", "directory", "document"]
"""How much of a base URL resolving an href reads: nothing (``https://host/x``), its scheme
(``//host/x``), its origin (``/x``), its directory (``x``, ``../x``, ``./x``) or the whole
document but the fragment (``?q``, and the empty href)."""
BASE_PARTS: Final[tuple[BasePart, ...]] = get_args(BasePart)
_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+-.")


def base_part(href: str) -> BasePart:
    """The part of its base that ``href`` (cleaned, fragment dropped) resolves against: two
    bases alike in that part give it the same `join_href`. Pages share their directory and
    origin, so a crawl can resolve an href once for all the pages of a directory.

    An href with a scheme other than http(s) (``mailto:``) reads nothing: it is not http(s)
    from any base. Anything unusual reads the whole document: a colon before the first
    ``/`` or ``?`` (an http(s) scheme, or what a parser might take for a scheme) unless it
    opens ``scheme://`` and a host.
    """
    if not href or href[0] == "?":
        return "document"
    if href[0] == "/":
        if not href.startswith("//"):
            return "origin"
        return "scheme" if _opens_a_host(href[2:3]) else "document"
    colon = href.find(":")
    if colon < 0:
        return "directory"
    first = href[:colon]
    if "/" in first or "?" in first:
        return "directory"  # the colon is in a later segment or the query
    if first[:1].isascii() and first[:1].isalpha() and _SCHEME_CHARS.issuperset(first):
        if first.lower() not in HTTP_SCHEMES:
            # ``mailto:``, ``javascript:``: a scheme of its own, never http(s) from any base.
            return "none"
        if href.startswith("//", colon + 1) and _opens_a_host(href[colon + 3 : colon + 4]):
            return "none"
    return "document"


def _opens_a_host(first: str) -> bool:
    # An authority without a host ("http:///x", "//", "http://") is filled from the base
    # by yarl's join: such an href reads the whole base.
    return first.isascii() and (first.isalnum() or first == "[")


def base_key(base: URL, part: BasePart) -> str:
    """The text of ``base``'s ``part`` (`base_part`): equal keys, equal resolutions."""
    if part == "none":
        return ""
    if part == "scheme":
        return f"{base.scheme}:"
    origin = f"{base.scheme}://{base.raw_authority}"
    if part == "origin":
        return origin
    path = base.raw_path
    if part == "directory":
        return origin + path[: path.rfind("/") + 1]
    return f"{origin}{path}?{base.raw_query_string}"


def _join(base: URL, href: str) -> URL:
    reference = parse_url(href)
    merge_path = reference.raw_path
    if (
        "%" in base.raw_path
        and merge_path
        and merge_path[0] != "/"
        and not reference.scheme
        and not reference.raw_authority
    ):
        # yarl's join merges a relative path with the *decoded* base directory, so an
        # escaped "/" or space there would change the path (aio-libs/yarl#1774): merge the
        # raw text instead, and let the parser resolve dot segments.
        directory = base.raw_path[: base.raw_path.rfind("/") + 1]
        return parse_url(f"{base.scheme}://{base.raw_authority}{directory}{href}")
    return base.join(reference)


DropReason = Literal[
    "not http(s)", "malformed", "out of scope", "too deep", "denied by rule", "past --max-pages"
]
"""Why a URL a spider yielded is not crawled: counted by reason, never raised."""
DROP_REASONS: Final[tuple[DropReason, ...]] = get_args(DropReason)


@dataclass(frozen=True, slots=True)
class Dropped:
    """A URL a spider yielded that is not crawled, and why."""

    reason: DropReason


NOT_HTTP: Final[Dropped] = Dropped("not http(s)")
MALFORMED: Final[Dropped] = Dropped("malformed")


def resolve_yielded(url: str, base: URL | Callable[[], URL]) -> str | Dropped:
    """A URL a spider yielded, resolved against ``base`` (the page's URL or ``<base
    href>``) as a browser resolves an href: its canonical http(s) form, or why it has none.

    ``base`` may be a function, called only for a relative URL (finding a page's ``<base
    href>`` costs a parse). Never raises: ``mailto:``, ``javascript:`` and other schemes
    are "not http(s)"; text that does not parse, or an http(s) URL without a valid host, is
    "malformed".
    """
    href = clean_href(url)
    try:
        reference = parse_url(href)
    except ValueError:  # yarl's parse errors and IDNA's UnicodeError
        return MALFORMED
    if reference.scheme and reference.scheme not in HTTP_SCHEMES:
        return NOT_HTTP
    try:
        if reference.scheme and reference.raw_authority:
            joined = reference  # absolute (already normalised): the base plays no part
        else:
            joined = _join(base() if callable(base) else base, href)
        if joined.scheme not in HTTP_SCHEMES:
            return NOT_HTTP  # only when the base itself is not http(s)
        return _serialise(_http_url(joined))
    except ValueError:
        return MALFORMED


RESOLVED_URLS_KEPT = 100_000
"""Absolute URLs a `ResolvedUrls` keeps (a few tens of MB at most)."""


class ResolvedUrls:
    """`resolve_yielded` of the URLs a worker's spider yields, with the GET fingerprint of
    each, the absolute ones (base_part "none", so alike from any page) resolved once while
    kept: a spider yields the same navigation URLs on every page. Bounded: past
    ``max_entries`` the oldest goes."""

    __slots__ = ("_fingerprints", "_kept", "max_entries")

    def __init__(self, max_entries: int = RESOLVED_URLS_KEPT) -> None:
        self.max_entries = max_entries
        self._kept: dict[str, tuple[str, str] | Dropped] = {}
        self._fingerprints: dict[str, str] = {}
        """Canonical URL → its `fingerprint_canonical`, oldest first."""

    def __len__(self) -> int:
        """How many yielded URLs are kept."""
        return len(self._kept)

    def resolve(self, url: str, base: URL | Callable[[], URL]) -> tuple[str, str] | Dropped:
        """(`resolve_yielded` of ``url``, its `fingerprint_canonical`), or why it is dropped."""
        kept = self._kept
        known = kept.get(url)
        if known is not None:
            return known
        resolved = resolve_yielded(url, base)
        result: tuple[str, str] | Dropped = (
            resolved
            if isinstance(resolved, Dropped)
            else (resolved, fingerprint_canonical(resolved))
        )
        if base_part(url) == "none":
            kept[url] = result
            if len(kept) > self.max_entries:
                del kept[next(iter(kept))]
        return result

    def fingerprints(self, urls: list[str]) -> list[str]:
        """The `fingerprint_canonical` of each of ``urls`` (canonical already: what
        `resolve` gives them back as), the kept ones by one C-level lookup of them all."""
        kept = self._fingerprints
        found: list[str | None] = list(map(kept.get, urls))
        if None not in found:
            return cast("list[str]", found)
        fingerprints = [
            fp if fp is not None else fingerprint_canonical(url)
            for url, fp in zip(urls, found, strict=True)
        ]
        kept.update(zip(urls, fingerprints, strict=True))
        while len(kept) > self.max_entries:
            del kept[next(iter(kept))]
        return fingerprints


def fingerprint(url: str) -> str:
    """A short stable hash of the canonical URL: the task id and the dedup key."""
    return fingerprint_canonical(canonical_url(url))


def fingerprint_canonical(url: str) -> str:
    """`fingerprint` of a URL already in canonical form (no second parse)."""
    return blake2b(url.encode(), digest_size=FINGERPRINT_BYTES).hexdigest()


def request_fingerprint(url: str, method: str = "GET", body: bytes | None = None) -> str:
    """The dedup key (and task id) of a request of a URL already in canonical form.

    A GET without a body is keyed by its URL alone, as every task was before requests had
    methods (the ``seen`` set of an existing job stays valid). Any other request is keyed by
    its method, URL and body: two POSTs of one form with different fields are two tasks,
    the same POST twice is one. The method ends at a space and the URL at a newline, which
    neither contains, so no two requests share the text that is hashed; a canonical URL
    starts with its scheme, never with a method and a space, so neither does a GET.
    """
    if method == "GET" and not body:
        return fingerprint_canonical(url)
    keyed = f"{method} {url}\n".encode() + (body or b"")
    return blake2b(keyed, digest_size=FINGERPRINT_BYTES).hexdigest()


def site_of(url: str) -> str:
    """``scheme://host[:port]`` (port only when not the default): what politeness keys on."""
    parsed = _http_url(parse_url(url))
    return f"{parsed.scheme}://{parsed.host_port_subcomponent}"


def check_seed_url(url: str) -> str:
    """A seed URL given by the user, canonical; ConfigError saying what is wrong if invalid."""
    expected = f"expected an absolute http(s) URL such as {_SEED_EXAMPLE}"
    if not url or not url.strip():
        raise ConfigError(f"seed URL is empty: {expected}")
    if not _WHITESPACE.isdisjoint(url):
        raise ConfigError(f"seed {url!r} contains whitespace: {expected}")
    try:
        parsed = parse_url(url)
    except ValueError as error:
        raise ConfigError(f"seed {url!r} cannot be parsed ({error}): {expected}") from None
    if not parsed.scheme:
        raise ConfigError(f"seed {url!r} has no scheme: {expected}")
    if parsed.scheme not in HTTP_SCHEMES:
        raise ConfigError(f"seed {url!r} is not an http(s) URL: {expected}")
    try:
        return _serialise(_http_url(parsed))
    except ValueError as error:
        raise ConfigError(f"seed {url!r} {error}: {expected}") from None
