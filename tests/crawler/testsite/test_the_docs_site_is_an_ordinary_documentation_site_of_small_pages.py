"""The docs layout: about 1,200 pages of 10-20 KB with 40-80 links each, the same navigation
on every page, a few figures and PDFs; deterministic, all reachable, and a crawl of it
fetches every page once.

Links are read with an HTML parser and resolved with ``urljoin``, as in the other
layouts' tests, not taken from the generator.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import SiteMap, serve_testsite
from tests.crawler.testsite.test_testsite import ORIGIN, links_of, render_fetch, walk

ROOT = Path(__file__).resolve().parents[3]
DOC_PAGES = 1_200
_HEADER = re.compile(rb"<header>.*?</header>", re.S)
_FOOTER = re.compile(rb"<footer>.*?</footer>", re.S)


def _doc_paths(sitemap: SiteMap) -> list[str]:
    return sorted(p for p in sitemap.pages_ok if "/page-" in p)


def _body(sitemap: SiteMap, path: str) -> bytes:
    page = sitemap.render(path)
    assert page is not None, path
    return page.body


def test_the_same_seed_gives_the_same_bytes_and_another_seed_other_bytes() -> None:
    first = SiteMap(150, 5, origin=ORIGIN, layout="docs")
    again = SiteMap(150, 5, origin=ORIGIN, layout="docs")
    other = SiteMap(150, 6, origin=ORIGIN, layout="docs")
    assert first.pages_ok == again.pages_ok == other.pages_ok
    for path in sorted(first.pages_ok):
        assert first.render(path) == again.render(path), path
    for path in _doc_paths(first)[:20]:
        assert first.render(path) != other.render(path), path


def test_pages_are_small_with_40_to_80_links_and_the_same_navigation() -> None:
    sitemap = SiteMap(DOC_PAGES, 1, origin=ORIGIN, layout="docs")
    docs = _doc_paths(sitemap)
    assert len(docs) == DOC_PAGES
    assert 1_200 <= len(sitemap.pages_ok) <= 1_250, "the pages, a dozen indexes, the PDFs"
    headers, footers, sizes, links = set(), set(), [], []
    for path in docs:
        body = _body(sitemap, path)
        sizes.append(len(body))
        links.append(len(links_of(ORIGIN + path, body)[1]))
        headers.update(_HEADER.findall(body))
        footers.update(_FOOTER.findall(body))
    assert min(sizes) >= 10 * 1024 and max(sizes) <= 20 * 1024 + 512
    assert min(links) >= 40 and max(links) <= 80 and max(links) - min(links) >= 30
    assert len(headers) == len(footers) == 1, "the same navigation on every page"
    assert next(iter(headers)).count(b"<a ") >= 10


@pytest.mark.anyio
async def test_every_page_and_pdf_is_reachable_and_figures_are_shown_not_linked() -> None:
    sitemap = SiteMap(240, 3, origin=ORIGIN, layout="docs")
    requested, blocked, hrefs = await walk(render_fetch(sitemap), ORIGIN, None)
    assert requested == sitemap.reachable == sitemap.pages_ok
    assert not blocked
    pdfs = {p for p in requested if p.endswith(".pdf")}
    assert 3 <= len(pdfs) <= 10
    for pdf in pdfs:
        page = sitemap.render(pdf)
        assert page is not None and page.content_type == "application/pdf"
        assert page.body.startswith(b"%PDF-") and page.body.rstrip().endswith(b"%%EOF")
    figures = {
        src.decode()
        for path in _doc_paths(sitemap)
        for src in re.findall(rb'<img src="([^"]+)"', _body(sitemap, path))
    }
    assert len(figures) >= 3 and not figures & requested
    for figure in figures:
        page = sitemap.render(figure)
        assert page is not None and page.body.startswith(b"\x89PNG\r\n\x1a\n")
    for form in ("../", "#", "/", "page-", "mailto:", "https://"):
        assert any(href.startswith(form) for href in hrefs), form


@pytest.mark.anyio
async def test_a_crawl_of_it_fetches_every_page_once(
    start_job: Callable[..., Any], worker_process: Callable[..., Any]
) -> None:
    async with serve_testsite(pages=240, seed=2, layout="docs") as site:
        await start_job([site.url + "/"])
        with anyio.fail_after(60):
            worker = await worker_process("w1", "--exit-when-done")
            assert await worker.wait() == 0
        fetched = site.fetch_counts()
        async with httpx.AsyncClient() as client:
            figure = await client.get(site.url + "/_images/figure-1.png")
    assert figure.status_code == 200 and figure.headers["content-type"] == "image/png"
    assert fetched.pop("/robots.txt") == 1
    assert fetched == dict.fromkeys(site.sitemap.pages_ok, 1)


def test_the_command_line_serves_the_docs_layout() -> None:
    command = crawlog_command("testsite", "--port", "0", "--pages", "30", "--layout", "docs")
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=ROOT) as site:
        try:
            assert site.stdout is not None
            line = site.stdout.readline()
            assert line.startswith("serving http://127.0.0.1:"), line
            response = httpx.get(line.split()[1] + "/downloads/")
            assert response.status_code == 200 and "manual-1.pdf" in response.text
        finally:
            site.terminate()
            site.wait(timeout=10)
