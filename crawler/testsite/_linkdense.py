"""The test site's link-dense layout: a documentation site, as Sphinx or MkDocs build them.

``SiteMap(pages, seed, layout="link-dense")`` serves ``pages`` documentation pages
``/docs/<section>/page-<n>.html`` of about 100 KB each, grouped into sections with an index
each (``/docs/<section>/``), and a few site-wide index pages (``/genindex.html``,
``/modindex.html``, ``/search.html?q=<word>``) of which the largest carry thousands of
links. Every page repeats the same navigation: a header, a sidebar listing every section
and the first pages of each, and a footer; so most of a page's hundreds of hrefs are the
same text on every page of its section, and resolve to the same few hundred URLs
site-wide — the shape that makes link resolution, not parsing, the cost of a crawl.

Hrefs come in the forms generated documentation uses: relative to the page's directory
(``page-7.html``, ``./page-7.html``, ``../api/page-8.html#s2``, ``../../genindex.html``),
absolute paths, absolute URLs, in-page anchors (``#s3``), query-only links on the search
pages (``?q=crawl``), and a few external and ``mailto:`` links.

Pure and deterministic in (pages, seed, origin), like the default layout; nothing is stored
per page.
"""

from __future__ import annotations

import functools
import math
import random
import struct
from collections.abc import Callable

LINK_DENSE = "link-dense"
DOCS_PREFIX = "/docs/"
GENINDEX_PATH = "/genindex.html"
MODINDEX_PATH = "/modindex.html"
SEARCH_PATH = "/search.html"
SEARCH_WORDS = ("crawl", "queue", "event", "lease", "resume", "report", "spider", "scope")
"""The searches every page's header links: ``/search.html?q=<word>``."""
SECTION_NAMES = (
    "guide",
    "reference",
    "tutorial",
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
PAGES_PER_SECTION = 40
"""Aimed-for section size: more pages make more sections, up to one per name."""
DENSE_MIN_PAGE_BYTES = 80 * 1024
DENSE_MAX_PAGE_BYTES = 120 * 1024
SIDEBAR_LINKS = 160
"""About this many sidebar links to pages (the first pages of every section), on every page."""
MIN_HEADINGS = 15
MAX_HEADINGS = 40
MIN_XREFS = 80
MAX_XREFS = 200
POPULAR_SHARE = 0.8
"""Share of a page's cross-references that go to the site's most linked pages."""
POPULAR_PAGES = 60
GENINDEX_ANCHORS = 5
"""Entries per page in the general index besides the page itself: its first headings."""
TITLES_CACHED = 4096
HREFS_CACHED = 16384
EXTERNAL_LINKS = (
    '<a href="https://docs.python.org/3/library/asyncio.html">asyncio</a>',
    '<a href="https://redis.io/docs/latest/develop/data-types/streams/">streams</a>',
    '<a href="mailto:docs@other.invalid">mail us</a>',
    '<a href="https://github.com/other/project/issues">issues</a>',
)


class LinkDenseSite:
    """The structure and pages of the link-dense layout; `SiteMap` serves them.

    ``title`` (of a page number), ``text`` (a pool of prose, twice over) and ``rng`` (a
    seeded generator of a kind and a number) come from the `SiteMap`, which shares them
    with its default layout.
    """

    def __init__(
        self,
        pages: int,
        *,
        origin: str,
        title: Callable[[int], str],
        text: str,
        rng: Callable[[int, int], random.Random],
    ) -> None:
        self.pages = pages
        self.origin = origin
        self.sections = SECTION_NAMES[
            : min(len(SECTION_NAMES), math.ceil(pages / PAGES_PER_SECTION))
        ]
        # Cached: a page names hundreds of others, and the same ones on every page.
        self._title = functools.lru_cache(maxsize=TITLES_CACHED)(title)
        self._href = functools.lru_cache(maxsize=HREFS_CACHED)(self._relative_href)
        self._pool = text
        self._pool_chars = len(text) // 2
        self._rng = rng
        per_section = max(1, SIDEBAR_LINKS // len(self.sections))
        self._sidebar_pages = tuple(
            page
            for section in range(len(self.sections))
            for page in self.section_pages(section)[:per_section]
        )
        self._popular = tuple(range(1, min(POPULAR_PAGES, pages) + 1))

    # --- the structure -------------------------------------------------------------------

    def section_of(self, page: int) -> int:
        """Index of the section a page is in."""
        return (page - 1) % len(self.sections)

    def section_pages(self, section: int) -> range:
        """The pages of a section, in order."""
        return range(section + 1, self.pages + 1, len(self.sections))

    def page_path(self, page: int) -> str:
        """The URL path of a documentation page."""
        return f"{DOCS_PREFIX}{self.sections[self.section_of(page)]}/page-{page}.html"

    def section_path(self, section: int) -> str:
        """The URL path of a section's index."""
        return f"{DOCS_PREFIX}{self.sections[section]}/"

    def search_path(self, word: str) -> str:
        """The URL path (with query) of a search page."""
        return f"{SEARCH_PATH}?q={word}"

    def index_paths(self) -> frozenset[str]:
        """The home page, the site-wide indexes, the searches and the section indexes."""
        paths = {"/", GENINDEX_PATH, MODINDEX_PATH}
        paths.update(self.search_path(word) for word in SEARCH_WORDS)
        paths.update(self.section_path(s) for s in range(len(self.sections)))
        return frozenset(paths)

    def pages_ok(self) -> frozenset[str]:
        """Every page of the site, all reachable from ``/``."""
        return self.index_paths() | {self.page_path(p) for p in range(1, self.pages + 1)}

    # --- rendering -----------------------------------------------------------------------

    def render(self, path: str) -> str | None:
        """The HTML document at ``path``, or None if there is none."""
        if path == "/":
            return self._home()
        if path == GENINDEX_PATH:
            return self._genindex()
        if path == MODINDEX_PATH:
            return self._modindex()
        if path.startswith(SEARCH_PATH + "?q="):
            word = path[len(SEARCH_PATH) + 3 :]
            return self._search(word) if word in SEARCH_WORDS else None
        if not path.startswith(DOCS_PREFIX):
            return None
        section_name, slash, rest = path[len(DOCS_PREFIX) :].partition("/")
        if not slash or section_name not in self.sections:
            return None
        section = self.sections.index(section_name)
        if rest == "":
            return self._section_index(section)
        if rest.startswith("page-") and rest.endswith(".html"):
            number = rest[len("page-") : -len(".html")]
            if number.isascii() and number.isdigit() and not number.startswith("0"):
                page = int(number)
                if page <= self.pages and self.section_of(page) == section:
                    return self._page(page)
        return None

    def _relative_href(self, target: str, directory: str) -> str:
        """``target`` (a path from the root) as the shortest relative href from
        ``directory`` (a path ending in ``/``), as documentation generators write them."""
        here = directory.split("/")[1:-1]
        there = target.split("/")[1:]
        common = 0
        while common < min(len(here), len(there) - 1) and here[common] == there[common]:
            common += 1
        href = "../" * (len(here) - common) + "/".join(there[common:])
        return href or "./"

    @functools.lru_cache(maxsize=64)  # noqa: B019 - one site, a few directories
    def _chrome(self, directory: str) -> tuple[str, str]:
        """(header + sidebar, footer) of a page in ``directory``: the same on every page."""
        up = self._href("/", directory)
        header = [
            f'<a class="brand" href="{up}">crawlog docs</a>',
            f'<a href="{self._href(GENINDEX_PATH, directory)}">Index</a>',
            f'<a href="{self._href(MODINDEX_PATH, directory)}">Modules</a>',
        ]
        header += [
            f'<a href="{self._href(self.search_path(word), directory)}">{word}</a>'
            for word in SEARCH_WORDS
        ]
        sidebar = [
            f'<li><a href="{self._href(self.section_path(s), directory)}">{name.capitalize()}'
            "</a></li>"
            for s, name in enumerate(self.sections)
        ]
        sidebar += [
            f'<li><a href="{self._href(self.page_path(p), directory)}">{self._title(p)}</a></li>'
            for p in self._sidebar_pages
        ]
        top = (
            f"<header><nav>{' | '.join(header)}</nav></header>\n"
            f'<aside><ul class="toctree">\n{chr(10).join(sidebar)}\n</ul></aside>\n'
            "<main>\n"
        )
        bottom = (
            '</main>\n<footer><a href="#">Back to top</a> | '
            f'<a href="{self.origin}/">crawlog docs</a> | {EXTERNAL_LINKS[2]}</footer>\n'
        )
        return top, bottom

    def _document(self, title: str, directory: str, body: str) -> str:
        top, bottom = self._chrome(directory)
        return (
            '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f"<title>{title}</title>\n</head>\n<body>\n{top}<h1>{title}</h1>\n{body}{bottom}"
            "</body>\n</html>\n"
        )

    def _home(self) -> str:
        rows = [
            f'<li><a href="{self._href(self.section_path(s), "/")}">{name.capitalize()}</a> '
            f"({len(self.section_pages(s))} pages)</li>"
            for s, name in enumerate(self.sections)
        ]
        body = (
            f"<p>{self.pages} pages in {len(self.sections)} sections.</p>\n"
            f"<ul>\n{chr(10).join(rows)}\n</ul>\n"
        )
        return self._document("crawlog documentation", "/", body)

    def _genindex(self) -> str:
        rows = []
        for page in range(1, self.pages + 1):
            href = self._href(self.page_path(page), "/")
            anchors = " ".join(
                f'<a href="{href}#s{k}">{k}</a>' for k in range(1, GENINDEX_ANCHORS + 1)
            )
            rows.append(f'<li><a href="{href}">{self._title(page)}</a> {anchors}</li>')
        body = f"<ul>\n{chr(10).join(rows)}\n</ul>\n"
        return self._document("General index", "/", body)

    def _modindex(self) -> str:
        rows = []
        for page in range(1, self.pages + 1):
            path = self.page_path(page)
            rows.append(
                f'<tr><td><a href="{path}#s1">{self._title(page)}</a></td>'
                f'<td><a href="./{path[1:]}">page</a></td></tr>'
            )
        body = f"<table>\n{chr(10).join(rows)}\n</table>\n"
        return self._document("Module index", "/", body)

    def _search(self, word: str) -> str:
        at = SEARCH_WORDS.index(word)
        found = [p for p in range(1, self.pages + 1) if (p + at) % len(SEARCH_WORDS) == 0]
        rows = [
            f'<li><a href="{self._href(self.page_path(p), "/")}#s1">{self._title(p)}</a></li>'
            for p in found
        ]
        others = " ".join(f'<a href="?q={w}">{w}</a>' for w in SEARCH_WORDS if w != word)
        body = (
            f"<p>{len(found)} results for {word}. Search also: {others}</p>\n"
            f"<ol>\n{chr(10).join(rows)}\n</ol>\n"
        )
        return self._document(f"Search: {word}", "/", body)

    def _section_index(self, section: int) -> str:
        directory = self.section_path(section)
        rows = []
        for page in self.section_pages(section):
            href = self._href(self.page_path(page), directory)
            rows.append(
                f'<li><a href="{href}">{self._title(page)}</a>: '
                f'<a href="{href}#s1">1</a> <a href="{href}#s2">2</a></li>'
            )
        body = f"<ul>\n{chr(10).join(rows)}\n</ul>\n"
        return self._document(self.sections[section].capitalize(), directory, body)

    def _page(self, page: int) -> str:
        rng = self._rng(3, page)
        directory = self.section_path(self.section_of(page))
        size = rng.randint(DENSE_MIN_PAGE_BYTES, DENSE_MAX_PAGE_BYTES)
        headings = rng.randint(MIN_HEADINGS, MAX_HEADINGS)
        xrefs = rng.randint(MIN_XREFS, MAX_XREFS)
        draws = struct.unpack(f"<{3 * xrefs}I", rng.randbytes(12 * xrefs))
        title = self._title(page)
        toc = " ".join(f'<a href="#s{k}">{k}</a>' for k in range(1, headings + 1))
        anchors = []
        for k in range(xrefs):
            pick, form, heading = draws[k], draws[xrefs + k], draws[2 * xrefs + k]
            pool = self._popular if pick % 100 < POPULAR_SHARE * 100 else None
            target = pool[pick % len(pool)] if pool else pick % self.pages + 1
            path = self.page_path(target)
            relative = self._href(path, directory)
            anchor = (
                relative,
                f"{relative}#s{heading % MIN_HEADINGS + 1}",
                "./" + relative if not relative.startswith("../") else relative,
                path,
                f"{self.origin}{path}",
                f"#s{heading % headings + 1}",
            )[form % 6]
            anchors.append(f'<a class="reference" href="{anchor}">{self._title(target)}</a>')
        for at in range(0, xrefs, max(1, xrefs // len(EXTERNAL_LINKS))):
            anchors[at] = EXTERNAL_LINKS[(at + page) % len(EXTERNAL_LINKS)]
        # Prose between the cross-references, headings (with a permalink each) spread out.
        per_heading = math.ceil(xrefs / headings)
        for k in range(headings):
            at = min(xrefs - 1, k * per_heading)
            anchors[at] = (
                f'</p>\n<h2 id="s{k + 1}">Part {k + 1} <a class="headerlink" '
                f'href="#s{k + 1}">¶</a></h2>\n<p>' + anchors[at]
            )
        neighbours = self.section_pages(self.section_of(page))
        position = neighbours.index(page)
        pager = [f'<a rel="up" href="./">{self.sections[self.section_of(page)]}</a>']
        if position > 0:
            pager.append(f'<a rel="prev" href="page-{neighbours[position - 1]}.html">prev</a>')
        if position + 1 < len(neighbours):
            pager.append(f'<a rel="next" href="page-{neighbours[position + 1]}.html">next</a>')
        head = f'<nav class="toc">{toc}</nav>\n<p>'
        tail = f'</p>\n<nav class="pager">{" ".join(pager)}</nav>\n'
        shell = len(self._document(title, directory, "").encode())
        fixed = shell + len(head) + len(tail) + len("".join(anchors).encode())
        fixed += 2 * xrefs  # the spaces either side of each cross-reference
        chunk = max(0, size - fixed) // (xrefs + 1)
        starts = [draw % self._pool_chars for draw in draws[: xrefs + 1]]
        pieces = [""] * (2 * xrefs + 1)
        pieces[0::2] = [self._pool[start : start + chunk] for start in starts]
        pieces[1::2] = anchors
        return self._document(title, directory, head + " ".join(pieces) + tail)
