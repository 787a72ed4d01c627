"""Links and title of an HTML page, with selectolax's Lexbor parser.

Lexbor parses a link-dense page faster than lxml (``python tools/bench_links.py`` measures
both), and follows the HTML standard's tree building and encoding sniffing (BOM, then
``<meta charset>`` in the first 1024 bytes, else UTF-8); bytes invalid in the encoding
become U+FFFD, so garbage never raises.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass

from selectolax.lexbor import LexborHTMLParser
from yarl import URL

from crawler._urls import clean_href, join_href

_BOMS = (codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


@dataclass(frozen=True, slots=True)
class Page:
    """What a crawl takes from an HTML page."""

    title: str | None
    links: list[str]
    """Canonical http(s) URLs of the page's ``<a href>``, first occurrence order, no repeats."""


def _parse(html: bytes, charset: str | None) -> LexborHTMLParser:
    if charset and not html.startswith(_BOMS):
        # The Content-Type header's charset outranks a <meta> (and only a BOM outranks it).
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


def _links(tree: LexborHTMLParser, page_url: str) -> list[str]:
    try:
        page = URL(page_url)
    except ValueError:
        return []
    base = page
    base_node = tree.css_first("base[href]")
    if base_node is not None:
        base_href = join_href(clean_href(base_node.attrs.get("href") or ""), page)
        if base_href is not None:
            base = URL(base_href)
    # Pages repeat hrefs (navigation, "#section" anchors): resolve each distinct one once.
    resolved: dict[str, str | None] = {}
    for node in tree.css("a[href]"):
        # The fragment goes before resolving (it never changes the rest), after cleaning
        # (trimming "a? #b" must keep the query's space).
        href = clean_href(node.attrs.get("href") or "").partition("#")[0]
        if href not in resolved:
            resolved[href] = join_href(href, base)
    return list(dict.fromkeys(url for url in resolved.values() if url is not None))


def parse_page(html: bytes, page_url: str, *, charset: str | None = None) -> Page:
    """Title and links of an HTML page in one parse; ``charset`` is the HTTP header's."""
    tree = _parse(html, charset)
    return Page(title=_title(tree), links=_links(tree, page_url))


def extract_links(html: bytes, page_url: str, *, charset: str | None = None) -> list[str]:
    """Canonical http(s) URLs of every ``<a href>``, resolved against ``<base href>`` or the page.

    In order of first occurrence, without repeats or fragments. Links with other schemes
    and hrefs that do not parse are left out; so is everything when ``page_url`` is invalid.
    """
    return _links(_parse(html, charset), page_url)
