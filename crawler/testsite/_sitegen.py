"""The test site's pages, generated: pure and deterministic in (pages, seed, faults, origin).

:class:`SiteMap` defines a site of ``pages`` detail pages ``/item/1`` … ``/item/N``, sorted
into categories whose paginated listings ``/list/<category>?page=k`` link every item, and a
home page ``/`` linking every category. Detail pages are shaped like documentation pages:
10 to 100 KiB each, 50 to 200 links to other detail pages in the forms real pages use (absolute
path, relative, ``./``, ``../``, absolute and scheme-relative URLs, fragments, whitespace
inside the attribute, single quotes, a ``<base href>`` on some pages) and a few links out of
scope (another host, ``mailto:``, ``javascript:``, ``tel:``, ``ftp:``).

Nothing is stored per page: a page is rendered when asked for, from a seeded generator and
a shared pool of text, in well under a millisecond, so a site of 20,000 pages costs
nothing to define. Which pages a crawler can reach is known from the structure, not by
rendering every page (:attr:`SiteMap.reachable`).

The opt-in faults (:class:`Faults`) that change *what* the site is — redirecting links, a
redirect loop, a huge page, a robots.txt-disallowed prefix — are part of the map; the ones
that change *how a request is answered* — 500s and 429s that recover, slow responses — are
a :class:`FaultPlan` per path that the server applies, since they depend on how many times
a path was requested.
"""

from __future__ import annotations

import functools
import math
import random
import struct
import zlib
from collections.abc import Mapping
from typing import Final, Literal, get_args
from urllib.parse import urlsplit

import msgspec

from crawler.testsite._docs import DocsSite
from crawler.testsite._linkdense import LinkDenseSite
from crawler.testsite._scripted import ScriptedSite
from eventlog import ConfigError

HTML = "text/html; charset=utf-8"
Layout = Literal["default", "link-dense", "scripted", "docs"]
"""What the site is shaped like: item pages and listings, a documentation site whose
pages repeat hundreds of navigation links (:mod:`crawler.testsite._linkdense`), a shop
whose links only scripts write (:mod:`crawler.testsite._scripted`), or an ordinary
documentation site of small pages (:mod:`crawler.testsite._docs`)."""
LAYOUTS: Final[tuple[Layout, ...]] = get_args(Layout)
TEXT = "text/plain; charset=utf-8"

HOME_PATH = "/"
ROBOTS_PATH = "/robots.txt"
ITEM_PREFIX = "/item/"
LIST_PREFIX = "/list/"
MOVED_PREFIX = "/moved/"
"""``/moved/<n>`` answers 301 with an absolute Location: the item's canonical URL."""
GO_PREFIX = "/go/"
"""``/go/<n>`` answers 302 with a relative Location: ``/item/<n>``."""
LOOP_PATHS = ("/loop/a", "/loop/b")
HUGE_PATH = "/huge"
SECRET_NAME = "secret-"
SITE_PREFIXES = (
    ITEM_PREFIX,
    LIST_PREFIX,
    MOVED_PREFIX,
    GO_PREFIX,
    "/loop/",
    HUGE_PATH,
    ROBOTS_PATH,
)
"""Where the site's own pages live; a robots.txt-disallowed prefix must stay clear of them."""

MIN_PAGE_BYTES = 10 * 1024
MAX_PAGE_BYTES = 100 * 1024
MIN_LINKS = 50
MAX_LINKS = 200
MIN_BYTES_PER_LINK = 100
"""A page has at most size/100 links, so that its link markup leaves room for its text."""
LINKS_PER_SECTION = 12
ITEMS_PER_LISTING = 20
ITEMS_PER_CATEGORY = 100
"""Aimed-for category size: more pages make more categories, up to one per name."""
CATEGORY_NAMES = (
    "guides",
    "reference",
    "tutorials",
    "api",
    "howto",
    "concepts",
    "recipes",
    "changelog",
    "faq",
    "internals",
    "plugins",
    "examples",
    "migration",
    "security",
    "deployment",
    "glossary",
)
HOME_ITEMS = 10
BASE_HREF_SHARE = 0.1
"""Share of detail pages with ``<base href>``: relative links resolve against it, not the page."""
REDIRECT_EVERY = 10
"""With redirects on, every tenth item page (1, 11, 21…) links a 301 and a 302 redirect."""
SECRET_PAGES = 3
DEFAULT_HUGE_PAGE_BYTES = 20 * 1024 * 1024
POOL_CHARS = 128 * 1024
MAX_SEED = 2**32 - 1
MAX_PAGES = 10_000_000
PAGE_CACHE_SIZE = 256
"""Rendered pages kept: a crawl asks for each page about once, a benchmark for a few often."""

# (markup before the target number, after it, weight); {o} is the origin, {h} host:port.
# ``rel`` forms differ on pages with <base href="{origin}/">, where "item/" is needed.
_IN_SCOPE_FORMS: tuple[tuple[str, str, str, int], ...] = (
    ('<a href="/item/', '"', '<a href="/item/', 30),
    ('<a href="', '"', '<a href="item/', 14),
    ('<a href="./', '"', '<a href="./item/', 5),
    ('<a href="../item/', '"', '<a href="../item/', 5),
    ('<a href="{o}/item/', '"', '<a href="{o}/item/', 14),
    ('<a href="//{h}/item/', '"', '<a href="//{h}/item/', 5),
    ('<a href="/item/', '#s2"', '<a href="/item/', 10),
    ('<a href="', '#s1"', '<a href="item/', 4),
    ('<a href="  /item/', '\n "', '<a href="  /item/', 5),
    ("<a href='/item/", "'", "<a href='/item/", 5),
)
_OUT_OF_SCOPE_LINKS = (
    '<a href="http://other.invalid/item/{t}">elsewhere</a>',
    '<a href="https://docs.other.invalid/">other docs</a>',
    '<a href="mailto:docs@other.invalid">mail us</a>',
    '<a href="javascript:void(0)">toggle</a>',
    '<a href="tel:+15550100">call</a>',
    '<a href="ftp://other.invalid/pub/{t}.tar.gz">download</a>',
    '<a href="#top">top</a>',
)
OUT_OF_SCOPE_SHARE = 0.05

_WORD_TEXT = (
    "the a an of to in for on with by from as is are be can will may must should request "
    "response server client page link crawl crawler worker task event log stream queue lease "
    "checkpoint resume retry timeout header body cache index site host path query fragment "
    "scheme redirect status error config option value field record entry batch commit order "
    "state fold replay archive segment schema version item listing category section example "
    "default returns raises yields parameter argument function method class module package "
    "install run start stop open close read write append claim finish fail pause report "
    "process thread loop socket connection keep alive pipeline buffer limit rate delay size "
    "first last next previous new old each every any none all more less most fast slow safe "
    "simple exact one two three many few this that these those when where which while after "
    "before until unless because therefore however also only still again never always"
)
_WORDS = tuple(_WORD_TEXT.split())


class Faults(msgspec.Struct, frozen=True, kw_only=True):
    """Which faults the test site injects; every one is off by default.

    Rates are the share of paths affected, chosen per path from the seed, so the same site
    fails the same way every run.
    """

    error_500_rate: float = 0.0
    """Share of paths whose first ``error_500_times`` requests answer 500."""
    error_500_times: int = 2
    throttle_429_rate: float = 0.0
    """Share of paths whose first ``throttle_429_times`` requests answer 429 + Retry-After."""
    throttle_429_times: int = 1
    retry_after_s: int = 1
    slow_rate: float = 0.0
    """Share of paths answered only after ``slow_s`` seconds, on every request."""
    slow_s: float = 0.0
    redirects: bool = False
    """Some item pages link ``/moved/<n>`` (301) and ``/go/<n>`` (302) to canonical items."""
    redirect_loop: bool = False
    """The home page links ``/loop/a``, which redirects to ``/loop/b`` and back, forever."""
    huge_page: bool = False
    """The home page links ``/huge``, a page of ``huge_page_bytes``."""
    huge_page_bytes: int = DEFAULT_HUGE_PAGE_BYTES
    robots_disallow: str | None = None
    """A path prefix robots.txt disallows; pages under it are linked from the home page."""

    def __post_init__(self) -> None:
        for name in ("error_500_rate", "throttle_429_rate", "slow_rate"):
            rate = getattr(self, name)
            if not 0.0 <= rate <= 1.0:
                raise ConfigError(f"{name} must be between 0 and 1, not {rate}")
        for name in ("error_500_times", "throttle_429_times", "retry_after_s"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1, not {getattr(self, name)}")
        if not 0.0 <= self.slow_s <= 3600:
            raise ConfigError(f"slow_s must be between 0 and 3600 seconds, not {self.slow_s}")
        if self.huge_page_bytes < MAX_PAGE_BYTES:
            raise ConfigError(f"huge_page_bytes must be at least {MAX_PAGE_BYTES}")
        if self.robots_disallow is not None:
            _check_disallow_prefix(self.robots_disallow)

    @classmethod
    def all(cls) -> Faults:
        """Every fault on at a demo-friendly dose."""
        return cls(
            error_500_rate=0.02,
            throttle_429_rate=0.02,
            slow_rate=0.01,
            slow_s=0.5,
            redirects=True,
            redirect_loop=True,
            huge_page=True,
            robots_disallow="/private/",
        )

    @property
    def structural(self) -> bool:
        """Whether any fault changes what the site links (redirects, the loop, the huge
        page, a robots.txt-disallowed prefix)."""
        return bool(
            self.redirects
            or self.redirect_loop
            or self.huge_page
            or self.robots_disallow is not None
        )

    @property
    def per_request(self) -> bool:
        """Whether any fault depends on the request (500s, 429s, slow responses)."""
        return bool(
            self.error_500_rate or self.throttle_429_rate or (self.slow_rate and self.slow_s)
        )


NO_FAULTS = Faults()


def _check_disallow_prefix(prefix: str) -> None:
    if not prefix.startswith("/") or any(c in prefix for c in "*$#? \t\r\n"):
        raise ConfigError(
            f"robots disallow prefix {prefix!r} must be a plain path starting with '/' "
            "(no wildcards, query or whitespace), such as /private/"
        )
    if prefix == HOME_PATH or any(
        own.startswith(prefix) or prefix.startswith(own) for own in SITE_PREFIXES
    ):
        raise ConfigError(
            f"robots disallow prefix {prefix!r} overlaps the site's own pages "
            f"({', '.join(SITE_PREFIXES)}); use a prefix such as /private/"
        )


class FaultPlan(msgspec.Struct, frozen=True):
    """How the server answers one path: these statuses first, in order; then normally."""

    failures: tuple[int, ...] = ()
    delay_s: float = 0.0


NO_FAULT_PLAN = FaultPlan()


class Page(msgspec.Struct, frozen=True):
    """One response the site gives for a path, before per-request faults."""

    status: int
    body: bytes
    content_type: str = HTML
    headers: tuple[tuple[str, str], ...] = ()
    """Further response headers, such as Location."""


class SiteMap:
    """The site of ``pages`` detail pages for ``seed``, with its links pointing at ``origin``.

    ``origin`` (``http://127.0.0.1:PORT``) is part of the pages, since some of their links
    are absolute; the server builds its map once it knows its port.
    """

    def __init__(
        self,
        pages: int,
        seed: int = 0,
        faults: Faults = NO_FAULTS,
        *,
        origin: str,
        layout: Layout = "default",
    ) -> None:
        if layout not in LAYOUTS:
            raise ConfigError(f"layout must be one of {', '.join(LAYOUTS)}, not {layout!r}")
        if layout != "default" and faults.structural:
            raise ConfigError(
                f"the {layout} layout takes only the per-request faults (500s, 429s, slow "
                "responses), not redirects, a redirect loop, a huge page or robots disallow"
            )
        if not 1 <= pages <= MAX_PAGES:
            raise ConfigError(f"pages must be between 1 and {MAX_PAGES}, not {pages}")
        if not 0 <= seed <= MAX_SEED:
            raise ConfigError(f"seed must be between 0 and {MAX_SEED}, not {seed}")
        parts = urlsplit(origin)
        if parts.scheme != "http" or not parts.netloc or parts.path or parts.query:
            raise ConfigError(f"origin must look like http://127.0.0.1:8000, not {origin!r}")
        self.pages = pages
        self.seed = seed
        self.faults = faults
        self.origin = origin
        self.layout: Layout = layout
        self.categories = CATEGORY_NAMES[
            : min(len(CATEGORY_NAMES), math.ceil(pages / ITEMS_PER_CATEGORY))
        ]
        self._pool = _text_pool(seed)
        # Each form repeated by its weight: a page picks one per link with draw % len.
        self._forms = tuple(
            (plain.format(o=origin, h=parts.netloc), after)
            for plain, after, _, weight in _IN_SCOPE_FORMS
            for _ in range(weight)
        )
        self._based_forms = tuple(
            (based.format(o=origin, h=parts.netloc), after)
            for _, after, based, weight in _IN_SCOPE_FORMS
            for _ in range(weight)
        )
        self._huge: Page | None = None
        self._dense = (
            LinkDenseSite(pages, origin=origin, title=self._title, text=self._pool, rng=self._rng)
            if layout == "link-dense"
            else None
        )
        self._scripted = ScriptedSite(pages, title=self._title) if layout == "scripted" else None
        self._docs = (
            DocsSite(pages, title=self._title, text=self._pool, rng=self._rng)
            if layout == "docs"
            else None
        )
        self.render = functools.lru_cache(maxsize=PAGE_CACHE_SIZE)(self._render)
        """The page at ``path`` (a request target: path and query), or None if there is none."""

    # --- the structure -------------------------------------------------------------------

    def category_of(self, item: int) -> int:
        """Index of the category that lists ``item``."""
        return (item - 1) % len(self.categories)

    def category_items(self, category: int) -> range:
        """The items a category lists, in listing order."""
        return range(category + 1, self.pages + 1, len(self.categories))

    def listing_pages(self, category: int) -> int:
        """How many listing pages a category has."""
        return math.ceil(len(self.category_items(category)) / ITEMS_PER_LISTING)

    def listing_path(self, category: int, page: int) -> str:
        """The URL path (with query) of one listing page."""
        return f"{LIST_PREFIX}{self.categories[category]}?page={page}"

    def listing_of(self, item: int) -> str:
        """The listing page that links ``item``."""
        category = self.category_of(item)
        position = self.category_items(category).index(item)
        return self.listing_path(category, position // ITEMS_PER_LISTING + 1)

    def redirect_links(self, item: int) -> tuple[str, ...]:
        """The redirecting paths an item page links (with redirects on, on every tenth)."""
        if not self.faults.redirects or item % REDIRECT_EVERY != 1:
            return ()
        moved = (item * 31 + self.seed) % self.pages + 1
        went = (item * 17 + self.seed + 1) % self.pages + 1
        return (f"{MOVED_PREFIX}{moved}", f"{GO_PREFIX}{went}")

    @functools.cached_property
    def secret_pages(self) -> tuple[str, ...]:
        """The pages under the robots.txt-disallowed prefix (none without that fault)."""
        prefix = self.faults.robots_disallow
        if prefix is None:
            return ()
        return tuple(f"{prefix.rstrip('/')}/{SECRET_NAME}{k}" for k in range(1, SECRET_PAGES + 1))

    @functools.cached_property
    def redirects(self) -> Mapping[str, str]:
        """Every linked redirecting path and its Location (the loop's included)."""
        targets: dict[str, str] = {}
        if self.faults.redirects:
            for item in range(1, self.pages + 1, REDIRECT_EVERY):
                for path in self.redirect_links(item):
                    targets[path] = self._location(path)
        if self.faults.redirect_loop:
            targets[LOOP_PATHS[0]] = LOOP_PATHS[1]
            targets[LOOP_PATHS[1]] = LOOP_PATHS[0]
        return targets

    @functools.cached_property
    def pages_ok(self) -> frozenset[str]:
        """The site's HTML pages that answer 200: home, listings and every item (in the
        link-dense layout: home, indexes and every documentation page; in the docs layout
        its PDFs too)."""
        if self._dense is not None:
            return self._dense.pages_ok()
        if self._docs is not None:
            return self._docs.pages_ok()
        if self._scripted is not None:
            return self._scripted.pages_ok()
        paths = {HOME_PATH}
        for category in range(len(self.categories)):
            paths.update(
                self.listing_path(category, page)
                for page in range(1, self.listing_pages(category) + 1)
            )
        paths.update(f"{ITEM_PREFIX}{item}" for item in range(1, self.pages + 1))
        return frozenset(paths)

    @functools.cached_property
    def reachable(self) -> frozenset[str]:
        """Every path (with query) a crawler that obeys robots.txt reaches from ``/``.

        That is the 200 pages, plus with faults on the linked redirects, the loop and the
        huge page — all of which a crawler requests. Not ``/robots.txt`` (not linked) nor
        :attr:`disallowed`.
        """
        paths = set(self.pages_ok) | set(self.redirects)
        if self.faults.huge_page:
            paths.add(HUGE_PATH)
        return frozenset(paths)

    @property
    def disallowed(self) -> frozenset[str]:
        """Linked paths that robots.txt disallows: a polite crawler never requests them."""
        return frozenset(self.secret_pages)

    def fault_plan(self, path: str) -> FaultPlan:
        """How the server answers ``path``: which failures first, and how late."""
        faults = self.faults
        if not faults.per_request or path == ROBOTS_PATH:
            return NO_FAULT_PLAN
        failures: tuple[int, ...] = ()
        if self._chance("500", path) < faults.error_500_rate:
            failures += (500,) * faults.error_500_times
        if self._chance("429", path) < faults.throttle_429_rate:
            failures += (429,) * faults.throttle_429_times
        slow = self._chance("slow", path) < faults.slow_rate
        if not failures and not slow:
            return NO_FAULT_PLAN
        return FaultPlan(failures, faults.slow_s if slow else 0.0)

    def _chance(self, kind: str, path: str) -> float:
        """A number in [0, 1) fixed by the seed, the fault kind and the path."""
        return zlib.crc32(f"{self.seed}:{kind}:{path}".encode()) / 2**32

    # --- rendering -----------------------------------------------------------------------

    def _render(self, path: str) -> Page | None:
        if self._dense is not None and path != ROBOTS_PATH:
            document = self._dense.render(path)
            return None if document is None else _html(document)
        if self._docs is not None and path != ROBOTS_PATH:
            found = self._docs.render(path)
            return None if found is None else Page(200, found[0], found[1])
        if self._scripted is not None and path != ROBOTS_PATH:
            scripted = self._scripted.render(path)
            return None if scripted is None else Page(200, scripted[0].encode(), scripted[1])
        if path == HOME_PATH:
            return _html(self._home())
        if path == ROBOTS_PATH:
            disallow = self.faults.robots_disallow or ""
            named = f"Sitemap: {self.origin}/sitemap.xml\n"  # _site.py serves it
            return Page(200, f"User-agent: *\nDisallow: {disallow}\n{named}".encode(), TEXT)
        if path.startswith(ITEM_PREFIX):
            item = self._item_number(path[len(ITEM_PREFIX) :])
            return None if item is None else _html(self._item(item))
        if path.startswith(LIST_PREFIX):
            return self._listing(path[len(LIST_PREFIX) :])
        if self.faults.redirects and path.startswith((MOVED_PREFIX, GO_PREFIX)):
            number = path[len(MOVED_PREFIX if path.startswith(MOVED_PREFIX) else GO_PREFIX) :]
            if self._item_number(number) is None:
                return None
            return self._redirect(301 if path.startswith(MOVED_PREFIX) else 302, path)
        if self.faults.redirect_loop and path in LOOP_PATHS:
            return self._redirect(302, path)
        if self.faults.huge_page and path == HUGE_PATH:
            return self._huge_page()
        if path in self.secret_pages:
            return _html(self._secret(path))
        return None

    def _item_number(self, text: str) -> int | None:
        return _number(text, self.pages)

    def _location(self, path: str) -> str:
        if path in LOOP_PATHS:
            return LOOP_PATHS[1 - LOOP_PATHS.index(path)]
        if path.startswith(MOVED_PREFIX):
            return f"{self.origin}{ITEM_PREFIX}{path[len(MOVED_PREFIX) :]}"
        return f"{ITEM_PREFIX}{path[len(GO_PREFIX) :]}"

    def _redirect(self, status: int, path: str) -> Page:
        location = self._location(path)
        body = f'<!DOCTYPE html>\n<title>Moved</title>\n<a href="{location}">moved here</a>\n'
        return Page(status, body.encode(), HTML, (("Location", location),))

    def _rng(self, kind: int, number: int) -> random.Random:
        return random.Random((self.seed << 64) | (kind << 56) | number)

    def _title(self, item: int) -> str:
        first, second = self._rng(1, item).sample(_WORDS, 2)
        return f"Item {item}: {first.capitalize()} {second}"

    def _home(self) -> str:
        links = [
            f'<li><a href="{self.listing_path(c, 1)}">{name.capitalize()}</a></li>'
            for c, name in enumerate(self.categories)
        ]
        links += [
            f'<li><a href="{ITEM_PREFIX}{item}">{self._title(item)}</a></li>'
            for item in range(1, min(HOME_ITEMS, self.pages) + 1)
        ]
        if self.faults.redirect_loop:
            links.append(f'<li><a href="{LOOP_PATHS[0]}">The loop</a></li>')
        if self.faults.huge_page:
            links.append(f'<li><a href="{HUGE_PATH}">The big one</a></li>')
        links += [f'<li><a href="{path}">Staff only</a></li>' for path in self.secret_pages]
        return _document(
            "crawlog test site",
            f"<h1>crawlog test site</h1>\n<p>{self.pages} pages, seed {self.seed}.</p>\n"
            f"<ul>\n{chr(10).join(links)}\n</ul>\n",
        )

    def _listing(self, rest: str) -> Page | None:
        name, _, query = rest.partition("?")
        if name not in self.categories or not query.startswith("page="):
            return None
        category = self.categories.index(name)
        last = self.listing_pages(category)
        page = _number(query[len("page=") :], last)
        if page is None:
            return None
        items = self.category_items(category)[
            (page - 1) * ITEMS_PER_LISTING : page * ITEMS_PER_LISTING
        ]
        rng = self._rng(2, category * MAX_PAGES + page)
        forms = rng.choices(
            ("/item/", "../item/", f"{self.origin}/item/"), (70, 15, 15), k=len(items)
        )
        rows = [
            f'<li><a href="{form}{item}">{self._title(item)}</a></li>'
            for form, item in zip(forms, items, strict=True)
        ]
        pager = [f'<a href="/list/{name}?page={last}">last</a>']
        if page > 1:
            pager.insert(0, f'<a rel="prev" href="?page={page - 1}">previous</a>')
        if page < last:
            pager.append(f'<a rel="next" href="?page={page + 1}">next</a>')
        title = f"{name.capitalize()}, page {page} of {last}"
        return _html(
            _document(
                title,
                f'<nav><a href="/">Home</a></nav>\n<h1>{title}</h1>\n<ul>\n'
                f"{chr(10).join(rows)}\n</ul>\n<nav>{' '.join(pager)}</nav>\n",
            )
        )

    def _item(self, item: int) -> str:
        rng = self._rng(0, item)
        size = int(MIN_PAGE_BYTES * (MAX_PAGE_BYTES / MIN_PAGE_BYTES) ** rng.random())
        count = rng.randint(MIN_LINKS, min(MAX_LINKS, size // MIN_BYTES_PER_LINK))
        based = rng.random() < BASE_HREF_SHARE
        title = self._title(item)
        # One draw of raw numbers for the forms, targets and text offsets: random.choices
        # per link would cost more than the rest of the page.
        draws = struct.unpack(f"<{3 * count + 1}I", rng.randbytes(4 * (3 * count + 1)))
        table = self._based_forms if based else self._forms
        forms = [table[draw % len(table)] for draw in draws[:count]]
        targets = [draw % self.pages + 1 for draw in draws[count : 2 * count]]
        anchors = [
            f"{before}{target}{after}>Item {target}</a>"
            for (before, after), target in zip(forms, targets, strict=True)
        ]
        for at in rng.sample(range(count), k=max(1, round(count * OUT_OF_SCOPE_SHARE))):
            anchors[at] = rng.choice(_OUT_OF_SCOPE_LINKS).format(t=targets[at])
        redirects = self.redirect_links(item)
        anchors[: len(redirects)] = [f'<a href="{path}">see also</a>' for path in redirects]
        for k in range(LINKS_PER_SECTION, count + 1, LINKS_PER_SECTION):
            section = k // LINKS_PER_SECTION
            anchors[k - 1] += f'</p>\n<h2 id="s{section}">Section {section}</h2>\n<p>'
        head = _document_start(
            title,
            f'<link rel="canonical" href="{self.origin}/item/{item}">\n'
            + (f'<base href="{self.origin}/">\n' if based else ""),
        ) + (
            f'<nav><a href="/">Home</a> &gt; '
            f'<a href="{self.listing_of(item)}">{self.categories[self.category_of(item)]}</a>'
            f"</nav>\n<h1>{title}</h1>\n<p>"
        )
        tail = "</p>\n" + DOCUMENT_END
        # A space either side of each link; the text fills the rest to the exact size.
        fixed = len(head) + len(tail) + sum(map(len, anchors)) + 2 * count
        chunk, extra = divmod(max(0, size - fixed), count + 1)
        pool = self._pool
        offsets = [draw % POOL_CHARS for draw in draws[2 * count :]]
        texts = [pool[offset : offset + chunk] for offset in offsets]
        texts[-1] = pool[offsets[-1] : offsets[-1] + chunk + extra]
        # text, link, text, link, ..., text: joined with the spaces counted above.
        pieces = [head] * (2 * count + 1)
        pieces[0::2] = texts
        pieces[1::2] = anchors
        return head + " ".join(pieces) + tail

    def _secret(self, path: str) -> str:
        links = [f'<li><a href="{other}">{other}</a></li>' for other in self.secret_pages]
        return _document(
            f"Staff only: {path}",
            f'<h1>Staff only</h1>\n<p><a href="/">Home</a></p>\n<ul>\n{chr(10).join(links)}\n'
            "</ul>\n",
        )

    def _huge_page(self) -> Page:
        if self._huge is None:
            head = _document_start("The big one") + "<h1>The big one</h1>\n<p>"
            tail = "</p>\n" + DOCUMENT_END
            fill = self.faults.huge_page_bytes - len(head) - len(tail)
            text = self._pool[:POOL_CHARS] * (fill // POOL_CHARS + 1)
            self._huge = _html(head + text[:fill] + tail)
        return self._huge


DOCUMENT_END = "</body>\n</html>\n"


def _document_start(title: str, head_extra: str = "") -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{title}</title>\n{head_extra}</head>\n<body>\n"
    )


def _document(title: str, body: str) -> str:
    return _document_start(title) + body + DOCUMENT_END


def _number(text: str, limit: int) -> int | None:
    """``text`` as a number from 1 to ``limit`` in canonical form (``07`` is not 7), or None."""
    if not text.isascii() or not text.isdigit() or text.startswith("0"):
        return None
    number = int(text)
    return number if number <= limit else None


def _html(document: str) -> Page:
    return Page(200, document.encode())


@functools.lru_cache(maxsize=8)
def _text_pool(seed: int) -> str:
    """Sentences of documentation-like words, twice over so any slice up to its length fits."""
    rng = random.Random(seed)
    sentences: list[str] = []
    length = 0
    while length < POOL_CHARS:
        words = rng.choices(_WORDS, k=rng.randint(6, 18))
        sentence = " ".join(words).capitalize() + ". "
        sentences.append(sentence)
        length += len(sentence)
    pool = "".join(sentences)[:POOL_CHARS]
    return pool + pool
