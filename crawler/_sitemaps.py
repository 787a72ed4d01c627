"""Sitemaps as seeds: the URLs that sitemaps (``--sitemap``) and the sitemaps robots.txt
names (``--sitemaps-from-robots``) list, enqueued as the crawl's seeds.

A sitemap is a ``<urlset>`` of ``<url><loc>`` (with an optional ``<lastmod>`` and
``<changefreq>``, kept on the task: they seed its revisit interval) or a
``<sitemapindex>`` of further sitemaps, read in turn. A body that starts with gzip's magic
number is decompressed (``.xml.gz`` files; a ``Content-Encoding: gzip`` the
HTTP client already decoded needs nothing). Parsing is defusedxml's: no entity expansion,
no external entities or DTDs fetched, and the decompressed size is capped
(:data:`MAX_SITEMAP_BYTES`, the protocol's own limit), so a hostile sitemap can neither
blow up memory nor reach elsewhere.

The crawl process reads the sitemaps before it starts its workers, and enqueues their URLs
in batches through the ordinary enqueue (each URL's fingerprint added to the job's seen
set, only a new one queued): reading them again, as a crawl run again after a crash does,
enqueues nothing twice, and a URL a kill kept from being enqueued is enqueued then. No
state of its own is kept. URLs out of the job's scope are left out and counted. A sitemap
that cannot be fetched or parsed is reported, and the crawl goes on with the others.

What a site names is not fetched blindly: a sitemap that robots.txt or an index lists, and
every redirect of any sitemap's fetch, must be on a site the job's scope reaches
(:func:`sitemap_scope`; the sitemaps given on the command line are the user's own), and
every fetch goes through the job's address check (`crawler._addresses`) as the workers'
do. robots.txt is fetched as the workers fetch it (`Fetcher.fetch_robots`).
"""

from __future__ import annotations

import zlib
from collections import deque
from collections.abc import Callable, Container, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Final, Protocol
from xml.etree.ElementTree import Element, ParseError

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring
from protego import Protego
from yarl import URL

from crawler._fetch_spec import FetchResult
from crawler._recrawl import run_fingerprint
from crawler._robots import ROBOTS_PATH
from crawler._scope import Scope
from crawler._urls import clean_href, fingerprint_canonical, join_href, site_of
from eventlog import FIRST_RUN, Task, TaskQueue

MAX_SITEMAP_BYTES: Final = 50 * 1024 * 1024
"""A sitemap larger than this, decompressed, is refused (the sitemap protocol's limit)."""
MAX_SITEMAPS: Final = 10_000
"""Sitemaps read per crawl start at most: indexes that list each other end there."""
ENQUEUE_BATCH: Final = 1_000
"""Tasks per enqueue call: one script call each, as a page's links are."""
SEED_PRIORITY: Final = 1
"""As the crawl's own seeds have."""
_GZIP_MAGIC: Final = b"\x1f\x8b"
_GZIP_WINDOW: Final = 16 + zlib.MAX_WBITS
ERROR_OUT_OF_SCOPE: Final = "out of the crawl's scope"


class SitemapFetcher(Protocol):
    """What reading sitemaps fetches with (a `crawler._fetch.Fetcher`)."""

    async def fetch(
        self, url: str, *, redirect_allowed: Callable[[str], bool] | None = None
    ) -> FetchResult:
        """``url``, following only the redirects ``redirect_allowed`` accepts."""

    async def fetch_robots(self, site: str) -> FetchResult:
        """``site``'s robots.txt, as the workers fetch it."""


@dataclass(frozen=True, slots=True)
class SitemapEntry:
    """One ``<url>`` of a ``<urlset>``."""

    loc: str
    lastmod: str | None = None
    changefreq: str | None = None


@dataclass(frozen=True, slots=True)
class Sitemap:
    """What one sitemap document lists, or why it could not be read."""

    urls: list[SitemapEntry] = field(default_factory=list)
    sitemaps: list[str] = field(default_factory=list)
    """For a ``<sitemapindex>``: the sitemaps it lists."""
    error: str | None = None


def parse_sitemap(body: bytes) -> Sitemap:
    """The entries of a sitemap or sitemap index (gzip or not); ``error`` says why none."""
    if body.startswith(_GZIP_MAGIC):
        inflater = zlib.decompressobj(_GZIP_WINDOW)
        try:
            body = inflater.decompress(body, MAX_SITEMAP_BYTES + 1)
        except zlib.error as exc:
            return Sitemap(error=f"not valid gzip ({exc})")
        if inflater.unconsumed_tail:
            return Sitemap(error=f"larger than {MAX_SITEMAP_BYTES} bytes decompressed")
    if len(body) > MAX_SITEMAP_BYTES:
        return Sitemap(error=f"larger than {MAX_SITEMAP_BYTES} bytes")
    try:
        root = fromstring(body)
    except DefusedXmlException as exc:
        return Sitemap(error=f"refused XML ({type(exc).__name__})")
    except ParseError as exc:
        return Sitemap(error=f"not XML ({exc})")
    kind = _local(root)
    if kind == "urlset":
        urls = []
        for node in root:
            if _local(node) == "url" and (loc := _child_text(node, "loc")):
                urls.append(
                    SitemapEntry(loc, _child_text(node, "lastmod"), _child_text(node, "changefreq"))
                )
        return Sitemap(urls=urls)
    if kind == "sitemapindex":
        return Sitemap(
            sitemaps=[
                loc
                for node in root
                if _local(node) == "sitemap" and (loc := _child_text(node, "loc"))
            ]
        )
    return Sitemap(error=f"not a sitemap (root element <{kind}>)")


def _local(node: Element) -> str:
    # Sitemaps in the wild use the protocol's namespace, an old one, or none at all.
    return node.tag.rpartition("}")[2] if isinstance(node.tag, str) else ""


def _child_text(node: Element, name: str) -> str | None:
    for child in node:
        if _local(child) == name:
            return (child.text or "").strip() or None
    return None


def robots_sitemaps(body: bytes) -> list[str]:
    """The ``Sitemap:`` URLs a robots.txt lists (protego's reading of it)."""
    return list(Protego.parse(body.decode("utf-8", errors="replace")).sitemaps)


@dataclass(slots=True)
class SitemapSeeds:
    """What reading the sitemaps gave."""

    sitemaps_read: int = 0
    urls: int = 0
    """URLs listed, in scope, distinct."""
    new: int = 0
    """Of those, enqueued now (the others were known to the job already)."""
    out_of_scope: int = 0
    malformed: int = 0
    past_bound: int = 0
    """Of those, not enqueued because the job reached ``max_pages`` (``--max-pages``)."""
    failed: list[tuple[str, str]] = field(default_factory=list)
    """Sitemaps that could not be read (or were not fetched: out of scope), and why."""
    robots_failed: list[tuple[str, str]] = field(default_factory=list)
    """robots.txt files that could not be read, and why."""


def sitemap_scope(scope: Scope) -> Scope:
    """Where a sitemap a site names may be fetched from: a site the crawl's scope reaches
    (a ``prefix`` scope's seed host as a whole: sitemaps live at a site's root)."""
    if scope.mode == "prefix":
        return Scope(scope.seeds, "host")
    return Scope(scope.seeds, scope.mode)


async def seed_from_sitemaps(
    queue: TaskQueue,
    fetcher: SitemapFetcher,
    scope: Scope,
    *,
    sitemaps: Sequence[str] = (),
    robots_sites: Iterable[str] = (),
    actor: str,
    max_pages: int = 0,
    run: int = FIRST_RUN,
    known: Container[str] = frozenset(),
) -> SitemapSeeds:
    """Read ``sitemaps`` and those the robots.txt of each of ``robots_sites``
    (``scheme://host[:port]``) names, indexes followed, and enqueue the URLs they list
    that ``scope`` allows, in batches of :data:`ENQUEUE_BATCH` (idempotent), as tasks of
    ``run``. ``known``: the fingerprints of pages earlier runs had (a recrawl revisits
    them, or has found them gone): listed, not enqueued.

    A sitemap named by a site (robots.txt, an index) outside :func:`sitemap_scope` is not
    fetched; no sitemap's fetch follows a redirect outside it."""
    seeds = SitemapSeeds()
    where = sitemap_scope(scope)

    def reachable(url: str) -> bool:
        return where.allows(url, 0)

    given = dict.fromkeys(sitemaps)
    pending = deque(given)
    pending.extend(await _sitemaps_of_robots(fetcher, robots_sites, seeds))
    visited: set[str] = set()
    seen: set[str] = set()
    while pending and len(visited) < MAX_SITEMAPS:
        url = pending.popleft()
        if url in visited:
            continue
        visited.add(url)
        if url not in given and not reachable(url):
            seeds.failed.append((url, ERROR_OUT_OF_SCOPE))
            continue
        result = await fetcher.fetch(url, redirect_allowed=reachable)
        if (why := _unread(result)) is not None:
            seeds.failed.append((url, why))
            continue
        sitemap = parse_sitemap(result.body)
        if sitemap.error is not None:
            seeds.failed.append((url, sitemap.error))
            continue
        seeds.sitemaps_read += 1
        base = URL(result.final_url or url)
        for child in sitemap.sitemaps:
            if (resolved := join_href(clean_href(child), base)) is not None:
                pending.append(resolved)
        batch: list[Task] = []
        for task in _entry_tasks(sitemap.urls, base, scope, seen, seeds, run, known):
            batch.append(task)
            if len(batch) >= ENQUEUE_BATCH:
                await _enqueue(queue, batch, actor, max_pages, seeds)
                batch = []
        if batch:
            await _enqueue(queue, batch, actor, max_pages, seeds)
    return seeds


async def _sitemaps_of_robots(
    fetcher: SitemapFetcher, robots_sites: Iterable[str], seeds: SitemapSeeds
) -> list[str]:
    """The sitemaps the robots.txt of each of ``robots_sites`` names; those unread are
    counted in ``seeds``."""
    found: list[str] = []
    for site in dict.fromkeys(robots_sites):
        result = await fetcher.fetch_robots(site)
        if (why := _unread(result)) is not None:
            seeds.robots_failed.append((site + ROBOTS_PATH, why))
            continue
        found.extend(robots_sitemaps(result.body))
    return found


def _entry_tasks(
    entries: Iterable[SitemapEntry],
    base: URL,
    scope: Scope,
    seen: set[str],
    seeds: SitemapSeeds,
    run: int,
    known: Container[str],
) -> Iterator[Task]:
    """A seed task of ``run`` for each of a sitemap's ``entries`` that ``scope`` allows and
    not ``seen`` yet (added to it), nor ``known``; the malformed, out of scope and known
    counted in ``seeds``."""
    for entry in entries:
        canonical = join_href(clean_href(entry.loc), base)
        if canonical is None:
            seeds.malformed += 1
            continue
        if not scope.allows(canonical, 0):
            seeds.out_of_scope += 1
            continue
        fp = fingerprint_canonical(canonical)
        if fp in seen:
            continue
        seen.add(fp)
        if fp in known:
            seeds.urls += 1
            continue
        yield Task(
            task_id=run_fingerprint(fp, run),
            url=canonical,
            site=site_of(canonical),
            priority=SEED_PRIORITY,
            lastmod=entry.lastmod,
            changefreq=entry.changefreq,
            run=run,
        )


def _unread(result: FetchResult) -> str | None:
    if result.error is not None:
        return result.error
    if not 200 <= result.status < 300:
        return f"HTTP {result.status}"
    return None


async def _enqueue(
    queue: TaskQueue, tasks: list[Task], actor: str, cap: int, seeds: SitemapSeeds
) -> None:
    new, past = await queue.enqueue_within(tasks, actor=actor, cap=cap)
    seeds.urls += len(tasks)
    seeds.new += sum(new)
    seeds.past_bound += past
