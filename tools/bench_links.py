"""Micro-benchmark of link extraction: the crawler's choice against the alternatives.

    python tools/bench_links.py [PAGE.html ...]

Without arguments it times a synthetic documentation page (about 50 KB, 300 links, the
shape of a Sphinx page: navigation, anchors, cross-references, a few external links).
Alternatives that are not installed (lxml, w3lib) are reported and skipped:
``pip install lxml w3lib`` to compare against them.
"""

from __future__ import annotations

import importlib
import sys
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urljoin

from selectolax.lexbor import LexborHTMLParser
from yarl import URL

from crawler import clean_href, extract_links, join_href

PAGE_URL = "https://docs.example.org/en/stable/guide/index.html"
SYNTHETIC_LINKS = 300
SECONDS_PER_CASE = 1.0


def synthetic_page(links: int = SYNTHETIC_LINKS) -> bytes:
    """A documentation page with ``links`` links, about 170 bytes of HTML per link."""
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        "<title>Guide — Example 3.2 documentation</title>",
        "<link rel='stylesheet' href='../_static/pygments.css'></head><body><nav><ul>",
    ]
    for i in range(links):
        href = (
            f"#section-{i}",
            f"../api/module{i % 40}.html#example.module{i % 40}.function_{i}",
            f"/en/stable/reference/part{i % 25}/",
            f"https://other{i % 7}.example.com/path?b={i}&amp;a=2",
            f"chapter{i % 30}.html",
            f"./sub/Topic%7e{i}.html?q=caf%c3%a9",
        )[i % 6]
        parts.append(
            f"<li class='toctree-l2'><a class='reference internal' href='{href}'>"
            f"Section {i} of the guide</a></li>\n"
        )
        if i % 3 == 0:
            parts.append(f"<p>Paragraph {i}: {'lorem ipsum dolor sit amet ' * 3}<code>x</code></p>")
    parts.append("</ul></nav></body></html>")
    return "".join(parts).encode()


def _lexbor_hrefs(html: bytes) -> list[str]:
    return [node.attrs.get("href") or "" for node in LexborHTMLParser(html).css("a[href]")]


def _yarl_resolve(hrefs: list[str]) -> list[str]:
    base = URL(PAGE_URL)
    return [url for href in hrefs if (url := join_href(clean_href(href), base)) is not None]


def _cases() -> dict[str, Callable[[bytes], list[str]] | str]:
    """Each case maps a page to its links; a string says why the case cannot run."""
    cases: dict[str, Callable[[bytes], list[str]] | str] = {
        "crawlog extract_links (Lexbor + yarl)": lambda html: extract_links(html, PAGE_URL),
        "parse only: selectolax Lexbor": _lexbor_hrefs,
        "parse + resolve each: Lexbor + yarl": lambda html: _yarl_resolve(_lexbor_hrefs(html)),
    }
    # Imported by name: they are optional, and neither is a dependency of crawlog.
    try:
        lxml_html = importlib.import_module("lxml.html")
    except ImportError:
        cases["parse only: lxml"] = "lxml not installed"
    else:
        cases["parse only: lxml"] = lambda html: [
            str(href) for href in lxml_html.document_fromstring(html).xpath("//a/@href")
        ]
    try:
        w3lib_url = importlib.import_module("w3lib.url")
    except ImportError:
        cases["parse + resolve each: Lexbor + w3lib"] = "w3lib not installed"
    else:
        cases["parse + resolve each: Lexbor + w3lib"] = lambda html: [
            str(w3lib_url.canonicalize_url(urljoin(PAGE_URL, href))) for href in _lexbor_hrefs(html)
        ]
    return cases


def _pages_per_second(extract: Callable[[bytes], list[str]], html: bytes) -> float:
    extract(html)  # warms caches
    runs = 0
    start = time.perf_counter()
    while (elapsed := time.perf_counter() - start) < SECONDS_PER_CASE:
        extract(html)
        runs += 1
    return runs / elapsed


def main(paths: list[str]) -> None:
    pages = {path: Path(path).read_bytes() for path in paths} or {"synthetic": synthetic_page()}
    for name, html in pages.items():
        hrefs = len(_lexbor_hrefs(html))
        distinct = len(extract_links(html, PAGE_URL))
        print(f"{name}: {len(html) / 1024:.0f} KiB, {hrefs} links, {distinct} distinct")
        for case, extract in _cases().items():
            if isinstance(extract, str):
                print(f"  {case:40s} skipped: {extract}")
                continue
            pages_per_s = _pages_per_second(extract, html)
            links_per_s = pages_per_s * hrefs
            print(f"  {case:40s} {pages_per_s:6.0f} pages/s {links_per_s / 1000:6.0f} k links/s")


if __name__ == "__main__":
    main(sys.argv[1:])
