"""The link-dense layout: a documentation site of ~100 KB pages with hundreds of links each,
indexes with thousands, most hrefs repeated from page to page; deterministic, all reachable.

Links are read with an HTML parser and resolved with ``urljoin``, as in the default
layout's tests, not taken from the generator.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import httpx
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import LAYOUTS, Faults, SiteMap, serve_testsite
from eventlog import ConfigError
from tests.crawler.testsite.test_testsite import ORIGIN, links_of, render_fetch, walk

ROOT = Path(__file__).resolve().parents[3]
DOC_PAGES = 500


def _doc_paths(sitemap: SiteMap) -> list[str]:
    return sorted(p for p in sitemap.pages_ok if p.endswith(".html") and "/page-" in p)


def _body(sitemap: SiteMap, path: str) -> bytes:
    page = sitemap.render(path)
    assert page is not None, path
    return page.body


def test_the_link_dense_layout_is_one_of_the_layouts() -> None:
    assert LAYOUTS == ("default", "link-dense", "scripted", "docs")


def test_the_same_seed_gives_the_same_bytes_and_another_seed_other_bytes() -> None:
    first = SiteMap(200, 5, origin=ORIGIN, layout="link-dense")
    again = SiteMap(200, 5, origin=ORIGIN, layout="link-dense")
    other = SiteMap(200, 6, origin=ORIGIN, layout="link-dense")
    assert first.pages_ok == again.pages_ok == other.pages_ok
    for path in sorted(first.pages_ok):
        assert first.render(path) == again.render(path), path
    for path in _doc_paths(first)[:20]:
        assert first.render(path) != other.render(path), path


def test_the_same_bytes_in_another_process() -> None:
    """Nothing depends on str hashing, which differs per process."""
    code = (
        "import hashlib\n"
        "from crawler.testsite import SiteMap\n"
        f"s = SiteMap(120, 3, origin={ORIGIN!r}, layout='link-dense')\n"
        "d = hashlib.sha256()\n"
        "for p in sorted(s.pages_ok): d.update(s.render(p).body)\n"
        "print(d.hexdigest())\n"
    )
    runs = [
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
            check=True,
            cwd=ROOT,
        ).stdout
        for seed in ("1", "2")
    ]
    assert runs[0] == runs[1] and len(runs[0].strip()) == 64


@pytest.mark.anyio
async def test_every_page_is_reachable_by_its_links_and_nothing_else_is_linked() -> None:
    sitemap = SiteMap(60, 3, origin=ORIGIN, layout="link-dense")
    requested, blocked, hrefs = await walk(render_fetch(sitemap), ORIGIN, None)
    assert requested == sitemap.reachable == sitemap.pages_ok
    assert not blocked
    assert len(_doc_paths(sitemap)) == 60
    # The forms documentation uses: relative to the directory, up, here, in-page anchors,
    # query-only, absolute paths and URLs, and a few out of the site.
    for form in ("../", "./", "#", "?q=", "/docs/", ORIGIN, "mailto:", "https://"):
        assert any(href.startswith(form) for href in hrefs), form
    assert any(href.startswith("page-") for href in hrefs)


def test_documentation_pages_are_large_and_link_dense_and_indexes_carry_thousands() -> None:
    sitemap = SiteMap(DOC_PAGES, 1, origin=ORIGIN, layout="link-dense")
    docs = _doc_paths(sitemap)
    assert len(docs) == DOC_PAGES
    for path in docs[::10]:
        body = _body(sitemap, path)
        assert 75_000 <= len(body) <= 130_000, (path, len(body))
        assert body.count(b"<a ") >= 250, path
    assert _body(sitemap, "/genindex.html").count(b"<a ") >= 2_000


def test_most_hrefs_repeat_across_pages() -> None:
    """The navigation is the same on every page of a section: most (directory, href) pairs
    and almost all resolved URLs come again and again."""
    sitemap = SiteMap(DOC_PAGES, 1, origin=ORIGIN, layout="link-dense")
    pairs: Counter[tuple[str, str]] = Counter()
    targets: set[str] = set()
    total = 0
    two_sections = [p for p in _doc_paths(sitemap) if p.startswith(("/docs/guide/", "/docs/api/"))]
    for path in two_sections:
        url = ORIGIN + path
        _, raw = links_of(url, _body(sitemap, path))
        directory = url.rsplit("/", 1)[0]
        pairs.update((directory, href.partition("#")[0]) for href in raw)
        targets.update(urljoin(url, href).partition("#")[0] for href in raw)
        total += len(raw)
    assert len(two_sections) >= 70 and total >= 70 * 300
    assert len(pairs) * 5 <= total  # each distinct (directory, href) five times or more
    assert len(targets) * 20 <= total
    assert any(urlsplit(t).netloc == "127.0.0.1:8000" for t in targets)


@pytest.mark.parametrize(
    "faults",
    [
        Faults(redirects=True),
        Faults(redirect_loop=True),
        Faults(huge_page=True),
        Faults(robots_disallow="/private/"),
    ],
)
def test_faults_that_change_the_links_are_refused(faults: Faults) -> None:
    with pytest.raises(ConfigError, match="link-dense layout takes only the per-request"):
        SiteMap(50, origin=ORIGIN, faults=faults, layout="link-dense")


def test_per_request_faults_are_taken_and_an_unknown_layout_is_refused() -> None:
    faulty = SiteMap(50, origin=ORIGIN, faults=Faults(error_500_rate=0.5), layout="link-dense")
    assert any(faulty.fault_plan(path).failures for path in faulty.pages_ok)
    with pytest.raises(ConfigError, match="layout must be one of default, link-dense"):
        SiteMap(50, origin=ORIGIN, layout="dense")  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_it_is_served_over_http_with_its_robots_txt_and_404s() -> None:
    async with (
        serve_testsite(pages=60, seed=2, layout="link-dense") as site,
        httpx.AsyncClient() as client,
    ):
        home = await client.get(site.url + "/")
        assert home.status_code == 200 and "crawlog documentation" in home.text
        page = sorted(site.sitemap.pages_ok)[-1]
        assert (await client.get(site.url + page)).status_code == 200
        assert (await client.get(site.url + "/robots.txt")).status_code == 200
        for missing in ("/item/1", "/docs/guide/page-2.html", "/docs/nowhere/", "/search.html"):
            assert (await client.get(site.url + missing)).status_code == 404, missing


def test_the_command_line_serves_the_link_dense_layout() -> None:
    command = crawlog_command("testsite", "--port", "0", "--pages", "30", "--layout", "link-dense")
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=ROOT) as site:
        try:
            assert site.stdout is not None
            line = site.stdout.readline()
            assert line.startswith("serving http://127.0.0.1:"), line
            url = line.split()[1]
            response = httpx.get(url + "/genindex.html")
            assert response.status_code == 200 and "General index" in response.text
        finally:
            site.terminate()
            site.wait(timeout=10)


def test_the_command_line_refuses_link_dense_with_a_structural_fault() -> None:
    command = crawlog_command(
        "testsite", "--port", "0", "--pages", "30", "--layout", "link-dense", "--redirects"
    )
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=30)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert "link-dense layout takes only the per-request faults" in result.stderr
