"""Links and title of an HTML page, with selectolax's Lexbor parser.

Lexbor parses a link-dense page faster than lxml (``python tools/bench_links.py`` measures
both), and follows the HTML standard's tree building and encoding sniffing (BOM, then
``<meta charset>`` in the first 1024 bytes, else UTF-8); bytes invalid in the encoding
become U+FFFD, so garbage never raises.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Final, cast

from selectolax.lexbor import LexborHTMLParser
from yarl import URL

from crawler._urls import (
    FROM_ROOT,
    BasePart,
    base_key,
    base_part,
    clean_href,
    directory_prefix,
    join_href,
    plain_path_ups,
)

_BOMS = (codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
_BASE_TAG = re.compile(rb"<base", re.IGNORECASE)
RESOLVED_LINKS_KEPT = 100_000
"""Resolved (base part, href) pairs a `LinkResolver` keeps: a few MB, and far more than the
navigation a site repeats on every page."""


class LinkResolver:
    """Resolves hrefs against the part of their base they depend on (`base_part`), each
    distinct pair once while it is kept: documentation pages repeat the same hundreds of
    navigation hrefs, relative to a directory they share with the pages beside them.

    What it gives is exactly `join_href` of each href; only the cost differs. The hrefs a
    directory's pages repeat are looked up as written, all of a page's at once, in a memo
    of that directory (``_memo``): a page whose hrefs were all met before runs no Python
    code per href. Bounded: past ``max_entries`` pairs (or memo entries) the oldest
    bases' tables are let go (the whole table of a base that alone holds more: pages that
    share no links resolve as they would without it).
    """

    __slots__ = (
        "_entries",
        "_forms",
        "_memo",
        "_memo_entries",
        "_prefixes",
        "_tables",
        "max_entries",
    )

    def __init__(self, max_entries: int = RESOLVED_LINKS_KEPT) -> None:
        self.max_entries = max_entries
        self._tables: dict[str, dict[str, str | None]] = {}
        """Base key → href → canonical URL (None: not http(s), or does not parse), oldest
        base first."""
        self._entries = 0
        self._forms: dict[str, tuple[str, BasePart, tuple[int, str] | None]] = {}
        """An href as written → cleaned, without its fragment, the part it reads, and its
        leading ``../`` and plain path if it is one (`plain_path_ups`)."""
        self._memo: dict[str, dict[str, str]] = {}
        """Directory key → href as written → canonical URL (`_NO_LINK`: none), for the
        hrefs that read no more of their base than its directory, oldest directory first."""
        self._memo_entries = 0
        self._prefixes: dict[str, dict[int, str | None]] = {}
        """Directory key → `directory_prefix` of it by levels up (`plain_path_ups`)."""

    def __len__(self) -> int:
        """How many (base part, href) pairs its tables keep: a plain relative path
        (`plain_path_ups`), resolved without one, is kept in its directory's memo only."""
        return self._entries

    def links(self, hrefs: Iterable[str], base: URL) -> list[str]:
        """The canonical http(s) URLs ``hrefs`` (as written in the page) point to from
        ``base``: first occurrence order, no repeats, none for hrefs that are not http(s)."""
        hrefs = hrefs if isinstance(hrefs, list) else list(hrefs)
        directory = base_key(base, "directory")
        memo = self._memo.get(directory)
        if memo is None:
            memo = self._memo[directory] = {}
        # One C-level lookup of every href; Python runs only for those the memo misses
        # and those that read the whole document ("", "?q", "#s"), found by C-level scans.
        urls: list[str | None] = list(map(memo.get, hrefs))
        if None in urls or _DOCUMENT in urls:
            prefixes = self._prefixes.get(directory)
            if prefixes is None:
                prefixes = self._prefixes[directory] = {}
            self._resolve_missing(hrefs, urls, base, memo, prefixes)
        if _SELF in urls:  # "#section" anchors: the page itself
            itself = join_href("", base) or _NO_LINK
            for index in _positions(urls, _SELF):
                urls[index] = itself
        found = dict.fromkeys(urls)
        found.pop(_NO_LINK, None)
        return cast("list[str]", list(found))  # `_resolve_missing` left no None

    def _resolve_missing(
        self,
        hrefs: list[str],
        urls: list[str | None],
        base: URL,
        memo: dict[str, str],
        prefixes: dict[int, str | None],
    ) -> None:
        """Fill ``urls``' gaps (None, `_DOCUMENT`) with the URL of the href at the same
        place, or `_NO_LINK`; an href that reads no more than the directory goes into its
        ``memo`` with its URL, one that reads the document as `_DOCUMENT`."""
        tables, forms = self._tables, self._forms
        per_part: dict[str, dict[str, str | None]] = {}
        added = memoized = 0
        for index in (*_positions(urls, None), *_positions(urls, _DOCUMENT)):
            raw = hrefs[index]
            form = forms.get(raw)
            if form is None:
                # The fragment goes before resolving (it never changes the rest), after
                # cleaning (trimming "a? #b" must keep the query's space).
                href = clean_href(raw).partition("#")[0]
                form = forms[raw] = (href, base_part(href), plain_path_ups(href))
            href, part, plain = form
            if plain is not None and plain[0] != FROM_ROOT:
                # A plain relative path (the most of a link-dense page's misses): its
                # directory's text, that many levels up, and the path; the memo keeps it.
                ups, path = plain
                if ups not in prefixes:
                    prefixes[ups] = directory_prefix(base, ups)
                if (prefix := prefixes[ups]) is not None:
                    urls[index] = text = prefix + path
                    if raw not in memo:
                        memo[raw] = text
                        memoized += 1
                    continue
            table = per_part.get(part)
            if table is None:
                key = base_key(base, part)
                table = tables.get(key)
                if table is None:
                    table = tables[key] = {}
                per_part[part] = table
            # A miss is the rule on a directory's first pages: no KeyError raised for it.
            url = table.get(href, _UNSEEN)
            if url is _UNSEEN:
                # A plain path from the root ("/api/x.html") resolves by appending it to
                # the origin's text, without a parse.
                url = None
                if plain is not None:
                    ups, path = plain
                    if ups not in prefixes:
                        prefixes[ups] = directory_prefix(base, ups)
                    if (prefix := prefixes[ups]) is not None:
                        url = prefix + path
                if url is None:
                    url = join_href(href, base)
                table[href] = url
                added += 1
            urls[index] = text = _NO_LINK if url is None else url
            if raw not in memo:
                memo[raw] = text if part != "document" else _SELF if not href else _DOCUMENT
                memoized += 1
        self._entries += added
        self._memo_entries += memoized
        self._trim()

    def _trim(self) -> None:
        if len(self._forms) > self.max_entries:
            self._forms.clear()
        tables = self._tables
        while self._entries > self.max_entries:
            oldest = next(iter(tables))
            self._entries -= len(tables.pop(oldest))
        memo = self._memo
        while self._memo_entries > self.max_entries:
            oldest = next(iter(memo))
            self._memo_entries -= len(memo.pop(oldest))
        if len(self._prefixes) > self.max_entries:
            self._prefixes.clear()


_NO_LINK: Final = ""
"""What `LinkResolver` notes for an href that is no http(s) link: no canonical URL is
empty."""
_DOCUMENT: Final = "document"
"""What `LinkResolver`'s memo notes for an href that reads the whole document (``?q``):
resolved page by page. No canonical URL is a bare word."""
_UNSEEN: Final = "unseen"
"""What `LinkResolver`'s tables give for an href they do not hold (a bare word, no URL)."""
_SELF: Final = "self"
"""What `LinkResolver`'s memo notes for an href that is the document itself (``""``,
``#section``)."""


def _positions(urls: list[str | None], value: str | None) -> Iterator[int]:
    """Where ``urls`` holds ``value``, found by C-level scans (`list.index`)."""
    start = 0
    while True:
        try:
            start = urls.index(value, start)
        except ValueError:
            return
        yield start
        start += 1


@dataclass(frozen=True, slots=True)
class Page:
    """What a crawl takes from an HTML page."""

    title: str | None
    links: list[str]
    """Canonical http(s) URLs of the page's ``<a href>``, first occurrence order, no repeats."""


def _is_utf8(charset: str) -> bool:
    try:
        return codecs.lookup(charset).name == "utf-8"
    except LookupError:
        return False


def _parse(html: bytes, charset: str | None) -> LexborHTMLParser:
    if charset and not html.startswith(_BOMS):
        # The Content-Type header's charset outranks a <meta> (and only a BOM outranks it).
        if _is_utf8(charset):
            # Lexbor reads bytes as UTF-8 (invalid ones become U+FFFD, as Python's
            # "replace" makes them): no str to decode, then encode again inside.
            return LexborHTMLParser(html)
        try:
            return LexborHTMLParser(html.decode(charset, errors="replace"))
        # A charset Python does not know, or a codec that is no page encoding and refuses
        # even to replace (``idna``, ``undefined``): sniff as if none was sent.
        except (LookupError, UnicodeError):
            pass
    return LexborHTMLParser(html, encoding=True)


def _title(tree: LexborHTMLParser) -> str | None:
    node = tree.css_first("title")
    if node is None:
        return None
    # As a browser shows it: whitespace runs collapsed, ends trimmed.
    return " ".join(node.text().split()) or None


def _links(
    tree: LexborHTMLParser, page_url: str, resolver: LinkResolver | None = None
) -> list[str]:
    try:
        page = URL(page_url)
    except ValueError:
        return []
    base = page
    # A <base> element is only ever made from a "<base" tag in the text (ASCII case
    # folded): a search of the UTF-8 text costs less than a search of the whole tree.
    has_base = _BASE_TAG.search(tree.raw_html) is not None
    base_node = tree.css_first("base[href]") if has_base else None
    if base_node is not None:
        base_href = join_href(clean_href(base_node.attrs.get("href") or ""), page)
        if base_href is not None:
            base = URL(base_href)
    if resolver is not None:
        return resolver.links([node.attrs.get("href") or "" for node in tree.css("a[href]")], base)
    # Pages repeat hrefs (navigation, "#section" anchors): resolve each distinct one once.
    resolved: dict[str, str | None] = {}
    for node in tree.css("a[href]"):
        # The fragment goes before resolving (it never changes the rest), after cleaning
        # (trimming "a? #b" must keep the query's space).
        href = clean_href(node.attrs.get("href") or "").partition("#")[0]
        if href not in resolved:
            resolved[href] = join_href(href, base)
    return list(dict.fromkeys(url for url in resolved.values() if url is not None))


def parse_page(
    html: bytes,
    page_url: str,
    *,
    charset: str | None = None,
    resolver: LinkResolver | None = None,
) -> Page:
    """Title and links of an HTML page in one parse; ``charset`` is the HTTP header's.

    A ``resolver`` shared by the pages of a crawl resolves each href once for all the pages
    it means the same on; the links are the same with it as without."""
    tree = _parse(html, charset)
    return Page(title=_title(tree), links=_links(tree, page_url, resolver))


def extract_links(html: bytes, page_url: str, *, charset: str | None = None) -> list[str]:
    """Canonical http(s) URLs of every ``<a href>``, resolved against ``<base href>`` or the page.

    In order of first occurrence, without repeats or fragments. Links with other schemes
    and hrefs that do not parse are left out; so is everything when ``page_url`` is invalid.
    """
    return _links(_parse(html, charset), page_url)
